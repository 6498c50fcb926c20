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

Generation runs the whole pass again for every new token (no key-value cache): a few
tokens are what a page shows, and each step keeps its own attention maps. Randomness
comes only from the seed given.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import soft_cap, softmax
from engine.bert import BertRun, run, run_ids

__all__ = [
    "NextToken",
    "Step",
    "TemperatureSweep",
    "generate",
    "logits",
    "next_token",
    "probabilities",
    "temperature_sweep",
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
    run : engine.bert.BertRun
        The pass over the tokens so far; its ``attentions[:, :, -1]`` are the last
        token's, across layers and heads: the attention behind this step's choice.
    candidates : NextToken
        The likeliest next tokens at the step's temperature.
    id : int
        The token chosen.
    token : str
        Its token string (``Ġthe``).
    text : str
        Its text (`` the``).
    """

    run: BertRun
    candidates: NextToken
    id: int
    token: str
    text: str


def _check_lm(model):
    if not model.config.lm_head:
        raise ValueError(
            f"a {model.config.model_type} model has no next-token head: only causal models "
            "(GPT-2) predict the next token"
        )


@blas.one_thread
def logits(model, run):  # -> [n, n_vocab]
    r"""The next-token logits after every position, ``LN_f(h) W_E^\top``.

    Soft-capped where the model caps them (Gemma: :func:`engine.attention.soft_cap`).

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
    ids = np.argsort(-np.asarray(logits), kind="stable")[:k]  # ties: the smaller id first
    every = probabilities(logits, temperatures)  # [n_t, n_vocab]
    top = every[:, ids]  # [n_t, k]
    return TemperatureSweep(temperatures, ids, top, np.clip(1.0 - top.sum(axis=1), 0.0, 1.0))


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
    sweep = temperature_sweep(run.next_logits, [temperature], k)
    tokens = [model.tokenizer.id_to_token(int(i)) for i in sweep.ids]
    return NextToken(sweep.ids, tokens, sweep.probabilities[0], float(temperature))


def generate(model, text, n_new, temperature=0.0, seed=None, k=10, parallel=True):
    """Continue ``text`` by ``n_new`` tokens, one pass per token.

    At ``temperature`` 0, greedy: the largest logit each step (the smaller id when
    tied). Above 0, each token is drawn from :func:`probabilities` at that temperature
    with a generator seeded by ``seed``: the same seed, the same tokens. Generation
    stops early when the model's positions are full.

    Parameters
    ----------
    model : engine.checkpoint.Model, with an LM head (GPT-2)
    text : str, at least one token
    n_new : int, >= 0
    temperature : float, >= 0
    seed : int or numpy.random.Generator; needed when temperature > 0
    k : int, candidates reported each step
    parallel : bool or int, as in :func:`engine.bert.run_ids`: the same bits

    Returns
    -------
    list of Step, one per token generated
    """
    _check_lm(model)
    if temperature > 0 and seed is None:
        raise ValueError("sampling at a temperature above 0 needs a seed")
    rng = np.random.default_rng(seed)
    current = run(model, text, parallel=parallel)
    steps = []
    for _ in range(n_new):
        if len(current.ids) == model.config.max_tokens:
            break
        candidates = next_token(model, current, temperature, k)
        if temperature == 0:
            chosen = int(np.argmax(current.next_logits))
        else:
            p = probabilities(current.next_logits, temperature)
            chosen = int(rng.choice(len(p), p=p))
        token = model.tokenizer.id_to_token(chosen)
        steps.append(Step(current, candidates, chosen, token, model.tokenizer.decode([chosen])))
        current = run_ids(model, [*current.ids, chosen], parallel=parallel)
    return steps
