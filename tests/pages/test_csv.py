"""Every chart's CSV, built: the engine's numbers at full precision with the full labels."""

import io

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from apptest_support import (
    RANDOM,
    TOY_PAGES,
    chart_payloads,
    charts,
    context_warnings,
    open_app,
    outside_a_script_run,
)
from streamlit.delta_generator import DeltaGenerator

import engine
from app.data import cache
from app.lecture import tour
from app.state import controls
from engine import bert, checkpoint, one_layer
from engine.resources import minilm_dir

#: Charts without a CSV, and why: an image, and 72 pooled thumbnails (their numbers are
#: the head view's, one head at a time).
NO_DATA = {"vision_grid", "pretrained_model_view"}
PAGES = [*TOY_PAGES, "book", "decoder", "efficient", "vision"]
if minilm_dir() is not None:
    PAGES += ["pretrained", "summarize", "heads"]


@pytest.fixture
def csv_builders(monkeypatch):
    """The data callables of every download button the runs create, by button key."""
    builders = {}
    original = DeltaGenerator.download_button

    def capture(self, label, data, *args, **kwargs):
        builders[kwargs["key"]] = data
        builders[f"{kwargs['key']}_name"] = kwargs["file_name"]
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", capture)
    # st.download_button is bound to the main container when Streamlit is imported
    monkeypatch.setattr(st, "download_button", capture.__get__(st._main))
    return builders


def built(builders, key):
    return pd.read_csv(io.StringIO(builders[f"{key}_csv"]()), index_col=0)


@pytest.mark.parametrize("page", PAGES)
def test_every_chart_on_every_page_builds_its_csv(page, csv_builders):
    at = open_app(page)
    assert not at.exception
    keys = set(charts(at)) - NO_DATA
    assert keys
    for key in keys:
        frame = built(csv_builders, key)
        assert len(frame) > 0, key
        assert frame.index.is_unique, key  # repeated tokens: named with their positions too
        assert frame.columns.is_unique, key


@pytest.mark.parametrize("query", [RANDOM, {}])
def test_csvs_built_at_click_time_log_no_missing_context_warning(query, csv_builders):
    at = open_app("attention", query)
    keys = set(charts(at)) - NO_DATA
    cache.clear()  # every build a miss, as after the scale moved or an eviction
    with context_warnings() as warnings:
        for key in keys:
            assert len(outside_a_script_run(csv_builders[f"{key}_csv"])) > 0, key
    assert warnings == []


@pytest.mark.parametrize("step", range(1, len(tour.STEPS) + 1))
def test_every_tour_step_builds_its_csv(step, csv_builders):
    at = open_app("tour", page_query={"step": str(step)})
    (key,) = charts(at)
    assert len(built(csv_builders, key)) > 0


def test_weights_csv_is_the_engines_array_at_full_precision(csv_builders):
    open_app("attention", RANDOM)
    frame = built(csv_builders, "att_weights")
    tokenization = engine.tokenize(controls.DEFAULT_TEXT, controls.default_tokenizer())
    run = engine.run_toy(tokenization.tokens, 16, 1, 0)
    np.testing.assert_array_equal(frame.to_numpy(), run.attention.weights[0])  # float64, exact
    named = [f"{i}: {label}" for i, label in enumerate(tokenization.labels)]  # "the" twice
    assert list(frame.index) == list(frame.columns) == named  # full labels, not the axis's


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_trained_weights_csv_is_the_models_own_head(csv_builders):
    open_app("attention")  # MiniLM, layer 3, head 1 by default
    frame = built(csv_builders, "att_weights")
    run = bert.run(checkpoint.load_minilm(), controls.DEFAULT_TEXT)
    np.testing.assert_allclose(frame.to_numpy(), run.attentions[3, 1], rtol=0, atol=1e-6)
    named = [f"{i}: {label}" for i, label in enumerate(run.labels)]
    assert list(frame.index) == named  # [CLS], the "##" pieces and [SEP] included


def test_masked_cells_are_empty(csv_builders):
    open_app("causal_mask")
    frame = built(csv_builders, "causal_scores")
    assert np.isnan(frame.to_numpy()[0, 1])
    assert np.isfinite(frame.to_numpy()[1, 0])


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_charts_drawn_at_a_reference_head_save_the_head_shown(csv_builders):
    """The live charts' figures are drawn at head 0; their CSVs are the head shown's."""
    at = open_app("attention", {"head": "5"})
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    heads = one_layer.layer_run(model, run, 3, None, False).attention.heads
    np.testing.assert_allclose(
        built(csv_builders, "att_raw").to_numpy(), heads.scores[5], atol=1e-5
    )
    np.testing.assert_allclose(
        built(csv_builders, "att_weights").to_numpy(), heads.weights[5], atol=1e-6
    )
    curve = built(csv_builders, "att_saturation")
    stats = engine.saturation_sweep(heads.scores[5], curve["scale"].to_numpy())
    np.testing.assert_allclose(curve.iloc[:, 1].to_numpy(), stats.entropy, rtol=1e-6)
    assert at.query_params["head"] == "5"


def test_repeated_tokens_rows_and_columns_are_named_with_their_positions(csv_builders):
    """Issue 55: two "the" gave two rows and two columns of the same name."""
    open_app("attention", RANDOM, text="the cat saw the dog", tokenizer="words")
    frame = built(csv_builders, "att_weights")
    named = ["0: the", "1: cat", "2: saw", "3: the", "4: dog"]
    assert list(frame.index) == list(frame.columns) == named
    open_app("attention", RANDOM, text="one cat saw a dog", tokenizer="words")
    assert list(built(csv_builders, "att_weights").index) == ["one", "cat", "saw", "a", "dog"]


@pytest.mark.parametrize(
    ("page", "key"), [("attention", "att_bar"), ("pretrained", "pretrained_bar")]
)
def test_the_query_rows_files_name_the_query_token(page, key, csv_builders):
    """Issue 55: the row of one query's weights was saved without saying whose row."""
    if page == "pretrained" and minilm_dir() is None:
        pytest.skip("MiniLM is not installed")
    at = open_app(page)
    query = at.selectbox(key="attention_query" if page == "attention" else "pretrained_token")
    word = query.format_func(query.value).split(": ", 1)[1]
    assert csv_builders[f"{key}_csv_name"].startswith(
        f"attention-explorer_{key}_q{query.value}-{word}_"
    )
    name = chart_payloads(at)[key]["config"]["toImageButtonOptions"]["filename"]
    assert name.startswith(f"attention-explorer_{key}_q{query.value}-{word}_")
