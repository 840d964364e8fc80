"""Scenario `sync-engine`: the SDK's `NotesSyncEngine` against one `jotter serve` on SQLite
seeded with 10,000 notes (issue 33's figures), each figure against a peer measured in the same
run:

- First sync: an empty replica pulls every note (`GET /notes/changes`, pages of 500) and stores
  it in its SQLite file, against the same SDK paging `GET /notes?limit=1000` over the same notes
  (what an app without the engine does to list them): time, bytes the server sent, requests.
- Incremental sync after 100 notes changed elsewhere (`PUT` by another client): the engine pulls
  only those, against its first sync.
- 1,000 edits made offline, then pushed by one sync (each a `PUT` with `Base-Version` and its
  `Idempotency-Key`, then a pull): time and requests, against the first sync's time.
- Memory: how much the process's RSS grew from before the engine opened its replica to after
  the first sync (the replica's 10,000 notes), beside the replica's size on disk (its SQLite
  file and write-ahead log).

The engine runs in the package's test bundle, in a bench mode (`SyncBenchmark` in
Tests/JotterClientTests, enabled by `JOTTER_SYNC_BENCH_SERVER`), as `swift build --build-tests`
left it (a debug build: its times are the debug SDK's, the peer's too); times are measured there on `ContinuousClock`. Requests and bytes come from the
server's access log, split into phases by a `GET /hello?name=phase-…` the program sends before
each (bytes: the access log's bytes sent)."""
import json, os, random, re, subprocess, time

from harness import REPO, BenchError, jotter_argv, machine_info, now, reproduce_command, start_server
from scenarios.instructions import KeepAliveClient, request_bytes

NAME = "sync-engine"
TITLE = "the SDK's sync engine: first sync of {:,} notes, incremental sync, offline edits pushed, replica memory"
TOOLS = ("swift",)
JOTTER_ONLY = True
NOTES, REMOTE, OFFLINE = 10_000, 100, 1_000
LOG_LINE = re.compile(r'"(\S+) (\S+) HTTP/[\d.]+" (\d{3}) (\d+) ')


def seed(port: int, count: int):
    rnd = random.Random(33)
    words = "milk eggs bread call alice bob meeting review draft plan garden book river stone".split()
    client = KeepAliveClient(port)
    try:
        for i in range(count):
            body = f"Note {i}: " + " ".join(rnd.choices(words, k=rnd.randrange(10, 40)))
            status, _, _ = client.exchange(request_bytes(port, "POST", "/notes", json.dumps({"body": body}).encode(),
                                                         "application/json"))
            if status != 201:
                raise BenchError(f"seeding: POST /notes -> {status}")
    finally:
        client.close()


def phases(log: str) -> dict:
    """Requests and bytes sent per phase of the access log (the marker requests left out)."""
    found, current = {}, None
    with open(log, errors="replace") as f:
        for line in f:
            m = LOG_LINE.search(line)
            if not m:
                continue
            method, target, status, sent = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
            if target.startswith("/hello?name=phase-"):
                current = target.split("phase-", 1)[1]
                found[current] = {"requests": 0, "bytes": 0, "errors": 0}
                continue
            if current is not None:
                found[current]["requests"] += 1
                found[current]["bytes"] += sent
                found[current]["errors"] += status >= 400
    return found


def run(args, tmp: str) -> tuple:
    print(f"scenario {NAME}: {TITLE.format(NOTES)}", flush=True)
    data = os.path.join(tmp, "jotter-data")
    serve = jotter_argv(args, data)
    srv = start_server("jotter", lambda port: [a for a in serve(port) if a != "--quiet"], tmp, args.start_timeout)
    try:
        started = time.monotonic()
        seed(srv.port, NOTES)
        print(f"  seeded {NOTES:,} notes in {time.monotonic() - started:.1f} s", flush=True)
        out = os.path.join(tmp, "figures.json")
        env = dict(os.environ, JOTTER_SYNC_BENCH_SERVER=f"http://127.0.0.1:{srv.port}", JOTTER_SYNC_BENCH_OUT=out,
                   JOTTER_SYNC_BENCH_REMOTE=str(REMOTE), JOTTER_SYNC_BENCH_OFFLINE=str(OFFLINE))
        p = subprocess.run(["swift", "test", "--skip-build", "--filter", "SyncBenchmark"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=3600)
        if p.returncode != 0 or not os.path.exists(out):
            raise BenchError(f"the SDK's side failed (build the tests first: swift build --build-tests):\n{p.stdout[-3000:]}{p.stderr[-2000:]}")
        with open(out) as f:
            fig = json.load(f)
    finally:
        srv.stop(timeout=60)
    per = phases(srv.log)
    for name in ("paging", "first", "remote", "incremental", "push"):
        if name not in per:
            raise BenchError(f"phase {name} is not in the access log")
        if per[name]["errors"]:
            raise BenchError(f"phase {name}: {per[name]['errors']} requests failed")
    if fig["replica_notes"] != NOTES or fig["notes"] != NOTES or fig["pending_after"] != 0 or fig["pending"] != OFFLINE:
        raise BenchError(f"the replica does not hold what the server does: {fig}")

    first, paging, inc, push = per["first"], per["paging"], per["incremental"], per["push"]
    mib = lambda b: f"{b / 1048576:,.2f} MiB"
    s = lambda x: f"{x:.2f} s"
    rows = ["| figure | engine | peer (same run) | ratio |", "|---|--:|--:|--:|",
            f"| first sync of {NOTES:,} notes vs paging `GET /notes?limit=1000` (SDK), time | {s(fig['first_seconds'])} | "
            f"{s(fig['paging_seconds'])} | {fig['first_seconds'] / fig['paging_seconds']:.2f}× |",
            f"| … bytes the server sent | {mib(first['bytes'])} | {mib(paging['bytes'])} | {first['bytes'] / paging['bytes']:.2f}× |",
            f"| … requests | {first['requests']} | {paging['requests']} | {first['requests'] / paging['requests']:.2f}× |",
            f"| incremental sync after {REMOTE} remote changes vs the first sync, time | {s(fig['incremental_seconds'])} | "
            f"{s(fig['first_seconds'])} | {fig['incremental_seconds'] / fig['first_seconds']:.3f}× |",
            f"| … bytes, requests | {mib(inc['bytes'])}, {inc['requests']} | {mib(first['bytes'])}, {first['requests']} | "
            f"{inc['bytes'] / first['bytes']:.3f}× |",
            f"| {OFFLINE:,} offline edits pushed (one sync) vs the first sync, time | {s(fig['push_seconds'])} | "
            f"{s(fig['first_seconds'])} | {fig['push_seconds'] / fig['first_seconds']:.2f}× |",
            f"| … requests ({push['requests'] / OFFLINE:.2f} per edit), bytes | {push['requests']}, {mib(push['bytes'])} | "
            f"{first['requests']}, {mib(first['bytes'])} | {push['requests'] / first['requests']:.1f}× |",
            f"| RSS growth with the replica of {NOTES:,} notes vs the replica on disk | {mib(fig['rss_growth_kib'] * 1024)} | "
            f"{mib(fig['replica_file_bytes'])} | {fig['rss_growth_kib'] * 1024 / fig['replica_file_bytes']:.2f}× |"]
    table = "\n".join(rows)
    command = reproduce_command(args, NAME, [])
    section = (
        f"## Scenario `{NAME}`: {TITLE.format(NOTES)}\n\n{now()}.\n\n{__doc__.split(chr(10), 2)[2].strip()}\n\n"
        f"Server: `jotter serve --threads {args.threads}` (release build, access log on), SQLite. Machine: "
        f"{machine_info(('sqlite',))}.\n\n{table}\n\nReproduce (after `scripts/install-bench-deps` and "
        f"`swift build --build-tests`):\n\n```\n{command}\n```")
    return table, section
