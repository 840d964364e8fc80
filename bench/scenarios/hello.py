"""Scenario `hello`: GET /hello?name=Bob on jotter, nginx (`return 200`) and Go net/http,
one engine at a time, same worker count, same wrk load; plus idle RSS and RSS with 2000
keep-alive connections."""
import http.client, os, statistics, subprocess, time

from harness import (BENCH, BUILD, WARMUP_S, BenchError, f0, http_get, jotter_argv, load,
                     log_warning, machine_info, memory_mib, nginx_argv, now, raise_nofile,
                     reproduce_command, start_server)

NAME = "hello"
TITLE = "GET /hello?name=Bob (plain text, keep-alive)"
# Besides wrk: the servers of the peers among --peers (nginx, go).
TOOLS = lambda args: tuple(p for p in ("nginx", "go") if p in args.peers)
JOTTER_ONLY = False  # runs with --peers nginx,go alone
ENGINES = ("jotter", "nginx", "go")
PATH = "/hello?name=Bob"
EXPECT = "Hello Bob!"


def build_go_peer(tmp: str) -> str:
    out = os.path.join(BUILD, "hello-go")
    env = dict(os.environ, GOCACHE=os.path.join(BUILD, "gocache"),
               GOPATH=os.path.join(BUILD, "gopath"), GOPROXY="off",
               GOTOOLCHAIN="local", CGO_ENABLED="0", GOTMPDIR=tmp)
    p = subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(BENCH, "peers", "go"),
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"go build failed:\n{p.stdout}{p.stderr}")
    return out


def start_engine(name: str, args, tmp: str):
    """One engine with args.threads workers."""
    t = args.threads
    if name == "jotter":
        return start_server(name, jotter_argv(args, os.path.join(tmp, "jotter-data")), tmp,
                            args.start_timeout)
    if name == "nginx":
        return start_server(name, nginx_argv(t, os.path.join(tmp, "nginx")), tmp,
                            args.start_timeout)
    if name == "go":
        return start_server(name, lambda port: [args.go_binary, "-addr", f"127.0.0.1:{port}"],
                            tmp, args.start_timeout, env={"GOMAXPROCS": str(t)})
    raise BenchError(f"unknown engine {name}")


def keepalive_rss(srv, n: int = 2000, per_address: int = 100) -> dict:
    """RSS with n open keep-alive connections, each having served one request.
    Sockets are spread over source addresses 127.0.0.2, 127.0.0.3, ... (at most
    per_address each) so the server's per-client-address connection limit applies unchanged."""
    raise_nofile(n + 256)
    conns = []
    try:
        for i in range(n):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5,
                                           source_address=(f"127.0.0.{2 + i // per_address}", 0))
            conns.append(c)
            c.request("GET", PATH)  # HTTP/1.1 with Host: keep-alive
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


def measure(name: str, args, tmp: str, extras: bool) -> dict:
    srv = start_engine(name, args, tmp)
    try:
        status, body = http_get(srv.base + PATH)
        if status != 200 or body != EXPECT:
            raise BenchError(f"{name}: GET {PATH} -> {status} {body!r}")
        r = {"engine": name, "idle_rss": srv.idle_rss}
        r.update(load(srv, PATH, args.duration, args.connections, label=name))
        r["peak_rss"] = memory_mib(srv.proc.pid, "VmHWM")
        if extras:
            r.update(keepalive_rss(srv))
        srv.check_alive()
    finally:
        srv.stop()
    r["problems"] = srv.problems() if name == "jotter" else []
    return r


def median_run(runs: list) -> dict:
    """Per-figure median over the rounds of one engine (errors are summed)."""
    r = dict(runs[0])
    for k, v in r.items():
        if isinstance(v, float) and k not in ("idle_rss", "ka_rss"):  # memory: round 1
            r[k] = statistics.median([x[k] for x in runs if k in x])
    r["errors"] = sum(x["errors"] for x in runs)
    r["non2xx"] = sum(x["non2xx"] for x in runs)
    r["problems"] = [l for x in runs for l in x["problems"]]
    return r


def render(results: list) -> str:
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
    for r in results:
        lines += log_warning(r["engine"], r["problems"])
    return "\n".join(lines)


def run(args, tmp: str) -> tuple:
    """Returns (table printed on the terminal, section for docs/benchmarks.md)."""
    if "go" in args.peers:
        args.go_binary = build_go_peer(tmp)
    print(f"scenario hello: {TITLE}; {args.threads} worker(s), "
          f"wrk -t1 -c{args.connections} -d{args.duration}s", flush=True)
    runs = {name: [] for name in args.peers}
    for rnd in range(args.rounds):    # rounds interleave the engines
        if args.rounds > 1:
            print(f"round {rnd + 1}/{args.rounds}", flush=True)
        for name in args.peers:       # one engine at a time, never concurrently
            runs[name].append(measure(name, args, tmp, extras=rnd == 0))
    table = render([median_run(runs[name]) for name in args.peers])

    rounds = f"; median of {args.rounds} interleaved rounds" if args.rounds > 1 else ""
    command = reproduce_command(args if "jotter" in args.peers else None, NAME, [
        ("--duration", args.duration, 10), ("--connections", args.connections, 32),
        ("--threads", args.threads, 1), ("--rounds", args.rounds, 1),
        ("--peers", ",".join(args.peers), ",".join(ENGINES))])
    section = (f"## Scenario `{NAME}`: {TITLE}\n\n"
               f"{now()}. {args.threads} server worker(s) per engine; load `wrk -t1 "
               f"-c{args.connections} -d{args.duration}s --latency` (after a {WARMUP_S} s "
               f"warm-up), one engine at a time, nothing pinned{rounds}. CPU-s = server "
               f"user+system CPU during the measured run.\n\n"
               f"Machine: {machine_info(args.peers)}.\n\n{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps`):\n\n```\n{command}\n```")
    return table, section
