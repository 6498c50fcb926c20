"""Every table of numbers writes each float column to one count of decimals.

Streamlit drops a float's trailing zeros unless its column has a format, so a column
read 11.083 beside 10.2117 (/multi-head's entropy, /efficient's slopes, /heads' spread).
The format each column is sent with (its printf specifier, which Python's ``%`` reads the
same way for ``%.Nf``) is applied here to every cell the page sent.
"""

import json
import re

import pandas as pd
import pytest
from apptest_support import RANDOM, open_app
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.pandas import column, data_frames

from app.views import tables
from engine.resources import minilm_dir

#: A printf format with a fixed count of decimals, and an optional % sign after it.
FIXED = re.compile(r"%\.(\d+)f(%%)?")


def decimals(text):
    """How many digits follow the point in ``text`` ("19.0%" has 1)."""
    return len(re.sub(r"\D*$", "", text).partition(".")[2])


def written(frame, config):
    """Each float column's cells as the browser writes them, from the format the page sent.

    Fails on a float column sent without a fixed-decimals format.
    """
    out = {}
    for name in frame.columns:
        if not pd.api.types.is_float_dtype(frame[name]):
            continue
        format_ = config.get(name, {}).get("type_config", {}).get("format", "")
        assert FIXED.fullmatch(format_), (name, format_)
        out[name] = [format_ % value for value in frame[name].dropna()]
    return out


def check_page(at):
    """Every dataframe the run drew: each float column's cells share their decimal count."""
    assert not at.exception
    assert at.dataframe, "no table drawn"
    columns = 0
    for element in at.dataframe:
        config = json.loads(element.proto.columns or "{}")
        for name, cells in written(element.value, config).items():
            assert len({decimals(cell) for cell in cells}) == 1, (name, cells)
            columns += 1
    assert columns, "no float column"


@pytest.mark.parametrize("page", ["multi_head", "efficient", "positional_encoding"])
def test_toy_pages_write_each_column_to_fixed_decimals(page):
    check_page(open_app(page, RANDOM))


@pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")
def test_heads_writes_score_and_spread_to_fixed_decimals():
    at = open_app("heads", timeout=180, text="The cat sat on the mat. The cat sat on the mat.")
    check_page(at)
    spread = json.loads(at.dataframe[0].proto.columns)["spread"]["type_config"]["format"]
    assert spread == "%.3f"


def test_efficient_writes_shares_as_percentages_and_slopes_to_two_decimals():
    at = open_app("efficient", RANDOM)
    errors, slopes = (json.loads(d.proto.columns) for d in at.dataframe)
    assert errors["pairs scored"]["type_config"]["format"] == "%.1f%%"
    assert at.dataframe[0].value["pairs weighted"].iloc[0] == 100.0  # full softmax: every pair
    assert slopes["time slope"]["type_config"]["format"] == "%.2f"


@given(
    data_frames(
        [
            column("a", dtype=float, elements=st.floats(-1e6, 1e6)),
            column("b", dtype=float, elements=st.floats(0, 1)),
            column("n", dtype=int, elements=st.integers(-100, 100)),
        ]
    ),
    st.integers(0, 8),
)
def test_formats_fix_every_float_columns_decimals(frame, digits):
    found = tables.formats(frame, {"a": digits}, percent=("b",))
    assert set(found) == {"a", "b"}  # the integers are left as they are
    for name, format_ in found.items():
        counts = {decimals(format_ % value) for value in frame[name]}
        assert counts <= {digits if name == "a" else tables.PERCENT_DIGITS}
    assert found["b"].endswith("%%")
