"""A lecture hall on one server: concurrent browser sessions moving sliders and switching pages.

Each session is its own browser context (its own Streamlit session), types its own
sentence with a marker word only it uses, then loops for the given time: a slider step
(the scale on /attention, mostly; the sidebar's d_model, a full rerun with new weights,
otherwise), a switch to another page, now and then a toggle of the causal mask. Every
action is timed twice from the input: until the page hears that the run it caused has
finished ("answered": the server's part, plus any wait for the page's own busy thread to
take the message) and until, in addition, every chart has drawn ("drawn"). A page counts
the finished runs it hears of (:data:`harness.RUN_COUNTER`), so an action is never taken
as done before its rerun has even begun. After each action the session checks its page:
no exception element, no uncaught script error, and its own marker — never another
session's — in the drawn token labels.

The browsers run on the same machine as the server, so the report also says how much
of the machine's busy CPU time was the server's.

``python benchmarks/load.py`` runs the full benchmark (25 sessions, 60 s) against a
server it starts; ``--replicas 3`` against ``scripts/serve_class.sh 3`` (replicas behind
HAProxy), ``--url`` against one already running (``--pid`` names its processes, to
measure). Through HAProxy each session also notes the replica its ``ae_replica`` cookie
names, at its first load and at its end, and with ``--replicas`` HAProxy's access log
says which replicas each session's requests (its WebSocket included) reached: one
each, if stickiness holds. The test suite runs a small variant through :func:`run_load`.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import random
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# The harness is in the tests' support folder; run as a file, a benchmark puts it on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from harness import (
    NOT_CHARTS,
    RUN_COUNTER,
    SETTLED_AFTER,
    ServerSampler,
    launch_chromium,
    serve_app,
    serve_class,
    tagged_user_agent,
)

#: Every token label of the page's charts, in the figures the server sent them: drawn, or
#: waiting to come near the window before their first drawing (chart/plot.js).
LABELS = """async () => {
    const {Chart} = await import('/_stcore/bidi-components/attention-explorer.chart/state.js');
    return [...document.querySelectorAll('.ae-chart')]
    .flatMap(d => (Chart.of(d)?.figure?.data || []).flatMap(t => Array.isArray(t.x) ? t.x : []))
    .map(String);
}"""

PAGES = ("attention", "causal-mask", "multi-head", "positional-encoding", "encoder-layer")
ACTION_TIMEOUT_MS = 120_000

#: What the page looked like when an interaction failed: enough to tell a lost input from
#: a rerun that never finished or a chart that never drew.
PAGE_STATE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const charts = [...document.querySelectorAll('.stBidiComponent')];
    return {
        script: app && app.dataset.testScriptState,
        connection: app && app.dataset.testConnectionState,
        charts: charts.length,
        drawn: charts.filter(c => c.querySelector('NOT_CHARTS, .ae-chart .main-svg')).length,
        stale: document.querySelectorAll('[data-stale="true"]').length,
        runs: window.__runs && window.__runs.finished,
    };
}""".replace("NOT_CHARTS", NOT_CHARTS)


@dataclass
class SessionLog:
    """What one session did and saw."""

    marker: str
    load_ms: float = float("nan")  # opening the app, before the first interaction
    latencies: list = field(default_factory=list)  # input → every chart drawn, ms
    answered: list = field(default_factory=list)  # input → run finished heard, ms
    errors: list = field(default_factory=list)
    timeouts: list = field(default_factory=list)  # not done within ACTION_TIMEOUT_MS
    foreign: set = field(default_factory=set)
    done: Counter = field(default_factory=Counter)  # completed interactions by kind
    saw_own: bool = False  # proves the label check can see markers at all
    replicas: list = field(default_factory=list)  # ae_replica cookie after loading, at the end


@dataclass
class LoadResult:
    """The whole run."""

    sessions: list
    seconds: float
    think: float
    servers: dict  # name -> ServerSampler, one per server process (replica)
    routes: dict = field(default_factory=dict)  # session index -> replicas its requests reached
    statuses: Counter = field(default_factory=Counter)  # HAProxy's answers, by HTTP status

    @property
    def server(self):
        """The only server's sampler (a run against one server)."""
        (sampler,) = self.servers.values()
        return sampler

    @property
    def peak_rss_mb(self):
        """The largest peak resident memory of a server process, MB."""
        return max(sampler.peak_mb for sampler in self.servers.values())

    @property
    def replica_changes(self):
        """Sessions whose ``ae_replica`` cookie changed between their load and their end."""
        return [s.marker for s in self.sessions if len(set(s.replicas)) > 1]

    @property
    def unsticky(self):
        """Sessions whose requests reached more than one replica (from HAProxy's log)."""
        return {index: sorted(seen) for index, seen in self.routes.items() if len(seen) > 1}

    @property
    def latencies(self):
        """Every interaction's latency until drawn, in ms, sorted."""
        return sorted(ms for s in self.sessions for ms in s.latencies)

    @property
    def answered(self):
        """Every interaction's latency until its run was heard finished, in ms, sorted."""
        return sorted(ms for s in self.sessions for ms in s.answered)

    @property
    def errors(self):
        """Every failed interaction, exception shown, or script error."""
        return [error for s in self.sessions for error in s.errors]

    @property
    def timeouts(self):
        """Interactions that took longer than the time limit (load on the test machine)."""
        return [entry for s in self.sessions for entry in s.timeouts]

    @property
    def leaks(self):
        """Sessions that saw another session's marker, with what they saw."""
        return [(s.marker, sorted(s.foreign)) for s in self.sessions if s.foreign]

    def _load_summary(self):
        loads = sorted(s.load_ms for s in self.sessions if s.load_ms == s.load_ms)
        if not loads:
            return "none completed"
        return f"{statistics.median(loads):.0f} / {loads[-1]:.0f} ms"

    def _kinds(self):
        done = sum((s.done for s in self.sessions), Counter())
        return ", ".join(f"{kind} {count}" for kind, count in done.most_common() if count)

    @staticmethod
    def percentile(data, q):
        """The ``q`` quantile of sorted ``data``."""
        return data[min(len(data) - 1, int(q * len(data)))] if data else float("nan")

    def _quantiles(self, data):
        p50, p95 = self.percentile(data, 0.5), self.percentile(data, 0.95)
        return f"{p50:.0f} / {p95:.0f} / {max(data, default=float('nan')):.0f} ms"

    def _server_lines(self):
        lines = []
        for name, server in self.servers.items():
            share = server.cpu_s / server.busy_s if server.busy_s else float("nan")
            label = "server" if len(self.servers) == 1 else name
            lines += [
                f"{label + ' peak RSS':<19} {server.peak_mb:.0f} MB",
                f"{label + ' CPU':<19} {server.cpu_s:.0f} s of the machine's busy "
                f"{server.busy_s:.0f} s ({share:.0%}; the rest is the browsers)",
            ]
        if len(self.servers) > 1:
            cpu = sum(server.cpu_s for server in self.servers.values())
            busy = max(server.busy_s for server in self.servers.values())
            lines.append(f"all servers CPU     {cpu:.0f} s of {busy:.0f} s ({cpu / busy:.0%})")
        replicas = Counter(s.replicas[0] for s in self.sessions if s.replicas)
        if replicas:
            spread = ", ".join(f"{name} {count}" for name, count in sorted(replicas.items()))
            lines += [
                f"sessions by replica {spread}",
                f"replica changes     {len(self.replica_changes)} (ae_replica cookie, load to end)",
            ]
        if self.routes:
            lines.append(
                f"unsticky sessions   {len(self.unsticky)} of {len(self.routes)} "
                "(requests on more than one replica, HAProxy's log)"
            )
        if self.statuses:
            counts = ", ".join(f"{status} {n}" for status, n in sorted(self.statuses.items()))
            lines.append(f"HAProxy statuses    {counts}")
        return lines

    def report(self):
        """The figures, one per line."""
        return "\n".join(
            [
                f"sessions            {len(self.sessions)}",
                f"duration            {self.seconds:.0f} s",
                f"mean think time     {self.think:g} s",
                f"page loads p50/max  {self._load_summary()}",
                f"interactions        {len(self.latencies)} ({self._kinds()})",
                f"errors              {len(self.errors)}",
                f"timeouts (> {ACTION_TIMEOUT_MS // 1000} s)    {len(self.timeouts)}",
                f"cross-session leaks {len(self.leaks)}",
                f"answered p50/p95/max {self._quantiles(self.answered)}",
                f"drawn p50/p95/max   {self._quantiles(self.latencies)}",
                *self._server_lines(),
            ]
        )


async def _timed(page, log, kind, action, navigation=False):
    """Do ``action`` (of ``kind``) and wait for the run it causes to finish and draw; check.

    ``navigation``: the action loads a new document, whose run count starts from 0.
    """
    before = {"finished": 0, "now": 0.0}
    if not navigation:
        before = await page.evaluate("({finished: window.__runs.finished, now: performance.now()})")
    start = time.perf_counter()
    try:
        await action()
        await page.wait_for_function(
            SETTLED_AFTER, arg=before["finished"], polling=50, timeout=ACTION_TIMEOUT_MS
        )
    except Exception as error:  # a timeout or a closed page is a failed interaction
        try:
            seen = await page.evaluate(PAGE_STATE)
        except Exception as closed:  # the page itself is gone
            seen = f"page unreadable: {type(closed).__name__}"
        entry = (
            f"{log.marker} at {time.perf_counter() - start:.0f} s on {page.url}: "
            f"{type(error).__name__}: {str(error).splitlines()[0][:160]}; page: {seen}"
        )
        (log.timeouts if type(error).__name__ == "TimeoutError" else log.errors).append(entry)
        return
    log.latencies.append((time.perf_counter() - start) * 1000)
    log.done[kind] += 1
    if not navigation:  # a new document's clock starts at its own navigation
        log.answered.append(await page.evaluate("window.__runs.finishedAt") - before["now"])
    if await page.locator('[data-testid="stException"]').count():
        log.errors.append(f"{log.marker}: an exception is shown on {page.url}")
    labels = await page.evaluate(LABELS)
    log.saw_own = log.saw_own or log.marker in labels
    log.foreign.update(label for label in labels if label.startswith("zq") and label != log.marker)


async def _step_slider(page, key, rng):
    """One arrow-key step of slider ``key``, either way at random, inward at either end."""
    thumb = page.locator(f".st-key-{key}").get_by_role("slider")
    position = int(await thumb.input_value())
    top = int(await thumb.get_attribute("max"))
    arrow = rng.choice(["ArrowRight", "ArrowLeft"])
    arrow = "ArrowLeft" if position == top else "ArrowRight" if position == 0 else arrow
    await thumb.press(arrow)


async def _session(browser, url, index, seconds, think, ramp, rng, actions):
    marker = f"zq{index:02d}x"  # a word no other session types
    log = SessionLog(marker)
    context = await browser.new_context(
        viewport={"width": 1280, "height": 900},
        user_agent=tagged_user_agent(browser, f"ae-session-{index}"),
    )
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.set_default_navigation_timeout(ACTION_TIMEOUT_MS)
    await context.add_init_script(RUN_COUNTER)
    page = await context.new_page()
    page.on("pageerror", lambda error: log.errors.append(f"{marker}: page error {error}"))
    text = f"The restaurant {marker} refused because it only cooks vegetarian food."
    await asyncio.sleep(index * ramp)  # arrivals spread over the ramp, not all at once
    # The random model: its d_model slider is the heaviest step a student can take (new
    # weights, every chart redrawn); MiniLM's pages hide it.
    address = f"{url}/attention?text={text}&weights=random&tokenizer=words"
    await _timed(page, log, "load", lambda: page.goto(address), navigation=True)
    if log.latencies:
        log.load_ms = log.latencies.pop()
        log.done["load"] -= 1
    await _note_replica(context, log)
    deadline = time.monotonic() + seconds  # the clock starts once this session has loaded
    tried = 0
    while time.monotonic() < deadline or tried < actions:
        tried += 1
        await asyncio.sleep(rng.uniform(0.5, 1.5) * think)  # a student reads between moves
        choice = rng.random()
        if choice < 0.4 and "/attention" in page.url:
            await _timed(page, log, "scale", lambda: _step_slider(page, "att_scale", rng))
        elif choice < 0.5:  # off /attention, every slider step lands here
            await _timed(page, log, "d_model", lambda: _step_slider(page, "d_model", rng))
        elif choice < 0.85:
            target = rng.choice(PAGES)

            async def switch(target=target):
                await page.locator(f'[data-testid="stSidebarNav"] a[href$="/{target}"]').click()

            await _timed(page, log, "page", switch)
        else:
            toggle = page.locator(".st-key-causal_control label")
            await _timed(page, log, "causal", toggle.click)
    await _note_replica(context, log)
    await context.close()
    return log


async def _note_replica(context, log):
    """Note the replica HAProxy's ``ae_replica`` cookie names (none without HAProxy)."""
    cookies = {c["name"]: c["value"] for c in await context.cookies()}
    if "ae_replica" in cookies:
        log.replicas.append(cookies["ae_replica"])


async def _run(url, n_sessions, seconds, think, seed, ramp, actions):
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        sessions = await asyncio.gather(
            *(
                _session(browser, url, i, seconds, think, ramp, random.Random(seed + i), actions)
                for i in range(n_sessions)
            )
        )
        await browser.close()
    return sessions


def run_load(url, server_pids, n_sessions, seconds, think=0.0, seed=0, ramp=0.0, actions=0):
    """Run ``n_sessions`` concurrent sessions against ``url``, each ``seconds`` after loading.

    A session goes on past ``seconds`` until it has tried ``actions`` interactions, so that
    a busy machine slows the run down instead of leaving a session with too few to check.

    ``server_pids`` is the server's process id, or a dict naming each replica's (measured
    alike); ``think`` is the mean pause in seconds between one session's actions (0:
    none); session ``i`` opens the app ``i · ramp`` seconds after the first.

    Returns
    -------
    LoadResult
    """
    if not isinstance(server_pids, dict):
        server_pids = {"server": server_pids}
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(ServerSampler(pid)) for name, pid in server_pids.items()
        }
        start = time.monotonic()
        # A thread of its own: the caller may already run an event loop (pytest with the
        # sync Playwright of the other browser tests does).
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            sessions = pool.submit(
                asyncio.run, _run(url, n_sessions, seconds, think, seed, ramp, actions)
            ).result()
        elapsed = time.monotonic() - start
    return LoadResult(sessions, elapsed, think, servers)


def routes(access_log):
    """Session index -> the replicas HAProxy sent its requests to, from ``access()`` tuples."""
    seen = {}
    for replica, _, _, _, agent in access_log:
        index = re.search(r"ae-session-(\d+)$", agent)
        if index and replica != "<NOSRV>":
            seen.setdefault(int(index.group(1)), set()).add(replica)
    return seen


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=25)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--think", type=float, default=2.0, help="mean pause between a session's actions, s"
    )
    parser.add_argument("--ramp", type=float, default=0.4, help="seconds between arrivals")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--replicas", type=int, help="run scripts/serve_class.sh with this many replicas"
    )
    target.add_argument("--url", help="an app already running there (start none)")
    parser.add_argument(
        "--pid", type=int, action="append", default=[], help="with --url: a server process"
    )
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    load = (args.sessions, args.seconds, args.think)
    if args.url:
        pids = {f"pid {pid}": pid for pid in args.pid}
        result = run_load(args.url, pids, *load, ramp=args.ramp)
    elif args.replicas:
        with serve_class(args.replicas, access_log=True) as hall:
            pids = {f"replica {name}": pid for name, (_, pid) in hall.replicas.items()}
            pids["haproxy"] = hall.haproxy_pid
            result = run_load(hall.url, pids, *load, ramp=args.ramp)
            result.routes = routes(hall.access())
            result.statuses = Counter(status for _, status, *_ in hall.access())
    else:
        with serve_app(root / "app" / "main.py") as (url, pid):
            result = run_load(url, pid, *load, ramp=args.ramp)
    print(result.report())
    for error in result.errors[:20]:
        print("error:", error)
    for entry in result.timeouts[:20]:
        print("timeout:", entry)
    for marker, seen in result.leaks:
        print(f"leak: session {marker} saw {seen}")
    for index, seen in result.unsticky.items():
        print(f"unsticky: session {index} reached {seen}")


if __name__ == "__main__":
    main()
