#!/usr/bin/env python3
"""Three rows of the `instructions` scenario for one build, quickly: `GET /hello?name=Bob`
(HTTP/1.1 and HTTP/2 with prior knowledge) and `GET /notes/{id}`, measured by the scenario's
own code (scenarios/instructions.py: the same server under callgrind, client, warm-up and
windows), with no nginx, no PostgreSQL and no docs/benchmarks.md written. For comparing two
builds of jotter, e.g. with and without an escape from Swift's checks:

    python3 bench/instruction_rows.py --jotter .build/release/jotter [--label after]

Prints, per row, the Ir per request of each window, and from the last window the calls into
`swift_retain` + `swift_release`, the allocator and `swift_beginAccess` (a dynamic exclusivity
check) per request. `jotter-server` must be beside --jotter (`swift build -c release`)."""
import argparse, json, os, sys, tempfile, types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenarios import instructions as I  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jotter", required=True)
    ap.add_argument("--label", default="jotter")
    ap.add_argument("--requests", type=int, default=1000, help="requests per window")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--windows", type=int, default=2)
    ap.add_argument("--json", help="also write the figures here")
    opts = ap.parse_args()
    args = types.SimpleNamespace(jotter=opts.jotter, threads=1, start_timeout=120.0, instr_notes=150)
    n, warm, res = opts.requests, opts.warmup, {}
    with tempfile.TemporaryDirectory(prefix="jotter-bench-rows-") as tmp:
        out_dir = os.path.join(tmp, "callgrind")
        srv = I.start_jotter(args, tmp, out_dir)
        try:
            raw = lambda method, target: I.request_bytes(srv.port, method, target)
            ids = I.seed_notes(srv, args.instr_notes)
            loads = [I.Load("hello", I.LABELS["hello"], raw("GET", "/hello?name=Bob"), I.hello_check, n, warm),
                     I.Load("h2", I.LABELS["h2"], (f"127.0.0.1:{srv.h2_port}", "/hello?name=Bob"),
                            I.hello_check, n, warm, connect=lambda s: I.H2Client(s.h2_port)),
                     I.Load("note", I.LABELS["note"], raw("GET", f"/notes/{ids[len(ids) // 2]}"),
                            I.status_check(200), n, warm)]
            for load in loads:
                r = I.measure(srv, out_dir, load, opts.windows)
                got = {"runs": r["runs"]}
                I.first_window_costs(got, r["dump"], r["n"])
                got["access_calls"] = I.call_counts(r["dump"]).get("swift_beginAccess", 0) / r["n"]
                res[load.key] = got
        finally:
            srv.stop(timeout=60)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(res, f, indent=1)
    for key, got in res.items():
        print(f"{opts.label} {key}: Ir/request {', '.join(f'{x:,.0f}' for x in got['runs'])}; "
              f"retain+release {got['rc_calls']:.1f}; malloc {got['malloc_calls']:.2f}; "
              f"swift_beginAccess {got['access_calls']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
