"""A view's link: the shared controls as URL parameters, written and read back.

A copied link reproduces the view on any page. Values arriving from a URL are parsed
and checked; a bad one falls back to the default and leaves a warning for the page to
show. Pure: :mod:`app.state.session` reads and writes the browser's URL with these.
"""

from __future__ import annotations

import math

from app.state.controls import (
    CONTROLS,
    D_MODEL_CHOICES,
    MAX_URL_TEXT,
    TEXT_KEYS,
    divisors,
    md_escape,
    model_shape,
    n_layers,
)


def format_value(key, value):
    """A value as it is written in the URL."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_query(query, controls=CONTROLS):
    """Turn URL parameters into control values, with a warning for each bad one.

    Pure: takes the query as a mapping of key to str or list of str, returns the
    values it accepted and the warnings. Repeated keys take the last value; unknown
    keys are named in a warning; values that fail their parser, or that break a rule
    between controls (heads must divide d_model), fall back to the default.

    Returns
    -------
    values : dict of key -> value, for the keys given and accepted
    warnings : list of str
    """
    values, warnings = {}, []
    for key, raw in query.items():
        text = raw[-1] if isinstance(raw, list | tuple) else raw
        control = controls.get(key)
        if control is None:
            if key not in EXTRA_PARAMS:
                warnings.append(f"Ignored the unknown link parameter “{_clip(key)}”.")
            continue
        try:
            values[key] = control.parse(str(text))
        except (ValueError, OverflowError):
            warnings.append(
                f"Ignored {key}=“{_clip(str(text))}” from the link: {key} must be "
                f"{control.describe}. Using the default instead."
            )
    if "d_model" in values and values["d_model"] not in D_MODEL_CHOICES:
        warnings.append(
            f"Ignored d_model={values.pop('d_model')} from the link: it must be "
            f"{controls['d_model'].describe}. Using the default instead."
        )
    d_model = values.get("d_model", controls["d_model"].default)
    if "heads" in values and values["heads"] not in divisors(d_model):
        warnings.append(
            f"Ignored heads={values.pop('heads')} from the link: it must divide "
            f"d_model={d_model}. Using the default instead."
        )
    selected = _selected(values, controls)
    layers = n_layers(selected)
    trained = selected["weights"] != "random"  # the random model ignores the layer
    if "layer" in values and trained and values["layer"] >= layers:
        warnings.append(
            f"Ignored layer={values.pop('layer')} from the link: this model has {layers} "
            "layers, numbered from 0. Using the default instead."
        )
    n_heads = model_shape(selected)[1]
    if "head" in values and values["head"] >= n_heads:
        warnings.append(
            f"Ignored head={values.pop('head')} from the link: this model has {n_heads} "
            "heads, numbered from 0. Using the default instead."
        )
    return values, warnings


def _selected(values, controls):
    """The weights and sizes that ``values`` select, defaults filling the gaps (parse time)."""
    return {key: values.get(key, controls[key].default) for key in ("weights", "d_model", "heads")}


#: Parameters that belong to other features, left alone here: presentation mode, the
#: tour's step, the tokens a page's pickers chose (``controls.token_picker``; ``_b``
#: for the sentence /pretrained compares with), the folder name of /pretrained's model
#: and the layer and head its head view shows (``pickers.linked_slider``).
EXTRA_PARAMS = frozenset(
    {"present", "step", "query", "key", "query_b", "key_b", "model", "view_layer", "view_head"}
)


def _clip(text, limit=40):
    return md_escape(text if len(text) <= limit else text[:limit] + "…")


def url_params(values, controls=CONTROLS):
    """The URL parameters for ``values``: only those that differ from their defaults."""
    params = {}
    for key, control in controls.items():
        value = values[key]
        default = control.default_for(values)
        same = (
            math.isclose(value, default)
            if isinstance(value, float) and isinstance(default, float)
            else value == default
        )
        if same or (key in TEXT_KEYS and len(value) > MAX_URL_TEXT):
            continue
        params[key] = format_value(key, value)
    return params
