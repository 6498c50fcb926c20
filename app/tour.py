"""The guided tour: each step a few sentences of explanation and one live figure.

Steps are data: a title, the text, the page to explore further, and a function from the
current controls to the figure, built from the same cached engine calls and figure
builders as the pages themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from app import compute, figures, state, tables


@dataclass(frozen=True)
class Step:
    """One stop of the tour."""

    title: str
    text: str
    page: str  # the page script to explore further, as st.page_link takes it
    chart: Callable[[dict], tuple[go.Figure, pd.DataFrame]]  # the figure and its numbers


def _run(values, **changes):
    return compute.toy(**state.model_inputs(values | changes))


def _labels(values):
    return compute.tokenize(values["text"], values["tokenizer"])[0].labels


def _tokens(values):
    tokenization = compute.tokenize(values["text"], values["tokenizer"])[0]
    table = pd.DataFrame({"token": tokenization.labels, "id": tokenization.ids})
    return figures.token_ids_figure(tokenization.labels, tokenization.ids), table


def _qkv(values):
    run = _run(values)
    labels = _labels(values)
    return (
        figures.token_features_heatmap(run.q, labels, "Queries Q = X W_Q"),
        tables.token_features(run.q, labels),
    )


def _scores(values):
    heads = _run(values).attention.heads
    labels = _labels(values)
    return (
        figures.scores_heatmap(heads.scores[0], labels, "Raw scores q·kᵀ"),
        tables.matrix_frame(heads.scores[0], labels, labels),
    )


def _saturation(values):
    scales, stats, rows = compute.saturation_curve(
        **state.layer_inputs(values),
        head=0,
    )
    default = state.default_scale(values["d_model"], values["heads"])
    return (
        figures.saturation_figure(scales, stats, values["scale"], default, rows),
        tables.saturation_curve(scales, stats),
    )


def _weights(values):
    heads = _run(values).attention.heads
    labels = _labels(values)
    return (
        figures.attention_heatmap(
            heads.weights[0], labels, scores=heads.scores[0], scaled=heads.scaled[0]
        ),
        tables.matrix_frame(heads.weights[0], labels, labels),
    )


def _causal(values):
    heads = _run(values, causal=True).attention.heads
    labels = _labels(values)
    return (
        figures.attention_heatmap(heads.weights[0], labels, "Weights with the mask"),
        tables.matrix_frame(heads.weights[0], labels, labels),
    )


def _positions(values):
    n = len(_labels(values))
    table = compute.encoding_table("sinusoidal", max(n, 2), values["d_model"], values["seed"])
    positions, features = range(table.shape[0]), figures.feature_labels(table.shape[1])
    figure = figures.matrix_heatmap(
        table,
        positions,
        features,
        "Sinusoidal positions × dimensions",
        x_title="dimension",
        y_title="position",
        max_cols=figures.FEATURE_LIMIT,
    )
    return figure, tables.matrix_frame(table, positions, features)


def _multi_head(values):
    heads = max(h for h in state.divisors(values["d_model"]) if h <= 4)
    run = _run(values, heads=heads, scale=state.default_scale(values["d_model"], heads))
    labels = _labels(values)
    names = [f"head {h}" for h in range(heads)]
    return (
        figures.heads_heatmaps(run.attention.weights, labels),
        tables.panels(run.attention.weights, names, labels, labels),
    )


STEPS = (
    Step(
        "1 · Text becomes tokens",
        "A model never sees letters. A tokenizer cuts the text into pieces it knows — whole "
        "words, or fragments such as “##ian” — and gives each piece a number. Everything "
        "after this step works on those pieces.",
        "../pages/home.py",
        _tokens,
    ),
    Step(
        "2 · Each token asks, offers and carries",
        "Every token becomes a vector, and three learned matrices turn that vector into a "
        "query (what am I looking for?), a key (what do I contain?) and a value (what will "
        "I hand over?). Here are the queries, one row per token.",
        "../pages/home.py",
        _qkv,
    ),
    Step(
        "3 · Scores: how well each query matches each key",
        "Each query is compared with every key by a dot product. Row i, column j says how "
        "much token i's question matches token j's answer. Large and positive means a "
        "good match.",
        "../pages/attention.py",
        _scores,
    ),
    Step(
        "4 · Scaling, and a softmax that can saturate",
        "The scores are multiplied by a scale — 1/√d_k by default — before the softmax. "
        "Too small a scale and every token attends to everything equally; too large and "
        "each row collapses onto one key and learning stalls. The curves measure it; the "
        "red line is the current scale.",
        "../pages/attention.py",
        _saturation,
    ),
    Step(
        "5 · Weights: each row is a budget of 1",
        "The softmax turns each row of scores into positive weights that add up to one. "
        "Token i's output is the weighted average of all the values, with these weights.",
        "../pages/attention.py",
        _weights,
    ),
    Step(
        "6 · The causal mask",
        "A model that writes text must not peek at words it has not written yet. The mask "
        "sets those scores to −∞ before the softmax, so their weights are exactly zero: "
        "everything above the diagonal disappears.",
        "../pages/causal_mask.py",
        _causal,
    ),
    Step(
        "7 · Where is each token?",
        "Attention alone ignores order: shuffle the words and the outputs just shuffle. "
        "Adding a positional encoding — here the sinusoidal one, a different wave per "
        "dimension — gives every position its own signature.",
        "../pages/positional_encoding.py",
        _positions,
    ),
    Step(
        "8 · Several heads at once",
        "Instead of one attention pattern, the features are split between heads, each "
        "with its own small queries and keys. Each head can follow a different relation; "
        "their outputs are joined and mixed again.",
        "../pages/multi_head.py",
        _multi_head,
    ),
)


def parse_step(raw):
    """The tour step from the URL, 1-based; returns (step, warning or None)."""
    if raw is None:
        return 1, None
    try:
        step = int(raw)
    except ValueError:
        step = 0
    if 1 <= step <= len(STEPS):
        return step, None
    return 1, f"There is no tour step “{state.md_escape(str(raw)[:20])}”; starting at step 1."
