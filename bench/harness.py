"""What every benchmark scenario shares: servers started on free loopback ports, /proc
accounting (CPU-seconds, RSS), wrk runs and their parsing, the docs/benchmarks.md sections.
Python 3 standard library only."""
import datetime, os, platform, pwd, re, resource, shlex, signal, socket, subprocess, time
import urllib.error, urllib.request
from dataclasses import dataclass, field
from typing import Callable, Optional

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
BUILD = os.path.join(BENCH, ".build")
CLK_TCK = os.sysconf("SC_CLK_TCK")
WARMUP_S = 2


class BenchError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sh(cmd) -> str:
    """stdout+stderr of a short command ('' if it cannot run)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def raise_nofile(n: int):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < n:
        try:  # root may raise the hard limit too (the servers started from here inherit it)
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
            return
        except (ValueError, OSError):
            pass
    want = n if hard == resource.RLIM_INFINITY else min(n, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


# ---------------------------------------------------------------- /proc ---

def process_tree(root: int) -> list:
    """root and all its descendants (nginx = master + workers)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def tree_sum(root: int, name: str, value: Callable[[str], int]) -> int:
    """Sum value(text of /proc/PID/name) over root's process tree."""
    total = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/{name}") as f:
                total += value(f.read())
        except (OSError, IndexError, ValueError):
            pass  # a process that just exited
    return total


def cpu_seconds(root: int) -> float:
    """utime+stime (fields 14 and 15 of /proc/PID/stat) of the tree, in seconds."""
    def ticks(stat):
        fields = stat.rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    return tree_sum(root, "stat", ticks) / CLK_TCK


def memory_mib(root: int, key: str) -> float:
    """VmRSS or VmHWM (kB in /proc/PID/status) summed over the tree, in MiB."""
    kb = lambda status: int(re.search(rf"^{key}:\s+(\d+)", status, re.M)[1])
    return tree_sum(root, "status", kb) / 1024


# -------------------------------------------------------------- servers ---

@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen
    log: str
    argv: list = field(default_factory=list)
    idle_rss: float = 0.0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, n: int = 2000) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def problems(self) -> list:
        """Lines of the server's log other than jotter's `info` lines and its stop messages
        (warnings, errors, crash output)."""
        quiet = re.compile(r"^\S+ info |^(SIGTERM|SIGINT) received|^stopped$")
        return [l for l in self.log_tail(1 << 20).splitlines() if l.strip() and not quiet.match(l)]

    def check_alive(self):
        if self.proc.poll() is not None:
            raise BenchError(f"{self.name} died (exit {self.proc.returncode}):\n{self.log_tail()}")

    def stop(self, timeout: float = 5) -> dict:
        """SIGTERM the process group (nginx workers too), SIGKILL after `timeout` s.
        Returns how it went: seconds to exit, exit code, whether SIGKILL was needed."""
        t0 = time.monotonic()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                pass
        return {"stop_s": time.monotonic() - t0, "exit": self.proc.poll(),
                "killed": self.proc.returncode == -signal.SIGKILL}


def http_get(url: str, timeout=2.0, headers: Optional[dict] = None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                    timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, ""


def start_server(name: str, argv_for: Callable[[int], list], tmp: str, timeout: float,
                 env: Optional[dict] = None, log_name: Optional[str] = None,
                 ready: Optional[Callable[["Server"], bool]] = None,
                 cwd: Optional[str] = None, wait_port: bool = True) -> Server:
    """Starts argv_for(port) on a free port in its own session (in folder `cwd`); returns once
    ready(server) is true — by default, once /healthz is 200.
    Idle RSS (`Server.idle_rss`) is read once the port accepts, before any HTTP request
    (wait_port=False: a server that listens on no TCP port, e.g. php-fpm on a unix socket;
    idle RSS is then read once it is ready)."""
    port = free_port()
    argv = argv_for(port)
    log = os.path.join(tmp, f"{log_name or name}.log")
    with open(log, "wb") as logf:
        proc = subprocess.Popen(argv, env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL,
                                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=cwd)
    srv = Server(name, port, proc, log, argv)
    deadline = time.monotonic() + timeout

    def wait_until(ready):
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        srv.stop()
        raise BenchError(f"{name} failed to start on port {port} "
                         f"(exit={proc.poll()}): {shlex.join(argv)}\n{srv.log_tail()}")

    # Port open (TCP connect only, no HTTP request yet) -> idle RSS; then ready = /healthz 200.
    if wait_port:
        wait_until(lambda: socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                   or True)
        time.sleep(0.3)
        srv.idle_rss = memory_mib(proc.pid, "VmRSS")
    wait_until(lambda: ready(srv) if ready else http_get(srv.base + "/healthz")[0] == 200)
    if not wait_port:
        time.sleep(0.3)
        srv.idle_rss = memory_mib(proc.pid, "VmRSS")
    return srv


def jotter_argv(args, data: str, *extra: str) -> Callable[[int], list]:
    """`jotter serve` on 127.0.0.1 with args.threads engine threads, quiet, data in `data`."""
    os.makedirs(data, exist_ok=True)
    return lambda port: [args.jotter, "serve", "--host", "127.0.0.1", "--port", str(port),
                         "--threads", str(args.threads), "--quiet", "--data", data, *extra]


def nginx_argv(workers: int, tmp: str) -> Callable[[int], list]:
    """nginx with `workers` workers, config `peers/nginx/nginx.conf.template` rendered into
    `tmp` (which also holds its pid file, logs and temp dirs); workers run as this user."""
    os.makedirs(tmp, exist_ok=True)
    with open(os.path.join(BENCH, "peers", "nginx", "nginx.conf.template")) as f:
        template = f.read()

    def argv(port):
        conf = template
        user = pwd.getpwuid(os.geteuid()).pw_name
        for k, v in {"WORKERS": workers, "TMP": tmp, "PORT": port, "USER": user}.items():
            conf = conf.replace(f"@{k}@", str(v))
        path = os.path.join(tmp, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        return ["nginx", "-p", tmp, "-c", path, "-e", os.path.join(tmp, "error.log")]
    return argv


class ForeignLoad:
    """CPU used by everything but this harness and its children (servers, wrk) while a
    scenario runs: busy time from /proc/stat minus our own rusage. Children count once they
    have been waited for, which every scenario does before it returns."""
    def __init__(self):
        self.t0, self.busy0, self.own0 = time.monotonic(), self._busy(), self._own()

    @staticmethod
    def _busy() -> float:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v[i] for i in (0, 1, 2, 5, 6)) / CLK_TCK  # user nice system irq softirq

    @staticmethod
    def _own() -> float:
        a, b = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

    def cores(self) -> float:
        """Average number of cores the rest of the machine kept busy."""
        wall = time.monotonic() - self.t0
        other = (self._busy() - self.busy0) - (self._own() - self.own0)
        return max(0.0, other / wall) if wall > 0 else 0.0


# ------------------------------------------------------------------ wrk ---

UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def parse_wrk(out: str) -> dict:
    def num(pattern):
        m = re.search(pattern, out, re.M)
        if not m:
            raise BenchError(f"cannot parse wrk output ({pattern}):\n{out}")
        return m.groups()

    rps, = num(r"^Requests/sec:\s+([\d.]+)")
    requests, = num(r"^\s*(\d+) requests in")
    p99, unit = num(r"^\s+99%\s+([\d.]+)(us|ms|s|m|h)\s*$")
    errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": float(rps), "requests": int(requests), "p99_ms": float(p99) * UNIT_MS[unit],
            "errors": errors, "non2xx": int(m.group(1)) if m else 0}


def wrk_command(url: str, duration: int, connections: int, script: Optional[str] = None,
                script_args: tuple = ()) -> list:
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script:
        cmd += ["-s", os.path.join(BENCH, script)]
    cmd.append(url)
    if script_args:
        cmd += ["--", *map(str, script_args)]
    return cmd


def wrk(url: str, duration: int, connections: int, script: Optional[str] = None,
        script_args: tuple = ()) -> str:
    """Runs wrk -t1 (script: a path relative to bench/, or absolute) and returns its output."""
    cmd = wrk_command(url, duration, connections, script, script_args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    if p.returncode != 0:
        raise BenchError(f"wrk failed: {p.stderr}{p.stdout}")
    return p.stdout


def load(srv: Server, path: str, duration: int, connections: int, script: Optional[str] = None,
         script_args: tuple = (), label: str = "", warmup: int = WARMUP_S) -> dict:
    """wrk warm-up, then the measured wrk run with the server's CPU-seconds around it.
    `srv`: a Server, or anything with .name, .base, .check_alive() and .cpu_seconds() (a
    server of several process trees, e.g. nginx + php-fpm)."""
    url = srv.base + path
    server_cpu = getattr(srv, "cpu_seconds", None) or (lambda: cpu_seconds(srv.proc.pid))
    label = label or f"{srv.name} {path}"
    warm = {"requests": 0, "non2xx": 0}
    if warmup:
        print(f"  {label}: warm-up {warmup}s ...", flush=True)
        warm = parse_wrk(wrk(url, warmup, connections, script, script_args))
        time.sleep(0.5)
    print(f"  {label}: measuring {duration}s, -c{connections} ...", flush=True)
    cpu0 = server_cpu()
    out = wrk(url, duration, connections, script, script_args)
    cpu = server_cpu() - cpu0
    srv.check_alive()
    r = parse_wrk(out)
    r["cpu_s"] = cpu
    r["rps_per_cpu"] = r["requests"] / cpu if cpu > 0 else float("nan")
    r["connections"] = connections
    r["warmup_requests"] = warm["requests"] - warm["non2xx"]
    if r["errors"] or r["non2xx"]:
        print(f"  WARNING {label}: {r['errors']} socket errors, {r['non2xx']} non-2xx/3xx",
              flush=True)
    return r


# ------------------------------------------------------------ reporting ---

def f0(x: float) -> str:
    return f"{x:,.0f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def log_warning(what: str, lines: list) -> list:
    """A report line for server log output that is not routine (empty list if none)."""
    if not lines:
        return []
    shown = "; ".join(f"`{l.strip()[:160]}`" for l in lines[:3])
    return [f"- WARNING: {what} logged {len(lines)} line(s) besides info: {shown}"]


def now() -> str:
    return f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}"


def machine_info(tools=()) -> str:
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    info = [f"nproc {os.cpu_count()} ({cpu}), kernel {platform.release()}",
            (sh(["wrk", "--version"]).splitlines() or ["wrk ?"])[0].split(" Copyright")[0]]
    if "nginx" in tools:
        info.append(sh(["nginx", "-v"]))
    if "go" in tools:
        info.append(sh(["go", "version"]))
    if "sqlite" in tools:
        info.append("SQLite " + (sh(["dpkg-query", "-W", "-f=${Version}", "libsqlite3-0"]) or "?"))
    rev = sh(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    if re.fullmatch(r"[0-9a-f]{4,40}", rev):
        dirty = " (+ uncommitted changes)" if sh(["git", "-C", REPO, "status", "--porcelain",
                                                  "--untracked-files=no", "--", ".",
                                                  ":(exclude)docs/benchmarks.md"]) else ""
        info.append(f"jotter commit {rev}{dirty}")
    return "; ".join(info)


def reproduce_command(args, scenario: str, options: list) -> str:
    """`python3 bench/run.py ...` for one scenario; options = [(flag, value, default), ...],
    only those differing from their default are written."""
    cmd = ["python3", "bench/run.py"]
    if getattr(args, "jotter", None):
        inside = os.path.commonpath([args.jotter, REPO]) == REPO
        cmd += ["--jotter", os.path.relpath(args.jotter, REPO) if inside else args.jotter]
    cmd += ["--scenario", scenario]
    for flag, value, default in options:
        if value != default:
            cmd += [flag, str(value)]
    return shlex.join(cmd)


HEADER = """# Jotter benchmarks

Generated by `bench/run.py` (see `bench/README.md`). Each scenario owns the section between its
markers; rerun to refresh it. Every section says how busy the rest of the machine was during its
run. Figures to quote: on a quiet machine, all scenarios, three rounds, one command:

```
make bench BENCH_ARGS="--rounds 3"
```
"""


def write_section(path: str, name: str, body: str):
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    if os.path.exists(path):
        with open(path) as f:
            doc = f.read()
    else:
        doc = HEADER
    section = f"{start}\n{body.strip()}\n{end}"
    if start in doc and end in doc and doc.index(start) < doc.index(end):
        doc = doc[:doc.index(start)] + section + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + section + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(doc)
