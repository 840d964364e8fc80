"""Scenario `sync`: what the sync server's features cost, each against its plain counterpart in
the same run.

- Merge: a `PUT` of a 10 KiB note (200 lines) whose base is older than the current version, so
  the server merges two small edits (one line changed on each side), against a plain `PUT` that
  stores the same final body. Each request goes to a note of its own, prepared the same way (v1
  the 10 KiB text, v2 one line changed), so every request does the same work. User-space
  instructions per request under callgrind, as in scenario `instructions`.
- The change feed: `GET /notes/changes` of 1,000 changes against `GET /notes?limit=1000`, the
  same 1,000 notes (instructions per request). Left out when the server has no feed.
- Storage: 10,000 notes with 100 revisions each (~600-byte bodies, edited in 10 sessions of
  10 edits on random days of the past year), the SQLite file's size with every revision kept and
  after the server's retention sweep thinned them (`--revision-days 30`; the sweep runs when the
  server starts), each after `VACUUM`.
"""
import json, os, random, sqlite3, time

from harness import BenchError, f0, jotter_argv, machine_info, now, reproduce_command, sh, start_server
from scenarios.instructions import (KeepAliveClient, TOOLS, callgrind_control, request_bytes, start_jotter,
                                    status_check, window)

NAME = "sync"
TITLE = "the sync server: a merged PUT, the change feed, revisions' storage"
JOTTER_ONLY = True
LINES = 200             # lines of the merged note: 10 KiB
STORAGE_NOTES, STORAGE_EDITS = 10_000, 100


def base_text() -> list:
    rnd = random.Random(7)
    words = "milk eggs bread call alice bob meeting review draft plan garden book river stone".split()
    lines = []
    for i in range(LINES):
        line = f"{i:03d} " + " ".join(rnd.choices(words, k=8))
        lines.append((line + " " * 51)[:50])       # 50 characters and a newline: 51 bytes a line
    return lines


def edited(lines: list, index: int, word: str) -> list:
    copy = list(lines)
    copy[index] = copy[index][:40] + word
    return copy


def json_body(**fields) -> bytes:
    return json.dumps(fields).encode()


def prepare_notes(port: int, count: int, base: list, theirs: list) -> list:
    """`count` notes at version 2: v1 the base text, v2 `theirs`; their ids."""
    client = KeepAliveClient(port)
    ids = []
    try:
        for _ in range(count):
            status, headers, _ = client.exchange(request_bytes(port, "POST", "/notes", json_body(body="\n".join(base)),
                                                               "application/json"))
            if status != 201:
                raise BenchError(f"preparing: POST /notes -> {status}")
            note = int(headers["location"].rsplit("/", 1)[1])
            status, _, body = client.exchange(request_bytes(port, "PUT", f"/notes/{note}", json_body(body="\n".join(theirs)),
                                                            "application/json"))
            if status != 200:
                raise BenchError(f"preparing: PUT /notes/{note} -> {status} {body[:200]!r}")
            ids.append(note)
    finally:
        client.close()
    return ids


def measure_requests(srv, out_dir: str, label: str, raws: list, check, windows: int, per_window: int) -> list:
    """Sends raws[0:warm] as warm-up, then `windows` windows of `per_window` distinct requests."""
    client = KeepAliveClient(srv.port)
    runs = []
    try:
        def send(batch):
            for raw in batch:
                status, headers, body = client.exchange(raw)
                if not check(status, headers, body):
                    raise BenchError(f"{label}: -> {status} {body[:300]!r}")
        warm = len(raws) - windows * per_window
        send(raws[:warm])
        for w in range(windows):
            batch = raws[warm + w * per_window: warm + (w + 1) * per_window]
            total, _ = window(srv, out_dir, lambda: send(batch))
            runs.append(total / per_window)
    finally:
        client.close()
    print(f"  {label}: " + ", ".join(f0(x) for x in runs) + f" Ir/request ({per_window} per window)", flush=True)
    return runs


def merged_check(status, headers, body):
    if status != 200:
        return False
    answer = json.loads(body)
    return answer.get("merge", {}).get("result") == "clean"


def measure_merge(args, tmp: str, out_dir: str, res: dict):
    srv = start_jotter(args, tmp, out_dir)
    try:
        base = base_text()
        theirs = edited(base, 20, "edited on the web")         # the current version: line 20 changed
        mine = edited(base, 150, "edited on the phone")        # the incoming edit: line 150 changed
        both = edited(theirs, 150, "edited on the phone")      # what the merge gives
        windows, per, warm = args.instr_windows, args.sync_requests, max(2, args.sync_requests // 5)
        count = warm + windows * per
        print(f"  preparing {2 * count} notes of {len(chr(10).join(base))} bytes ...", flush=True)
        ids = prepare_notes(srv.port, 2 * count, base, theirs)
        plain = [request_bytes(srv.port, "PUT", f"/notes/{i}", json_body(body="\n".join(both)), "application/json")
                 for i in ids[:count]]
        merged = [request_bytes(srv.port, "PUT", f"/notes/{i}", json_body(body="\n".join(mine), base_version=1),
                                "application/json") for i in ids[count:]]
        res["plain"] = measure_requests(srv, out_dir, "plain PUT", plain, status_check(200), windows, per)
        res["merged"] = measure_requests(srv, out_dir, "merged PUT", merged, merged_check, windows, per)
        res["note_bytes"] = len("\n".join(base).encode())
    finally:
        srv.stop(timeout=60)


def measure_feed(args, tmp: str, out_dir: str, res: dict):
    # A data folder of its own: start_jotter keeps its data in tmp/jotter-data, where the merge
    # left 220 notes of 10 KiB that the feed (oldest first) would send and the list (newest
    # first) would not.
    tmp = os.path.join(tmp, "feed")
    os.makedirs(tmp, exist_ok=True)
    srv = start_jotter(args, tmp, out_dir)
    try:
        client = KeepAliveClient(srv.port)
        try:
            for i in range(1000):
                body = f"body=Change+{i}+of+the+feed:+milk,+eggs,+bread,+a+call+to+Alice&".encode()
                status, _, _ = client.exchange(request_bytes(srv.port, "POST", "/notes", body))
                if status != 201:
                    raise BenchError(f"seeding: POST /notes -> {status}")
            status, _, body = client.exchange(request_bytes(srv.port, "GET", "/notes/changes?limit=1000"))
            _, _, listed = client.exchange(request_bytes(srv.port, "GET", "/notes?limit=1000"))
        finally:
            client.close()
        if status == 404:
            print("  this server has no GET /notes/changes: the feed rows are left out", flush=True)
            return
        if status != 200 or len(json.loads(body)["changes"]) != 1000:
            raise BenchError(f"GET /notes/changes?limit=1000 -> {status} {body[:200]!r}")
        # Both rows must carry the same notes, or the ratio compares two different answers.
        if {c["id"] for c in json.loads(body)["changes"]} != {n["id"] for n in json.loads(listed)["notes"]}:
            raise BenchError("GET /notes/changes and GET /notes?limit=1000 list different notes")
        n, windows = max(2, args.sync_requests // 5), args.instr_windows
        for key, target in (("list1000", "/notes?limit=1000"), ("changes1000", "/notes/changes?limit=1000")):
            raws = [request_bytes(srv.port, "GET", target)] * (2 + windows * n)
            res[key] = measure_requests(srv, out_dir, f"GET {target}", raws, status_check(200), windows, n)
    finally:
        srv.stop(timeout=60)


def database_bytes(path: str) -> int:
    db = sqlite3.connect(path)
    try:
        db.execute("VACUUM")
        return db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
    finally:
        db.close()


def measure_storage(args, tmp: str, res: dict):
    data = os.path.join(tmp, "storage-data")
    argv = jotter_argv(args, data, "--revision-days", "30")
    srv = start_server("jotter-storage", argv, tmp, args.start_timeout)      # creates the schema
    srv.stop(timeout=60)
    path = os.path.join(data, "jotter.sqlite")
    if not os.path.exists(path):
        candidates = [f for f in os.listdir(data) if f.endswith((".sqlite", ".db", ".sqlite3"))]
        if not candidates:
            raise BenchError(f"no SQLite file in {data}: {os.listdir(data)}")
        path = os.path.join(data, candidates[0])
    rnd = random.Random(11)
    words = "milk eggs bread call alice bob meeting review draft plan garden book river stone".split()
    day, clock = 86_400, int(time.time())
    db = sqlite3.connect(path)
    owner = db.execute("SELECT coalesce(min(id), 0) FROM users").fetchone()[0]
    print(f"  writing {STORAGE_NOTES} notes x {STORAGE_EDITS} revisions ...", flush=True)
    with db:
        for note in range(1, STORAGE_NOTES + 1):
            body = " ".join(rnd.choices(words, k=100))[:600]
            sessions = sorted(rnd.sample(range(1, 365), 10), reverse=True)
            times = [clock - d * day + rnd.randrange(day // 2) + k * 60 for d in sessions for k in range(10)]
            rows = []
            for version, at in enumerate(times, start=1):
                cut = rnd.randrange(len(body) - 10)
                body = body[:cut] + rnd.choice(words) + body[cut + 4:]
                rows.append((note, version, owner, body, len(body.encode()), at))
            db.execute("INSERT INTO notes (id, body, created_at, updated_at, version, owner) VALUES (?, ?, ?, ?, ?, ?)",
                       (note, body, times[0], times[-1], len(times), owner))
            db.executemany("INSERT INTO note_revisions (note_id, version, owner, body, size, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                           rows)
    db.close()
    res["kept_bytes"] = database_bytes(path)
    res["kept_rows"] = STORAGE_NOTES * STORAGE_EDITS
    srv = start_server("jotter-storage", argv, tmp, args.start_timeout)      # its retention sweep runs at start
    try:
        deadline, rows = time.time() + 600, None
        while time.time() < deadline:
            time.sleep(2)
            check = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            current = check.execute("SELECT count(*) FROM note_revisions").fetchone()[0]
            check.close()
            if current == rows and current < res["kept_rows"]:
                break
            rows = current
        else:
            raise BenchError("the retention sweep did not finish within 10 minutes")
    finally:
        srv.stop(timeout=60)
    res["thinned_rows"] = rows
    res["thinned_bytes"] = database_bytes(path)


def run(args, tmp: str) -> tuple:
    out_dir = os.path.join(tmp, "callgrind")
    res = {}
    print(f"scenario sync: {TITLE}", flush=True)
    parts = {p.strip() for p in getattr(args, "sync_parts", "merge,feed,storage").split(",")}
    if parts - {"merge", "feed", "storage"} or not parts:
        raise BenchError(f"--sync-parts must be a comma list of merge, feed, storage: {args.sync_parts}")
    if "merge" in parts:
        measure_merge(args, tmp, out_dir, res)
    if "feed" in parts:
        measure_feed(args, tmp, out_dir, res)
    if "storage" in parts:
        measure_storage(args, tmp, res)

    med = lambda runs: sorted(runs)[len(runs) // 2]
    mib = lambda b: f"{b / 1048576:,.1f} MiB"
    rows = ["| figure | Jotter | peer (same run) | ratio |", "|---|--:|--:|--:|"]
    if "merged" in res:
        rows.append(f"| merged `PUT` of a {res['note_bytes'] / 1024:.1f} KiB note, two one-line edits (Ir/request) vs a plain `PUT` "
                    f"of the same result | {f0(med(res['merged']))} | {f0(med(res['plain']))} | {med(res['merged']) / med(res['plain']):.2f}× |")
    if "changes1000" in res:
        rows.append(f"| `GET /notes/changes?limit=1000` (Ir/request) vs `GET /notes?limit=1000`, same 1,000 notes | "
                    f"{f0(med(res['changes1000']))} | {f0(med(res['list1000']))} | {med(res['changes1000']) / med(res['list1000']):.2f}× |")
    if "kept_bytes" in res:
        rows.append(f"| SQLite file, {STORAGE_NOTES:,} notes × {STORAGE_EDITS} revisions: thinned ({res['thinned_rows']:,} revisions) "
                    f"vs all kept ({res['kept_rows']:,}) | {mib(res['thinned_bytes'])} | {mib(res['kept_bytes'])} | "
                    f"{res['thinned_bytes'] / res['kept_bytes']:.2f}× |")
    table = "\n".join(rows)
    command = reproduce_command(args, NAME, [("--instr-windows", args.instr_windows, 2),
                                             ("--sync-requests", args.sync_requests, 50),
                                             ("--sync-parts", args.sync_parts, "merge,feed,storage")])
    valgrind = sh(["valgrind", "--version"])
    section = (
        f"## Scenario `{NAME}`: {TITLE}\n\n"
        f"{now()}.\n\n{__doc__.split(chr(10), 2)[2].strip()}\n\n"
        f"Instructions: `jotter-server --threads {args.threads} --quiet` under `valgrind --tool=callgrind` "
        f"(as in scenario `instructions`), counters zeroed with `callgrind_control -z` after a warm-up, "
        f"{args.instr_windows} windows, median Ir/request. Machine: {machine_info(('sqlite',))}; {valgrind}.\n\n"
        f"{table}\n\nReproduce (after `scripts/install-bench-deps`):\n\n```\n{command}\n```")
    return table, section
