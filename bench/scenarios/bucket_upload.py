"""Scenario `bucket-upload`: one large file (1 GiB by default) uploaded with curl `-F file=@…`
to one `jotter serve --database postgres://… --blob-store s3://…` (SeaweedFS), and the same
upload to the same kind of instance on the same PostgreSQL with the local store (the data
folder's uploads/), rounds interleaved, fresh instances each round. Reported: MB/s, CPU, peak
RSS, the most the instance's folders (data folder and TMPDIR) held on disk at once (sampled
every 0.05 s) and the bytes it wrote to storage (`write_bytes`); then a client that stops
mid-upload: the multipart upload open in the bucket while the body arrives, none after, and no
row, no object.

PostgreSQL: the `scale` scenario's own cluster (durable settings). SeaweedFS: `weed mini` from
.venv-test (scripts/test-venv), started as scripts/test-services starts it, on free loopback
ports in the run's temp folder, one identity (signatures enforced)."""
import json, os, re, socket, subprocess, threading, time

from harness import (REPO, BenchError, cpu_seconds, free_port, log_warning, machine_info,
                     memory_mib, now, reproduce_command, start_server, tree_sum)
from scenarios.scale import Postgres
from scenarios.uploads import curl_upload, human, make_large_file, median_of, request

NAME = "bucket-upload"
TITLE = "a {} upload through one instance on PostgreSQL + S3, next to its local store"
JOTTER_ONLY = True
TOOLS = ("curl", "sha256sum")
TEMP_TARGET_MIB = 16     # the most the instance may hold on disk for an upload to the bucket
RSS_TARGET_MIB = 64      # its peak RSS
MBPS_TARGET = 0.8        # bucket MB/s / local store MB/s
BUCKET, REGION, KEY = "jotter-bench", "us-east-1", "jotter-bench"
CUT_MIB = 256            # what the cut client sends before it goes away (at most half the file)


# ------------------------------------------------------------ SeaweedFS ---

class SeaweedFS:
    """`weed mini` in `folder` on free loopback ports, with one identity and BUCKET."""

    def __init__(self, folder: str, timeout: float = 60.0):
        self.weed = os.path.join(REPO, ".venv-test", "bin", "weed")
        if not os.access(self.weed, os.X_OK):
            raise BenchError(f"{self.weed} is missing (scripts/test-venv)")
        self.folder, self.secret = folder, f"jotter-bench-secret-{os.getpid()}"
        os.makedirs(folder)
        with open(os.path.join(folder, "identities.json"), "w") as f:
            json.dump({"identities": [{"name": KEY, "credentials": [
                {"accessKey": KEY, "secretKey": self.secret}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        for attempt in range(3):  # a free port can be taken before weed binds it
            if self._start(attempt, timeout):
                return
        raise BenchError(f"SeaweedFS did not become ready:\n{self.log_tail()}")

    def _start(self, attempt: int, timeout: float) -> bool:
        data, tmp = (os.path.join(self.folder, f"{d}-{attempt}") for d in ("data", "tmp"))
        os.makedirs(data), os.makedirs(tmp)
        names = ["master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
                 "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc"]
        ports = dict(zip(names, (free_port() for _ in names)))
        self.endpoint = f"http://127.0.0.1:{ports['s3.port']}"
        self.log = os.path.join(self.folder, "weed.log")
        argv = [self.weed, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                *(f"-{k}={v}" for k, v in ports.items()), "-admin.ui=false", "-webdav=false",
                "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false",
                "-master.volumeSizeLimitMB=2048", "-volume.preStopSeconds=0",
                f"-s3.config={self.folder}/identities.json", f"-bucket={BUCKET}",
                f"-filer.localSocket={self.folder}/filer-{attempt}.sock",
                f"-s3.localSocket={self.folder}/s3-{attempt}.sock"]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env=dict(os.environ, TMPDIR=tmp))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if self.s3("max-keys=1", timeout=2)[0] == 200:  # the bucket exists
                return True
            time.sleep(0.1)
        self.stop()
        raise BenchError(f"SeaweedFS did not become ready:\n{self.log_tail()}")

    def s3(self, query: str, timeout: float = 10) -> tuple:
        """A signed GET of the bucket with `query`: (status, body)."""
        p = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", "--max-time", str(timeout),
                            "--aws-sigv4", f"aws:amz:{REGION}:s3", "--user", f"{KEY}:{self.secret}",
                            f"{self.endpoint}/{BUCKET}/?{query}"], capture_output=True, text=True)
        body, _, code = p.stdout.rpartition("\n")
        return (int(code) if code.isdigit() else 0), body

    def count(self, query: str, element: str) -> int:
        status, body = self.s3(query)
        if status != 200:
            raise BenchError(f"S3 GET ?{query} -> {status} {body[:300]!r}")
        return len(re.findall(f"<{element}>", body))

    def open_multipart_uploads(self) -> int:
        """ListMultipartUploads: the uploads begun and neither completed nor aborted."""
        return self.count("uploads=", "Upload")

    def objects(self) -> int:
        return self.count("list-type=2", "Key")

    def put(self, src: str, key: str) -> dict:
        """The file PUT straight to the bucket with curl (one signed request): the ceiling the
        bucket itself sets; then the object is deleted."""
        auth = ["--aws-sigv4", f"aws:amz:{REGION}:s3", "--user", f"{KEY}:{self.secret}"]
        cpu0 = cpu_seconds(self.proc.pid)
        p = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                            *auth, "-T", src, f"{self.endpoint}/{BUCKET}/{key}"],
                           capture_output=True, text=True, timeout=900)
        cpu = cpu_seconds(self.proc.pid) - cpu0
        code, seconds = (p.stdout.split() + ["0", "0"])[:2]
        if code != "200":
            raise BenchError(f"S3 PUT {key} -> {p.stdout} {p.stderr}")
        subprocess.run(["curl", "-s", "-X", "DELETE", *auth, f"{self.endpoint}/{BUCKET}/{key}"],
                       capture_output=True, timeout=60)
        return {"time_s": float(seconds), "mbps": os.path.getsize(src) / float(seconds) / 1e6,
                "s3_cpu_s": cpu}

    def blob_store(self) -> str:
        return f"s3://{BUCKET}?endpoint={self.endpoint}&region={REGION}"

    def credentials(self) -> dict:
        return {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": self.secret}

    def version(self) -> str:
        p = subprocess.run([self.weed, "version"], capture_output=True, text=True)
        fields = p.stdout.split()   # "version 8000GB 4.48 …"
        return fields[2] if len(fields) > 2 else p.stdout.strip()

    def log_tail(self) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-30:])
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# -------------------------------------------------------------- sampling ---

def bytes_on_disk(folders: list) -> int:
    """The sizes of every file under `folders` together (files may go while it walks)."""
    total = 0
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                try:
                    total += os.stat(os.path.join(root, name)).st_size
                except OSError:
                    pass
    return total


def storage_writes(pid: int) -> int:
    """`write_bytes` of /proc/PID/io over the tree: bytes the process made the kernel send to
    storage (page-cache writeback of what it wrote counts; sockets do not)."""
    return tree_sum(pid, "io", lambda io: int(re.search(r"^write_bytes:\s+(\d+)", io, re.M)[1]))


class DiskSampler(threading.Thread):
    """Every 0.05 s while an upload runs: the most the instance's folders held (above what
    they held before) and its tree's VmRSS."""

    def __init__(self, pid: int, folders: list):
        super().__init__(daemon=True)
        self.pid, self.folders, self.halt = pid, folders, threading.Event()
        self.base = bytes_on_disk(folders)
        self.max_disk = 0
        self.max_rss = 0.0

    def run(self):
        while not self.halt.wait(0.05):
            self.max_disk = max(self.max_disk, bytes_on_disk(self.folders) - self.base)
            self.max_rss = max(self.max_rss, memory_mib(self.pid, "VmRSS"))

    def stop(self):
        self.halt.set()
        self.join()


# ------------------------------------------------------------- instances ---

def start_instance(args, tmp: str, name: str, pg: Postgres, s3, limit: int):
    """One `jotter serve` on `pg`, with the bucket (`s3`) or the local store (None); its
    TMPDIR in a folder of its own beside its data folder, both watched."""
    folder = os.path.join(tmp, name)
    data, tmpdir = os.path.join(folder, "data"), os.path.join(folder, "tmpdir")
    os.makedirs(data), os.makedirs(tmpdir)
    extra = ["--blob-store", s3.blob_store()] if s3 else []
    env = dict(s3.credentials() if s3 else {}, TMPDIR=tmpdir)
    srv = start_server("jotter", lambda port: [
        args.jotter, "serve", "--host", "127.0.0.1", "--port", str(port), "--threads",
        str(args.threads), "--quiet", "--data", data, "--database", pg.url,
        "--max-upload-size", str(limit), *extra], tmp, args.start_timeout, env=env, log_name=name)
    return srv, [data, tmpdir]


def upload_round(args, tmp: str, store: str, rnd: int, pg: Postgres, s3: SeaweedFS, src: str,
                 digest: str) -> dict:
    size = os.path.getsize(src)
    srv, folders = start_instance(args, tmp, f"jotter-{store}-{rnd}", pg,
                                  s3 if store == "bucket" else None, max(2 << 30, 2 * size))
    try:
        os.sync()   # neither pays for the other's (or the file's) writeback
        sampler = DiskSampler(srv.proc.pid, folders)
        cpu0, written0 = cpu_seconds(srv.proc.pid), storage_writes(srv.proc.pid)
        s3_cpu0 = cpu_seconds(s3.proc.pid)
        sampler.start()
        try:
            r = curl_upload(srv.base + "/uploads", src, os.path.join(tmp, f"answer-{store}.txt"))
        finally:
            sampler.stop()
        r["cpu_s"] = cpu_seconds(srv.proc.pid) - cpu0
        r["s3_cpu_s"] = cpu_seconds(s3.proc.pid) - s3_cpu0
        r["written_mib"] = (storage_writes(srv.proc.pid) - written0) / (1 << 20)
        r["peak_rss"] = memory_mib(srv.proc.pid, "VmHWM")
        r["idle_rss"] = srv.idle_rss
        r["disk_mib"] = sampler.max_disk / (1 << 20)
        r["mbps"] = size / r["time_s"] / 1e6
        srv.check_alive()
        if r["status"] != 201:
            raise BenchError(f"{store}: upload -> {r['status']} {r['body'][:300]!r}")
        upload = json.loads(r["body"])["uploads"][0]
        if upload["size"] != size or upload["sha256"] != digest:
            raise BenchError(f"{store}: stored size {upload['size']} sha256 {upload['sha256']}, "
                             f"expected {size} {digest}")
        if store == "bucket" and s3.objects() != 1:
            raise BenchError(f"bucket: {s3.objects()} objects after one upload")
        status, answer = request("DELETE", f"{srv.base}/uploads/{upload['id']}")
        if status != 200:
            raise BenchError(f"{store}: DELETE /uploads/{upload['id']} -> {status} {answer[:200]!r}")
    finally:
        stopped = srv.stop(timeout=15)
    r["store"], r["exit"], r["problems"] = store, stopped["exit"], srv.problems()
    print(f"  {store}: {r['mbps']:,.0f} MB/s ({r['time_s']:.2f} s), CPU {r['cpu_s']:.2f} s, "
          f"peak RSS {r['peak_rss']:.1f} MiB, on disk at most {r['disk_mib']:.1f} MiB, "
          f"written to storage {r['written_mib']:.1f} MiB", flush=True)
    return r


def rows_in_uploads(pg: Postgres) -> int:
    return int(pg.query("SELECT count(*) FROM uploads"))


def cut_upload(args, tmp: str, pg: Postgres, s3: SeaweedFS, src: str) -> dict:
    """A client that sends the headers and CUT_MIB MiB of a multipart body declared whole, then
    resets the connection once the bucket lists the multipart upload as open."""
    size = os.path.getsize(src)
    srv, folders = start_instance(args, tmp, "jotter-bucket-cut", pg, s3, max(2 << 30, 2 * size))
    rows0, objects0 = rows_in_uploads(pg), s3.objects()
    boundary = "jotter-bench-cut"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    r = {}
    try:
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        sock.sendall((f"POST /uploads HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                      f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                      f"Content-Length: {len(head) + size + len(tail)}\r\n\r\n").encode() + head)
        sent = 0
        with open(src, "rb") as f:
            while sent < min(CUT_MIB << 20, size // 2):
                chunk = f.read(1 << 20)
                sock.sendall(chunk)
                sent += len(chunk)
        deadline = time.monotonic() + 20
        while (open_during := s3.open_multipart_uploads()) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        r["sent_mib"], r["open_during"] = sent / (1 << 20), open_during
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()   # an RST: the request ends without its body
        t0 = time.monotonic()
        while (left := s3.open_multipart_uploads()) and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        r["open_after"], r["aborted_s"] = left, time.monotonic() - t0
        time.sleep(0.5)
        r["new_rows"], r["new_objects"] = rows_in_uploads(pg) - rows0, s3.objects() - objects0
        r["left_on_disk"] = bytes_on_disk(folders)
        srv.check_alive()
    finally:
        srv.stop(timeout=15)
    r["problems"] = srv.problems()
    print(f"  cut after {r['sent_mib']:.0f} MiB: open multipart uploads {r['open_during']} while "
          f"sending, {r['open_after']} {r['aborted_s']:.2f} s after the reset; new rows "
          f"{r['new_rows']}, new objects {r['new_objects']}", flush=True)
    return r


# -------------------------------------------------------------- reporting ---

def render(results: dict, cut: dict, args) -> str:
    bucket, local = results["bucket"], results["local"]
    lines = ["| upload | MB/s | s | jotter CPU-s | SeaweedFS CPU-s | peak RSS MiB | idle RSS MiB "
             "| instance's folders on disk, peak MiB | written to storage MiB |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for key, label in (("bucket", "jotter, S3 (SeaweedFS), `--blob-store s3://…`"),
                       ("local", "jotter, local store (the data folder's `uploads/`)")):
        r = results[key]
        lines.append(f"| {label} | {r['mbps']:,.0f} | {r['time_s']:.2f} | {r['cpu_s']:.2f} | "
                     f"{r['s3_cpu_s']:.2f} | {r['peak_rss']:.1f} | {r['idle_rss']:.1f} | "
                     f"{r['disk_mib']:.1f} | {r['written_mib']:.1f} |")
    d = results["direct"]
    lines.append(f"| curl `-T` straight to the bucket (one signed PUT; reference) | {d['mbps']:,.0f} | "
                 f"{d['time_s']:.2f} | — | {d['s3_cpu_s']:.2f} | — | — | — | — |")
    ok = lambda c: "yes" if c else "**no**"
    ratio = bucket["mbps"] / local["mbps"]
    lines += ["",
              f"- S3 / local store MB/s: **{ratio:.2f}×** (goal ≥ {MBPS_TARGET}×): {ok(ratio >= MBPS_TARGET)}; "
              f"jotter on S3 / curl straight to the bucket: {bucket['mbps'] / d['mbps']:.2f}×",
              f"- peak on disk during the S3 upload: **{bucket['disk_mib']:.1f} MiB** (goal ≤ "
              f"{TEMP_TARGET_MIB} MiB): {ok(bucket['disk_mib'] <= TEMP_TARGET_MIB)}",
              f"- peak RSS during the S3 upload: **{bucket['peak_rss']:.1f} MiB** (goal < "
              f"{RSS_TARGET_MIB} MiB): {ok(bucket['peak_rss'] < RSS_TARGET_MIB)}",
              f"- client reset after {cut['sent_mib']:.0f} MiB of the body: {cut['open_during']} "
              f"multipart upload(s) open in the bucket while it was sending, **{cut['open_after']}** "
              f"{cut['aborted_s']:.2f} s after the reset; **{cut['new_rows']}** new rows in `uploads`, "
              f"{cut['new_objects']} new objects, {cut['left_on_disk']} bytes left in the instance's "
              f"folders: {ok(cut['open_during'] >= 1 and cut['open_after'] == 0 and cut['new_rows'] == 0 and cut['new_objects'] == 0)}"]
    if args.upload_rounds > 1:
        for key in ("bucket", "local", "direct"):
            lines.append(f"- {key} rounds, MB/s: " + ", ".join(
                f"{r['mbps']:,.0f}" for r in results[key]["rounds"]))
    return "\n".join(lines)


def run(args, tmp: str) -> tuple:
    title = TITLE.format(human(args.upload_mib))
    print(f"scenario {NAME}: {title}", flush=True)
    src = os.path.join(tmp, "large.bin")
    print(f"  writing a {human(args.upload_mib)} file ...", flush=True)
    digest = make_large_file(src, args.upload_mib)
    pg, s3 = Postgres(os.path.join(tmp, "pg")), None
    runs, problems = {"bucket": [], "local": [], "direct": []}, []
    try:
        s3 = SeaweedFS(os.path.join(tmp, "s3"))
        for rnd in range(args.upload_rounds):
            for store in ("bucket", "local"):
                r = upload_round(args, tmp, store, rnd, pg, s3, src, digest)
                runs[store].append(r)
                problems += r["problems"]
            os.sync()
            runs["direct"].append(s3.put(src, f"direct-{rnd}"))
            print(f"  curl straight to the bucket: {runs['direct'][-1]['mbps']:,.0f} MB/s", flush=True)
        cut = cut_upload(args, tmp, pg, s3, src)
        problems += cut["problems"]
        versions = f"{pg.version()}; SeaweedFS {s3.version()}"
    finally:
        if s3:
            s3.stop()
        pg.stop()
    results = {k: median_of(v) for k, v in runs.items()}
    table = render(results, cut, args) + "\n" + "\n".join(log_warning("jotter", problems))
    command = reproduce_command(args, NAME, [
        ("--upload-mib", args.upload_mib, 1024), ("--upload-rounds", args.upload_rounds, 3),
        ("--threads", args.threads, 1)])
    section = (f"## Scenario `{NAME}`: {title}\n\n"
               f"{now()}. One file of {args.upload_mib:,} MiB of random bytes (one 16 MiB block "
               f"repeated), sent with `curl -F file=@…` to `POST /uploads` of one `jotter serve "
               f"--database postgres://… --threads {args.threads}`, fresh each time, alternately "
               f"with `--blob-store s3://…` (SeaweedFS `weed mini` on loopback: the file part goes "
               f"up as a multipart upload while it arrives) and without (the local store: a temp "
               f"file, fsync, rename), {args.upload_rounds} round(s), median shown; PostgreSQL: "
               f"the `scale` scenario's durable cluster, SeaweedFS and PostgreSQL on the same "
               f"machine and disk. The answer's size and SHA-256 are checked, the bucket must hold "
               f"one object, and the upload is deleted. Each round ends with the same file PUT "
               f"straight to the bucket by `curl --aws-sigv4 -T` (one request, no multipart), the "
               f"ceiling SeaweedFS sets on this machine. SeaweedFS CPU-s = its process tree's "
               f"user+system CPU around each upload. MB/s = file bytes / curl's `time_total` "
               f"(MB = 10^6 bytes). On disk = the most the instance's data folder and its `TMPDIR` "
               f"(a folder of its own) held together above their size before, sampled every "
               f"0.05 s; written to storage = `write_bytes` of `/proc/PID/io`; RSS = `VmHWM`. "
               f"Then one more instance on the bucket gets a request declaring the whole body, "
               f"{CUT_MIB} MiB of it, and, once the bucket lists the multipart upload "
               f"(ListMultipartUploads, signed), a reset; the listing must become empty, and "
               f"neither a row in `uploads` nor an object may appear.\n\n"
               f"Machine: {machine_info(['curl'])}; {versions}.\n\n{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps` and `scripts/test-venv`):"
               f"\n\n```\n{command}\n```")
    return table, section
