"""The atlas of head roles outside Streamlit: its view module and ``ae.head_roles``.

The figure and table are checked against :func:`engine.roles.head_roles` on a tiny
checkpoint; the sentence against hand-made scores whose strongest heads are known.
"""

import numpy as np
import pandas as pd
import pytest
import tiny_models

import aeviews as ae
from aeviews.models import model_key
from app.views import head_roles
from engine import checkpoint, roles

TINY = tiny_models.TINY


@pytest.fixture(scope="module")
def gpt2_roles():
    return roles.head_roles(checkpoint.load(TINY / "gpt2"), 10, seeds=(0, 1))


def test_the_figure_has_a_grid_per_role_holding_its_scores(gpt2_roles):
    fig = head_roles.figure(gpt2_roles, "title")
    assert [trace.type for trace in fig.data] == ["heatmap"] * len(gpt2_roles.roles)
    for k, trace in enumerate(fig.data):
        np.testing.assert_allclose(trace.z, gpt2_roles.scores[k], atol=1e-7)
        assert list(trace.y) == ["0", "1"]  # layers, numbered as the axis title says
        assert list(trace.x) == ["0", "1", "2", "3"]  # heads
    titles = [a.text for a in fig.layout.annotations]
    assert titles == [head_roles.TITLES[role] for role in gpt2_roles.roles]
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)


def test_the_table_is_one_row_per_head_with_each_role_and_spread(gpt2_roles):
    table = head_roles.table(gpt2_roles)
    assert list(table.columns[:2]) == ["layer", "head"]
    assert len(table) == 8
    for k, role in enumerate(gpt2_roles.roles):
        row = table[(table.layer == 1) & (table["head"] == 3)]
        assert float(row[role].iloc[0]) == gpt2_roles.scores[k, 1, 3]
        assert float(row[f"{role}_spread"].iloc[0]) == gpt2_roles.spread[k, 1, 3]


def test_the_sentence_says_where_the_strongest_heads_are():
    scores = np.zeros((6, 4))
    scores[4, 1], scores[5, 0], scores[3, 2], scores[4, 3], scores[5, 2] = 0.9, 0.8, 0.7, 0.6, 0.5
    spread = np.full_like(scores, 0.01)
    said = head_roles.sentence("induction", scores, spread)
    assert said.startswith("The 5 strongest induction heads are all in layers ≥ 3 (of 0–5): ")
    assert "L4 H1 0.90 ± 0.01, L5 H0 0.80 ± 0.01" in said
    assert "median head scores 0.00" in said
    scores[0, 0] = 0.95  # one early head among them
    assert "spread over layers 0 to 5 (of 0–5)" in head_roles.sentence("sink", scores, spread)


def test_the_diagonal_runs_over_the_cells_a_perfect_head_would_weigh():
    start, repeat, n = 1, 5, 12
    x0, y0, x1, y1 = head_roles.diagonal("induction", start, repeat, n)
    assert (x0, y0, x1, y1) == (2, 6, 6, 10)  # query i → key i − R + 1
    assert head_roles.diagonal("duplicate_token", start, repeat, n) == (1, 6, 5, 10)
    assert head_roles.diagonal("previous_token", start, repeat, n) == (0, 1, 10, 11)
    assert head_roles.diagonal("local", start, repeat, n) is None
    fig = head_roles.pattern_figure(np.eye(n), [str(i) for i in range(n)], "t", (x0, y0, x1, y1))
    (shape,) = fig.layout.shapes
    assert (shape.x0, shape.y0, shape.x1, shape.y1) == (2, 6, 6, 10)


def test_ae_head_roles_is_the_engines_table_and_its_view_the_grid(tmp_path):
    folder = TINY / "gpt2"
    table = ae.head_roles(model=folder, repeat=10, seeds=(0, 1))
    expected = roles.head_roles(checkpoint.load(folder), 10, seeds=(0, 1))
    assert list(table.columns) == [
        "layer",
        "head",
        *roles.DECODER_ROLES,
        *(f"{r}_spread" for r in roles.DECODER_ROLES),
    ]
    np.testing.assert_allclose(table["induction"].to_numpy(), expected.scores[1].ravel())
    fig = ae.head_roles_view(model=folder, repeat=10, seeds=(0, 1), role="induction")
    assert isinstance(fig, ae.Figure)
    np.testing.assert_allclose(fig.data[0].z, expected.scores[1], atol=1e-7)
    path = ae.save_csv(table, tmp_path / "roles.csv")
    read = pd.read_csv(path, index_col=0)
    np.testing.assert_allclose(read["induction"], table["induction"])
    with pytest.raises(ValueError, match="role must be one of"):
        ae.head_roles_view(model=TINY / "bert", repeat=10, role="induction")


def test_a_packaged_models_name_stays_a_name():
    assert model_key("smollm2") == "smollm2"
    assert model_key("minilm") is None
    assert model_key(TINY / "gpt2") == str(TINY / "gpt2")


def test_thirty_layers_are_labelled_one_in_four_not_overlapping():
    """SmolLM2's 30 layers on a grid's y axis: numbered, so thinned as every numbered axis."""
    n_layers, n_heads = 30, 9
    result = roles.HeadRoles(
        roles=("induction",),
        scores=np.zeros((1, n_layers, n_heads)),
        spread=np.zeros((1, n_layers, n_heads)),
        repeat=50,
        window=3,
        seeds=(0,),
        start=0,
        ids=np.zeros(100, dtype=int),
        tokens=["x"] * 100,
        attentions=None,
    )
    fig = head_roles.figure(result, "grid")
    assert len(fig.layout.yaxis.tickvals) <= 8
    assert "one label in" in fig.layout.yaxis.title.text
