r"""The next token of a causal model (GPT-2): its probabilities at a temperature, and generation.

GPT-2 reads its output off the last position: the logits ``z = LN_f(h_n) W_E^T`` (the
word embeddings as the output matrix, Radford et al. 2019), and the next token's
distribution at temperature ``T``

.. math:: p_i(T) = \operatorname{softmax}(z / T)_i = \frac{e^{(z_i - m)/T}}{\sum_j e^{(z_j - m)/T}},
          \quad m = \max_j z_j

``T = 1`` is the model's own distribution; ``T → 0`` puts all the mass on the largest
logit (greedy decoding), ``T → ∞`` spreads it evenly; no ``T > 0`` changes the order of
the tokens. This temperature acts on the output logits, as Transformer Explainer's
slider does, not on the attention softmax (the scale slider's job, :mod:`engine.attention`).

Generation runs the whole pass once, over the text, keeping every layer's keys and
values; each new token is then one token's work against them (:func:`engine.bert.step`),
which gives the whole pass's logits and last-token attention to float32's rounding (not
to the bit: :func:`engine.bert.step` says why) and the same tokens. A step keeps that
attention row, the attention behind its choice. Randomness comes only from the seed
given.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.bert import key_values, run, step
from engine.scores import soft_cap, softmax

__all__ = [
    "NextToken",
    "Step",
    "TemperatureSweep",
    "generate",
    "logits",
    "next_token",
    "probabilities",
    "temperature_sweep",
    "top_ids",
]


class NextToken(NamedTuple):
    """The ``k`` likeliest next tokens, likeliest first.

    Attributes
    ----------
    ids : int ndarray of shape (k,)
    tokens : list of str, the model's own token strings
    probabilities : ndarray of shape (k,)
    temperature : float
    """

    ids: np.ndarray
    tokens: list[str]
    probabilities: np.ndarray
    temperature: float


class TemperatureSweep(NamedTuple):
    """The next token's top-k at every temperature of a grid: the frames a slider plays.

    Attributes
    ----------
    temperatures : ndarray of shape (n_t,)
    ids : int ndarray of shape (k,)
        The ``k`` largest logits, largest first: the top k at every ``T > 0``, since no
        temperature changes the order.
    probabilities : ndarray of shape (n_t, k)
        ``probabilities[t]`` is :func:`probabilities` at ``temperatures[t]``, at ``ids``.
    rest : ndarray of shape (n_t,)
        The probability of every other token together.
    """

    temperatures: np.ndarray
    ids: np.ndarray
    probabilities: np.ndarray
    rest: np.ndarray


class Step(NamedTuple):
    """One step of generation.

    Attributes
    ----------
    attention : ndarray of shape (n_layers, n_heads, n)
        How the last of the ``n`` tokens so far attends, in every layer and head: the
        attention behind this step's choice (the whole pass's ``attentions[:, :, -1]``).
    labels : list of n str
        Those tokens: the text's pieces (:func:`engine.tokenize.piece_labels`), then the
        tokens generated before this step (their text, or their token string where the
        text shows nothing).
    candidates : NextToken
        The likeliest next tokens at the step's temperature; at temperature 0 (greedy),
        where every probability is 0 or 1, at the model's own (T = 1).
    id : int
        The token chosen.
    token : str
        Its token string (``Ġthe``).
    text : str
        Its text (`` the``).
    probability : float
        The model's own probability of the token chosen (at T = 1), whatever the
        step's temperature.
    """

    attention: np.ndarray
    labels: list[str]
    candidates: NextToken
    id: int
    token: str
    text: str
    probability: float


def _check_lm(model):
    if not model.config.lm_head:
        raise ValueError(
            f"a {model.config.model_type} model has no next-token head: only causal models "
            "(GPT-2) predict the next token"
        )


@blas.one_thread
def logits(model, run):  # -> [n, n_vocab]
    r"""The next-token logits after every position, ``LN_f(h) W_E^\top``.

    Soft-capped where the model caps them (Gemma: :func:`engine.scores.soft_cap`).

    Parameters
    ----------
    model : engine.checkpoint.Model, with an LM head (GPT-2)
    run : engine.bert.BertRun, of ``model``

    Returns
    -------
    ndarray of shape (n, n_vocab); row ``i`` predicts token ``i + 1``
    """
    _check_lm(model)
    logits = run.last_hidden_state @ model.unembedding.T  # [n, d_model] @ [d_model, n_vocab]
    return soft_cap(logits, model.config.final_softcap, out=logits)  # Gemma's, where set


def probabilities(logits, temperature=1.0):
    r"""The next token's distribution at temperature ``T``: ``softmax(z / T)``.

    The largest logit is subtracted before the division, so every exponent is ``<= 0``:
    no overflow however small ``T`` is (``(z - m)/T`` only grows towards ``-∞``, and
    ``e^{-∞} = 0``). At ``T = 0`` itself, the limit: the mass shared equally by the
    largest logits (one, unless tied), with no division by 0.

    Parameters
    ----------
    logits : ndarray of shape (..., n_vocab), finite
    temperature : float or ndarray broadcastable against logits' leading dimensions, >= 0

    Returns
    -------
    float64 ndarray of the same shape; sums to 1 along the last axis
    """
    z = np.asarray(logits, dtype=np.float64)
    t = np.asarray(temperature, dtype=np.float64)[..., None]  # one T per distribution
    if (t < 0).any() or np.isnan(t).any():
        raise ValueError(f"the temperature must be >= 0, got {temperature}")
    shifted = z - z.max(axis=-1, keepdims=True)  # <= 0, and 0 at the largest logits
    limit = np.where(shifted == 0, 0.0, -np.inf)  # T = 0: the largest logits alone
    # A tiny T overflows (z - m)/T to -inf, whose exp is 0; T = 0 takes the limit instead.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scaled = np.where(t > 0, shifted / t, limit)
    return softmax(scaled, axis=-1)


def temperature_sweep(logits, temperatures, k=10):
    """The top ``k`` next tokens at every temperature of a grid, in one call.

    Parameters
    ----------
    logits : ndarray of shape (n_vocab,)
    temperatures : ndarray of shape (n_t,), each >= 0
    k : int, at most n_vocab

    Returns
    -------
    TemperatureSweep
    """
    temperatures = np.asarray(temperatures, dtype=np.float64).reshape(-1)
    ids = top_ids(logits, k)
    every = probabilities(logits, temperatures)  # [n_t, n_vocab]
    top = every[:, ids]  # [n_t, k]
    return TemperatureSweep(temperatures, ids, top, np.clip(1.0 - top.sum(axis=1), 0.0, 1.0))


def top_ids(logits, k):
    """The ids of the ``k`` largest logits, largest first; ties: the smaller id first.

    ``np.argsort(-logits, kind="stable")[:k]``, without sorting the whole vocabulary: the
    ``k``-th largest value found by a partition, then only the logits at least as large
    sorted (every one tied with it kept, so that the smaller ids come first). Generation
    calls it once per token (docs/benchmarks.md).

    Parameters
    ----------
    logits : ndarray of shape (n_vocab,)
    k : int, >= 1

    Returns
    -------
    int ndarray of shape (min(k, n_vocab),)
    """
    z = np.asarray(logits)
    if k >= z.size or np.isnan(z).any():  # a NaN sorts last: the whole sort says where
        return np.argsort(-z, kind="stable")[:k]
    kth = -np.partition(-z, k - 1)[k - 1]  # the k-th largest value
    ids = np.flatnonzero(z >= kth)  # in id order: a stable sort keeps ties so
    return ids[np.argsort(-z[ids], kind="stable")][:k]


def next_token(model, run, temperature=1.0, k=10):
    """The ``k`` likeliest next tokens after the run's last token, at ``temperature``.

    Parameters
    ----------
    model : engine.checkpoint.Model, with an LM head (GPT-2)
    run : engine.bert.BertRun, of ``model``
    temperature : float, >= 0
    k : int

    Returns
    -------
    NextToken
    """
    _check_lm(model)
    return _top(model, run.next_logits, temperature, k)


def _top(model, logits, temperature, k):
    sweep = temperature_sweep(logits, [temperature], k)
    tokens = [model.tokenizer.id_to_token(int(i)) for i in sweep.ids]
    return NextToken(sweep.ids, tokens, sweep.probabilities[0], float(temperature))


def _label(step):
    """A generated token on an axis: its text, or its token string where the text shows none.

    A space shows nothing, and a byte-level token that is part of a character cannot show
    it (its text is U+FFFD).
    """
    text = step.text.strip()
    return step.token if not text or "\ufffd" in text else text


def generate(model, text, n_new, temperature=0.0, seed=None, k=10, parallel=True, prompt=None):
    """Continue ``text`` by ``n_new`` tokens: one pass over the text, then one token's work each.

    At ``temperature`` 0, greedy: the largest logit each step (the smaller id when
    tied). Above 0, each token is drawn from :func:`probabilities` at that temperature
    with a generator seeded by ``seed``: the same seed, the same tokens. Generation
    stops early when the model's positions are full. Each token after the first is run
    against the key/value cache (:func:`engine.bert.step`): the logits and attention of a
    whole pass over the tokens so far, so the same tokens.

    Parameters
    ----------
    model : engine.checkpoint.Model, with an LM head (GPT-2)
    text : str, at least one token
    n_new : int, >= 0
    temperature : float, >= 0
    seed : int or numpy.random.Generator; needed when temperature > 0
    k : int, candidates reported each step
    parallel : bool or int, the pass over the text's, as in :func:`engine.bert.run_ids`:
        the same bits (a step is one row: one part, on the caller)
    prompt : engine.bert.BertRun, optional
        ``text``'s pass, run already: its cache is made from its hidden states
        (:func:`engine.bert.key_values`), with no second pass

    Returns
    -------
    list of Step, one per token generated
    """
    _check_lm(model)
    if temperature > 0 and seed is None:
        raise ValueError("sampling at a temperature above 0 needs a seed")
    rng = np.random.default_rng(seed)
    if prompt is None:
        prompt = run(model, text, parallel=parallel, cache=True)
    cache = prompt.cache if prompt.cache is not None else key_values(model, prompt)
    logits, labels = prompt.next_logits, prompt.labels
    attention = prompt.last_token_attention.copy()  # the n x n maps are let go
    del prompt
    steps = []
    while len(steps) < n_new and cache.n + bool(steps) < model.config.max_tokens:
        if steps:  # the token chosen last, run against the cache
            chosen = steps[-1]
            following = step(model, cache, chosen.id)
            logits, cache = following.next_logits, following.cache
            attention = following.last_token_attention
            labels = [*labels, _label(chosen)]
        candidates = _top(model, logits, temperature if temperature > 0 else 1.0, k)
        own = probabilities(logits)
        if temperature == 0:
            picked = int(np.argmax(logits))
        else:
            picked = int(rng.choice(len(own), p=probabilities(logits, temperature)))
        token, piece = model.tokenizer.id_to_token(picked), model.tokenizer.decode([picked])
        steps.append(Step(attention, labels, candidates, picked, token, piece, float(own[picked])))
    return steps
