"""A pretrained BERT encoder (all-MiniLM-L6-v2 by default) run forward in NumPy.

The architecture is BERT's (Devlin et al. 2019, "BERT: Pre-training of Deep
Bidirectional Transformers", section 3): learned word, position and segment embeddings,
then encoder layers, post-LayerNorm with exact-erf GELU (Vaswani et al. 2017, section
3.1). Each layer is :func:`engine.layers.encoder_layer`, the function the toy model and
the translator run too. The weights and sizes come from :mod:`engine.checkpoint`; the
analyses of a run (rollout, the head finder) are in :mod:`engine.analysis`.

The code follows picoGPT (jaymody/picoGPT): one small function per operation, the
parameters a nested dict passed with ``**``. The reference it must agree with is
Hugging Face transformers' ``BertModel`` (``models/bert/modeling_bert.py``), eager
attention; ``tests/test_bert.py`` checks every attention map against its output.

Beyond the dimension vocabulary of :mod:`engine`, ``n_layers`` counts encoder layers
and ``d_ff`` the features inside the feed-forward block. Everything is float32.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import MultiHeadResult, causal_mask, merge_heads, multi_head_attention
from engine.layers import ACTIVATIONS, encoder_layer, layer_norm
from engine.parts import parts_for
from engine.tokenize import piece_labels

__all__ = [
    "BertRun",
    "LayerRun",
    "LayerWeights",
    "TooLongError",
    "bert",
    "embed",
    "layer_run",
    "layer_stages",
    "run",
    "run_ids",
]


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


def _layer_settings(config):
    """The arguments of :func:`engine.layers.encoder_layer` that the config fixes."""
    return {
        "n_heads": config.n_heads,
        "activation": ACTIVATIONS[config.activation],
        "norm_first": config.norm_first,
        "eps": config.eps,
    }


@blas.one_thread
def bert(ids, wte, wpe, wtt, ln_e, blocks, config, parallel=True):
    """The whole encoder: embeddings, then every layer, keeping what the pages draw.

    Parameters
    ----------
    ids : int ndarray of shape (n,)
    wte, wpe, wtt, ln_e, blocks : the model's parameters (see :class:`engine.checkpoint.Model`)
    config : engine.checkpoint.ModelConfig
    parallel : bool, as :func:`engine.layers.encoder_layer` takes it: the same bits either way

    Returns
    -------
    hidden_states : ndarray of shape (n_layers + 1, n, d_model)
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    queries, keys : ndarray of shape (n_layers, n_heads, n, d_head)
    """
    n, c = len(ids), config
    hidden = [embed(ids, wte, wpe, wtt, ln_e, c.eps)]  # [n] -> [n, d_model]
    attentions = np.empty((c.n_layers, c.n_heads, n, n), dtype=wte.dtype)  # filled in place
    queries, keys = [], []
    for block, weights in zip(blocks, attentions, strict=True):
        layer = encoder_layer(
            hidden[-1], **block, **_layer_settings(c), weights_out=weights, parallel=parallel
        )
        hidden.append(layer.output)  # [n, d_model]
        queries.append(layer.attention.q)  # [n_heads, n, d_head]
        keys.append(layer.attention.k)
    # -> [n_layers + 1, n, d_model], [n_layers, n_heads, n, n], [n_layers, n_heads, n, d_head] x2
    return np.stack(hidden), attentions, np.stack(queries), np.stack(keys)


def run_ids(model, ids, positions=True, parallel=True):
    """Run the model on token ids that already include [CLS] and [SEP].

    Parameters
    ----------
    model : engine.checkpoint.Model
    ids : sequence of int, length n, 1 <= n <= n_positions
    positions : bool
        False runs the model with its position embeddings removed (``wpe`` zero): a
        what-if that shows what the model takes from word order.
    parallel : bool
        From :data:`engine.parts.PARALLEL_MIN_TOKENS` tokens on, compute part of each
        layer on the engine's worker thread (:mod:`engine.parts`); False computes it all
        on the caller, to the same bits.

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
    hidden, attentions, queries, keys = bert(ids, **params, config=c, parallel=parallel)
    tokens = [model.tokenizer.id_to_token(int(i)) for i in ids]
    return BertRun(tokens, list(tokens), None, ids, attentions, hidden, queries, keys)


def _no_positions(model):
    wpe = np.zeros_like(model.params["wpe"])
    wpe.flags.writeable = False
    return wpe


def run(model, text, positions=True, parallel=True):
    """Tokenize ``text``, add [CLS] and [SEP], and run the model.

    Parameters
    ----------
    model : engine.checkpoint.Model
    text : str; may be empty, which runs [CLS] [SEP] alone
    positions, parallel : bool, as in :func:`run_ids`

    Returns
    -------
    BertRun

    Raises
    ------
    TooLongError when the text needs more than n_positions - 2 tokens
    """
    encoding = model.tokenizer.encode(text)
    labels = piece_labels(text, encoding.tokens, encoding.offsets)
    result = run_ids(model, encoding.ids, positions, parallel)
    return result._replace(
        tokens=list(encoding.tokens), labels=labels, offsets=list(encoding.offsets)
    )


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


def _check_layer(model, layer):
    if not 0 <= layer < model.config.n_layers:
        raise ValueError(f"layer must lie in [0, {model.config.n_layers}), got {layer}")


@blas.one_thread
def layer_run(model, run, layer, scale=None, causal=False):
    r"""One layer's multi-head attention, recomputed from the run's hidden state.

    .. math:: \text{head}_h = \operatorname{softmax}\!\left(s\,(XW^Q_h + b^Q_h)
              (XW^K_h + b^K_h)^\top + M\right)(XW^V_h + b^V_h)

    The attention :func:`engine.layers.encoder_layer` computes in the pass, so at the
    model's own scale ``s = 1/√d_head`` and without a mask the weights are the model's,
    ``run.attentions[layer]``, to the bit; another scale or the causal mask shows what
    this trained layer would do if its scores were scaled or masked differently (the
    model itself reads in both directions).

    Parameters
    ----------
    model : engine.checkpoint.Model
    run : BertRun, of ``model``
    layer : int, 0 <= layer < n_layers
    scale : float, optional; default ``1/√d_head``
    causal : bool

    Returns
    -------
    LayerRun
    """
    _check_layer(model, layer)
    x = run.hidden_states[layer]  # the input of layer ℓ, [n, d_model]
    weights = LayerWeights(**model.params["blocks"][layer]["attn"])
    mask = causal_mask(len(x)) if causal else None
    n_heads = model.config.n_heads
    attention = multi_head_attention(
        x,
        **weights._asdict(),
        n_heads=n_heads,
        mask=mask,
        scale=scale,
        parts=min(parts_for(len(x)), n_heads),  # the pass's split, so its rounding
    )
    q, k, v = (merge_heads(m) for m in (attention.q, attention.k, attention.v))  # -> [n, d_model]
    return LayerRun(layer, x, weights, q, k, v, mask, attention)


@blas.one_thread
def layer_stages(model, run, layer):
    r"""Every stage of one trained encoder layer, as the pass computed it.

    .. math:: h = \operatorname{LN}_1(x + \operatorname{MultiHead}(x)),\qquad
              y = \operatorname{LN}_2\bigl(h + \operatorname{GELU}(hW_1 + b_1)W_2 + b_2\bigr)

    :func:`engine.layers.encoder_layer` on the run's hidden state, the call the pass
    made: ``streams[-1]`` is ``run.hidden_states[layer + 1]`` to the bit.

    Parameters
    ----------
    model : engine.checkpoint.Model
    run : BertRun, of ``model``
    layer : int

    Returns
    -------
    engine.layers.EncoderLayerResult, with ``ffn_hidden`` of shape (n, d_ff)
    """
    _check_layer(model, layer)
    block = model.params["blocks"][layer]
    return encoder_layer(run.hidden_states[layer], **block, **_layer_settings(model.config))
