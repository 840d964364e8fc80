"""Scenario `notes`: the /notes resource on SQLite with 10,000 notes in the table.

Jotter is its own reference here: in one server process it measures GET /hello (the engine's
cost with no database), GET /notes/{id} (random existing ids), GET /notes?limit=100 and
POST /notes with synchronous=FULL; then a second server on an identical copy of the seeded
database measures POST /notes with synchronous=NORMAL."""
import asyncio, json, os, random, shutil, statistics, time

from harness import (WARMUP_S, BenchError, f0, http_get, jotter_argv, load, log_warning,
                     machine_info, memory_mib, now, ratio, reproduce_command, start_server)

NAME = "notes"
TITLE = "the /notes resource on SQLite ({:,} notes), reads and durable writes"
TOOLS = ()
JOTTER_ONLY = True
GET_TARGET, WRITE_TARGET = 0.6, 0.5
WORDS = ("milk eggs bread call alice bob meeting monday review draft plan garden water "
         "plants book flight hotel invoice pay rent fix bike dentist tuesday project notes "
         "swift sqlite server deploy backup check email reply friday lunch dinner").split()

ROWS = [  # key, label, connections attribute
    ("hello", "`GET /hello?name=Bob` (reference: no database)", "connections"),
    ("get", "`GET /notes/{id}`, random existing id", "connections"),
    ("list", "`GET /notes?limit=100`", "connections"),
    ("post_full", "`POST /notes`, `--synchronous full` (default)", "write_connections"),
    ("post_normal", "`POST /notes`, `--synchronous normal`", "write_connections"),
]


# -------------------------------------------------------------- seeding ---

async def _post_notes(port: int, bodies: list, concurrency: int) -> list:
    """POSTs every body (form-urlencoded) over `concurrency` keep-alive connections;
    returns the created ids. Anything but 201 is an error."""
    ids, todo = [], list(bodies)

    async def worker():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while todo:
                payload = b"body=" + todo.pop().encode() + b"&"
                writer.write(b"POST /notes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             b"Content-Type: application/x-www-form-urlencoded\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
                status = await reader.readline()
                headers = {}
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    k, _, v = line.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                if status.split()[1:2] != [b"201"]:
                    raise BenchError(f"seeding: POST /notes -> {status!r} {body[:300]!r}")
                ids.append(int(headers["location"].rsplit("/", 1)[1]))
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ids


def seed(args, tmp: str, prepare=None) -> dict:
    """A fresh data dir with args.seed_notes notes created through the API (synchronous=FULL),
    the server stopped cleanly; later servers start from copies of it. `prepare(data)`, when
    given, runs on the empty data dir before the server starts (e.g. to add a user first)."""
    data = os.path.join(tmp, "notes-seed")
    if prepare:
        os.makedirs(data, exist_ok=True)
        prepare(data)
    srv = start_server("jotter", jotter_argv(args, data), tmp, args.start_timeout,
                       log_name="jotter-seed")
    try:
        rnd = random.Random(42)
        bodies = [f"Note {i}: " + "+".join(rnd.choices(WORDS, k=rnd.randint(4, 24)))
                  for i in range(args.seed_notes)]
        print(f"  seeding {args.seed_notes:,} notes (POST /notes, "
              f"{args.write_connections} connections) ...", flush=True)
        t0 = time.monotonic()
        ids = asyncio.run(_post_notes(srv.port, bodies, args.write_connections))
        seconds = time.monotonic() - t0
        if len(set(ids)) != args.seed_notes:
            raise BenchError(f"seeding: {len(set(ids))} distinct ids for {args.seed_notes} notes")
        status, body = http_get(srv.base + "/notes?limit=1")
        newest = json.loads(body)["notes"][0]["id"] if status == 200 else None
        if newest != str(max(ids)):
            raise BenchError(f"seeding: newest note is {newest}, expected {max(ids)}")
    finally:
        stopped = srv.stop()
    if stopped["exit"] != 0:
        raise BenchError(f"seeding server exited with {stopped['exit']}:\n{srv.log_tail()}")
    ids_file = os.path.join(tmp, "note-ids.txt")
    with open(ids_file, "w") as f:
        f.write("\n".join(map(str, sorted(ids))) + "\n")
    print(f"  seeded in {seconds:.2f}s ({args.seed_notes / seconds:,.0f} notes/s)", flush=True)
    return {"data": data, "ids_file": ids_file, "ids": ids, "seconds": seconds,
            "problems": srv.problems()}


# ------------------------------------------------------------ measuring ---

def newest_id(srv) -> int:
    status, body = http_get(srv.base + "/notes?limit=1")
    if status != 200:
        raise BenchError(f"GET /notes?limit=1 -> {status}")
    return int(json.loads(body)["notes"][0]["id"])


def sanity_checks(srv, some_id: int):
    status, body = http_get(f"{srv.base}/notes/{some_id}")
    if status != 200 or json.loads(body)["note"]["id"] != str(some_id):
        raise BenchError(f"GET /notes/{some_id} -> {status} {body[:200]!r}")
    status, body = http_get(srv.base + "/notes?limit=100")
    if status != 200 or len(json.loads(body)["notes"]) != 100:
        raise BenchError(f"GET /notes?limit=100 -> {status} {body[:200]!r}")


def post_load(srv, args, label: str) -> dict:
    """POST /notes with wrk; checks afterwards that every 201 wrk counted is a note in the
    table (ids are assigned in order, so the newest id tells how many were created)."""
    before = newest_id(srv)
    r = load(srv, "/notes", args.duration, args.write_connections, "lua/note_post.lua",
             label=label)
    created = newest_id(srv) - before
    acknowledged = r["warmup_requests"] + r["requests"] - r["non2xx"]
    r["created"], r["acknowledged"] = created, acknowledged
    if created < acknowledged:
        print(f"  WARNING {label}: {acknowledged} notes acknowledged but only {created} "
              f"in the table", flush=True)
    return r


def server_from_seed(args, tmp: str, seeded: dict, name: str, *flags: str):
    data = os.path.join(tmp, name)
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(seeded["data"], data)
    return start_server("jotter", jotter_argv(args, data, *flags), tmp, args.start_timeout,
                        log_name=name)


def one_round(args, tmp: str, seeded: dict) -> dict:
    rows = {}
    srv = full = server_from_seed(args, tmp, seeded, "notes-full", "--synchronous", "full")
    try:
        sanity_checks(srv, random.choice(seeded["ids"]))
        rows["hello"] = load(srv, "/hello?name=Bob", args.duration, args.connections,
                             label="hello (reference)")
        rows["get"] = load(srv, f"/notes/{seeded['ids'][0]}", args.duration, args.connections,
                           "lua/note_get.lua", (seeded["ids_file"],), label="GET /notes/{id}")
        rows["list"] = load(srv, "/notes?limit=100", args.duration, args.connections,
                            label="GET /notes?limit=100")
        rows["post_full"] = post_load(srv, args, "POST /notes (FULL)")
        memory = {"idle_rss": srv.idle_rss, "peak_rss": memory_mib(srv.proc.pid, "VmHWM")}
    finally:
        stop_full = srv.stop(timeout=15)
    srv = server_from_seed(args, tmp, seeded, "notes-normal", "--synchronous", "normal")
    try:
        rows["post_normal"] = post_load(srv, args, "POST /notes (NORMAL)")
    finally:
        stop_normal = srv.stop(timeout=15)
    for what, stopped in (("FULL", stop_full), ("NORMAL", stop_normal)):
        if stopped["exit"] != 0:
            print(f"  WARNING: the {what} server exited with {stopped['exit']} on SIGTERM "
                  f"after {stopped['stop_s']:.1f}s", flush=True)
    rows["memory"] = memory
    rows["stops"] = [stop_full, stop_normal]
    rows["problems"] = full.problems() + srv.problems()
    return rows


def median_rounds(rounds: list) -> dict:
    out = {}
    for key in [k for k, _, _ in ROWS] + ["memory"]:
        out[key] = dict(rounds[0][key])
        for k, v in out[key].items():
            if isinstance(v, float) and k not in ("idle_rss", "peak_rss"):
                out[key][k] = statistics.median(r[key][k] for r in rounds)
        for k in ("errors", "non2xx", "created", "acknowledged"):
            if k in out[key]:
                out[key][k] = sum(r[key][k] for r in rounds)
    out["stops"] = [s for r in rounds for s in r["stops"]]
    out["problems"] = [l for r in rounds for l in r["problems"]]
    return out


# ------------------------------------------------------------ reporting ---

def verdict(value: float, target: float) -> str:
    return "meets" if value >= target else "**misses**"


def render(res: dict, args, seeded: dict) -> str:
    rows = ["| load | wrk -c | req/s | p99 ms | CPU-s | req/s per CPU-s | errors, non-2xx |",
            "|---|--:|--:|--:|--:|--:|--:|"]
    for key, label, _ in ROWS:
        r = res[key]
        rows.append(f"| {label} | {r['connections']} | {f0(r['rps'])} | {r['p99_ms']:.2f} | "
                    f"{r['cpu_s']:.2f} | {f0(r['rps_per_cpu'])} | {r['errors']}, {r['non2xx']} |")
    h, g, l, pf, pn = (res[k] for k, _, _ in ROWS)
    get_ratio = g["rps_per_cpu"] / h["rps_per_cpu"]
    write_ratio = pf["rps"] / pn["rps"]
    lines = rows + ["",
        f"- `GET /notes/{{id}}` req/s per CPU-s / hello req/s per CPU-s (same server): "
        f"**{get_ratio:.2f}** (target >= {GET_TARGET}: {verdict(get_ratio, GET_TARGET)})",
        f"- `POST /notes` FULL / NORMAL req/s: **{write_ratio:.2f}** (target >= "
        f"{WRITE_TARGET}: {verdict(write_ratio, WRITE_TARGET)}); per CPU-s: "
        f"{ratio(pf['rps_per_cpu'], pn['rps_per_cpu'])}",
        f"- `GET /notes?limit=100` req/s per CPU-s / hello: "
        f"{ratio(l['rps_per_cpu'], h['rps_per_cpu'])}",
        f"- Seeding: {args.seed_notes:,} notes through `POST /notes` (FULL) from "
        f"{args.write_connections} concurrent keep-alive connections (Python asyncio client) "
        f"in {seeded['seconds']:.2f} s = {args.seed_notes / seeded['seconds']:,.0f} notes/s",
        f"- Writes checked: FULL created {pf['created']:,} notes for {pf['acknowledged']:,} "
        f"201s counted by wrk, NORMAL {pn['created']:,} for {pn['acknowledged']:,} (the "
        f"difference is requests in flight when wrk stopped)",
        f"- Memory (FULL server): idle RSS {res['memory']['idle_rss']:.1f} MiB, peak RSS "
        f"{res['memory']['peak_rss']:.1f} MiB"]
    bad = [label for key, label, _ in ROWS if res[key]["errors"] or res[key]["non2xx"]]
    if bad:
        lines.append(f"- WARNING: socket errors or non-2xx responses for {'; '.join(bad)}")
    lost = [k for k in ("post_full", "post_normal") if res[k]["created"] < res[k]["acknowledged"]]
    if lost:
        lines.append(f"- WARNING: fewer notes in the table than 201s counted: {', '.join(lost)}")
    slow = [s for s in res["stops"] if s["exit"] != 0]
    if slow:
        lines.append(f"- WARNING: {len(slow)} server(s) did not exit 0 on SIGTERM: {slow}")
    lines += log_warning("the seeding server", seeded["problems"])
    lines += log_warning("jotter", res["problems"])
    return "\n".join(lines)


def run(args, tmp: str) -> tuple:
    title = TITLE.format(args.seed_notes)
    print(f"scenario notes: {title}; {args.threads} engine thread(s), wrk -t1 "
          f"-c{args.connections} (reads) / -c{args.write_connections} (writes) "
          f"-d{args.duration}s", flush=True)
    seeded = seed(args, tmp)
    rounds = []
    for rnd in range(args.rounds):
        if args.rounds > 1:
            print(f"round {rnd + 1}/{args.rounds}", flush=True)
        rounds.append(one_round(args, tmp, seeded))
    table = render(median_rounds(rounds), args, seeded)

    median = f"; median of {args.rounds} rounds" if args.rounds > 1 else ""
    command = reproduce_command(args, NAME, [
        ("--duration", args.duration, 10), ("--connections", args.connections, 32),
        ("--write-connections", args.write_connections, 64), ("--threads", args.threads, 1),
        ("--seed-notes", args.seed_notes, 10000), ("--rounds", args.rounds, 1)])
    section = (f"## Scenario `{NAME}`: {title}\n\n"
               f"{now()}. One jotter server with {args.threads} engine thread(s), data dir "
               f"seeded with {args.seed_notes:,} notes through the API; every load is "
               f"`wrk -t1 -cN -d{args.duration}s --latency` after a {WARMUP_S} s warm-up, "
               f"one at a time, in the order of the table, against the same server process "
               f"(the NORMAL row: a second server on an identical copy of the seeded "
               f"database){median}. Random ids: `bench/lua/note_get.lua`; writes: "
               f"`bench/lua/note_post.lua` (`body=...&`, form-urlencoded, one note per "
               f"request; -c{args.write_connections} so that concurrent writes can share a "
               f"group commit). CPU-s = server user+system CPU during the measured run.\n\n"
               f"Machine: {machine_info(['sqlite'])}.\n\n{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps`):\n\n```\n{command}\n```")
    return table, section
