"""Positional encodings, cached: their tables, how alike positions are, the permutation test."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.data import cache, layers, trained
from engine.positional import ENCODINGS, position_similarity, sinusoidal_positional_encoding
from engine.toy import permutation_error, positional_table, random_permutation


@cache.bounded
def encoding_table(kind, n_positions, d_model, seed):
    """The table the page draws for an encoding, shape (n_positions, d_model).

    Rotary adds nothing to X; its table shows the cos/sin of the rotation angles
    ``p·θ_i``, which follow the sinusoidal pattern. "minilm" is MiniLM's trained
    position embeddings (``d_model`` and ``seed`` ignored); "smollm2" the cos/sin of
    SmolLM2's own rotary angles, at its base θ over one head's d_head features.
    """
    if kind == "minilm":
        return trained.model("minilm").params["wpe"][:n_positions]
    if kind == "smollm2":
        c = trained.model("smollm2").config
        return sinusoidal_positional_encoding(n_positions, c.d_head, c.rope_theta)
    if kind == "rotary":
        return sinusoidal_positional_encoding(n_positions, d_model)
    return positional_table(kind, n_positions, d_model, seed)


@cache.bounded
def encoding_similarity(kind, n_positions, d_model, seed):
    """Cosine similarity between the positions of :func:`encoding_table`."""
    return position_similarity(encoding_table(kind, n_positions, d_model, seed))


#: Below this, float32 outputs count as "just permuted" (round-off of a 6-layer model).
_FLOAT32_ROUND_OFF = 1e-4


@st.cache_data(max_entries=64, ttl=cache.TTL, show_spinner=False)
def permutation_demo(settings, shuffle_seed, tokens=None):
    """Shuffle the tokens and measure how far the outputs are from just shuffling.

    The toy layer is measured under every encoding, max |Sa[PX] − P Sa[X]|; MiniLM's
    whole encoder with its learned positions and with them removed. ``tokens``: a trained
    model's first this many tokens alone (a long text's).

    Returns
    -------
    dict with "permutation" (list of int) and "table" (DataFrame, one row per encoding)
    """
    if settings.trained:
        name = settings.label
        permutation, errors = trained.permutation_errors(
            settings.weights, settings.text, shuffle_seed, tokens
        )
        own = "learned" if settings.weights == "minilm" else "rotary"
        names = {"learned": f"{own} ({name}'s own)", "none": f"none ({name}, positions removed)"}
        rows = [
            {
                "positional encoding": names[kind],
                "max |Enc(PX) − P·Enc(X)|": error,
                "outputs just permute?": "yes" if error < _FLOAT32_ROUND_OFF else "no",
            }
            for kind, error in errors.items()
        ]
        return {"permutation": permutation, "table": pd.DataFrame(rows)}
    s = settings
    tokens = layers.tokenize(s.text, s.tokenizer)[0].tokens
    permutation = random_permutation(len(tokens), shuffle_seed)
    rows = []
    for kind in ENCODINGS:
        error = permutation_error(tokens, permutation, s.d_model, s.heads, s.seed, pe=kind)
        rows.append(
            {
                "positional encoding": kind,
                "max |Sa[PX] − P·Sa[X]|": error,
                "outputs just permute?": "yes" if error < 1e-9 else "no",
            }
        )
    return {"permutation": permutation.tolist(), "table": pd.DataFrame(rows)}
