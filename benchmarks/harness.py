"""What the browser tests, benchmarks and screenshots share: the app served, Chromium, RSS.

The server is ``streamlit run app/main.py`` as a subprocess on a free port; Chromium is
Debian's package, driven by Playwright with its executable path (Playwright's own
browser download is never used). Playwright is imported only by the functions that
drive the browser, so the tests can import this module, and skip, without it.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT = 90.0

#: True once the script has run and every Plotly chart on the page has drawn its svg.
SETTLED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.dataset.testScriptState !== 'notRunning'
        || app.dataset.testConnectionState !== 'CONNECTED') return false;
    const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
    return charts.length > 0
        && [...charts].every(c => c.querySelector('.js-plotly-plot .main-svg'));
}"""


class ServerError(RuntimeError):
    """The server did not come up; the message ends with its log."""


def free_port():
    """A TCP port nobody is listening on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthy(url):
    """Whether the Streamlit server at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


@contextlib.contextmanager
def serve_app(script, *options, cwd=None):
    """Run ``streamlit run script`` on a free port until the block ends.

    Parameters
    ----------
    script : str or Path
        The Streamlit script.
    *options : str
        More command-line options for ``streamlit run``, e.g.
        ``"--client.showErrorDetails", "full"``.
    cwd : str or Path, optional
        Where the server starts, which decides the ``.streamlit/config.toml`` it reads;
        by default the project root for ``app/main.py``, else the script's folder.

    Yields
    ------
    url : str, e.g. ``http://localhost:PORT``
    pid : int, the server's process id
    """
    script = Path(script)
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.headless", "true",
        "--server.port", str(port),
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        *options,
    ]  # fmt: skip
    url = f"http://localhost:{port}"
    with tempfile.TemporaryFile() as log:
        if cwd is None:
            cwd = script.parent.parent if script.parent.name == "app" else script.parent
        server = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT
            while not healthy(url):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-4000:].decode(errors="replace")
                    raise ServerError(f"the Streamlit server did not come up on {url}:\n{tail}")
                time.sleep(0.25)
            yield url, server.pid
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def launch_chromium(playwright):
    """Launch the system Chromium, headless, from a sync or an async Playwright.

    Returns
    -------
    Browser, or with the async API an awaitable of one
    """
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


@contextlib.contextmanager
def chromium():
    """Headless Chromium under Playwright's sync API until the block ends; yields the Browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            with contextlib.suppress(Exception):  # already gone if the driver died first
                browser.close()


def rss_mb(pid):
    """Resident memory of a process in MB, from /proc (0 when it cannot be read)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class RssSampler:
    """Sample a process's resident memory every half second; keeps the peak."""

    def __init__(self, pid, interval=0.5):
        self.pid, self.interval, self.peak_mb = pid, interval, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, rss_mb(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, rss_mb(self.pid))
