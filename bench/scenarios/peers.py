"""Scenario `peers`: the same requests to jotter and to the tutorials' original servers
(bench/originals.py): the PHP hello script, the iOS Recipes WEBrick server, httpbin, and the
Laravel notes app. One server at a time, each started fresh for each request kind, from the
same seeded data."""
import json, os, shutil, statistics

from harness import (WARMUP_S, BenchError, f0, http_get, load, log_warning, machine_info,
                     now, reproduce_command, sh)
import clients, originals

NAME = "peers"
TITLE = "jotter and the tutorials' original servers, same requests"
TOOLS = ("nginx", "php", "ruby")
JOTTER_ONLY = True
SEED_NOTES = 100
GOALS = {"hello": ("php", 10), "show": ("laravel", 100), "index": ("laravel", 100),
         "store": ("laravel", 100)}
NOTE = "Benchmark note written by wrk: buy milk, call Alice, water the plants"


def cases(tmp: str) -> list:
    """(key, label, {peer: path}, body file or None for GET, content type, wrk script,
    expected bytes in a sanity answer)."""
    def body_file(name, data):
        path = os.path.join(tmp, f"body-{name}")
        with open(path, "wb") as f:
            f.write(data)
        return path
    multipart = body_file("multipart", clients.recipe_multipart_body(clients.RECIPE_PARAMS,
                                                                     clients.picture()))
    return [
        ("hello", "hello: `POST name=Bob` (form)",
         {"jotter": "/echo_hello.php", "php": "/echo_hello.php"},
         body_file("hello", clients.hello_body("Bob")), clients.FORM, b"Hello Bob!"),
        ("form", "recipe: form POST, 3 fields",
         {"jotter": "/echo", "webrick": "/post", "httpbin": "/anything"},
         body_file("form", clients.recipe_form_body(clients.RECIPE_FIELDS)), clients.FORM,
         b"Wilmington"),
        ("multipart", "recipe: multipart POST to `/upload`, 2 fields + 8 KiB file (stored)",
         {"jotter": "/upload", "webrick": "/upload"}, multipart, clients.MULTIPART,
         b"uploadedPic.jpg"),
        ("multipart-echo", "recipe: the same multipart POST, echoed",
         {"jotter": "/echo", "httpbin": "/anything"}, multipart, clients.MULTIPART,
         b"Soap salesman"),
        ("show", "notes: `GET /notes/{id}`, random of 100",
         {"jotter": None, "laravel": None}, None, None, b'"body"'),
        ("index", "notes: `GET /notes`, 100 notes",
         {"jotter": "/notes", "laravel": "/notes"}, None, None, b'"notes"'),
        ("store", "notes: `POST /notes` `body=...&`",
         {"jotter": "/notes", "laravel": "/notes"},
         body_file("store", clients.notes_params([("body", NOTE)])), clients.FORM, NOTE.encode()),
    ]


# -------------------------------------------------------------- seeding ---

def seed(args, tmp: str) -> dict:
    """SEED_NOTES notes, POSTed the way the notes client does, into a jotter data dir and into
    the Laravel app's SQLite file; both are copied back before every later start."""
    out = {}
    for name in ("jotter", "laravel"):
        peer = originals.start(name, args, os.path.join(tmp, "seeding"))
        try:
            ids = []
            for i in range(SEED_NOTES):
                status, body = originals.http_post(
                    peer.base + "/notes", clients.notes_params([("body", f"Seeded note {i}")]))
                note = json.loads(body)
                note = note.get("note", note)   # jotter wraps it, the tutorial's store does not
                if status not in (200, 201) or not note.get("id"):
                    raise BenchError(f"seeding {name}: POST /notes -> {status} {body[:200]!r}")
                ids.append(str(note["id"]))
        finally:
            peer.stop()
        if name == "jotter":
            saved = os.path.join(tmp, "jotter-seed")
            shutil.copytree(peer.workdir, saved)
        else:
            saved = os.path.join(tmp, "laravel-seed.sqlite")
            shutil.copy(laravel_db(tmp), saved)
        ids_file = os.path.join(tmp, f"{name}-ids.txt")
        with open(ids_file, "w") as f:
            f.write("\n".join(ids) + "\n")
        out[name] = {"saved": saved, "ids_file": ids_file, "ids": ids}
    return out


def laravel_db(tmp: str) -> str:
    return os.path.join(originals.prepare_laravel(os.path.join(tmp, "seeding")), "database",
                        "database.sqlite")


def start_seeded(name: str, args, tmp: str, seeded: dict):
    """A fresh server; jotter and Laravel from a copy of the seeded notes."""
    if name == "jotter":
        data = os.path.join(tmp, "jotter-data")
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(seeded["jotter"]["saved"], data)
        return originals.start_jotter(args, data, tmp)
    if name == "laravel":
        shutil.copy(seeded["laravel"]["saved"], laravel_db(tmp))
        return originals.start_laravel(os.path.join(tmp, "seeding"), args.start_timeout)
    return originals.start(name, args, tmp)


# ------------------------------------------------------------ measuring ---

def measure(case, name: str, args, tmp: str, seeded: dict) -> dict:
    key, label, paths, body, ctype, expect = case
    peer = start_seeded(name, args, tmp, seeded)
    try:
        if key == "show":
            ids_file = seeded[name]["ids_file"]
            path, script, script_args = f"/notes/{seeded[name]['ids'][0]}", "lua/note_get.lua", \
                (ids_file,)
        elif body:
            path, script, script_args = paths[name], "lua/post_file.lua", (body, ctype)
        else:
            path, script, script_args = paths[name], None, ()
        if body:
            with open(body, "rb") as f:
                status, answer = originals.http_post(peer.base + path, f.read(), ctype)
        else:
            status, text = http_get(peer.base + path)
            answer = text.encode()
        if status not in (200, 201) or expect not in answer:
            raise BenchError(f"{name}: {path} -> {status} {answer[:300]!r}")
        if key == "index" and len(json.loads(answer)["notes"]) != SEED_NOTES:
            raise BenchError(f"{name}: GET /notes does not list {SEED_NOTES} notes")
        connections = args.write_connections if key == "store" else args.connections
        r = load(peer, path, args.duration, connections, script, script_args,
                 label=f"{name} {key}")
        r["peak_rss"] = peer.memory_mib("VmHWM")
        r["idle_rss"] = peer.idle_rss
        peer.check_alive()
    finally:
        peer.stop()
    r["problems"] = peer.servers[0].problems() if name == "jotter" else []
    return r


def median_run(runs: list) -> dict:
    r = dict(runs[0])
    for k, v in r.items():
        if isinstance(v, float) and k != "idle_rss":
            r[k] = statistics.median(x[k] for x in runs)
    for k in ("errors", "non2xx"):
        r[k] = sum(x[k] for x in runs)
    r["problems"] = [l for x in runs for l in x["problems"]]
    return r


# ------------------------------------------------------------ reporting ---

def times(a: float, b: float) -> str:
    if not b:
        return "n/a"
    x = a / b
    return f"{x:,.0f}x" if x >= 10 else f"{x:.2f}x"


def render(results: dict, all_cases: list) -> str:
    rows = ["| request | server | wrk -c | req/s | p99 ms | CPU-s | req/s per CPU-s | "
            "peak RSS MiB | jotter x req/s | jotter x per CPU-s |",
            "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    lines = []
    for key, label, paths, *_ in all_cases:
        j = results[(key, "jotter")]
        for name in paths:
            r = results[(key, name)]
            mine = name == "jotter"
            rows.append(
                f"| {label if mine else ''} | {name} | {r['connections']} | {f0(r['rps'])} | "
                f"{r['p99_ms']:.2f} | {r['cpu_s']:.2f} | {f0(r['rps_per_cpu'])} | "
                f"{r['peak_rss']:.1f} | {'' if mine else times(j['rps'], r['rps'])} | "
                f"{'' if mine else times(j['rps_per_cpu'], r['rps_per_cpu'])} |")
        if key in GOALS:
            other, goal = GOALS[key]
            x = j["rps_per_cpu"] / results[(key, other)]["rps_per_cpu"]
            lines.append(f"- {key}: jotter / {other} req/s per CPU-s **{x:,.0f}x** "
                         f"(goal >= {goal}x: {'meets' if x >= goal else '**misses**'})")
    bad = [f"{name} {key} ({r['errors']} socket errors or timeouts over wrk's 2 s, "
           f"{r['non2xx']} non-2xx)" for (key, name), r in results.items()
           if r["errors"] or r["non2xx"]]
    if bad:
        lines.append(f"- WARNING: {'; '.join(bad)}")
    for (key, name), r in results.items():
        lines += log_warning(f"{name} ({key})", r["problems"])
    return "\n".join(rows + [""] + lines)


def versions() -> str:
    pkg = lambda p: sh(["dpkg-query", "-W", "-f=${Version}", p]) or "?"
    pip = sh([os.path.join(originals.VENV, "bin", "python"), "-c",
              "import importlib.metadata as m; print(m.version('httpbin'), "
              "m.version('gunicorn'))"]).split()
    return (f"nginx {pkg('nginx')}, php-fpm {pkg('php-fpm')}, php-laravel-framework "
            f"{pkg('php-laravel-framework')}, ruby {pkg('ruby')}, ruby-webrick "
            f"{pkg('ruby-webrick')}, httpbin {pip[0] if pip else '?'} under gunicorn "
            f"{pip[1] if len(pip) > 1 else '?'}")


def run(args, tmp: str) -> tuple:
    all_cases = cases(tmp)
    print(f"scenario peers: {TITLE}; wrk -t1 -c{args.connections} (store: "
          f"-c{args.write_connections}) -d{args.duration}s", flush=True)
    seeded = seed(args, tmp)
    runs = {}
    for rnd in range(args.rounds):
        if args.rounds > 1:
            print(f"round {rnd + 1}/{args.rounds}", flush=True)
        for case in all_cases:
            for name in case[2]:   # one server at a time
                runs.setdefault((case[0], name), []).append(
                    measure(case, name, args, tmp, seeded))
    results = {k: median_run(v) for k, v in runs.items()}
    table = render(results, all_cases)
    rounds = f"; median of {args.rounds} interleaved rounds" if args.rounds > 1 else ""
    command = reproduce_command(args, NAME, [
        ("--duration", args.duration, 10), ("--connections", args.connections, 32),
        ("--write-connections", args.write_connections, 64), ("--threads", args.threads, 1),
        ("--rounds", args.rounds, 1)])
    section = (
        f"## Scenario `{NAME}`: {TITLE}\n\n"
        f"{now()}. Each server alone, started fresh for each request kind, `wrk -t1 "
        f"-d{args.duration}s --latency` after a {WARMUP_S} s warm-up{rounds}. jotter: "
        f"`--threads {args.threads}`. php (`echo_hello.php`) and laravel (the notes app): "
        f"nginx, 1 worker, in front of php-fpm, static pool of {originals.POOL}, OPcache; "
        f"laravel with `APP_DEBUG=false`, config and route caches, SQLite. webrick: the iOS "
        f"Recipes server (one Ruby process). httpbin: gunicorn, {originals.POOL} sync workers. "
        f"Notes: {SEED_NOTES} in each store, POSTed as the notes client does, restored "
        f"before every start. CPU-s = user+system CPU of all the server's processes (nginx "
        f"master and worker, php-fpm master and workers, gunicorn master and workers) during "
        f"the measured run; peak RSS = their summed `VmHWM`. `jotter x`: jotter's figure "
        f"divided by that server's, same request. Servers and requests: `bench/README.md`, "
        f"scenario `peers`.\n\n"
        f"Machine: {machine_info(('nginx', 'sqlite'))}; {versions()}.\n\n{table}\n\n"
        f"Reproduce (after `scripts/install-bench-deps` and `scripts/install-peer-deps`):"
        f"\n\n```\n{command}\n```")
    return table, section
