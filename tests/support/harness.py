"""What the browser tests, benchmarks and screenshots share: the app served, Chromium, RSS.

The server is ``streamlit run app/main.py`` as a subprocess on a free port, or
``scripts/serve_class.sh``'s replicas behind HAProxy (:func:`serve_class`); Chromium is
Debian's package, driven by Playwright with its executable path (Playwright's own
browser download is never used). Playwright is imported only by the functions that
drive the browser, so the tests can import this module, and skip, without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
#: The pipe that carries serve_class.sh's output, HAProxy's access log included: 1 MiB,
#: Linux's default ceiling for an unprivileged process (the default pipe holds 64 KiB).
PIPE_BYTES = 1 << 20

#: The chart component's parts that draw no chart (a slider, the live head control, frames,
#: shapes drawn over a chart, the page's hooks, the share box, the viewport's size): a CSS
#: selector of their classes, for every wait that tells drawn components from charts still
#: to draw.
NOT_CHARTS = ".ae-control, .ae-frames, .ae-shapes, .ae-page, .ae-top, .ae-share, .ae-viewport"

#: True once every chart the page's components hold has drawn the data they last received
#: (the chart component marks a chart ``data-pending`` from new data until it is drawn); a
#: chart in a closed expander counts as drawn: it draws when opened (chart/plot.js, folded);
#: so does a chart seen far from the window, never drawn yet: it draws when it comes near
#: (``data-away``, pending until the page's observer has looked at it;
#: :func:`browser_support.look_at` scrolls to one, as a reader does).
#: ``PART_DRAWN`` is the test of one component (one ``.stBidiComponent``), for the reports
#: of what a page still waits on too (browser_support.WAITING_ON).
PART_DRAWN = """c =>
        c.querySelector('NOT_CHARTS')
        || c.closest('details:not([open])')  // a closed expander's chart draws when opened
        || c.querySelector('.ae-chart[data-away]:not([data-pending]):not(:has(.main-svg))')
        || (c.querySelector('.ae-chart .main-svg') && !c.querySelector('.ae-chart[data-pending]'))
""".replace("NOT_CHARTS", NOT_CHARTS)
CHARTS_DRAWN = (
    """() => {
    const parts = document.querySelectorAll('.stBidiComponent');
    return parts.length > 0 && [...parts].every("""
    + PART_DRAWN
    + """);
}"""
)

#: True once the script has run, every chart on the page has drawn, and Python has heard
#: every move of the browser's own controls (chart/control.js marks a control
#: ``data-unheard`` from a report until a run's data say it was taken).
SETTLED = (
    """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.dataset.testScriptState !== 'notRunning'
        || app.dataset.testConnectionState !== 'CONNECTED'
        || document.querySelector('.ae-control[data-unheard]')) {
        return false;
    }
    return ("""
    + CHARTS_DRAWN
    + """)();
}"""
)


#: JavaScript: ``topFields(buffer)``, the field numbers at the top level of a protobuf
#: message (a ForwardMsg from the server), for scripts that watch the app's WebSocket.
PROTOBUF_TOP_FIELDS = r"""
const topFieldValues = buffer => {
    const b = new Uint8Array(buffer);
    let i = 0;
    const varint = () => {
        let x = 0, m = 1, c;
        do { c = b[i++]; x += (c & 0x7f) * m; m *= 128; } while (c & 0x80 && i < b.length);
        return x;
    };
    const out = [];
    while (i < b.length) {
        const tag = varint(), wire = tag & 7;
        let value = null;
        if (wire === 0) value = varint();
        else if (wire === 2) { const n = varint(); i += n; }  // not i += varint()
        else if (wire === 1) i += 8;
        else if (wire === 5) i += 4;
        else break;
        out.push([Math.floor(tag / 8), value]);
    }
    return out;
};
const topFields = buffer => topFieldValues(buffer).map(([field]) => field);
// ForwardMsg.script_finished: sent at the end of every run, whole page or fragment, with
// its ScriptFinishedStatus; FINISHED_EARLY_FOR_RERUN (2) means another run follows at once.
const SCRIPT_FINISHED = 6;
const FINISHED_EARLY_FOR_RERUN = 2;
const endsARun = buffer => topFieldValues(buffer).some(
    ([field, value]) => field === SCRIPT_FINISHED && value !== FINISHED_EARLY_FOR_RERUN);
"""

#: Installed before the app's own scripts (``BrowserContext.add_init_script``): counts in
#: ``window.__runs`` the script runs the server reports finished, fragment runs included
#: (not a run cut short by ``st.rerun``, which another follows at once), and the time the
#: last one finished. Waiting for the count to grow tells a rerun that has finished from
#: one that has not started yet.
RUN_COUNTER = (
    "(() => {"
    + PROTOBUF_TOP_FIELDS
    + r"""
    window.__runs = {finished: 0, finishedAt: null};
    const Native = window.WebSocket;
    window.WebSocket = class extends Native {
        constructor(...args) {
            super(...args);
            this.addEventListener('message', e => {
                if (e.data instanceof ArrayBuffer && endsARun(e.data)) {
                    window.__runs.finished += 1;
                    window.__runs.finishedAt = performance.now();
                }
            });
        }
    };
})();
"""
)

#: Installed before the app's own scripts (``BrowserContext.add_init_script``): keeps in
#: ``window.__aeFrames`` the frames the chart component paints while the scale slider is
#: dragged, as its "ae-frame" events announce them: ``{stop, started, painted, parts}``
#: (``performance.now()`` times, and each chart's share). A test or benchmark clears it with
#: ``window.__aeFrames = []``; the last 2,000 are kept.
FRAME_LOG = r"""
window.__aeFrames = [];
window.addEventListener('ae-frame', (event) => {
    const log = window.__aeFrames;
    log.push(event.detail);
    if (log.length > 2000) log.splice(0, 1000);
});
"""

#: ms after a run's end message before a page counts as settled: the components get the
#: run's last data a frame or more after it (a chart marks itself pending, the slider asks
#: for its frames, only then). Without it a page whose charts were already drawn (a head
#: shown before its run) could count as settled in that frame.
AFTER_RUN_MS = 100

#: With :data:`RUN_COUNTER` installed: true once more than ``before`` runs have finished,
#: the last :data:`AFTER_RUN_MS` ago, no run is going on, and every chart has drawn.
SETTLED_AFTER = (
    "(before) => window.__runs !== undefined && window.__runs.finished > before"
    f" && performance.now() - window.__runs.finishedAt >= {AFTER_RUN_MS} && (" + SETTLED + ")()"
)


class ServerError(RuntimeError):
    """The server did not come up; the message ends with its log."""


class HAProxyMissingError(ServerError):
    """``serve_class.sh`` found no HAProxy and could not install it."""


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


def wait_healthy(url, process, timeout, output):
    """Wait until the Streamlit server at ``url`` answers its health check.

    Raises :class:`ServerError` with the end of ``output()`` (what the server printed) when
    ``process`` ends first or ``timeout`` seconds pass.
    """
    deadline = time.monotonic() + timeout
    while not healthy(url):
        if process.poll() is not None or time.monotonic() > deadline:
            raise ServerError(f"the Streamlit server did not come up on {url}:\n{output()[-4000:]}")
        time.sleep(0.25)


def stop(process, timeout=20, group=False):
    """SIGTERM ``process`` (``group``: its whole process group), then SIGKILL if it lingers.

    A process started with ``start_new_session`` leads a group: whatever it started and
    left behind is killed with it.
    """
    if process.poll() is None:
        if group:
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(process.pid) == process.pid:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
        process.wait()


@contextlib.contextmanager
def serve_app(script, *options, cwd=None, port=None):
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
    port : int, optional
        The port, by default a free one; the same again serves a page whose server was
        stopped, as another replica behind a proxy would.

    Yields
    ------
    url : str, e.g. ``http://localhost:PORT``
    pid : int, the server's process id
    """
    script = Path(script)
    port = port or free_port()
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

        def output():
            log.seek(0)
            return log.read().decode(errors="replace")

        try:
            wait_healthy(url, server, SERVER_START_TIMEOUT, output)
            yield url, server.pid
        finally:
            stop(server, timeout=15)


def launch_chromium(playwright):
    """Launch the system Chromium, headless, from a sync or an async Playwright.

    Returns
    -------
    Browser, or with the async API an awaitable of one
    """
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def tagged_user_agent(browser, tag):
    """Headless Chromium's own user agent with ``tag`` at the end.

    HAProxy's access log (:func:`serve_class`) records the user agent, WebSocket
    handshakes included, so a tag tells browser contexts apart there.
    """
    return (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"HeadlessChrome/{browser.version} Safari/537.36 {tag}"
    )


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


def tree_rss_mb(pid):
    """:func:`rss_mb` of ``pid`` and all its descendants, in MB (0 for a process that is gone)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += rss_mb(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total


def cpu_seconds(pid):
    """CPU time a process has used so far, all threads, user plus system, in s (0 if gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds():
    """CPU time all cores of the machine have spent busy since boot, in s (from /proc/stat)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class ServerSampler:
    """While the block runs: a process's peak resident memory and its share of the CPU.

    Memory (``measure``: :func:`rss_mb`, or :func:`tree_rss_mb` to count its children) is
    sampled every ``interval`` s. ``cpu_s`` is the CPU time the process used during the
    block, ``busy_s`` the busy CPU time of the whole machine over the same span (every
    core): their ratio says how much of the load was the server's.
    """

    def __init__(self, pid, interval=0.5, measure=rss_mb):
        self.pid, self.interval, self.measure, self.peak_mb = pid, interval, measure, 0.0
        self.cpu_s = self.busy_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def now(self):
        """The memory right now (MB), counted in the peak too."""
        mb = self.measure(self.pid)
        self.peak_mb = max(self.peak_mb, mb)
        return mb

    def _sample(self):
        while not self._stop.is_set():
            self.now()
            self._stop.wait(self.interval)

    def __enter__(self):
        self._cpu0, self._busy0 = cpu_seconds(self.pid), machine_busy_seconds()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.now()
        self.cpu_s = cpu_seconds(self.pid) - self._cpu0
        self.busy_s = machine_busy_seconds() - self._busy0


#: ``serve_class.sh``'s exit status when HAProxy is missing and cannot be installed.
NO_HAPROXY = 3
#: HAProxy's access log line (``AE_ACCESS_LOG=1``): client, replica, status, method,
#: path, and the captured User-Agent in braces.
ACCESS = re.compile(r"^access (\S+) (\S+) (\d+) (\S+) (\S+) \{(.*)\}$")


@dataclass
class ClassServer:
    """What ``serve_class.sh`` started: the proxy's URL, the replicas, and its output."""

    url: str
    replicas: dict  # name -> (port, pid)
    haproxy_pid: int
    lines: list  # every line printed so far, growing while the script runs

    def access(self):
        """The access log so far: ``(replica, status, method, path, user_agent)`` tuples."""
        found = (ACCESS.match(line) for line in list(self.lines))
        return [m.group(2, 3, 4, 5, 6) for m in found if m]


@contextlib.contextmanager
def serve_class(n_replicas, access_log=False, env=None, *, cwd=ROOT, stock=False, timeout=None):
    """Run ``bash scripts/serve_class.sh n_replicas PORT 127.0.0.1`` until the block ends.

    HAProxy listens on a free loopback port. ``access_log`` turns on its access log
    (``AE_ACCESS_LOG=1``), read by :meth:`ClassServer.access`; ``env`` adds to the
    script's environment (``XDG_STATE_HOME``, where the cookie secret is kept). Raises
    :class:`HAProxyMissingError` when the script can neither find nor install HAProxy.

    By default the replicas run on this interpreter, from this checkout. ``stock``: run
    the script in ``cwd`` (a fresh clone) with ``env`` alone, a new user's environment,
    so that it finds or makes its own ``.venv``; ``timeout`` then allows for that install.

    Yields
    ------
    ClassServer
    """
    port = free_port()
    base = {} if stock else {**os.environ, "AE_PYTHON": sys.executable}
    env = {**base, "AE_ACCESS_LOG": "1" if access_log else "0", **(env or {})}
    script = subprocess.Popen(
        ["bash", "scripts/serve_class.sh", str(n_replicas), str(port), "127.0.0.1"],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # a group of its own: nothing is left over if it is killed
    )  # fmt: skip
    # HAProxy writes its access log to stdout without blocking and drops the lines that do
    # not fit in the pipe; a reader thread in a busy test process can fall that far behind.
    with contextlib.suppress(OSError):  # Linux; above /proc/sys/fs/pipe-max-size it stays
        fcntl.fcntl(script.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    lines, ready = [], threading.Event()

    def read():
        for line in script.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("open http"):
                ready.set()
        ready.set()  # the script ended

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(timeout or SERVER_START_TIMEOUT + 120) or script.poll() is not None:
            script.wait(timeout=5)
            output = "\n".join(lines[-40:])
            error = HAProxyMissingError if script.returncode == NO_HAPROXY else ServerError
            raise error(f"serve_class.sh did not come up (status {script.returncode}):\n{output}")
        replicas = {
            m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in (re.match(r"^replica (r\d+) port (\d+) pid (\d+)$", line) for line in lines)
            if m
        }
        haproxy = next(int(line.split()[-1]) for line in lines if line.startswith("haproxy port"))
        yield ClassServer(f"http://127.0.0.1:{port}", replicas, haproxy, lines)
    finally:
        stop(script, timeout=30)  # the script stops its replicas and HAProxy
        reader.join(timeout=5)
        script.stdout.close()
