#!/usr/bin/env python3
"""A soak: mixed load against a running Jotter server for a while, with its resident memory and
open files sampled; fails on any error answer (5xx, a dropped connection) or when either drifts
more than 10 % between the first sampled minute (after a warm-up) and the last.

    python3 Tests/Hostile/soak.py --port 8080 --pid 1234 --seconds 600
"""
import argparse
import http.client
import json
import random
import socket
import sys
import threading
import time

from proc import open_files, rss_kib

BOUNDARY = "SoakBoundary"


class Load:
    def __init__(self, port, seed):
        self.port = port
        self.rng = random.Random(seed)
        self.requests = 0
        self.errors = []
        self.lock = threading.Lock()
        self.stop = False

    def record(self, error):
        with self.lock:
            self.errors.append(error)

    def call(self, conn, method, path, body=None, headers=None, expect=(200, 201, 204, 304, 404, 412)):
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        with self.lock:
            self.requests += 1
        if response.status not in expect:
            self.record(f"{method} {path}: {response.status} {data[:200]!r}")
        return response.status, data

    def worker(self, index):
        rng = random.Random(index)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        mine = []
        while not self.stop:
            try:
                kind = rng.randrange(10)
                if kind < 3:
                    self.call(conn, "GET", "/hello?name=soak")
                elif kind < 5:
                    status, data = self.call(conn, "POST", "/notes", body="body=" + "x" * rng.randrange(1, 20_000),
                                             headers={"Content-Type": "application/x-www-form-urlencoded"})
                    if status == 201:
                        mine.append(json.loads(data)["note"]["id"])
                elif kind == 5 and mine:
                    self.call(conn, "PUT", f"/notes/{rng.choice(mine)}", body='{"body":"changed"}',
                              headers={"Content-Type": "application/json"})
                elif kind == 6 and mine:
                    self.call(conn, "DELETE", f"/notes/{mine.pop(0)}")
                elif kind == 7:
                    self.call(conn, "GET", "/notes?limit=50&q=x")
                elif kind == 8:
                    body = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.bin\"\r\n"
                            f"Content-Type: application/octet-stream\r\n\r\n" + "u" * rng.randrange(1, 200_000) + f"\r\n--{BOUNDARY}--\r\n")
                    status, data = self.call(conn, "POST", "/uploads", body=body,
                                             headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
                    if status == 201:
                        upload = json.loads(data)["uploads"][0]["id"]
                        self.call(conn, "GET", f"/uploads/{upload}/content", headers={"Range": "bytes=0-99"}, expect=(206,))
                        self.call(conn, "DELETE", f"/uploads/{upload}")
                else:
                    self.call(conn, "GET", "/notes?limit=20")
            except (OSError, http.client.HTTPException) as error:
                self.record(f"worker {index}: {error!r}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def events(self):
        """Event streams that open, read for a while and close, over and over."""
        while not self.stop:
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
                sock.sendall(f"GET /notes/events HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode())
                until = time.monotonic() + 5
                first = True
                while time.monotonic() < until and not self.stop:
                    data = sock.recv(65536)
                    if not data:
                        self.record("event stream closed by the server")
                        break
                    if first and not data.startswith(b"HTTP/1.1 200 "):
                        self.record("event stream refused: " + repr(data.split(b"\r\n", 1)[0]))
                        break
                    first = False
                sock.close()
            except OSError as error:
                self.record(f"events: {error!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--workers", type=int, default=6)
    args = parser.parse_args()
    load = Load(args.port, 1313)
    threads = [threading.Thread(target=load.worker, args=(i,)) for i in range(args.workers)]
    threads += [threading.Thread(target=load.events) for _ in range(2)]
    for thread in threads:
        thread.start()
    samples = []
    start = time.monotonic()
    warmup = min(60, args.seconds / 10)
    while time.monotonic() - start < args.seconds:
        time.sleep(5)
        elapsed = time.monotonic() - start
        if elapsed >= warmup:
            samples.append((elapsed, rss_kib(args.pid), open_files(args.pid), load.requests))
    load.stop = True
    for thread in threads:
        thread.join()
    window = max(1, len(samples) // 10)
    first, last = samples[:window], samples[-window:]
    def mean(rows, column):
        return sum(row[column] for row in rows) / len(rows)
    rss0, rss1 = mean(first, 1), mean(last, 1)
    fds0, fds1 = mean(first, 2), mean(last, 2)
    seconds = time.monotonic() - start
    print(f"soak: {load.requests} requests in {seconds:.0f} s ({load.requests / seconds:.0f}/s), {len(load.errors)} errors")
    print(f"soak: RSS {rss0 / 1024:.1f} MiB at first, {rss1 / 1024:.1f} MiB at the end ({(rss1 / rss0 - 1) * 100:+.1f} %); "
          f"peak {max(row[1] for row in samples) / 1024:.1f} MiB")
    print(f"soak: open files {fds0:.1f} at first, {fds1:.1f} at the end ({(fds1 / fds0 - 1) * 100:+.1f} %)")
    for error in load.errors[:10]:
        print(f"soak: ERROR {error}")
    ok = not load.errors and abs(rss1 / rss0 - 1) <= 0.10 and abs(fds1 / fds0 - 1) <= 0.10
    print("soak: ok" if ok else "soak: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
