#!/usr/bin/env python3
"""Jotter benchmark harness (python3, standard library only).

Runs every scenario (or the ones named by --scenario), prints each one's Markdown table
and writes it into the scenario's own section of docs/benchmarks.md. The scenarios are listed
below (--help) from their modules, bench/scenarios/ (bench/README.md says what each compares).

    python3 bench/run.py --jotter .build/release/jotter [--scenario hello,notes,...]
        [--duration 10] [--rounds 1] [--threads 1] [--output docs/benchmarks.md] ...

A scenario is a module under bench/scenarios/ declaring NAME, TITLE, TOOLS, JOTTER_ONLY and
run(args, tmp) -> (table, section) (bench/scenarios/__init__.py); add one by writing the module
and listing it in scenarios.ALL.
"""
import argparse, os, shutil, signal, sys, tempfile

import scenarios
from harness import REPO, BenchError, ForeignLoad, raise_nofile, write_section
from scenarios import hello

SCENARIOS = {m.NAME: m for m in scenarios.ALL}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter,
                                 epilog="scenarios:\n" + "\n".join(scenarios.summary(m) for m in scenarios.ALL))
    ap.add_argument("--jotter", help="path to the jotter binary (needed when jotter is a peer)")
    ap.add_argument("--scenario", default="all",
                    help=f"'all' (default) or a comma list of {','.join(SCENARIOS)}")
    ap.add_argument("--duration", type=int, default=10, help="seconds of each measured wrk load")
    ap.add_argument("--threads", type=int, default=1, help="server worker count (all engines)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="hello, notes, uploads (wrk loads): measure N times, report medians")
    ap.add_argument("--output", default=os.path.join(REPO, "docs", "benchmarks.md"))
    ap.add_argument("--start-timeout", type=float, default=15.0)
    g = ap.add_argument_group("hello")
    g.add_argument("--connections", type=int, default=32, help="wrk connections (notes: reads)")
    g.add_argument("--peers", default=",".join(hello.ENGINES), help="comma list of jotter,nginx,go")
    g = ap.add_argument_group("notes")
    g.add_argument("--write-connections", type=int, default=64,
                   help="wrk connections for POST /notes (and seeding; events: the write "
                        "load; peers: store)")
    g.add_argument("--seed-notes", type=int, default=10000, help="notes in the table")
    g = ap.add_argument_group("events")
    g.add_argument("--subscribers", type=int, default=10000, help="concurrent event streams")
    g.add_argument("--per-address", type=int, default=50,
                   help="streams per source address (127.0.0.2, .3, ...)")
    g.add_argument("--event-rounds", type=int, default=3, help="events published and timed")
    g.add_argument("--max-connections", type=int, default=12000, help="jotter --max-connections")
    g.add_argument("--fanout-duration", type=int, default=5,
                   help="seconds of POST /notes load while all subscribers listen (0: skip)")
    g = ap.add_argument_group("uploads, sdk-upload, resumable")
    g.add_argument("--upload-mib", type=int, default=1024, help="size of the large file, MiB")
    g.add_argument("--upload-rounds", type=int, default=3,
                   help="large-file uploads per server (interleaved), median reported")
    g.add_argument("--upload-kib", type=int, default=100, help="file part of each wrk upload, KiB")
    g.add_argument("--upload-connections", type=int, default=16, help="wrk -c for small uploads")
    g = ap.add_argument_group("instructions")
    g.add_argument("--instr-requests", type=int, default=1000,
                   help="requests per callgrind window (GET /notes?limit=100: a tenth, POST: half)")
    g.add_argument("--instr-warmup", type=int, default=100, help="requests before the first window")
    g.add_argument("--instr-windows", type=int, default=2, help="measured windows per request kind")
    g.add_argument("--instr-notes", type=int, default=150, help="notes seeded before measuring")
    g.add_argument("--sync-requests", type=int, default=50, help="sync: requests per callgrind window")
    g.add_argument("--sync-parts", default="merge,feed,storage",
                   help="sync: which of merge,feed,storage to measure (the section lists only those)")
    args = ap.parse_args()

    names = list(SCENARIOS) if args.scenario == "all" else \
        [s.strip() for s in args.scenario.split(",") if s.strip()]
    if not names or any(s not in SCENARIOS for s in names):
        ap.error(f"--scenario must be 'all' or a comma list of {','.join(SCENARIOS)}")
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if not args.peers or any(p not in hello.ENGINES for p in args.peers):
        ap.error(f"--peers must be a comma list of {','.join(hello.ENGINES)}")
    jotter_only = [s for s in names if SCENARIOS[s].JOTTER_ONLY]
    if "jotter" not in args.peers:   # the jotter-only scenarios need it
        names = [s for s in names if s not in jotter_only]
        if jotter_only:
            print(f"without jotter in --peers, skipping: {', '.join(jotter_only)}")
        if not names:
            ap.error("nothing to run without jotter")
    if "jotter" in args.peers or any(SCENARIOS[s].JOTTER_ONLY for s in names):
        if not args.jotter or not os.access(args.jotter, os.X_OK):
            ap.error("--jotter PATH (an executable) is needed, or leave jotter out of --peers")
        args.jotter = os.path.abspath(args.jotter)
    tools = ["wrk"]
    for name in names:
        tools += [t for t in scenarios.tools(SCENARIOS[name], args) if t not in tools]
    for tool in tools:
        if not shutil.which(tool):
            ap.error(f"{tool} not found: run scripts/install-bench-deps")
    args.scenarios = names
    return args


def main() -> int:
    args = parse_args()
    # Servers inherit this limit, so every engine can hold the 2000 connections.
    raise_nofile(8192)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    failed = []
    for name in args.scenarios:
        with tempfile.TemporaryDirectory(prefix=f"jotter-bench-{name}-") as tmp:
            try:
                foreign = ForeignLoad()
                table, section = SCENARIOS[name].run(args, tmp)
                busy = foreign.cores()
            except BenchError as e:
                print(f"error in scenario {name}: {e}", file=sys.stderr)
                failed.append(name)
                continue
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                return 130
        noise = (f"Other processes kept {busy:.2f} of the {os.cpu_count()} cores busy on "
                 f"average during this run" + (" (a quiet machine: under 0.10)." if busy < 0.1
                                                else ": **figures disturbed**, rerun quietly."))
        if getattr(SCENARIOS[name], "REPORTS_LOAD", False):  # its section says so itself
            noise = ""
        section = section.replace("\n\nReproduce (after", f"\n\n{noise}\n\nReproduce (after", 1)
        print("\n" + table + "\n\n" + noise + "\n")
        write_section(args.output, name, section)
        print(f"wrote section '{name}' of {args.output}\n", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
