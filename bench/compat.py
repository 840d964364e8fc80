#!/usr/bin/env python3
"""Compatibility with the tutorials' original servers (`make compat`).

Replays the request sequences of the tutorials' iPhone clients (bench/clients.py) against each
original server (bench/originals.py) and against a fresh jotter, and compares the answers field
by field: status, content type, JSON keys, value types, values (messages, bodies, names),
key order and list order. Every difference must be explained in REASONS below, as a bug of
the original fixed on purpose or as a gap to close; docs/compatibility.md lists them all.

    python3 bench/compat.py --jotter .build/debug/jotter            # report, exit 1 if unexplained
    python3 bench/compat.py --jotter .build/debug/jotter --write    # also rewrite the doc's table

Exit status 1 when a difference has no reason, or a reason no longer matches any difference
(the gap was closed: drop it), or --write was not given and the doc's table is stale.
Python 3 standard library only; scripts/install-peer-deps installs the servers."""
import argparse, fnmatch, hashlib, json, os, re, signal, sys, tempfile, time, urllib.request
import urllib.error
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, BenchError
import clients, originals

DOC = os.path.join(REPO, "docs", "compatibility.md")
START, END = "<!-- compat:start -->", "<!-- compat:end -->"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
ON_PURPOSE, GAP = "on purpose", "gap"

# (steps, field, what, kind, reason): fnmatch patterns for the step and field of a difference
# and its kind of difference; the first match explains it. Every entry must match something.
REASONS = [
    # --- hello (echo_hello.php)
    ("hello/*", "content-type", "value", ON_PURPOSE,
     "The script answers `text/html` (PHP's default) with the name echoed unescaped: a name "
     "holding markup runs as HTML. Jotter answers `text/plain; charset=utf-8` with "
     "`nosniff`; the body bytes are the same, and the client shows them as text either way."),
    # --- iOS Recipes: WEBrick
    ("recipe/form", "content-type", "value", ON_PURPOSE,
     "The recipe's server answers an HTML page for a person (`You posted: {...}`, the form as "
     "Ruby's `Hash#inspect`, unescaped); jotter's `/echo` answers the same fields as JSON, "
     "shaped like httpbin's `/anything`. The client only logs the text."),
    ("recipe/upload", "content-type", "value", ON_PURPOSE,
     "The recipe's server answers an HTML sentence naming the saved file; jotter answers "
     "JSON describing the stored upload (`uploads[0]`: filename, size, sha256, url...)."),
    ("recipe/upload", "status", "value", ON_PURPOSE,
     "A stored upload is `201 Created` (docs/API.md); the recipe's server says 200."),
    ("recipe/upload-traversal", "*", "*", ON_PURPOSE,
     "The recipe's server writes the file part to `File.open(filename)`: a client filename "
     "`../escaped.jpg` is written outside its folder. Jotter keeps only the last path "
     "segment as metadata and never uses it as a path; the bytes are stored under an id."),
    # --- httpbin, the reference for /echo
    ("echo/*", "url", "value", ON_PURPOSE,
     "httpbin's `url` is the absolute URL it was reached at; jotter's is the path and query "
     "(docs/API.md), which does not depend on proxies or the Host header."),
    ("echo/*", "origin", "missing", ON_PURPOSE,
     "httpbin reports the client's address; jotter's echo leaves it out (it is in the "
     "access log), so an echo never discloses addresses behind a proxy."),
    ("echo/multipart", "files.filedata", "type", ON_PURPOSE,
     "httpbin inlines each file as a `data:` URL (the whole file in memory, base64); jotter "
     "streams it and reports `{filename, content_type, size, sha256}` (docs/API.md)."),
    # --- Laravel notes: shapes
    ("notes/*|recipe/form", "*", "key order", ON_PURPOSE,
     "Jotter writes object keys in sorted order (as httpbin does); the originals in column "
     "order (Laravel) or in the order sent (WEBrick's Ruby hash). JSON objects are unordered "
     "(RFC 8259) and the clients read them into an `NSDictionary`, which has no order."),
    ("notes/*", "*id", "type", ON_PURPOSE,
     "Ids are strings in jotter (docs/API.md). The tutorial's Laravel 4 on MySQL (PDO with "
     "emulated prepares) listed them as strings, and its client compares ids with "
     "`isEqualToString:`, which raises on a number; the rebuilt original on SQLite and PHP 8 "
     "sends integers, which that client could not compare."),
    ("notes/*", "*version", "added", ON_PURPOSE,
     "Jotter's notes carry `version` (the strong ETag of optimistic concurrency, `If-Match`)."),
    ("notes/*", "*attachments", "added", ON_PURPOSE,
     "Jotter's notes carry their attached uploads; the tutorial's have none."),
    ("notes/list*", "next", "added", ON_PURPOSE,
     "Jotter pages the list (`limit`, default 100, and the `next` cursor); `Note::all()` "
     "returns every note in one answer, however many."),
    ("notes/list-2", "notes", "order", ON_PURPOSE,
     "`Note::all()` lists the oldest note first (primary-key order); jotter lists the newest "
     "first, the order the original client shows (it inserts a new note at the top of its "
     "table), and what the SDK relies on (the web app asks for `order=updated`, the last edited "
     "first); `order=asc` gives the original's order (docs/API.md)."),
    ("notes/create", "status", "value", ON_PURPOSE,
     "A created note is `201 Created` with `Location` (docs/API.md); the original says 200."),
    ("notes/create|notes/delete", "note|message", "added", ON_PURPOSE,
     "The tutorial's `store()` and `destroy()` return the bare note, yet its client reads "
     "`[data objectForKey:@\"note\"]` (the row to add, the row to remove) and gets `nil`. "
     "Jotter answers `{\"note\": …, \"message\": \"Note Created\"}` (`\"Note Deleted\"`), "
     "what the client reads, with a message as update has."),
    ("notes/create|notes/delete|notes/show", "body|created_at|updated_at|id", "missing",
     ON_PURPOSE, "The note's fields are inside `note` in jotter's answer (`note`, added)."),
    ("notes/show", "note", "added", ON_PURPOSE,
     "`show()` returns the bare note; jotter's single-note answers are all `{\"note\": …}` "
     "(docs/API.md). The tutorial's client never asks for one note."),
    ("notes/show-missing", "*", "*", ON_PURPOSE,
     "`show()` of a missing id answers `200` with an empty body (the model is `null`); "
     "jotter answers `404` with a problem document."),
    ("notes/delete-missing|notes/update-missing", "*", "*", ON_PURPOSE,
     "`update()` and `destroy()` of a missing id call a method on `null`: `500` and "
     "Laravel's HTML \"Server Error\" page. Jotter answers `404` with a problem document."),
]


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes
    headers: dict

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass
class Step:
    """One request of a client sequence, the answers of both servers, what to compare."""
    name: str            # sequence/step, e.g. notes/create
    request: str         # how the docs describe the request
    original: Answer
    jotter: Answer
    views: tuple         # (original view, jotter view): the parts compared field by field
    beyond: bool = False  # not sent by the tutorial's client (another branch of the server)


def send(base: str, method: str, path: str, body: bytes = None, ctype: str = None) -> Answer:
    headers = dict(clients.IOS_HEADERS, **({"Content-Type": ctype} if ctype else {}))
    req = urllib.request.Request(base + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return Answer(r.status, r.headers.get("Content-Type", ""), r.read(), dict(r.headers))
    except urllib.error.HTTPError as e:
        return Answer(e.code, e.headers.get("Content-Type", ""), e.read(), dict(e.headers))


# ---------------------------------------------------------------- views ---

def media(answer: Answer) -> str:
    return answer.content_type.split(";")[0].strip().lower()


def ruby_hash(text: str) -> dict:
    """The form WEBrick's page shows (Ruby's Hash#inspect of string keys and values)."""
    m = re.search(r"You posted: (\{.*\})", text)
    if not m:
        return {}
    pairs = re.findall(r'"((?:[^"\\]|\\.)*)"=>"((?:[^"\\]|\\.)*)"', m.group(1))
    return {json.loads(f'"{k}"'): json.loads(f'"{v}"') for k, v in pairs}


def base_view(answer: Answer) -> dict:
    return {"status": answer.status, "content-type": media(answer)}


def note_of(answer: Answer):
    """The note in an answer: jotter wraps it in `note`, the tutorial's store() does not."""
    data = answer.json() or {}
    return data.get("note", data) if isinstance(data, dict) else {}


# ------------------------------------------------------------- comparing ---

def type_name(v) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
            float: "number", type(None): "null"}[type(v)]


def compare(a, b, path: str = "") -> list:
    """Differences between the original's view `a` and jotter's `b`: (field, what, original,
    jotter). what: missing (only in the original), added (only in jotter), type, value, format
    (timestamps), key order, order (lists of notes), length."""
    out = []
    if type_name(a) != type_name(b):
        return [(path, "type", type_name(a), type_name(b))]
    if isinstance(a, dict):
        common = [k for k in a if k in b]
        out += [(f"{path}.{k}".lstrip("."), "missing", short(a[k]), "") for k in a if k not in b]
        out += [(f"{path}.{k}".lstrip("."), "added", "", short(b[k])) for k in b if k not in a]
        meta = ("status", "content-type") if not path else ()   # the views' own fields
        common = [k for k in common if k not in meta]
        if common != [k for k in b if k in a and k not in meta]:
            out.append((path or "(top)", "key order", ", ".join(common),
                        ", ".join(k for k in b if k in a and k not in meta)))
        for k in [k for k in a if k in b]:
            out += compare(a[k], b[k], f"{path}.{k}".lstrip("."))
    elif isinstance(a, list):
        if all(isinstance(x, dict) and "body" in x for x in a + b):   # notes: match by body
            bodies_a, bodies_b = [x["body"] for x in a], [x["body"] for x in b]
            if sorted(bodies_a) != sorted(bodies_b):
                return [(path, "value", json.dumps(bodies_a), json.dumps(bodies_b))]
            if bodies_a != bodies_b:
                out.append((path, "order", json.dumps(bodies_a), json.dumps(bodies_b)))
            by_body = {x["body"]: x for x in b}
            for x in a:
                out += compare(x, by_body[x["body"]], f"{path}[]")
        elif len(a) != len(b):
            out.append((path, "length", str(len(a)), str(len(b))))
        else:
            for x, y in zip(a, b):
                out += compare(x, y, f"{path}[]")
    elif path.rsplit(".", 1)[-1] in ("id", "note_id"):
        pass                                   # own ids of each store; their type is compared
    elif isinstance(a, str) and TIMESTAMP.match(a):
        if not TIMESTAMP.match(b):
            out.append((path, "format", a, b))
    elif a != b:
        out.append((path, "value", short(a), short(b)))
    return sorted(set(out), key=out.index)


def short(v) -> str:
    """A value as the doc shows it: at most 60 characters, with what differs from run to run
    (timestamps, ports) replaced, so that the doc's table is the same on every run."""
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=False)
    s = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "yyyy-MM-dd HH:mm:ss", s)
    s = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", s)
    return s if len(s) <= 60 else s[:57] + "..."


def dedupe_paths(diffs: list) -> list:
    """`notes[].id` appears once per note: keep one of each (field, what)."""
    seen, out = set(), []
    for d in diffs:
        if (d[0], d[1]) not in seen:
            seen.add((d[0], d[1]))
            out.append(d)
    return out


def reason_for(step: str, field: str, what: str):
    for i, (steps, fields, whats, kind, text) in enumerate(REASONS):
        if any(fnmatch.fnmatchcase(step, s) for s in steps.split("|")) and \
                any(fnmatch.fnmatchcase(field, f) for f in fields.split("|")) and \
                fnmatch.fnmatchcase(what, whats):
            return i
    return None


# ------------------------------------------------------------ sequences ---

def hello_sequence(php, jotter) -> list:
    steps = []
    for name, typed in (("hello/name", "Bob"), ("hello/space", "Bob Smith"), ("hello/empty", ""),
                        ("hello/ampersand", "Tom & Jerry")):
        body = clients.hello_body(typed)
        o = send(php.base, "POST", "/echo_hello.php", body, clients.FORM)
        j = send(jotter.base, "POST", "/echo_hello.php", body, clients.FORM)
        view = lambda a: dict(base_view(a), text=a.body.decode(errors="replace"))
        steps.append(Step(name, f"`POST /echo_hello.php` `{body.decode()}`", o, j,
                          (view(o), view(j))))
    return steps


def recipe_sequence(webrick, jotter) -> list:
    steps = []
    form = clients.recipe_form_body(clients.RECIPE_FIELDS)
    o = send(webrick.base, "POST", "/post", form, clients.FORM)
    j = send(jotter.base, "POST", "/echo", form, clients.FORM)
    steps.append(Step("recipe/form", f"form POST `{form.decode()}` to `/post` (jotter: `/echo`)",
                      o, j, (dict(base_view(o), form=ruby_hash(o.body.decode())),
                             dict(base_view(j), form=(j.json() or {}).get("form")))))

    def upload(name, filename, what):
        picture = clients.picture()
        body = clients.recipe_multipart_body(clients.RECIPE_PARAMS, picture, filename=filename)
        # jotter first: where a server that used the name as a path would have written it
        # (beside its data dir, or beside its uploads) is empty until WEBrick writes there.
        j = send(jotter.base, "POST", "/upload", body, clients.MULTIPART)
        data = jotter.workdir
        escaped = [os.path.normpath(os.path.join(d, filename))
                   for d in (data, os.path.join(data, "uploads"), os.path.join(data, "tmp"))]
        jotter_outside = any(os.path.exists(p) for p in escaped)
        o = send(webrick.base, "POST", "/upload", body, clients.MULTIPART)
        m = re.search(r"saved to (.*)!", o.body.decode(errors="replace"))
        saved = os.path.normpath(os.path.join(webrick.workdir, m.group(1))) if m else ""
        stored = open(saved, "rb").read() if saved and os.path.isfile(saved) else b""
        traversal = name.endswith("traversal")
        ov = dict(base_view(o), filename=m.group(1) if m else None,
                  size=len(stored), sha256=hashlib.sha256(stored).hexdigest(),
                  **({"wrote outside its folder": os.path.dirname(saved) != webrick.workdir}
                     if traversal else {}))
        up = ((j.json() or {}).get("uploads") or [{}])[0]
        content = send(jotter.base, "GET", up["url"]).body if up.get("url") else b""
        jv = dict(base_view(j), filename=up.get("filename"), size=len(content),
                  sha256=hashlib.sha256(content).hexdigest(),
                  **({"wrote outside its folder": jotter_outside} if traversal else {}))
        if up.get("sha256") != jv["sha256"]:
            jv["sha256"] = f"{up.get('sha256')} (content: {jv['sha256']})"
        expected = hashlib.sha256(picture).hexdigest()
        for v in (ov, jv):   # both must have kept the bytes the client sent
            v["bytes as sent"] = v.pop("sha256") == expected
        steps.append(Step(name, what, o, j, (ov, jv), beyond=traversal))
    upload("recipe/upload", "uploadedPic.jpg",
           "multipart POST `/upload`: `name`, `occupation`, file `filedata` "
           "(`uploadedPic.jpg`, `image/jpeg`, 8 KiB)")
    upload("recipe/upload-traversal", "../escaped.jpg",
           "the same with the file name `../escaped.jpg`")
    return steps


def echo_sequence(httpbin, jotter) -> list:
    """The recipe's two POSTs to httpbin's /anything and to jotter's /echo."""
    steps = []
    multipart = clients.recipe_multipart_body(clients.RECIPE_PARAMS, clients.picture())
    for name, body, ctype in (("echo/form", clients.recipe_form_body(clients.RECIPE_FIELDS),
                               clients.FORM), ("echo/multipart", multipart, clients.MULTIPART)):
        o = send(httpbin.base, "POST", "/anything", body, ctype)
        j = send(jotter.base, "POST", "/echo", body, ctype)
        view = lambda a: dict(base_view(a), **{k: v for k, v in (a.json() or {}).items()
                                               if k != "headers"})
        steps.append(Step(name, f"the recipe's {name.split('/')[1]} POST to `/anything` "
                          f"(jotter: `/echo`)", o, j, (view(o), view(j))))
    return steps


def notes_sequence(laravel, jotter) -> list:
    steps = []
    ids = {}

    def step(name, what, method, path_of, params=None, beyond=False, keep_id=None):
        answers = []
        for side, srv in (("original", laravel), ("jotter", jotter)):
            path = path_of(ids.get(side, {}))
            body = clients.notes_params(params) if params is not None else None
            a = send(srv.base, method, path, body, clients.FORM if body else None)
            if keep_id:
                ids.setdefault(side, {})[keep_id] = str(note_of(a).get("id"))
            answers.append(a)
        o, j = answers
        view = lambda a: dict(base_view(a), **(a.json() if isinstance(a.json(), dict) else
                                               {"text": a.body.decode(errors="replace")[:60]}))
        steps.append(Step(name, what, o, j, (view(o), view(j)), beyond))

    step("notes/list-0", "`GET /notes` (empty)", "GET", lambda i: "/notes")
    step("notes/create", "`POST /notes` `body=Buy milk&`", "POST", lambda i: "/notes",
         [("body", "Buy milk")], keep_id="first")
    step("notes/create", "`POST /notes` `body=Call Alice&`", "POST", lambda i: "/notes",
         [("body", "Call Alice")], keep_id="second")
    step("notes/list-2", "`GET /notes`", "GET", lambda i: "/notes")
    step("notes/update", "`POST /notes/{id}` `body=Buy oat milk&_method=PUT&`", "POST",
         lambda i: f"/notes/{i['first']}", [("body", "Buy oat milk"), ("_method", "PUT")])
    step("notes/update-nobody", "`POST /notes/{id}` `_method=PUT&` (no body)", "POST",
         lambda i: f"/notes/{i['first']}", [("_method", "PUT")], beyond=True)
    step("notes/delete", "`POST /notes/{id}` `_method=DELETE&`", "POST",
         lambda i: f"/notes/{i['first']}", [("_method", "DELETE")])
    step("notes/list-1", "`GET /notes`", "GET", lambda i: "/notes")
    step("notes/show", "`GET /notes/{id}`", "GET", lambda i: f"/notes/{i['second']}",
         beyond=True)
    step("notes/show-missing", "`GET /notes/{deleted id}`", "GET",
         lambda i: f"/notes/{i['first']}", beyond=True)
    step("notes/update-missing", "`POST /notes/{deleted id}` `body=x&_method=PUT&`", "POST",
         lambda i: f"/notes/{i['first']}", [("body", "x"), ("_method", "PUT")], beyond=True)
    step("notes/delete-missing", "`POST /notes/{deleted id}` `_method=DELETE&`", "POST",
         lambda i: f"/notes/{i['first']}", [("_method", "DELETE")], beyond=True)
    return steps


SEQUENCES = [  # (original, title, replay)
    ("php", "The PHP hello script (`echo_hello.php`, nginx + php-fpm)", hello_sequence),
    ("webrick", "The iOS Recipes server (WEBrick)", recipe_sequence),
    ("httpbin", "httpbin under gunicorn, the reference for `/echo`", echo_sequence),
    ("laravel", "The Laravel notes resource (Laravel 8 from Debian, SQLite)", notes_sequence),
]


def replay(args, tmp: str) -> list:
    """Every sequence against its original and a fresh jotter; returns the steps."""
    steps = []
    for n, (name, _, sequence) in enumerate(SEQUENCES):
        work = os.path.join(tmp, name)
        original = originals.start(name, args, work)
        try:
            jotter = originals.start_jotter(args, os.path.join(work, "jotter-data"), work)
            try:
                t0 = time.monotonic()
                steps += [dict(s.__dict__, original_name=name) for s in sequence(original, jotter)]
                print(f"  {name}: replayed in {time.monotonic() - t0:.1f}s", flush=True)
            finally:
                jotter.stop()
        finally:
            original.stop()
    return steps


# ------------------------------------------------------------- reporting ---

def differences(steps: list) -> list:
    out = []
    for s in steps:
        a, b = s["views"]
        for field, what, ov, jv in dedupe_paths(compare(a, b)):
            if field.endswith("request_id"):
                jv = "(one per request)"
            out.append({"step": s["name"], "field": field, "what": what, "original": ov,
                        "jotter": jv, "reason": reason_for(s["name"], field, what)})
    return out


def cell(v: str) -> str:
    v = str(v).replace("|", "\\|").replace("\n", " ")
    return f"`{v}`" if v else "—"


def render(steps: list, diffs: list) -> str:
    lines = []
    for name, title, _ in SEQUENCES:
        lines += [f"### {title}", "",
                  "| step | request | original | jotter | differences |", "|---|---|---|---|--:|"]
        for s in (s for s in steps if s["original_name"] == name):
            n = len(dedupe_paths(compare(*s["views"])))
            o, j = s["original"], s["jotter"]
            label = s["name"] + (" (beyond the client)" if s["beyond"] else "")
            lines.append(f"| `{label}` | {s['request']} | {o.status} `{media(o) or '-'}` | "
                         f"{j.status} `{media(j) or '-'}` | {n} |")
        lines.append("")
    lines += ["### Every difference, with its reason", "",
              "| # | kind | steps | field | difference | original | jotter | reason |",
              "|--:|---|---|---|---|---|---|---|"]
    for i, (steps_glob, _, _, kind, text) in enumerate(REASONS):
        mine = [d for d in diffs if d["reason"] == i]
        if not mine:
            continue
        seen, shown = set(), []
        for d in mine:
            if (d["field"], d["what"]) not in seen:
                seen.add((d["field"], d["what"]))
                shown.append(d)
        where = ", ".join(dict.fromkeys(f"`{d['step']}`" for d in mine))
        for k, d in enumerate(shown):
            lines.append(f"| {i + 1 if k == 0 else ''} | {kind if k == 0 else ''} | "
                         f"{where if k == 0 else ''} | {cell(d['field'] or '(whole)')} | "
                         f"{d['what']} | {cell(d['original'])} | {cell(d['jotter'])} | "
                         f"{text if k == 0 else '″'} |")
    return "\n".join(lines)


def read_doc() -> str:
    with open(DOC) as f:
        return f.read()


def doc_table(doc: str) -> str:
    if START in doc and END in doc:
        return doc[doc.index(START) + len(START):doc.index(END)].strip()
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jotter", required=True, help="the jotter binary")
    ap.add_argument("--write", action="store_true", help=f"rewrite the table in {DOC}")
    ap.add_argument("--start-timeout", type=float, default=30.0)
    args = ap.parse_args()
    args.jotter = os.path.abspath(args.jotter)
    args.threads = 1
    if not os.access(args.jotter, os.X_OK):
        ap.error(f"{args.jotter} is not an executable")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # run the finally blocks
    t0 = time.monotonic()
    print("compat: replaying the tutorials' client sequences ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="jotter-compat-") as tmp:
        try:
            steps = replay(args, tmp)
        except BenchError as e:
            print(f"compat: {e}", file=sys.stderr)
            return 1
    diffs = differences(steps)
    table = render(steps, diffs)
    print("\n" + table + "\n")
    failures = []
    for d in diffs:
        if d["reason"] is None:
            failures.append(f"unexplained: {d['step']} {d['field'] or '(whole)'} {d['what']}: "
                            f"original {d['original']!r}, jotter {d['jotter']!r}")
    used = {d["reason"] for d in diffs}
    for i, r in enumerate(REASONS):
        if i not in used:
            failures.append(f"no longer differs (drop reason {i + 1}): {r[0]} {r[1]} {r[2]}")
    doc = read_doc()
    if args.write:
        if START not in doc or END not in doc:
            failures.append(f"{DOC} has no {START} … {END} markers")
        else:
            with open(DOC, "w") as f:
                f.write(doc[:doc.index(START) + len(START)] + "\n" + table + "\n" + doc[doc.index(END):])
            print(f"compat: wrote {DOC}")
    elif doc_table(doc) != table.strip():
        failures.append(f"{DOC} is stale: run make compat (bench/compat.py --write)")
    for f in failures:
        print(f"compat: FAIL {f}", file=sys.stderr)
    explained = sum(1 for d in diffs if d["reason"] is not None)
    print(f"compat: {len(steps)} steps, {len(diffs)} differences ({explained} explained), "
          f"{len(failures)} failure(s), {time.monotonic() - t0:.0f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
