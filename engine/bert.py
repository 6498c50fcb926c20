"""A pretrained transformer (all-MiniLM-L6-v2 by default) run forward in NumPy.

One forward pass for every family :mod:`engine.checkpoint` reads. The encoders are
BERT's architecture (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional
Transformers", section 3): learned word, position and segment embeddings, then
post-LayerNorm layers (Vaswani et al. 2017, section 3.1). GPT-2 (Radford et al. 2019,
section 2.3) differs only in data: no segments and no embedding LayerNorm, pre-LN layers
with a causal mask, a final LayerNorm, and next-token logits from the word embeddings.
The Llama family (Touvron et al. 2023; Mistral, Qwen2) is GPT-2's form with other parts:
no position table but rotary positions on q and k, RMSNorm, grouped-query attention, a
SwiGLU feed-forward, an output matrix of its own (or tied), Mistral's sliding window;
Qwen3 and Gemma 3 add norms of each head's q and k, and Gemma 2 and 3 local and global
layers, norms after each sub-layer, scaled embeddings and soft-capped scores and logits.
Each layer is :func:`engine.layers.encoder_layer`, the function the toy model and the
translator run too. The weights and sizes come from :mod:`engine.checkpoint`; the
analyses of a run (rollout, the head finder) are in :mod:`engine.analysis`; next-token
probabilities and generation in :mod:`engine.generate`, whose new tokens run here one at
a time against the keys and values kept from the pass (:func:`step`). Each layer's
settings and mask are :mod:`engine.layer_config`'s; a long text's weights, queries and
keys, computed when read, :mod:`engine.long_run`'s; one layer of a run computed again
for the pages (:func:`engine.one_layer.layer_run` and its kin), :mod:`engine.one_layer`'s.

The code follows picoGPT (jaymody/picoGPT): one small function per operation, the
parameters a nested dict passed with ``**``. The references it must agree with are
Hugging Face transformers' ``BertModel``, ``RobertaModel``, ``DistilBertModel``,
``ElectraModel``, ``GPT2LMHeadModel``, ``LlamaForCausalLM``, ``MistralForCausalLM``,
``Qwen2ForCausalLM``, ``Qwen3ForCausalLM``, ``Gemma2ForCausalLM``, ``Gemma3ForCausalLM`` and
``Phi3ForCausalLM``, eager attention; ``tests/engine/test_bert.py``,
``tests/engine/test_checkpoints.py``, ``tests/engine/test_decoders.py`` and
``tests/engine/test_families.py`` check every attention map against their outputs.

Beyond the dimension vocabulary of :mod:`engine`, ``n_layers`` counts layers,
``d_ff`` the features inside the feed-forward block, ``d_embedding`` the features of
the embeddings (d_model but for ELECTRA) and ``n_vocab`` the vocabulary. Everything is
computed in float32: bf16 and fp16 weights are upcast a layer at a time
(:func:`engine.checkpoint.upcast`).
"""

from __future__ import annotations

import functools
import threading
from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import linear
from engine.checkpoint import upcast
from engine.layer_config import _layer_settings, _masks, _norm, visible_keys
from engine.layers import encoder_layer, layer_norm
from engine.long_run import (
    Attentions,
    PerLayer,
    _groups,
    _layer_input,
    _projections,
    _rows,
    _vectors,
)
from engine.scores import soft_cap
from engine.summaries import HeadSummaries, SummarySums
from engine.tokenize import continued_pieces, piece_labels

__all__ = [
    "KEPT_WEIGHTS",
    "BertRun",
    "KeyValues",
    "StepRun",
    "TooLongError",
    "embed",
    "hidden_state",
    "key_values",
    "position_ids",
    "run",
    "run_ids",
    "step",
    "transformer",
]

#: The pass keeps every layer's and head's weights (an ndarray ``BertRun.attentions``)
#: while they hold at most this many numbers (256 MiB of float32: MiniLM's 512 tokens);
#: beyond, it keeps what computes them again (:class:`Attentions`).
KEPT_WEIGHTS = 2**26


class TooLongError(ValueError):
    """The text has more tokens than the model has positions.

    Attributes
    ----------
    n_tokens : int
        Tokens in the text, counting the special tokens the tokenizer adds.
    limit : int
        Positions the model has.
    """

    def __init__(self, n_tokens, limit, special_tokens=("[CLS]", "[SEP]")):
        self.n_tokens = n_tokens
        self.limit = limit
        if special_tokens:
            names = " and ".join(special_tokens)
            counted = f", counting {names}"
            room = f"{limit} ({limit - len(special_tokens)} plus {names})"
        else:
            counted, room = "", f"{limit}"
        super().__init__(
            f"This text is {n_tokens} tokens{counted}; the model reads at most {room}. Shorten it."
        )


class KeyValues(NamedTuple):
    """Every layer's keys and values so far: what a causal model's next token attends to.

    A key/value cache (as in Pope et al. 2022, "Efficiently Scaling Transformer
    Inference"; transformers' ``past_key_values``): a token's key and value in a causal
    model never change once computed, so each new token computes only its own. A value:
    :func:`step` returns a new one and leaves the one it was given as it was.

    Attributes
    ----------
    keys : ndarray of shape (n_layers, n_kv_heads, n, d_head)
        After the rotation, in a rotary model.
    values : ndarray of shape (n_layers, n_kv_heads, n, d_head)
    room : CacheRoom or None
        The arrays ``keys`` and ``values`` are the first ``n`` tokens of, with room for
        more (:func:`step`'s); None for arrays of their own (the pass's).
    """

    keys: np.ndarray
    values: np.ndarray
    room: CacheRoom | None = None

    @property
    def n(self):
        """Tokens held."""
        return self.keys.shape[2]


class CacheRoom:
    """Arrays for a cache's keys and values with room for later tokens, and how many are written.

    :func:`step` writes its token's keys and values in the row after the cache's last,
    in place, when that row is still free: a step is then no copy of the cache. A
    :class:`KeyValues` shows only its first ``n`` rows, which no later step changes, so
    each stays a value; a second step from the same cache finds its row taken (by the
    first) and copies the cache into a room of its own.
    """

    def __init__(self, cache, capacity):
        shape = (*cache.keys.shape[:2], capacity, cache.keys.shape[3])
        self.keys = np.empty(shape, dtype=cache.keys.dtype)
        self.values = np.empty(shape, dtype=cache.values.dtype)
        self.keys[:, :, : cache.n] = cache.keys
        self.values[:, :, : cache.n] = cache.values
        self.filled = cache.n
        self._lock = threading.Lock()

    def claim(self, n):
        """Take row ``n`` for a step after a cache of ``n`` tokens; False where it is not free."""
        with self._lock:
            if self.filled != n or n >= self.keys.shape[2]:
                return False
            self.filled = n + 1
            return True


class StepRun(NamedTuple):
    """One new token run against the cache: what the whole pass gives of its last row.

    Attributes
    ----------
    last_token_attention : ndarray of shape (n_layers, n_heads, n)
        How the new token attends, in every layer and head: the whole pass's
        ``attentions[:, :, -1]``.
    next_logits : ndarray of shape (n_vocab,)
    cache : KeyValues, with the new token's keys and values added (n tokens)
    """

    last_token_attention: np.ndarray
    next_logits: np.ndarray
    cache: KeyValues


class BertRun(NamedTuple):
    """One forward pass and everything the pages draw from it (any family, not only BERT).

    Attributes
    ----------
    tokens : list of str
        The model's own tokens, with the special tokens its tokenizer adds ([CLS] …
        [SEP], <s> … </s>, none for GPT-2).
    labels : list of str
        The piece of the text each token covers (the token itself for a special token).
    offsets : list of (int, int), or None
        Character span of each token in the text; (0, 0) for special tokens; None when
        run from ids.
    ids : ndarray of shape (n,)
    attentions : ndarray of shape (n_layers, n_heads, n, n), or Attentions
        Softmax weights; row ``i`` is how query token ``i`` spreads its attention.
        ``attentions[:, :, -1]`` is the last token's, across layers and heads: in a
        causal model, the attention behind the next-token prediction. An ndarray up to
        :data:`KEPT_WEIGHTS` numbers; beyond, an :class:`Attentions`, read as the array
        is and computed when read, a layer or a head at a time.
    hidden_states : ndarray of shape (n_layers + 1, n, d_model)
        The embeddings, then each layer's output (the residual stream, as each layer
        hands it on: for GPT-2 before the final LayerNorm, where transformers'
        ``hidden_states[-1]`` is after it; that one is ``last_hidden_state``).
    queries, keys : ndarray of shape (n_layers, n_heads, n, d_head), or PerLayer
        Per-head projections after the bias, before the 1/√d_head scaling (after the
        norms and the rotation where the model has them); a key/value head shared by
        several query heads repeated. A long text's (:class:`Attentions`) are computed a
        layer at a time when read (:class:`PerLayer`).
    last_hidden_state : ndarray of shape (n, d_model)
        What the model hands to a head: ``hidden_states[-1]``, after the final
        LayerNorm in a model that has one (GPT-2's ``ln_f``).
    next_logits : ndarray of shape (n_vocab,), or None
        The next token's logits after the last token, for a model with an LM head.
    continues : list of bool, or None
        Whether each token continues the word of the token before it
        (:func:`engine.tokenize.continued_pieces`); None when run from ids.
    cache : KeyValues, or None
        Every layer's keys and values, for :func:`step`; only when asked for.
    summaries : engine.summaries.HeadSummaries
        What every head does, in a few numbers per head (each of shape (n_layers,
        n_heads); ``strongest`` (n_layers, n_heads, n)), computed during the pass.
    positions : bool
        Whether the pass ran with the model's positions (:func:`run_ids`' ``positions``).
    """

    tokens: list[str]
    labels: list[str]
    offsets: list[tuple[int, int]] | None
    ids: np.ndarray
    attentions: np.ndarray
    hidden_states: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    last_hidden_state: np.ndarray | None = None
    next_logits: np.ndarray | None = None
    continues: list[bool] | None = None
    cache: KeyValues | None = None
    summaries: HeadSummaries | None = None
    positions: bool = True

    @property
    def last_token_attention(self):
        """How the last token attends, in every layer and head, shape (n_layers, n_heads, n)."""
        return self.attentions[:, :, -1]


def position_ids(ids, offset=0, pad_id=None):  # [n] -> [n]
    """The position-embedding row of each token: ``offset, offset + 1, …``.

    RoBERTa (``pad_id`` set, ``offset = pad_id + 1``) counts only the tokens that are not
    its padding token, and gives a padding token row ``pad_id``, as transformers'
    ``create_position_ids_from_input_ids`` does.
    """
    if pad_id is None:
        return offset + np.arange(len(ids))
    real = ids != pad_id
    return np.where(real, offset - 1 + np.cumsum(real), pad_id)


def embed(
    ids, types, config, wte, wpe=None, wtt=None, ln_e=None, proj=None, first=0
):  # [n] -> [n, d]
    r"""Token, position and segment embeddings, summed and normalised (BERT, section 3.2).

    .. math:: x_i = \operatorname{LN}(E_{word}[t_i] + E_{type}[s_i] + E_{pos}[p_i])

    A family without segments (DistilBERT, GPT-2) has no ``wtt``; GPT-2 no ``ln_e``
    either (its layers normalise their own inputs); ELECTRA projects its smaller
    embeddings to d_model after the LayerNorm (``proj``). A rotary model (Llama) has no
    ``wpe``: its positions enter each layer's q and k. The rows are read in float32.
    Gemma multiplies them by √d_model (``scale_embeddings``) in the precision the pass
    computes in, as transformers casts its ``embed_scale`` to the weights' dtype at run
    time: float32 here, as transformers run in float32.

    Parameters
    ----------
    ids, types : int ndarray of shape (n,); token ids and segment ids
    config : engine.checkpoint.ModelConfig
    wte : ndarray of shape (n_vocab, d_embedding)
    wpe : ndarray of shape (n_positions, d_embedding), optional
    wtt : ndarray of shape (n_types, d_embedding), optional
    ln_e : mapping with g, b of shape (d_embedding,), optional
    proj : mapping with w of shape (d_embedding, d_model) and b of shape (d_model,), optional
    first : int, the first token's position (a decoding step's token follows the others)

    Returns
    -------
    ndarray of shape (n, d_model)
    """
    x = wte[ids].astype(np.float32, copy=False)  # [n] -> [n, d_embedding], a new array
    if config.scale_embeddings:
        x *= np.float32(np.sqrt(config.d_model))
    if wtt is not None:
        x += wtt[types]
    if wpe is not None:
        x += wpe[position_ids(ids, config.position_offset + first, config.pad_id)]
    if ln_e is not None:
        x = layer_norm(x, **ln_e, eps=config.eps)
    if proj is not None:
        x = linear(x, **proj)  # [n, d_embedding] -> [n, d_model]
    return x


@blas.one_thread
def transformer(
    ids, types, config, blocks, ln_f=None, parallel=True, cache=False, progress=None, **embeddings
):
    """The whole model: embeddings, then every layer, keeping what the pages draw.

    Every head's weights are kept while they hold at most :data:`KEPT_WEIGHTS` numbers;
    beyond, each layer's are let go once their summaries are taken.

    Parameters
    ----------
    ids, types : int ndarray of shape (n,)
    config : engine.checkpoint.ModelConfig
    blocks, ln_f, embeddings : the model's parameters (see :class:`engine.checkpoint.Model`)
    parallel : bool or int, as :func:`engine.layers.encoder_layer` takes it: the same bits
    cache : bool, return the keys and values per key/value head too
    progress : callable, optional; ``progress(done, n_layers)`` after each layer

    Returns
    -------
    hidden_states : ndarray of shape (n_layers + 1, n, d_model)
    attentions : ndarray of shape (n_layers, n_heads, n, n), or None when not kept
    queries, keys : ndarray of shape (n_layers, n_heads, n, d_head), or None when not kept
    last_hidden_state : ndarray of shape (n, d_model)
    cache : KeyValues, or None when not asked for
    summaries : HeadSummaries
    last_rows : ndarray of shape (n_layers, n_heads, n), the last query's weights
    """
    n, c = len(ids), config
    hidden = np.empty((c.n_layers + 1, n, c.d_model), dtype=np.float32)  # filled layer by layer
    hidden[0] = embed(ids, types, c, **embeddings)  # [n] -> [n, d_model]
    masks = _masks(c, n)
    keep = c.n_layers * c.n_heads * n * n <= KEPT_WEIGHTS
    shape = (c.n_layers, c.n_heads, n, n)
    attentions = np.empty(shape, dtype=np.float32) if keep else None  # filled in place
    sums = [SummarySums(c.n_heads, n) for _ in blocks]
    queries, keys, values, cached = [], [], [], []
    for i, block in enumerate(blocks):
        layer = encoder_layer(
            hidden[i],
            **upcast(block),  # a bf16 layer in float32 while it runs, then let go
            **_layer_settings(c, i),
            mask=masks[i],
            weights_out=attentions[i] if keep else None,
            parallel=parallel,
            summaries=sums[i],
            keep=keep,
        )
        hidden[i + 1] = layer.output  # [n, d_model]
        if keep:  # a long text's are computed again when read
            queries.append(layer.attention.q)  # [n_heads, n, d_head]
            keys.append(layer.attention.k)
            values.append(layer.attention.v)
        if cache:  # each key/value head once, copied: the layer's own arrays are let go
            shared = _per_kv_head(c, [layer.attention.k], [layer.attention.v])
            cached.append((shared.keys[0], shared.values[0]))  # [n_kv_heads, n, d_head] each
        if progress is not None:
            progress(i + 1, c.n_layers)
    last = hidden[-1] if ln_f is None else _norm(c)(hidden[-1], **upcast(ln_f), eps=c.eps)
    kept = KeyValues(*map(np.stack, zip(*cached, strict=True))) if cache else None
    queries, keys = (np.stack(a) if keep else None for a in (queries, keys))
    summaries = HeadSummaries(*map(np.stack, zip(*(s.summaries() for s in sums), strict=True)))
    last_rows = np.stack([s.last_row for s in sums])  # [n_layers, n_heads, n]
    # -> [n_layers, n_heads, n, n], [n_layers, n_heads, n, d_head] x2, [n, d_model]
    return hidden, attentions, queries, keys, last, kept, summaries, last_rows


@blas.one_thread
def hidden_state(model, ids, layer, positions=True, parallel=True):
    """The hidden state entering layer ``layer``: ``run_ids(...).hidden_states[layer]``.

    The same layers as :func:`run_ids` runs, to the same bits, stopping there and holding
    one hidden state at a time and no head's weights: a what-if's layer (the model without
    its positions) over a long text, without a second pass's every hidden state.

    Parameters
    ----------
    model : engine.checkpoint.Model
    ids : sequence of int, the tokens with the model's special tokens
    layer : int, 0 <= layer <= n_layers
    positions, parallel : as in :func:`run_ids`

    Returns
    -------
    float32 ndarray of shape (n, d_model)
    """
    ids = np.asarray(ids, dtype=np.intp).reshape(-1)
    _check_ids(model, ids)
    if not 0 <= layer <= model.config.n_layers:
        raise ValueError(f"layer must lie in [0, {model.config.n_layers}], got {layer}")
    c, params = model.config, {k: v for k, v in model.params.items() if k != "lm_head"}
    if not positions and c.rotary:
        c = c._replace(rope_theta=None)
    elif not positions:
        params["wpe"] = _no_positions(model)
    blocks = params.pop("blocks")
    params.pop("ln_f", None)
    x = embed(ids, np.zeros_like(ids), c, **params)  # [n] -> [n, d_model]
    masks = _masks(c, len(ids))
    for i, block in enumerate(blocks[:layer]):
        x = encoder_layer(
            x,
            **upcast(block),
            **_layer_settings(c, i),
            mask=masks[i],
            parallel=parallel,
            keep=False,
        ).output  # [n, d_model]
    return x


@blas.one_thread
def key_values(model, run):
    """The key/value cache of ``run``, made from its hidden states: ``run_ids(..., cache=True)``'s.

    Every layer's keys (after the rotation) and values, each key/value head once, projected
    again from the layer's input as the pass projected them (its groups of heads), so to
    the pass's bits: a text the page has run already continues without a second pass.

    Parameters
    ----------
    model : engine.checkpoint.Model
    run : BertRun of ``model``, with its positions

    Returns
    -------
    KeyValues, of shapes (n_layers, n_kv_heads, n, d_head)
    """
    if not run.positions:
        raise ValueError("a run without its positions has no cache to continue")
    c, blocks = model.config, model.params["blocks"]
    keys, values = [], []
    for layer in range(c.n_layers):
        block, x = _layer_input(c, blocks, run.hidden_states, layer)
        made, k, v = {}, [], []
        for group in _groups(c, len(x)):
            _, group_k, group_v = _projections(c, block, x, layer, group, True, made)
            k.append(group_k)
            v.append(group_v)
        shared = _per_kv_head(c, [np.concatenate(k)], [np.concatenate(v)])
        keys.append(shared.keys[0])  # [n_kv_heads, n, d_head]
        values.append(shared.values[0])
    return KeyValues(np.stack(keys), np.stack(values))


def _per_kv_head(config, keys, values):
    """The cache from keys and values per query head: each shared head once (its first reader)."""
    group = config.n_heads // config.kv_heads  # query heads per key/value head
    return KeyValues(np.stack([k[::group] for k in keys]), np.stack([v[::group] for v in values]))


def _check_ids(model, ids):
    c = model.config
    if len(ids) > c.max_tokens:
        raise TooLongError(len(ids), c.max_tokens, model.special_tokens)
    if len(ids) == 0:
        raise ValueError("the model needs at least one token")
    if ids.min() < 0 or ids.max() >= c.n_vocab:
        raise ValueError(f"token ids must lie in [0, {c.n_vocab}), got {ids.min()}..{ids.max()}")


def run_ids(model, ids, positions=True, parallel=True, types=None, cache=False, progress=None):
    """Run the model on token ids that already include its special tokens.

    Parameters
    ----------
    model : engine.checkpoint.Model
    ids : sequence of int, length n, 1 <= n <= the model's positions
    positions : bool
        False runs the model with its position embeddings removed (``wpe`` zero, or no
        rotation of q and k in a rotary model): a what-if that shows what the model
        takes from word order.
    parallel : bool or int
        From :data:`engine.parts.PARALLEL_MIN_TOKENS` tokens on, compute the parts of each
        layer on the engine's threads (:mod:`engine.parts`): True, one per CPU the process
        may use; an int, that many; False computes it all on the caller. The same bits.
    types : sequence of int, length n, optional
        Segment ids (0 for the first text of a pair, 1 for the second); default all 0.
    cache : bool, keep every layer's keys and values (``BertRun.cache``) for :func:`step`
    progress : callable, optional
        ``progress(done, total)`` after each layer: ``done`` 1 … ``total``, the layers.

    Returns
    -------
    BertRun, with ``labels`` equal to ``tokens`` and ``offsets`` None

    Raises
    ------
    TooLongError when n exceeds the model's positions; ValueError for no ids, an id
    outside the vocabulary or a segment outside the model's
    """
    c = model.config
    ids = np.asarray(ids, dtype=np.intp).reshape(-1)
    _check_ids(model, ids)
    types = np.zeros_like(ids) if types is None else np.asarray(types, dtype=np.intp).reshape(-1)
    if types.shape != ids.shape or types.min() < 0 or types.max() >= max(c.n_types, 1):
        raise ValueError(f"segment ids must be one per token, in [0, {max(c.n_types, 1)})")
    params = {k: v for k, v in model.params.items() if k != "lm_head"}
    if not positions and c.rotary:
        c = c._replace(rope_theta=None)
    elif not positions:
        params["wpe"] = _no_positions(model)
    hidden, attentions, queries, keys, last, kept, summaries, last_rows = transformer(
        ids, types, c, **params, parallel=parallel, cache=cache, progress=progress
    )
    if attentions is None:  # a long text: computed again when read, from the hidden states
        computed = (c, params["blocks"], hidden)
        n, vectors = len(ids), (c.n_layers, c.n_heads, len(ids), c.d_head)
        shape = (c.n_layers, c.n_heads, n, n)
        attentions = Attentions(functools.partial(_rows, *computed), shape, last_rows)
        queries = PerLayer(functools.partial(_vectors, *computed, 0), vectors)
        keys = PerLayer(functools.partial(_vectors, *computed, 1), vectors)
    logits = None
    if c.lm_head:
        logits = soft_cap(last[-1] @ model.unembedding.T, c.final_softcap)  # -> [n_vocab]
    tokens = [model.tokenizer.id_to_token(int(i)) for i in ids]
    return BertRun(
        tokens,
        list(tokens),
        None,
        ids,
        attentions,
        hidden,
        queries,
        keys,
        last,
        logits,
        cache=kept,
        summaries=summaries,
        positions=positions,
    )


def _no_positions(model):
    wpe = np.zeros_like(model.params["wpe"])
    wpe.flags.writeable = False
    return wpe


def run(model, text, positions=True, parallel=True, cache=False, progress=None):
    """Tokenize ``text`` with the model's tokenizer (its special tokens added) and run it.

    Parameters
    ----------
    model : engine.checkpoint.Model
    text : str; may be empty, which runs the special tokens alone (an error for GPT-2,
        which adds none)
    positions, parallel, cache, progress : as in :func:`run_ids`

    Returns
    -------
    BertRun

    Raises
    ------
    TooLongError when the text needs more tokens than the model has positions
    """
    encoding = model.tokenizer.encode(text)
    labels = piece_labels(text, encoding.tokens, encoding.offsets)
    result = run_ids(model, encoding.ids, positions, parallel, cache=cache, progress=progress)
    return result._replace(
        tokens=list(encoding.tokens),
        labels=labels,
        offsets=list(encoding.offsets),
        continues=continued_pieces(text, encoding.offsets),
    )


@blas.one_thread
def step(model, cache, token):
    r"""A causal model's next token, run against the key/value cache: one token's work.

    .. math:: \text{head}_h = \operatorname{softmax}\!\left(\frac{q_n
              [K_{1..n-1}; k_n]^\top}{\sqrt{d_{head}}}\right)[V_{1..n-1}; v_n]

    The layers of :func:`transformer` (:func:`engine.layers.encoder_layer`) on the new
    token alone, at its position, each with that layer's settings (its window and rotary
    base, the q and k norms, the scores' scale and soft cap, Gemma's extra norms), its keys
    and values added to the cached ones (:func:`engine.kv_cache.cached_attention`); the
    next token's logits from its row, soft-capped where the model caps them.
    The cache is a value: the one given is left as it was. The whole pass's last row, in
    other roundings: BLAS
    rounds a row of a product by where it falls in its tiles of rows, and one row alone
    (a matrix-vector product) otherwise again, so each cached key and value holds the
    bits of the pass that first computed it, not of a whole pass over all ``n`` tokens.
    The attention row and the logits agree with that pass's to float32's rounding, and
    the tokens chosen are the same (tests/engine/test_generate.py).

    Parameters
    ----------
    model : engine.checkpoint.Model, causal, with an LM head
    cache : KeyValues, of the ``n - 1`` tokens before (``run_ids(..., cache=True).cache``,
        or a step's)
    token : int, the new token's id

    Returns
    -------
    StepRun, its cache holding ``n`` tokens

    Raises
    ------
    TooLongError when the model has no position left for the token
    """
    c = model.config
    if not (c.causal and c.lm_head):
        raise ValueError(f"a {c.model_type} model is not causal: it has no next token to run")
    n = cache.n + 1
    _check_ids(model, np.asarray([token], dtype=np.intp))
    if n > c.max_tokens:
        raise TooLongError(n, c.max_tokens, model.special_tokens)
    room = cache.room
    if room is None or not room.claim(cache.n):  # the row after the cache is taken: a copy
        room = CacheRoom(cache, min(c.max_tokens, n + max(n // 2, _ROOM_MIN)))
        room.filled = n
    keys, values = room.keys[:, :, :n], room.values[:, :, :n]  # row n - 1 written by the layers
    params = {k: v for k, v in model.params.items() if k != "lm_head"}
    blocks, ln_f = params.pop("blocks"), params.pop("ln_f", None)
    ids = np.asarray([token], dtype=np.intp)
    x = embed(ids, np.zeros_like(ids), c, **params, first=n - 1)  # -> [1, d_model]
    attention = np.empty((c.n_layers, c.n_heads, n), dtype=np.float32)
    masks = {}  # the whole pass's last row of each layer's mask; None where it hides nothing
    for i, (block, row) in enumerate(zip(blocks, attention, strict=True)):
        window = c.window(i)
        if window not in masks:
            visible = visible_keys(c, n - 1, layer=i)
            masks[window] = None if visible.start in (0, None) else _row_mask(n, visible)
        layer = encoder_layer(
            x,
            **upcast(block),
            **_layer_settings(c, i),
            mask=masks[window],
            past=(keys[i], values[i]),  # room for this token's: written in place
            first=n - 1,
        )
        x = layer.output  # [1, d_model]
        row[...] = layer.attention.weights[:, -1]  # [n_heads, n]
    last = x if ln_f is None else _norm(c)(x, **upcast(ln_f), eps=c.eps)
    logits = soft_cap(last[-1] @ model.unembedding.T, c.final_softcap)  # -> [n_vocab]
    return StepRun(attention, logits, KeyValues(keys, values, room))


#: The fewest free rows a step's new cache room has (beyond that, half the tokens held).
_ROOM_MIN = 16


def _row_mask(n, visible):
    mask = np.zeros((1, n), dtype=bool)
    mask[0, visible] = True
    return mask
