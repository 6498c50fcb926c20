"""The efficient-attention page through AppTest, its figure builder, and the cost measurement."""

from pathlib import Path

import numpy as np
import pytest
from apptest_support import (
    RANDOM,
    chart_z,
    charts,
    move,
    open_app,
)

from app.data import efficient
from app.views import cost

PATTERN_KEYS = ("full", "linear", "sliding", "strided", "fixed")


def weights(at):
    return {key: chart_z(at, f"efficient_{key}") for key in PATTERN_KEYS}


@pytest.fixture(scope="module")
def page():
    return open_app("efficient", RANDOM)


def test_page_renders_every_pattern_the_table_and_the_cost_plot(page):
    assert not page.exception
    shown = charts(page)
    assert {f"efficient_{key}" for key in PATTERN_KEYS} <= set(shown)
    assert "efficient_cost" in shown  # the measurement shipped in assets/
    title = shown["efficient_cost"]["layout"]["title"]["text"]
    assert title.startswith("Measured when the app was made: ")  # not this machine's
    table = page.dataframe[0].value
    assert list(table["pattern"]) == [
        "full softmax",
        "linear (elu + 1)",
        "sliding window",
        "strided",
        "fixed blocks",
    ]
    # full softmax against itself, its shares drawn as percentages
    assert table.iloc[0, 1:].tolist() == [100.0, 100.0, 0, 0, 0, 0, 0]
    assert (table["mean |ΔAV|"].iloc[1:] > 0).all()


def test_every_pattern_on_screen_has_rows_summing_to_one(page):
    for key, z in weights(page).items():
        assert z.shape == (43, 43), key
        np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5, err_msg=key)


def test_window_slider_changes_only_the_window_pattern():
    at = open_app("efficient")
    before = weights(at)
    at.slider(key="efficient_window").set_value(1).run()
    after = weights(at)
    assert not at.exception
    np.testing.assert_array_equal(before["full"], after["full"])
    np.testing.assert_array_equal(before["strided"], after["strided"])
    i, j = np.indices(after["sliding"].shape)
    assert np.all(after["sliding"][np.abs(i - j) > 1] == 0)
    assert not np.array_equal(before["sliding"], after["sliding"])


def test_stride_slider_changes_the_strided_and_fixed_patterns():
    at = open_app("efficient")
    before = weights(at)
    at.slider(key="efficient_stride").set_value(10).run()
    after = weights(at)
    assert not np.array_equal(before["strided"], after["strided"])
    assert not np.array_equal(before["fixed"], after["fixed"])
    np.testing.assert_array_equal(before["sliding"], after["sliding"])


def test_causal_switch_applies_to_every_pattern():
    at = open_app("efficient")
    move(at, "causal", True)
    assert not at.exception
    for key, z in weights(at).items():
        assert np.all(np.triu(z, k=1) == 0), key


def test_a_single_token_leaves_nothing_to_slide():
    at = open_app("efficient", RANDOM, text="it")
    assert not at.exception
    assert not at.slider  # window 0..0 and stride 1..1 are captions, not sliders
    for z in weights(at).values():
        assert z.tolist() == [[1.0]]


def test_measure_cost_rows_and_slopes():
    rows = efficient.measure_cost(
        (32, 64, 128), d=8, methods=("softmax", "linear, causal"), max_n={"softmax": 64}
    )
    assert [(row["method"], row["n"]) for row in rows] == [
        ("softmax", 32),
        ("linear, causal", 32),
        ("softmax", 64),
        ("linear, causal", 64),
        ("linear, causal", 128),
    ]
    assert all(row["seconds"] > 0 and row["peak_bytes"] > 0 for row in rows)
    fitted = efficient.slopes(rows, n_min=32)
    assert set(fitted) == {"softmax", "linear, causal"}


def test_fit_slope_recovers_a_power_law():
    n = np.array([256, 512, 1024, 2048])
    assert efficient.fit_slope(n, 3e-9 * n**2.0) == pytest.approx(2.0)
    assert np.isnan(efficient.fit_slope([64], [1.0]))


def test_peak_bytes_sees_numpy_allocations():
    assert efficient.peak_bytes(lambda: np.ones(1_000_000)) >= 8_000_000


def test_shipped_measurement_covers_64_to_8192_for_every_method():
    record = efficient.load_reference()
    assert record is not None
    for method in efficient.METHODS:
        assert [row["n"] for row in record["rows"] if row["method"] == method] == list(
            efficient.N_VALUES
        )
    assert efficient.load_reference(Path("/nonexistent/cost.json")) is None


def test_cost_figure_is_log_log_with_reference_slopes():
    rows = [
        {"method": m, "n": n, "seconds": n**p * 1e-6, "peak_bytes": n**p}
        for m, p in (("softmax", 2), ("linear", 1))
        for n in (64, 128, 256)
    ]
    fig = cost.figure(rows)
    assert fig.layout.xaxis.type == "log"
    assert fig.layout.yaxis2.type == "log"
    guides = {trace.name: np.asarray(trace.y) for trace in fig.data if trace.name.startswith("∝")}
    assert set(guides) == {"∝ n²", "∝ n"}
    softmax_time = next(t for t in fig.data if t.name == "softmax")  # the first panel's
    square_guide = next(t for t in fig.data if t.name == "∝ n²")
    # the n² guide passes through every softmax point of this exact power law
    np.testing.assert_allclose(np.asarray(softmax_time.y), np.asarray(square_guide.y), rtol=1e-5)


def test_cost_axes_label_powers_of_ten_and_measured_sizes_only():
    """No "2" and "5" between the decades (plotly.js's own log ticks put "5" under "0.1",
    read as five): times and memory at powers of ten, n at sizes that were measured."""
    sizes = [64 * 2**k for k in range(8)]
    rows = [
        {"method": m, "n": n, "seconds": n**p * 1e-8, "peak_bytes": n**p}
        for m, p in (("softmax", 2), ("linear", 1))
        for n in sizes
    ]
    fig = cost.figure(rows)
    for axis in (fig.layout.yaxis, fig.layout.yaxis2):
        assert axis.dtick == 1  # one label a decade, 10^k
    for axis in (fig.layout.xaxis, fig.layout.xaxis2):
        assert set(axis.tickvals) <= set(sizes)
        assert len(axis.tickvals) >= 3
        assert list(axis.ticktext) == [f"{n:,}" for n in axis.tickvals]


def test_the_comparison_table_has_the_pages_width(page):
    """Not in the patterns' half-width grid, where its last columns were cut off."""
    assert len(page.dataframe) >= 1
    assert [column for column in page.columns if len(column.dataframe)] == []
