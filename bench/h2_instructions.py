#!/usr/bin/env python3
"""Callgrind instructions per request of `GET /hello?name=Bob` over HTTP/2 (prior knowledge)
and, on the same server, over HTTP/1.1 keep-alive.

The release `jotter-server` (a copy without debug information: valgrind 3.19 cannot read the
DWARF 5 of Swift 6.3) runs under valgrind --tool=callgrind with one engine thread. h2load warms
it up (`h2load -n WARMUP -c 1 -m 10`), callgrind_control -z zeroes the counters,
`h2load -n N -c 1 -m 10` (HTTP/2: one connection, ten streams in flight) or
`h2load --h1 -n N -c 1 -m 1` (HTTP/1.1: one keep-alive connection, one request at a time) runs,
callgrind_control -d dumps the counts; total Ir / N. Each kind runs `--rounds` times.

    python3 bench/h2_instructions.py --jotter .build/release/jotter [--requests 10000] [--rounds 2]

Needs valgrind and h2load (nghttp2-client), as scripts/install-bench-deps installs them.
"""
import argparse, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from auth_instructions import Measured  # noqa: E402


def h2load(port, requests, h1):
    argv = ["h2load", "-n", str(requests), "-c", "1", *(["--h1", "-m", "1"] if h1 else ["-m", "10"]),
            f"http://127.0.0.1:{port}/hello?name=Bob"]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    if f"{requests} succeeded" not in out or "status codes: " + str(requests) + " 2xx" not in out:
        raise SystemExit(f"h2load did not get {requests} answers of 200:\n{out}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jotter", default=".build/release/jotter")
    parser.add_argument("--server", help="the jotter-server binary (default: beside --jotter)")
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    server_binary = args.server or os.path.join(os.path.dirname(os.path.abspath(args.jotter)), "jotter-server")
    folder = tempfile.mkdtemp(prefix="jotter-h2-instructions-")
    try:
        stripped = os.path.join(folder, "jotter-server-nodebug")
        subprocess.run(["objcopy", "--strip-debug", server_binary, stripped], check=True)
        data = os.path.join(folder, "data")
        os.makedirs(data)
        server = Measured([stripped], data, [])
        try:
            results = {"HTTP/2": [], "HTTP/1.1": []}
            for round in range(args.rounds):
                for kind, h1 in (("HTTP/2", False), ("HTTP/1.1", True)):
                    h2load(server.port, args.warmup, h1)
                    total = server.counted(lambda: h2load(server.port, args.requests, h1), 1)
                    results[kind].append(total / args.requests)
        finally:
            server.stop()
        for kind, values in results.items():
            print(f"{kind:8} GET /hello?name=Bob: " + ", ".join(f"{v:,.0f}" for v in values) + " instructions per request")
        print(f"({args.requests} requests per window after {args.warmup} to warm up; HTTP/2: h2load -c 1 -m 10; "
              f"HTTP/1.1: h2load --h1 -c 1 -m 1)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
