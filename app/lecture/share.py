"""The share box and the page's browser side: a view's link, and the URL after a reconnection.

Both are the page component (``attention_explorer/chart/page.js``), drawn on every page.
"""

from __future__ import annotations

import streamlit as st

import attention_explorer


def link_box(presenter_bar=None):
    """A box with this view's full link and a copy button; in presentation mode, a button.

    The box is in the sidebar; in presentation mode (``presenter_bar``, from
    :func:`app.lecture.presentation.frame`) the copy button is in the presenter bar, as the
    hidden sidebar's box would have no size.

    The box folds out in place (an expander): a popover at the sidebar's foot opened as a
    small scrolling box that hid its second link.

    The link is the address bar's, read in the browser (``chart/page.js``): the URL is
    the view's one record (:func:`app.state.session.write_url`, the token pickers, the scale
    slider's fragment all write it), and a box built here would keep the link of the
    last full run after a fragment's.
    """
    if presenter_bar is not None:
        with presenter_bar:
            attention_explorer.page(key="share_link", data={"kind": "share", "button": True})
        return
    with st.sidebar.expander("Copy link to this view", icon=":material/link:"):
        attention_explorer.page(key="share_link", data={"kind": "share"})


def page_frame():
    """The page's browser side, on every page: the URL read again after a reconnection.

    When the connection comes back (a replica behind the proxy died and another took
    the page), the browser runs the page once from its address bar, so the new session
    starts from the link (:func:`app.state.session.load_url`) before any page switch; and it
    fits wide equations to narrow screens. An element of height 0 (``chart/page.js``).
    """
    with st.sidebar:
        attention_explorer.page(
            key="page_frame", data={"kind": "page"}, height=0, on_reconnected_change=_ignore
        )


def top_on_change(at):
    """Scroll the page to its top when ``at`` differs from the last run's on this page.

    The tour's new step starts at its heading, even when the reader had scrolled down to
    the figure (``chart/page.js``; not inline: ``serve_class.sh``'s Content-Security-Policy
    allows no inline script).
    """
    with st.sidebar:
        attention_explorer.page(key="page_top", data={"kind": "top", "at": at}, height=0)


def _ignore():
    """The component's trigger reruns the page; the callback only registers it."""
