"""The atlas of head roles from a notebook: a table of every head's scores, and its grid.

The scores are :func:`engine.roles.head_roles`' (previous-token, induction, duplicate-token,
sink and local; an encoder is not scored on induction), computed once per model and
settings in this process; the figure is /heads' own (:func:`app.views.head_roles.figure`)::

    import aeviews as ae
    roles = ae.head_roles(model="smollm2")  # a DataFrame: layer, head, one column per role
    roles.sort_values("induction", ascending=False).head()
    ae.head_roles_view(model="smollm2")     # a layers × heads grid per role
    ae.save_csv(roles, "roles.csv")         # as /heads' CSV button writes it
"""

from __future__ import annotations

import functools

from aeviews.models import load, model_key
from aeviews.views import _figure
from app.data import cache
from app.views import head_roles as views
from engine import roles


@functools.lru_cache(maxsize=4)
def _scores(key, repeat, seeds, window):
    return cache.freeze(roles.head_roles(load(key), repeat, seeds, window))


def scores(model=None, *, repeat=None, seeds=roles.SEEDS, window=roles.WINDOW):
    """Every head's role scores as the engine gives them: :class:`engine.roles.HeadRoles`.

    Parameters
    ----------
    model : None (all-MiniLM-L6-v2), ``"smollm2"``, or a checkpoint folder's or GGUF file's path
    repeat : int, optional, R (default 50, fewer where the model reads fewer tokens)
    seeds : sequence of int, one random sequence each
    window : int, w of the local score
    """
    return _scores(model_key(model), repeat, tuple(seeds), window)


def head_roles(model=None, *, repeat=None, seeds=roles.SEEDS, window=roles.WINDOW):
    """Every head's role scores as a table: layer, head, one column per role, then each spread.

    The scores are means over ``seeds`` and the ``*_spread`` columns their standard
    deviations: the numbers /heads' CSV button writes. Arguments as :func:`scores`.

    Returns
    -------
    pandas.DataFrame, one row per (layer, head)
    """
    return views.table(scores(model, repeat=repeat, seeds=seeds, window=window))


def head_roles_view(model=None, *, repeat=None, seeds=roles.SEEDS, window=roles.WINDOW, role=None):
    """/heads' grid: per role, layers × heads coloured by the score (one role: ``role``).

    Arguments as :func:`scores`. Returns :class:`aeviews.views.Figure`.
    """
    result = scores(model, repeat=repeat, seeds=seeds, window=window)
    if role is not None:
        if role not in result.roles:
            raise ValueError(f"role must be one of {list(result.roles)}, got {role!r}")
        result = views.one_role(result, role)
    return _figure(views.figure(result, "Every head's score per role"))
