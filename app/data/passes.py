"""A page's forward pass over its text: the longest text a page runs, and a bar per layer.

Every page runs a text up to the model's positions or :data:`MAX_PAGE_TOKENS`, whichever
is less (issue #52): MiniLM stays at 512, GPT-2 at 1,024, SmolLM2 and the Llama family at
4,096. A longer text is refused before the pass, with a message that says which limit it
met. While a pass runs in a script run, a progress bar moves after each layer
(:func:`engine.bert.run`'s ``progress``).
"""

from __future__ import annotations

import contextlib

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from engine import bert

__all__ = [
    "EVERY_HEAD_MAX_TOKENS",
    "LONG_TOKENS",
    "MAX_PAGE_TOKENS",
    "PROGRESS_MIN_TOKENS",
    "PageLimitError",
    "page_limit",
    "run",
]

#: The most tokens a page runs, special tokens counted, whatever the model's positions.
MAX_PAGE_TOKENS = 4096
#: Texts from this many tokens on show a bar while their pass runs; shorter ones run at once.
PROGRESS_MIN_TOKENS = 256
#: Texts longer than this are long: every page draws a head's n × n as tiles with a zoom,
#: one head at a time, and /pretrained's line and neuron views the tokens around the query.
LONG_TOKENS = 512
#: The views that compute every head's weights again (the model view, the rollout) run on
#: texts of at most this many tokens.
EVERY_HEAD_MAX_TOKENS = 1024


class PageLimitError(bert.TooLongError):
    """The text fits the model's positions but not the pages' :data:`MAX_PAGE_TOKENS`."""

    def __init__(self, n_tokens, limit, positions):
        ValueError.__init__(
            self,
            f"This text is {n_tokens:,} tokens; the pages read at most {limit:,} (the model "
            f"has positions for {positions:,}). Shorten it.",
        )
        self.n_tokens, self.limit = n_tokens, limit


def page_limit(config):
    """The most tokens a page runs on a model of ``config``, its special tokens counted."""
    return min(config.max_tokens, MAX_PAGE_TOKENS)


def run(model, text, positions=True, parallel=True):
    """:func:`engine.bert.run` within the pages' limit, with a bar per layer in a script run.

    Raises
    ------
    TooLongError (a PageLimitError past :data:`MAX_PAGE_TOKENS`); ValueError for a
    decoder's text without tokens
    """
    c = model.config
    n = len(model.tokenizer.encode(text).ids)
    if n > MAX_PAGE_TOKENS < c.max_tokens:  # a smaller model's own limit: the engine's message
        raise PageLimitError(n, MAX_PAGE_TOKENS, c.max_tokens)
    with _layer_bar(n >= PROGRESS_MIN_TOKENS) as progress:
        return bert.run(model, text, positions, parallel, progress=progress)


@contextlib.contextmanager
def _layer_bar(shown):
    """A progress bar's callback ``progress(done, total)`` in a script run, else None."""
    if not shown or get_script_run_ctx(suppress_warning=True) is None:
        yield None
        return
    bar = st.empty()

    def progress(done, total):
        bar.progress(done / total, text=f"Running the model: layer {done} of {total} …")

    try:
        yield progress
    finally:
        bar.empty()
