"""Numerical extremes through the pages: no NaN or inf reaches the screen.

The only non-finite cells allowed are the masked (−∞) scores, which the figures draw as
blank cells (NaN) and say so in their title ("blank cells are −∞"), and the gaps of a
compact hover (NaN where a cell is masked), which the chart component writes as the text
its trace's ``meta`` names before plotly.js draws it.
"""

import base64

import numpy as np
import pytest
from apptest_support import RANDOM, TOY_PAGES, chart_z, charts, open_app

from app.state import controls
from app.views.attention_maps import GAP_TEXT

ALL_PAGES = TOY_PAGES


def run_page(page, query=None, **session):
    at = open_app(page, query, timeout=120, **session)
    assert not at.exception, [e.value for e in at.exception]
    return at


def arrays(node):
    """Every typed array in a Plotly spec, decoded."""
    if isinstance(node, dict):
        if "bdata" in node and "dtype" in node:
            yield np.frombuffer(base64.b64decode(node["bdata"]), dtype=node["dtype"])
        else:
            for value in node.values():
                yield from arrays(value)
    elif isinstance(node, list):
        for value in node:
            yield from arrays(value)


def non_finite_cells(at):
    """Count of non-finite numbers per chart, except blank (masked) score cells."""
    found = {}
    for key, spec in charts(at).items():
        title = spec["layout"].get("title", {}).get("text", "")
        masked_ok = "−∞" in title  # the figure says blank cells are masked
        bad = 0
        for trace in [*spec["data"], spec["layout"]]:
            gaps = GAP_TEXT in (trace.get("meta") or {})
            for name, node in trace.items():
                for array in arrays(node):
                    if array.dtype.kind == "f":
                        bad += int(np.sum(np.isinf(array)))
                        if not (masked_ok or (gaps and name == "customdata")):
                            bad += int(np.sum(np.isnan(array)))
        found[key] = bad
    return {key: bad for key, bad in found.items() if bad}


@pytest.mark.parametrize("scale", [controls.SCALE_MIN, controls.SCALE_MAX, 1.0])
@pytest.mark.parametrize("causal", ["0", "1"])
@pytest.mark.parametrize("weights", controls.available_weights())
def test_scale_extremes_stay_finite(scale, causal, weights):
    at = run_page("attention", {"scale": repr(scale), "causal": causal, "weights": weights})
    assert non_finite_cells(at) == {}


def test_largest_scale_gives_one_hot_rows():
    at = run_page("attention", {"scale": repr(controls.SCALE_MAX)})
    weights = chart_z(at, "att_weights")
    assert weights.max() == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("page", ALL_PAGES)
def test_d_k_of_one(page):
    at = run_page(page, RANDOM | {"d_model": "4", "heads": "4", "pe": "rotary"})
    assert non_finite_cells(at) == {}


@pytest.mark.parametrize("page", ALL_PAGES)
def test_a_single_token(page):
    query = RANDOM | {"causal": "1", "pe": "sinusoidal"}
    at = run_page(page, query, text="restaurant", tokenizer="words")
    assert non_finite_cells(at) == {}


@pytest.mark.parametrize("page", ["attention", "multi_head", "causal_mask"])
def test_512_tokens_and_12_heads(page):
    text = " ".join(f"word{i}" for i in range(600))
    query = RANDOM | {"d_model": "768", "heads": "12", "causal": "1", "pe": "learned"}
    at = run_page(page, query, text=text, tokenizer="words")
    assert non_finite_cells(at) == {}
    assert any("512" in w.value for w in at.warning)


def test_huge_inputs_do_not_overflow():
    # d_model 768 with learned positions has entries of several units; scale 1024 on
    # scores in the hundreds would overflow a naive exp.
    query = {"d_model": "768", "scale": repr(controls.SCALE_MAX), "pe": "learned"}
    at = run_page("attention", RANDOM | query)
    assert non_finite_cells(at) == {}
