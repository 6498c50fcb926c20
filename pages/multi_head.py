"""Multi-head attention: split Q, K, V into heads, attend per head, concatenate, mix with W_O."""

import streamlit as st

from app.data import long_layers, passes
from app.lecture.presentation import control_hint
from app.state import controls
from app.views import arithmetic, equation, gqa, heatmap, line_view, long_head, multi_head, tables
from app.widgets import notices, pickers
from app.words import equations, long_texts, wording
from engine.attention import kv_head_of

st.title("Multi-head attention")
equation.show(equations.MULTI_HEAD)
st.caption(
    "Each head gets its own slice of the Q, K and V columns, attends on its own, and the "
    "heads' outputs are joined side by side and mixed by W_O. "
    + wording.INDEXING
    + " Vaswani et al. (2017, §3.2.2) count heads from 1: their head₁ is head 0 here."
)

settings, tokenization, run = notices.layer_or_stop()
labels = tokenization.labels
mha = run.attention
n_heads, n, d_head = mha.q.shape
long = n > passes.LONG_TOKENS  # each head as tiles, one head's n × n at a time
if settings.trained:
    st.caption(
        wording.trained_heads(settings)
        + control_hint(
            " Choose “Random (seeded)” under Weights to set the number of heads yourself."
        )
    )
else:
    st.caption(
        notices.weights_note(settings, 0) + control_hint(" Set the number of heads in the sidebar.")
    )

st.metric("Heads × features per head", f"{n_heads} × {d_head} = {n_heads * d_head}")
heatmap.show_features(
    st, "mh_q", run.q, labels, "Q, with each head's columns marked", column_groups=n_heads
)


def long_every_head(reduction, window):
    """Every head's tiles side by side, and its entropy: one head's n × n at a time."""
    found = long_layers.every_head(settings, reduction, PANEL_TILES, window)
    name = long_head.REDUCTION_NAMES[reduction]
    multi_head.show(
        st,
        "mh_heads",
        found.tiles,
        multi_head.tile_names(found.edges),
        title=f"Attention weights per head: tiles of {n:,} tokens, each the {name} of its block",
        stat=[f"{bits:.2f} bits" for bits in found.entropy],
    )
    tables.show(st, multi_head.entropy_rows(found.entropy, found.effective, found.largest))
    return found.window


def long_one_head(reduction, rows, cols):
    """The sidebar's head as tiles with its zoom, and a clicked cell's arithmetic."""
    head = pickers.shared_head(run)
    maps = long_layers.head_map(settings, head, "weights", reduction, rows, cols, *long_head.SIZES)
    title = f"Head {head}"
    click = long_head.show_map(st, "mh_head", maps, labels, rows, cols, title, zoom="mh_tiles")
    cell = arithmetic.clicked_cell("mh_head_zoom", click, rows[1] - rows[0], cols[1] - cols[0])
    cell = None if cell is None else (cell[0] + rows[0], cell[1] + cols[0])
    qkv = (mha.q[head], mha.k[head], mha.v[head])
    arithmetic.panel(cell, qkv, mha.heads.scale, run.mask, labels, head=head)
    return head


#: Tiles on a side of each head's panel, side by side, on a long text.
PANEL_TILES = 128

if long:  # every head as tiles, then the sidebar's with a zoom; lines around the pronoun
    st.caption(
        long_texts.long_maps(
            n,
            "every head's weights",
            *long_head.SIZES,
            f"Side by side, each head at most {PANEL_TILES} tiles a side; below, the sidebar's "
            f"head at {long_head.OVERVIEW_TILES} with its zoom. Q, the concatenation and the "
            "output are drawn whole, one row a token.",
        )
    )
    token = wording.default_query(labels)
    reduction, rows, cols = long_head.controls("mh_reduction", "mh_tiles", token, n)
    window = long_head.around(token, n, long_head.AROUND)
    window_weights = long_every_head(reduction, window)
    clicked_head = long_one_head(reduction, rows, cols)
else:
    entropy = multi_head.entropy_table(mha.weights)
    stat = [f"{bits:.2f} bits" for bits in entropy["mean entropy (bits)"]]
    click = multi_head.show(st, "mh_heads", mha.weights, labels, stat=stat, clicks=True)
    clicked_head = arithmetic.clicked_head("mh_heads", click, n_heads, pickers.shared_head(run))
    arithmetic.panel(
        arithmetic.clicked_cell("mh_heads", click, n, n),
        (mha.q[clicked_head], mha.k[clicked_head], mha.v[clicked_head]),
        mha.heads.scale,
        run.mask,
        labels,
        head=clicked_head,
    )
    tables.show(st, entropy)
st.subheader("Line view")
st.caption(
    "The same heads as BertViz draws them: each query token on the left, a line to each key "
    "on the right it attends to, one colour per head. Point at a token for its lines alone; "
    "click it to keep them."
)
heads, threshold = line_view.controls("mh_lines", n_heads, clicked_head)
if long:
    start, stop = window
    st.caption(
        f"{n:,} tokens are too many lines to follow: the {stop - start} tokens around "
        f"“{controls.md_escape(labels[wording.default_query(labels)])}”, their weights on "
        "each other alone."
    )
    line_view.show_window(
        st, "mh_lines", window_weights, labels[start:stop], start, settings.layer, heads, threshold
    )
else:
    line_view.show(
        st,
        "mh_lines",
        mha.weights,
        labels,
        heads,
        threshold,
        line_view.token_picker(st, "mh_lines_token", labels),
        f"{n_heads} head{'s' if n_heads > 1 else ''}",
        picker="mh_lines_token",
    )
left, right = st.columns(2)
heatmap.show_features(
    left, "mh_concat", mha.concat, labels, "Concat(head outputs)", column_groups=n_heads
)
heatmap.show_features(
    right,
    "mh_output",
    mha.output,
    labels,
    "Output = Concat · W_O" + (" + b_O" if getattr(run.weights, "b_o", None) is not None else ""),
)

if settings.trained and settings.config.kv_heads < settings.config.n_heads:
    st.subheader("Grouped-query attention")
    st.caption(wording.grouped_heads(settings.config))
    kv_of = kv_head_of(settings.config.n_heads, settings.config.kv_heads)
    gqa.show(st, "mh_gqa", kv_of, pickers.shared_head(run))
