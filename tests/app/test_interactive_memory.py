"""What a "Download as an interactive page" button keeps: its settings, not the run's arrays.

Streamlit keeps a download's callable as long as its session lives, and a closed tab's
session two more minutes. A callable that held a view of a cached run (``run.attentions``
of MiniLM, ``attention.q[head]`` of a layer run) kept the whole array alive after the
cache budget had dropped it, outside the budget: each student's run stayed in memory, and
a class's server passed 1 GB (issue 55). The page it builds must still be the run's.
"""

import types

import numpy as np
import pytest

from app.data import layers, models
from app.state import controls, session
from app.views import line_view, scale_view
from app.widgets import interactive, model_box
from engine.attention import strong_links

TEXT = " ".join(
    ["The animal did not cross the street because it was too tired to walk any further."] * 3
)
#: What a button may keep beyond its settings and labels: no array of the run fits in it.
KEPT_MAX_BYTES = 16_384


def kept_bytes(value, seen=None):
    """Bytes kept alive by ``value``: each array's whole buffer (a view keeps its base)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        while isinstance(value.base, np.ndarray):
            value = value.base
        return value.nbytes if id(value.base) not in seen else 0
    if isinstance(value, types.FunctionType):
        cells = value.__closure__ or ()
        return sum(kept_bytes(cell.cell_contents, seen) for cell in cells)
    if isinstance(value, dict):
        return sum(kept_bytes(v, seen) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return sum(kept_bytes(v, seen) for v in value)
    if hasattr(value, "__dict__") and not isinstance(value, type | types.ModuleType):
        return kept_bytes(vars(value), seen)
    if hasattr(value, "__slots__"):
        return sum(kept_bytes(getattr(value, s, None), seen) for s in value.__slots__)
    return 0


@pytest.fixture
def buttons(monkeypatch):
    """The ``build`` callables the page's buttons were given, by key."""
    built = {}
    monkeypatch.setattr(session, "presenting", lambda: False)
    monkeypatch.setattr(session, "file_stem", lambda: "test")
    monkeypatch.setattr(
        interactive.page, "download", lambda _c, key, build, *_a, **_k: built.update({key: build})
    )
    return built


def test_the_line_page_button_keeps_the_text_not_minilms_run(buttons):
    run = models.run(None, TEXT)
    layer, heads, threshold = 2, [0, 3, 5], 0.1
    interactive.line_page(None, TEXT, layer, heads, threshold, None, hide_special=True)
    build = buttons["pretrained_lines_page"]
    assert run.attentions.nbytes > 20 * KEPT_MAX_BYTES  # the run would be seen if kept
    assert kept_bytes(build) < KEPT_MAX_BYTES
    # The page is still the run's: the strong links of the heads chosen, [CLS]/[SEP] cut.
    links = strong_links(run.attentions[layer][:, 1:-1, 1:-1][heads], threshold)
    title = f"{model_box.file_name(None)}: layer 2, heads H0, H3, H5"
    expected = line_view.figure(links, list(run.labels[1:-1]), heads, threshold, title)
    assert build().to_json() == expected.to_json()


def test_the_scale_page_button_keeps_the_settings_not_the_layer_run(buttons):
    settings = controls.Settings(text=TEXT, d_model=768, heads=16, scale=0.25)
    run = layers.layer(settings.replace(scale=None))
    labels = layers.tokens(settings)[0].labels
    head = 5
    interactive.scale_page(None, settings, head, labels)
    build = buttons["attention_page"]
    assert run.attention.q.nbytes > 4 * KEPT_MAX_BYTES
    assert kept_bytes(build) < KEPT_MAX_BYTES
    a = run.attention
    title = "Random, head 5"
    start = controls.nearest(controls.scale_options(a.q.shape[-1], 1), settings.scale)
    expected = scale_view.head_figure(
        a.q[head], a.k[head], a.v[head], list(labels), run.mask, title, start=start
    )[0]
    assert build().to_json() == expected.to_json()
