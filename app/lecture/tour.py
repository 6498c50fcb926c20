"""The guided tour: each step a few sentences of explanation and one live figure.

Steps are data: a title, the text, the page to explore further, a function from the
current controls to the figure, built from the same cached engine calls and figure
builders as the pages themselves, and a function to the sentences that name the
figure's tokens and numbers, built by :mod:`app.words.wording` as the pages' are: the text
names no token, weight or head that the figure for the sentence on screen does not show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from app.data import encodings, layers
from app.lecture import induction_step, long_tour
from app.state import controls, weights
from app.views import attention_maps, bars, heatmap, multi_head, saturation, token_ids
from app.words import wording


@dataclass(frozen=True)
class Step:
    """One stop of the tour.

    ``chart`` takes the settings the page runs (:class:`app.state.controls.Settings`), the
    shared head and the shared values, and returns the step's figure and the engine's
    numbers behind it (its CSV). ``says`` takes the same and returns the sentences, in
    Markdown, that follow ``text`` and name what the figure shows for this text (None:
    ``text`` alone).
    """

    title: str
    text: str
    page: str  # the page's script name, as in app.registry
    chart: Callable[[controls.Settings, int, dict], tuple[go.Figure, pd.DataFrame]]
    says: Callable[[controls.Settings, int, dict], str | None] = lambda *_: None
    #: A figure not of the sidebar's model (the induction step's is SmolLM2's, whatever the
    #: sidebar runs): what opens ``page`` on what it shows, its packaged model's name
    #: (``model``) and session-state values (its layer and head). None: the sidebar's model.
    explore: Callable[[], dict] | None = None


def _labels(settings):
    return layers.tokens(settings)[0].labels


def _tokens(settings, head, values):
    tokenization = layers.tokens(settings)[0]
    labels, ids = tokenization.labels, tokenization.ids
    return token_ids.figure(labels, ids), token_ids.table(labels, ids)


def _tokens_says(settings, head, values):
    tokenization = layers.tokens(settings)[0]
    kind = {"minilm": "wordpiece", "smollm2": "bpe"}.get(settings.weights, settings.tokenizer)
    sentences = wording.tokens_sentences(tokenization, kind)
    if settings.weights == "minilm":
        sentences.append(
            "MiniLM also adds two markers of its own, [CLS] at the start and [SEP] at the end."
        )
    elif settings.trained:
        sentences.append(f"{settings.label} adds no markers of its own: every token is the text's.")
    return " ".join(sentences)


def _qkv(settings, head, values):
    run = long_tour.layer(settings)  # a long text's keeps no head's weights
    labels = _labels(settings)
    if settings.trained:
        bias = " + b_Q" if layers.adds_biases(settings) else ""  # Llama's adds none
        rotated = ", after the rotary rotation" if settings.config.rotary else ""
        title = f"Queries Q = X W_Q{bias} of layer {settings.layer}, head {head}{rotated}"
        q = run.attention.q[head]
    else:
        title, q = "Queries Q = X W_Q", run.q
    return heatmap.features_figure(q, labels, title), heatmap.features_table(q, labels)


def _qkv_says(settings, head, values):
    if settings.trained:
        return (
            f"These are the real numbers of {settings.label}'s "
            f"{wording.layer_head(settings.layer, head)}, "
            "a trained model (the sidebar picks another layer and head)."
        )
    return "These are the random model's: the same mechanism before any training."


def _scores(settings, head, values):
    heads = layers.layer(settings).attention.heads
    labels = _labels(settings)
    return (
        attention_maps.scores_figure(heads.scores[head], labels, "Raw scores q·kᵀ"),
        heatmap.table(heads.scores[head], labels, labels),
    )


def _saturation(settings, head, values):
    scales, stats, rows = long_tour.saturation_curve(settings, head)
    default = controls.default_scale(*settings.shape)
    scale = default if settings.scale is None else settings.scale
    return (
        saturation.figure(scales, stats, scale, default, rows),
        saturation.curve_table(scales, stats),
    )


def _weights(settings, head, values):
    heads = layers.layer(settings).attention.heads
    labels = _labels(settings)
    return (
        attention_maps.weights_figure(
            heads.weights[head], labels, scores=heads.scores[head], scaled=heads.masked[head]
        ),
        heatmap.table(heads.weights[head], labels, labels),
    )


def _weights_says(settings, head, values):
    weights = layers.layer(settings).attention.heads.weights[head]
    labels = _labels(settings)
    query = wording.default_query(labels)
    said = [
        wording.query_note(labels, query) or f"Find the row {wording.quote(labels[query])}.",
        f"In {wording.head_model(settings.trained and settings.label, settings.layer, head)}, "
        + wording.attends(weights[query], labels, query),
        "A large weight shows where a head looks, not what the model understands: whether "
        "a head follows what a pronoun refers to, or just a nearby noun, a minimal pair on "
        "the pretrained page can test.",
    ]
    return " ".join(said)


def _pair(settings, head, values):
    """The model, layer, head, and the random and trained weights of the comparison, or None."""
    name = weights.comparison_model(values)
    if name is None:
        return None, 0, head, None
    layer, head = (settings.layer, head) if settings.trained else controls.default_head(name)
    scale = settings.scale if settings.trained else None  # the toy's scale suits its own d_k
    causal = settings.causal or controls.trained_config(name).causal
    pair = layers.random_and_trained(name, settings.text, layer, values["seed"], scale, causal)
    return name, layer, head, pair


def _training(settings, head, values):
    """The query row with random weights beside a trained model's."""
    name, layer, head, pair = _pair(settings, head, values)
    if pair is None:
        heads = layers.layer(settings).attention.heads
        labels = _labels(settings)
        return (
            attention_maps.weights_figure(
                heads.weights[head], labels, "Random weights (no trained model available)"
            ),
            heatmap.table(heads.weights[head], labels, labels),
        )
    labels, random_weights, trained_weights = pair
    query = wording.default_query(labels)
    trained = f"{controls.short_name(name)}, {wording.layer_head(layer, head)}"
    rows = {
        f"Random (seeded), head {head}": random_weights[head, query],
        trained: trained_weights[head, query],
    }
    figure = bars.compared_figure(rows, labels, labels[query])
    return figure, bars.compared_table(rows, labels)


def _training_says(settings, head, values):
    name, layer, head, pair = _pair(settings, head, values)
    if pair is None:
        return "No trained model is installed here, so the chart shows the random weights alone."
    labels, random_weights, trained_weights = pair
    query = wording.default_query(labels)
    trained = f"{controls.short_name(name)}'s {wording.layer_head(layer, head)}"
    compared = wording.random_and_trained(
        labels, query, random_weights[head, query], trained_weights[head, query], trained
    )
    said = [wording.query_note(labels, query), compared, "Meaning lives in the weights."]
    return " ".join(filter(None, said))


def _causal(settings, head, values):
    heads = layers.layer(settings.replace(causal=True)).attention.heads
    labels = _labels(settings)
    return (
        attention_maps.weights_figure(heads.weights[head], labels, "Weights with the mask"),
        heatmap.table(heads.weights[head], labels, labels),
    )


def _causal_says(settings, head, values):
    if settings.trained and settings.config.causal:
        return f"{settings.label} is a decoder, trained with this mask: these are its own weights."
    if settings.trained:
        return f"{settings.label} was trained reading both ways, so on it the mask is a what-if."
    return None


#: Step 8's title for each table it can draw, by the encoding's kind.
POSITION_TITLES = {
    "minilm": "MiniLM's learned positions × dimensions",
    "smollm2": "SmolLM2's rotary angles: cos and sin × position",
    "sinusoidal": "Sinusoidal positions × dimensions",
    "learned": "Learned (seeded) positions × dimensions",
    "rotary": "Rotary: cos and sin of each position's angles × dimensions",
}


def _position_kind(settings):
    """The table step 8 draws: the model's own, or the sinusoidal one when it adds none."""
    if settings.trained:
        return settings.weights
    return "sinusoidal" if settings.pe == "none" else settings.pe


def _positions(settings, head, values):
    n = len(_labels(settings))
    d_model = settings.shape[0]
    kind = _position_kind(settings)
    table = encodings.encoding_table(kind, max(n, 2), d_model, settings.seed)
    title = POSITION_TITLES[kind]
    if not settings.trained and settings.pe == "none":
        title = "Sinusoidal positions × dimensions: not added now (Add positions: None)"
    figure = heatmap.figure(
        table,
        range(table.shape[0]),
        heatmap.feature_labels(table.shape[1]),
        title,
        x_title="dimension (of one head)" if kind == "smollm2" else "dimension",
        y_title="position",
        max_cols=heatmap.FEATURE_LIMIT,
        clip=True,
    )
    return figure, heatmap.features_table(table, range(table.shape[0]))


def _positions_says(settings, head, values):
    if settings.weights == "minilm":
        return (
            "MiniLM learned one vector per position and adds it to each token's embedding. "
            + wording.LEARNED_POSITIONS_SCALE
        )
    if settings.trained:
        return wording.rotary_positions(settings)
    return {
        "none": "The random model adds no positions now (“Add positions” is “None” in the "
        "sidebar), so it sees the words in no order. The chart shows the sinusoidal table "
        "it would add: a different wave per dimension.",
        "sinusoidal": "The random model adds the sinusoidal table: a different wave per dimension.",
        "learned": "The random model adds a learned table, here seeded random numbers, as "
        "a model's would be before training.",
        "rotary": "The random model uses rotary positions: nothing is added; each query and "
        "key is rotated by angles that grow with its position, whose cosines and sines the "
        "chart shows.",
    }[settings.pe]


def _random_heads(settings):
    """Heads step 9 runs the random model with: the most, up to four, that divide d_model."""
    return max(h for h in controls.divisors(settings.d_model) if h <= 4)


def _multi_head(settings, head, values):
    if settings.trained:
        run = layers.layer(settings)
    else:
        run = layers.layer(settings.replace(heads=_random_heads(settings), scale=None))
    labels = _labels(settings)
    weights = run.attention.weights
    return multi_head.figure(weights, labels), multi_head.table(weights, labels)


def _multi_head_says(settings, head, values):
    if settings.trained:
        return (
            f"{settings.label}'s layer {settings.layer} has "
            f"{wording.plural(settings.config.n_heads, 'head')}, "
            "numbered from 0 as on every chart."
        )
    heads = _random_heads(settings)
    return (
        f"Here the random model runs {wording.plural(heads, 'head')} of "
        f"{settings.d_model // heads} features each (at most four, so each stays legible), "
        "numbered from 0 as on every chart."
    )


STEPS = (
    Step(
        "1 · Text becomes tokens",
        "A model never sees letters. A tokenizer cuts the text into pieces it knows — whole "
        "words, or fragments of rarer words — and gives each piece a number. Everything "
        "after this step works on those pieces.",
        "home",
        _tokens,
        _tokens_says,
    ),
    Step(
        "2 · Each token asks, offers and carries",
        "Every token becomes a vector, and three learned matrices turn that vector into a "
        "query (what am I looking for?), a key (what do I contain?) and a value (what will "
        "I hand over?). Here are the queries of one head, one row per token.",
        "home",
        _qkv,
        _qkv_says,
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
        "Token i's output is the weighted average of all the values, with these weights.",
        "attention",
        _weights,
        _weights_says,
    ),
    Step(
        "6 · What training changes",
        "One row of the same head, on the same tokens, at the same sizes: grey with random "
        "weights, red with a trained model's. The mechanism is identical; only the "
        "weights differ.",
        "attention",
        _training,
        _training_says,
    ),
    Step(
        "7 · The causal mask",
        "A model that writes text must not peek at words it has not written yet. The mask "
        "sets those scores to −∞ before the softmax, so their weights are exactly zero: "
        "everything above the diagonal disappears.",
        "causal_mask",
        _causal,
        _causal_says,
    ),
    Step(
        "8 · Where is each token?",
        "Attention alone ignores order: shuffle the words and the outputs just shuffle. "
        "A positional encoding gives every position its own signature.",
        "positional_encoding",
        _positions,
        _positions_says,
    ),
    Step(
        "9 · Several heads at once",
        "Instead of one attention pattern, the features are split between heads, each "
        "with its own small queries and keys. Each head can follow a different relation; "
        "their outputs are joined and mixed again.",
        "multi_head",
        _multi_head,
        _multi_head_says,
    ),
    *induction_step.steps(Step),  # SmolLM2's induction heads, where it is installed
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
    return 1, f"There is no tour step “{controls.md_escape(str(raw)[:20])}”; starting at step 1."
