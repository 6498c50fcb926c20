"""Cached calls into the engine, keyed on the small inputs that determine them.

Caches key on small values (an :class:`app.state.Settings`, a text, a seed), never on
arrays: Streamlit hashes only a sample of a large array, so two different arrays could
share a key. Results are shared between
sessions, so their arrays are made read-only; those that grow with what users type are
kept within the server's memory budget (:func:`app.cache.bounded`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

import engine
from app import cache, cost, images, minilm
from engine import book, seq2seq
from engine.efficient import PATTERNS, attention_patterns, pattern_errors
from engine.layers import encoder_layer, toy_encoder_weights
from engine.positional import ENCODINGS, position_similarity, sinusoidal_positional_encoding
from engine.tokenize import Tokenization, TokenizerUnavailableError
from engine.toy import permutation_error, positional_table, random_permutation
from engine.vision import run_vision

_TTL = 3600
#: Query rows the saturation sweep averages at most.
SWEEP_ROWS = 64


_freeze = minilm.freeze  # one definition, shared with the cached model runs


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


def tokens(settings):
    """The tokens the layer of ``settings`` reads.

    MiniLM's are its WordPiece tokens with [CLS] and [SEP]; call only when
    :func:`app.minilm.run` succeeds for the text.

    Returns
    -------
    tokenization : engine.Tokenization
    notice : str or None, a message when the tokenizer had to fall back
    """
    if settings.trained:
        run = minilm.run(settings.text)
        return Tokenization(list(run.tokens), list(run.labels), run.ids.tolist(), 0), None
    return tokenize(settings.text, settings.tokenizer)


def layer(settings):
    """The core pages' attention layer: MiniLM's layer ℓ or the toy model's, all heads.

    Both results have the fields the pages draw (``x``, ``weights``, ``q``, ``k``, ``v``,
    ``mask``, ``attention``). MiniLM's model runs once per text; this redoes one layer.

    Returns
    -------
    engine.bert.LayerRun or engine.ToyRun; None when a toy text has no tokens
    """
    if settings.trained:
        return minilm.layer_run(settings.text, settings.layer, settings.scale, settings.causal)
    return _toy(settings)


@cache.bounded(ttl=_TTL)
def _toy(settings):
    tokens = tokenize(settings.text, settings.tokenizer)[0].tokens
    if not tokens:
        return None
    s = settings
    return _freeze(
        engine.run_toy(tokens, s.d_model, s.heads, s.seed, scale=s.scale, causal=s.causal, pe=s.pe)
    )


@cache.bounded(ttl=_TTL)
def random_and_trained(text, layer, seed, scale, causal):
    """MiniLM's layer on ``text`` beside random weights of its shape on the same tokens.

    The random side is the toy model with MiniLM's sizes (d_model 384, 12 heads of 32),
    seeded embeddings and weights, the same scale and mask: only training differs.

    Returns
    -------
    labels : list of str, MiniLM's tokens with [CLS] and [SEP]
    random_weights, trained_weights : ndarray of shape (n_heads, n, n)
    or None when MiniLM cannot run on the text
    """
    run = minilm.run(text)
    if isinstance(run, Exception):
        return None
    c = minilm.model().config
    twin = engine.run_toy(run.tokens, c.d_model, c.n_heads, seed, scale=scale, causal=causal)
    trained = minilm.layer_run(text, layer, scale, causal)
    return _freeze((list(run.labels), twin.attention.weights, trained.attention.weights))


def encoder(settings, norm_first):
    """One encoder layer: MiniLM's layer ℓ (post-LN, ``norm_first`` ignored) or a toy one.

    Returns
    -------
    engine.layers.EncoderLayerResult
    """
    if settings.trained:
        return minilm.layer_stages(settings.text, settings.layer)
    return _toy_encoder(settings.replace(scale=None), norm_first)


@cache.bounded(ttl=_TTL)
def _toy_encoder(settings, norm_first):
    """A toy encoder layer (positions added to X; RoPE not applied), d_ff = 4·d_model."""
    run = _toy(settings)
    weights = toy_encoder_weights(settings.d_model, 4 * settings.d_model, settings.seed)
    layer = encoder_layer(
        run.x, **weights, n_heads=settings.heads, mask=run.mask, norm_first=norm_first
    )
    return _freeze(layer)


def saturation_curve(settings, head):
    """Mean saturation of one head's rows over a log-spaced sweep of the scale.

    The curve does not depend on the current scale: it is cached without it.

    Long texts are swept on :data:`SWEEP_ROWS` evenly spaced query rows: the curve is a
    mean, and the full sweep of 512 rows costs seconds.

    Returns
    -------
    scales : ndarray of shape (n_points,)
    stats : engine.SaturationStats with arrays of shape (n_points,)
    rows : int, the number of query rows averaged
    """
    return _saturation_curve(settings.replace(scale=None), head)


@cache.bounded(ttl=_TTL)
def _saturation_curve(settings, head, n_points=61):
    run = layer(settings)
    scores = run.attention.heads.scores[head]
    rows = np.unique(np.linspace(0, scores.shape[0] - 1, SWEEP_ROWS).round().astype(int))
    mask = None if run.mask is None else run.mask[rows]
    scales = np.geomspace(1e-3, 1e3, n_points)
    stats = engine.saturation_sweep(scores[rows], scales, mask)
    return _freeze((scales, stats, len(rows)))


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


@cache.bounded(ttl=_TTL)
def encoding_table(kind, n_positions, d_model, seed):
    """The table the page draws for an encoding, shape (n_positions, d_model).

    Rotary adds nothing to X; its table shows the cos/sin of the rotation angles
    ``p·θ_i``, which follow the sinusoidal pattern. "minilm" is MiniLM's trained
    position embeddings (``d_model`` and ``seed`` ignored).
    """
    if kind == "minilm":
        return minilm.model().params["wpe"][:n_positions]
    if kind == "rotary":
        return _freeze(sinusoidal_positional_encoding(n_positions, d_model))
    return _freeze(positional_table(kind, n_positions, d_model, seed))


@cache.bounded(ttl=_TTL)
def encoding_similarity(kind, n_positions, d_model, seed):
    """Cosine similarity between the positions of :func:`encoding_table`."""
    return _freeze(position_similarity(encoding_table(kind, n_positions, d_model, seed)))


#: Below this, float32 outputs count as "just permuted" (round-off of a 6-layer model).
_FLOAT32_ROUND_OFF = 1e-4


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def permutation_demo(settings, shuffle_seed):
    """Shuffle the tokens and measure how far the outputs are from just shuffling.

    The toy layer is measured under every encoding, max |Sa[PX] − P Sa[X]|; MiniLM's
    whole encoder with its learned positions and with them removed.

    Returns
    -------
    dict with "permutation" (list of int) and "table" (DataFrame, one row per encoding)
    """
    if settings.trained:
        permutation, errors = minilm.permutation_errors(settings.text, shuffle_seed)
        names = {"learned": "learned (MiniLM's own)", "none": "none (MiniLM, positions removed)"}
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
    tokens = tokenize(s.text, s.tokenizer)[0].tokens
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


@cache.bounded(ttl=_TTL)
def efficient_patterns(settings, head, window, stride):
    """Full softmax, linear attention and the sparse patterns on one head of the layer.

    Returns
    -------
    tuple of engine.efficient.Pattern, full softmax first
    """
    attention = layer(settings).attention
    patterns = attention_patterns(
        attention.q[head],
        attention.k[head],
        attention.v[head],
        window,
        stride,
        causal=settings.causal,
        scale=attention.heads.scale,
    )
    return _freeze(patterns)


#: Linear attention weights every pair but scores none: it never forms q·k.
LINEAR = PATTERNS[1]


@st.cache_data(max_entries=32, ttl=_TTL, show_spinner=False)
def efficient_errors(settings, head, window, stride):
    """Each pattern's distance from full softmax, as a table (one row per pattern).

    "pairs weighted" is the share of (query, key) pairs with a weight; "pairs scored" the
    share whose q·k the pattern needs, none for linear attention.
    """
    patterns = efficient_patterns(settings, head, window, stride)
    return pd.DataFrame(
        [
            {
                "pattern": row.name,
                "pairs weighted": row.density,
                "pairs scored": 0.0 if row.name == LINEAR else row.density,
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


@cache.bounded(ttl=_TTL)
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


@cache.bounded(ttl=_TTL)
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


@cache.bounded(ttl=_TTL)
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
