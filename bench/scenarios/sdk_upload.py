"""Scenario `sdk-upload`: one 1 GiB file uploaded to POST /uploads by curl and by the Swift SDK
(`jotter upload`, the same release binary's client side), against the same server and file.

Each upload is one client process; its wall time gives MB/s (10^6 bytes per second) and
its VmHWM, sampled every 10 ms, its peak RSS. Clients alternate, one at a time; every stored upload
is deleted before the next, so the server's disk work is the same for both. The server's
durable write (fsync of the file) is inside every figure: this compares the clients on equal
terms, it is not the network's speed."""
import json, os, statistics, subprocess, tempfile, time, urllib.request

from harness import (BenchError, jotter_argv, log_warning, machine_info, memory_mib, now, ratio,
                     reproduce_command, start_server)

NAME = "sdk-upload"
TITLE = "a {} MiB multipart upload: the Swift SDK against curl"
TOOLS = ("curl",)
JOTTER_ONLY = True
SPEED_TARGET, RSS_TARGET_MIB = 0.8, 64


def make_file(path: str, mib: int):
    """`mib` MiB of random bytes (a random MiB written over and over, each copy marked)."""
    block = bytearray(os.urandom(1 << 20))
    with open(path, "wb") as f:
        for i in range(mib):
            block[:8] = i.to_bytes(8, "little")
            f.write(block)


def timed(argv: list) -> tuple:
    """Runs argv; (seconds, peak RSS in MiB, stdout). A failure raises BenchError.

    Peak RSS is the process's VmHWM, read every 10 ms while it runs: wait4's ru_maxrss would
    also count this harness's own high-water mark (the child starts as a vfork of it)."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        peak = 0.0
        while proc.poll() is None:
            try:
                peak = max(peak, memory_mib(proc.pid, "VmHWM"))
            except (OSError, TypeError):
                pass
            time.sleep(0.01)
        seconds = time.monotonic() - t0
        out.seek(0), err.seek(0)
        if proc.returncode != 0:
            raise BenchError(f"{argv[0]} failed ({proc.returncode}): {err.read().decode(errors='replace')[-500:]}")
        return seconds, peak, out.read().decode(errors="replace")


def delete_all(base: str):
    with urllib.request.urlopen(base + "/uploads") as r:
        ids = [u["id"] for u in json.load(r)["uploads"]]
    for upload_id in ids:
        urllib.request.urlopen(urllib.request.Request(f"{base}/uploads/{upload_id}", method="DELETE")).close()


def run(args, tmp: str) -> tuple:
    mib = args.upload_mib
    size = mib << 20
    title = TITLE.format(f"{mib:,}")
    print(f"scenario sdk-upload: {title}; {args.threads} engine thread(s), {args.rounds} round(s)", flush=True)
    path = os.path.join(tmp, "upload.bin")
    make_file(path, mib)
    srv = start_server("jotter", jotter_argv(args, os.path.join(tmp, "data"),
                                             "--max-upload-size", f"{mib + 1}MiB"), tmp, args.start_timeout)
    clients = {
        "curl": ["curl", "-sS", "--fail-with-body", "-o", "/dev/null", "-F", f"file=@{path}", srv.base + "/uploads"],
        "Swift SDK (`jotter upload`)": [args.jotter, "upload", path, "--server", srv.base, "--json"],
    }
    results = {name: [] for name in clients}
    try:
        for rnd in range(args.rounds):
            for name, argv in clients.items():
                print(f"  round {rnd + 1}: {name} ...", flush=True)
                seconds, rss, _ = timed(argv)
                srv.check_alive()
                results[name].append((size / seconds / 1e6, rss))
                print(f"    {size / seconds / 1e6:,.0f} MB/s, peak RSS {rss:.1f} MiB", flush=True)
                delete_all(srv.base)
    finally:
        srv.stop()
    problems = srv.problems()

    med = {name: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
           for name, rows in results.items()}
    (curl_speed, _), (sdk_speed, sdk_rss) = med.values()
    speed_ok = sdk_speed >= SPEED_TARGET * curl_speed
    rss_ok = sdk_rss < RSS_TARGET_MIB
    rows = "\n".join(f"| {name} | {speed:,.0f} | {rss:.1f} |" for name, (speed, rss) in med.items())
    table = (f"| client | MB/s | client peak RSS MiB |\n|---|--:|--:|\n{rows}\n\n"
             f"- SDK/curl: MB/s **{ratio(sdk_speed, curl_speed)}x** "
             f"(target ≥ {SPEED_TARGET}x: {'met' if speed_ok else '**missed**'}); "
             f"SDK client peak RSS {sdk_rss:.1f} MiB (target < {RSS_TARGET_MIB}: "
             f"{'met' if rss_ok else '**missed**'})")
    table += "".join("\n" + l for l in log_warning("jotter", problems))

    median = f"; median of {args.rounds} rounds" if args.rounds > 1 else ""
    command = reproduce_command(args, NAME, [("--upload-mib", mib, 1024), ("--threads", args.threads, 1),
                                             ("--rounds", args.rounds, 1)])
    section = (f"## Scenario `{NAME}`: {title}\n\n"
               f"{now()}. One jotter server with {args.threads} engine thread(s); one file of "
               f"{mib:,} MiB of random bytes, sent as one multipart file part to `POST /uploads` "
               f"by `curl -F file=@…` and by `jotter upload` (JotterClient on URLSession: the "
               f"body streamed from disk, sent chunked), alternately, each upload deleted before "
               f"the next{median}. MB/s = file bytes / wall time of the client process, the "
               f"server's durable write included; peak RSS = the client process's VmHWM (sampled every 10 ms).\n\n"
               f"Machine: {machine_info()}.\n\n{table}\n\n"
               f"Reproduce (after `scripts/install-bench-deps`):\n\n```\n{command}\n```")
    return table, section
