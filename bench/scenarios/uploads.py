"""Scenario `uploads`: multipart file uploads, streamed to disk.

1. One large file (1 GiB of random bytes by default) uploaded with curl `-F file=@...`, to
   jotter `POST /uploads` and to nginx (`client_body_in_file_only`, the body written to a file
   in the same temp dir, then 201), one server at a time, fresh servers every round, rounds
   interleaved. MB/s = file size / curl's time_total, server CPU-seconds, peak RSS. Jotter's
   answer is checked (201, size, SHA-256 of the file) and its upload deleted after each round;
   nginx's body file is checked (its size is curl's request size) and deleted.
2. Many small uploads: wrk POSTs one 100 KiB file part per request (`lua/upload_post.lua`) to
   jotter `/uploads`; afterwards the files in `<data>/uploads/`, `GET /uploads` and the
   table's rows must match the 201s wrk counted. nginx `/upload-clean` (body to a temp file,
   deleted after the request) is the reference."""
import hashlib, json, os, re, shutil, signal, sqlite3, statistics, subprocess, threading, time
import urllib.error, urllib.request

from harness import (WARMUP_S, BenchError, cpu_seconds, f0, http_get, jotter_argv, load,
                     log_warning, machine_info, memory_mib, nginx_argv, now, parse_wrk,
                     process_tree, reproduce_command, sh, start_server, tree_sum, wrk)

NAME = "uploads"
TITLE = "multipart uploads: one {} file with curl, {} KiB files under wrk load"
TOOLS = ("nginx", "curl", "sha256sum")
JOTTER_ONLY = True
MBPS_TARGET = 0.8        # jotter / nginx MB/s on the large file (issue 4)
RSS_TARGET_MIB = 64      # jotter's peak RSS while streaming 1 GiB (issue 4, its tests)
SCRIPT = "lua/upload_post.lua"
BLOCK = 16 << 20         # the large file repeats one random block of this size


def human(mib: int) -> str:
    return f"{mib // 1024} GiB" if mib % 1024 == 0 else f"{mib} MiB"


# ------------------------------------------------------------- helpers ---

def bytes_written(pid: int) -> int:
    """`wchar` of /proc/PID/io (bytes passed to write(2) and the like, which is how both
    servers write the body to their file; socket sends are not counted), over the tree."""
    return tree_sum(pid, "io", lambda io: int(re.search(r"^wchar:\s+(\d+)", io, re.M)[1]))


class Sampler(threading.Thread):
    """Every 0.05 s while a request runs: the server tree's VmRSS, the largest file in `watch`
    (the server's temp dir), so the report can say the body went to disk as it came, and the
    moment the server had written `size` bytes (`wchar`): the whole file received, which tells
    receiving from what follows (jotter: fsync, rename, commit)."""
    def __init__(self, pid: int, watch: str, size: int):
        super().__init__(daemon=True)
        self.pid, self.watch, self.size, self.halt = pid, watch, size, threading.Event()
        self.max_rss = self.max_file = 0.0
        self.samples_with_file = 0
        self.wchar0, self.t0, self.t_read = bytes_written(pid), time.monotonic(), None

    def run(self):
        while not self.halt.wait(0.05):
            if self.t_read is None and bytes_written(self.pid) - self.wchar0 >= self.size:
                self.t_read = time.monotonic()
            self.max_rss = max(self.max_rss, memory_mib(self.pid, "VmRSS"))
            largest = 0
            try:
                for e in os.scandir(self.watch):
                    try:
                        largest = max(largest, e.stat().st_size)
                    except OSError:
                        pass  # renamed or deleted meanwhile
            except OSError:
                pass
            if largest:
                self.samples_with_file += 1
                self.max_file = max(self.max_file, largest)

    def stop(self):
        self.halt.set()
        self.join()


def files_in(path: str) -> list:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def wait_empty(path: str, timeout: float = 5.0) -> list:
    """Waits until `path` holds no files (requests still finishing); returns what is left."""
    deadline = time.monotonic() + timeout
    while (left := files_in(path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def request(method: str, url: str, timeout: float = 30.0):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def make_large_file(path: str, mib: int) -> str:
    """mib MiB: one random 16 MiB block written over and over; returns sha256sum's digest."""
    block = os.urandom(min(BLOCK, mib << 20))
    with open(path, "wb") as f:
        left = mib << 20
        while left:
            left -= f.write(block[:min(len(block), left)])
    p = subprocess.run(["sha256sum", path], capture_output=True, text=True, check=True)
    return p.stdout.split()[0]


def curl_upload(url: str, path: str, answer: str) -> dict:
    fmt = "%{http_code} %{time_total} %{speed_upload} %{size_upload}"
    p = subprocess.run(["curl", "-s", "-o", answer, "-w", fmt, "-F", f"file=@{path}", url],
                       capture_output=True, text=True, timeout=900)
    parts = p.stdout.split()
    if p.returncode != 0 or len(parts) != 4:
        raise BenchError(f"curl {url} failed (exit {p.returncode}): {p.stdout} {p.stderr}")
    with open(answer, errors="replace") as f:
        body = f.read()
    return {"status": int(parts[0]), "time_s": float(parts[1]), "curl_Bps": float(parts[2]),
            "request_bytes": int(parts[3]), "body": body}


# ---------------------------------------------------------- large file ---

def start_read_count(pid: int, out: str) -> subprocess.Popen:
    """strace -c on every thread of `pid`'s tree, counting the calls that read a socket."""
    argv = ["strace", "-f", "-qq", "-c", "-e", "trace=recvfrom,recvmsg,read,readv", "-o", out]
    for p in process_tree(pid):
        argv += ["-p", str(p)]
    tracer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)   # attached
    return tracer


def stop_read_count(tracer: subprocess.Popen, out: str) -> int:
    tracer.send_signal(signal.SIGINT)
    tracer.wait(timeout=30)
    calls = 0
    with open(out) as f:
        for line in f:
            fields = line.split()
            if fields and fields[-1] in ("recvfrom", "recvmsg", "read", "readv"):
                calls += int(fields[3])  # % time, seconds, usecs/call, calls, [errors,] syscall
    return calls


def large_round(engine: str, args, tmp: str, src: str, digest: str, count_reads: bool = False) -> dict:
    """One fresh server, one upload of `src`, every check; the stored copy removed after.
    `count_reads`: under strace, for the number of read calls only (not timed)."""
    size = os.path.getsize(src)
    if engine == "jotter":
        data = os.path.join(tmp, "uploads-large-data")
        limit = f"{max(2 << 30, 2 * size)}"   # like nginx's client_max_body_size 2g
        srv = start_server("jotter", jotter_argv(args, data, "--max-upload-size", limit), tmp,
                           args.start_timeout, log_name="jotter-uploads-large")
        watch = os.path.join(data, "tmp")
    else:
        ntmp = os.path.join(tmp, "nginx")
        srv = start_server("nginx", nginx_argv(args.threads, ntmp), tmp, args.start_timeout,
                           log_name="nginx-uploads")
        watch = os.path.join(ntmp, "nginx-body")
    url = srv.base + ("/uploads" if engine == "jotter" else "/upload")
    try:
        os.sync()   # neither server pays for the other's (or the file's) writeback
        sampler = Sampler(srv.proc.pid, watch, size)
        cpu0 = cpu_seconds(srv.proc.pid)
        counts = os.path.join(tmp, f"strace-{engine}.txt")
        tracer = start_read_count(srv.proc.pid, counts) if count_reads else None
        sampler.start()
        try:
            r = curl_upload(url, src, os.path.join(tmp, f"answer-{engine}.txt"))
        finally:
            t_end = time.monotonic()
            sampler.stop()
            if tracer:
                read_calls = stop_read_count(tracer, counts)
        r["cpu_s"] = cpu_seconds(srv.proc.pid) - cpu0
        if tracer:
            r["read_calls"] = read_calls
        r["peak_rss"] = memory_mib(srv.proc.pid, "VmHWM")
        r["idle_rss"] = srv.idle_rss
        r["sampled_rss"], r["seen_file"] = sampler.max_rss, sampler.max_file
        r["samples_with_file"] = sampler.samples_with_file
        # Received: the server had written as many bytes as the file holds; after: until curl
        # had the answer (jotter: fsync, rename, commit). Both to within the 0.05 s sampling.
        r["read_s"] = (sampler.t_read or t_end) - sampler.t0
        r["after_read_s"] = t_end - (sampler.t_read or t_end)
        r["mbps"] = size / r["time_s"] / 1e6
        srv.check_alive()
        if r["status"] != 201:
            raise BenchError(f"{engine}: upload -> {r['status']} {r['body'][:300]!r}")
        if engine == "jotter":
            r.update(check_jotter_large(srv, data, size, digest, r["body"]))
        else:
            r.update(check_nginx_large(watch, r))
    finally:
        stopped = srv.stop(timeout=15)
    r["left_tmp"] = r.get("left_tmp", []) + files_in(watch)   # after the stop too
    r["engine"], r["exit"] = engine, stopped["exit"]
    r["problems"] = srv.problems() if engine == "jotter" else []
    print(f"  {engine}: {r['mbps']:,.0f} MB/s ({r['time_s']:.2f} s), CPU {r['cpu_s']:.2f} s, "
          f"peak RSS {r['peak_rss']:.1f} MiB", flush=True)
    return r


def check_jotter_large(srv, data: str, size: int, digest: str, body: str) -> dict:
    try:
        upload = json.loads(body)["uploads"][0]
    except (ValueError, KeyError, IndexError):
        raise BenchError(f"jotter: unexpected answer {body[:300]!r}")
    if upload["size"] != size or upload["sha256"] != digest:
        raise BenchError(f"jotter: stored size {upload['size']} sha256 {upload['sha256']}, "
                         f"expected {size} {digest}")
    stored = os.path.join(data, "uploads", upload["id"])
    if os.path.getsize(stored) != size:
        raise BenchError(f"jotter: {stored} holds {os.path.getsize(stored)} bytes, not {size}")
    left_tmp = wait_empty(os.path.join(data, "tmp"))
    status, answer = request("DELETE", f"{srv.base}/uploads/{upload['id']}")
    if status != 200 or os.path.exists(stored):
        raise BenchError(f"jotter: DELETE /uploads/{upload['id']} -> {status} {answer[:200]!r}"
                         f", file still there: {os.path.exists(stored)}")
    return {"checked": True, "left_tmp": left_tmp,
            "left_uploads": files_in(os.path.join(data, "uploads"))}


def check_nginx_large(watch: str, r: dict) -> dict:
    """nginx answered with the path of the body file: it must hold the whole request body."""
    path = r["body"].strip()
    if os.path.dirname(path) != watch or not os.path.isfile(path):
        raise BenchError(f"nginx: body file {path!r} is not a file in {watch}")
    kept = os.path.getsize(path)
    if kept != r["request_bytes"]:
        raise BenchError(f"nginx: body file holds {kept} bytes, curl sent {r['request_bytes']}")
    os.remove(path)
    return {"checked": True, "body_file_bytes": kept, "left_tmp": files_in(watch)}


def median_of(runs: list) -> dict:
    m = dict(runs[0])
    for k, v in m.items():
        if isinstance(v, float):
            m[k] = statistics.median(x[k] for x in runs)
    m["rounds"] = runs
    return m


# ------------------------------------------------------- small uploads ---

def small_round(args, tmp: str, rnd: int) -> dict:
    data = os.path.join(tmp, f"uploads-small-data-{rnd}")
    srv = start_server("jotter", jotter_argv(args, data), tmp, args.start_timeout,
                       log_name=f"jotter-uploads-small-{rnd}")
    c, kib = args.upload_connections, args.upload_kib
    label = f"jotter POST /uploads ({kib} KiB)"
    try:
        print(f"  {label}: warm-up {WARMUP_S}s ...", flush=True)
        warm = parse_wrk(wrk(srv.base + "/uploads", WARMUP_S, c, SCRIPT, (kib,)))
        time.sleep(0.5)
        rss_warm = memory_mib(srv.proc.pid, "VmRSS")
        r = load(srv, "/uploads", args.duration, c, SCRIPT, (kib,), label=label, warmup=0)
        r["warmup_requests"] = warm["requests"] - warm["non2xx"]
        r["errors"] += warm["errors"]
        r["non2xx"] += warm["non2xx"]
        r["left_tmp"] = wait_empty(os.path.join(data, "tmp"))
        r["rss_warm"], r["rss_after"] = rss_warm, memory_mib(srv.proc.pid, "VmRSS")
        r["peak_rss"] = memory_mib(srv.proc.pid, "VmHWM")
        r["files"] = len(files_in(os.path.join(data, "uploads")))
        status, body = http_get(srv.base + "/uploads", timeout=30)
        if status != 200:
            raise BenchError(f"GET /uploads -> {status} {body[:200]!r}")
        listed = json.loads(body)["uploads"]
        r["listed"] = len(listed)
        sizes = {u["size"] for u in listed}
        digests = {u["sha256"] for u in listed}
        r["listed_ok"] = sizes == {kib * 1024} and len(digests) == 1
        if listed:   # one stored file, hashed here, must have the digest the server reported
            with open(os.path.join(data, "uploads", listed[0]["id"]), "rb") as f:
                r["listed_ok"] &= hashlib.sha256(f.read()).hexdigest() == listed[0]["sha256"]
    finally:
        stopped = srv.stop(timeout=30)
    r["exit"] = stopped["exit"]
    r["left_tmp_after_stop"] = files_in(os.path.join(data, "tmp"))
    db = sqlite3.connect(f"file:{os.path.join(data, 'jotter.sqlite')}?mode=ro", uri=True)
    try:
        r["rows"] = db.execute("SELECT count(*) FROM uploads").fetchone()[0]
    finally:
        db.close()
    r["acknowledged"] = r["warmup_requests"] + r["requests"] - r["non2xx"]
    r["problems"] = srv.problems()
    r["engine"] = "jotter"
    shutil.rmtree(data, ignore_errors=True)
    if not stored_matches(r, c):
        print(f"  WARNING: {r['files']} files and {r['rows']} rows stored for "
              f"{r['acknowledged']} 201s", flush=True)
    return r


def stored_matches(r: dict, connections: int) -> bool:
    """Every 201 is a stored file with its row; beyond those, at most the requests in flight
    when each of the two wrk runs (warm-up, measured) stopped, which the server may complete."""
    return r["acknowledged"] <= r["files"] <= r["acknowledged"] + 2 * connections \
        and r["rows"] == r["files"]


def small_round_nginx(args, tmp: str) -> dict:
    ntmp = os.path.join(tmp, "nginx")
    srv = start_server("nginx", nginx_argv(args.threads, ntmp), tmp, args.start_timeout,
                       log_name="nginx-uploads")
    try:
        r = load(srv, "/upload-clean", args.duration, args.upload_connections, SCRIPT,
                 (args.upload_kib,), label=f"nginx /upload-clean ({args.upload_kib} KiB)")
        r["peak_rss"] = memory_mib(srv.proc.pid, "VmHWM")
        r["left_tmp"] = wait_empty(os.path.join(ntmp, "nginx-body"))
    finally:
        srv.stop()
    r["engine"] = "nginx"
    return r


# ------------------------------------------------------------ reporting ---

def render(large: dict, small: dict, args, size: int) -> str:
    j, n = large["jotter"], large["nginx"]
    rows = ["| server | MB/s | curl time_total s | of which after the file was written, s "
            "| server CPU-s | peak RSS MiB | checked |",
            "|---|--:|--:|--:|--:|--:|---|"]
    what = {"jotter": "jotter `POST /uploads`",
            "nginx": "nginx `client_body_in_file_only`"}
    for r in (j, n):
        check = ("201, size and SHA-256 match, deleted" if r["engine"] == "jotter" else
                 "201, body file = curl's request size, deleted")
        rows.append(f"| {what[r['engine']]} | {f0(r['mbps'])} | {r['time_s']:.2f} | "
                    f"{r['after_read_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_rss']:.1f} | "
                    f"{check} |")
    rel = j["mbps"] / n["mbps"]
    each = lambda r: ", ".join(f0(x["mbps"]) for x in r["rounds"])
    seen = lambda r: (f"reached {min(x['seen_file'] for x in r['rounds']) / 2**20:,.0f} MiB "
                      f"or more in every round" if min(x["samples_with_file"] for x in r["rounds"])
                      else "was not caught by the sampler in some round (too quick)")
    per_cpu = lambda r: f0(size / 1e6 / r["cpu_s"]) if r["cpu_s"] > 0 else "n/a"
    ok = lambda good: "meets" if good else "**misses**"
    peak_max = max(x["peak_rss"] for x in j["rounds"])
    lines = rows + ["",
        f"- jotter/nginx MB/s: **{rel:.2f}** (target >= {MBPS_TARGET}: {ok(rel >= MBPS_TARGET)})"
        f"; MB per server CPU-s: jotter {per_cpu(j)}, nginx {per_cpu(n)}",
        f"- MB/s of each round: jotter {each(j)}; nginx {each(n)}",
        f"- server CPU-s per GiB: jotter {j['cpu_s'] / (size / 2**30):.2f}, nginx {n['cpu_s'] / (size / 2**30):.2f}",
        (f"- calls that read the socket per GiB (`recvfrom`/`recvmsg`/`read`/`readv`, `strace -f -c` on one more "
         f"upload each, not timed): jotter **{j['read_calls'] / (size / 2**30):,.0f}** (goal ≤ 16,000), nginx "
         f"{n['read_calls'] / (size / 2**30):,.0f}" if "read_calls" in j else "- read calls: not counted (no strace)"),
        f"- Receiving alone (until the server had written as many bytes as the file holds, "
        f"`wchar` in `/proc/PID/io` sampled every 0.05 s): jotter {j['read_s']:.2f} s = "
        f"{f0(size / j['read_s'] / 1e6)} MB/s, nginx {n['read_s']:.2f} s = "
        f"{f0(size / n['read_s'] / 1e6)} MB/s; then the answer took jotter "
        f"{j['after_read_s']:.2f} s (fsync of the file, rename, commit of its row), nginx "
        f"{n['after_read_s']:.2f} s",
        f"- jotter peak RSS (highest round): **{peak_max:.1f} MiB** (target < {RSS_TARGET_MIB}"
        f" MiB: {ok(peak_max < RSS_TARGET_MIB)}); idle {j['idle_rss']:.1f} MiB",
        f"- Streamed to disk during the upload (sampled every 0.05 s): jotter's `<data>/tmp` "
        f"file {seen(j)}, nginx's body file {seen(n)}; nginx's file held all "
        f"{n['body_file_bytes']:,} bytes curl sent"]
    for r in (j, n):
        left = sorted({f for x in r["rounds"] for f in x["left_tmp"]})
        if left:
            lines.append(f"- WARNING: {r['engine']} left {len(left)} file(s) in its temp dir "
                         f"after the upload: {', '.join(left[:5])}")
    if any(x["left_uploads"] for x in j["rounds"]):
        lines.append("- WARNING: jotter's `<data>/uploads` was not empty after DELETE")
    bad = [x for x in j["rounds"] if x["exit"] != 0]
    if bad:
        lines.append(f"- WARNING: jotter exited with {[x['exit'] for x in bad]} on SIGTERM")
    lines += log_warning("jotter (large file)", [l for x in j["rounds"] for l in x["problems"]])

    s, ng = small["jotter"], small.get("nginx")
    rows = ["", f"| {args.upload_kib} KiB uploads, wrk -c{args.upload_connections} | req/s | "
            f"p99 ms | CPU-s | req/s per CPU-s | MB/s of files | errors, non-2xx |",
            "|---|--:|--:|--:|--:|--:|--:|"]
    for r, label in ((s, "jotter `POST /uploads` (hash, fsync, rename, row)"),
                     (ng, "nginx `/upload-clean` (temp file, deleted; reference)")):
        if r:
            rows.append(f"| {label} | {f0(r['rps'])} | {r['p99_ms']:.2f} | {r['cpu_s']:.2f} | "
                        f"{f0(r['rps_per_cpu'])} | {r['rps'] * args.upload_kib * 1024 / 1e6:,.1f}"
                        f" | {r['errors']}, {r['non2xx']} |")
    lines += rows + [""]
    per_round = s["rounds"]
    files = sum(x["files"] for x in per_round)
    acked = sum(x["acknowledged"] for x in per_round)
    rows_db = sum(x["rows"] for x in per_round)
    lines.append(
        f"- Stored vs acknowledged: {files:,} files in `<data>/uploads/`, {rows_db:,} rows in "
        f"the `uploads` table, for {acked:,} 201s counted by wrk (warm-up included; up to "
        f"{args.upload_connections} more per wrk run can be requests in flight when wrk "
        f"stopped, which the server completes); "
        f"`GET /uploads` listed {min(x['listed'] for x in per_round):,} (it shows at most "
        f"1000), each {args.upload_kib * 1024:,} bytes with the one SHA-256 of the body "
        f"part: {'yes' if all(x['listed_ok'] for x in per_round) else '**no**'}")
    lines.append(
        f"- jotter memory: RSS {s['rss_warm']:.1f} MiB after the warm-up, "
        f"{s['rss_after']:.1f} MiB after the {args.duration} s load, peak {s['peak_rss']:.1f} "
        f"MiB" + (f"; nginx peak {ng['peak_rss']:.1f} MiB" if ng else ""))
    mismatch = [x for x in per_round if not stored_matches(x, args.upload_connections)]
    if mismatch:
        lines.append(f"- WARNING: stored files, rows and 201s disagree: " + "; ".join(
            f"{x['files']} files, {x['rows']} rows, {x['acknowledged']} 201s" for x in mismatch))
    left = [f for x in per_round for f in x["left_tmp"] + x["left_tmp_after_stop"]]
    lines.append(f"- `<data>/tmp` after the load and after the stop: "
                 + (f"**{len(left)} file(s) left**" if left else "empty"))
    if ng and ng["left_tmp"]:
        lines.append(f"- WARNING: nginx left {len(ng['left_tmp'])} body file(s)")
    if s["errors"] or s["non2xx"] or (ng and (ng["errors"] or ng["non2xx"])):
        lines.append("- WARNING: socket errors or non-2xx responses")
    bad = [x for x in per_round if x["exit"] != 0]
    if bad:
        lines.append(f"- WARNING: jotter exited with {[x['exit'] for x in bad]} on SIGTERM")
    lines += log_warning("jotter (small uploads)", s["problems"])
    return "\n".join(lines)


def run(args, tmp: str) -> tuple:
    mib, kib, c = args.upload_mib, args.upload_kib, args.upload_connections
    title = TITLE.format(human(mib), kib)
    print(f"scenario uploads: {title}; {args.threads} worker(s); {args.upload_rounds} "
          f"round(s) of the large file, wrk -t1 -c{c} -d{args.duration}s", flush=True)
    src = os.path.join(tmp, "large.bin")
    t0 = time.monotonic()
    digest = make_large_file(src, mib)
    size = os.path.getsize(src)
    print(f"  {human(mib)} of random bytes written and hashed in {time.monotonic() - t0:.1f}s",
          flush=True)
    runs = {"jotter": [], "nginx": []}
    for rnd in range(args.upload_rounds):   # interleaved, one server at a time
        print(f"large file, round {rnd + 1}/{args.upload_rounds}", flush=True)
        for engine in runs:
            runs[engine].append(large_round(engine, args, tmp, src, digest))
    large = {e: median_of(r) for e, r in runs.items()}
    if shutil.which("strace"):
        print("large file, once more under strace (read calls counted, not timed)", flush=True)
        for engine in runs:
            large[engine]["read_calls"] = large_round(engine, args, tmp, src, digest, count_reads=True)["read_calls"]
    os.remove(src)

    small_runs = {"jotter": [], "nginx": []}
    for rnd in range(args.rounds):
        if args.rounds > 1:
            print(f"small uploads, round {rnd + 1}/{args.rounds}", flush=True)
        small_runs["jotter"].append(small_round(args, tmp, rnd))
        small_runs["nginx"].append(small_round_nginx(args, tmp))
    small = {e: median_of(r) for e, r in small_runs.items()}
    for e in small:   # counts are summed, not medians
        for k in ("errors", "non2xx"):
            small[e][k] = sum(x[k] for x in small[e]["rounds"])
    small["jotter"]["problems"] = [l for x in small_runs["jotter"] for l in x["problems"]]
    small["nginx"]["left_tmp"] = [f for x in small_runs["nginx"] for f in x["left_tmp"]]
    table = render(large, small, args, size)

    rounds = f"; wrk loads: median of {args.rounds} rounds" if args.rounds > 1 else ""
    command = reproduce_command(args, NAME, [
        ("--upload-mib", mib, 1024), ("--upload-rounds", args.upload_rounds, 3),
        ("--upload-kib", kib, 100), ("--upload-connections", c, 16),
        ("--duration", args.duration, 10), ("--threads", args.threads, 1),
        ("--rounds", args.rounds, 1)])
    curl = (sh(["curl", "--version"]).splitlines() or ["curl ?"])[0].split(" (")[0]
    section = (f"## Scenario `{NAME}`: {title}\n\n"
               f"{now()}. {args.threads} worker(s) per server; data and temp dirs of both "
               f"servers and the source file in one temp dir on the same disk.\n\n"
               f"**Large file.** {human(mib)} of random bytes (one 16 MiB random block "
               f"repeated), `curl -s -o ANSWER -w '%{{http_code}} %{{time_total}} ...' -F "
               f"file=@FILE URL` to jotter `POST /uploads` "
               f"(`--max-upload-size {max(2 << 30, 2 * size) >> 20}MiB`) and to nginx "
               f"`location = /upload` with `client_body_in_file_only on` and "
               f"`client_max_body_size 2g` (config `bench/peers/nginx/nginx.conf.template`: "
               f"the body goes to a file under the temp dir, then a 201). Jotter streams the "
               f"file part to `<data>/tmp`, hashes it (SHA-256), fsyncs it, renames it into "
               f"`<data>/uploads/` and commits its row before the 201; nginx neither hashes "
               f"nor fsyncs. A fresh server every time, `sync` before each upload, "
               f"{args.upload_rounds} interleaved round(s), median shown. MB/s = file size "
               f"({size:,} bytes) / curl's `time_total`, MB = 10^6 bytes. CPU-s = server "
               f"user+system CPU during the upload; peak RSS = `VmHWM` (nginx: master + "
               f"worker).\n\n"
               f"**Small files.** `wrk -t1 -c{c} -d{args.duration}s --latency` after a "
               f"{WARMUP_S} s warm-up, `bench/lua/upload_post.lua`: one multipart body with a "
               f"fixed boundary and one {kib} KiB file part of random bytes, every request "
               f"the same; jotter on a fresh data dir, then nginx `/upload-clean` "
               f"(`client_body_in_file_only clean`) as a reference{rounds}.\n\n"
               f"Machine: {machine_info(['nginx'])}; {curl}.\n\n{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps`):\n\n```\n{command}\n```")
    return table, section
