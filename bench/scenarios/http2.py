"""Scenario `http2`: GET /hello?name=Bob over HTTP/2 with prior knowledge (h2c), h2load from
Debian's nghttp2-client, `-c 10 -m 100`, on jotter and on nginx 1.22 (`listen … http2`,
`return 200`), one at a time, same worker count: req/s and req/s per server CPU-second; then
the server's RSS with 1,000 streams open (10 connections × 100 event streams on jotter) and
the time one event takes to reach all of them (bench/h2_events.py)."""
import json, os, re, subprocess, time

from harness import (BenchError, cpu_seconds, jotter_argv, machine_info, memory_mib, now,
                     reproduce_command, start_server)

NAME = "http2"
TITLE = "GET /hello?name=Bob over HTTP/2 (h2load -c 10 -m 100, prior knowledge)"
TOOLS = ("h2load", "nginx")
JOTTER_ONLY = True
PATH = "/hello?name=Bob"

NGINX_CONF = """worker_processes @WORKERS@;
daemon off;
pid @TMP@/nginx.pid;
error_log @TMP@/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    server_tokens off;
    # nginx 1.22 ends an HTTP/2 connection after keepalive_requests (1,000) requests.
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:@PORT@ http2;
        location = /healthz { return 200 "ok"; }
        location = /hello { default_type text/plain; return 200 "Hello Bob!"; }
    }
}
"""


def h2_ready(srv) -> bool:
    p = subprocess.run(["h2load", "-n", "1", "-c", "1", f"http://127.0.0.1:{srv.port}/healthz"],
                       capture_output=True, text=True, timeout=5)
    return "1 succeeded" in p.stdout


def start(name: str, args, tmp: str):
    if name == "jotter":
        return start_server(name, jotter_argv(args, os.path.join(tmp, "jotter-h2")), tmp, args.start_timeout,
                            ready=h2_ready)
    folder = os.path.join(tmp, "nginx-h2")
    os.makedirs(folder, exist_ok=True)

    def argv(port):
        conf = NGINX_CONF
        for k, v in {"WORKERS": args.threads, "TMP": folder, "PORT": port}.items():
            conf = conf.replace(f"@{k}@", str(v))
        path = os.path.join(folder, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        return ["nginx", "-p", folder, "-c", path, "-e", os.path.join(folder, "error.log")]
    return start_server(name, argv, tmp, args.start_timeout, ready=h2_ready)


def h2load(port: int, requests: int) -> dict:
    p = subprocess.run(["h2load", "-n", str(requests), "-c", "10", "-m", "100", f"http://127.0.0.1:{port}{PATH}"],
                       capture_output=True, text=True, timeout=600)
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", p.stdout)
    rps = re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", p.stdout)
    if not done or not rps:
        raise BenchError(f"h2load output not understood:\n{p.stdout}{p.stderr}")
    succeeded = int(done.group(2))
    if succeeded < requests:
        raise BenchError(f"h2load: only {succeeded:,} of {requests:,} requests succeeded:\n{p.stdout[-2000:]}")
    return {"succeeded": succeeded, "rps": float(rps.group(1))}


def measure(name: str, args, tmp: str) -> dict:
    srv = start(name, args, tmp)
    try:
        h2load(srv.port, 20_000)  # warm-up
        cpu0 = cpu_seconds(srv.proc.pid)
        result = h2load(srv.port, args.h2_requests)
        cpu = cpu_seconds(srv.proc.pid) - cpu0
        result.update(engine=name, cpu_s=cpu, per_cpu=result["succeeded"] / cpu if cpu > 0 else 0.0,
                      peak_rss=memory_mib(srv.proc.pid, "VmHWM"))
        if name == "jotter":
            result.update(streams_rss(srv))
        srv.check_alive()
    finally:
        srv.stop()
    return result


def streams_rss(srv) -> dict:
    """1,000 event streams on 10 HTTP/2 connections (bench/h2_events.py, PyPI's h2 from
    .venv-test): the server's RSS before and at its peak while they are open, and how long one
    event takes to reach all of them."""
    python = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".venv-test", "bin", "python")
    if not os.path.exists(python):
        raise BenchError("no .venv-test: run scripts/test-venv (it installs h2)")
    before = memory_mib(srv.proc.pid, "VmRSS")
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "h2_events.py")
    p = subprocess.Popen([python, script, str(srv.port), "10", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = before
    while p.poll() is None:
        peak = max(peak, memory_mib(srv.proc.pid, "VmRSS"))
        time.sleep(0.05)
    out, err = p.communicate()
    try:
        found = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BenchError(f"h2_events.py failed: {out}{err}")
    if "error" in found:
        raise BenchError(f"h2_events.py: {found}")
    return {"streams_before": before, "streams_rss": peak, "event_ms": found["latency_ms"], "streams": found["streams"]}


def run(args, tmp: str) -> tuple:
    if not hasattr(args, "h2_requests"):
        args.h2_requests = 200_000
    print(f"scenario http2: {TITLE}; {args.threads} worker(s), {args.h2_requests:,} requests", flush=True)
    results = [measure(name, args, tmp) for name in ("jotter", "nginx")]
    rows = ["| server | req/s | server CPU-s | requests per CPU-s | peak RSS MiB |", "|---|--:|--:|--:|--:|"]
    for r in results:
        rows.append(f"| {r['engine']} | {r['rps']:,.0f} | {r['cpu_s']:.2f} | {r['per_cpu']:,.0f} | {r['peak_rss']:.1f} |")
    jotter, nginx = results
    rows += ["", f"- jotter/nginx: requests per server CPU-second **{jotter['per_cpu'] / nginx['per_cpu']:.2f}x** (goal ≥ 1.0x), "
                 f"req/s {jotter['rps'] / nginx['rps']:.2f}x",
             f"- jotter with 1,000 event streams open on 10 connections: RSS {jotter['streams_rss']:.1f} MiB "
             f"({jotter['streams_before']:.1f} MiB before: ~{(jotter['streams_rss'] - jotter['streams_before']) * 1024 / 1000:.1f} KiB per stream)",
             f"- one event (a note created over HTTP/1.1) to all {jotter['streams']:,} streams: p50 {jotter['event_ms']['p50']} ms, "
             f"p99 {jotter['event_ms']['p99']} ms, last {jotter['event_ms']['max']} ms (goal < 250 ms)"]
    table = "\n".join(rows)
    section = (f"## {TITLE}\n\n{table}\n\nMeasured {now()}; {machine_info(('nginx', 'h2load'))}.\n\n"
               f"Reproduce: `{reproduce_command(args, NAME, [])}`\n")
    return table, section
