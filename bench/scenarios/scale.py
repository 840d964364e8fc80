"""Scenario `scale`: 1, 2 and 3 `jotter serve` instances on one PostgreSQL database behind
nginx (contrib/nginx/jotter.conf), next to one instance on SQLite (no nginx), with the same
seeded notes: GET /notes/{id} (without and with a Bearer token: the per-token rate limit, shared
through PostgreSQL's limit_buckets, runs on every request with one), GET /notes?limit=100 and
durable POST /notes. On 2 cores the
instances, PostgreSQL, nginx and wrk share the machine, so the figure that compares is the
CPU each component spends per request (utime+stime from /proc/PID/stat of each process tree,
before and after the measured run), next to req/s.

PostgreSQL is a cluster of its own in the scenario's temp folder (Debian's postgresql: initdb,
a free loopback port, durable settings: fsync and synchronous_commit on, the defaults — not
the fsync-off cluster of scripts/test-services). As root it runs as the `postgres` user."""
import glob, json, os, pwd, random, shutil, subprocess, time, asyncio

from harness import (REPO, WARMUP_S, BenchError, cpu_seconds, f0, free_port, http_get,
                     load, log_warning, machine_info, now, reproduce_command, start_server)
from scenarios.notes import WORDS, _post_notes, post_load, seed

NAME = "scale"
TITLE = "N instances on PostgreSQL behind nginx, next to one on SQLite ({:,} notes)"
JOTTER_ONLY = True
TOOLS = ("wrk", "nginx")
INSTANCES = (1, 2, 3)
# Requests a minute per token and per user: high enough that the authenticated load is never
# refused, so every request pays for the limiter (its buckets taken, none refused).
RATE_LIMIT = "1000000000"
USER = "bench"
LOADS = [  # key, label, wrk script, connections attribute
    ("get", "`GET /notes/{id}`", "lua/note_get.lua", "connections"),
    ("get_auth", "`GET /notes/{id}`, Bearer token", "lua/note_get.lua", "connections"),
    ("list", "`GET /notes?limit=100`", None, "connections"),
    ("post", "`POST /notes` (durable)", "lua/note_post.lua", "write_connections"),
]


# ----------------------------------------------------------- PostgreSQL ---

class Postgres:
    """A throwaway cluster: initdb in `folder`, started on a free port, removed by stop()."""

    def __init__(self, folder: str):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
        if not bins:
            raise BenchError("PostgreSQL is not installed (scripts/install-deps --test)")
        self.bin, self.folder = bins[-1], folder
        self.data = os.path.join(folder, "data")
        self.port = free_port()
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        os.makedirs(folder)
        os.chmod(folder, 0o755)
        with open(os.path.join(folder, "password"), "w") as f:
            f.write("jotter-bench\n")
        if self.as_pg:
            pw = pwd.getpwnam("postgres")
            os.chown(folder, pw.pw_uid, pw.pw_gid)
            os.chown(os.path.join(folder, "password"), pw.pw_uid, pw.pw_gid)
            os.chmod(os.path.dirname(folder), 0o755)
        self._run("initdb", "-D", self.data, "-U", "jotter", f"--pwfile={folder}/password",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                  "--locale=C.UTF-8")
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(folder, "server.log"), "-w", "-s",
                  "start", "-o", f"-h 127.0.0.1 -p {self.port} -k {folder} -c max_connections=200")
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        self._run("createdb", "-h", folder, "-p", str(self.port), "-U", "jotter", "jotter")
        self.url = f"postgres://jotter:jotter-bench@127.0.0.1:{self.port}/jotter"

    def _run(self, program: str, *argv: str):
        p = subprocess.run(self.as_pg + [os.path.join(self.bin, program), *argv],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise BenchError(f"{program} failed: {p.stdout}{p.stderr}")

    def query(self, sql: str) -> str:
        """`sql` through psql on the cluster's socket, unaligned, tuples only."""
        p = subprocess.run(self.as_pg + [os.path.join(self.bin, "psql"), "-h", self.folder, "-p",
                                         str(self.port), "-U", "jotter", "-d", "jotter", "-tAc", sql],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise BenchError(f"psql {sql!r} failed: {p.stdout}{p.stderr}")
        return p.stdout.strip()

    def version(self) -> str:
        p = subprocess.run([os.path.join(self.bin, "postgres"), "--version"], capture_output=True,
                           text=True)
        return p.stdout.strip()

    def stop(self):
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "fast", "-s", "-w", "stop")
        except BenchError:
            pass


# ---------------------------------------------------------------- nginx ---

def start_nginx(tmp: str, instance_ports: list, timeout: float):
    """nginx with contrib/nginx/jotter.conf (its `listen` line pointed at a free port) and the
    instances file; a wrapper nginx.conf gives it what /etc/nginx/nginx.conf would: one
    worker, pid, logs and temp folders in `tmp`, no access log."""
    folder = os.path.join(tmp, f"nginx-{len(instance_ports)}")
    for sub in ("temp/client", "temp/proxy", "temp/fastcgi", "temp/uwsgi", "temp/scgi"):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
    with open(os.path.join(REPO, "contrib", "nginx", "jotter.conf")) as f:
        site = f.read()
    listen = "    listen 8080;\n"
    if listen not in site:
        raise BenchError("contrib/nginx/jotter.conf has no 'listen 8080;' line")
    with open(os.path.join(folder, "jotter-instances.conf"), "w") as f:
        f.writelines(f"server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;\n" for p in instance_ports)
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    main = (f"{user}daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\n"
            f"error_log {folder}/error.log warn;\nevents {{ worker_connections 4096; }}\n"
            f"http {{\n    access_log off;\n" + "".join(
                f"    {kind}_temp_path {folder}/temp/{sub};\n" for kind, sub in (
                    ("client_body", "client"), ("proxy", "proxy"), ("fastcgi", "fastcgi"),
                    ("uwsgi", "uwsgi"), ("scgi", "scgi"))) + "    include jotter.conf;\n}\n")

    def argv(port):
        with open(os.path.join(folder, "jotter.conf"), "w") as f:
            f.write(site.replace(listen, f"    listen 127.0.0.1:{port};\n"))
        with open(os.path.join(folder, "nginx.conf"), "w") as f:
            f.write(main)
        return ["nginx", "-p", folder + "/", "-c", os.path.join(folder, "nginx.conf"),
                "-e", os.path.join(folder, "error.log")]
    return start_server("nginx", argv, tmp, timeout, log_name=f"nginx-{len(instance_ports)}")


# ------------------------------------------------------------ measuring ---

class Deployment:
    """What serves one configuration: jotter instances, maybe nginx, maybe PostgreSQL; the
    wrk target is nginx when there is one. CPU is read per component."""

    def __init__(self, instances: list, nginx=None, postgres=None):
        self.instances, self.nginx, self.postgres = instances, nginx, postgres
        self.snapshots = []  # components() at each cpu_seconds() call: load() calls it around its measured run
        front = nginx or instances[0]
        self.name, self.base = front.name, front.base

    def check_alive(self):
        for s in self.instances + ([self.nginx] if self.nginx else []):
            s.check_alive()

    def components(self) -> dict:
        cpu = {"jotter": sum(cpu_seconds(s.proc.pid) for s in self.instances)}
        if self.postgres:
            cpu["postgres"] = cpu_seconds(self.postgres.pid)
        if self.nginx:
            cpu["nginx"] = cpu_seconds(self.nginx.proc.pid)
        return cpu

    def cpu_seconds(self) -> float:
        self.snapshots.append(self.components())
        return sum(self.snapshots[-1].values())

    def stop(self):
        if self.nginx:
            self.nginx.stop()
        for s in self.instances:
            s.stop(timeout=15)


def measure(deployment: Deployment, args, ids_file: str, label: str, token: str) -> dict:
    """Every load of LOADS; `token` (of the user who owns the seeded notes) for the
    authenticated one."""
    rows = {}
    some_id = open(ids_file).readline().strip()
    for key, what, script, conns in LOADS:
        path = "/notes?limit=100" if key == "list" else f"/notes/{some_id}"
        headers = {"Authorization": f"Bearer {token}"} if key == "get_auth" else {}
        status, body = http_get(deployment.base + path, headers=headers)
        if status != 200:
            raise BenchError(f"{label}: GET {path} -> {status} {body[:200]!r}")
        if key == "post":  # also checks that every 201 is a note in the table
            r = post_load(deployment, args, f"{label} {what}")
        else:
            script_args = {"get": (ids_file,), "get_auth": (ids_file, token)}.get(key, ())
            r = load(deployment, path, args.duration, getattr(args, conns), script,
                     script_args, label=f"{label} {what}")
        before, after = deployment.snapshots[-2:]  # around the measured run
        r["per_component"] = {k: after[k] - before[k] for k in before}
        rows[key] = r
    return rows


def start_instances(args, tmp: str, count: int, database: str, base_port: int = 0) -> list:
    servers = []
    for i in range(count):
        data = os.path.join(tmp, f"instance-{count}-{i}")
        os.makedirs(data, exist_ok=True)
        argv = lambda port, data=data: [args.jotter, "serve", "--host", "127.0.0.1", "--port",
                                        str(port), "--threads", str(args.threads), "--quiet",
                                        "--data", data, "--database", database,
                                        "--rate-limit", RATE_LIMIT]
        servers.append(start_server("jotter", argv, tmp, args.start_timeout,
                                    log_name=f"jotter-pg-{count}-{i}"))
    return servers


def add_user_and_token(args, *place: str) -> str:
    """USER, the first and only user (so requests without credentials act as them under
    `--auth off` and see the same notes as their token), and a token of theirs; `place`: the
    store's options (`--data DIR`, or `--database URL`)."""
    for argv, stdin in (([args.jotter, "users", "add", USER, *place], "bench-password\n"),
                        ([args.jotter, "tokens", "create", "--user", USER, *place], None)):
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise BenchError(f"{' '.join(argv[1:3])} failed: {p.stdout}{p.stderr}")
    token = p.stdout.strip()
    if not token.startswith("jot_"):
        raise BenchError(f"tokens create printed {token!r}")
    return token


def seed_postgres(args, tmp: str, pg: Postgres) -> dict:
    """args.seed_notes notes through POST /notes of one instance (the same bodies as the
    SQLite seed); their ids in a file for note_get.lua."""
    srv = start_instances(args, tmp, 1, pg.url)[0]
    try:
        rnd = random.Random(42)
        bodies = [f"Note {i}: " + "+".join(rnd.choices(WORDS, k=rnd.randint(4, 24)))
                  for i in range(args.seed_notes)]
        print(f"  seeding PostgreSQL with {args.seed_notes:,} notes ...", flush=True)
        t0 = time.monotonic()
        ids = asyncio.run(_post_notes(srv.port, bodies, args.write_connections))
        seconds = time.monotonic() - t0
    finally:
        srv.stop(timeout=15)
    ids_file = os.path.join(tmp, "pg-note-ids.txt")
    with open(ids_file, "w") as f:
        f.write("\n".join(map(str, sorted(ids))) + "\n")
    return {"ids_file": ids_file, "seconds": seconds, "problems": srv.problems()}


# ------------------------------------------------------------ reporting ---

def render(results: list, args) -> str:
    lines = ["| setup | load | req/s | p99 ms | errors, non-2xx | jotter µs/req | postgres µs/req "
             "| nginx µs/req | total µs/req | req/s per CPU-s |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for setup, rows in results:
        for key, what, _, _ in LOADS:
            r = rows[key]
            n = r["requests"] or 1
            per = {k: v / n * 1e6 for k, v in r["per_component"].items()}
            cell = lambda k: f"{per[k]:.0f}" if k in per else "—"
            total = sum(per.values())
            lines.append(f"| {setup} | {what} | {f0(r['rps'])} | {r['p99_ms']:.2f} | "
                         f"{r['errors']}, {r['non2xx']} | {cell('jotter')} | {cell('postgres')} | "
                         f"{cell('nginx')} | {total:.0f} | {f0(1e6 / total) if total else 'n/a'} |")
    lines.append("")
    lines.append("The token's cost: `GET /notes/{id}` with a Bearer token minus without, same setup "
                 "(the token checked, then one take from the user's and one from the token's rate "
                 "limit bucket: in memory on SQLite, two `limit_buckets` statements on PostgreSQL):")
    lines.append("")
    for setup, rows in results:
        per = {key: {k: v / (rows[key]["requests"] or 1) * 1e6
                     for k, v in rows[key]["per_component"].items()} for key in ("get", "get_auth")}
        extra = {k: per["get_auth"][k] - per["get"][k] for k in per["get"]}
        total, plain = sum(extra.values()), sum(per["get"].values())
        parts = ", ".join(f"{k} {v:+.0f}" for k, v in extra.items())
        lines.append(f"- {setup}: **{total:+.0f} µs** per request ({parts}), "
                     f"{sum(per['get_auth'].values()) / plain:.2f}× the unauthenticated read")
    lines.append("")
    for setup, rows in results:
        p = rows["post"]
        lines.append(f"- {setup}: `POST /notes` created {p['created']:,} notes for "
                     f"{p['acknowledged']:,} 201s counted by wrk"
                     + (" — **fewer: acknowledged writes lost**" if p["created"] < p["acknowledged"]
                        else ""))
    bad = [f"{s} {k}" for s, rows in results for k in rows if rows[k]["errors"] or rows[k]["non2xx"]]
    if bad:
        lines.append(f"- WARNING: socket errors or non-2xx responses: {', '.join(bad)}")
    return "\n".join(lines)


def run(args, tmp: str) -> tuple:
    title = TITLE.format(args.seed_notes)
    print(f"scenario scale: {title}", flush=True)
    results, problems = [], []
    tokens = {}
    sqlite_seed = seed(args, tmp, lambda data: tokens.update(
        sqlite=add_user_and_token(args, "--data", data)))
    data = os.path.join(tmp, "scale-sqlite")
    shutil.copytree(sqlite_seed["data"], data)
    srv = start_server("jotter", lambda port: [args.jotter, "serve", "--host", "127.0.0.1",
                                               "--port", str(port), "--threads", str(args.threads),
                                               "--quiet", "--data", data,
                                               "--rate-limit", RATE_LIMIT],
                       tmp, args.start_timeout, log_name="jotter-sqlite")
    deployment = Deployment([srv])
    try:
        results.append(("1 instance, SQLite, no nginx",
                        measure(deployment, args, sqlite_seed["ids_file"], "SQLite",
                                tokens["sqlite"])))
    finally:
        deployment.stop()
    problems += srv.problems()

    pg = Postgres(os.path.join(tmp, "pg"))
    try:
        token = add_user_and_token(args, "--data", os.path.join(tmp, "pg-accounts"),
                                   "--database", pg.url)
        seeded = seed_postgres(args, tmp, pg)
        problems += seeded["problems"]
        for count in INSTANCES:
            instances = start_instances(args, tmp, count, pg.url)
            nginx = None
            try:
                nginx = start_nginx(tmp, [s.port for s in instances], args.start_timeout)
                deployment = Deployment(instances, nginx, pg)
                label = f"{count} instance{'s' if count > 1 else ''}, PostgreSQL, nginx"
                results.append((label, measure(deployment, args, seeded["ids_file"], label, token)))
            finally:
                if nginx:
                    nginx.stop()
                for s in instances:
                    s.stop(timeout=15)
                    problems += s.problems()
        pg_version = pg.version()
    finally:
        pg.stop()

    table = render(results, args) + "\n" + "\n".join(log_warning("jotter", problems))
    command = reproduce_command(args, NAME, [
        ("--duration", args.duration, 10), ("--connections", args.connections, 32),
        ("--write-connections", args.write_connections, 64), ("--threads", args.threads, 1),
        ("--seed-notes", args.seed_notes, 10000)])
    section = (f"## Scenario `{NAME}`: {title}\n\n"
               f"{now()}. Each setup fresh: one `jotter serve` on SQLite (a copy of a data folder "
               f"seeded with {args.seed_notes:,} notes through the API, `--synchronous full`), "
               f"then 1, 2 and 3 instances (`--database postgres://…`, {args.threads} engine "
               f"thread(s) each, a data folder each for temp files) on one PostgreSQL database "
               f"seeded with the same notes, behind nginx running `contrib/nginx/jotter.conf` "
               f"(one worker, no access log). PostgreSQL: its own cluster in the run's temp "
               f"folder with the durable defaults (`fsync`, `synchronous_commit` on); the "
               f"database grows by the notes each `POST` load writes. Every load is `wrk -t1 "
               f"-cN -d{args.duration}s --latency` after a {WARMUP_S} s warm-up, against nginx "
               f"(SQLite: the instance), in the order of the table; reads -c{args.connections}, "
               f"writes -c{args.write_connections}. Each setup's one user (added before the "
               f"seed, so requests without credentials act as them under `--auth off`) has a "
               f"token; `GET /notes/{{id}}`, Bearer token is the same load with `Authorization: "
               f"Bearer jot_…` on every request: the token checked, then one take from the "
               f"user's and one from the token's rate-limit bucket (`--rate-limit {RATE_LIMIT}`, "
               f"so none is refused) — in memory on SQLite, in PostgreSQL's `limit_buckets` "
               f"(`LimitCounters`, shared by the instances) otherwise. µs/req = the user+system CPU of each "
               f"component's process tree during the measured run (`/proc/PID/stat`, before and "
               f"after: every instance together; the postmaster with all its backends; the nginx "
               f"master and worker) / requests; wrk's own CPU is not counted. On 2 cores "
               f"everything shares the machine, so more instances add no cores: req/s shows "
               f"contention, µs/req the cost. PostgreSQL ids come from a sequence, which may skip "
               f"values, so the write check (the newest id grown by at least the 201s) is weaker "
               f"there than on SQLite.\n\n"
               f"Machine: {machine_info(['nginx', 'sqlite'])}; {pg_version}.\n\n{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps`):"
               f"\n\n```\n{command}\n```")
    return table, section
