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
from app.controls import find_token


@dataclass(frozen=True)
class Step:
    """One stop of the tour.

    ``chart`` takes the settings the page runs (:class:`app.state.Settings`), the
    shared head and the shared values, and returns the step's figure and the engine's
    numbers behind it (its CSV).
    """

    title: str
    text: str
    page: str  # the page's script name, as in app.registry
    chart: Callable[[state.Settings, int, dict], tuple[go.Figure, pd.DataFrame]]


def _labels(settings):
    return compute.tokens(settings)[0].labels


def _tokens(settings, head, values):
    tokenization = compute.tokens(settings)[0]
    table = pd.DataFrame({"token": tokenization.labels, "id": tokenization.ids})
    return figures.token_ids_figure(tokenization.labels, tokenization.ids), table


def _qkv(settings, head, values):
    run = compute.layer(settings)
    labels = _labels(settings)
    if settings.trained:
        title = f"Queries Q = X W_Q + b_Q of layer {settings.layer}, head {head}"
        q = run.attention.q[head]
    else:
        title, q = "Queries Q = X W_Q", run.q
    return figures.token_features_heatmap(q, labels, title), tables.token_features(q, labels)


def _scores(settings, head, values):
    heads = compute.layer(settings).attention.heads
    labels = _labels(settings)
    return (
        figures.scores_heatmap(heads.scores[head], labels, "Raw scores q·kᵀ"),
        tables.matrix_frame(heads.scores[head], labels, labels),
    )


def _saturation(settings, head, values):
    scales, stats, rows = compute.saturation_curve(settings, head)
    default = state.default_scale(*settings.shape)
    scale = default if settings.scale is None else settings.scale
    return (
        figures.saturation_figure(scales, stats, scale, default, rows),
        tables.saturation_curve(scales, stats),
    )


def _weights(settings, head, values):
    heads = compute.layer(settings).attention.heads
    labels = _labels(settings)
    return (
        figures.attention_heatmap(
            heads.weights[head], labels, scores=heads.scores[head], scaled=heads.masked[head]
        ),
        tables.matrix_frame(heads.weights[head], labels, labels),
    )


def _training(settings, head, values):
    """The row "it" (or the first token) with random weights beside MiniLM's trained ones."""
    head = head if settings.trained else state.DEFAULT_HEAD
    scale = settings.scale if settings.trained else None  # the toy's scale suits its own d_k
    pair = (
        compute.random_and_trained(
            settings.text, values["layer"], values["seed"], scale, settings.causal
        )
        if state.MINILM is not None
        else None
    )
    if pair is None:
        heads = compute.layer(settings).attention.heads
        labels = _labels(settings)
        return (
            figures.attention_heatmap(
                heads.weights[head], labels, "Random weights (MiniLM not available)"
            ),
            tables.matrix_frame(heads.weights[head], labels, labels),
        )
    labels, random_weights, trained_weights = pair
    query = find_token(labels, "it")
    rows = {
        f"Random (seeded), head {head}": random_weights[head, query],
        f"MiniLM, layer {values['layer']}, head {head}": trained_weights[head, query],
    }
    table = pd.DataFrame({"key": labels, **rows})
    return figures.weights_bars_compared(rows, labels, labels[query]), table


def _causal(settings, head, values):
    heads = compute.layer(settings.replace(causal=True)).attention.heads
    labels = _labels(settings)
    return (
        figures.attention_heatmap(heads.weights[head], labels, "Weights with the mask"),
        tables.matrix_frame(heads.weights[head], labels, labels),
    )


def _positions(settings, head, values):
    n = len(_labels(settings))
    d_model = settings.shape[0]
    kind = "minilm" if settings.trained else "sinusoidal"
    table = compute.encoding_table(kind, max(n, 2), d_model, settings.seed)
    title = "MiniLM's learned positions" if settings.trained else "Sinusoidal positions"
    figure = figures.matrix_heatmap(
        table,
        range(table.shape[0]),
        figures.feature_labels(table.shape[1]),
        f"{title} × dimensions",
        x_title="dimension",
        y_title="position",
        max_cols=figures.FEATURE_LIMIT,
    )
    return figure, tables.token_features(table, range(table.shape[0]))


def _multi_head(settings, head, values):
    if settings.trained:
        run = compute.layer(settings)
    else:
        heads = max(h for h in state.divisors(settings.d_model) if h <= 4)
        run = compute.layer(settings.replace(heads=heads, scale=None))
    labels = _labels(settings)
    weights = run.attention.weights
    figure = figures.heads_heatmaps(weights, labels)
    names = [f"head {h}" for h in range(weights.shape[0])]
    return figure, tables.panels(weights, names, labels, labels)


STEPS = (
    Step(
        "1 · Text becomes tokens",
        "A model never sees letters. A tokenizer cuts the text into pieces it knows — whole "
        "words, or fragments such as “##ian” — and gives each piece a number. Everything "
        "after this step works on those pieces. A trained model like MiniLM also adds two "
        "markers of its own, [CLS] at the start and [SEP] at the end.",
        "home",
        _tokens,
    ),
    Step(
        "2 · Each token asks, offers and carries",
        "Every token becomes a vector, and three learned matrices turn that vector into a "
        "query (what am I looking for?), a key (what do I contain?) and a value (what will "
        "I hand over?). Here are the queries of one head, one row per token: with MiniLM, "
        "the real numbers of a trained model's layer 3, head 1 (the sidebar picks another).",
        "home",
        _qkv,
    ),
    Step(
        "3 · Scores: how well each query matches each key",
        "Each query is compared with every key by a dot product. Row i, column j says how "
        "much token i's question matches token j's answer. Large and positive means a "
        "good match.",
        "attention",
        _scores,
    ),
    Step(
        "4 · Scaling, and a softmax that can saturate",
        "The scores are multiplied by a scale — 1/√d_k by default — before the softmax. "
        "Too small a scale and every token attends to everything equally; too large and "
        "each row collapses onto one key and learning stalls. The curves measure it; the "
        "red line is the current scale.",
        "attention",
        _saturation,
    ),
    Step(
        "5 · Weights: each row is a budget of 1",
        "The softmax turns each row of scores into positive weights that add up to one. "
        "Token i's output is the weighted average of all the values, with these weights. "
        "Find the row “it”: in MiniLM's layer 3, head 1 it spends 0.43 of its budget on "
        "“restaurant” — the head has learned what “it” refers to.",
        "attention",
        _weights,
    ),
    Step(
        "6 · What training changes",
        "The row “it” of the same head, on the same tokens, at the same sizes: grey with "
        "random weights, red with MiniLM's trained ones. The mechanism is identical; random "
        "weights spread “it” thinly over unrelated words, while training has made it find "
        "“restaurant”. Meaning lives in the weights.",
        "attention",
        _training,
    ),
    Step(
        "7 · The causal mask",
        "A model that writes text must not peek at words it has not written yet. The mask "
        "sets those scores to −∞ before the softmax, so their weights are exactly zero: "
        "everything above the diagonal disappears. MiniLM was trained reading both ways, so "
        "on it the mask is a what-if.",
        "causal_mask",
        _causal,
    ),
    Step(
        "8 · Where is each token?",
        "Attention alone ignores order: shuffle the words and the outputs just shuffle. "
        "Adding a positional encoding gives every position its own signature: MiniLM "
        "learned one vector per position; the random model uses the sinusoidal one, a "
        "different wave per dimension.",
        "positional_encoding",
        _positions,
    ),
    Step(
        "9 · Several heads at once",
        "Instead of one attention pattern, the features are split between heads, each "
        "with its own small queries and keys. Each head can follow a different relation — "
        "MiniLM's layer has twelve; their outputs are joined and mixed again.",
        "multi_head",
        _multi_head,
    ),
)

#: Where to go after the last step: pages beyond one layer, as st.page_link takes them.
WHERE_NEXT = (
    ("../pages/pretrained.py", "A real model's 72 heads: all-MiniLM-L6-v2"),
    ("../pages/summarize.py", "Summarize a document with the real model"),
    ("../pages/decoder.py", "A decoder writing one token at a time"),
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
