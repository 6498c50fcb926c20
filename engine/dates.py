"""The toy translation task: spelled-out English dates to ISO 8601 ("YYYY-MM-DD").

"the third of march 2021" → "2021-03-03". The alignment is easy to see: the year word
becomes the first four characters, the month name the two after the first dash, the
day word the last two, so a trained model's cross-attention should light up the
source word each output character copies from.

The generator is pure and seeded: the same seed gives the same sentences in the same
order on every machine, so the training script (``scripts/train_translator.py``) and
the tests regenerate exactly the same held-out set. Held-out sentences have dates that
no training sentence has, not merely a different wording of a training date.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

import numpy as np

__all__ = [
    "DAY_WORDS",
    "FIRST_YEAR",
    "LAST_YEAR",
    "MONTHS",
    "N_HELD_OUT",
    "N_TRAIN",
    "SEED",
    "TEMPLATES",
    "Example",
    "all_dates",
    "dataset",
    "iso",
    "source_words",
    "spell",
]

DAY_WORDS = (
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
    *(f"twenty-{word}" for word in ("first", "second", "third", "fourth", "fifth")),
    *(f"twenty-{word}" for word in ("sixth", "seventh", "eighth", "ninth")),
    "thirtieth",
    "thirty-first",
)
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
FIRST_YEAR, LAST_YEAR = 1900, 2099
#: Three word orders, so the model must find the month by meaning, not by position.
TEMPLATES = (
    "the {day} of {month} {year}",
    "{day} of {month} {year}",
    "{month} {day} {year}",
)

#: The split the shipped translator was trained and measured on (see :func:`dataset`).
SEED, N_TRAIN, N_HELD_OUT = 2017, 20_000, 1_000


class Example(NamedTuple):
    """One sentence pair: the spelled-out date and its ISO form."""

    source: str
    target: str


def spell(date, template=0):
    """The date in words, e.g. ``"the third of march 2021"``.

    Parameters
    ----------
    date : datetime.date
    template : int, an index into :data:`TEMPLATES`
    """
    return TEMPLATES[template].format(
        day=DAY_WORDS[date.day - 1], month=MONTHS[date.month - 1], year=date.year
    )


def iso(date):
    """The date as ``YYYY-MM-DD``."""
    return date.isoformat()


def all_dates():
    """Every calendar date from 1 January 1900 to 31 December 2099, in order (73,049)."""
    first, last = dt.date(FIRST_YEAR, 1, 1), dt.date(LAST_YEAR, 12, 31)
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]


def source_words():
    """Every word a source sentence can contain, in a fixed order."""
    fillers = sorted({w for t in TEMPLATES for w in t.split() if not w.startswith("{")})
    years = [str(y) for y in range(FIRST_YEAR, LAST_YEAR + 1)]
    return [*fillers, *DAY_WORDS, *MONTHS, *years]


def dataset(seed, n_train, n_test):
    """Training and held-out pairs with disjoint dates, drawn with a seeded generator.

    The dates are shuffled once; the first ``n_test`` are held out, the next
    ``n_train`` are for training, and each gets a template drawn from the same stream.
    Asking for a different ``n_train`` leaves the held-out set unchanged.

    Parameters
    ----------
    seed : int
    n_train, n_test : int, with ``n_train + n_test`` at most 73,049

    Returns
    -------
    train, test : lists of Example
    """
    dates = all_dates()
    if n_train < 0 or n_test < 0 or n_train + n_test > len(dates):
        raise ValueError(f"need 0 <= n_train + n_test <= {len(dates)} distinct dates")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(dates))
    templates = rng.integers(len(TEMPLATES), size=len(dates))  # one per shuffled slot

    def pairs(slots):
        return [
            Example(spell(dates[order[i]], int(templates[i])), iso(dates[order[i]])) for i in slots
        ]

    return pairs(range(n_train + n_test)[n_test:]), pairs(range(n_test))
