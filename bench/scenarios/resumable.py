"""Scenario `resumable`: a 1 GiB resumable upload (IETF draft, interop version 6) cut at 50 %
and resumed: how many bytes the client sends again; and a resumable upload's throughput against
a plain raw-body upload of the same file, same client, same server. Twice: on the data folder
(SQLite), then on PostgreSQL + S3 (SeaweedFS), where the partial upload is an S3 multipart
upload whose tail below a part is kept in PostgreSQL.

Throughput: `curl -T FILE -X POST` to `POST /uploads`, the raw body (`Content-Disposition:
attachment; filename=…`), once plain and once with `Upload-Draft-Interop-Version: 6` and
`Upload-Complete: ?1` (the server answers 104 with the upload's URL before the body, keeps the
partial upload durable as it goes, completes it into an ordinary upload); on the bucket also
`curl -F file=@FILE` (a multipart form: its file streams into the bucket as it arrives);
alternately, each stored upload deleted before the next, median of --upload-rounds.

Cut: a raw-socket client sends the head, reads the 104 (Location), sends exactly half the
file, waits until the server's kernel has acknowledged every byte (SIOCOUTQ 0) and 1 s more,
then resets the connection (SO_LINGER 0: an RST, as a dropped link looks to the server).
HEAD on the upload's URL answers the offset the server kept; the bytes re-sent are the bytes
sent before the cut minus that offset. PATCH sends the rest from the offset; the completed
upload's SHA-256 must be the file's."""
import fcntl, hashlib, json, os, socket, statistics, struct, subprocess, time, urllib.request

from harness import (BenchError, cpu_seconds, jotter_argv, log_warning, machine_info, now, ratio,
                     reproduce_command, start_server)
from scenarios.bucket_upload import SeaweedFS
from scenarios.scale import Postgres
from scenarios.sdk_upload import delete_all, make_file

NAME = "resumable"
TITLE = "a {} MiB resumable upload: bytes re-sent after a cut at 50 %, throughput against a plain upload"
JOTTER_ONLY = True
RESENT_TARGET = 1 << 20
# On the bucket: at most one S3 part (the server's part size, 8 MiB).
BUCKET_RESENT_TARGET = 8 << 20
SPEED_TARGET = 0.9
TOOLS = ("curl",)
SIOCOUTQ = 0x5411
VERSION = "6"


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def curl_upload(base: str, path: str, kind: str) -> dict:
    """One upload by curl — `plain` or `resumable` raw body, or a `form` — its wall time and
    the stored upload."""
    if kind == "form":
        argv = ["curl", "-sS", "--fail-with-body", "-H", "Expect:", "-F", f"file=@{path}"]
    else:
        argv = ["curl", "-sS", "--fail-with-body", "-T", path, "-X", "POST", "-H", "Expect:",
                "-H", "Content-Type: application/octet-stream",
                "-H", 'Content-Disposition: attachment; filename="big.bin"']
    if kind == "resumable":
        argv += ["-H", f"Upload-Draft-Interop-Version: {VERSION}", "-H", "Upload-Complete: ?1"]
    t0 = time.monotonic()
    p = subprocess.run(argv + [base + "/uploads"], capture_output=True)
    seconds = time.monotonic() - t0
    if p.returncode != 0:
        raise BenchError(f"curl upload failed ({p.returncode}): {(p.stdout + p.stderr).decode(errors='replace')[-500:]}")
    return {"seconds": seconds, "upload": json.loads(p.stdout)["uploads"][0]}


def read_head(sock: socket.socket, buffered: bytes = b"") -> tuple:
    """(status, {name: value}, rest) of one response head read from sock."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise BenchError(f"connection closed before a response head: {data[:200]!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, rest


def request(port: int, method: str, path: str, headers: list, file=None, offset=0, count=0) -> tuple:
    """One request on a new connection, the body `count` bytes of `file` from `offset`;
    (status, fields, body) of the final answer (interim 1xx skipped)."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
        head += "".join(f"{n}: {v}\r\n" for n, v in headers) + f"Content-Length: {count}\r\n\r\n"
        s.sendall(head.encode())
        if count:
            s.sendfile(file, offset, count)
        status, fields, rest = read_head(s)
        while 100 <= status < 200:
            status, fields, rest = read_head(s, rest)
        body = rest
        while chunk := s.recv(65536):
            body += chunk
        return status, fields, body


def cut_and_resume(port: int, path: str, size: int) -> dict:
    """The cut at 50 % and the resume; the figures of it."""
    half = size // 2
    with open(path, "rb") as f:
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        s.sendall((f"POST /uploads HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                   f"Content-Type: application/octet-stream\r\n"
                   f'Content-Disposition: attachment; filename="big.bin"\r\n'
                   f"Upload-Draft-Interop-Version: {VERSION}\r\nUpload-Complete: ?1\r\n"
                   f"Content-Length: {size}\r\n\r\n").encode())
        status, fields, _ = read_head(s)
        if status != 104 or "location" not in fields:
            raise BenchError(f"no 104 with Location before the body: {status} {fields}")
        location = fields["location"]
        t0 = time.monotonic()
        sent = s.sendfile(f, 0, half)
        send_seconds = time.monotonic() - t0
        unacked = bytearray(4)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            fcntl.ioctl(s.fileno(), SIOCOUTQ, unacked)
            if struct.unpack("i", unacked)[0] == 0:
                break
            time.sleep(0.01)
        time.sleep(1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        target = location[location.index("/uploads/"):]
        # The server notices the reset when it next reads; HEAD ends the request still open anyway.
        status, fields, _ = request(port, "HEAD", target, [("Upload-Draft-Interop-Version", VERSION)])
        if status != 204 or "upload-offset" not in fields:
            raise BenchError(f"HEAD {target}: {status} {fields}")
        offset = int(fields["upload-offset"])
        t0 = time.monotonic()
        status, fields, body = request(port, "PATCH", target, [
            ("Upload-Draft-Interop-Version", VERSION), ("Upload-Offset", str(offset)),
            ("Upload-Complete", "?1"), ("Content-Type", "application/partial-upload")],
            file=f, offset=offset, count=size - offset)
        patch_seconds = time.monotonic() - t0
        if status != 201:
            raise BenchError(f"PATCH {target}: {status} {body[:300]!r}")
    return {"sent": sent, "offset": offset, "resent": sent - offset, "send_seconds": send_seconds,
            "patch_seconds": patch_seconds, "upload": json.loads(body)["uploads"][0]}


def read_back(s3, key: str, digest: str) -> float:
    """Seconds to GET the object `key` from the bucket and hash it (curl | sha256sum): what
    hashing an upload on completion would cost instead of carrying the SHA-256 state."""
    from scenarios.bucket_upload import BUCKET, KEY, REGION
    t0 = time.monotonic()
    get = subprocess.Popen(["curl", "-sS", "--fail", "--aws-sigv4", f"aws:amz:{REGION}:s3", "--user",
                            f"{KEY}:{s3.secret}", f"{s3.endpoint}/{BUCKET}/{key}"], stdout=subprocess.PIPE)
    hashed = subprocess.run(["sha256sum"], stdin=get.stdout, capture_output=True, text=True)
    get.stdout.close()
    if get.wait() != 0 or hashed.stdout.split()[0] != digest:
        raise BenchError(f"reading {key} back failed or gave other bytes")
    return time.monotonic() - t0


def measure(args, srv, path: str, size: int, digest: str, kinds: tuple, after=None, s3=None) -> dict:
    """The cut and resume, then --upload-rounds of each kind in turn on one server; `after`
    checks what the server left behind after each upload."""
    speeds = {kind: [] for kind in kinds}
    cpu = {kind: [] for kind in kinds}
    print("  cut at 50 % and resume ...", flush=True)
    cut = cut_and_resume(srv.port, path, size)
    srv.check_alive()
    if cut["upload"]["sha256"] != digest or cut["upload"]["size"] != size:
        raise BenchError(f"the resumed upload is not the file: {cut['upload']}")
    print(f"    sent {cut['sent']:,} before the cut, HEAD offset {cut['offset']:,}: "
          f"{cut['resent']:,} bytes re-sent", flush=True)
    if after:
        after()
    if s3:
        cut["read_back_s"] = read_back(s3, f"uploads/{cut['upload']['id']}", digest)
        print(f"    reading it back from the bucket and hashing it: {cut['read_back_s']:.2f} s", flush=True)
    delete_all(srv.base)
    for rnd in range(args.upload_rounds):
        for kind in kinds:
            print(f"  round {rnd + 1}: {kind} ...", flush=True)
            subprocess.run(["sync"])
            before = cpu_seconds(srv.proc.pid)
            result = curl_upload(srv.base, path, kind)
            cpu[kind].append(cpu_seconds(srv.proc.pid) - before)
            srv.check_alive()
            if result["upload"]["sha256"] != digest:
                raise BenchError(f"{kind} upload stored other bytes: {result['upload']}")
            speeds[kind].append(size / result["seconds"] / 1e6)
            print(f"    {speeds[kind][-1]:,.0f} MB/s, server CPU {cpu[kind][-1]:.2f} s", flush=True)
            if after:
                after()
            delete_all(srv.base)
    return {"cut": cut, "speed": {kind: statistics.median(v) for kind, v in speeds.items()},
            "cpu": {kind: statistics.median(v) for kind, v in cpu.items()}}


def render(store: str, figures: dict, resent_target: int) -> tuple:
    """The table of one store, and whether its targets are met."""
    cut, med, med_cpu = figures["cut"], figures["speed"], figures["cpu"]
    resent_ok = 0 <= cut["resent"] <= resent_target
    speed_ok = med["resumable"] >= SPEED_TARGET * med["plain"]
    target = "1 MiB" if resent_target == RESENT_TARGET else "one S3 part, 8 MiB"
    labels = {"plain": "plain raw body", "resumable": "resumable raw body", "form": "plain multipart form"}
    table = (f"| {store}: cut at 50 % | bytes |\n|---|--:|\n"
             f"| sent before the cut | {cut['sent']:,} |\n"
             f"| offset HEAD answered | {cut['offset']:,} |\n"
             f"| re-sent on resume | **{cut['resent']:,}** |\n\n"
             f"- re-sent ≤ {target} ({resent_target:,} bytes): {'met' if resent_ok else '**missed**'}; "
             f"the resumed upload's SHA-256 is the file's\n\n"
             f"| {store}: upload (curl) | MB/s | server CPU-s |\n|---|--:|--:|\n"
             + "".join(f"| {labels[kind]} | {med[kind]:,.0f} | {med_cpu[kind]:.2f} |\n" for kind in med)
             + f"\n- resumable/plain: MB/s **{ratio(med['resumable'], med['plain'])}x** "
             f"(target ≥ {SPEED_TARGET}x: {'met' if speed_ok else '**missed**'}); "
             f"server CPU-s {ratio(med_cpu['resumable'], med_cpu['plain'])}x")
    if "read_back_s" in cut:
        table += (f"\n- hashing on completion instead of carrying the SHA-256 state would read the "
                  f"object back: GET + SHA-256 of the {cut['upload']['size'] / (1 << 20):,.0f} MiB took "
                  f"{cut['read_back_s']:.1f} s, {cut['read_back_s'] / cut['patch_seconds']:.2f}x the "
                  f"resuming PATCH ({cut['patch_seconds']:.1f} s), paid before the answer")
    if "form" in med:
        table += (f"; resumable/form: MB/s {ratio(med['resumable'], med['form'])}x, "
                  f"server CPU-s {ratio(med_cpu['resumable'], med_cpu['form'])}x")
    return table


def run(args, tmp: str) -> tuple:
    mib = args.upload_mib
    size = mib << 20
    title = TITLE.format(f"{mib:,}")
    print(f"scenario resumable: {title}; {args.threads} engine thread(s)", flush=True)
    path = os.path.join(tmp, "upload.bin")
    make_file(path, mib)
    digest = sha256_file(path)
    limit = ("--max-upload-size", f"{mib + 1}MiB")

    print("  the data folder (SQLite)", flush=True)
    srv = start_server("jotter", jotter_argv(args, os.path.join(tmp, "data"), *limit), tmp, args.start_timeout)
    try:
        local = measure(args, srv, path, size, digest, ("plain", "resumable"))
    finally:
        srv.stop()
    problems = srv.problems()

    print("  PostgreSQL + S3 (SeaweedFS)", flush=True)
    pg, s3 = Postgres(os.path.join(tmp, "pg")), None
    try:
        s3 = SeaweedFS(os.path.join(tmp, "s3"))
        srv = start_server("jotter", lambda port: jotter_argv(args, os.path.join(tmp, "data-bucket"), *limit)(port)
                           + ["--database", pg.url, "--blob-store", s3.blob_store()],
                           tmp, args.start_timeout, env=s3.credentials(), log_name="jotter-bucket")

        def nothing_left():
            # Every upload completed: no multipart upload open, no partial upload row.
            if s3.open_multipart_uploads() != 0 or pg.query("SELECT count(*) FROM partial_uploads").strip() != "0":
                raise BenchError(f"left behind: {s3.open_multipart_uploads()} multipart upload(s), "
                                 f"{pg.query('SELECT count(*) FROM partial_uploads')} partial row(s)")
        try:
            bucket = measure(args, srv, path, size, digest, ("plain", "form", "resumable"), after=nothing_left, s3=s3)
        finally:
            srv.stop()
        problems += srv.problems()
        versions = f"{pg.version()}; SeaweedFS {s3.version()}"
    finally:
        if s3:
            s3.stop()
        pg.stop()

    table = (render("data folder", local, RESENT_TARGET) + "\n\n"
             + render("PostgreSQL + S3", bucket, BUCKET_RESENT_TARGET))
    table += "".join("\n" + l for l in log_warning("jotter", problems))

    median = f"; median of {args.upload_rounds} rounds" if args.upload_rounds > 1 else ""
    command = reproduce_command(args, NAME, [("--upload-mib", mib, 1024), ("--threads", args.threads, 1),
                                             ("--upload-rounds", args.upload_rounds, 3)])
    section = (f"## Scenario `{NAME}`: {title}\n\n"
               f"{now()}. One jotter server with {args.threads} engine thread(s), uploads in its "
               f"data folder (SQLite); then one on PostgreSQL (the `scale` scenario's durable "
               f"cluster) with `--blob-store s3://…` (SeaweedFS `weed mini` on loopback, as the "
               f"`bucket-upload` scenario runs it), where a partial upload is an S3 multipart "
               f"upload of 8 MiB parts and its tail below a part is kept in PostgreSQL. One file "
               f"of {mib:,} MiB of random bytes.\n\n"
               f"Cut: a raw-socket client starts an IETF draft upload (interop version {VERSION}, "
               f"`Upload-Complete: ?1`, the whole length), reads the 104 and its `Location`, sends "
               f"half the file, waits until the server's kernel has acknowledged every byte and 1 s "
               f"more, then resets the connection. `HEAD` on the upload answers the offset kept; "
               f"re-sent = bytes sent before the cut − that offset. `PATCH` sends the rest.\n\n"
               f"Throughput: `curl -T FILE -X POST …/uploads`, a raw body, plain and resumable "
               f"(`Upload-Draft-Interop-Version: {VERSION}`, `Upload-Complete: ?1`), and on the "
               f"bucket also `curl -F file=@FILE` (a form, its file streamed into the bucket as it "
               f"arrives; the plain raw body goes to a temporary file first, then to the bucket), "
               f"alternately, each upload deleted before the next{median}; on the bucket, after "
               f"each, no multipart upload may be left open and no partial upload row. MB/s = file "
               f"bytes / curl's wall time, the server's durable write included; server CPU-s = its "
               f"utime+stime during the upload.\n\nMachine: {machine_info()}; {versions}.\n\n"
               f"{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps` and `scripts/test-venv`):\n\n```\n{command}\n```")
    return table, section
