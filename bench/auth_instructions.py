#!/usr/bin/env python3
"""Callgrind instructions per request: authenticated against unauthenticated GET /notes/{id},
and the same request over HTTPS against plain HTTP.

The server runs under valgrind --tool=callgrind with one engine thread and --auth off (so the
same server answers with and without a Bearer token, which it then verifies). After a warm-up,
the counters are zeroed with callgrind_control -z, N requests of one kind go over one
keep-alive connection, and callgrind_control -d dumps the counts; then the next kind.

    python3 bench/auth_instructions.py --jotter .build/release/jotter [--requests 2000] [--tls]

--postgres runs the server on a throwaway PostgreSQL cluster (the `scale` scenario's, durable
settings) instead of SQLite: the authenticated request then takes from the shared rate limit's
`limit_buckets` rows, so the difference is that limiter's cost in the server (PostgreSQL's own
CPU is not counted). Needs Debian's postgresql.
--tls also measures HTTPS (a certificate made with openssl): per request on one keep-alive
connection, and per new connection (handshake included, one request each).
Needs valgrind (scripts/install-bench-deps) and, for --tls, openssl.
"""
import argparse, glob, http.client, os, re, shutil, socket, ssl, subprocess, sys, tempfile, time


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


class Measured:
    """The server under callgrind on `data`, with `extra` serve arguments."""

    def __init__(self, command, data, extra, context=None):
        self.out = os.path.join(data, f"callgrind-{len(os.listdir(data))}.out")
        self.port = free_port()
        self.context = context
        self.process = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}", "--dump-instr=no",
                                         *command, "--port", str(self.port), "--data", data, "--threads", "1", "--quiet",
                                         "--auth", "off", *extra], stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.time() > deadline or self.process.poll() is not None:
                    raise SystemExit("the server did not start under valgrind")
                time.sleep(0.5)

    def connect(self):
        if self.context:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=60, context=self.context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    keep = None

    def counted(self, work, count, name=None):
        """Instructions per unit of `work()` run `count` times between a zero and a dump."""
        for old in glob.glob(self.out + ".*"):
            os.remove(old)
        subprocess.run(["callgrind_control", "-z", str(self.process.pid)], check=True, capture_output=True)
        for _ in range(count):
            work()
        subprocess.run(["callgrind_control", "-d", str(self.process.pid)], check=True, capture_output=True)
        dumps = sorted(glob.glob(self.out + ".*"), key=os.path.getmtime)
        if self.keep and name:
            shutil.copy(dumps[-1], os.path.join(self.keep, "callgrind." + name))
        return total_instructions(dumps[-1]) / count

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=120)


def get(conn, path, headers):
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"GET {path} answered {response.status}")


def create_note(server, token):
    conn = server.connect()
    conn.request("POST", "/notes", body="body=" + "x" * 200, headers={"Content-Type": "application/x-www-form-urlencoded",
                                                                      "Authorization": f"Bearer {token}"})
    note = re.search(r'"id":"(\d+)"', conn.getresponse().read().decode()).group(1)
    conn.close()
    return f"/notes/{note}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jotter", default=".build/release/jotter")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--tls", action="store_true", help="also measure HTTPS")
    parser.add_argument("--postgres", action="store_true", help="the store on a throwaway PostgreSQL cluster")
    parser.add_argument("--keep", help="a folder to copy each kind's callgrind dump into (for callgrind_annotate)")
    args = parser.parse_args()
    jotter = os.path.abspath(args.jotter)
    server_binary = os.path.join(os.path.dirname(jotter), "jotter-server")
    data = tempfile.mkdtemp(prefix="jotter-auth-bench-")
    if os.path.exists(server_binary):
        # valgrind 3.19 cannot read the DWARF 5 of Swift 6.3 release binaries and gives up:
        # run a copy without debug information (code and symbols stay, so do the counts).
        stripped = os.path.join(tempfile.mkdtemp(prefix="jotter-auth-bin-"), "jotter-server-nodebug")
        subprocess.run(["objcopy", "--strip-debug", server_binary, stripped], check=True)
        command = [stripped]
    else:
        command = [jotter, "serve"]
    pg = None
    try:
        place = []
        if args.postgres:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from scenarios.scale import Postgres
            pg_folder = tempfile.mkdtemp(prefix="jotter-auth-pg-")
            pg = Postgres(os.path.join(pg_folder, "pg"))
            place = ["--database", pg.url]
        subprocess.run([jotter, "users", "add", "bench", "--data", data, *place], input=b"bench-password\n", check=True,
                       capture_output=True)
        token = subprocess.run([jotter, "tokens", "create", "--user", "bench", "--data", data, *place], check=True,
                               capture_output=True).stdout.decode().strip()
        bearer = {"Authorization": f"Bearer {token}"}
        results = {}

        server = Measured(command, data, place)
        path = create_note(server, token)
        conn = server.connect()
        for headers in [{}, bearer]:
            for _ in range(args.warmup):
                get(conn, path, headers)
        Measured.keep = args.keep
        results["plain, unauthenticated"] = server.counted(lambda: get(conn, path, {}), args.requests, "unauthenticated")
        results["plain, authenticated"] = server.counted(lambda: get(conn, path, bearer), args.requests, "authenticated")
        conn.close()
        results["plain, new connection each"] = server.counted(lambda: fresh(server, path), args.requests // 4)
        server.stop()

        if args.tls:
            cert, key = os.path.join(data, "cert.pem"), os.path.join(data, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2"],
                           check=True, capture_output=True)
            server = Measured(command, data, ["--tls-cert", cert, "--tls-key", key, *place],
                              context=ssl.create_default_context(cafile=cert))
            conn = server.connect()
            for _ in range(args.warmup):
                get(conn, path, {})
            results["TLS, unauthenticated"] = server.counted(lambda: get(conn, path, {}), args.requests, "tls")
            conn.close()
            results["TLS, new connection each"] = server.counted(lambda: fresh(server, path), args.requests // 4)
            server.stop()

        for name, value in results.items():
            print(f"{name:28} GET /notes/{{id}}: {value:,.0f} instructions per request")
        print(f"authenticated / unauthenticated: {results['plain, authenticated'] / results['plain, unauthenticated']:.3f}")
        if args.tls:
            print(f"TLS / plain, keep-alive: {results['TLS, unauthenticated'] / results['plain, unauthenticated']:.2f}; "
                  f"new connection each: {results['TLS, new connection each'] / results['plain, new connection each']:.1f}")
        print(f"({args.requests} keep-alive requests per kind after {args.warmup} to warm up; {args.requests // 4} connections)")
    finally:
        if pg:
            pg.stop()
            shutil.rmtree(pg_folder, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)


def fresh(server, path):
    conn = server.connect()
    get(conn, path, {})
    conn.close()


if __name__ == "__main__":
    main()
