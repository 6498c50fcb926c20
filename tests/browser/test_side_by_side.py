"""Charts side by side on a desktop line up: titles, plots and the CSV buttons under them.

A title of two lines (a note in ``<sup>``), one wrapped to its half-width column, or a mode
bar moved above a long title put one chart of a pair about 27 px below the other
(``chart/narrow.js``'s ``alignRow`` gives each row of charts the same room). Measured from
the boxes the browser lays out: the k-th chart of each column of a row of columns.
"""

from __future__ import annotations

import contextlib

import pytest
from browser_support import look_at, open_app
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

pytestmark = pytest.mark.browser

#: Each row of charts side by side: for each chart its key, and the tops (px) of its box,
#: its title, its first plot area and the CSV button under it (null where it has none).
ROWS = """() => {
    const top = (el) => (el ? Math.round(el.getBoundingClientRect().top * 2) / 2 : null);
    const rows = [];
    for (const block of document.querySelectorAll(
        '[data-testid="stMain"] [data-testid="stHorizontalBlock"]')) {
        const columns = [...block.querySelectorAll(':scope > [data-testid="stColumn"]')];
        const charts = columns.map((c) => [...c.querySelectorAll('.js-plotly-plot')]);
        for (let k = 0; k < Math.max(...charts.map((list) => list.length)); k++) {
            const row = charts.map((list) => list[k]).filter(Boolean).map((gd) => {
                const holder = gd.closest('[data-testid="stElementContainer"]');
                const key = holder.className.match(/st-key-(\\S+)/)[1];
                const csv = document.querySelector(`.st-key-${key}_csv`);
                return {key, box: top(gd), title: top(gd.querySelector('.gtitle')),
                        plot: top(gd.querySelector('.nsewdrag')), csv: top(csv)};
            });
            if (row.length > 1) rows.push(row);
        }
    }
    return rows;
}"""


#: Every row of :data:`ROWS` lines up, within a pixel.
LINED_UP = (
    "() => ("
    + ROWS
    + """)().every((row) => ['box', 'title', 'plot', 'csv'].every((part) => {
        const tops = row.map((chart) => chart[part]).filter((top) => top !== null);
        return !tops.length || Math.max(...tops) - Math.min(...tops) <= 1;
    }))"""
)
#: The keys of the charts in :data:`ROWS`.
KEYS = "() => [...new Set((" + ROWS + ")().flat().map((chart) => chart.key))]"


def misaligned(rows):
    """What does not line up in ``rows`` (:data:`ROWS`), as readable strings."""
    found = []
    for row in rows:
        for part in ("box", "title", "plot", "csv"):
            tops = {chart["key"]: chart[part] for chart in row if chart[part] is not None}
            if len(tops) > 1 and max(tops.values()) - min(tops.values()) > 1:
                found.append(f"{part}: {tops}")
    return found


@pytest.mark.parametrize(
    "path",
    ["/causal-mask", "/positional-encoding", "/efficient", "/book", "/encoder-layer", "/vision"],
)
def test_charts_side_by_side_line_up(page, app_url, path):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, f"{app_url}{path}")
    for key in page.evaluate(KEYS):
        look_at(page, key)
    with contextlib.suppress(PlaywrightTimeoutError):  # a row's charts redraw once aligned
        page.wait_for_function(LINED_UP, timeout=10_000)
    rows = page.evaluate(ROWS)
    assert rows, "no charts side by side"
    assert misaligned(rows) == []
