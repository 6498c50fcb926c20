"""Shared fixtures for the browser tests: the real app on a local server, and headless Chromium.

The Streamlit server starts once per test session, as a subprocess on a free port, and
is stopped when the session ends. Chromium is Debian's package (``/usr/bin/chromium``),
driven by Playwright; Playwright's own browser download is never used. Without that
browser the browser tests are skipped, unless the environment variable ``CI`` is set:
on CI a missing browser is a broken set-up, so the tests fail loudly instead.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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


def _unavailable(reason):
    """Skip, or fail on CI, where every browser test must run."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the browser tests may not be skipped)")
    pytest.skip(reason)


def free_port():
    """A TCP port nobody is listening on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url):
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


@pytest.fixture(scope="session")
def chromium_executable():
    """The path of the system Chromium, after checking Playwright and the browser exist."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    return str(CHROMIUM)


@pytest.fixture(scope="session")
def app_url(chromium_executable):
    """The base URL of the app, served by ``streamlit run app/main.py`` for the session."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ROOT / "app" / "main.py"),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--client.showErrorDetails",
        "full",  # a failing test shows the traceback, not the redacted notice
    ]
    url = f"http://localhost:{port}"
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT
            while not _healthy(url):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-4000:].decode(errors="replace")
                    pytest.fail(f"the Streamlit server did not come up on {url}:\n{tail}")
                time.sleep(0.25)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@pytest.fixture(scope="session")
def browser(chromium_executable):
    """One headless Chromium for the whole session."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_executable, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            with contextlib.suppress(Exception):
                chromium.close()


@pytest.fixture
def page(browser):
    """A fresh browser context and page; uncaught page errors are kept in ``page.errors``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    new_page = context.new_page()
    new_page.errors = []
    new_page.on("pageerror", lambda error: new_page.errors.append(str(error)))
    try:
        yield new_page
    finally:
        context.close()
