"""aeviews, the notebook API: any model's attention BertViz's way, the scale view, the page.

No model needed: the attention here is softmax of seeded random scores, shaped as
``transformers`` returns ``output_attentions`` (a tuple of one [1, heads, n, n] tensor per
layer), and handed over as tensors that are not NumPy arrays (a stand-in with PyTorch's
``.detach().cpu().numpy()``). The example notebook, run by a kernel on MiniLM, is
tests/app/test_notebook.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

import aeviews as ae
from aeviews import views
from app.views import axes, export, line_view, model_view, page, scale_view
from engine.attention import attention_over_scales, strong_links
from engine.resources import smollm2_file
from engine.scores import softmax

N_LAYERS, N_HEADS, N = 3, 4, 9
TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]


class Tensor:
    """What PyTorch's tensor offers NumPy, and no ``__array__``: a gradient must be detached."""

    def __init__(self, array, *, attached=True):
        self.array, self.attached = np.asarray(array), attached

    def detach(self):
        return Tensor(self.array, attached=False)

    def cpu(self):
        return self

    def numpy(self):
        if self.attached:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad.")
        return self.array


def random_attention(seed=0):  # [n_layers, n_heads, n, n], rows summing to 1
    rng = np.random.default_rng(seed)
    return softmax(rng.normal(scale=2.0, size=(N_LAYERS, N_HEADS, N, N))).astype(np.float32)


def output_attentions(weights):
    """As ``model(..., output_attentions=True).attentions``: a tuple of [1, heads, n, n]."""
    return tuple(Tensor(layer[None]) for layer in weights)


def test_as_layers_reads_transformers_output_attentions():
    weights = random_attention()
    layers = ae.as_layers(output_attentions(weights))
    assert layers.shape == (N_LAYERS, N_HEADS, N, N)
    np.testing.assert_array_equal(layers, weights)
    stacked = np.stack([weights, weights[::-1]], axis=1)  # [layers, batch 2, heads, n, n]
    np.testing.assert_array_equal(ae.as_layers(stacked, batch=1), weights[::-1])
    np.testing.assert_array_equal(ae.as_layers(list(weights)), weights)  # no batch axis


@pytest.mark.parametrize(
    ("attention", "message"),
    [
        ((np.zeros((1, 2, 3, 4)),), "got shape"),  # not square
        ((np.zeros((1, 2, 3, 3)), np.zeros((1, 2, 4, 4))), "differ in shape"),
        ((), "no layer"),
    ],
)
def test_as_layers_says_what_is_wrong(attention, message):
    with pytest.raises(ValueError, match=message):
        ae.as_layers(attention)


def test_the_head_view_from_arrays_draws_that_head():
    weights = random_attention()
    fig = ae.head_view(output_attentions(weights), TOKENS, layer=2, head=3)
    assert isinstance(fig, ae.Figure)
    np.testing.assert_array_equal(fig.data[0].z, weights[2, 3])
    assert list(fig.data[0].y) == axes.axis_labels(TOKENS)  # the app's labels, made unique
    assert fig.data[0].customdata is None  # no scores: only the weights were given
    assert fig.layout.title.text == "Layer 2, head 3"


def test_tokens_must_match_the_attention():
    with pytest.raises(ValueError, match="8 tokens for attention over 9"):
        ae.head_view(output_attentions(random_attention()), TOKENS[:-1])
    with pytest.raises(ValueError, match="give the 9 tokens"):
        ae.line_view(output_attentions(random_attention()))


def test_the_line_view_from_arrays_draws_every_strong_link():
    weights = random_attention(1)
    fig = ae.line_view(output_attentions(weights), TOKENS, layer=1, heads=[0, 2], threshold=0.1)
    links = strong_links(weights[1, [0, 2]], 0.1)
    drawn = "".join(shape.path for shape in fig.layout.shapes)
    assert sorted(re.findall(r"M0,(\d+)L1,(\d+)", drawn)) == sorted(
        (str(q), str(k)) for q, k in zip(links.query, links.key, strict=True)
    )
    assert [trace.name for trace in fig.data[2:]] == ["H0", "H2"]
    table = ae.table(output_attentions(weights), TOKENS, view="line", layer=1, heads=[0, 2],
                     threshold=0.1)  # fmt: skip
    assert table.equals(line_view.table(links, TOKENS, [0, 2]))


def test_the_model_view_from_arrays_is_the_apps_grid():
    weights = random_attention(2)
    fig = ae.model_view(output_attentions(weights))
    np.testing.assert_array_equal(fig.data[0].z, model_view.figure(weights).data[0].z)


@pytest.mark.parametrize("view", [ae.neuron_view, ae.scale_view])
def test_views_that_need_queries_and_keys_refuse_weights(view):
    with pytest.raises(TypeError, match="needs the queries and keys"):
        view(output_attentions(random_attention()))


def test_the_tables_csv_is_the_weights_at_full_precision(tmp_path):
    weights = random_attention(3).astype(np.float64)
    path = ae.save_csv(output_attentions(weights), tmp_path / "w.csv", TOKENS, layer=0, head=1)
    rows = path.read_text(encoding="utf-8").splitlines()
    repeated = len(set(TOKENS)) < len(TOKENS)  # then named with their positions, as the app
    named = [f"{i}: {t}" for i, t in enumerate(TOKENS)] if repeated else [*TOKENS]
    assert rows[0].split(",")[1:] == named
    np.testing.assert_array_equal(np.array(rows[3].split(",")[1:], dtype=float), weights[0, 1, 2])


def scale_sweep_figure(n, budget=scale_view.FRAME_BUDGET, mask=None):
    rng = np.random.default_rng(n)
    q, k, v = (rng.normal(size=(n, 8)) for _ in range(3))
    labels = [f"t{i}" for i in range(n)]
    return (q, k, v), scale_view.head_figure(q, k, v, labels, mask, budget=budget)


def test_the_scale_views_frames_are_the_sweep_at_every_stop():
    (q, k, v), (fig, sweep) = scale_sweep_figure(12)
    options = np.array(scale_view.controls.scale_options(8, 1))
    np.testing.assert_array_equal(sweep.scales, options)  # small: every stop of the slider
    expected = attention_over_scales(q, k, v, options)
    assert len(fig.frames) == len(options)
    for i, frame in enumerate(fig.frames):
        np.testing.assert_array_equal(frame.data[0].z, expected.weights[i].astype(np.float32))
        np.testing.assert_array_equal(
            np.asarray(frame.data[0].customdata)[..., 1], expected.scaled[i].astype(np.float32)
        )
        assert f"at scale {options[i]:.4g}" in frame.layout.title.text
    slider = fig.layout.sliders[0]
    assert options[slider.active] == scale_view.controls.default_scale(8, 1)
    np.testing.assert_array_equal(fig.data[0].z, fig.frames[slider.active].data[0].z)
    assert all(step.method == "animate" for step in slider.steps)


def test_a_long_scale_view_keeps_fewer_stops_and_says_so():
    n = 40
    budget = 20 * scale_view.cell_bytes(n, masked=False)  # room for 20 stops
    _, (fig, sweep) = scale_sweep_figure(n, budget)
    default = scale_view.controls.default_scale(8, 1)
    assert len(sweep.scales) <= 21  # every k-th, and the model's own scale
    assert default in sweep.scales
    assert 1.0 in sweep.scales
    assert f"{len(sweep.scales)} of the slider's 81 stops kept" in fig.layout.title.text
    _, (fig, _) = scale_sweep_figure(130, budget=1e12)
    assert fig.data[0].customdata is None
    assert "hover gives the weight alone past 128 tokens" in fig.layout.title.text


def test_a_masked_scale_view_says_masked_in_the_hover():
    mask = np.tril(np.ones((6, 6), dtype=bool))
    _, (fig, _) = scale_sweep_figure(6, mask=mask)
    assert fig.frames[3].data[0].customdata[0][5][2].startswith("masked")


def test_the_notebook_toolbar_saves_at_the_apps_print_size(monkeypatch):
    fig = ae.head_view(output_attentions(random_attention()), TOKENS)
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    config = fig._repr_mimebundle_()["application/vnd.plotly.v1+json"]["config"]
    printed = export.print_layout(fig)
    options = config["toImageButtonOptions"]
    assert (options["width"], options["height"]) == (printed["width"], printed["height"])
    assert options["scale"] == export.EXPORT_SCALE
    assert options["format"] == "png"
    ae.export_format("svg")
    try:
        config = fig._repr_mimebundle_()["application/vnd.plotly.v1+json"]["config"]
        assert config["toImageButtonOptions"]["format"] == "svg"
    finally:
        ae.export_format("png")
    with pytest.raises(ValueError, match="png or svg"):
        ae.export_format("jpeg")
    slide = ae.for_slide(fig)
    assert (slide.layout.width, slide.layout.height) == (printed["width"], printed["height"])
    assert slide.layout.font.size == export.PRINT_FONT
    assert fig.layout.width is None  # the figure itself keeps the notebook's width


def test_plotlys_notebook_html_loses_its_mathjax_from_a_cdn():
    fig = ae.head_view(output_attentions(random_attention()), TOKENS)
    html = pio.renderers["notebook"].to_mimebundle(fig.to_dict())["text/html"]
    assert "cdnjs" in html  # plotly.py's own HTML would load MathJax from a CDN
    assert not re.search(r"<script src=", views._MATHJAX_TAG.sub("", html))


def test_a_page_inlines_plotly_js_and_loads_nothing(tmp_path):
    _, (fig, _) = scale_sweep_figure(10)
    size = ae.save_html(fig, tmp_path / "scale.html", title="Scale </title>", caption="a <b>")
    text = (tmp_path / "scale.html").read_text(encoding="utf-8")
    assert size == len(text.encode())
    plotly_js = page.plotly_js(fig)
    assert f"<script>{plotly_js}</script>" in text  # inlined whole
    ours = text.replace(plotly_js, "")
    assert not re.search(r"<(script|img|iframe)[^>]+src=|<link[^>]+href=|@import|url\(|//", ours)
    assert "mathjax" not in ours.lower()
    assert "<title>Scale &lt;/title&gt;</title>" in text
    assert "a &lt;b&gt;" in text
    script = text.split("const FIGURE = ", 1)[1]
    assert "</script" not in script.split(";\nconst PRINT", 1)[0]


def test_a_page_inlines_the_partial_bundle_only_when_it_draws_every_trace():
    partial = page.plotly_js(go.Figure(go.Heatmap(z=[[1]])))
    full = page.plotly_js(go.Figure(go.Pie(values=[1, 2])))
    assert len(partial) < len(full)
    assert "partial" in partial[:200]


TINY = Path(__file__).resolve().parents[1] / "data" / "tiny_models"


def transformers_output(family, text="long"):
    """What ``transformers`` returned for a tiny checkpoint: output_attentions, tokens, text."""
    data = np.load(TINY / f"{family}.npz")
    attentions = tuple(layer[None] for layer in data[f"{text}/attentions"])  # [1, heads, n, n]
    return attentions, [str(t) for t in data[f"{text}/tokens"]], str(data[f"{text}/text"])


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_the_bertviz_path_draws_transformers_own_attention(family):
    attentions, tokens, _ = transformers_output(family)
    assert attentions[0].shape == (1, 4, len(tokens), len(tokens))
    fig = ae.head_view(attentions, tokens, layer=1, head=2)
    np.testing.assert_array_equal(fig.data[0].z, attentions[1][0, 2].astype(np.float32))
    lines = ae.line_view(attentions, tokens, layer=1)
    links = strong_links(attentions[1][0], line_view.DEFAULT_THRESHOLD)
    assert len(re.findall("M0,", "".join(s.path for s in lines.layout.shapes))) == len(links.key)
    grid = ae.model_view(attentions, tokens)
    expected = model_view.figure(np.stack([a[0] for a in attentions])).data[0].z
    np.testing.assert_array_equal(grid.data[0].z, expected)


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_a_checkpoint_folders_views_hold_our_engines_run(family):
    attentions, tokens, text = transformers_output(family)
    att = ae.attention(text, model=TINY / family, layer=1, head=2)
    assert att.tokens == tokens
    assert not att.attentions.flags.writeable  # cached for the next call: read-only
    assert not att.weights.flags.writeable
    np.testing.assert_allclose(att.weights, attentions[1][0, 2], atol=1e-5)  # parity
    fig = ae.head_view(att)
    np.testing.assert_array_equal(fig.data[0].z, att.weights.astype(np.float32))
    from_text = ae.head_view(text, model=TINY / family, layer=1, head=2)  # a text, run here
    np.testing.assert_array_equal(from_text.data[0].z, fig.data[0].z)
    np.testing.assert_array_equal(from_text.data[0].customdata, fig.data[0].customdata)
    scale = ae.scale_view(att)
    causal = family == "gpt2"
    assert (att.mask is not None) == causal
    hover = scale.frames[0].data[0].customdata
    assert isinstance(hover, tuple | list) == causal  # masked cells make text hovers
    every_stop = ae.table(att, view="scale")  # each stop's every cell, as its CSV
    n = len(tokens)
    assert len(every_stop) == len(scale.frames) * n * n
    stop = every_stop[every_stop["scale"] == every_stop["scale"].iloc[-1]]
    np.testing.assert_array_equal(
        stop["weight"].to_numpy().reshape(n, n).astype(np.float32), scale.frames[-1].data[0].z
    )
    neuron = ae.neuron_view(att, token=3)
    weights = next(trace for trace in neuron.data if trace.name == "weight")
    assert len(weights.x) == (4 if causal else len(tokens))  # a causal token sees back only


def test_a_layer_the_model_lacks_is_refused():
    _, _, text = transformers_output("bert")
    with pytest.raises(ValueError, match="not in this model's 2 layers of 4 heads"):
        ae.attention(text, model=TINY / "bert")  # the default, layer 3


def test_figures_make_room_for_their_labels_as_the_apps_component_does():
    # The chart component themes every figure (theme.js: automargin, no template); plotly.js
    # alone draws a figure's margins as given, and 10 px cut the token labels off.
    attentions, tokens, text = transformers_output("bert")
    att = ae.attention(text, model=TINY / "bert", layer=1, head=2)
    for fig in (ae.head_view(att), ae.neuron_view(att), ae.scale_view(att)):
        axes_of = [*fig.select_xaxes(), *fig.select_yaxes()]
        assert axes_of
        assert all(axis.automargin for axis in axes_of)
        assert fig.layout.template.to_plotly_json() == {}
    spec = figure_json(page.html(ae.head_view(attentions, tokens)))
    assert spec["layout"]["xaxis"]["automargin"] is True
    assert "template" not in spec["layout"]


def test_the_scale_slider_sits_below_the_key_labels():
    _, (fig, _) = scale_sweep_figure(12)
    longest = max(len(label) for label in fig.layout.xaxis.tickvals)
    slider = fig.layout.sliders[0]
    assert slider.yanchor == "top"
    assert slider.pad.t >= axes.CHAR_WIDTH * fig.layout.xaxis.tickfont.size * longest
    assert fig.layout.margin.b >= slider.pad.t + scale_view.SLIDER_HEIGHT


def figure_json(html):
    return json.loads(html.split("const FIGURE = ", 1)[1].split(";\nconst PRINT = ", 1)[0])


@pytest.mark.skipif(smollm2_file() is None, reason="SmolLM2 is not installed")
def test_a_notebook_names_the_packaged_decoder_and_opens_on_its_default_head():
    from engine import bert, checkpoint

    text = "The restaurant refused to serve me because it was closed."
    att = ae.attention(text, model="smollm2")
    assert (att.layer, att.head) == (22, 0)
    run = bert.run(checkpoint.load("smollm2"), text)
    np.testing.assert_array_equal(att.weights, run.attentions[22, 0])
    assert np.allclose(np.triu(att.weights, 1), 0)  # its own causal mask
