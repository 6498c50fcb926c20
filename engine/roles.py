"""Head roles: which heads attend to the previous token, copy by induction, or park on a sink.

Each score is one number per head, a mean of attention weights read at a fixed offset of
the query, computed on R random tokens repeated twice: the test of Olsson et al. (2022),
"In-context Learning and Induction Heads", section 2 ("prefix matching" on repeated random
tokens), as TransformerLens' head detector reads it. On the repeat the pattern of a head
is the only thing that can predict the second half, so a head that copies shows it there.

The scores read ``attentions[..., i, j]``, the softmax weights of any stack of heads
(``(n_layers, n_heads, n, n)`` from :func:`engine.bert.run_ids`), with the sequence laid
out as ``prefix · t_1 … t_R · t_1 … t_R · suffix``: ``start`` is the first random token's
position (1 after a BOS or [CLS], 0 for a model that adds none).

An encoder reads both ways, so it gets the roles whose pattern it can have (previous-token,
duplicate-token, sink and local: :data:`ENCODER_ROLES`) but not induction: an induction
head is the causal model's way of predicting the next token from an earlier copy, and an
encoder sees the next token itself, so A[i, i − R + 1] there measures nothing it needs.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from engine.bert import run_ids

__all__ = [
    "DECODER_ROLES",
    "ENCODER_ROLES",
    "HeadRoles",
    "duplicate_token",
    "fitting_repeat",
    "head_roles",
    "induction",
    "local",
    "ordinary_ids",
    "previous_token",
    "random_tokens",
    "repeated_sequence",
    "role_scores",
    "roles_of",
    "sink",
]

#: The roles a causal model's heads are scored on, in the order the tables give them.
DECODER_ROLES = ("previous_token", "induction", "duplicate_token", "sink", "local")
#: The roles an encoder's heads are scored on: no induction (module docstring).
ENCODER_ROLES = ("previous_token", "duplicate_token", "sink", "local")
#: R, the random tokens repeated; the seeds averaged over; w, the local window.
REPEAT, SEEDS, WINDOW = 50, (0, 1, 2, 3, 4), 3
#: BERT's vocabularies keep rows such as ``[unused0]`` that were never trained: not ordinary.
_PLACEHOLDER = re.compile(r"^\[[A-Za-z]+\d*\]$")


def previous_token(attentions):  # [..., n, n] -> [...]
    r"""Previous-token score: the mean weight a query gives the token just before it.

    .. math:: s = \frac{1}{n - 1} \sum_{i=1}^{n-1} A_{i,\,i-1}

    Parameters
    ----------
    attentions : ndarray of shape (..., n, n), n >= 2
    """
    n = attentions.shape[-1]
    i = np.arange(1, n)
    return attentions[..., i, i - 1].mean(axis=-1)


def _second_repeat(n, start, repeat):
    """The second repeat's query positions, checked to lie in an n-token sequence."""
    if repeat < 1 or start < 0 or start + 2 * repeat > n:
        raise ValueError(
            f"{repeat} tokens repeated twice from position {start} do not fit in {n} tokens"
        )
    return np.arange(start + repeat, start + 2 * repeat)  # [repeat]


def induction(attentions, start, repeat):  # [..., n, n] -> [...]
    r"""Induction score: the weight on the token after the query's earlier occurrence.

    On ``t_1 … t_R t_1 … t_R`` from position ``start``, the query at i in the second repeat
    occurred before at i − R; an induction head attends to what came next there, i − R + 1:

    .. math:: s = \frac{1}{R} \sum_{i=\mathrm{start}+R}^{\mathrm{start}+2R-1} A_{i,\,i-R+1}

    Parameters
    ----------
    attentions : ndarray of shape (..., n, n)
    start : int, the first random token's position
    repeat : int, R
    """
    i = _second_repeat(attentions.shape[-1], start, repeat)
    return attentions[..., i, i - repeat + 1].mean(axis=-1)


def duplicate_token(attentions, start, repeat):  # [..., n, n] -> [...]
    r"""Duplicate-token score: the weight on the query's own earlier occurrence.

    .. math:: s = \frac{1}{R} \sum_{i=\mathrm{start}+R}^{\mathrm{start}+2R-1} A_{i,\,i-R}

    Parameters
    ----------
    attentions : ndarray of shape (..., n, n)
    start : int, the first random token's position
    repeat : int, R
    """
    i = _second_repeat(attentions.shape[-1], start, repeat)
    return attentions[..., i, i - repeat].mean(axis=-1)


def sink(attentions):  # [..., n, n] -> [...]
    r"""Sink score: the mean weight on the first token, over the queries after it.

    .. math:: s = \frac{1}{n - 1} \sum_{i=1}^{n-1} A_{i,\,0}

    The first query is left out: in a causal model it can see only itself, so its 1 says
    nothing about the head (Xiao et al. 2024, "Attention Sinks", section 3.1).

    Parameters
    ----------
    attentions : ndarray of shape (..., n, n), n >= 2
    """
    return attentions[..., 1:, 0].mean(axis=-1)


def local(attentions, window=WINDOW):  # [..., n, n] -> [...]
    r"""Local score: the share of a query's weight within the w tokens just before it.

    .. math:: s = \frac{1}{n - w - 1} \sum_{i=w+1}^{n-1} \sum_{j=i-w}^{i-1} A_{i,\,j}

    Only queries past the first w + 1 are counted, so the first token (the usual sink)
    never lies in the window; the query's own weight is not local (a head on itself is
    not looking around it). A previous-token head is local too: w = 1 is that score.

    Parameters
    ----------
    attentions : ndarray of shape (..., n, n), n >= w + 2
    window : int, w >= 1
    """
    n = attentions.shape[-1]
    if window < 1 or n < window + 2:
        raise ValueError(f"a window of {window} needs w >= 1 and at least {window + 2} tokens")
    i = np.arange(window + 1, n)  # [n - w - 1]
    near = sum(attentions[..., i, i - d] for d in range(1, window + 1))  # [..., n - w - 1]
    return near.mean(axis=-1)


def ordinary_ids(tokenizer):
    """The ids of a tokenizer's ordinary tokens: its vocabulary less added and special ones.

    Left out: every added token (the tokenizer's own list, special or not: ``[CLS]``,
    ``<|im_start|>``) and BERT's untrained placeholders (``[unused0]``).

    Returns
    -------
    ndarray of int, ascending
    """
    added = set(tokenizer.get_added_tokens_decoder())
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    ids = [i for token, i in vocab.items() if i not in added and not _PLACEHOLDER.match(token)]
    return np.array(sorted(ids), dtype=np.intp)


def random_tokens(ordinary, repeat, seed):  # [n_ordinary] -> [repeat]
    """R distinct tokens drawn from ``ordinary`` with NumPy's PCG64 seeded by ``seed``.

    Distinct, so each token of the first repeat occurs there once and its earlier
    occurrence in the second repeat is exactly R back.
    """
    if repeat > len(ordinary):
        raise ValueError(f"{repeat} distinct tokens from a vocabulary of {len(ordinary)}")
    return np.random.default_rng(seed).choice(ordinary, size=repeat, replace=False)


def _special_ends(tokenizer):
    """The special ids a tokenizer puts before and after a text: ([CLS]), ([SEP])."""
    encoding = tokenizer.encode("a")
    mask, ids = encoding.special_tokens_mask, encoding.ids
    lead = next((k for k, m in enumerate(mask) if not m), len(mask))
    tail = next((k for k, m in enumerate(reversed(mask)) if not m), 0)
    return ids[:lead], ids[len(ids) - tail :]


def repeated_sequence(model, repeat, seed):  # -> [n], int
    """``prefix · t_1 … t_R · t_1 … t_R · suffix``, the special tokens the model adds around.

    Returns
    -------
    ids : ndarray of shape (n,)
    start : int, the position of t_1 (the prefix's length)
    """
    prefix, suffix = _special_ends(model.tokenizer)
    tokens = random_tokens(ordinary_ids(model.tokenizer), repeat, seed)
    ids = np.concatenate([prefix, tokens, tokens, suffix]).astype(np.intp)  # -> [n]
    return ids, len(prefix)


def roles_of(config):
    """The roles a model's heads are scored on: :data:`DECODER_ROLES` or :data:`ENCODER_ROLES`."""
    return DECODER_ROLES if config.causal else ENCODER_ROLES


def role_scores(attentions, roles, start, repeat, window=WINDOW):  # [..., n, n] -> [n_roles, ...]
    """Each of ``roles``' scores of every head in ``attentions``, stacked in their order.

    Parameters
    ----------
    attentions : ndarray of shape (..., n, n)
    roles : sequence of str, from :data:`DECODER_ROLES`
    start, repeat : the layout of the repeated tokens (:func:`induction`)
    window : int, w of :func:`local`
    """
    every = {
        "previous_token": lambda: previous_token(attentions),
        "induction": lambda: induction(attentions, start, repeat),
        "duplicate_token": lambda: duplicate_token(attentions, start, repeat),
        "sink": lambda: sink(attentions),
        "local": lambda: local(attentions, window),
    }
    return np.stack([every[role]() for role in roles])


class HeadRoles(NamedTuple):
    """Every head's role scores, averaged over seeds, and one seed's sequence to show.

    Attributes
    ----------
    roles : tuple of str, the roles scored (:func:`roles_of`)
    scores : ndarray of shape (n_roles, n_layers, n_heads)
        Each score's mean over the seeds.
    spread : ndarray of shape (n_roles, n_layers, n_heads)
        Its standard deviation over the seeds (NumPy's, ddof 0).
    repeat, window : int, R and w
    seeds : tuple of int
    start : int, the first random token's position
    ids : ndarray of shape (n,), the first seed's sequence
    tokens : list of n str, its tokens
    attentions : ndarray of shape (n_layers, n_heads, n, n), every head on it
    """

    roles: tuple
    scores: np.ndarray
    spread: np.ndarray
    repeat: int
    window: int
    seeds: tuple
    start: int
    ids: np.ndarray
    tokens: list
    attentions: np.ndarray


def fitting_repeat(model, repeat=REPEAT):
    """R, at most ``repeat``, such that the two repeats and the special tokens fit the model."""
    prefix, suffix = _special_ends(model.tokenizer)
    return max(1, min(repeat, (model.config.max_tokens - len(prefix) - len(suffix)) // 2))


def head_roles(model, repeat=None, seeds=SEEDS, window=WINDOW, parallel=True):
    """Score every head of ``model`` on each role, one run per seed (:func:`engine.bert.run_ids`).

    Parameters
    ----------
    model : engine.checkpoint.Model
    repeat : int, optional
        R, the random tokens repeated twice; default :data:`REPEAT`, or fewer where the
        model reads fewer tokens (:func:`fitting_repeat`).
    seeds : sequence of int, one random sequence each
    window : int, w of :func:`local`
    parallel : as in :func:`engine.bert.run_ids`

    Returns
    -------
    HeadRoles

    Raises
    ------
    ValueError for no seeds, or a sequence longer than the model reads
    """
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("at least one seed is needed")
    roles = roles_of(model.config)
    repeat = fitting_repeat(model) if repeat is None else int(repeat)
    per_seed, first = [], None
    for seed in seeds:
        ids, start = repeated_sequence(model, repeat, seed)
        run = run_ids(model, ids, parallel=parallel)
        per_seed.append(role_scores(run.attentions, roles, start, repeat, window))
        if first is None:
            first = ids, start, run
    stacked = np.stack(per_seed).astype(np.float64)  # -> [n_seeds, n_roles, n_layers, n_heads]
    ids, start, run = first
    return HeadRoles(
        roles,
        stacked.mean(axis=0),
        stacked.std(axis=0),
        repeat,
        window,
        seeds,
        start,
        ids,
        run.tokens,
        run.attentions,
    )
