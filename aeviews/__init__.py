"""Attention Explorer's views in a notebook or a script, with no server: ``import aeviews as ae``.

From a text, with our engine (all-MiniLM-L6-v2 by default, or any checkpoint folder the
app reads)::

    import aeviews as ae
    att = ae.attention("The animal didn't cross the street because it was too tired.")
    ae.head_view(att)      # one head's weights, the raw and scaled scores in the hover
    ae.line_view(att)      # BertViz's head view: lines from each token, a colour per head
    ae.model_view(att)     # every head of every layer
    ae.neuron_view(att)    # one query against every key, stage by stage
    ae.scale_view(att)     # the scale slider of /attention, as Plotly frames
    ae.save_html(ae.scale_view(att), "scale.html")  # one self-contained page
    ae.head_roles(model="smollm2")  # every head's role scores, a DataFrame
    ae.head_roles_view(model="smollm2")  # the atlas of head roles: a grid per role

From any model's attention, as BertViz takes it (a per-layer sequence of [batch, heads,
n, n] arrays, PyTorch tensors included)::

    outputs = model(**inputs, output_attentions=True)
    ae.line_view(outputs.attentions, tokens)

The views are the app's own figure builders (:mod:`app.views`), the numbers the engine's.
The import name is not the app's browser component, ``attention_explorer``.
"""

from __future__ import annotations

import logging

import streamlit  # noqa: F401  (its loggers first: they are given their levels when made)

# The app's view modules use Streamlit caches; outside a Streamlit server each would log
# that it keeps its entries in memory, which is what a notebook wants.
logging.getLogger("streamlit.runtime.caching.cache_data_api").setLevel(logging.ERROR)

from aeviews.arrays import as_array, as_layers  # noqa: E402
from aeviews.models import Attention, attention  # noqa: E402
from aeviews.roles import head_roles, head_roles_view  # noqa: E402
from aeviews.views import (  # noqa: E402
    Figure,
    export_format,
    for_slide,
    head_view,
    line_view,
    model_view,
    neuron_view,
    save_csv,
    save_html,
    scale_view,
    table,
)

__all__ = [
    "Attention",
    "Figure",
    "as_array",
    "as_layers",
    "attention",
    "export_format",
    "for_slide",
    "head_roles",
    "head_roles_view",
    "head_view",
    "line_view",
    "model_view",
    "neuron_view",
    "save_csv",
    "save_html",
    "scale_view",
    "table",
]
