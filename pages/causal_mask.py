"""Causal mask: what each token may see, and what masking does to the weights."""

import streamlit as st

import engine
from app.data import layers, long_layers, passes
from app.lecture.presentation import control_hint
from app.views import arithmetic, attention_maps, equation, heatmap, long_head
from app.widgets import notices, pickers
from app.words import equations, long_texts, wording

st.title("The causal mask")
equation.show(equations.CAUSAL)
st.caption(
    "A decoder writes one token at a time, so a token may only attend to itself and to the "
    "tokens before it. Masked scores become −∞ and the softmax turns them into exactly 0."
    + control_hint(" The sidebar's “Mask future tokens” switch applies the mask on every page.")
)

settings, tokenization, run, head = notices.head_or_stop()
labels = tokenization.labels
long = len(labels) > passes.LONG_TOKENS  # each map as tiles with a zoom, one head at a time
own_mask = settings.trained and settings.config.causal
if own_mask:
    st.info(
        f"{settings.label} is a decoder: it was trained with this mask, so the masked side "
        "is the model's own attention, and the side without it is the what-if — the same "
        "trained scores with the later tokens let in, something the model never does."
    )
elif settings.trained:
    st.info(
        f"{settings.label} is an encoder: it was trained reading in both directions, so every "
        "token sees every other. Masking it here is a what-if — the same trained scores with "
        "the later tokens cut off — not something the model ever does. Side by side, with "
        "and without."
    )
what_if, as_read = ("", "")
if own_mask:
    what_if, as_read = f" (as {settings.label} reads)", " (what-if)"
elif settings.trained:
    what_if, as_read = " (what-if)", f" (as {settings.label} reads)"


def draw_long(key, kind, title, side, zoom, **options):
    """One of a long text's maps as tiles beside the shared zoom; returns the zoom's click."""
    reduction, rows, cols = zoom
    maps = long_layers.head_map(side, head, kind, reduction, rows, cols, *long_head.SIZES)
    value = long_layers.MAPS[kind]
    return long_head.show_map(
        st, key, maps, labels, rows, cols, title, zoom="causal_tiles", value=value, **options
    )


if long:  # the four maps as tiles, one head's n × n at a time, one zoom for all
    st.caption(
        long_texts.long_maps(
            len(labels),
            "the mask, the masked scores and the weights with and without the mask",
            *long_head.SIZES,
            "A score tile's mean is over the cells the mask lets through.",
        )
    )
    zoom = long_head.controls(
        "causal_reduction", "causal_tiles", wording.default_query(labels), len(labels)
    )
    masked_side, unmasked_side = settings.replace(causal=True), settings.replace(causal=False)
    draw_long(
        "causal_mask", "mask", "Causal mask: 1 where the query sees the key", masked_side, zoom
    )
    blank = "a tile the mask hides whole is blank (−∞)"
    draw_long("causal_scores", "masked", "Masked scaled scores", masked_side, zoom, blank=blank)
    title = "Weights with the mask" + what_if
    click = draw_long("causal_weights_masked", "weights", title, masked_side, zoom)
    title = "Weights without the mask" + as_read
    draw_long("causal_weights_unmasked", "weights", title, unmasked_side, zoom)
    _, rows, cols = zoom
    cell = arithmetic.clicked_cell(
        "causal_weights_masked_zoom", click, rows[1] - rows[0], cols[1] - cols[0]
    )
    cell = None if cell is None else (cell[0] + rows[0], cell[1] + cols[0])
    masked_run = long_layers.layer(masked_side)
else:
    masked_run = layers.layer(settings.replace(causal=True))
    masked = masked_run.attention.heads
    unmasked = layers.layer(settings.replace(causal=False)).attention.heads

    left, right = st.columns(2)
    heatmap.show_mask(left, "causal_mask", engine.causal_mask(len(labels)), labels)
    attention_maps.show_scores(
        right, "causal_scores", masked.masked[head], labels, "Masked scaled scores"
    )

    def weights(column, side, heads, title, clicks=False):
        """One side's weights, each cell's hover with the scores behind it."""
        return attention_maps.show_weights(
            column,
            f"causal_weights_{side}",
            heads.weights[head],
            labels,
            title,
            scores=heads.scores[head],
            scaled=heads.masked[head],
            clicks=clicks,
        )

    left, right = st.columns(2)
    click = weights(left, "masked", masked, "Weights with the mask" + what_if, clicks=True)
    weights(right, "unmasked", unmasked, "Weights without the mask" + as_read)
    cell = arithmetic.clicked_cell("causal_weights_masked", click, *masked.weights[head].shape)

attention = masked_run.attention
arithmetic.panel(
    cell,
    (attention.q[head], attention.k[head], attention.v[head]),
    attention.heads.scale,
    masked_run.mask,
    labels,
)

st.subheader("What each token can see")
query = pickers.token_picker("causal_query", labels, default=wording.default_query(labels))
st.text("Visible with the mask: " + " ".join(labels[: query + 1]))
st.text(f"Hidden by the mask: {len(labels) - query - 1} later tokens")
