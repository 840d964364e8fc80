"""A request while events fan out: N `GET /notes/events` streams (bench/scenarios/events.py's
client), then `wrk -c64` POSTs notes for D seconds — each note an event to every stream — while
a second thread sends `GET /notes?limit=1` every 0.5 s and times each answer (60 s timeout).
After wrk the streams are no longer read (as in the `events` scenario, whose GET right after
the writes this is); the probes go on for 30 s. Prints wrk's rate, the server's CPU and RSS,
events per stream, and every probe.

Usage: fanout_probe.py JOTTER N D     (e.g. .build/release/jotter 18000 5; engine --threads 1)"""
import os, subprocess, sys, threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "scenarios")]
from harness import cpu_seconds, memory_mib, parse_wrk, raise_nofile, start_server, wrk_command
import events

jotter, n, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
raise_nofile(n + 1024)
tmp = f"/tmp/jotter-fanout-probe-{os.getpid()}"
os.makedirs(tmp)
argv = lambda port: [jotter, "serve", "--host", "127.0.0.1", "--port", str(port), "--threads", "1",
                     "--quiet", "--data", os.path.join(tmp, "data"), "--max-connections", str(n + 1000)]
srv = start_server("jotter", argv, tmp, 15)
try:
    ep, subs = events.subscribe_all(srv.port, n, 100)
    print(f"{n:,} streams open; server RSS {memory_mib(srv.proc.pid, 'VmRSS'):.0f} MiB", flush=True)
    probes, stop, t0 = [], threading.Event(), time.monotonic()

    def probe():
        while not stop.is_set():
            start = time.monotonic()
            try:
                with urllib.request.urlopen(srv.base + "/notes?limit=1", timeout=60) as r:
                    r.read()
                    status = r.status
            except Exception as e:
                status = repr(e)
            probes.append((start - t0, time.monotonic() - start, status))
            time.sleep(0.5)

    threading.Thread(target=probe, daemon=True).start()
    cpu0 = cpu_seconds(srv.proc.pid)
    wrk = subprocess.Popen(wrk_command(srv.base + "/notes", duration, 64, "lua/note_post.lua"),
                           stdout=subprocess.PIPE, text=True)
    while wrk.poll() is None:
        events.drain(ep, subs, 0.05)
    r = parse_wrk(wrk.stdout.read())
    print(f"wrk: {r['rps']:.0f} req/s, p99 {r['p99_ms']:.0f} ms; ended {time.monotonic() - t0:.1f} s "
          f"after the first probe", flush=True)
    time.sleep(30)
    stop.set()
    seen = sorted(s.events for s in subs.values())
    print(f"server CPU {cpu_seconds(srv.proc.pid) - cpu0:.2f} s, RSS {memory_mib(srv.proc.pid, 'VmRSS'):.0f} MiB; "
          f"events read per stream: min {seen[0]}, median {seen[len(seen) // 2]}, max {seen[-1]}")
    slowest = max(p[1] for p in probes)
    print(f"slowest GET {slowest:.2f} s")
    for at, took, status in probes:
        print(f"  GET at {at:6.1f} s: {took:6.2f} s, {status}")
finally:
    srv.stop()
