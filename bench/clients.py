"""The requests the tutorials' iPhone clients send (shared/seeds/), byte for byte where the
tutorial's code decides the bytes. Used by bench/compat.py (the sequences) and by the `peers`
benchmark scenario (the same bodies under wrk).

- echo_hello.php client: `POST` with body `name=<text field>` as typed (never
  percent-encoded); NSURLConnection adds `Content-Type: application/x-www-form-urlencoded`.
- iOS Recipes, BasicHTTPPost: a form-urlencoded POST of up to three key/value fields, each
  key and value percent-encoded by the recipe's request class.
- iOS Recipes, MultipartHTTPPost: `POST /upload`, boundary `d0ntcr055t3h57r33m2`, the form
  parameters `name` and `occupation`, then the file part `filedata` (`uploadedPic.jpg`,
  `image/jpeg`), framed exactly as the recipe's PRPMultipartPOSTRequest writes it.
- Laravel notes client: `GET /notes`; `POST /notes` with `body=<text>&`; `POST /notes/{id}`
  with `body=<text>&_method=PUT&` and with `_method=DELETE&` — values not percent-encoded,
  every pair followed by `&` (its makeRequest:method:params:onComplete:)."""
import random
import urllib.parse

# What NSURLConnection adds to every request of those clients (iOS 7; the User-Agent names
# the app and CFNetwork).
IOS_HEADERS = {"Accept": "*/*", "Accept-Language": "en-us", "Accept-Encoding": "gzip, deflate",
               "User-Agent": "NoteApp/1.0 CFNetwork/672.0.8 Darwin/14.0.0"}
FORM = "application/x-www-form-urlencoded"
BOUNDARY = "d0ntcr055t3h57r33m2"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def hello_body(name: str) -> bytes:
    """The echo_hello.php client's body: `name=` and the text field, unencoded."""
    return f"name={name}".encode()


def recipe_form_body(fields: list) -> bytes:
    """BasicHTTPPost: `key=value` pairs, both percent-encoded, joined by `&`."""
    q = lambda s: urllib.parse.quote(s, safe="")
    return "&".join(f"{q(k)}={q(v)}" for k, v in fields).encode()


RECIPE_FIELDS = [("name", "Tyler"), ("occupation", "Soap salesman"),
                 ("city", "Wilmington, Delaware")]


def recipe_multipart_body(params: list, file_bytes: bytes, name_param: str = "filedata",
                          filename: str = "uploadedPic.jpg",
                          content_type: str = "image/jpeg") -> bytes:
    """MultipartHTTPPost: each parameter, then the file part, then the closing boundary; the
    first boundary has no leading CRLF, every later one does (the recipe's preparedBoundary)."""
    out, first = [], True

    def boundary():
        nonlocal first
        line = (f"--{BOUNDARY}\r\n" if first else f"\r\n--{BOUNDARY}\r\n").encode()
        first = False
        return line
    for key, value in params:
        out += [boundary(), f'Content-Disposition: form-data; name="{key}"\r\n\r\n'.encode(),
                value.encode()]
    out += [boundary(), b"Content-Disposition: form-data; ",
            f'name="{name_param}"; filename="{filename}"\r\n'.encode(),
            f"Content-Type: {content_type}\r\n\r\n".encode(), file_bytes,
            f"\r\n--{BOUNDARY}--\r\n".encode()]
    return b"".join(out)


RECIPE_PARAMS = [("name", "Tyler"), ("occupation", "Soap salesman")]


def picture(size: int = 8 * 1024, seed: int = 34) -> bytes:
    """Stand-in for the recipe's pic.jpg: a JPEG start-of-image marker, then random bytes."""
    rnd = random.Random(seed)
    return b"\xff\xd8\xff\xe0" + bytes(rnd.getrandbits(8) for _ in range(size - 4))


def notes_params(params: list) -> bytes:
    """The Laravel notes client's body: every `key=value` followed by `&`, unencoded."""
    return "".join(f"{k}={v}&" for k, v in params).encode()
