"""Scenario `instructions`: user-space instructions per request, counted by callgrind.

Each server runs under `valgrind --tool=callgrind`. After a warm-up, the counters are zeroed
(`callgrind_control -z PID`), exactly N requests are sent one after the other on one
keep-alive connection, the counters are dumped (`callgrind_control -d PID`) and the dump's
total Ir (instructions executed in user space, all threads of the process) is divided by N.
Instruction counts do not depend on what else the machine runs, so this is the figure to
quote when the machine is busy.

Jotter (`jotter-server`, the process `jotter serve` becomes) and nginx (`return 200`) answer
the same `GET /hello?name=Bob`; jotter also answers `GET /notes/{id}`, `GET /notes?limit=100`
and `POST /notes` (a durable write) on notes it was seeded with."""
import glob, os, random, re, shutil, socket, statistics, subprocess, tempfile, time
from typing import Optional

from harness import (BENCH, BUILD, BenchError, ForeignLoad, f0, free_port, jotter_argv, machine_info,
                     nginx_argv, now, reproduce_command, sh, start_server)

NAME = "instructions"
TITLE = "user-space instructions per request (callgrind)"
JOTTER_ONLY = True
HELLO_TARGET, NOTE_TARGET = 2.0, 1.3   # issue 19: hello <= 2.0x nginx, note <= 1.3x hello
RC_GOAL = 40                           # issue 34: reference-counting calls per hello
H2_GOAL = 1.3                          # issue 34: HTTP/2 hello <= 1.3x HTTP/1.1 hello
LIST_GOAL, POST_GOAL = 400_000, 200_000  # issue 24: Ir of a page of 100 notes, of a durable POST
NOTES_TOP = 20                         # functions listed for each notes request
# Frames every request passes through on its way to the route handler (the loop, the connection,
# the middleware chain, the router's wrapper, recursion copies): left out of the notes tables,
# whose rows then start at the handler.
CHAIN = re.compile(r"^EventLoop\.run|^HTTP1Connection\.(handle\(events|run)|SocketDriver\.run<|^HTTP1StateMachine\.(received|process)|LoopConnection\.handle|"
                   r"Middleware\w*\.handle\(|MiddlewareStack\.wrap|RouterBuilder\.on<|"
                   r"RequestLifecycle\.bodyComplete|GroupCommitWriter\.init|WriteJob\.make|'\d+$")
TOOLS = ("valgrind", "callgrind_control", "callgrind_annotate", "nginx")
TOP = 15                               # functions listed for jotter hello
LABELS = {"hello": "`GET /hello?name=Bob`",
          "browser": "`GET /hello?name=Bob`, browser head (13 fields)",
          "h2": "`GET /hello?name=Bob`, HTTP/2 (prior knowledge)",
          "hellolog": "`GET /hello?name=Bob`, access log on",
          "note": "`GET /notes/{id}`",
          "list": "`GET /notes?limit=100`", "post": "`POST /notes` (durable write)",
          "post64": "`POST /notes` (durable write), 64 clients",
          "pgnote": "`GET /notes/{id}`, PostgreSQL", "pglist": "`GET /notes?limit=100`, PostgreSQL"}
WRK_SECONDS = 10                       # each window of the 64-client POST load
REPORTS_LOAD = True                    # run.py: the section tells how busy the machine was


# --------------------------------------------------------------- client ---

class KeepAliveClient:
    """One HTTP/1.1 connection; sends a request, reads its whole answer (Content-Length
    framing), then the next: never two requests in flight, like one wrk connection."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _more(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise BenchError("the server closed the keep-alive connection")
        self.buf += data

    def exchange(self, raw: bytes):
        """Sends one request; returns (status, headers dict, body)."""
        self.sock.sendall(raw)
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if "content-length" not in headers or headers.get("connection", "").lower() == "close":
            raise BenchError(f"answer without Content-Length or not keep-alive: {head[:300]!r}")
        length = int(headers["content-length"])
        while len(self.buf) < length:
            self._more()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body

class H2Client:
    """One HTTP/2 connection with prior knowledge (h2c), one stream at a time: sends a GET's
    HEADERS, reads until that stream ends, then the next, like KeepAliveClient over HTTP/1.1.
    Just the frames a GET needs (no library: the bench runs on Debian's python3): the preface
    and SETTINGS (initial stream window 1 GiB) with a connection WINDOW_UPDATE of 1 GiB, so the
    server never waits for a window and the client never sends one again, as h2load does; the
    server's SETTINGS and PINGs acknowledged. The request's header block uses HPACK's static
    table for `:method GET` and `:scheme http` and adds `:path` and `:authority` to the dynamic
    table on the first request; every later request sends the same 4 bytes of indexed fields,
    as a browser's or nghttp2's encoder does."""

    PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf, self.stream, self.indexed = b"", -1, None
        settings = (0x4).to_bytes(2, "big") + (1 << 30).to_bytes(4, "big")   # INITIAL_WINDOW_SIZE
        window = ((1 << 30) - 65535).to_bytes(4, "big")
        self.sock.sendall(self.PREFACE + self.frame(0x4, 0, 0, settings) + self.frame(0x8, 0, 0, window))

    def close(self):
        self.sock.close()

    @staticmethod
    def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload

    @staticmethod
    def literal(name_index: int, value: str) -> bytes:
        """Literal with incremental indexing, name from the static table, value not Huffman-coded."""
        raw = value.encode()
        if len(raw) >= 127:
            raise BenchError("H2Client: header value too long for a one-byte length")
        return bytes([0x40 | name_index, len(raw)]) + raw

    def read_frame(self) -> tuple:
        while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            data = self.sock.recv(1 << 16)
            if not data:
                raise BenchError("the server closed the HTTP/2 connection")
            self.buf += data
        length = int.from_bytes(self.buf[:3], "big")
        kind, flags = self.buf[3], self.buf[4]
        stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
        payload, self.buf = self.buf[9:9 + length], self.buf[9 + length:]
        return kind, flags, stream, payload

    def exchange(self, request: tuple):
        """Sends GET request = (authority, path) on a new stream; returns (status, {}, body).
        The status is 200 when the answer's header block starts with HPACK's indexed
        `:status 200` (static entry 8), else 0 (the hello and note answers start so)."""
        authority, path = request
        self.stream += 2
        if self.indexed == request:
            block = bytes([0x82, 0x86, 0xBF, 0xBE])   # GET, http, then :path (63), :authority (62)
        else:
            block = bytes([0x82, 0x86]) + self.literal(4, path) + self.literal(1, authority)
            self.indexed = request
        self.sock.sendall(self.frame(0x1, 0x5, self.stream, block))   # END_STREAM | END_HEADERS
        status, body = None, b""
        while True:
            kind, flags, stream, payload = self.read_frame()
            if kind == 0x4 and not flags & 0x1:                           # SETTINGS
                self.sock.sendall(self.frame(0x4, 0x1, 0, b""))
            elif kind == 0x6 and not flags & 0x1:                         # PING
                self.sock.sendall(self.frame(0x6, 0x1, 0, payload))
            elif kind in (0x3, 0x7):                                      # RST_STREAM, GOAWAY
                raise BenchError(f"HTTP/2 frame type {kind} on stream {stream}: {payload!r}")
            elif stream == self.stream and kind in (0x0, 0x1):            # DATA, HEADERS
                if flags & 0x8:                                           # PADDED
                    payload = payload[1:len(payload) - payload[0]]
                if kind == 0x1:
                    if flags & 0x20:                                      # PRIORITY
                        payload = payload[5:]
                    if status is None:
                        status = 200 if payload[:1] == b"\x88" else 0
                else:
                    body += payload
                if flags & 0x1:                                           # END_STREAM
                    return status or 0, {}, body

BROWSER_FIELDS = [  # what Firefox sends with a page load, after Host (13 fields in all)
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("Accept-Language", "en-US,en;q=0.5"),
    ("Accept-Encoding", "gzip, deflate, br"),
    ("Connection", "keep-alive"),
    ("Cookie", "theme=dark; lang=en; sid=4f2a9c01b7e3"),
    ("Upgrade-Insecure-Requests", "1"),
    ("Sec-Fetch-Dest", "document"),
    ("Sec-Fetch-Mode", "navigate"),
    ("Sec-Fetch-Site", "none"),
    ("Sec-Fetch-User", "?1"),
    ("Priority", "u=0, i"),
]


def browser_request_bytes(port: int, target: str) -> bytes:
    """A GET with the 13 fields a browser sends with a page load (~480 bytes)."""
    head = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in BROWSER_FIELDS)
    return head.encode() + b"\r\n"


def request_bytes(port: int, method: str, target: str, body: bytes = b"",
                  content_type: str = "application/x-www-form-urlencoded") -> bytes:
    """The bytes of one HTTP/1.1 request (sent as they are, every time)."""
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    if body:
        head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


# ------------------------------------------------------------ callgrind ---

def callgrind_argv(out_dir: str, argv: list) -> list:
    """argv under callgrind, counting from the start; dumps go to out_dir/callgrind.out.PID[.N]."""
    os.makedirs(out_dir, exist_ok=True)
    return ["valgrind", "--tool=callgrind", "--collect-atstart=yes",
            f"--callgrind-out-file={os.path.join(out_dir, 'callgrind.out.%p')}", *argv]


def callgrind_control(flag: str, pid: int):
    p = subprocess.run(["callgrind_control", flag, str(pid)], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0 or "OK." not in p.stdout:
        raise BenchError(f"callgrind_control {flag} {pid} failed: {p.stdout}{p.stderr}")


def dumps(out_dir: str, pid: int) -> dict:
    """{part number: path} of the dumps callgrind_control -d made for pid."""
    found = {}
    for name in os.listdir(out_dir):
        m = re.fullmatch(rf"callgrind\.out\.{pid}\.(\d+)", name)
        if m:
            found[int(m[1])] = os.path.join(out_dir, name)
    return found


def dump_total(path: str) -> int:
    """The Ir of a dump: its `summary:` line (what callgrind_annotate calls PROGRAM TOTALS)."""
    with open(path) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise BenchError(f"no summary line in {path}")


# Calls counted per request from a dump's call records: Swift's reference counting, and the C
# library's allocator (every entry that hands out memory).
RC_CALLS = re.compile(r"^swift_(retain|release)$")
MALLOC_CALLS = re.compile(r"^(malloc|calloc|realloc|posix_memalign|aligned_alloc|memalign|valloc)$")


def call_counts(path: str) -> dict:
    """{function: calls into it} over the dump's `calls=` lines (callgrind counts every call,
    from any caller, within the window). Names are compressed (`cfn=(7) name` once, `cfn=(7)`
    after) and carry `'N` for recursion depth, which is dropped."""
    names, counts, callee = {}, {}, None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("cfn="):
                m = re.match(r"cfn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
                if m:
                    if m[2] is not None:
                        names[m[1]] = re.sub(r"'\d+$", "", m[2])
                    callee = names.get(m[1])
                else:
                    callee = re.sub(r"'\d+$", "", line[4:].strip())
            elif line.startswith("calls=") and callee is not None:
                counts[callee] = counts.get(callee, 0) + int(line[6:].split()[0])
            elif line.startswith("fn="):
                # fn= also defines names in the same space as cfn=
                m = re.match(r"fn=\((\d+)\) (.*)$", line.rstrip("\n"))
                if m:
                    names[m[1]] = re.sub(r"'\d+$", "", m[2])
    return counts


def first_window_costs(got: dict, dump: str, n: int):
    """What the first round records of a row's last window: the Ir of `memset`, and the calls
    into reference counting and the allocator, per request."""
    got["memset"] = sum(ir for ir, fn, _ in self_costs(dump) if re.match(r"(__)?memset", fn)) / n
    calls = call_counts(dump)
    got["rc_calls"] = sum(c for fn, c in calls.items() if RC_CALLS.match(fn)) / n
    got["malloc_calls"] = sum(c for fn, c in calls.items() if MALLOC_CALLS.match(fn)) / n


def window(srv, out_dir: str, send) -> tuple:
    """Zeroes the counters, runs send(), dumps; returns (Ir in between, dump path)."""
    before = set(dumps(out_dir, srv.proc.pid))
    callgrind_control("-z", srv.proc.pid)
    send()
    callgrind_control("-d", srv.proc.pid)
    srv.check_alive()
    new = {k: v for k, v in dumps(out_dir, srv.proc.pid).items() if k not in before}
    if not new:
        raise BenchError(f"callgrind_control -d {srv.proc.pid} wrote no dump")
    if len(new) > 1:
        print(f"  WARNING {srv.name}: {len(new)} new dumps in one window: " +
              ", ".join(f"part {k} {f0(dump_total(v))} Ir ({sh(['head', '-c', '600', v])!r})"
                        for k, v in sorted(new.items())), flush=True)
    path = new[max(new)]
    return dump_total(path), path


# ------------------------------------------------------------- requests ---

def hello_check(status, headers, body):
    return status == 200 and body == b"Hello Bob!"


def status_check(code):
    return lambda status, headers, body: status == code


class Load:
    """One kind of request: sent `warmup` times, then measured in windows of `n`."""

    def __init__(self, key, label, raw, check, n, warmup, connect=None):
        """connect(server): the client the requests go over (default: HTTP/1.1 keep-alive)."""
        self.key, self.label, self.raw, self.check, self.n, self.warmup = \
            key, label, raw, check, n, warmup
        self.connect = connect or (lambda srv: KeepAliveClient(srv.port))

    def send(self, client, count: int):
        for i in range(count):
            status, headers, body = client.exchange(self.raw)
            if not self.check(status, headers, body):
                raise BenchError(f"{self.label}: request {i} -> {status} {body[:200]!r}")


def measure(srv, out_dir: str, load: Load, windows: int) -> dict:
    """Warm-up, then `windows` measured windows of load.n requests on one connection."""
    client = load.connect(srv)
    try:
        load.send(client, load.warmup)
        runs, path = [], None
        for _ in range(windows):
            total, path = window(srv, out_dir, lambda: load.send(client, load.n))
            runs.append(total / load.n)
        print(f"  {srv.name} {load.label}: " + ", ".join(f"{f0(x)}" for x in runs)
              + f" Ir/request ({load.n} requests per window)", flush=True)
        return {"runs": runs, "dump": path, "n": load.n}
    finally:
        client.close()


def measure_wrk(srv, out_dir: str, windows: int) -> dict:
    """Durable POSTs from 64 keep-alive connections at once (wrk, `lua/note_post.lua`), so
    writes share group commits: a 2 s warm-up, then `windows` windows of WRK_SECONDS; Ir per
    request = the window's Ir / the requests wrk completed in it. How many writes share a
    commit follows how fast the server runs under callgrind on this machine, so this row moves
    more between runs than the others."""
    script = os.path.join(BENCH, "lua", "note_post.lua")
    url = f"http://127.0.0.1:{srv.port}/notes"

    def wrk(seconds: int) -> int:
        p = subprocess.run(["wrk", "-t1", "-c64", f"-d{seconds}s", "-s", script, url],
                           capture_output=True, text=True, timeout=seconds + 120)
        done = re.search(r"(\d+) requests in", p.stdout)
        if p.returncode != 0 or not done or "Non-2xx" in p.stdout:
            raise BenchError(f"wrk -c64 POST /notes: {p.stdout}{p.stderr}")
        return int(done[1])

    wrk(2)
    runs, counts, path = [], [], None
    for _ in range(windows):
        got = {}
        total, path = window(srv, out_dir, lambda: got.update(n=wrk(WRK_SECONDS)))
        runs.append(total / got["n"])
        counts.append(got["n"])
    print(f"  {srv.name} POST /notes, 64 clients: " + ", ".join(f0(x) for x in runs)
          + f" Ir/request ({', '.join(map(str, counts))} requests)", flush=True)
    return {"runs": runs, "dump": path, "n": min(counts)}


def measure_postgres(args, tmp: str, out_dir: str, res: dict, rnd: int, n: int, warm: int):
    """`GET /notes/{id}` and `GET /notes?limit=100` from a jotter storing in a throwaway
    PostgreSQL cluster (`scale`'s), seeded the same way; callgrind counts jotter's process, not
    the database server's."""
    from scenarios.scale import Postgres
    # A folder of its own right under the system's temp folder: the cluster runs as the
    # `postgres` user when we are root, who must reach it (the run's own folder is private).
    folder = tempfile.mkdtemp(prefix="jotter-bench-pg-")
    pg = Postgres(os.path.join(folder, "pg"))
    try:
        srv = start_jotter(args, tmp, out_dir, database=pg.url)
        try:
            ids = seed_notes(srv, args.instr_notes)
            raw = lambda target: request_bytes(srv.port, "GET", target)
            for load in (Load("pgnote", LABELS["pgnote"], raw(f"/notes/{ids[len(ids) // 2]}"), status_check(200), n, warm),
                         Load("pglist", LABELS["pglist"], raw("/notes?limit=100"), status_check(200),
                              max(1, n // 10), max(1, warm // 10))):
                r = measure(srv, out_dir, load, args.instr_windows)
                got = res["jotter"].setdefault(load.key, {"runs": [], "n": r["n"]})
                got["runs"] += r["runs"]
                if rnd == 0:
                    shutil.copy(r["dump"], os.path.join(BUILD, f"callgrind.out.jotter-{load.key}"))
                    first_window_costs(got, r["dump"], r["n"])
        finally:
            srv.stop(timeout=60)
    finally:
        pg.stop()
        shutil.rmtree(folder, ignore_errors=True)


def idle_window(srv, out_dir: str, seconds: float) -> int:
    """Ir while no request arrives (timers, background threads), over `seconds`."""
    return window(srv, out_dir, lambda: time.sleep(seconds))[0]


def seed_notes(srv, count: int) -> list:
    """`count` notes through POST /notes on one keep-alive connection; their ids."""
    rnd = random.Random(42)
    words = "milk eggs bread call alice bob meeting review draft plan garden book".split()
    client = KeepAliveClient(srv.port)
    ids = []
    try:
        for i in range(count):
            body = f"body=Note+{i}:+" + "+".join(rnd.choices(words, k=rnd.randint(4, 24))) + "&"
            status, headers, _ = client.exchange(request_bytes(srv.port, "POST", "/notes",
                                                               body.encode()))
            if status != 201 or "location" not in headers:
                raise BenchError(f"seeding: POST /notes -> {status}")
            ids.append(int(headers["location"].rsplit("/", 1)[1]))
    finally:
        client.close()
    return ids


# ------------------------------------------------------------- servers ---

def jotter_server_binary(args) -> str:
    """`jotter serve` execs `jotter-server` beside it; run that one, so callgrind counts the
    server process itself and not a launcher."""
    path = os.path.join(os.path.dirname(args.jotter), "jotter-server")
    if not os.access(path, os.X_OK):
        raise BenchError(f"{path} not found: build with `swift build -c release`")
    return path


def stripped_copy(path: str, tmp: str) -> str:
    """A copy of `path` without its debug information: valgrind 3.19 cannot read the DWARF 5
    that Swift 6.3 writes into release binaries ("unhandled dwarf2 abbrev form code 0x25") and
    gives up. Code and symbols stay, so the counts and the function names are the same."""
    copy = os.path.join(tmp, os.path.basename(path) + "-nodebug")
    subprocess.run(["objcopy", "--strip-debug", path, copy], check=True)
    return copy


def start_jotter(args, tmp: str, out_dir: str, access_log: bool = False, database: Optional[str] = None):
    """access_log: without `--quiet`, so every request writes its access-log line (to the
    server's log file here). database: a `postgres://` URL to store in instead of SQLite."""
    server = stripped_copy(jotter_server_binary(args), tmp)
    name = "jotter-log" if access_log else "jotter-pg" if database else "jotter"
    serve = jotter_argv(args, os.path.join(tmp, f"{name}-data"), *(["--database", database] if database else []))
    # drop `jotter serve`; keep --quiet unless the log is measured
    argv = lambda port: callgrind_argv(out_dir, [server, *[a for a in serve(port)[2:]
                                                           if not (access_log and a == "--quiet")]])
    # Swift seeds its hash function per process; a fixed seed makes dictionary probes, and so
    # the counts, repeat from one run to the next (the cost is the same on average).
    srv = start_server(name, argv, tmp, max(args.start_timeout, 120.0),
                       env={"SWIFT_DETERMINISTIC_HASHING": "1"}, log_name=f"{name}-callgrind")
    srv.h2_port = srv.port   # HTTP/2 with prior knowledge on the same port
    return srv


def start_nginx(args, tmp: str, out_dir: str):
    """nginx with master_process off: the one process serves, as the single worker does
    under a master (callgrind_control reaches the process valgrind started, not a child it
    forked). A second port of its own serves HTTP/2 with prior knowledge (`listen … http2`:
    nginx 1.22 speaks only HTTP/2 on such a port)."""
    render = nginx_argv(args.threads, os.path.join(tmp, "nginx"))
    h2_port = free_port()

    def argv(port):
        cmd = render(port)
        conf = cmd[cmd.index("-c") + 1]
        with open(conf) as f:
            text = f.read()
        listen = f"listen 127.0.0.1:{port} reuseport;"
        if "master_process on;" not in text or listen not in text:
            raise BenchError(f"peers/nginx/nginx.conf.template: no `master_process on;` to turn "
                             f"off or no `{listen}` to add the HTTP/2 port beside")
        text = text.replace("master_process on;", "master_process off;")
        text = text.replace(listen, f"{listen}\n        listen 127.0.0.1:{h2_port} http2;")
        with open(conf, "w") as f:
            f.write(text)
        return callgrind_argv(out_dir, cmd)
    srv = start_server("nginx", argv, tmp, max(args.start_timeout, 120.0),
                       log_name="nginx-callgrind")
    srv.h2_port = h2_port
    return srv


# ------------------------------------------------------------ annotate ---

ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$")


def demangle(names: list) -> list:
    tool = shutil.which("swift-demangle")
    if not tool or not names:
        return names
    p = subprocess.run([tool, "--simplified", "--compact"], input="\n".join(names) + "\n",
                       capture_output=True, text=True, timeout=60)
    out = p.stdout.splitlines()
    return out if p.returncode == 0 and len(out) == len(names) else names


DUMP_NAME = re.compile(r"^(c?)(fn|ob|fl|fi|fe)=(?:\((\d+)\))?\s*(.*)$")


def self_costs(path: str) -> list:
    """[(Ir, function, object)] of a dump by self cost, largest first, read from the dump
    itself: every cost line but those of calls, summed per function and object (it adds up to
    the dump's total). callgrind_annotate also counts a call that was under way when the
    counters were zeroed (`calls=0`: a thread's entry frames, such as `start_thread`) as self
    cost of its caller."""
    npos, tables, obj, fn, skip = 1, {"fn": {}, "ob": {}, "fl": {}}, "", "", False
    cost = {}
    with open(path) as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                if skip:                         # the inclusive cost of a call
                    skip = False
                    continue
                parts = line.split()
                if len(parts) > npos:
                    cost[(fn, obj)] = cost.get((fn, obj), 0) + int(parts[npos])
            elif line.startswith("calls="):
                skip = True
            elif line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif m := DUMP_NAME.match(line.rstrip("\n")):
                table = tables["fl" if m[2] in ("fl", "fi", "fe") else m[2]]
                name = m[4]
                if m[3] is not None:             # name compression: (id) name, then (id)
                    if name:
                        table[m[3]] = name
                    else:
                        name = table.get(m[3], "?")
                if not m[1] and m[2] == "ob":
                    obj = name
                elif not m[1] and m[2] == "fn":
                    fn = name
    rows = sorted(cost.items(), key=lambda kv: -kv[1])
    names = demangle([fn for (fn, _), _ in rows])
    return [(ir, name, os.path.basename(o) or "?") for ((_, o), ir), name in zip(rows, names)]


def inclusive_costs(path: str) -> list:
    """[(Ir, function, object)] of a dump by inclusive cost, largest first, from
    callgrind_annotate. A function whose code callgrind attributes to several source files
    (inlining) is one row: the largest of its pieces' inclusive costs."""
    p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no",
                        path], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise BenchError(f"callgrind_annotate failed: {p.stderr}")
    cost, objects = {}, {}
    for line in p.stdout.splitlines():
        m = ANNOTATE_LINE.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        where, obj = m[2], ""
        if where.endswith("]") and " [" in where:
            where, _, obj = where.rpartition(" [")
            obj = os.path.basename(obj[:-1])
        function = where.split(":", 1)[-1]           # file:function (the file may be ???)
        cost[function] = max(cost.get(function, 0), int(m[1].replace(",", "")))
        if obj:
            objects.setdefault(function, obj)
    rows = sorted(cost.items(), key=lambda kv: -kv[1])
    names = demangle([fn for fn, _ in rows])
    return [(ir, name, objects.get(fn, "?")) for (fn, ir), name in zip(rows, names)]


def memset_callers(path: str) -> list:
    """[(Ir, calls, caller)] into memset (any libc variant), from callgrind_annotate's
    caller tree."""
    p = subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=100", "--auto=no",
                        path], capture_output=True, text=True, timeout=300)
    callers, block = [], []
    for line in p.stdout.splitlines():
        if not line.strip():
            block = []
            continue
        m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+([<*])\s+(\S.*)$", line)
        if not m:
            continue
        if m[2] == "<":
            block.append(m)
        elif re.search(r":__memset\w*|:memset\b", m[3]):
            for c in block:
                calls = re.search(r"\((\d[\d,]*)x\)", c[3])
                where = re.sub(r" \(\d[\d,]*x\)", "", c[3])
                fn, _, obj = where.rpartition(" [")
                callers.append((int(c[1].replace(",", "")),
                                int(calls[1].replace(",", "")) if calls else 0,
                                fn.split(":", 1)[-1], os.path.basename(obj.rstrip("]"))))
    names = demangle([c[2] for c in callers])
    return [(ir, calls, f"{name} [{obj}]") for (ir, calls, _, obj), name in zip(callers, names)]


THREAD_ENTRY = re.compile(r"^(clone|start_thread|clone3)$")
# frames that only forward to the function below them (their inclusive cost repeats it)
FORWARDER = re.compile(r"^(partial apply for |reabstraction |@objc )*(thunk for |closure #\d+ in )?"
                       r"(thunk|partial apply)|^@objc |^partial apply for ")


def function_table(rows: list, n: int, total: int, what: str, top: int = TOP) -> list:
    out = [f"| # | {what} Ir/request | % | function | object |", "|--:|--:|--:|---|---|"]
    shown = [r for r in rows if not THREAD_ENTRY.match(r[1])
             and not (what == "inclusive" and FORWARDER.match(r[1]))][:top]
    for i, (ir, fn, obj) in enumerate(shown, 1):
        fn = fn if len(fn) <= 110 else fn[:107] + "..."
        fn = fn.replace("|", "\\|")
        out.append(f"| {i} | {f0(ir / n)} | {100 * ir / total:.1f} | `{fn}` | {obj} |")
    return out


# ------------------------------------------------------------ reporting ---

def previous_run(path: str) -> Optional[dict]:
    """The figures of this scenario's section in `path` as the last run left them:
    {"when", "commit", "rows": {label: (jotter Ir, nginx Ir or None)}}, or None."""
    try:
        with open(path) as f:
            doc = f.read()
    except OSError:
        return None
    start, end = f"<!-- bench:{NAME}:start -->", f"<!-- bench:{NAME}:end -->"
    if start not in doc or end not in doc:
        return None
    section = doc[doc.index(start):doc.index(end)]
    when = re.search(r"^(\d{4}-\d\d-\d\d \d\d:\d\d \S+)\.", section, re.M)
    commit = re.search(r"jotter commit (\w+)( \(\+ uncommitted changes\))?", section)
    rows = {}
    for m in re.finditer(r"^\| (`[^|]+`[^|]*) \| [\d,]+ \| ([\d,]+) \| [\d,]+ \| ([\d,]+|—) \|",
                         section, re.M):
        nginx = None if m[3] == "—" else int(m[3].replace(",", ""))
        rows[m[1]] = (int(m[2].replace(",", "")), nginx)
    if not rows:
        return None
    return {"when": when[1] if when else "?", "commit": commit[0] if commit else "?",
            "rows": rows}


def median(runs: list) -> float:
    return statistics.median(runs)


def spread(runs: list) -> str:
    """(max - min) / median, in percent, over every window of every round."""
    return f"{100 * (max(runs) - min(runs)) / median(runs):.3f}%" if len(runs) > 1 else "n/a"


def render(res: dict, loads: list, args) -> tuple:
    j, n = res["jotter"], res["nginx"]
    hello = median(j["hello"]["runs"])
    rows = ["| request | N per window | jotter Ir/request | of which `memset` | nginx Ir/request "
            "| jotter ÷ nginx | ÷ jotter hello | jotter `swift_retain` + `swift_release` calls "
            "| `malloc` calls (jotter; nginx) | spread of windows (jotter; nginx) |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for load in loads:
        r, ng = j[load.key], n.get(load.key)
        ir = median(r["runs"])
        nginx_ir = f0(median(ng["runs"])) if ng else "—"
        vs_nginx = f"**{ir / median(ng['runs']):.2f}x**" if ng else "—"
        vs_hello = "1.00" if load.key == "hello" else f"**{ir / hello:.2f}**"
        windows = f"{len(r['runs'])} windows, {spread(r['runs'])}"
        if ng:
            windows += f"; {len(ng['runs'])} windows, {spread(ng['runs'])}"
        mallocs = f"{r['malloc_calls']:.1f}" + (f"; {ng['malloc_calls']:.1f}" if ng else "")
        rows.append(f"| {load.label} | {load.n:,} | {f0(ir)} | {f0(r['memset'])} | {nginx_ir} "
                    f"| {vs_nginx} | {vs_hello} | {r['rc_calls']:.1f} | {mallocs} | {windows} |")
    hello_ratio = hello / median(n["hello"]["runs"])
    browser_ratio = median(j["browser"]["runs"]) / median(n["browser"]["runs"])
    extra = len(BROWSER_FIELDS)
    per_field = lambda side: (median(side["browser"]["runs"]) - median(side["hello"]["runs"])) / extra
    field_ratio = per_field(j) / per_field(n)
    note_ratio = median(j["note"]["runs"]) / hello
    h2_ratio = lambda side: median(side["h2"]["runs"]) / median(side["hello"]["runs"])
    list_ir, post_ir = median(j["list"]["runs"]), median(j["post"]["runs"])
    verdict = lambda v, t: "meets" if v <= t else "**misses**"
    lines = rows + [
        "",
        f"- hello, jotter ÷ nginx: **{hello_ratio:.2f}x** (target <= {HELLO_TARGET}x: "
        f"{verdict(hello_ratio, HELLO_TARGET)})",
        f"- hello with the browser head ({res['head_bytes']['browser']} bytes against "
        f"{res['head_bytes']['hello']}), jotter ÷ nginx: **{browser_ratio:.2f}x** (goal <= 2.0x: "
        f"{verdict(browser_ratio, 2.0)})",
        f"- each extra header field (browser head − 55-byte head, ÷ {extra}): jotter "
        f"{f0(per_field(j))} Ir, nginx {f0(per_field(n))} Ir: **{field_ratio:.2f}x** (goal <= 2x: "
        f"{verdict(field_ratio, 2.0)})",
        f"- the access-log line (hello with the log on − hello under `--quiet`): "
        f"{f0(median(j['hellolog']['runs']) - hello)} Ir per request",
        f"- calls per hello: `swift_retain` + `swift_release` **{j['hello']['rc_calls']:.0f}** "
        f"(goal <= {RC_GOAL}: {verdict(j['hello']['rc_calls'], RC_GOAL)}), the allocator "
        f"(`malloc`, `calloc`, `realloc`, `posix_memalign`, …) **{j['hello']['malloc_calls']:.1f}**, "
        f"nginx's {n['hello']['malloc_calls']:.1f} (goal <= nginx's: "
        f"{verdict(j['hello']['malloc_calls'], n['hello']['malloc_calls'])}); counted from the "
        f"window's `calls=` records, every caller; the table gives them for every row",
        f"- HTTP/2 hello ÷ HTTP/1.1 hello, same server: jotter **{h2_ratio(j):.2f}** (goal <= "
        f"{H2_GOAL}: {verdict(h2_ratio(j), H2_GOAL)}), nginx {h2_ratio(n):.2f}; HTTP/2 hello, "
        f"jotter ÷ nginx: **{median(j['h2']['runs']) / median(n['h2']['runs']):.2f}x**",
        f"- `GET /notes/{{id}}` ÷ hello: **{note_ratio:.2f}** (target <= {NOTE_TARGET}: "
        f"{verdict(note_ratio, NOTE_TARGET)})",
        f"- `GET /notes?limit=100`: **{f0(list_ir)}** Ir/request, {f0(list_ir / 100)} per note "
        f"(goal <= {f0(LIST_GOAL)}: {verdict(list_ir, LIST_GOAL)})",
        f"- durable `POST /notes`: **{f0(post_ir)}** Ir/request (goal <= {f0(POST_GOAL)}: "
        f"{verdict(post_ir, POST_GOAL)}); from 64 clients at once (`wrk -c64 -d{WRK_SECONDS}s`, "
        f"writes sharing group commits): {f0(median(j['post64']['runs']))} Ir/request — how many "
        f"share a commit depends on the machine's load, so this one moves between runs",
        *([f"- on PostgreSQL (jotter's instructions; the database server's are not counted): "
           f"`GET /notes/{{id}}` {f0(median(j['pgnote']['runs']))}, `GET /notes?limit=100` "
           f"{f0(median(j['pglist']['runs']))} Ir/request"] if "pglist" in j else []),
        f"- jotter hello without `memset`: {f0(hello - j['hello']['memset'])} Ir/request, "
        f"{(hello - j['hello']['memset']) / median(n['hello']['runs']):.2f}x nginx "
        f"(nginx's own `memset`: {f0(n['hello']['memset'])})",
        f"- idle window (counters zeroed, {res['idle_s']:.0f} s without a request, dumped): "
        f"jotter {f0(j['idle'])} Ir, nginx {f0(n['idle'])} Ir in all (timers, background "
        f"threads, the two callgrind_control calls): at most {j['idle'] / loads[0].n:.1f} and "
        f"{n['idle'] / loads[0].n:.1f} Ir per request in a window of {loads[0].n:,}",
        "- `POST /notes` differs more from one window to the next than the reads: the "
        "SQLite file grows as the windows go (B-tree page splits, the WAL's automatic "
        "checkpoint every 1000 pages land in some windows and not others)",
        "",
        f"Other processes kept {res['busy']:.2f} of the {os.cpu_count()} cores busy on average "
        f"during this run; instruction counts do not depend on that.",
    ]
    prev = res.get("previous")
    if prev:
        diffs = []
        for load in loads:
            if load.label not in prev["rows"]:
                continue
            pj, pn = prev["rows"][load.label]
            d = f"{load.label} jotter {100 * (median(j[load.key]['runs']) / pj - 1):+.2f}%"
            if pn and load.key in n:
                d += f", nginx {100 * (median(n[load.key]['runs']) / pn - 1):+.2f}%"
            diffs.append(d)
        lines.insert(-2, f"- against the previous run in this file ({prev['when']}, "
                         f"{prev['commit']}): " + "; ".join(diffs))
    table = "\n".join(lines)

    h = j["hello"]
    total = h["total"]
    detail = ["### Where jotter's `GET /hello?name=Bob` goes", "",
              f"From the last measured window ({h['n']:,} requests): self costs summed from "
              f"the dump's cost lines, inclusive costs and the callers of `memset` from "
              f"`callgrind_annotate`; Swift names demangled; a C library's internal "
              f"functions without a symbol in Debian's package show as addresses.", "",
              f"Self cost, top {TOP}:", ""]
    detail += function_table(h["self"], h["n"], total, "self")
    by_object = {}
    for ir, fn, obj in h["self"]:
        key = f"{obj} (`memset`)" if re.match(r"(__)?memset", fn) else obj
        by_object[key] = by_object.get(key, 0) + ir
    detail += ["", "Self cost by object:", "", "| object | Ir/request | % |", "|---|--:|--:|"]
    for obj, ir in sorted(by_object.items(), key=lambda kv: -kv[1]):
        if ir / h["n"] >= 10:
            detail.append(f"| {obj} | {f0(ir / h['n'])} | {100 * ir / total:.1f} |")
    detail += ["", f"Inclusive cost, top {TOP} (thread entry frames and thunks that only "
               f"forward left out):", ""]
    detail += function_table(h["inclusive"], h["n"], total, "inclusive")
    detail += ["", "Callers of `memset`:", "",
               "| caller | calls per request | Ir per call | Ir/request |", "|---|--:|--:|--:|"]
    for ir, calls, caller in sorted(h["memset_callers"], reverse=True):
        detail.append(f"| `{caller}` | {calls / h['n']:.2f} | {f0(ir / calls) if calls else '?'} "
                      f"| {f0(ir / h['n'])} |")
    detail += ["", "callgrind counts every iteration of a `rep stos` as one instruction, so "
               "glibc's `memset` of N bytes (which uses `rep stosb` above 2 KiB) counts about N: "
               "its Ir overstates its CPU time. The figures still hold between versions of "
               "the same code."]
    for key in ("note", "list", "post"):
        r = j.get(key, {})
        if "inclusive" not in r:
            continue
        detail += ["", f"### Where jotter's {LABELS[key]} goes", "",
                   f"Inclusive cost, top {NOTES_TOP}, from the last measured window "
                   f"({r['n']:,} requests, {f0(r['total'] / r['n'])} Ir each; all threads, so "
                   f"`POST /notes` shows the writer thread's commit; thread entry frames, thunks "
                   f"that only forward and the frames every request passes through — event "
                   f"loop, connection, middleware chain, router — left out):", ""]
        rows = [row for row in r["inclusive"] if not CHAIN.search(row[1])]
        detail += function_table(rows, r["n"], r["total"], "inclusive", NOTES_TOP)
    return table, "\n".join(detail)


def run(args, tmp: str) -> tuple:
    for tool in TOOLS:
        if not shutil.which(tool):
            raise BenchError(f"{tool} not found: run scripts/install-bench-deps")
    foreign = ForeignLoad()
    out_dir = os.path.join(tmp, "callgrind")
    n, warm = args.instr_requests, args.instr_warmup
    print(f"scenario instructions: {TITLE}; {args.threads} worker(s), {n} requests per window, "
          f"{args.instr_windows} windows, {args.rounds} round(s)", flush=True)
    res = {"jotter": {}, "nginx": {}}
    for rnd in range(args.rounds):
        if args.rounds > 1:
            print(f"round {rnd + 1}/{args.rounds}", flush=True)
        round_tmp = os.path.join(tmp, f"round{rnd}")
        os.makedirs(round_tmp)
        for name in ("jotter", "nginx"):
            start = start_jotter if name == "jotter" else start_nginx
            srv = start(args, round_tmp, out_dir)
            try:
                raw = lambda method, target, body=b"": request_bytes(srv.port, method, target,
                                                                      body)
                loads = [Load("hello", LABELS["hello"], raw("GET", "/hello?name=Bob"),
                              hello_check, n, warm),
                         Load("browser", LABELS["browser"],
                              browser_request_bytes(srv.port, "/hello?name=Bob"),
                              hello_check, n, warm)]
                loads.append(Load("h2", LABELS["h2"], (f"127.0.0.1:{srv.h2_port}", "/hello?name=Bob"),
                                  hello_check, n, warm, connect=lambda srv: H2Client(srv.h2_port)))
                res.setdefault("head_bytes", {"hello": len(loads[0].raw),
                                              "browser": len(loads[1].raw)})
                if name == "jotter":
                    print(f"  seeding {args.instr_notes} notes ...", flush=True)
                    ids = seed_notes(srv, args.instr_notes)
                    note = ids[len(ids) // 2]
                    post = b"body=A+note+written+while+counting+instructions&"
                    loads += [
                        Load("note", LABELS["note"], raw("GET", f"/notes/{note}"),
                             status_check(200), n, warm),
                        Load("list", LABELS["list"], raw("GET", "/notes?limit=100"),
                             status_check(200), max(1, n // 10), max(1, warm // 10)),
                        Load("post", LABELS["post"], raw("POST", "/notes", post),
                             status_check(201), max(1, n // 2), warm)]
                if name == "jotter":
                    loads.append(Load("post64", LABELS["post64"], None, None, 0, 0))
                for load in loads:
                    if load.key == "post64" and rnd == 0:
                        # The idle window comes before the 64 connections: their closing and
                        # the writes still queued when wrk stops would land in it.
                        res["idle_s"] = 2.0
                        res[name]["idle"] = idle_window(srv, out_dir, res["idle_s"])
                    r = (measure_wrk(srv, out_dir, args.instr_windows) if load.key == "post64"
                         else measure(srv, out_dir, load, args.instr_windows))
                    got = res[name].setdefault(load.key, {"runs": [], "n": r["n"]})
                    got["runs"] += r["runs"]
                    if rnd == 0:
                        os.makedirs(BUILD, exist_ok=True)
                        shutil.copy(r["dump"], os.path.join(BUILD, f"callgrind.out.{name}-{load.key}"))
                        first_window_costs(got, r["dump"], r["n"])
                        if name == "jotter" and load.key == "hello":
                            got.update(self=self_costs(r["dump"]), total=dump_total(r["dump"]),
                                       inclusive=inclusive_costs(r["dump"]),
                                       memset_callers=memset_callers(r["dump"]))
                        elif name == "jotter" and load.key in ("note", "list", "post"):
                            got.update(total=dump_total(r["dump"]), inclusive=inclusive_costs(r["dump"]))
                if rnd == 0 and "idle" not in res[name]:
                    res["idle_s"] = 2.0
                    res[name]["idle"] = idle_window(srv, out_dir, res["idle_s"])
            finally:
                stopped = srv.stop(timeout=60)
            if name == "jotter" and stopped["exit"] != 0:
                print(f"  WARNING: jotter under callgrind exited with {stopped['exit']}",
                      flush=True)
        # The same hello from a server writing its access log (the one above runs --quiet).
        srv = start_jotter(args, round_tmp, out_dir, access_log=True)
        try:
            load = Load("hellolog", LABELS["hellolog"],
                        request_bytes(srv.port, "GET", "/hello?name=Bob"), hello_check, n, warm)
            r = measure(srv, out_dir, load, args.instr_windows)
            got = res["jotter"].setdefault("hellolog", {"runs": [], "n": r["n"]})
            got["runs"] += r["runs"]
            if rnd == 0:
                shutil.copy(r["dump"], os.path.join(BUILD, "callgrind.out.jotter-hellolog"))
                first_window_costs(got, r["dump"], r["n"])
        finally:
            srv.stop(timeout=60)
        # The reads again with the notes on PostgreSQL (jotter's instructions only).
        if shutil.which("initdb") or glob.glob("/usr/lib/postgresql/*/bin/initdb"):
            measure_postgres(args, round_tmp, out_dir, res, rnd, n, warm)
        else:
            print("  PostgreSQL is not installed: its rows are left out", flush=True)
    res["busy"] = foreign.cores()
    all_loads = [Load(k, label, None, None, res["jotter"][k]["n"], 0) for k, label in LABELS.items()
                 if k in res["jotter"]]
    res["previous"] = previous_run(args.output)
    table, detail = render(res, all_loads, args)

    command = reproduce_command(args, NAME, [
        ("--threads", args.threads, 1), ("--rounds", args.rounds, 1),
        ("--instr-requests", args.instr_requests, 1000),
        ("--instr-warmup", args.instr_warmup, 100),
        ("--instr-windows", args.instr_windows, 2), ("--instr-notes", args.instr_notes, 150)])
    valgrind = sh(["valgrind", "--version"])
    llhttp = sh(["dpkg-query", "-W", "-f=${Version}", "node-llhttp"]) or "?"
    rounds = (f" {args.rounds} rounds, each with fresh servers;" if args.rounds > 1 else "")
    section = (
        f"## Scenario `{NAME}`: {TITLE}\n\n"
        f"{now()}. Each server under `valgrind --tool=callgrind --collect-atstart=yes`, "
        f"{args.threads} worker(s): jotter = `jotter-server --threads {args.threads} --quiet` "
        f"(what `jotter serve` execs, `SWIFT_DETERMINISTIC_HASHING=1`) on a data folder "
        f"seeded with {args.instr_notes} notes; "
        f"nginx = `peers/nginx/nginx.conf.template` with `master_process off` (the one "
        f"process serves). Per request kind: {warm} warm-up requests (a tenth for the list), "
        f"then {args.instr_windows} windows of `callgrind_control -z`, N requests one after "
        f"the other on one keep-alive connection, `callgrind_control -d`;{rounds} the HTTP/2 row "
        f"the same on one connection with prior knowledge, one stream at a time (nginx: a second "
        f"port with `listen … http2`; the client indexes `:path` and `:authority` in HPACK's "
        f"dynamic table on the first request). Ir/request = "
        f"the dump's total Ir (user space, all threads) / N, median over the windows. "
        f"`POST /notes` writes the same body each time, one request in flight; its 64-client row "
        f"is `wrk -t1 -c64 -d{WRK_SECONDS}s -s bench/lua/note_post.lua` per window (N: the fewest "
        f"requests of a window), after 2 s of the same. The PostgreSQL rows: a third jotter with "
        f"`--database` on a throwaway cluster (`scale`'s settings), seeded the same way. The access-log "
        f"row: a second jotter the same way but without `--quiet` (its log to a file).\n\n"
        f"Machine: {machine_info(('nginx', 'sqlite'))}; {valgrind}; llhttp (node-llhttp) {llhttp}.\n\n"
        f"{table}\n\n"
        f"{detail}\n\n"
        f"The last window of each row is kept as `bench/.build/callgrind.out.SERVER-KIND` "
        f"(`jotter-hello`, `jotter-h2`, `jotter-note`, `jotter-list`, `jotter-post`, `jotter-post64`, `jotter-hellolog`, `jotter-pgnote`, `jotter-pglist`, `nginx-hello`, `nginx-h2`): "
        f"`callgrind_annotate --inclusive=yes` it, or open it in KCachegrind.\n\n"
        f"To reproduce (after `scripts/install-bench-deps`; `make bench "
        f"BENCH_ARGS=\"--scenario {NAME}\"` builds and runs it):\n\n```\n{command}\n```")
    return table, section
