#!/usr/bin/env python3
"""Jotter benchmark harness (python3, standard library only).

Runs every scenario (or the ones named by --scenario), prints each one's Markdown table
and writes it into the scenario's own section of docs/benchmarks.md:

  hello   GET /hello?name=Bob on jotter, nginx and Go net/http (same workers, same wrk load)
  notes   /notes on SQLite with 10,000 notes: GET one, GET a page, POST with synchronous
          FULL and NORMAL; jotter's own hello as the reference
  events  10,000 GET /notes/events subscribers: RSS, time for one event to reach all
  uploads a 1 GiB file with curl to jotter /uploads and to nginx (client_body_in_file_only):
          MB/s, CPU, peak RSS; then 100 KiB multipart uploads under wrk load
  sdk-upload 1 GiB multipart upload by the Swift SDK (jotter upload) and by curl: MB/s, client RSS
  instructions user-space instructions per request under callgrind, jotter and nginx
  peers   the same requests to jotter and to the tutorials' original servers (PHP hello script,
          iOS Recipes WEBrick server, httpbin, the Laravel notes app): req/s, CPU, RSS, ratios
  http2   GET /hello over HTTP/2 (h2load -c 10 -m 100) on jotter and nginx: requests per server
          CPU-second; RSS with 1,000 event streams on 10 connections
  scale   1, 2, 3 instances on PostgreSQL behind nginx and one on SQLite: GET one, GET a page,
          durable POST; req/s and CPU per request of each component (jotter, postgres, nginx)
  resumable a 1 GiB resumable upload cut at 50 % and resumed: bytes re-sent; its MB/s against
          a plain raw-body upload of the same file
  sync    a merged PUT vs a plain one, GET /notes/changes vs GET /notes (callgrind), revisions'
          storage thinned vs kept

    python3 bench/run.py --jotter .build/release/jotter [--scenario hello,notes,events,uploads,sdk-upload,instructions,peers,scale]
        [--duration 10] [--rounds 1] [--threads 1] [--output docs/benchmarks.md] ...

A scenario is a module under bench/scenarios/ with NAME, TITLE and run(args, tmp) ->
(table, section); add one by writing the module and listing it in SCENARIOS.
"""
import argparse, os, shutil, signal, sys, tempfile

from harness import REPO, BenchError, ForeignLoad, raise_nofile, write_section
from scenarios import events, hello, notes, sdk_upload, uploads
from scenarios import bucket_upload, http2, instructions, peers, resumable, scale, sync

SCENARIOS = {m.NAME: m for m in (hello, notes, events, uploads, sdk_upload)}
SCENARIOS[instructions.NAME] = instructions
SCENARIOS[peers.NAME] = peers
SCENARIOS[scale.NAME] = scale
SCENARIOS[http2.NAME] = http2
SCENARIOS[bucket_upload.NAME] = bucket_upload
SCENARIOS[resumable.NAME] = resumable
SCENARIOS[sync.NAME] = sync
JOTTER_ONLY = ("notes", "events", "uploads", "sdk-upload")
JOTTER_ONLY += (instructions.NAME, peers.NAME, scale.NAME, http2.NAME, bucket_upload.NAME, resumable.NAME, sync.NAME)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
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
    args = ap.parse_args()

    names = list(SCENARIOS) if args.scenario == "all" else \
        [s.strip() for s in args.scenario.split(",") if s.strip()]
    if not names or any(s not in SCENARIOS for s in names):
        ap.error(f"--scenario must be 'all' or a comma list of {','.join(SCENARIOS)}")
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if not args.peers or any(p not in hello.ENGINES for p in args.peers):
        ap.error(f"--peers must be a comma list of {','.join(hello.ENGINES)}")
    if "jotter" not in args.peers:   # the jotter-only scenarios need it
        skipped = [s for s in names if s in JOTTER_ONLY]
        names = [s for s in names if s not in JOTTER_ONLY]
        if skipped:
            print(f"without jotter in --peers, skipping: {', '.join(skipped)}")
        if not names:
            ap.error("nothing to run without jotter")
    if "jotter" in args.peers or set(names) & set(JOTTER_ONLY):
        if not args.jotter or not os.access(args.jotter, os.X_OK):
            ap.error("--jotter PATH (an executable) is needed, or leave jotter out of --peers")
        args.jotter = os.path.abspath(args.jotter)
    tools = ["wrk"] + ([p for p in ("nginx", "go") if p in args.peers] if "hello" in names else [])
    if "uploads" in names:
        tools += ["nginx", "curl", "sha256sum"]
    if "sdk-upload" in names:
        tools += ["curl"]
    if instructions.NAME in names or sync.NAME in names:
        tools += list(instructions.TOOLS)
    if peers.NAME in names:
        tools += ["nginx", "php", "ruby"]
    if scale.NAME in names:
        tools += list(scale.TOOLS)
    if bucket_upload.NAME in names:
        tools += list(bucket_upload.TOOLS)
    if resumable.NAME in names:
        tools += list(resumable.TOOLS)
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
