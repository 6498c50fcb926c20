"""The positional-encoding page opens on an encoding that shows something (issue #13, item 5).

These are the random model's choices: MiniLM brings its own learned positions.

With the shared default "None" its table and similarity were grey squares; now the page
opens on the sinusoidal encoding (once per session, unless a link chose), and "None"
says plainly that nothing is added.
"""

import numpy as np
from apptest_support import RANDOM, chart_z, charts, messages, open_app


def test_opens_on_the_sinusoidal_encoding():
    at = open_app("positional_encoding", RANDOM)
    assert not at.exception
    assert at.session_state["pe"] == "sinusoidal"
    assert at.sidebar.selectbox(key="pe").value == "sinusoidal"
    table = chart_z(at, "pe_table")
    assert np.abs(table).max() > 0.5
    assert np.ptp(chart_z(at, "pe_similarity")) > 0.5
    assert at.query_params["pe"] == "sinusoidal"  # the link says what is shown


def test_none_says_nothing_is_added_and_draws_no_empty_table():
    at = open_app("positional_encoding", RANDOM, page_query={"pe": "none"})  # a link to the page
    assert not at.exception
    assert at.session_state["pe"] == "none"  # a link's choice is kept
    assert "pe_table" not in charts(at)
    assert "pe_similarity" not in charts(at)
    assert any("nothing is added" in text for text in messages(at, "info"))


def test_a_choice_of_none_made_in_the_sidebar_is_kept():
    at = open_app("positional_encoding", RANDOM)
    at.sidebar.selectbox(key="pe").set_value("none").run()
    at.switch_page("../pages/attention.py").run()
    at.switch_page("../pages/positional_encoding.py").run()
    assert at.session_state["pe"] == "none"
    assert "pe_table" not in charts(at)
    assert at.query_params["pe"] == "none"  # so a copied link reopens "None"


def test_other_pages_still_open_without_positions():
    at = open_app("attention")
    assert at.session_state["pe"] == "none"
