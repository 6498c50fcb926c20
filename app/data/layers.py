"""The attention layer the core pages draw, cached: its tokens, its heads, its encoder layer.

Caches key on small values (a :class:`app.state.controls.Settings`, a text, a seed),
never on arrays: Streamlit hashes only a sample of a large array, so two different arrays
could share a key. Results are shared between sessions, and those that grow with what
users type are kept within the server's memory budget (:func:`app.data.cache.bounded`),
which makes their arrays read-only.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

import engine
from app.data import cache, threads, trained
from engine.layers import encoder_layer, toy_encoder_weights
from engine.tokenize import Tokenization, TokenizerUnavailableError

#: Query rows the saturation sweep averages at most, and the scales it is drawn at.
SWEEP_ROWS, CURVE_POINTS = 64, 61


@st.cache_data(max_entries=256, ttl=cache.TTL, show_spinner=False)
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

    A trained model's are its own tokens (MiniLM's WordPiece with [CLS] and [SEP],
    SmolLM2's byte-level BPE); call only when :func:`app.data.trained.run` succeeds for
    the text.

    Returns
    -------
    tokenization : engine.Tokenization
    notice : str or None, a message when the tokenizer had to fall back
    """
    if settings.trained:
        run = trained.run(settings.weights, settings.text)
        tokens, labels, ids = list(run.tokens), list(run.labels), run.ids.tolist()
        return Tokenization(tokens, labels, ids, 0, run.continues), None
    return tokenize(settings.text, settings.tokenizer)


def layer(settings, keep_weights=True):
    """The core pages' attention layer: a trained model's layer ℓ or the toy model's, all heads.

    Both results have the fields the pages draw (``x``, ``weights``, ``q``, ``k``, ``v``,
    ``mask``, ``attention``). A trained model runs once per text; this redoes one layer.
    ``keep_weights`` False keeps no head's weights (``attention.weights`` None): a long
    text's layer (:func:`engine.one_layer.layer_run`).

    Returns
    -------
    engine.one_layer.LayerRun or engine.ToyRun; None when a toy text has no tokens
    """
    if settings.trained:
        s = settings
        return trained.layer_run(
            s.weights, s.text, s.layer, s.scale, s.causal, keep_weights=keep_weights
        )
    return _toy(settings)


@cache.bounded
def _toy(settings):
    tokens = tokenize(settings.text, settings.tokenizer)[0].tokens
    if not tokens:
        return None
    s = settings
    return engine.run_toy(
        tokens, s.d_model, s.heads, s.seed, scale=s.scale, causal=s.causal, pe=s.pe
    )


@cache.bounded
def random_and_trained(name, text, layer, seed, scale, causal):
    """Model ``name``'s layer on ``text`` beside random weights of its shape on the same tokens.

    The random side is the toy model with the trained model's sizes (MiniLM: d_model 384,
    12 heads of 32), seeded embeddings and weights, the same scale and mask: only training
    differs.

    Returns
    -------
    labels : list of str, the model's tokens (special tokens included)
    random_weights, trained_weights : ndarray of shape (n_heads, n, n)
    or None when the model cannot run on the text
    """
    run = trained.run(name, text)
    if isinstance(run, Exception):
        return None
    c = trained.model(name).config
    twin = engine.run_toy(run.tokens, c.d_model, c.n_heads, seed, scale=scale, causal=causal)
    learned = trained.layer_run(name, text, layer, scale, causal)
    return list(run.labels), twin.attention.weights, learned.attention.weights


def encoder(settings, norm_first, keep_weights=True):
    """One layer: a trained model's layer ℓ (its own norms, ``norm_first`` ignored) or a toy one.

    ``keep_weights`` False keeps no head's weights in a trained layer: a long text's.

    Returns
    -------
    engine.layers.EncoderLayerResult
    """
    if settings.trained:
        return trained.layer_stages(settings.weights, settings.text, settings.layer, keep_weights)
    return _toy_encoder(settings.replace(scale=None), norm_first)


@cache.bounded
def _toy_encoder(settings, norm_first):
    """A toy encoder layer (positions added to X; RoPE not applied), d_ff = 4·d_model."""
    run = _toy(settings)
    weights = toy_encoder_weights(settings.d_model, 4 * settings.d_model, settings.seed)
    return encoder_layer(
        run.x,
        **weights,
        n_heads=settings.heads,
        mask=run.mask,
        norm_first=norm_first,
        parallel=threads.parallel(),
    )


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


@cache.bounded
def _saturation_curve(settings, head, n_points=CURVE_POINTS):
    run = layer(settings)
    scores = run.attention.heads.scores[head]
    rows = np.unique(np.linspace(0, scores.shape[0] - 1, SWEEP_ROWS).round().astype(int))
    mask = None if run.mask is None else run.mask[rows]
    scales = np.geomspace(1e-3, 1e3, n_points)
    stats = engine.saturation_sweep(scores[rows], scales, mask, jacobian=False)  # not drawn
    return (scales, stats, len(rows))


def adds_biases(settings):
    """Whether the trained model's layer adds biases to its projections.

    BERT's family does, Llama's does not: the home page's equation writes them or not.
    """
    return "b_q" in trained.model(settings.weights).block(settings.layer)["attn"]


def projections(settings, run, head):
    """The projection matrices and their outputs the home page draws: W_Q, W_K, W_V; Q, K, V.

    A trained model's are head ``head``'s columns of the layer's matrices (its key/value
    head's for W_K and W_V under grouped-query attention), and that head's queries, keys
    and values; the toy model's are its own.

    Returns
    -------
    weights : list of 3 ndarrays of shape (d_model, d_k)
    outputs : list of 3 ndarrays of shape (n, d_k)
    """
    if not settings.trained:
        return run.weights[:3], [run.q, run.k, run.v]
    attention = run.attention
    d_head = attention.q.shape[-1]
    w_q, w_k, w_v = run.weights[:3]
    group = w_q.shape[1] // w_k.shape[1]  # query heads per key/value head
    q_cut = slice(head * d_head, (head + 1) * d_head)  # the head's columns
    kv = head // group
    kv_cut = slice(kv * d_head, (kv + 1) * d_head)  # its key/value head's
    outputs = [attention.q[head], attention.k[head], attention.v[head]]
    return [w_q[:, q_cut], w_k[:, kv_cut], w_v[:, kv_cut]], outputs
