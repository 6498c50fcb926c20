"""The transformer encoder layer every model here runs: the toy model, MiniLM, the translator.

Post-LN is the original arrangement (Vaswani et al. 2017, section 3.1):
``x ← LN(x + Sublayer(x))``. Pre-LN (Xiong et al. 2020, "On Layer Normalization in the
Transformer Architecture") normalises the sub-layer's input instead,
``x ← x + Sublayer(LN(x))``, leaving the residual stream itself un-normalised; GPT-2 is
pre-LN, BERT post-LN.

A layer's parameters are a mapping named as :func:`encoder_layer`'s arguments, passed
with ``**`` as picoGPT (jaymody/picoGPT) passes its blocks: ``attn`` holds ``w_q``,
``w_k``, ``w_v``, ``w_o`` and optionally their biases ``b_q``…``b_o`` (see
:func:`engine.attention.multi_head_attention`); ``ffn`` holds ``w_1``, ``b_1``, ``w_2``,
``b_2``; ``ln_1`` and ``ln_2`` hold a LayerNorm's gain ``g`` and bias ``b``, or nothing
for an untrained one. Beyond the dimension vocabulary of :mod:`engine`, ``d_ff`` counts
the features inside the feed-forward block.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import MultiHeadResult, linear, multi_head_attention
from engine.kv_cache import cached_attention
from engine.parts import Joined, in_parts, parts_for, share
from engine.toy import toy_weights

__all__ = [
    "ACTIVATIONS",
    "NORMS",
    "EncoderLayerResult",
    "encoder_layer",
    "erf",
    "feed_forward",
    "gelu",
    "gelu_tanh",
    "gemma_rms_norm",
    "layer_norm",
    "relu",
    "rms_norm",
    "silu",
    "swiglu",
    "toy_encoder_weights",
]


def layer_norm(x, g=None, b=None, eps=1e-5):
    r"""Layer normalisation over the features of each token (Ba et al. 2016).

    .. math:: \operatorname{LN}(x) = g \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + b

    The variance is the biased one (divide by d_model) and ``ε`` sits inside the square
    root, as in PyTorch and the original paper; the seed article's ``std + ε`` is a
    different (if close) function.

    Parameters
    ----------
    x : ndarray of shape (..., d_model)
    g, b : ndarray of shape (d_model,), optional; gain and bias, default 1 and 0
    eps : float

    Returns
    -------
    ndarray of shape (..., d_model)
    """
    out = x - x.mean(axis=-1, keepdims=True)  # a new array: the caller's x is untouched
    variance = np.mean(out * out, axis=-1, keepdims=True)
    out /= np.sqrt(variance + eps)  # in place from here: fewer passes over memory
    if g is not None:
        out *= g
    if b is not None:
        out += b
    return out


def rms_norm(x, g=None, eps=1e-6):
    r"""Root-mean-square normalisation over the features of each token (Zhang & Sennrich 2019).

    .. math:: \operatorname{RMSNorm}(x) = g \odot \frac{x}{\sqrt{\tfrac1d \sum_i x_i^2 + \epsilon}}

    LayerNorm without the mean and the bias: what Llama, Mistral and Qwen2 use. As
    transformers' ``LlamaRMSNorm`` computes it: ``x`` times the reciprocal square root of
    its mean square, then the gain.

    Parameters
    ----------
    x : ndarray of shape (..., d_model)
    g : ndarray of shape (d_model,), optional; the gain, default 1
    eps : float

    Returns
    -------
    ndarray of shape (..., d_model)
    """
    out = x * (1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))  # a new array
    if g is not None:
        out *= g
    return out


def gemma_rms_norm(x, g=None, eps=1e-6):
    r"""RMSNorm with gain ``1 + g``, as Gemma stores its norms (Gemma Team 2024).

    .. math:: \operatorname{RMSNorm}_{1+}(x) = (1 + g) \odot
              \frac{x}{\sqrt{\tfrac1d \sum_i x_i^2 + \epsilon}}

    Gemma keeps each norm's gain less one: a stored 0 is the identity's gain.
    transformers' ``Gemma3RMSNorm`` adds the 1 in float32, as here.

    Parameters
    ----------
    x : ndarray of shape (..., d)
    g : ndarray of shape (d,), optional; the stored gain, default 0 (gain 1)
    eps : float

    Returns
    -------
    ndarray of shape (..., d)
    """
    return rms_norm(x, None if g is None else g + 1.0, eps)


#: The norms by the name :class:`engine.checkpoint.ModelConfig` gives them.
NORMS = {"layer": layer_norm, "rms": rms_norm, "gemma_rms": gemma_rms_norm}


def silu(x):
    r"""The sigmoid-weighted linear unit (Elfwing et al. 2018), SwiGLU's gate: ``x·σ(x)``."""
    with np.errstate(over="ignore"):  # exp(-x) = inf far below 0: x / inf = -0, as σ(x) → 0
        return x / (1.0 + np.exp(-x))


def relu(x):
    r"""The rectifier of the original transformer's feed-forward block, ``max(0, x)``."""
    return np.maximum(x, 0.0)


# Rational approximation erf(x) ≈ x·P(x²)/Q(x²) on [-4, 4], the one Eigen and XLA use for
# float32 erf; within 4.4e-7 of math.erf in float32 (docs/benchmarks.md); beyond ±4, erf
# is ±1 to within 1.6e-8.
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

    NumPy has no erf, and ``math.erf`` one element at a time is far too slow.

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


def gelu_tanh(x):
    r"""GELU's tanh approximation (Hendrycks & Gimpel 2016), GPT-2's ``gelu_new``.

    .. math:: \operatorname{GELU}(x) \approx \tfrac{x}{2}\left(1 + \tanh\left(
              \sqrt{2/\pi}\,(x + 0.044715\,x^3)\right)\right)

    Within about 1e-3 of the erf form: a model trained with one must run with it.

    Parameters
    ----------
    x : float32 ndarray of any shape

    Returns
    -------
    float32 ndarray of the same shape
    """
    y = x * x
    y *= 0.044715
    y += 1.0
    y *= x
    y *= 0.7978845608028654  # √(2/π)
    np.tanh(y, out=y)
    y += 1.0
    y *= x
    y *= 0.5
    return y


#: The feed-forward activations by the names checkpoints' config.json files give them.
ACTIVATIONS = {
    "relu": relu,
    "gelu": gelu,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "silu": silu,
}


def feed_forward(x, w_1, b_1, w_2, b_2, activation=relu, parts=1, parallel=True):
    r"""Position-wise feed-forward network (Vaswani et al. 2017, eq. 2).

    .. math:: \operatorname{FFN}(x) = f(x W_1 + b_1)\, W_2 + b_2,
              \quad f = \operatorname{ReLU}\ \text{(the paper)},\ \operatorname{GELU}\ \text{(BERT)}

    Parameters
    ----------
    x : ndarray of shape (n, d_model)
    w_1 : ndarray of shape (d_model, d_ff); b_1 : ndarray of shape (d_ff,)
    w_2 : ndarray of shape (d_ff, d_model); b_2 : ndarray of shape (d_model,)
    activation : callable, elementwise
    parts : int
        The hidden features in this many groups, each through its rows of ``W_2``, the
        terms summed in order (:func:`engine.parts.in_parts`).
    parallel : bool or int, the groups on the engine's threads (:func:`engine.parts.in_parts`)

    Returns
    -------
    hidden : ndarray of shape (n, d_ff), after the activation
    out : ndarray of shape (n, d_model)
    """
    hidden = Joined(parts)

    def through(part):  # a group of hidden features, and its term of f(...) W_2
        f = share(w_1.shape[1], parts, part)
        h = activation(linear(x, w_1[:, f], b_1[f]))  # [n, d_model] -> [n, d_ff/parts]
        hidden.put("hidden", h, (len(h), w_1.shape[1]), (slice(None), f))  # -> [n, d_ff]
        return linear(h, w_2[f])  # [n, d_ff/parts] -> [n, d_model]

    out = in_parts(through, parts, parallel)
    out += b_2
    return hidden.arrays["hidden"], out


def swiglu(x, w_g, w_1, w_2, activation=silu, parts=1, parallel=True):
    r"""The gated feed-forward network of Llama, Mistral and Qwen2 (Shazeer 2020, eq. 6).

    .. math:: \operatorname{FFN}_{\mathrm{SwiGLU}}(x) =
              \bigl(\operatorname{SiLU}(x W_g) \odot x W_1\bigr)\, W_2

    transformers' ``gate_proj``, ``up_proj`` and ``down_proj``; no biases. Split in parts
    over the hidden features as :func:`feed_forward` is.

    Parameters
    ----------
    x : ndarray of shape (n, d_model)
    w_g, w_1 : ndarray of shape (d_model, d_ff); the gate and the up projection
    w_2 : ndarray of shape (d_ff, d_model); the down projection
    activation : callable, elementwise, the gate's
    parts : int
    parallel : bool or int, the groups on the engine's threads (:func:`engine.parts.in_parts`)

    Returns
    -------
    hidden : ndarray of shape (n, d_ff), the gated features ``SiLU(x W_g) ⊙ x W_1``
    out : ndarray of shape (n, d_model)
    """
    hidden = Joined(parts)

    def through(part):
        f = share(w_1.shape[1], parts, part)
        h = activation(linear(x, w_g[:, f]))  # [n, d_model] -> [n, d_ff/parts]
        h *= linear(x, w_1[:, f])
        hidden.put("hidden", h, (len(h), w_1.shape[1]), (slice(None), f))  # -> [n, d_ff]
        return linear(h, w_2[f])  # [n, d_ff/parts] -> [n, d_model]

    out = in_parts(through, parts, parallel)
    return hidden.arrays["hidden"], out


def toy_encoder_weights(d_model, d_ff, seed):
    """Seeded random encoder weights; attention weights are those of :func:`toy_weights`.

    FFN weights are N(0, 1/fan_in), biases zero; the LayerNorms have no gain or bias.

    Returns
    -------
    dict with ``attn``, ``ln_1``, ``ffn``, ``ln_2``, as :func:`encoder_layer` takes them
    """
    rng = np.random.default_rng([int(seed), int(d_model), int(d_ff), 1])
    w_1 = rng.standard_normal((d_model, d_ff)) / np.sqrt(d_model)
    w_2 = rng.standard_normal((d_ff, d_model)) / np.sqrt(d_ff)
    ffn = {"w_1": w_1, "b_1": np.zeros(d_ff), "w_2": w_2, "b_2": np.zeros(d_model)}
    return {"attn": toy_weights(d_model, seed)._asdict(), "ln_1": {}, "ffn": ffn, "ln_2": {}}


class EncoderLayerResult(NamedTuple):
    """Every stage of one encoder layer.

    Attributes
    ----------
    x, h, y : ndarray of shape (n, d_model)
        The residual stream: the input, after the attention sub-layer, after the FFN
        sub-layer (the layer's output), as named in :func:`encoder_layer`'s equations.
    attention : MultiHeadResult
    attention_update : ndarray of shape (n, d_model)
        What the attention sub-layer added to the stream (before any post-LN).
    ffn_hidden : ndarray of shape (n, d_ff)
    ffn_update : ndarray of shape (n, d_model)
        What the FFN sub-layer added to the stream (before any post-LN).
    """

    x: np.ndarray
    h: np.ndarray
    y: np.ndarray
    attention: MultiHeadResult
    attention_update: np.ndarray
    ffn_hidden: np.ndarray
    ffn_update: np.ndarray

    @property
    def output(self):
        """The layer's output ``y``, shape (n, d_model)."""
        return self.y

    @property
    def streams(self):
        """The stream at each stage, ``x``, ``h``, ``y``, shape (3, n, d_model)."""
        return np.stack([self.x, self.h, self.y])

    @property
    def stream_norms(self):
        """Euclidean norm of each token's residual stream at each stage, shape (3, n)."""
        return np.linalg.norm(self.streams, axis=-1)

    @property
    def update_norms(self):
        """Norm of what each sub-layer (attention, FFN) added per token, shape (2, n)."""
        return np.linalg.norm(np.stack([self.attention_update, self.ffn_update]), axis=-1)


@blas.one_thread
def encoder_layer(
    x,
    attn,
    ln_1,
    ffn,
    ln_2,
    n_heads,
    activation=relu,
    norm_first=False,
    eps=1e-5,
    mask=None,
    weights_out=None,
    parallel=True,
    norm=layer_norm,
    rotary=False,
    n_kv_heads=None,
    post_ln_1=None,
    post_ln_2=None,
    scale=None,
    softcap=None,
    past=None,
    first=0,
    summaries=None,
    keep=True,
):
    r"""One transformer layer, post-LN or pre-LN: BERT's, GPT-2's and Llama's.

    .. math:: \text{post-LN:}\quad h = \operatorname{LN}_1(x + \operatorname{MHA}(x)),\quad
              y = \operatorname{LN}_2(h + \operatorname{FFN}(h))

    .. math:: \text{pre-LN:}\quad h = x + \operatorname{MHA}(\operatorname{LN}_1(x)),\quad
              y = h + \operatorname{FFN}(\operatorname{LN}_2(h))

    From :data:`engine.parts.PARALLEL_MIN_TOKENS` tokens on, the attention's sum over
    heads and the feed-forward's over hidden features are each partial sums
    (:mod:`engine.parts`): a split fixed by ``n``, whatever the machine.

    The Llama family (Llama, Mistral, Qwen2) is the pre-LN form with other parts, given
    as parameters: ``norm`` :func:`rms_norm` for LayerNorm, rotary positions on q and k,
    ``n_kv_heads`` shared key/value heads, and a gated feed-forward (:func:`swiglu`, when
    ``ffn`` has a gate ``w_g``); a causal mask (with Mistral's sliding window) from the
    caller, as GPT-2's. Qwen3 and Gemma 3 normalise each head's q and k (``attn`` holds
    ``q_norm`` and ``k_norm``, gains of ``norm``). Gemma 3 also normalises what each
    sub-layer adds before adding it (``post_ln_1``, ``post_ln_2``), scales its scores by
    its own ``scale`` and may soft-cap them (``softcap``):

    .. math:: h = x + \operatorname{N}'_1(\operatorname{MHA}(\operatorname{N}_1(x))),\quad
              y = h + \operatorname{N}'_2(\operatorname{FFN}(\operatorname{N}_2(h)))

    Parameters
    ----------
    x : ndarray of shape (n, d_model)
    attn, ln_1, ffn, ln_2 : mappings of the layer's parameters (see the module's docstring)
    n_heads : int
    activation : callable, the feed-forward's (:data:`ACTIVATIONS`)
    norm_first : bool, pre-LN when true
    eps : float, the LayerNorms' ε
    mask : bool ndarray of shape (n, n), optional
    weights_out : ndarray of shape (n_heads, n, n), optional; receives the attention weights
    parallel : bool or int
        Compute the parts of each sum on the engine's threads: True, one per CPU the
        process may use; an int, that many; False, all on the caller. The same bits.
    norm : callable, :func:`layer_norm` or :func:`rms_norm`, taking ``ln_1``, ``ln_2``
    rotary : bool or mapping, as :func:`engine.attention.multi_head_attention` takes it
    n_kv_heads : int, optional; key/value heads, default n_heads
    post_ln_1, post_ln_2 : mappings, optional; the norms of the attention's and the
        feed-forward's output (Gemma 3), pre-LN only
    scale : float, optional; the scores' scale, default ``1/√d_head``
    softcap : float, optional; the scores' soft cap
    past, first : a causal model's next tokens against its key/value cache, as
        :func:`engine.kv_cache.cached_attention` takes them (:func:`engine.bert.step`);
        ``mask`` then of shape (n, n_past + n)
    summaries, keep : as :func:`engine.attention.multi_head_attention` takes them: a long
        text's pass takes each head's summaries and keeps no weights

    Returns
    -------
    EncoderLayerResult
    """
    parts = parts_for(len(x))
    a = norm(x, **ln_1, eps=eps) if norm_first else x
    common = {
        "n_heads": n_heads,
        "mask": mask,
        "rotary": rotary,
        "n_kv_heads": n_kv_heads,
        "qk_norm": functools.partial(norm, eps=eps),
        "scale": scale,
        "softcap": softcap,
    }
    if past is None:
        attention = multi_head_attention(
            a,
            **attn,
            **common,
            weights_out=weights_out,
            parts=min(parts, n_heads),
            parallel=parallel,
            summaries=summaries,
            keep=keep,
        )
    else:
        attention = cached_attention(a, **attn, **common, past=past, first=first)
    added = attention.output if post_ln_1 is None else norm(attention.output, **post_ln_1, eps=eps)
    h = x + added
    if not norm_first:
        h = norm(h, **ln_1, eps=eps)
    hidden, update = (swiglu if "w_g" in ffn else feed_forward)(
        norm(h, **ln_2, eps=eps) if norm_first else h,
        **ffn,
        activation=activation,
        parts=parts,
        parallel=parallel,
    )
    if post_ln_2 is not None:
        update = norm(update, **post_ln_2, eps=eps)
    y = h + update
    if not norm_first:
        y = norm(y, **ln_2, eps=eps)
    return EncoderLayerResult(x, h, y, attention, added, hidden, update)
