"""The pieces the browser tests share: the real `jotter serve` on a free port, headless Chromium
through chromedriver (Debian's packages), and a small JSON client for the API."""

import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Debian's chromium and chromedriver only: Selenium Manager must never download a browser.
os.environ["SE_OFFLINE"] = "true"
# JOTTER_BROWSER_TLS=1: every server serves HTTPS with a throwaway certificate, so Chromium
# speaks HTTP/2 to it (ALPN); the browsers accept that certificate.
TLS = os.environ.get("JOTTER_BROWSER_TLS") == "1"


def throwaway_certificate():
    """A self-signed certificate for 127.0.0.1 in a new folder: (folder, cert.pem, key.pem)."""
    folder = tempfile.mkdtemp(prefix="jotter-browser-tls-")
    certificate, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return folder, certificate, key


class Server:
    """`jotter serve --port 0` on a temporary data folder; `restart()` keeps port and data."""

    def __init__(self, binary, data=None, port=0, arguments=()):
        self.binary = binary
        self.arguments = list(arguments)
        self.data = data or tempfile.mkdtemp(prefix="jotter-browser-")
        self.owns_data = data is None
        self.port = port
        self.log = []
        self.process = None
        self.tls_folder = None
        self.context = None
        if TLS:
            self.tls_folder, certificate, key = throwaway_certificate()
            self.arguments += ["--tls-cert", certificate, "--tls-key", key]
            self.context = ssl.create_default_context(cafile=certificate)
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            [self.binary, "serve", "--port", str(self.port), "--data", self.data, "--quiet", *self.arguments],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        self.log.append(line)
        match = re.search(r"https?://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"jotter did not start: {line}{self.process.stderr.read()}")
        self.port = int(match.group(1))
        threading.Thread(target=self._drain, args=(self.process,), daemon=True).start()

    def _drain(self, process):
        for line in process.stderr:
            self.log.append(line)

    @property
    def url(self):
        return f"{'https' if TLS else 'http'}://127.0.0.1:{self.port}"

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self):
        self.stop()
        self.start()

    def close(self):
        self.stop()
        if self.owns_data:
            shutil.rmtree(self.data, ignore_errors=True)
        if self.tls_folder:
            shutil.rmtree(self.tls_folder, ignore_errors=True)

    # The API, for arranging and checking what the browser did.

    def request(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10, context=self.context) as response:
                text = response.read().decode()
                return response.status, dict(response.headers), json.loads(text) if text.startswith("{") else text
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            return error.code, dict(error.headers), json.loads(text) if text.startswith("{") else text

    def create(self, body):
        status, _, answer = self.request("POST", "/notes", {"body": body})
        assert status == 201, answer
        return answer["note"]

    def update(self, note_id, body):
        status, _, answer = self.request("PUT", f"/notes/{note_id}", {"body": body})
        assert status == 200, answer
        return answer["note"]

    def delete(self, note_id):
        status, _, answer = self.request("DELETE", f"/notes/{note_id}")
        assert status == 200, answer

    def note(self, note_id):
        status, _, answer = self.request("GET", f"/notes/{note_id}")
        return answer["note"] if status == 200 else None

    def notes(self):
        return self.request("GET", "/notes?limit=1000")[2]["notes"]


def chrome(timezone="UTC", width=1280, height=800):
    """Headless Chromium (as root it needs --no-sandbox) with a throwaway profile."""
    profile = tempfile.mkdtemp(prefix="jotter-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in (["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
                     "--disable-backgrounding-occluded-windows", "--lang=en-US",
                     f"--window-size={width},{height}", f"--user-data-dir={profile}"]
                     + (["--ignore-certificate-errors"] if TLS else [])):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    environment = dict(os.environ, TZ=timezone)
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver", env=environment)
    driver = webdriver.Chrome(options=options, service=service)
    driver.profile_directory = profile
    return driver


def quit_chrome(driver):
    driver.quit()
    shutil.rmtree(driver.profile_directory, ignore_errors=True)


def wait(driver, condition, timeout=10, message=""):
    """Polls `condition(driver)` until it is truthy; returns its value."""
    return WebDriverWait(driver, timeout, poll_frequency=0.05,
                         ignored_exceptions=[StaleElementReferenceException]).until(condition, message)


def wait_until(predicate, timeout=10, message="condition"):
    """Polls a plain predicate (for state outside the browser)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {message}")
