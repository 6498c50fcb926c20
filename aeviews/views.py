"""The app's views as Plotly figures for a notebook: the figure builders of :mod:`app.views`.

Each view takes what BertViz's take, or more: a text (run by our engine, :func:`attention`),
an :class:`aeviews.models.Attention`, or any model's attention as BertViz's
``head_view(attention, tokens)`` takes it (:func:`aeviews.arrays.as_layers`). A view
drawn from our engine's run hovers the numbers the app's does (the raw and scaled scores
beside a weight); from attention alone there are only the weights. The scale view and the
neuron view need the queries and keys, so our engine's run.

The figures are :class:`Figure`: a Plotly figure whose toolbar camera saves it at the size
the app's export gives (:func:`app.views.export.print_layout`, three times over) and
whose frames, the scale view's, play under a Plotly slider in the notebook itself.
:func:`table` gives the numbers each view's CSV button writes in the app.
"""

from __future__ import annotations

import copy
import re

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

import app.views.line_view as lines
import app.views.model_view as grid
import app.views.neuron_view as neurons
import app.views.scale_view as scales
from aeviews.arrays import as_layers, check_tokens
from aeviews.models import Attention, attention
from app.views import attention_maps, chart, export, heatmap, page
from app.words import wording
from engine.arithmetic import query_stages
from engine.attention import strong_links

#: plotly.py's notebook renderer loads MathJax from a CDN beside every figure's HTML; no
#: title of ours is LaTeX, so the tag goes.
_MATHJAX_TAG = re.compile(r'<script src="[^"]*mathjax[^"]*"></script>')


class Figure(go.Figure):
    """A Plotly figure whose toolbar saves it for a slide: the app's export size, at 3×.

    Shown by plotly's own renderers: in an ipykernel notebook the plotly mime type, which
    JupyterLab's plotly extension or VS Code draws with the plotly.js it ships; with the
    fallback HTML renderer, plotly.js inlined once, less the MathJax script plotly.py's
    HTML would load from a CDN beside each figure. Nothing comes from the network.
    """

    #: What the camera saves: "png" or "svg" (:func:`export_format` sets it for every figure).
    image_format = "png"

    def image_options(self, image_format="png", filename="attention-explorer"):
        """The camera's options: the print size (:func:`app.views.export.print_layout`), 3×."""
        printed = export.print_layout(self)
        return {
            "format": image_format,
            "filename": filename,
            "width": printed["width"],
            "height": printed["height"],
            "scale": export.EXPORT_SCALE,
        }

    def _display_config(self):
        name = f"attention-explorer_{self.layout.meta or 'view'}"
        options = self.image_options(self.image_format, name)
        return {"toImageButtonOptions": options, "displaylogo": False}

    def _repr_mimebundle_(self, include=None, exclude=None, validate=True, **kwargs):
        bundle = super()._repr_mimebundle_(
            include, exclude, validate, config=self._display_config(), **kwargs
        )
        if "text/html" in bundle:
            bundle["text/html"] = _MATHJAX_TAG.sub("", bundle["text/html"])
        return bundle

    def _ipython_display_(self):
        from IPython.display import display  # a notebook's: only there is this called

        bundle = self._repr_mimebundle_() if pio.renderers.render_on_display else {}
        if bundle:
            display(bundle, raw=True)
        else:  # no notebook renderer (a browser's, say): plotly's own way
            pio.show(self, config=self._display_config())


def export_format(image_format):
    """Make every figure's camera save ``"png"`` or ``"svg"``, as the app's sidebar chooses."""
    if image_format not in ("png", "svg"):
        raise ValueError(f"the camera saves png or svg, not {image_format!r}")
    Figure.image_format = image_format


def _figure(fig):
    """The builder's figure as a :class:`Figure`, retyped and themed in place.

    Themed as the app's chart component draws it (:func:`app.views.page.standalone`).
    ``Figure(fig)`` would copy and validate every array again: at 250 tokens that costs
    more than building the figure (15 ms against 8).
    """
    fig.__class__ = Figure
    return page.standalone(fig)


def _source(source, tokens, layer, head, model):
    """``source`` as an Attention (a text is run), or as (layers array, tokens) from arrays."""
    if isinstance(source, str):
        return attention(source, model, layer, head)  # None: the model's own default head
    if isinstance(source, Attention):
        return source.at(layer, head)
    layers = as_layers(source)
    return layers, check_tokens(tokens, layers.shape[-1])


#: Beyond this many tokens the head view is the long text's: tiles, each its block's
#: maximum or mean weight (:mod:`app.views.long_head`), not one cell per weight.
LONG_HEAD_TOKENS = 512


def _head(source, tokens=None, *, layer=None, head=None, model=None, title=None,
          reduction="max"):  # fmt: skip
    found = _source(source, tokens, layer, head, model)
    if isinstance(found, Attention):
        weights, labels, layer, head = found.weights, found.labels, found.layer, found.head
    else:
        layers, labels = found
        layer, head = layer or 0, head or 0
        weights = layers[layer, head]
    title = f"Layer {layer}, head {head}" if title is None else title
    if len(labels) > LONG_HEAD_TOKENS:
        return _long_head(weights, title, reduction)
    hover = {"scores": found.scores, "scaled": found.scaled} if isinstance(found, Attention) else {}
    fig = attention_maps.weights_figure(weights, labels, title, **hover)
    return fig, heatmap.table(weights, labels, labels)


def _long_head(weights, title, reduction):
    """A long text's head: its tiles' figure (the app's) and their table."""
    from app.views import long_head  # the long text's views (issue #52)
    from engine import tiling

    tiles = tiling.tile(weights, long_head.OVERVIEW_TILES, reduction)
    return long_head.tile_figure(tiles, title), long_head.tile_table(tiles)


def _lines(source, tokens=None, *, layer=None, heads=None, threshold=lines.DEFAULT_THRESHOLD,
           token=None, model=None, title=None):  # fmt: skip
    found = _source(source, tokens, layer, None, model)
    if isinstance(found, Attention):
        layer_weights, labels, layer = found.run.attentions[found.layer], found.labels, found.layer
    else:
        layers, labels = found
        layer = layer or 0
        layer_weights = layers[layer]
    heads = list(range(layer_weights.shape[0])) if heads is None else sorted(heads)
    links = strong_links(layer_weights[heads], threshold, None if token is None else [token])
    listed = ", ".join(f"H{h}" for h in heads) if heads else "none"
    title = f"layer {layer}, heads {listed}" if title is None else title
    fig = lines.figure(links, labels, heads, threshold, title, chosen=token)
    return fig, lines.table(links, labels, heads)


def _grid(source, tokens=None, *, model=None):
    if isinstance(source, str | Attention):
        found = _source(source, tokens, None, None, model)
        fig = grid.figure(found.attentions)
        fig.add_shape(grid.outline(found.attentions, (found.layer, found.head)))
        return fig, None
    layers = as_layers(source)
    if tokens is not None:
        check_tokens(tokens, layers.shape[-1])
    return grid.figure(layers), None


def _engine_source(source, layer, head, model, view):
    found = (
        _source(source, None, layer, head, model) if isinstance(source, str | Attention) else None
    )
    if found is None:
        raise TypeError(
            f"the {view} needs the queries and keys: give a text or ae.attention(...), "
            "not attention weights"
        )
    return found


def _neurons(source, *, token=None, layer=None, head=None, model=None):
    found = _engine_source(source, layer, head, model, "neuron view")
    labels = found.labels
    token = wording.default_query(labels) if token is None else token
    causal = found.mask is not None
    seen = slice(None, token + 1) if causal else slice(None)  # a causal token sees back only
    keys = found.run.keys[found.layer, found.head, seen]
    stages = query_stages(found.run.queries[found.layer, found.head, token], keys)
    fig = neurons.figure(stages, keys, labels[seen], labels[token])
    return fig, neurons.table(stages, keys, labels[seen])


def _scale(source, *, layer=None, head=None, model=None, title=None):
    found = _engine_source(source, layer, head, model, "scale view")
    title = f"Layer {found.layer}, head {found.head}" if title is None else title
    fig, sweep = scales.head_figure(found.q, found.k, found.v, found.labels, found.mask, title)
    return fig, scales.table(sweep, found.labels)


def head_view(attention, tokens=None, *, layer=None, head=None, model=None, title=None,
              reduction="max"):  # fmt: skip
    """One head's weights as the app's heatmap: queries down, keys across, 0 to 1.

    Beyond :data:`LONG_HEAD_TOKENS` tokens, the long text's view: at most 256 × 256
    tiles, each its block's maximum (``reduction="max"``) or mean (``"mean"``) weight, the
    title saying which, so that a 4,096-token head saved by :func:`save_html` stays a few
    MB; the head's exact weights are ``.weights``.

    Parameters
    ----------
    attention : str, Attention, or any model's attention (a per-layer sequence of
        [batch, heads, n, n] arrays, :func:`aeviews.arrays.as_layers`)
    tokens : sequence of n str, with attention arrays only
    layer, head : int, optional; a text's default is layer 3, head 1, arrays' 0 and 0
    model : None (MiniLM) or a checkpoint folder, for a text
    title : str, optional
    reduction : "max" or "mean", a long text's tiles

    Returns
    -------
    Figure (hover: the raw and scaled scores beside each weight, from our engine's run)
    """
    return _figure(
        _head(
            attention,
            tokens,
            layer=layer,
            head=head,
            model=model,
            title=title,
            reduction=reduction,
        )[0]
    )


def line_view(attention, tokens=None, *, layer=None, heads=None,
              threshold=lines.DEFAULT_THRESHOLD, token=None, model=None, title=None):  # fmt: skip
    """BertViz's head view: each token's lines to the tokens it attends to, a colour per head.

    Parameters
    ----------
    attention, tokens, layer, model, title : as in :func:`head_view`
    heads : sequence of int, optional, the heads drawn (all by default)
    threshold : float, the smallest weight a line stands for
    token : int, optional, draw only this query token's lines

    Returns
    -------
    Figure
    """
    return _figure(
        _lines(
            attention,
            tokens,
            layer=layer,
            heads=heads,
            threshold=threshold,
            token=token,
            model=model,
            title=title,
        )[0]
    )


def model_view(attention, tokens=None, *, model=None):
    """BertViz's model view: every head of every layer as a thumbnail, the layers × heads grid.

    An Attention's own head is outlined. ``tokens`` are checked against the attention's
    size (the thumbnails are pooled and carry no labels).
    """
    return _figure(_grid(attention, tokens, model=model)[0])


def neuron_view(attention, *, token=None, layer=None, head=None, model=None):
    """BertViz's neuron view: one query token against every key, stage by stage.

    ``attention`` is a text or an Attention (the view needs the queries and keys);
    ``token`` is the query's index (by default the first "it", else the first pronoun).
    """
    return _figure(_neurons(attention, token=token, layer=layer, head=head, model=model)[0])


def scale_view(attention, *, layer=None, head=None, model=None, title=None):
    """One head's weights at every stop of /attention's scale slider, under a Plotly slider.

    The engine's sweep (:func:`engine.attention.attention_over_scales`) is one Plotly
    frame per stop: dragging the slider recolours the heatmap with no kernel round trip,
    and hover gives each stop's raw score, scaled score and weight. A long text keeps
    fewer stops, and says so in the title (:mod:`app.views.scale_view`).
    """
    return _figure(_scale(attention, layer=layer, head=head, model=model, title=title)[0])


_TABLES = {"head": _head, "line": _lines, "model": _grid, "neuron": _neurons, "scale": _scale}


def table(attention, tokens=None, *, view="head", **options):
    """The numbers a view's CSV button writes in the app, as a DataFrame.

    ``view`` is ``"head"`` (the weights, queries by keys), ``"line"`` (each line: head,
    query, key, weight), ``"neuron"`` (each key's features, q ⊙ k, q·k, scaled, weight) or
    ``"scale"`` (every stop's every cell); the other arguments are the view's own.
    """
    if view not in _TABLES:
        raise ValueError(f"view must be one of {sorted(_TABLES)}, got {view!r}")
    if view in ("neuron", "scale"):
        found = _TABLES[view](attention, **options)[1]
    else:
        found = _TABLES[view](attention, tokens, **options)[1]
    if found is None:
        raise ValueError("the model view's thumbnails are pooled: take view='head' per head")
    return found


def save_csv(attention, path, tokens=None, *, view="head", **options):
    """Write :func:`table` as the app's CSV button does (full precision, −∞ as empty).

    A DataFrame (:func:`aeviews.roles.head_roles`'s) is written as it is.
    """
    found = attention if isinstance(attention, pd.DataFrame) else None
    text = chart.to_csv(
        found if found is not None else table(attention, tokens, view=view, **options)
    )
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(text)
    return path


def for_slide(fig):
    """A copy of ``fig`` laid out as the app exports it: the print size, font and labels."""
    laid_out = copy.deepcopy(fig)
    laid_out.update_layout(
        export.print_layout(fig), paper_bgcolor="white", plot_bgcolor="white", sliders=[]
    )
    return laid_out


def save_html(fig, path, title="Attention Explorer", caption=""):
    """Write ``fig`` as one self-contained HTML page (:func:`app.views.page.html`).

    plotly.js is inlined and nothing is fetched from anywhere: the page draws offline, the
    scale view's slider plays its frames, and two buttons save the figure for a slide.
    Returns the file's size in bytes.
    """
    return page.save(fig, path, title, caption)
