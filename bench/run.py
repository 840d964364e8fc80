#!/usr/bin/env python3
"""Jotter benchmark harness (python3, standard library only).

Runs each engine (jotter, nginx, Go net/http) on a free loopback port with the
same worker count, loads it with wrk one at a time, measures throughput,
latency, server CPU and memory, prints a Markdown table and writes it into the
scenario's own section of docs/benchmarks.md.

    python3 bench/run.py --jotter .build/release/jotter [--duration 10]
        [--connections 32] [--threads 1] [--scenario hello]
        [--peers jotter,nginx,go] [--output docs/benchmarks.md]

A scenario is a name, a URL path (or wrk Lua script) and a list of extra
measurements; add one by writing a Scenario and registering it in SCENARIOS.
"""
import argparse, datetime, http.client, os, platform, re, resource, shlex, shutil, signal
import socket, statistics, subprocess, sys, tempfile, time, urllib.error, urllib.request
from dataclasses import dataclass, field
from typing import Callable, Optional

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
BUILD = os.path.join(BENCH, ".build")
CLK_TCK = os.sysconf("SC_CLK_TCK")
ENGINES = ("jotter", "nginx", "go")
WARMUP_S = 2


class BenchError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sh(cmd) -> str:
    """stdout+stderr of a short command ('' if it cannot run)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


# ---------------------------------------------------------------- /proc ---

def process_tree(root: int) -> list:
    """root and all its descendants (nginx = master + workers)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def tree_sum(root: int, name: str, value: Callable[[str], int]) -> int:
    """Sum value(text of /proc/PID/name) over root's process tree."""
    total = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/{name}") as f:
                total += value(f.read())
        except (OSError, IndexError, ValueError):
            pass  # a process that just exited
    return total


def cpu_seconds(root: int) -> float:
    """utime+stime (fields 14 and 15 of /proc/PID/stat) of the tree, in seconds."""
    def ticks(stat):
        fields = stat.rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    return tree_sum(root, "stat", ticks) / CLK_TCK


def memory_mib(root: int, key: str) -> float:
    """VmRSS or VmHWM (kB in /proc/PID/status) summed over the tree, in MiB."""
    kb = lambda status: int(re.search(rf"^{key}:\s+(\d+)", status, re.M)[1])
    return tree_sum(root, "status", kb) / 1024


# -------------------------------------------------------------- engines ---

@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen
    log: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        """SIGTERM the process group (nginx workers too), SIGKILL after 5 s."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(5)
                return
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                pass


def build_go_peer(tmp: str) -> str:
    out = os.path.join(BUILD, "hello-go")
    env = dict(os.environ, GOCACHE=os.path.join(BUILD, "gocache"),
               GOPATH=os.path.join(BUILD, "gopath"), GOPROXY="off",
               GOTOOLCHAIN="local", CGO_ENABLED="0",
               GOTMPDIR=tmp)
    p = subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(BENCH, "peers", "go"),
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"go build failed:\n{p.stdout}{p.stderr}")
    return out


def engine_command(name: str, port: int, args, tmp: str):
    """(argv, extra env) to start one engine with args.threads workers."""
    t = args.threads
    if name == "jotter":
        data = os.path.join(tmp, "jotter-data")
        os.makedirs(data, exist_ok=True)
        return [args.jotter, "serve", "--host", "127.0.0.1", "--port", str(port),
                "--threads", str(t), "--quiet", "--data", data], {}
    if name == "nginx":
        ntmp = os.path.join(tmp, "nginx")
        os.makedirs(ntmp, exist_ok=True)
        with open(os.path.join(BENCH, "peers", "nginx", "nginx.conf.template")) as f:
            conf = f.read()
        for k, v in {"WORKERS": t, "TMP": ntmp, "PORT": port}.items():
            conf = conf.replace(f"@{k}@", str(v))
        path = os.path.join(ntmp, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        return ["nginx", "-p", ntmp, "-c", path, "-e", os.path.join(ntmp, "error.log")], {}
    if name == "go":
        return [args.go_binary, "-addr", f"127.0.0.1:{port}"], {"GOMAXPROCS": str(t)}
    raise BenchError(f"unknown engine {name}")


def http_get(url: str, timeout=2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, ""


def start_engine(name: str, args, tmp: str, result: dict) -> Server:
    port = free_port()
    argv, env = engine_command(name, port, args, tmp)
    log = os.path.join(tmp, f"{name}.log")
    with open(log, "wb") as logf:
        proc = subprocess.Popen(argv, env=dict(os.environ, **env), stdin=subprocess.DEVNULL,
                                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
    srv = Server(name, port, proc, log)
    deadline = time.monotonic() + args.start_timeout

    def wait_until(ready):
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        srv.stop()
        with open(log, errors="replace") as f:
            tail = f.read()[-2000:]
        raise BenchError(f"{name} failed to start on port {port} "
                         f"(exit={proc.poll()}): {shlex.join(argv)}\n{tail}")

    # Port open (TCP connect only, no HTTP request yet) -> idle RSS; then ready = /healthz 200.
    wait_until(lambda: socket.create_connection(("127.0.0.1", port), timeout=0.5).close() or True)
    time.sleep(0.3)
    result["idle_rss"] = memory_mib(proc.pid, "VmRSS")
    wait_until(lambda: http_get(srv.base + "/healthz")[0] == 200)
    return srv


# ------------------------------------------------------------------ wrk ---

UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def parse_wrk(out: str) -> dict:
    def num(pattern):
        m = re.search(pattern, out, re.M)
        if not m:
            raise BenchError(f"cannot parse wrk output ({pattern}):\n{out}")
        return m.groups()

    rps, = num(r"^Requests/sec:\s+([\d.]+)")
    requests, = num(r"^\s*(\d+) requests in")
    p99, unit = num(r"^\s+99%\s+([\d.]+)(us|ms|s|m|h)\s*$")
    errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": float(rps), "requests": int(requests), "p99_ms": float(p99) * UNIT_MS[unit],
            "errors": errors, "non2xx": int(m.group(1)) if m else 0}


def wrk(url: str, duration: int, connections: int, script: Optional[str] = None) -> str:
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script:
        cmd += ["-s", script]
    p = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=duration + 60)
    if p.returncode != 0:
        raise BenchError(f"wrk failed: {p.stderr}{p.stdout}")
    return p.stdout


# ------------------------------------------------- extra measurements ---

def raise_nofile(n: int):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n if hard == resource.RLIM_INFINITY else min(n, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def keepalive_rss(srv: Server, args, n: int = 2000, per_address: int = 100) -> dict:
    """RSS with n open keep-alive connections, each having served one request.
    Sockets are spread over source addresses 127.0.0.2, 127.0.0.3, ... (at most
    per_address each) so the server's per-client-address limit applies unchanged."""
    raise_nofile(n + 256)
    conns = []
    try:
        for i in range(n):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5,
                                           source_address=(f"127.0.0.{2 + i // per_address}", 0))
            conns.append(c)
            c.request("GET", args.scenario_obj.path)  # HTTP/1.1 with Host: keep-alive
            r = c.getresponse()
            r.read()
            if r.status != 200 or r.will_close:
                raise BenchError(f"{srv.name}: keep-alive request {i} got {r.status}, "
                                 f"will_close={r.will_close}")
        time.sleep(0.5)
        return {"ka_rss": memory_mib(srv.proc.pid, "VmRSS"), "ka_conns": n}
    finally:
        for c in conns:
            c.close()


# ------------------------------------------------------------ scenarios ---

@dataclass
class Scenario:
    name: str
    title: str
    path: str                                  # URL path (+ query) wrk loads
    wrk_script: Optional[str] = None           # optional wrk Lua script
    expect_body: Optional[str] = None          # sanity check before measuring
    extras: list = field(default_factory=list)  # fn(server, args) -> dict


SCENARIOS = {
    "hello": Scenario("hello", "GET /hello?name=Bob (plain text, keep-alive)",
                      "/hello?name=Bob", expect_body="Hello Bob!", extras=[keepalive_rss]),
}


def measure(name: str, sc: Scenario, args, tmp: str, extras: bool = True) -> dict:
    r = {"engine": name}
    srv = start_engine(name, args, tmp, r)
    try:
        if sc.expect_body is not None:
            status, body = http_get(srv.base + sc.path)
            if status != 200 or body != sc.expect_body:
                raise BenchError(f"{name}: GET {sc.path} -> {status} {body!r}")
        url = srv.base + sc.path
        script = os.path.join(BENCH, sc.wrk_script) if sc.wrk_script else None
        print(f"  {name}: port {srv.port}, warm-up {WARMUP_S}s ...", flush=True)
        wrk(url, WARMUP_S, args.connections, script)
        time.sleep(0.5)
        print(f"  {name}: measuring {args.duration}s ...", flush=True)
        cpu0 = cpu_seconds(srv.proc.pid)
        out = wrk(url, args.duration, args.connections, script)
        cpu = cpu_seconds(srv.proc.pid) - cpu0
        r.update(parse_wrk(out))
        r["cpu_s"] = cpu
        r["rps_per_cpu"] = r["requests"] / cpu if cpu > 0 else float("nan")
        r["peak_rss"] = memory_mib(srv.proc.pid, "VmHWM")
        for extra in (sc.extras if extras else []):
            r.update(extra(srv, args))
        if srv.proc.poll() is not None:
            raise BenchError(f"{name} died during the run (exit {srv.proc.returncode})")
        if r["errors"] or r["non2xx"]:
            print(f"  WARNING {name}: {r['errors']} socket errors, {r['non2xx']} non-2xx",
                  file=sys.stderr)
    finally:
        srv.stop()
    return r


def median_run(runs: list) -> dict:
    """Per-figure median over the rounds of one engine (errors are summed)."""
    r = dict(runs[0])
    for k, v in r.items():
        if isinstance(v, float) and k not in ("idle_rss", "ka_rss"):  # memory: round 1
            r[k] = statistics.median([x[k] for x in runs if k in x])
    r["errors"] = sum(x["errors"] for x in runs)
    r["non2xx"] = sum(x["non2xx"] for x in runs)
    return r


# ------------------------------------------------------------ reporting ---

def render(sc: Scenario, results: list, args) -> str:
    f0 = lambda x: f"{x:,.0f}"
    rows = ["| engine | req/s | p99 ms | CPU-s | req/s per CPU-s | peak RSS MiB |",
            "|---|--:|--:|--:|--:|--:|"]
    for r in results:
        rows.append(f"| {r['engine']} | {f0(r['rps'])} | {r['p99_ms']:.2f} | {r['cpu_s']:.2f} "
                    f"| {f0(r['rps_per_cpu'])} | {r['peak_rss']:.1f} |")
    lines = rows + [""]
    by = {r["engine"]: r for r in results}
    ref = "jotter" if "jotter" in by else results[0]["engine"]
    for other in (e for e in by if e != ref):
        a, b = by[ref], by[other]
        x = lambda k: f"**{a[k] / b[k]:.2f}x**" if a[k] >= 0.1 * b[k] else f"**{a[k] / b[k]:.2g}x**"
        lines.append(f"- {ref}/{other}: req/s {x('rps')}, req/s per CPU-s {x('rps_per_cpu')}")
    lines.append("")
    for r in sorted(results, key=lambda r: r["engine"] != "jotter"):
        if "ka_rss" in r:
            per = (r["ka_rss"] - r["idle_rss"]) * 1024 / r["ka_conns"]
            lines.append(f"- {r['engine']} memory: idle RSS {r['idle_rss']:.1f} MiB, "
                         f"RSS at {r['ka_conns']} keep-alive connections {r['ka_rss']:.1f} MiB "
                         f"(~{per:.1f} KiB per connection)")
    bad = [r["engine"] for r in results if r["errors"] or r["non2xx"]]
    if bad:
        lines.append(f"- WARNING: socket errors or non-2xx responses for {', '.join(bad)}")
    return "\n".join(lines)


def section_body(sc: Scenario, table: str, args) -> str:
    rounds = f"; median of {args.rounds} interleaved rounds" if args.rounds > 1 else ""
    return (f"## Scenario `{sc.name}`: {sc.title}\n\n"
            f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}. "
            f"{args.threads} server worker(s) per engine; load `wrk -t1 -c{args.connections} "
            f"-d{args.duration}s --latency` (after a {WARMUP_S} s warm-up), one engine at a "
            f"time, nothing pinned{rounds}. CPU-s = server user+system CPU during the "
            f"measured run.\n\nMachine: {machine_info(args)}.\n\n{table}\n\n"
            f"Reproduce (after `scripts/install-bench-deps`):\n\n"
            f"```\n{reproduce_command(args)}\n```")


def machine_info(args) -> str:
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    info = [f"nproc {os.cpu_count()} ({cpu}), kernel {platform.release()}",
            (sh(["wrk", "--version"]).splitlines() or ["wrk ?"])[0].split(" Copyright")[0]]
    if "nginx" in args.peers:
        info.append(sh(["nginx", "-v"]))
    if "go" in args.peers:
        info.append(sh(["go", "version"]))
    rev = sh(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    if re.fullmatch(r"[0-9a-f]{4,40}", rev):
        info.append(f"jotter commit {rev}")
    return "; ".join(info)


def write_section(path: str, name: str, body: str):
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    if os.path.exists(path):
        with open(path) as f:
            doc = f.read()
    else:
        doc = ("# Jotter benchmarks\n\nGenerated by `bench/run.py` (see `bench/README.md`). "
               "Each scenario owns the section between its markers; rerun to refresh it.\n")
    section = f"{start}\n{body.strip()}\n{end}"
    if start in doc and end in doc and doc.index(start) < doc.index(end):
        doc = doc[:doc.index(start)] + section + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + section + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(doc)


def reproduce_command(args) -> str:
    cmd = ["python3", "bench/run.py"]
    if "jotter" in args.peers:
        inside = os.path.commonpath([args.jotter, REPO]) == REPO
        cmd += ["--jotter", os.path.relpath(args.jotter, REPO) if inside else args.jotter]
    cmd += ["--scenario", args.scenario, "--duration", str(args.duration),
            "--connections", str(args.connections), "--threads", str(args.threads)]
    if args.rounds != 1:
        cmd += ["--rounds", str(args.rounds)]
    if args.peers != list(ENGINES):
        cmd += ["--peers", ",".join(args.peers)]
    return shlex.join(cmd)


# ----------------------------------------------------------------- main ---

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jotter", help="path to the jotter binary (needed when jotter is a peer)")
    ap.add_argument("--duration", type=int, default=10, help="seconds of measured wrk load")
    ap.add_argument("--connections", type=int, default=32, help="wrk connections")
    ap.add_argument("--threads", type=int, default=1, help="server worker count (all engines)")
    ap.add_argument("--scenario", default="hello", choices=sorted(SCENARIOS))
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every engine N times (interleaved), report medians")
    ap.add_argument("--peers", default=",".join(ENGINES), help="comma list of jotter,nginx,go")
    ap.add_argument("--output", default=os.path.join(REPO, "docs", "benchmarks.md"))
    ap.add_argument("--start-timeout", type=float, default=15.0)
    args = ap.parse_args()
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if not args.peers or any(p not in ENGINES for p in args.peers):
        ap.error(f"--peers must be a comma list of {','.join(ENGINES)}")
    if "jotter" in args.peers:
        if not args.jotter or not os.access(args.jotter, os.X_OK):
            ap.error("--jotter PATH (an executable) is needed, or leave jotter out of --peers")
        args.jotter = os.path.abspath(args.jotter)
    for tool in ["wrk"] + [p for p in ("nginx", "go") if p in args.peers]:
        if not shutil.which(tool):
            ap.error(f"{tool} not found: run scripts/install-bench-deps")
    sc = args.scenario_obj = SCENARIOS[args.scenario]
    # Servers inherit this limit, so every engine can hold the 2000 connections.
    raise_nofile(8192)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks

    results = []
    with tempfile.TemporaryDirectory(prefix="jotter-bench-") as tmp:
        try:
            if "go" in args.peers:
                args.go_binary = build_go_peer(tmp)
            print(f"scenario {sc.name}: {sc.title}; {args.threads} worker(s), "
                  f"wrk -t1 -c{args.connections} -d{args.duration}s", flush=True)
            runs = {name: [] for name in args.peers}
            for rnd in range(args.rounds):    # rounds interleave the engines
                if args.rounds > 1:
                    print(f"round {rnd + 1}/{args.rounds}", flush=True)
                for name in args.peers:       # one engine at a time, never concurrently
                    runs[name].append(measure(name, sc, args, tmp, extras=rnd == 0))
            results = [median_run(runs[name]) for name in args.peers]
        except BenchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130

    table = render(sc, results, args)
    print("\n" + table + "\n")
    write_section(args.output, sc.name, section_body(sc, table, args))
    print(f"wrote section '{sc.name}' of {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
