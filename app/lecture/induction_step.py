"""The tour's induction step: SmolLM2's induction score in every head (:mod:`app.lecture.tour`).

The scores are :func:`engine.roles.head_roles`' on the packaged SmolLM2, cached per model
(:func:`app.data.trained.head_roles`), whatever model the sidebar runs: induction needs a
causal model, and the tour offers the step only where SmolLM2 is installed.
"""

from __future__ import annotations

from app.data import trained
from app.state import weights
from app.views import head_roles

TITLE = "10 · Heads with a job: induction"
TEXT = (
    "Give SmolLM2 50 random tokens, then the same 50 again. In the second half a few heads "
    "look back at the token that followed the current token's earlier copy: the next token "
    "to predict. These induction heads are how a model copies from its context (Olsson et "
    "al. 2022). Each cell is one head's mean weight on that token, over five random "
    "sequences."
)


def _induction():
    return head_roles.one_role(trained.head_roles("smollm2"), "induction")


def chart(settings, head, values):
    """Every head's induction score on SmolLM2, and its table (every head, each role's score)."""
    result = _induction()
    title = "SmolLM2's induction score, every layer and head"
    return head_roles.figure(result, title), head_roles.table(result)


def says(settings, head, values):
    """Where the strongest induction heads lie, from the numbers."""
    result = _induction()
    return head_roles.sentence("induction", result.scores[0], result.spread[0])


def explore():
    """/heads on SmolLM2 with its strongest induction head open: what the step shows.

    The packaged model's name (``model``, which the page puts in its model box) and the
    session-state values of /heads' role, layer and head.
    """
    result = _induction()
    layer, head, _, _ = head_roles.strongest(result.scores[0], result.spread[0], 1)[0]
    return {
        "model": "smollm2",
        "heads_role": "induction",
        "heads_layer": int(layer),
        "heads_head": int(head),
    }


def steps(step):
    """The step as ``step`` (the tour's Step class) makes it, if SmolLM2 is installed, else none."""
    if not weights.installed("smollm2"):
        return ()
    return (step(TITLE, TEXT, "heads", chart, says, explore=explore),)
