#!/usr/bin/env python3
"""Mutation fuzzer over raw sockets against a running Jotter server.

Takes valid requests (every kind of body and framing the server reads), mutates them with a
fixed seed (bytes flipped, inserted, deleted, duplicated; tokens that matter to HTTP framing
spliced in; lines swapped) and sends each on its own connection, then half-closes it. Fails
when any answer is a 500, when a connection neither answers nor closes within the timeout
(a hang: longer than the server's 10 s header deadline), or when the server's resident memory grows by more than a quarter over the run.

    python3 Tests/Hostile/mutate.py --port 8080 --pid 1234 --count 3000 --seed 1313
"""
import argparse
import random
import socket
import sys
import threading
import time

from proc import rss_kib

BOUNDARY = "HostileBoundary42"
MULTIPART = (
    f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n"
    f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
    f"Content-Type: text/plain\r\n\r\nfile body\r\n--{BOUNDARY}--\r\n"
)


def request(method, target, headers=(), body=""):
    text = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for name, value in headers:
        text += f"{name}: {value}\r\n"
    if body or method in ("POST", "PUT", "PATCH"):
        text += f"Content-Length: {len(body.encode())}\r\n"
    return (text + "\r\n" + body).encode()


SEEDS = [
    request("GET", "/hello?name=Bob"),
    request("POST", "/hello", [("Content-Type", "application/x-www-form-urlencoded")], "name=Al"),
    request("GET", "/notes?limit=5&order=asc&q=milk"),
    request("POST", "/notes", [("Content-Type", "application/x-www-form-urlencoded")], "body=buy+milk"),
    request("POST", "/notes", [("Content-Type", "application/json")], '{"body":"json note"}'),
    request("PUT", "/notes/1", [("Content-Type", "application/json"), ("If-Match", '"1"')], '{"body":"changed"}'),
    request("PATCH", "/notes/1", [("Content-Type", "application/x-www-form-urlencoded")], "body=x"),
    request("POST", "/notes/1", [("Content-Type", "application/x-www-form-urlencoded")], "_method=DELETE"),
    request("DELETE", "/notes/2", [("If-Match", "*")]),
    request("GET", "/notes/1", [("If-None-Match", '"1", W/"2"')]),
    request("POST", "/uploads", [("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")], MULTIPART),
    request("POST", "/echo?a=1&a=2", [("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")], MULTIPART),
    request("GET", "/uploads?limit=2"),
    request("GET", "/uploads/x/content", [("Range", "bytes=0-3"), ("If-Range", '"abc"')]),
    request("GET", "/healthz"),
    request("GET", "/openapi.json"),
    b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
    b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
]

TOKENS = [b"\r\n", b"\n", b"\r", b" ", b"\t", b"\x00", b":", b";", b",", b"\"", b"\\", b"%", b"%00", b"%ff", b"\xff\xfe",
          b"\r\n ", b"Content-Length: 99999999999999999999\r\n", b"Content-Length: -1\r\n", b"Transfer-Encoding: chunked\r\n",
          b"Content-Type: multipart/form-data; boundary=\r\n", b"Expect: 100-continue\r\n", b"X-HTTP-Method-Override: DELETE\r\n",
          b"Range: bytes=-0,5-1,9999999999999999999-\r\n", b"If-Match: W/\r\n", b"../", "\u202e".encode(), b"0\r\n\r\n",
          b"&" * 200, b"a=1&" * 150, b"A" * 9000, b"HTTP/1.0", b"HTTP/2.0", b"{", b"}", b"[", b"]"]


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        position = rng.randrange(len(data) + 1)
        if kind == 0 and data:  # flip bits
            index = min(position, len(data) - 1)
            data[index] ^= 1 << rng.randrange(8)
        elif kind == 1:  # random bytes
            data[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 2 and data:  # delete a range
            del data[position:position + rng.randint(1, 16)]
        elif kind == 3 and data:  # duplicate a range
            piece = data[position:position + rng.randint(1, 64)]
            data[position:position] = piece * rng.randint(1, 8)
        elif kind == 4:  # an HTTP token
            data[position:position] = rng.choice(TOKENS)
        elif kind == 5:  # swap two lines
            lines = bytes(data).split(b"\r\n")
            if len(lines) > 2:
                a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[a], lines[b] = lines[b], lines[a]
                data = bytearray(b"\r\n".join(lines))
        else:  # cut short
            del data[position:]
    return bytes(data)


def exchange(port, payload, timeout):
    """(answer bytes, hung): hung when nothing came back and the connection was still open at
    the timeout. An answered connection may stay open (keep-alive), and one with an incomplete
    request is closed by the server's header deadline (10 s), so the timeout must exceed it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    received = b""
    try:
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close first (a refusal); read what it said
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                return received, not received
            except ConnectionResetError:
                return received, False
            if not chunk:
                return received, False
            received += chunk
            if len(received) > 8 << 20:
                return received, False  # a big answer (openapi.json, a list): not a hang
        return received, not received
    finally:
        sock.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, help="the server's pid, to watch its memory")
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1313)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=12.0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    cases = [mutate(rng, rng.choice(SEEDS)) for _ in range(args.count)]
    failures = []
    statuses = {}
    lock = threading.Lock()
    next_case = [0]
    warm = [None]

    def worker():
        while True:
            with lock:
                index = next_case[0]
                next_case[0] += 1
                if index == args.count // 10 and args.pid:
                    warm[0] = rss_kib(args.pid)
            if index >= args.count:
                return
            try:
                answer, hung = exchange(args.port, cases[index], args.timeout)
            except OSError as error:
                with lock:
                    failures.append((index, f"connect failed: {error}"))
                continue
            status = answer[9:12].decode("latin-1") if answer.startswith(b"HTTP/1.") else "-"
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if hung:
                    failures.append((index, "no answer and not closed within %.0f s" % args.timeout))
                if b"HTTP/1.1 500" in answer or b"HTTP/1.0 500" in answer:
                    failures.append((index, "answered 500"))

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    summary = ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items()))
    print(f"mutate: {args.count} cases (seed {args.seed}) in {elapsed:.1f} s — {summary}")
    if args.pid:
        time.sleep(1)
        end = rss_kib(args.pid)
        print(f"mutate: server RSS {warm[0]} KiB after the first tenth, {end} KiB at the end")
        if warm[0] and end > warm[0] * 1.25 + 4096:
            failures.append((-1, f"RSS grew from {warm[0]} to {end} KiB"))
    for index, reason in failures[:20]:
        print(f"mutate: FAIL case {index}: {reason}: {cases[index][:200]!r}" if index >= 0 else f"mutate: FAIL {reason}")
    if failures:
        print(f"mutate: {len(failures)} failure(s)")
        return 1
    print("mutate: 0 answers of 500, 0 hangs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
