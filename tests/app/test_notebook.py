"""The example notebook, run by a real kernel: every figure it shows holds the engine's numbers.

examples/notebook.ipynb is executed as Jupyter runs it (nbclient, an ipykernel kernel of
this interpreter); each output's Plotly figure (the plotly mime type, what JupyterLab and
VS Code draw) is decoded and compared with the engine's arrays, computed here from the
engine itself, not through aeviews.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from app.state import controls
from app.views import model_view
from engine import bert, checkpoint, one_layer
from engine.arithmetic import query_stages
from engine.attention import attention_over_scales, strong_links

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebook.ipynb"
PLOTLY = "application/vnd.plotly.v1+json"
TEXT = "The animal didn't cross the street because it was too tired."
LAYER, HEAD = 3, 1
KERNEL = "aeviews-test"


def decoded(value):
    """A figure's array as plotly.py writes it (base64 typed array, or plain lists)."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return array.reshape([int(s) for s in str(shape).split(",")]) if shape else array
    return np.asarray(value)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run top to bottom in a fresh kernel: {tag: outputs}, and its folder.

    The kernel is this interpreter's, named by a kernel spec of the test's own (a
    ``python3`` spec installed for the user elsewhere could name another Python).
    """
    folder = tmp_path_factory.mktemp("notebook")
    specs = tmp_path_factory.mktemp("jupyter")
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "this test's Python",
        "language": "python",
    }
    (specs / "kernels" / KERNEL).mkdir(parents=True)
    (specs / "kernels" / KERNEL / "kernel.json").write_text(json.dumps(spec))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name=KERNEL, resources={"metadata": {"path": str(folder)}}
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(specs))
        client.execute()
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    return {cell.metadata["tags"][0]: cell.outputs for cell in cells}, folder


@pytest.fixture(scope="module")
def reference():
    """The engine's own run of the notebook's text."""
    model = checkpoint.load_minilm()
    run = bert.run(model, TEXT)
    return model, run, one_layer.layer_run(model, run, LAYER)


def figure_of(outputs):
    (figure,) = [output["data"][PLOTLY] for output in outputs if PLOTLY in output.get("data", {})]
    return figure


def test_every_cell_ran_and_each_view_is_a_plotly_figure(executed):
    outputs, _ = executed
    for tag, cell_outputs in outputs.items():
        assert not [o for o in cell_outputs if o.output_type == "error"], tag
    views = ("head_view", "line_view", "model_view", "neuron_view", "scale_view")
    for tag in (*views, "bertviz_line_view"):
        assert figure_of(outputs[tag])["data"], tag


def test_nothing_the_outputs_show_comes_from_the_network(executed):
    outputs, _ = executed
    for tag, cell_outputs in outputs.items():
        for output in cell_outputs:
            html = output.get("data", {}).get("text/html", "")
            assert not re.search(r"<script[^>]+src=|<link[^>]+href=", html), tag


def test_the_head_view_is_the_engines_head_with_its_scores(executed, reference):
    _, run, layer = reference
    figure = figure_of(executed[0]["head_view"])
    trace = figure["data"][0]
    np.testing.assert_array_equal(
        decoded(trace["z"]), run.attentions[LAYER, HEAD].astype(np.float32)
    )
    assert trace["y"][0] == "[CLS]"
    assert len(trace["x"]) == len(run.tokens)
    scores = decoded(trace["customdata"])  # [n, n, 2]: raw and scaled score
    raw = layer.attention.heads.scores[HEAD]
    np.testing.assert_array_equal(scores[..., 0], raw.astype(np.float32))
    np.testing.assert_array_equal(
        scores[..., 1], (raw * layer.attention.heads.scale).astype(np.float32)
    )


def test_the_line_views_lines_are_the_engines_strong_links(executed, reference):
    _, run, _ = reference
    for tag in ("line_view", "bertviz_line_view"):  # from our run, and from the arrays alone
        figure = figure_of(executed[0][tag])
        links = strong_links(run.attentions[LAYER], 0.05)
        segments = "".join(shape["path"] for shape in figure["layout"]["shapes"])
        drawn = sorted(map(tuple, re.findall(r"M0,(\d+)L1,(\d+)", segments)))
        expected = sorted((str(q), str(k)) for q, k in zip(links.query, links.key, strict=True))
        assert drawn == expected, tag


def test_the_model_view_is_every_head_of_the_run(executed, reference):
    _, run, _ = reference
    figure = figure_of(executed[0]["model_view"])
    expected = model_view.figure(run.attentions).data[0].z
    np.testing.assert_array_equal(decoded(figure["data"][0]["z"]), expected)


def test_the_neuron_view_is_the_first_it_against_every_key(executed, reference):
    _, run, _ = reference
    figure = figure_of(executed[0]["neuron_view"])
    query = run.labels.index("it")
    stages = query_stages(run.queries[LAYER, HEAD, query], run.keys[LAYER, HEAD])
    weights = next(trace for trace in figure["data"] if trace.get("name") == "weight")
    np.testing.assert_array_equal(decoded(weights["x"]), stages.weights.astype(np.float32))


def test_the_scale_views_frames_are_the_engines_sweep(executed, reference):
    _, run, layer = reference
    figure = figure_of(executed[0]["scale_view"])
    d_k = layer.attention.q.shape[-1]
    scales = np.array(controls.scale_options(d_k, 1))
    attention = layer.attention
    sweep = attention_over_scales(attention.q[HEAD], attention.k[HEAD], attention.v[HEAD], scales)
    assert len(figure["frames"]) == len(scales)  # 16 tokens: every stop kept
    steps = figure["layout"]["sliders"][0]["steps"]
    assert [step["args"][0] for step in steps] == [[frame["name"]] for frame in figure["frames"]]
    for stop in (0, 40, len(scales) - 1):
        frame = figure["frames"][stop]["data"][0]
        np.testing.assert_array_equal(decoded(frame["z"]), sweep.weights[stop].astype(np.float32))
        np.testing.assert_array_equal(
            decoded(frame["customdata"])[..., 1], sweep.scaled[stop].astype(np.float32)
        )
    start = figure["layout"]["sliders"][0]["active"]
    assert scales[start] == controls.default_scale(d_k, 1)
    np.testing.assert_allclose(
        decoded(figure["data"][0]["z"]), run.attentions[LAYER, HEAD], atol=1e-6
    )


def test_the_saved_files_are_the_apps_csv_and_one_page(executed, reference):
    _, run, _ = reference
    _, folder = executed
    lines = (folder / "weights.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(run.tokens)
    first = np.array(lines[1].split(",")[-len(run.tokens) :], dtype=run.attentions.dtype)
    np.testing.assert_array_equal(first, run.attentions[LAYER, HEAD, 0])  # every digit written
    page = (folder / "scale_view.html").read_text(encoding="utf-8")
    assert "<script src" not in page
    assert "Plotly.newPlot" in page
