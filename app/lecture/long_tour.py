"""The tour's steps on a long text (#52): each n × n map as tiles with a zoom, one head at a time.

Past :data:`app.data.passes.LONG_TOKENS` tokens (a trained model's text) a step whose
figure is one head's n × n map draws it as :mod:`app.views.long_head` does on the core
pages, from :func:`app.data.long_layers.head_map`: the whole map as tiles, the zoom's
exact cells beside it. Step 9's heads side by side are :func:`app.data.long_layers.every_head`'s
tiles, one head's n × n at a time. Step 6's random model would run every head's n × n
over the text: it says so and draws the trained head's row around the query instead.
Each function here draws its step into ``container`` and returns nothing; the sentences
(``*_says``) are computed from the text, as the short steps' are.
"""

from __future__ import annotations

import streamlit as st

from app.data import layers, long_layers, passes
from app.views import bars, chart, long_head, multi_head, style
from app.words import long_texts, wording

#: Tiles on a side of each head's panel in step 9, as on /multi-head.
PANEL_TILES = 128


def is_long(labels):
    """Whether a text of these tokens is drawn as a long one (tiles with a zoom)."""
    return len(labels) > passes.LONG_TOKENS


def layer(settings):
    """The layer a step draws: a long text's keeps no head's weights (n × d alone)."""
    long = is_long(layers.tokens(settings)[0].labels)
    return layers.layer(settings, keep_weights=not long)


def saturation_curve(settings, head):
    """Step 4's curve: a long text's sweep reads its rows' scores from q and k alone."""
    long = is_long(layers.tokens(settings)[0].labels)
    return (long_layers.saturation_curve if long else layers.saturation_curve)(settings, head)


def _map(settings, head, labels, step, kind, title, value="weight", blank=""):
    """One head's map ``kind`` (:data:`app.data.long_layers.MAPS`) as tiles with its zoom."""
    n = len(labels)
    st.caption(long_texts.long_maps(n, f"this head's {title.lower()}", *long_head.SIZES))
    token = wording.default_query(labels)
    reduction, rows, cols = long_head.controls(
        f"tour_{step}_reduction", f"tour_{step}_tiles", token, n
    )
    maps = long_layers.head_map(settings, head, kind, reduction, rows, cols, *long_head.SIZES)
    long_head.show_map(
        st, f"tour_step_{step}", maps, labels, rows, cols, title, zoom=f"tour_{step}_tiles",
        value=value, blank=blank,
    )  # fmt: skip


def scores(settings, head, labels, step):
    """Step 3: the raw scores q · kᵀ of the head, tiles and zoom on the diverging scale."""
    _map(settings, head, labels, step, "scores", "Raw scores q·kᵀ", value="score")


def weights(settings, head, labels, step):
    """Step 5: the head's weights at the page's scale and mask."""
    _map(settings, head, labels, step, "weights", "Attention weights")


def causal(settings, head, labels, step):
    """Step 7: the head's weights with the causal mask."""
    _map(settings.replace(causal=True), head, labels, step, "weights", "Weights with the mask")


def weights_says(settings, head, labels):
    """Step 5's sentences on a long text: the query's row read alone (its block's rows)."""
    query = wording.default_query(labels)
    row = long_layers.query_row(settings, head, query)
    said = [
        wording.query_note(labels, query) or f"Find the row {wording.quote(labels[query])}.",
        f"In {wording.head_model(settings.label, settings.layer, head)}, "
        + wording.attends(row, labels, query),
    ]
    return " ".join(said)


def training(settings, head, labels, step):
    """Step 6 on a long text: the random model's side needs a short one; the trained row alone."""
    n = len(labels)
    query = wording.default_query(labels)
    start, stop = long_head.around(query, n, long_head.AROUND)
    row = long_layers.query_row(settings, head, query)
    heads = long_layers.layer(settings).attention.q.shape[0]  # the model's, as the pass ran it
    st.info(long_texts.random_needs_short(n, heads, passes.LONG_TOKENS, start, stop))
    rows = {f"{settings.label}, {wording.layer_head(settings.layer, head)}": row[start:stop]}
    names = long_head.token_labels(labels, start, stop)
    figure = bars.compared_figure(rows, names, labels[query])
    figure.update_traces(marker_color=style.COMPARE_COLORS[1])  # red: the trained side's colour
    chart.draw(st, figure, f"tour_step_{step}", table=bars.compared_table(rows, names))


def training_says(settings, head, labels):
    """Step 6's sentences on a long text: where the trained head's query row goes."""
    query = wording.default_query(labels)
    row = long_layers.query_row(settings, head, query)
    return " ".join(
        filter(
            None,
            [
                wording.query_note(labels, query),
                f"In {wording.head_model(settings.label, settings.layer, head)}, "
                + wording.attends(row, labels, query),
                "Meaning lives in the weights.",
            ],
        )
    )


def multi_heads(settings, head, labels, step):
    """Step 9: every head's tiles side by side, each head computed and tiled before the next."""
    n = len(labels)
    st.caption(
        long_texts.long_maps(
            n,
            "every head's weights",
            PANEL_TILES,
            long_head.ZOOM_CELLS,
            "“Explore this on its own page” zooms into any head.",
            zoom=False,
        )
    )
    reduction = st.radio(
        "Each tile shows its block's",
        list(long_head.REDUCTION_NAMES),
        format_func=long_head.REDUCTION_NAMES.get,
        horizontal=True,
        key=f"tour_{step}_reduction",
    )
    window = long_head.around(wording.default_query(labels), n, long_head.AROUND)
    found = long_layers.every_head(settings, reduction, PANEL_TILES, window)
    name = long_head.REDUCTION_NAMES[reduction]
    names = multi_head.tile_names(found.edges)
    title = f"Attention weights per head: tiles of {n:,} tokens, each the {name} of its block"
    stat = [f"{bits:.2f} bits" for bits in found.entropy]
    figure = multi_head.figure(found.tiles, names, title=title, stat=stat)
    chart.draw(st, figure, f"tour_step_{step}", table=multi_head.table(found.tiles, names))


#: The steps drawn otherwise on a long text, by the short chart function's name.
DRAWN = {
    "_scores": scores,
    "_weights": weights,
    "_training": training,
    "_causal": causal,
    "_multi_head": multi_heads,
}
#: The steps whose sentences read a long text otherwise, by the short function's name.
SAYS = {"_weights_says": weights_says, "_training_says": training_says}
