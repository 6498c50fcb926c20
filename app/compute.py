"""Cached calls into the engine, keyed on the small inputs that determine them.

Caches key on text, seed and sizes, never on arrays: Streamlit hashes only a sample of
a large array, so two different arrays could share a key. Results are shared between
sessions (``cache_resource``), so their arrays are made read-only.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

import engine
from app import cost, images, live, state
from engine import book, seq2seq
from engine.efficient import attention_patterns, pattern_errors
from engine.layers import encoder_layer, toy_encoder_weights
from engine.positional import ENCODINGS, position_similarity, sinusoidal_positional_encoding
from engine.tokenize import TokenizerUnavailableError
from engine.toy import permutation_error, positional_table, random_permutation
from engine.vision import run_vision

_TTL = 3600
#: Query rows the saturation sweep averages at most.
SWEEP_ROWS = 64


def _freeze(value):
    """Mark an array, or every array in a (nested) tuple, read-only in place; return it."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, tuple):
        for item in value:
            _freeze(item)
    return value


@st.cache_data(max_entries=256, ttl=_TTL, show_spinner=False)
def tokenize(text, tokenizer):
    """Tokens of ``text``; falls back to BPE when WordPiece's files are missing.

    Returns
    -------
    tokenization : engine.Tokenization
    notice : str or None, a message when the tokenizer had to fall back
    """
    try:
        return engine.tokenize(text, tokenizer), None
    except TokenizerUnavailableError as error:
        return engine.tokenize(text, "bpe"), f"{error} Using the byte-level BPE meanwhile."


@st.cache_resource(max_entries=32, ttl=_TTL, show_spinner=False)
def toy(text, tokenizer, seed, d_model, heads, scale, causal, pe):
    """One run of the toy layer on ``text``; None when the text has no tokens."""
    tokens = tokenize(text, tokenizer)[0].tokens
    if not tokens:
        return None
    return _freeze(engine.run_toy(tokens, d_model, heads, seed, scale=scale, causal=causal, pe=pe))


@st.cache_resource(max_entries=16, ttl=_TTL, show_spinner=False)
def encoder(text, tokenizer, seed, d_model, heads, causal, pe, norm_first, d_ff):
    """One toy encoder layer on the current sentence (positions added to X; RoPE not applied)."""
    run = toy(text, tokenizer, seed, d_model, heads, None, causal, pe)
    weights = toy_encoder_weights(d_model, d_ff, seed)
    return _freeze(encoder_layer(run.x, weights, heads, mask=run.mask, norm_first=norm_first))


@st.cache_resource(max_entries=32, ttl=_TTL, show_spinner=False)
def saturation_curve(text, tokenizer, seed, d_model, heads, causal, pe, head, n_points=61):
    """Mean saturation of one head's rows over a log-spaced sweep of the scale.

    Long texts are swept on :data:`SWEEP_ROWS` evenly spaced query rows: the curve is a
    mean, and the full sweep of 512 rows costs seconds.

    Returns
    -------
    scales : ndarray of shape (n_points,)
    stats : engine.SaturationStats with arrays of shape (n_points,)
    rows : int, the number of query rows averaged
    """
    run = toy(text, tokenizer, seed, d_model, heads, None, causal, pe)
    scores = run.attention.heads.scores[head]
    rows = np.unique(np.linspace(0, scores.shape[0] - 1, SWEEP_ROWS).round().astype(int))
    mask = None if run.mask is None else run.mask[rows]
    scales = np.geomspace(1e-3, 1e3, n_points)
    stats = engine.saturation_sweep(scores[rows], scales, mask)
    return _freeze((scales, stats, len(rows)))


@st.cache_resource(max_entries=8, ttl=_TTL, show_spinner=False)
def scale_frames(text, tokenizer, seed, d_model, heads, causal, pe, head):
    """One head's attention at every stop of the scale slider, packed for the browser.

    Returns
    -------
    frame_id, payload : as :func:`app.live.pack` returns them; both None above
    :data:`app.live.MAX_TOKENS` tokens, where frames stop paying.
    """
    run = toy(text, tokenizer, seed, d_model, heads, None, causal, pe)
    attention = run.attention
    if attention.q.shape[1] > live.MAX_TOKENS:
        return None, None
    scales = np.array(state.scale_options(d_model, heads))
    sweep = engine.attention_over_scales(
        attention.q[head], attention.k[head], attention.v[head], scales, run.mask
    )
    return live.sweep_frames(live.SOURCE, sweep)


@st.cache_resource(show_spinner=False)
def book_exercise():
    """The notebook's set-up and every result the book page shows."""
    X, params = book.notebook_setup()
    all_x = [X[:, [n]] for n in range(X.shape[1])]
    return {
        "X": X,
        "params": params,
        "loop": book.self_attention_loop(all_x, **params),
        "matrix": book.self_attention_stages(X, **params),
        "loop_scaled": book.self_attention_loop(all_x, **params, scaled=True),
        "matrix_scaled": book.self_attention_stages(X, **params, scaled=True),
    }


@st.cache_resource(max_entries=64, ttl=_TTL, show_spinner=False)
def encoding_table(kind, n_positions, d_model, seed):
    """The table the page draws for an encoding, shape (n_positions, d_model).

    Rotary adds nothing to X; its table shows the cos/sin of the rotation angles
    ``p·θ_i``, which follow the sinusoidal pattern.
    """
    if kind == "rotary":
        return _freeze(sinusoidal_positional_encoding(n_positions, d_model))
    return _freeze(positional_table(kind, n_positions, d_model, seed))


@st.cache_resource(max_entries=64, ttl=_TTL, show_spinner=False)
def encoding_similarity(kind, n_positions, d_model, seed):
    """Cosine similarity between the positions of :func:`encoding_table`."""
    return _freeze(position_similarity(encoding_table(kind, n_positions, d_model, seed)))


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def permutation_demo(text, tokenizer, seed, d_model, heads, shuffle_seed):
    """Shuffle the tokens and measure max |Sa[PX] − P Sa[X]| under every encoding.

    Returns
    -------
    dict with "permutation" (list of int) and "table" (DataFrame, one row per encoding)
    """
    tokens = tokenize(text, tokenizer)[0].tokens
    permutation = random_permutation(len(tokens), shuffle_seed)
    rows = []
    for kind in ENCODINGS:
        error = permutation_error(tokens, permutation, d_model, heads, seed, pe=kind)
        rows.append(
            {
                "positional encoding": kind,
                "max |Sa[PX] − P·Sa[X]|": error,
                "outputs just permute?": "yes" if error < 1e-9 else "no",
            }
        )
    return {"permutation": permutation.tolist(), "table": pd.DataFrame(rows)}


@st.cache_data(max_entries=8, show_spinner=False)
def book_permutation(permutation):
    """The notebook's self-attention on permuted inputs against its permuted outputs.

    Returns
    -------
    dict with "permuted_output" Sa[XP], "output_permuted" Sa[X]P (each D × N) and
    "difference", their largest absolute difference
    """
    X, params = book.notebook_setup()
    order = list(permutation)
    permuted_output = book.self_attention(X[:, order], **params)
    output_permuted = book.self_attention(X, **params)[:, order]
    return {
        "permuted_output": permuted_output,
        "output_permuted": output_permuted,
        "difference": float(np.max(np.abs(permuted_output - output_permuted))),
    }


@st.cache_resource(max_entries=32, ttl=_TTL, show_spinner=False)
def efficient_patterns(
    text, tokenizer, seed, d_model, heads, scale, causal, pe, head, window, stride
):
    """Full softmax, linear attention and the sparse patterns on one head of the toy run.

    Returns
    -------
    tuple of engine.efficient.Pattern, full softmax first
    """
    attention = toy(text, tokenizer, seed, d_model, heads, scale, causal, pe).attention
    patterns = attention_patterns(
        attention.q[head],
        attention.k[head],
        attention.v[head],
        window,
        stride,
        causal=causal,
        scale=attention.heads.scale,
    )
    return _freeze(patterns)


@st.cache_data(max_entries=32, ttl=_TTL, show_spinner=False)
def efficient_errors(
    text, tokenizer, seed, d_model, heads, scale, causal, pe, head, window, stride
):
    """Each pattern's distance from full softmax, as a table (one row per pattern)."""
    patterns = efficient_patterns(
        text, tokenizer, seed, d_model, heads, scale, causal, pe, head, window, stride
    )
    return pd.DataFrame(
        [
            {
                "pattern": row.name,
                "pairs computed": row.density,
                "mean |ΔA|": row.weights_mae,
                "max |ΔA|": row.weights_max,
                "mean |Δ output|": row.output_mae,
                "max |Δ output|": row.output_max,
                "‖Δ output‖ / ‖output‖": row.output_relative,
            }
            for row in pattern_errors(patterns)
        ]
    )


def _cost_record(rows, machine):
    table = pd.DataFrame(
        [
            {"method": method, "time slope": fit["time"], "memory slope": fit["memory"]}
            for method, fit in cost.slopes(rows).items()
        ]
    )
    return {"rows": rows, "machine": machine, "slopes": table}


@st.cache_data(show_spinner=False)
def cost_reference():
    """The measurement shipped in ``assets/efficient_cost.json``, or None without the file.

    Returns
    -------
    dict with "rows" (list of dict), "machine" (str), "slopes" (DataFrame), or None
    """
    record = cost.load_reference()
    return None if record is None else _cost_record(record["rows"], record["machine"])


@st.cache_data(show_spinner="Measuring on this machine (about ten seconds)…")
def cost_measurement():
    """A fresh, bounded measurement, taken once per server and shared by every session.

    Softmax runs to n = 4096 (its (n, n) intermediates take about 0.6 GB there), its
    causal form to 2048; linear attention to 8192.

    Returns
    -------
    dict as :func:`cost_reference`
    """
    rows = cost.measure_cost(max_n={"softmax": 4096, "softmax, causal": 2048})
    return _cost_record(rows, "this server, just now")


@st.cache_resource(show_spinner=False)
def sample_image():
    """The shipped sample image, uint8 (224, 224, 3), read-only."""
    return _freeze(images.load_sample())


@st.cache_data(max_entries=16, ttl=_TTL, show_spinner=False)
def _decoded_upload(digest, _data):
    try:
        return images.load_upload(_data), None
    except images.ImageRejectedError as error:
        return None, str(error)


def uploaded_image(data):
    """Check and decode uploaded bytes, cached on their SHA-256 (never on the array).

    Returns
    -------
    source : str, the digest, to key :func:`vision_run` on
    image : uint8 ndarray of shape (H, W, 3), or None when rejected
    problem : str or None, the message to show when rejected
    """
    digest = hashlib.sha256(data).hexdigest()
    image, problem = _decoded_upload(digest, data)
    return digest, image, problem


@st.cache_resource(max_entries=16, ttl=_TTL, show_spinner=False)
def vision_run(source, patch, d_model, seed, position, tied, _image):
    """Self-attention over the patches of the image named by ``source``.

    ``source`` ("sample" or an upload's digest) is the cache key; ``_image`` must be
    the image it names and is not hashed.

    Returns
    -------
    engine.vision.VisionRun
    """
    return _freeze(run_vision(_image, patch, d_model, seed, position, tied))


@st.cache_resource(ttl=_TTL, show_spinner=False)
def _translator(path):
    """The trained date translator in ``path``; raises when it is missing or corrupt.

    Failures are raised, not returned, so they are not cached: a model trained while the
    app runs is picked up on the next rerun.
    """
    return seq2seq.load_translator(path)


def translator():
    """The date translator (weights read-only, shared by every session).

    Returns
    -------
    model : engine.seq2seq.Translator, or None
    problem : str or None, why there is no model
    """
    try:
        return _translator(str(seq2seq.TRANSLATOR_PATH)), None
    except (seq2seq.TranslatorUnavailableError, seq2seq.CorruptWeightsError) as error:
        return None, str(error)


@st.cache_resource(max_entries=64, ttl=_TTL, show_spinner=False)
def _translation(source_text):
    return _freeze(seq2seq.translate(translator()[0], source_text))


def translation(source_text):
    """Greedy translation of ``source_text`` with every step's attention, keyed on the text.

    Returns
    -------
    translation : engine.seq2seq.Translation, or None
    problem : str or None, why the source cannot be read
    """
    try:
        return _translation(source_text), None
    except seq2seq.UnreadableSourceError as error:
        return None, str(error)
