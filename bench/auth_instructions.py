#!/usr/bin/env python3
"""Callgrind instructions of an authenticated GET /notes/{id} against an unauthenticated one.

The server runs under valgrind --tool=callgrind with one engine thread and --auth off (so the
same server answers both: without credentials, and with a Bearer token that it verifies).
After a warm-up of both kinds, the counters are zeroed with callgrind_control -z, N requests
of one kind go over one keep-alive connection, and callgrind_control -d dumps the counts; then
the same for the other kind. Prints instructions per request for each and their ratio.

    python3 bench/auth_instructions.py --jotter .build/release/jotter [--requests 2000]

Needs valgrind (scripts/install-bench-deps). The `jotter` binary makes the user and token
on the data folder; the server is `jotter-server` beside it when present.
"""
import argparse, glob, http.client, os, re, shutil, socket, subprocess, sys, tempfile, time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def total_instructions(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit(f"no totals in {path}")


def run(conn, path, headers, count):
    for _ in range(count):
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"GET {path} answered {response.status}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jotter", default=".build/release/jotter")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--keep", help="a folder to copy the two callgrind dumps into (for callgrind_annotate)")
    args = parser.parse_args()
    jotter = os.path.abspath(args.jotter)
    server = os.path.join(os.path.dirname(jotter), "jotter-server")
    server_command = [server] if os.path.exists(server) else [jotter, "serve"]
    data = tempfile.mkdtemp(prefix="jotter-auth-bench-")
    out = os.path.join(data, "callgrind.out")
    try:
        subprocess.run([jotter, "users", "add", "bench", "--data", data], input=b"bench-password\n", check=True, capture_output=True)
        token = subprocess.run([jotter, "tokens", "create", "--user", "bench", "--data", data], check=True,
                               capture_output=True).stdout.decode().strip()
        port = free_port()
        process = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no",
                                    *server_command, "--port", str(port), "--data", data, "--threads", "1", "--quiet",
                                    "--auth", "off"], stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or process.poll() is not None:
                    raise SystemExit("the server did not start under valgrind")
                time.sleep(0.5)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", "/notes", body="body=" + "x" * 200, headers={"Content-Type": "application/x-www-form-urlencoded",
                                                                          "Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        note = re.search(r'"id":"(\d+)"', response.read().decode()).group(1)
        path = f"/notes/{note}"
        kinds = {"unauthenticated": {}, "authenticated": {"Authorization": f"Bearer {token}"}}
        for headers in kinds.values():
            run(conn, path, headers, args.warmup)
        results = {}
        for name, headers in kinds.items():
            for old in glob.glob(out + ".*"):
                os.remove(old)
            subprocess.run(["callgrind_control", "-z", str(process.pid)], check=True, capture_output=True)
            run(conn, path, headers, args.requests)
            subprocess.run(["callgrind_control", "-d", str(process.pid)], check=True, capture_output=True)
            dumps = sorted(glob.glob(out + ".*"), key=os.path.getmtime)
            results[name] = total_instructions(dumps[-1]) / args.requests
            if args.keep:
                shutil.copy(dumps[-1], os.path.join(args.keep, f"callgrind.{name}"))
        conn.close()
        process.terminate()
        process.wait(timeout=120)
        for name, value in results.items():
            print(f"{name:16} GET /notes/{{id}}: {value:,.0f} instructions per request")
        print(f"ratio authenticated / unauthenticated: {results['authenticated'] / results['unauthenticated']:.3f}"
              f" ({args.requests} keep-alive requests each, after {args.warmup} of each to warm up)")
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
