"""Serving a class: ``scripts/serve_class.sh 3`` (three replicas behind HAProxy) in six browsers.

The script starts once for the module. Six browser contexts, each with its own cookie jar
and a user agent of its own (so HAProxy's access log tells them apart), all come from
127.0.0.1, as a lecture hall behind one NAT address does. They must spread over the
replicas and keep theirs across slider steps, page switches, an upload and downloads;
between them they open every page under the proxy's Content-Security-Policy, which must
refuse nothing. Then one replica is killed by its printed pid, and its sessions must come
back on a live one: by themselves they reconnect, keep showing their view and run it
again from the link, so a page switch keeps their own text and settings with no reload;
a reload runs them there from the link too. The tests
run in this order and share the six sessions. Nothing leaves 127.0.0.1.

HAProxy is Debian's package: the script installs it when it is missing. If it cannot,
these tests are skipped, or fail when the environment variable ``CI`` is set.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_support import assert_healthy, query, slider, unplugged_page, wait_settled
from harness import (
    ClassServer,
    HAProxyMissingError,
    serve_class,
    tagged_user_agent,
)
from load import LABELS
from PIL import Image

from app import registry

pytestmark = [pytest.mark.browser, pytest.mark.serve_class]

ROOT = Path(__file__).resolve().parents[2]
N_SESSIONS = 6
#: Each session's pages after /attention: between them, every page of the app.
TOURS = [
    ("vision", "causal-mask"),
    ("home", "multi-head"),
    ("tour", "positional-encoding"),
    ("decoder", "encoder-layer"),
    ("efficient", "heads", "summarize"),
    ("pretrained", "book"),
]
#: Pages whose heatmaps are labelled with the sentence's tokens.
TOKEN_PAGES = {"attention", "causal-mask", "multi-head", "positional-encoding", "encoder-layer"}
URL_PATHS = {page.url_path for page in registry.PAGES}
#: Every Content-Security-Policy violation, reported to the test by the page.
CSP_LISTENER = """document.addEventListener('securitypolicyviolation', e => window.__cspViolation(
    `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));"""
#: Six sessions load at once on a shared two-core machine: generous waits.
TIMEOUT_MS = 120_000
CONNECTED = """() => document.querySelector('[data-testid="stApp"]')
    ?.dataset.testConnectionState === 'CONNECTED'"""
STREAM = ("101", "GET", "/_stcore/stream")  # a WebSocket opened, in the access log
STOPPED = re.compile(r"^replica (r\d+) \(pid (\d+)\) has stopped")
#: The shared settings each session set in its link (its scale by a step of the slider).
SETTINGS = ("text", "weights", "tokenizer", "scale")


def _unavailable(reason):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so these tests may not be skipped)")
    pytest.skip(reason)


def marker(index):
    return f"zq{index:02d}x"


@dataclass
class Hall:
    """The proxy, its replicas and the six sessions, with what they reported."""

    server: ClassServer
    sessions: list  # Playwright pages, one browser context each
    violations: list  # (session index, what the Content-Security-Policy refused)
    stack: contextlib.ExitStack  # closing it stops the browser and serve_class.sh
    state_home: Path  # XDG_STATE_HOME for the script: where it keeps the cookie secret
    folder: Path  # for files the test makes

    def replica(self, page):
        """The replica named by the session's ``ae_replica`` cookie."""
        return {c["name"]: c["value"] for c in page.context.cookies()}.get("ae_replica")

    def replicas_seen(self, index, log=None):
        """The replicas HAProxy sent session ``index``'s requests to, from its access log."""
        log = self.server.access() if log is None else log
        return {entry[0] for entry in log if entry[4].endswith(f"ae-session-{index}")}


@pytest.fixture(scope="module")
def hall(browser, tmp_path_factory):
    state_home = tmp_path_factory.mktemp("state")
    stack = contextlib.ExitStack()
    try:
        server = stack.enter_context(
            serve_class(3, access_log=True, env={"XDG_STATE_HOME": str(state_home)})
        )
    except HAProxyMissingError as error:
        stack.close()
        _unavailable(str(error))
    # The session's browser: a second sync Playwright in this thread would refuse to start.
    violations = []
    sessions = []
    for index in range(N_SESSIONS):
        page = stack.enter_context(
            unplugged_page(browser, user_agent=tagged_user_agent(browser, f"ae-session-{index}"))
        )
        page.context.set_default_timeout(TIMEOUT_MS)
        page.context.expose_function(
            "__cspViolation", lambda text, index=index: violations.append((index, text))
        )
        page.context.add_init_script(CSP_LISTENER)
        sessions.append(page)
    hall = Hall(server, sessions, violations, stack, state_home, tmp_path_factory.mktemp("files"))
    with stack:
        yield hall


def _open_all(hall):
    """Every session opens /attention with its own sentence, all at once."""
    for index, page in enumerate(hall.sessions):
        text = f"The restaurant {marker(index)} refused because it only cooks vegetarian food."
        page.runs_seen = 0
        address = f"{hall.server.url}/attention?text={text}&weights=random&tokenizer=words"
        page.goto(address, wait_until="commit")
    for page in hall.sessions:
        wait_settled(page)


def _switch(page, path):
    """Click the sidebar's link to ``path`` (``home`` is the default page, at /)."""
    links = page.locator('[data-testid="stSidebarNavLink"]')
    for link in links.all():
        href = urlsplit(link.get_attribute("href")).path.strip("/")
        if href == path or (path == "home" and href == ""):
            link.click()
            return
    raise AssertionError(f"no sidebar link to /{path}")


def _own_text(page, index):
    """The session's sentence is in its link and, where the page draws tokens, its charts."""
    assert marker(index) in query(page).get("text", ""), page.url
    labels = page.evaluate(LABELS)
    assert not [label for label in labels if label.startswith("zq") and label != marker(index)]
    if urlsplit(page.url).path.strip("/") in TOKEN_PAGES:
        assert marker(index) in labels


def test_headers_cookie_and_secret(hall):
    with urllib.request.urlopen(f"{hall.server.url}/attention") as response:
        headers = response.headers
    csp = headers["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert directives["default-src"] == "'self'"
    assert "'unsafe-inline'" not in directives["script-src"]
    assert "'unsafe-eval'" not in directives["script-src"]
    assert directives["frame-ancestors"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    cookie = headers["Set-Cookie"]
    assert re.match(r"ae_replica=r[123];", cookie)
    assert "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie

    secret_file = hall.state_home / "attention-explorer" / "cookie_secret"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    secret = secret_file.read_text().strip()
    assert len(secret) >= 32
    assert ROOT not in secret_file.parents
    for _, pid in hall.server.replicas.values():  # in the environment, not on the command line
        assert secret not in Path(f"/proc/{pid}/cmdline").read_text()
        assert (
            f"STREAMLIT_SERVER_COOKIE_SECRET={secret}" in Path(f"/proc/{pid}/environ").read_text()
        )


def test_the_replicas_share_the_cpus_among_their_engines(hall):
    """Each replica's passes run on CPUs / replicas threads (at least one): three replicas
    busy at once never ask for more threads than the machine has CPUs."""
    threads = max(1, len(os.sched_getaffinity(0)) // len(hall.server.replicas))
    for _, pid in hall.server.replicas.values():
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"ATTENTION_EXPLORER_THREADS={threads}".encode() in environ
    said = f"engine threads per pass in each replica: {threads} "
    assert any(line.startswith(said) for line in hall.server.lines)


def test_sessions_spread_and_keep_their_replica(hall):
    _open_all(hall)
    first = [hall.replica(page) for page in hall.sessions]
    assert all(first)
    assert len(set(first)) >= 2, first  # one address, yet more than one replica

    for page in hall.sessions:  # one step of the scale in every session, then wait for all
        slider(page, "att_scale").focus()
        page.keyboard.press("ArrowRight")
    for page in hall.sessions:
        wait_settled(page)
    for step in range(max(map(len, TOURS))):
        moving = [page for page, tour in zip(hall.sessions, TOURS, strict=True) if step < len(tour)]
        for page in moving:
            _switch(page, TOURS[hall.sessions.index(page)][step])
        for page in moving:
            wait_settled(page)
        if step == 0:
            _upload_and_download(hall.sessions[0], hall.folder)

    visited = {path for tour in TOURS for path in tour} | {"attention"}
    assert visited == URL_PATHS  # between them, the sessions opened every page
    log = hall.server.access()
    for index, page in enumerate(hall.sessions):
        assert_healthy(page)
        assert urlsplit(page.url).path == f"/{TOURS[index][-1]}"
        _own_text(page, index)
        assert hall.replica(page) == first[index]  # the cookie never changed
        # and HAProxy sent every request of the session there, its WebSocket included
        assert hall.replicas_seen(index, log) == {first[index]}
        streams = [e for e in log if e[3] == "/_stcore/stream" and e[4].endswith(f"-{index}")]
        assert [e[1:4] for e in streams] == [STREAM]


def _upload_and_download(page, folder):
    """On /vision: upload an image, export a chart as PNG and download a CSV, via the proxy."""
    assert urlsplit(page.url).path == "/vision"
    page.locator(".st-key-vision_source").get_by_text("Upload").click()
    wait_settled(page)
    path = folder / "upload.png"
    Image.new("RGB", (208, 144), (200, 40, 40)).save(path)
    page.locator(".st-key-vision_upload input[type=file]").set_input_files(path)
    wait_settled(page)
    captions = page.locator('[data-testid="stCaptionContainer"]').all_inner_texts()
    assert any("Used at 208×144 pixels" in caption for caption in captions), captions
    weights = page.locator(".st-key-vision_weights")
    weights.hover()  # plotly.js shows its mode bar on hover
    with page.expect_download() as png:  # built in the page: data: and blob: images
        weights.locator('.modebar-btn[data-title="Download for a slide or a paper"]').click()
    assert png.value.suggested_filename.endswith(".png")
    with page.expect_download() as csv:  # made by the replica on demand
        page.locator(".st-key-vision_weights_csv button").click()
    assert csv.value.suggested_filename.endswith(".csv")
    assert Path(csv.value.path()).stat().st_size > 0


def test_upload_went_to_the_sessions_replica(hall):
    replica = hall.replica(hall.sessions[0])

    def uploads():
        return [e for e in _entries(hall, 0) if e[3].startswith("/_stcore/upload_file")]

    _wait_until(uploads, "HAProxy logged no upload of session 0")  # its log comes when it may
    assert {(e[0], e[1][0]) for e in uploads()} == {(replica, "2")}  # accepted, XSRF and all


def test_no_page_breaks_the_content_security_policy(hall):
    assert hall.violations == []
    page = hall.sessions[1]  # the listener does hear a violation
    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.inlined = 1'; document.body.append(s); }"
    )
    page.wait_for_function("() => true")
    deadline = time.monotonic() + 5
    while not hall.violations and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert [index for index, _ in hall.violations] == [1]
    assert page.evaluate("window.inlined") is None
    hall.violations.clear()


def test_a_dead_replicas_sessions_come_back_on_another(hall):
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    before = {index: (page.url, hall.replica(page)) for index, page in enumerate(hall.sessions)}
    victim = before[0][1]
    _, pid = hall.server.replicas[victim]
    since = len(hall.server.access())
    os.kill(pid, signal.SIGKILL)
    orphans = [i for i, (_, replica) in before.items() if replica == victim]
    survivors = [i for i in before if i not in orphans]
    live = set(hall.server.replicas) - {victim}

    for index in orphans:
        page = hall.sessions[index]
        # By itself the page reconnects, through HAProxy, to a live replica and keeps
        # showing its view, with no error.
        _wait_for_stream(hall, index, since)
        page.wait_for_function(CONNECTED, polling=100)
        assert page.url == before[index][0]
        _own_text(page, index)
        # The cookie now names the replica that took the WebSocket, so what follows
        # (uploads, downloads) goes there too. (The health checks the page sent while
        # reconnecting, stateless, may have been redispatched to either live replica.)
        streams = [e[0] for e in _entries(hall, index, since) if e[1:4] == STREAM]
        assert set(streams) <= live
        assert streams[-1] == hall.replica(page)
        # The page then runs once from its address bar, so the new session starts from
        # the link: a page switch, with no reload, keeps the text and the settings
        # (Streamlit clears the query string on a switch; the session holds them).
        try:
            wait_settled(page, charts=False)
        except PlaywrightTimeoutError:
            pytest.fail(f"session {index} did not run again from its link after reconnecting")
        shown = query(page)
        _switch(page, "attention" if path(page) != "attention" else "causal-mask")
        wait_settled(page)
        assert_healthy(page)
        _own_text(page, index)
        assert {key: query(page).get(key) for key in SETTINGS} == {
            key: shown.get(key) for key in SETTINGS
        }
        assert "scale" in shown  # stepped before the replica died, and kept
        # One reload runs it there from the link: the same text, settings and page.
        reload_start = len(hall.server.access())
        page.reload()
        page.runs_seen = 0
        wait_settled(page)
        _own_text(page, index)
        assert {key: query(page).get(key) for key in SETTINGS} == {
            key: shown.get(key) for key in SETTINGS
        }
        assert_healthy(page)
        assert hall.replica(page) in live
        assert {e[0] for e in _entries(hall, index, reload_start)} == {hall.replica(page)}
    for index in survivors:
        page = hall.sessions[index]
        assert hall.replica(page) == before[index][1]
        assert page.url == before[index][0]
        assert hall.replicas_seen(index) == {before[index][1]}
    assert any(STOPPED.match(line) for line in hall.server.lines)
    assert hall.violations == []


def path(page):
    """The page's URL path without its slashes (``""`` for the home page)."""
    return urlsplit(page.url).path.strip("/")


def _entries(hall, index, start=0):
    """Session ``index``'s lines in the access log from line ``start`` on."""
    return [e for e in hall.server.access()[start:] if e[4].endswith(f"ae-session-{index}")]


def _wait_for_stream(hall, index, since, timeout=60):
    """Wait until HAProxy has passed a WebSocket of session ``index`` on, after line ``since``."""
    _wait_until(
        lambda: any(e[1:4] == STREAM for e in _entries(hall, index, since)),
        f"session {index} did not reconnect",
        timeout,
    )


def _wait_until(found, failure, timeout=60):
    """Poll ``found()`` until it is truthy: HAProxy writes its access log as it goes."""
    deadline = time.monotonic() + timeout
    while not found():
        assert time.monotonic() < deadline, failure
        time.sleep(0.2)


def test_sigterm_stops_everything_it_started(hall):
    pids = [pid for _, pid in hall.server.replicas.values()] + [hall.server.haproxy_pid]
    hall.stack.close()
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert alive == []
