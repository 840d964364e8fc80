"""Scenario `events`: 10,000 concurrent `GET /notes/events` subscribers, the server's RSS
with all of them subscribed, and how long one `POST /notes` takes to reach every one.

The client is one Python process on epoll: non-blocking sockets bound to source addresses
127.0.0.2 ... (at most --per-address on each, under the server's per-address limit), HTTP/1.1
chunked streams decoded incrementally. Delivery time per subscriber is the kernel's receive
timestamp (SO_TIMESTAMPNS) of the segment that completed the event on that socket, minus the
moment the POST was sent, so the client's own loop does not inflate it; when the client had
read it is reported as well."""
import errno, json, os, resource, select, signal, socket, struct, subprocess, time

from harness import (BenchError, cpu_seconds, http_get, jotter_argv, log_warning, machine_info,
                     memory_mib, now, parse_wrk, raise_nofile, reproduce_command, start_server,
                     wrk_command)

NAME = "events"
TITLE = "{:,} `GET /notes/events` subscribers, one event to all of them"
TOOLS = ()
JOTTER_ONLY = True
RSS_TARGET_MIB, DELIVERY_TARGET_MS = 200, 1000
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)        # Linux value
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)
MARK = b"event: note.created\n"


class Chunked:
    """Incremental decoder of a chunked body (RFC 9112 section 7.1), no trailers."""
    __slots__ = ("buf", "remaining", "crlf", "done")

    def __init__(self):
        self.buf, self.remaining, self.crlf, self.done = bytearray(), 0, False, False

    def feed(self, data: bytes) -> bytes:
        self.buf += data
        out = bytearray()
        while not self.done:
            if self.remaining:
                take = min(self.remaining, len(self.buf))
                out += self.buf[:take]
                del self.buf[:take]
                self.remaining -= take
                if self.remaining:
                    break
                self.crlf = True
            if self.crlf:
                if len(self.buf) < 2:
                    break
                if self.buf[:2] != b"\r\n":
                    raise BenchError(f"bad chunk end {bytes(self.buf[:20])!r}")
                del self.buf[:2]
                self.crlf = False
            i = self.buf.find(b"\r\n")
            if i < 0:
                break
            size = int(bytes(self.buf[:i]).split(b";")[0], 16)
            del self.buf[:i + 2]
            if size == 0:
                self.done = True
            self.remaining = size
        return bytes(out)


class Sub:
    __slots__ = ("sock", "head", "chunks", "body", "subscribed", "t_kernel", "t_read", "closed",
                 "events")

    def __init__(self, sock):
        self.sock, self.head, self.chunks, self.body = sock, bytearray(), None, bytearray()
        self.subscribed, self.t_kernel, self.t_read, self.closed = False, None, None, False
        self.events = 0

    def receive(self, data: bytes):
        """Feeds bytes of the response; headers first, then the decoded stream into body."""
        if self.chunks is None:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = bytes(self.head[:end]).decode("latin-1"), bytes(self.head[end + 4:])
            if not head.startswith("HTTP/1.1 200") or "text/event-stream" not in head \
                    or "chunked" not in head.lower():
                raise BenchError(f"subscribe: unexpected response {head[:300]!r}")
            self.chunks = Chunked()
        self.body += self.chunks.feed(data)
        if not self.subscribed and b"retry:" in self.body:
            self.subscribed = True
            self.body.clear()


def kernel_time_ns(ancdata) -> int:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec * 1_000_000_000 + nsec
    return 0


def subscribe_all(port: int, n: int, per_address: int, window: int = 500,
                  stall_s: float = 30) -> tuple:
    """Opens n event streams; returns (epoll, {fd: Sub}) once every one has its `retry:`."""
    request = (f"GET /notes/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               f"Accept: text/event-stream\r\n\r\n").encode()
    ep, subs, opened, done, pending = select.epoll(), {}, 0, 0, 0
    last_progress = time.monotonic()
    while done < n:
        while opened < n and pending < window:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            s.bind((f"127.0.0.{2 + opened // per_address}", 0))
            s.setblocking(False)
            err = s.connect_ex(("127.0.0.1", port))
            if err not in (0, errno.EINPROGRESS):
                raise BenchError(f"subscriber {opened}: connect: {os.strerror(err)}")
            subs[s.fileno()] = Sub(s)
            ep.register(s.fileno(), select.EPOLLOUT)
            opened += 1
            pending += 1
        for fd, ev in ep.poll(1.0):
            sub = subs[fd]
            if ev & select.EPOLLOUT:
                err = sub.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    raise BenchError(f"subscriber {len(subs)}: connect: {os.strerror(err)}")
                sub.sock.send(request)
                ep.modify(fd, select.EPOLLIN)
                continue
            data = sub.sock.recv(65536)
            if not data:
                raise BenchError(f"a subscriber was closed by the server after {done} had "
                                 f"subscribed: {bytes(sub.head[:300])!r}")
            sub.receive(data)
            if sub.subscribed:
                done += 1
                pending -= 1
                last_progress = time.monotonic()
        if time.monotonic() - last_progress > stall_s:
            raise BenchError(f"subscribing stalled at {done} of {n}")
    return ep, subs


def publish_round(port: int, ep, subs: dict, timeout_s: float) -> dict:
    """POSTs one note, reads every stream until each has its note.created; latencies in ms."""
    for sub in subs.values():
        sub.body.clear()
        sub.t_kernel = sub.t_read = None
    body = b"body=event+fan-out+round&"
    post = socket.create_connection(("127.0.0.1", port))
    post.setblocking(False)
    ep.register(post.fileno(), select.EPOLLIN)
    answer, t_ack, reached = bytearray(), None, 0
    t0_ns, t0 = time.time_ns(), time.monotonic()
    post.send(b"POST /notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
              b"application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s"
              % (len(body), body))
    try:
        while (reached < len(subs) or t_ack is None) and time.monotonic() - t0 < timeout_s:
            for fd, ev in ep.poll(0.5):
                if fd == post.fileno():
                    answer += post.recv(65536)
                    if b"\r\n\r\n" in answer and t_ack is None:
                        head, _, rest = bytes(answer).partition(b"\r\n\r\n")
                        length = int(head.lower().split(b"content-length:")[1].split()[0])
                        if len(rest) >= length:
                            t_ack = time.monotonic()
                    continue
                sub = subs[fd]
                data, anc, _, _ = sub.sock.recvmsg(65536, 256)
                t_read = time.monotonic()
                if not data:
                    raise BenchError("a subscriber was closed during the round")
                sub.receive(data)
                if sub.t_read is None and MARK in sub.body:
                    sub.t_read, sub.t_kernel = t_read, kernel_time_ns(anc)
                    reached += 1
    finally:
        ep.unregister(post.fileno())
        post.close()
    head, _, rest = bytes(answer).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 201"):
        raise BenchError(f"POST /notes -> {bytes(answer[:300])!r}")
    note_id = json.loads(rest)["note"]["id"]
    wrong = sum(1 for s in subs.values()
                if s.t_read is not None and f'"id":"{note_id}"'.encode() not in s.body)
    kernel = sorted((s.t_kernel - t0_ns) / 1e6 for s in subs.values() if s.t_kernel)
    read = sorted((s.t_read - t0) * 1e3 for s in subs.values() if s.t_read is not None)
    stamped = len(kernel) == len(read)
    if not stamped:   # no kernel timestamps: fall back to the time the client read it
        kernel = read
    pct = lambda xs, p: xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")
    return {"ack_ms": (t_ack - t0) * 1e3 if t_ack else float("nan"), "reached": reached,
            "wrong": wrong, "p50": pct(kernel, 0.5), "p99": pct(kernel, 0.99),
            "max": kernel[-1] if kernel else float("nan"), "read_all": read[-1] if read else
            float("nan"), "note_id": note_id, "stamped": stamped}


def drain(ep, subs: dict, timeout: float) -> int:
    """Reads whatever the streams have, counting complete note.created events per stream;
    returns how many streams the server closed meanwhile."""
    closed = 0
    for fd, ev in ep.poll(timeout):
        sub = subs[fd]
        try:
            data = sub.sock.recv(1 << 16)
        except ConnectionResetError:
            data = b""
        if not data:
            ep.unregister(fd)
            sub.closed, closed = True, closed + 1
            continue
        sub.receive(data)
        end = sub.body.rfind(b"\n\n")
        if end >= 0:
            sub.events += sub.body.count(MARK, 0, end + 2)
            del sub.body[:end + 2]
    return closed


def writes_while_listening(srv, ep, subs: dict, args) -> dict:
    """POST /notes with wrk (-c write-connections) while every stream is read; then how long
    until every stream has every event, and whether the server dropped any stream."""
    def newest():
        status, body = http_get(srv.base + "/notes?limit=1")
        return int(json.loads(body)["notes"][0]["id"]) if status == 200 else 0
    for sub in subs.values():
        sub.body.clear()
        sub.events = 0
    before, closed = newest(), 0
    cpu0 = cpu_seconds(srv.proc.pid)
    cmd = wrk_command(srv.base + "/notes", args.fanout_duration, args.write_connections,
                      "lua/note_post.lua")
    print(f"  writes with {len(subs):,} listening: wrk -c{args.write_connections} "
          f"-d{args.fanout_duration}s POST /notes ...", flush=True)
    wrk = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while wrk.poll() is None:
        closed += drain(ep, subs, 0.05)
    r = parse_wrk(wrk.stdout.read())
    created = newest() - before
    t_end = time.monotonic()
    behind = lambda: sum(1 for s in subs.values() if not s.closed and s.events < created)
    while behind() and time.monotonic() - t_end < 60:
        closed += drain(ep, subs, 0.2)
    r.update({"created": created, "lag_s": time.monotonic() - t_end, "behind": behind(),
              "closed": closed, "cpu_s": cpu_seconds(srv.proc.pid) - cpu0,
              "rss": memory_mib(srv.proc.pid, "VmRSS"), "peak": memory_mib(srv.proc.pid, "VmHWM")})
    return r


def stop_with_streams_open(srv, ep, subs: dict, timeout_s: float = 20) -> dict:
    """SIGTERM with every stream open: how long the server takes to exit, and how the streams
    end (terminating chunk, or closed without one)."""
    t0 = time.monotonic()
    os.killpg(srv.proc.pid, signal.SIGTERM)
    open_ = total = sum(1 for s in subs.values() if not s.closed)
    clean = reset = 0
    while time.monotonic() - t0 < timeout_s and (open_ or srv.proc.poll() is None):
        for fd, ev in ep.poll(0.2):
            sub = subs[fd]
            try:
                data = sub.sock.recv(65536)
            except ConnectionResetError:
                data, reset = b"", reset + 1
            if data:
                sub.receive(data)
            if not data or sub.chunks.done:
                clean += bool(sub.chunks.done)
                ep.unregister(fd)
                sub.closed = True
                open_ -= 1
    exit_s = time.monotonic() - t0
    stopped = srv.stop(timeout=1) if srv.proc.poll() is None else {"killed": False}
    return {"stop_s": exit_s, "exit": srv.proc.returncode, "killed": stopped["killed"],
            "streams": total, "clean": clean, "unterminated": total - open_ - clean,
            "reset": reset, "still_open": open_}


def measure(args, tmp: str) -> dict:
    n, per = args.subscribers, args.per_address
    raise_nofile(n + 1024)
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < n + 100:
        raise BenchError(f"open-files limit {resource.getrlimit(resource.RLIMIT_NOFILE)} is too "
                         f"low for {n} subscribers")
    srv = start_server("jotter", jotter_argv(args, os.path.join(tmp, "events-data"),
                                             "--max-connections", str(args.max_connections)),
                       tmp, args.start_timeout, log_name="jotter-events")
    ep, subs, res = None, {}, {"rounds": [], "fanout": None}
    try:
        res["rss_before"] = memory_mib(srv.proc.pid, "VmRSS")
        cpu0, t0 = cpu_seconds(srv.proc.pid), time.monotonic()
        ep, subs = subscribe_all(srv.port, n, per)
        res["subscribe_s"] = time.monotonic() - t0
        res["subscribe_cpu"] = cpu_seconds(srv.proc.pid) - cpu0
        time.sleep(1)
        res["rss_subscribed"] = memory_mib(srv.proc.pid, "VmRSS")
        print(f"  {n:,} subscribed in {res['subscribe_s']:.1f}s; server RSS "
              f"{res['rss_subscribed']:.1f} MiB", flush=True)
        for i in range(args.event_rounds):
            time.sleep(0.5)
            cpu0 = cpu_seconds(srv.proc.pid)
            r = publish_round(srv.port, ep, subs, timeout_s=30)
            r["cpu_s"] = cpu_seconds(srv.proc.pid) - cpu0
            res["rounds"].append(r)
            print(f"  event {i + 1}: {r['reached']:,}/{n:,} reached, p50 {r['p50']:.1f} ms, "
                  f"p99 {r['p99']:.1f} ms, max {r['max']:.1f} ms", flush=True)
            srv.check_alive()
        res["rss_after"] = memory_mib(srv.proc.pid, "VmRSS")
        res["peak"] = memory_mib(srv.proc.pid, "VmHWM")
        if args.fanout_duration:
            w = res["fanout"] = writes_while_listening(srv, ep, subs, args)
            print(f"  {w['rps']:,.0f} writes/s, p99 {w['p99_ms']:.0f} ms; every stream had "
                  f"every event {w['lag_s']:.1f}s after the last write", flush=True)
            srv.check_alive()
        res["stop"] = stop = stop_with_streams_open(srv, ep, subs)
        print(f"  SIGTERM with {stop['streams']:,} streams open: exit {stop['exit']} after "
              f"{stop['stop_s']:.2f}s", flush=True)
    finally:
        if srv.proc.poll() is None:
            srv.stop()
        for sub in subs.values():
            sub.sock.close()
        if ep:
            ep.close()
    res["problems"] = srv.problems()
    return res


def render(res: dict, args) -> str:
    n, rounds, stop, w = args.subscribers, res["rounds"], res["stop"], res["fanout"]
    rows = ["| event | POST -> 201 ms | subscribers reached | p50 ms | p99 ms | max ms "
            "(all reached) | client had read all, ms | server CPU-s |",
            "|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for i, r in enumerate(rounds, 1):
        rows.append(f"| {i} | {r['ack_ms']:.1f} | {r['reached']:,} / {n:,} | {r['p50']:.1f} | "
                    f"{r['p99']:.1f} | {r['max']:.1f} | {r['read_all']:.1f} | {r['cpu_s']:.2f} |")
    if not all(r["stamped"] for r in rounds):
        rows.append("\nNo kernel receive timestamps on some rounds: their latencies are the "
                    "times the client read the events.")
    worst = max(r["max"] for r in rounds)
    everyone = all(r["reached"] == n and not r["wrong"] for r in rounds)
    rss = res["rss_subscribed"]
    per_sub = (rss - res["rss_before"]) * 1024 / n
    still = f", {stop['still_open']:,} still open" if stop["still_open"] else ""
    ok = lambda good: "meets" if good else "**misses**"
    lines = rows + ["",
        f"- Server RSS with {n:,} subscribers: **{rss:.1f} MiB** (target < {RSS_TARGET_MIB} "
        f"MiB: {ok(rss < RSS_TARGET_MIB)}); before subscribing {res['rss_before']:.1f} MiB "
        f"(~{per_sub:.1f} KiB per subscriber); after the events {res['rss_after']:.1f} MiB",
        f"- Slowest delivery to all {n:,}: **{worst:.0f} ms** (target <= {DELIVERY_TARGET_MS}"
        f" ms: {ok(worst <= DELIVERY_TARGET_MS and everyone)})"
        + ("" if everyone else "; **not every subscriber got the right event**"),
        f"- Subscribing all {n:,}: {res['subscribe_s']:.1f} s "
        f"({n / res['subscribe_s']:,.0f}/s, at most 500 handshakes in flight), server CPU "
        f"{res['subscribe_cpu']:.2f} s"]
    if w:
        lines.append(
            f"- Writes while all {n:,} listen (extra, no target): `POST /notes` with wrk "
            f"-c{args.write_connections} -d{args.fanout_duration}s: **{w['rps']:,.0f} req/s**, "
            f"p99 {w['p99_ms']:,.0f} ms, {w['errors']} socket errors, {w['non2xx']} non-2xx; "
            f"{w['created']:,} notes, so {w['created'] * n:,} event deliveries; every stream had "
            f"every event {w['lag_s']:.1f} s after the last write"
            + (f" (**{w['behind']:,} streams still behind**)" if w["behind"] else "")
            + f"; streams closed by the server: {w['closed']:,}; server CPU {w['cpu_s']:.2f} s, "
            f"RSS {w['rss']:.1f} MiB (peak {w['peak']:.1f} MiB). The Python client reading all "
            f"streams shares the 2 cores with wrk and the server.")
    lines.append(
        f"- SIGTERM with {stop['streams']:,} streams open: exit {stop['exit']} after "
        f"{stop['stop_s']:.2f} s{' (needed SIGKILL)' if stop['killed'] else ''}; "
        f"{stop['clean']:,} streams ended with the terminating chunk, "
        f"{stop['unterminated']:,} closed without it{still}")
    lines += log_warning("jotter", res["problems"])
    return "\n".join(lines)


def run(args, tmp: str) -> tuple:
    n, per = args.subscribers, args.per_address
    addresses = -(-n // per)
    if addresses > 200:
        raise BenchError(f"{n} subscribers at {per} per address need {addresses} source "
                         f"addresses; at most 200 (127.0.0.2-127.0.0.201)")
    print(f"scenario events: {n:,} subscribers from {addresses} source addresses "
          f"(127.0.0.2-127.0.0.{1 + addresses}, {per} each), {args.event_rounds} events",
          flush=True)
    table = render(measure(args, tmp), args)
    command = reproduce_command(args, NAME, [
        ("--subscribers", n, 10000), ("--per-address", per, 50),
        ("--event-rounds", args.event_rounds, 3), ("--threads", args.threads, 1),
        ("--max-connections", args.max_connections, 12000),
        ("--fanout-duration", args.fanout_duration, 5),
        ("--write-connections", args.write_connections, 64)])
    section = (f"## Scenario `{NAME}`: {TITLE.format(n)}\n\n"
               f"{now()}. `jotter serve --threads {args.threads} --max-connections "
               f"{args.max_connections}` on a fresh data dir; {n:,} HTTP/1.1 event streams "
               f"from {addresses} loopback source addresses (127.0.0.2-127.0.0.{1 + addresses},"
               f" {per} each, under the per-address limit of 256), read by one Python epoll "
               f"client. Then {args.event_rounds} times: one `POST /notes` and the "
               f"time until each stream has its `note.created` event. Latency = kernel receive "
               f"timestamp (SO_TIMESTAMPNS) on the subscriber's socket minus the moment the "
               f"POST was sent; 'client had read all' adds the client's own loop. The server "
               f"publishes the event before it sends the 201.\n\n"
               f"Machine: {machine_info()}.\n\n{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps`):\n\n```\n{command}\n```")
    return table, section
