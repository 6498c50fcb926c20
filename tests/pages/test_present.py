"""Presentation mode through AppTest: every figure fits a projector's screen, in large type,
no sentence points at a hidden control, and the presenter bar sets the layer, head and query."""

import json
import re
from itertools import pairwise

import pytest
from apptest_support import chart_z, charts, decode, open_app

from app import registry
from app.lecture import tour
from app.state import controls
from app.views import axes, chart
from engine.resources import smollm2_file

SCREENS = [(1280, 720), (1920, 1080)]
TROPHY = (
    "The trophy doesn't fit into the brown suitcase because it is too big.",
    "The trophy doesn't fit into the brown suitcase because it is too small.",
)
VIEWS = [
    ("attention", {}),
    ("multi_head", {}),
    ("pretrained", {"text": TROPHY[0], "text_b": TROPHY[1]}),
    *(("tour", {"step": str(step)}) for step in range(1, len(tour.STEPS) + 1)),
]
needs_minilm = pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
needs_smollm2 = pytest.mark.skipif(smollm2_file() is None, reason="SmolLM2 is not installed")


def small_type(spec, path="figure"):
    """Every font size below the projector's minimum in a figure spec, with where it is."""
    found = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key.endswith("font") and isinstance(value, dict):
                size = value.get("size")
                sizes = size if isinstance(size, list) else [size]
                found += [f"{path}.{key}" for s in sizes if s is not None and s < 16]
            found += small_type(value, f"{path}.{key}")
    elif isinstance(spec, list):
        for i, value in enumerate(spec):
            found += small_type(value, f"{path}[{i}]")
    return found


@needs_minilm
@pytest.mark.parametrize("screen", SCREENS, ids=["1280x720", "1920x1080"])
@pytest.mark.parametrize(
    ("page", "query"), VIEWS, ids=[f"{p}{q.get('step', '')}" for p, q in VIEWS]
)
def test_every_figure_fits_the_screen_below_the_bar_in_large_type(page, query, screen):
    query = dict(query)
    step = {"step": query.pop("step")} if "step" in query else None  # the tour's, kept there
    at = open_app(page, {"present": "1", **query}, page_query=step, timeout=120, _viewport=screen)
    assert not at.exception
    if step:
        assert at.main.title[0].value == tour.STEPS[int(step["step"]) - 1].title
    specs = charts(at)
    assert specs
    for key, spec in specs.items():
        layout = spec["layout"]
        assert layout["height"] <= screen[1] - chart.PRESENTER_BAR, key
        assert layout["font"]["size"] >= axes.PRESENT_MIN_FONT, key
        assert small_type(spec) == [], key
        assert "<sup>" not in (layout.get("title") or {}).get("text", ""), key
        for name, axis in layout.items():
            if re.fullmatch(r"[xy]axis\d*", name) and axis.get("categoryarray"):
                assert axis["tickfont"]["size"] >= axes.PRESENT_MIN_FONT, (key, name)


@pytest.mark.parametrize("screen", SCREENS, ids=["1280x720", "1920x1080"])
def test_the_books_few_tokens_are_labelled_at_the_slides_type_size(screen):
    """/book's x0, x1, x2 stayed at the projector's minimum (16 px) beside 20 px numbers
    and titles: three labels have room for the slide's own size, as its other labels."""
    at = open_app("book", {"present": "1"}, _viewport=screen)
    assert not at.exception
    specs = charts(at)
    assert specs
    for key, spec in specs.items():
        layout = spec["layout"]
        assert layout["font"]["size"] == chart.PRESENT_FONT, key
        token_axes = [a for n, a in layout.items() if re.fullmatch(r"[xy]axis\d*", n)]
        assert len(token_axes) == 2, key
        for axis in token_axes:
            assert len(axis["tickvals"]) == len(axis["categoryarray"]), key  # none thinned
            assert axis["tickfont"]["size"] == chart.PRESENT_FONT, key


@needs_minilm
@pytest.mark.parametrize("page", ["home", "positional_encoding", "vision", "summarize"])
def test_a_title_with_a_second_line_stands_above_the_plot_in_large_type(page):
    """Both lines of a title with a note (/home's "colours clipped at …") at 20 px from the
    top of the figure, the plot under them: before, at the desktop's 75 px of room, the
    note ran into the plot's first row and its label (/home, 1280 × 720)."""
    at = open_app(page, {"present": "1"}, timeout=120, _viewport=(1280, 720))
    assert not at.exception
    noted = {
        key: spec["layout"]
        for key, spec in charts(at).items()
        if "<br>" in ((spec["layout"].get("title") or {}).get("text") or "")
    }
    assert noted, page
    for key, layout in noted.items():
        lines = layout["title"]["text"].count("<br>") + 1
        room = layout["title"].get("pad", {}).get("t", 0) + lines * 1.3 * layout["font"]["size"]
        assert (layout["title"]["yanchor"], layout["title"]["yref"]) == ("top", "container")
        assert layout["margin"]["t"] >= room + 20, key  # a gap between the note and the plot


# What a sentence says when it sends the reader to a control.
POINTERS = re.compile(
    r"\b[Ss]idebar\b|under Weights|\bChoose\b|\bType (?:a|some|or)\b|\bSet the\b|pick it"
)


@pytest.mark.parametrize("page", [p.script for p in registry.PAGES])
def test_no_sentence_points_at_a_control_the_projector_hides(page):
    at = open_app(page, {"present": "1"}, timeout=120)
    assert not at.exception
    tour_words = {step.text for step in tour.STEPS}  # rewritten under issue #28
    texts = [
        element.value
        for kind in ("caption", "markdown", "info", "warning", "error", "success")
        for element in getattr(at.main, kind)
        if element.value not in tour_words
    ]
    assert [text for text in texts if POINTERS.search(text)] == []


def test_off_the_projector_the_pointers_stay():
    captions = " ".join(c.value for c in open_app("multi_head", timeout=120).main.caption)
    assert "under Weights" in captions or "in the sidebar" in captions


@needs_minilm
def test_the_presenter_bar_sets_layer_head_and_query_and_the_link_follows():
    at = open_app("attention", {"present": "1"}, timeout=120)
    assert not [s for s in at.sidebar.select_slider if s.key in ("layer", "head")]
    assert at.selectbox(key="present_layer").value == controls.DEFAULT_LAYER  # the bar's
    at.selectbox(key="present_head").set_value(7).run()
    at.selectbox(key="present_layer").set_value(4).run()
    assert (at.query_params["head"], at.query_params["layer"]) == ("7", "4")
    assert "MiniLM's layer 4, head 7" in " ".join(c.value for c in at.main.caption)
    picker = at.selectbox(key="attention_query")
    picker.set_value(2).run()
    assert at.query_params["query"].startswith("2:")
    assert "restaurant" in charts(at)["att_bar"]["layout"]["title"]["text"]
    assert at.query_params["present"] == "1"


#: A tick label's box is 1.3 to 1.4 fonts tall in Chromium (:data:`app.views.axes.LABEL_PITCH`).
LINE = 1.3


def label_size(label, font):
    """A tick label's (width, height) in pixels at ``font``: its widest line, its lines."""
    lines = label.split("<br>")
    return axes.text_width(lines, font), LINE * font * len(lines)


def outline_of(at, key):
    """The rectangle the browser draws over chart ``key`` (the head shown), in its axes' units."""
    for element in at.get("bidi_component"):
        if (
            element.proto.id.endswith(f"-{key}_shapes")
            and element.proto.WhichOneof("data") == "json"
        ):
            return json.loads(element.proto.json)["shapes"][0]
    raise LookupError(f"no shapes drawn over {key}")


@pytest.mark.parametrize("screen", SCREENS, ids=["1280x720", "1920x1080"])
@pytest.mark.parametrize(
    ("model", "heads"),
    [
        pytest.param({"model": "smollm2"}, (30, 9), marks=needs_smollm2, id="smollm2"),
        pytest.param({}, (6, 12), marks=needs_minilm, id="minilm"),
    ],
)
def test_the_model_view_on_a_projector_is_a_screen_wide_grid_whose_labels_fit(model, heads, screen):
    """SmolLM2's 30 layers × 9 heads were a narrow column under labels that ran together.

    Measured on the figure as drawn: its width the page's, its height and margins its
    own, x and y on one scale (``scaleanchor``); its plot no taller than the grid, so no
    blank under it. Labelled ticks are far enough apart for
    their labels at the figure's font, the margins hold them, every thumbnail keeps its
    tick, the grid's long side runs along the screen's, and the outline of the head shown
    sits on that head's thumbnail.
    """
    at = open_app("pretrained", {"present": "1", **model}, timeout=240, _viewport=screen)
    assert not at.exception
    key = "pretrained_model_view"
    layout, z = charts(at)[key]["layout"], chart_z(at, key)
    font, margin = layout["font"]["size"], layout["margin"]
    width = screen[0] - chart.PRESENT_SIDES
    pixel = min(
        (width - margin["l"] - margin["r"]) / z.shape[1],
        (layout["height"] - margin["t"] - margin["b"]) / z.shape[0],
    )
    assert z.shape[1] >= z.shape[0]  # a landscape screen, a landscape grid
    # As tall as the grid it draws: SmolLM2's, at 1280 × 720, was 150 px short of its figure.
    assert layout["height"] - margin["t"] - margin["b"] <= z.shape[0] * pixel + 1
    top, side = layout["xaxis"], layout["yaxis"]
    assert top.get("tickangle", 0) == 0  # level (plotly.js keeps them so while they fit)
    ticks = {name: decode(axis["tickvals"]) for name, axis in (("x", top), ("y", side))}
    assert len(ticks["x"]) * len(ticks["y"]) == heads[0] * heads[1]
    labelled = {
        name: [
            (value * pixel, text)
            for value, text in zip(ticks[name], axis["ticktext"], strict=True)
            if text
        ]
        for name, axis in (("x", top), ("y", side))
    }
    assert top["ticktext"][0]  # the first layer and head are named: count on from them
    assert side["ticktext"][0]
    for (a, first), (b, second) in pairwise(labelled["x"]):
        room = (label_size(first, font)[0] + label_size(second, font)[0]) / 2
        assert b - a >= room, (first, second, b - a, room)
    for (a, first), (b, second) in pairwise(labelled["y"]):
        assert b - a >= LINE * font, (first, second, b - a)
    assert margin["t"] >= max(label_size(text, font)[1] for _, text in labelled["x"])
    assert margin["l"] >= max(label_size(text, font)[0] for _, text in labelled["y"])
    across = labelled["x"][0][1].startswith("L")  # layers along the top
    box = outline_of(at, key)
    column = abs(ticks["x"] - (box["x0"] + box["x1"]) / 2).argmin()
    row = abs(ticks["y"] - (box["y0"] + box["y1"]) / 2).argmin()
    layer, head = at.session_state["pretrained_layer"], at.session_state["pretrained_head"]
    assert (column, row) == ((layer, head) if across else (head, layer))
