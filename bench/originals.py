"""The tutorials' original servers (bench/peers/), each started on a free loopback port with
its own config, pid and log files in a temp dir, and stopped with all its processes:

  php      echo_hello.php under nginx + php-fpm (static pool of 4, OPcache)
  webrick  the iOS Recipes echo/upload server on Ruby's WEBrick
  httpbin  httpbin from PyPI under gunicorn (the reference for /echo)
  laravel  the Laravel notes resource on Debian's php-laravel-framework, SQLite,
           nginx + php-fpm (static pool of 4), APP_DEBUG=false, config and route caches, OPcache

and jotter itself. Used by the `peers` benchmark scenario and by bench/compat.py.
Python 3 standard library only; scripts/install-peer-deps installs the servers."""
import glob, os, pwd, shutil, subprocess, time
from dataclasses import dataclass, field

from harness import (BENCH, REPO, BenchError, Server, cpu_seconds, http_get, jotter_argv,
                     memory_mib, start_server)

PEERS = os.path.join(BENCH, "peers")
VENV = os.path.join(REPO, ".venv-test")
# Workers of each original server's pool: the static pool of 4 for php-fpm; gunicorn
# gets as many sync workers (httpbin's own docs run it under gunicorn).
POOL = 4
# The original servers, in the order the harness runs them.
ORIGINALS = ("php", "webrick", "httpbin", "laravel")


@dataclass
class Peer:
    """One server made of one or more process trees (nginx + php-fpm), all counted together."""
    name: str
    port: int
    servers: list = field(default_factory=list)   # harness.Server, the front one last
    workdir: str = ""                              # where the peer keeps its files

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def idle_rss(self) -> float:
        return sum(s.idle_rss for s in self.servers)

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(s.proc.pid) for s in self.servers)

    def memory_mib(self, key: str) -> float:
        return sum(memory_mib(s.proc.pid, key) for s in self.servers)

    def check_alive(self):
        for s in self.servers:
            s.check_alive()

    def log_tail(self) -> str:
        return "\n".join(f"--- {s.name}:\n{s.log_tail()}" for s in self.servers)

    def stop(self):
        for s in reversed(self.servers):   # the front first, so nothing reaches a dead backend
            s.stop()


def _render(template: str, out: str, **values) -> str:
    with open(os.path.join(PEERS, template)) as f:
        text = f.read()
    for k, v in values.items():
        text = text.replace(f"@{k}@", str(v))
    with open(out, "w") as f:
        f.write(text)
    return out


def _user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def _php_fpm_binary() -> str:
    found = sorted(glob.glob("/usr/sbin/php-fpm*"))
    if not found:
        raise BenchError("php-fpm not found: run scripts/install-peer-deps")
    return found[-1]


def _wait_for(path: str, proc: subprocess.Popen, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise BenchError(f"{what} did not create {path} (exit={proc.poll()})")
        time.sleep(0.05)


def _nginx_php(name: str, root: str, tmp: str, timeout: float, ready) -> Peer:
    """php-fpm (static pool of POOL, OPcache) on a unix socket, nginx (1 worker) in front."""
    os.makedirs(tmp, exist_ok=True)
    fpm_conf = _render("php/php-fpm.conf.template", os.path.join(tmp, "php-fpm.conf"),
                       TMP=tmp, USER=_user())
    sock = os.path.join(tmp, "php-fpm.sock")
    # -R: php-fpm refuses to run its workers as root without it (CI runs as root).
    # OPcache's shared-memory settings can only be given to the master.
    fpm = start_server(f"{name}-php-fpm", lambda port: [
        _php_fpm_binary(), "--nodaemonize", "--fpm-config", fpm_conf, "--prefix", tmp, "-R",
        "-d", "opcache.enable=1", "-d", "opcache.validate_timestamps=0",
        "-d", "opcache.memory_consumption=128", "-d", "opcache.interned_strings_buffer=16",
        "-d", "opcache.max_accelerated_files=20000"],
        tmp, timeout, ready=lambda s: os.path.exists(sock), wait_port=False)
    try:
        def nginx_argv(port):
            conf = _render("php/nginx.conf.template", os.path.join(tmp, "nginx.conf"),
                           TMP=tmp, USER=_user(), WORKERS=1, PORT=port, ROOT=root)
            return ["nginx", "-p", tmp, "-c", conf, "-e", os.path.join(tmp, "error.log")]
        front = start_server(f"{name}-nginx", nginx_argv, tmp, timeout, ready=ready)
    except BaseException:
        fpm.stop()
        raise
    return Peer(name, front.port, [fpm, front], tmp)


def start_php(tmp: str, timeout: float = 15) -> Peer:
    """echo_hello.php as the tutorial lists it, served by nginx + php-fpm."""
    work = os.path.join(tmp, "php")
    root = os.path.join(work, "root")
    os.makedirs(root, exist_ok=True)
    shutil.copy(os.path.join(PEERS, "php", "echo_hello.php"), root)

    def ready(srv):
        return http_post(srv.base + "/echo_hello.php", b"name=ready")[1] == b"Hello ready!"
    return _nginx_php("php", root, work, timeout, ready)


def prepare_laravel(tmp: str) -> str:
    """A copy of the Laravel app in tmp, its SQLite table migrated, config and routes cached
    (with APP_DEBUG=false and the database path baked into the config cache)."""
    app = os.path.join(tmp, "laravel-app")
    if os.path.exists(app):
        return app
    shutil.copytree(os.path.join(PEERS, "laravel"), app)
    for d in ("storage/framework/views", "storage/framework/cache", "storage/logs",
              "bootstrap/cache", "database"):
        os.makedirs(os.path.join(app, d), exist_ok=True)
    db = os.path.join(app, "database", "database.sqlite")
    open(db, "a").close()
    env = dict(os.environ, APP_ENV="production", APP_DEBUG="false", DB_DATABASE=db)
    for cmd in (["migrate", "--force"], ["config:cache"], ["route:cache"]):
        p = subprocess.run(["php", "artisan", *cmd], cwd=app, env=env, capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            raise BenchError(f"laravel: php artisan {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return app


def start_laravel(tmp: str, timeout: float = 15) -> Peer:
    """The notes app (prepared once per tmp by prepare_laravel) under nginx + php-fpm."""
    app = prepare_laravel(tmp)
    work = os.path.join(tmp, "laravel")
    return _nginx_php("laravel", os.path.join(app, "public"), work, timeout,
                      lambda srv: http_get(srv.base + "/notes")[0] == 200)


def start_webrick(tmp: str, timeout: float = 15) -> Peer:
    """ruby webserver.rb PORT, in a folder of its own (it saves uploads where it runs)."""
    work = os.path.join(tmp, "webrick")
    os.makedirs(work, exist_ok=True)
    script = os.path.join(PEERS, "webrick", "webserver.rb")
    srv = start_server("webrick", lambda port: ["ruby", script, str(port)], work, timeout,
                       ready=lambda s: http_get(s.base + "/")[0] == 200, cwd=work)
    return Peer("webrick", srv.port, [srv], work)


def start_httpbin(tmp: str, timeout: float = 30) -> Peer:
    """httpbin (PyPI) under gunicorn with POOL sync workers, from .venv-test."""
    gunicorn = os.path.join(VENV, "bin", "gunicorn")
    if not os.access(gunicorn, os.X_OK):
        raise BenchError("gunicorn not found in .venv-test: run scripts/install-peer-deps")
    work = os.path.join(tmp, "httpbin")
    os.makedirs(work, exist_ok=True)
    srv = start_server("httpbin", lambda port: [
        gunicorn, "--workers", str(POOL), "--bind", f"127.0.0.1:{port}", "--log-level",
        "warning", "--pid", os.path.join(work, "gunicorn.pid"), "httpbin:app"],
        work, timeout, ready=lambda s: http_get(s.base + "/get")[0] == 200, cwd=work)
    return Peer("httpbin", srv.port, [srv], work)


def start_jotter(args, data: str, tmp: str, *extra: str) -> Peer:
    srv = start_server("jotter", jotter_argv(args, data, *extra), tmp, args.start_timeout)
    return Peer("jotter", srv.port, [srv], data)


def start(name: str, args, tmp: str) -> Peer:
    """Any peer by name; jotter keeps its data in tmp/jotter-data."""
    if name == "jotter":
        return start_jotter(args, os.path.join(tmp, "jotter-data"), tmp)
    starter = {"php": start_php, "webrick": start_webrick, "httpbin": start_httpbin,
               "laravel": start_laravel}[name]
    return starter(tmp, args.start_timeout)


def http_post(url: str, body: bytes, content_type: str = "application/x-www-form-urlencoded",
              timeout: float = 5.0):
    """(status, body bytes) of one POST; (0, b"") when the server cannot be reached."""
    import urllib.error, urllib.request
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""
