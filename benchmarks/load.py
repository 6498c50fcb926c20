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
server it starts; the test suite runs a small variant through :func:`run_load`.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness import RUN_COUNTER, SETTLED_AFTER, ServerSampler, launch_chromium, serve_app

#: Every token label drawn on the page's heatmaps.
LABELS = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .flatMap(p => (p.data || []).flatMap(t => Array.isArray(t.x) ? t.x : []))
    .map(String)"""

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
        drawn: charts.filter(c => c.querySelector('.ae-scale, .ae-frames, .ae-chart .main-svg'))
            .length,
        stale: document.querySelectorAll('[data-stale="true"]').length,
        runs: window.__runs && window.__runs.finished,
    };
}"""


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


@dataclass
class LoadResult:
    """The whole run."""

    sessions: list
    seconds: float
    think: float
    server: ServerSampler

    @property
    def peak_rss_mb(self):
        """The server's peak resident memory, MB."""
        return self.server.peak_mb

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

    def report(self):
        """The figures, one per line."""
        server = self.server
        share = server.cpu_s / server.busy_s if server.busy_s else float("nan")
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
                f"server peak RSS     {server.peak_mb:.0f} MB",
                f"server CPU          {server.cpu_s:.0f} s of the machine's busy "
                f"{server.busy_s:.0f} s ({share:.0%}; the rest is the browsers)",
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


async def _session(browser, url, index, seconds, think, ramp, rng):
    marker = f"zq{index:02d}x"  # a word no other session types
    log = SessionLog(marker)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.set_default_navigation_timeout(ACTION_TIMEOUT_MS)
    await context.add_init_script(RUN_COUNTER)
    page = await context.new_page()
    page.on("pageerror", lambda error: log.errors.append(f"{marker}: page error {error}"))
    text = f"The restaurant {marker} refused because it only cooks vegetarian food."
    await asyncio.sleep(index * ramp)  # arrivals spread over the ramp, not all at once
    address = f"{url}/attention?text={text}&tokenizer=words"
    await _timed(page, log, "load", lambda: page.goto(address), navigation=True)
    if log.latencies:
        log.load_ms = log.latencies.pop()
        log.done["load"] -= 1
    deadline = time.monotonic() + seconds  # the clock starts once this session has loaded
    while time.monotonic() < deadline:
        await asyncio.sleep(rng.uniform(0.5, 1.5) * think)  # a student reads between moves
        choice = rng.random()
        if choice < 0.4 and "/attention" in page.url:
            await _timed(page, log, "scale", lambda: _step_slider(page, "scale", rng))
        elif choice < 0.5:  # off /attention, every slider step lands here
            await _timed(page, log, "d_model", lambda: _step_slider(page, "d_model", rng))
        elif choice < 0.85:
            target = rng.choice(PAGES)

            async def switch(target=target):
                await page.locator(f'[data-testid="stSidebarNav"] a[href$="/{target}"]').click()

            await _timed(page, log, "page", switch)
        else:
            toggle = page.locator(".st-key-causal label")
            await _timed(page, log, "causal", toggle.click)
    await context.close()
    return log


async def _run(url, n_sessions, seconds, think, seed, ramp):
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        sessions = await asyncio.gather(
            *(
                _session(browser, url, i, seconds, think, ramp, random.Random(seed + i))
                for i in range(n_sessions)
            )
        )
        await browser.close()
    return sessions


def run_load(url, server_pid, n_sessions, seconds, think=0.0, seed=0, ramp=0.0):
    """Run ``n_sessions`` concurrent sessions against ``url``, each ``seconds`` after loading.

    ``think`` is the mean pause in seconds between one session's actions (0: none);
    session ``i`` opens the app ``i · ramp`` seconds after the first.

    Returns
    -------
    LoadResult
    """
    with ServerSampler(server_pid) as server:
        start = time.monotonic()
        # A thread of its own: the caller may already run an event loop (pytest with the
        # sync Playwright of the other browser tests does).
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            sessions = pool.submit(
                asyncio.run, _run(url, n_sessions, seconds, think, seed, ramp)
            ).result()
        elapsed = time.monotonic() - start
    return LoadResult(sessions, elapsed, think, server)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=25)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--think", type=float, default=2.0, help="mean pause between a session's actions, s"
    )
    parser.add_argument("--ramp", type=float, default=0.4, help="seconds between arrivals")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    with serve_app(root / "app" / "main.py") as (url, pid):
        result = run_load(url, pid, args.sessions, args.seconds, args.think, ramp=args.ramp)
    print(result.report())
    for error in result.errors[:20]:
        print("error:", error)
    for entry in result.timeouts[:20]:
        print("timeout:", entry)
    for marker, seen in result.leaks:
        print(f"leak: session {marker} saw {seen}")


if __name__ == "__main__":
    main()
