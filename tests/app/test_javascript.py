"""The chart component's pure modules, tested in Node on frames Python packed (tests/js/).

``node --test`` runs ``tests/js/*.test.mjs`` with the fixtures written here: the scale's
frames of a masked head packed as float32 and as 16-bit codes, the layer's heads at one
stop, and a reference figure with its live binding. No app server and no browser.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from apptest_support import unpack

from app.live import protocol
from app.views import attention_maps
from engine.attention import ScaleSweep, attention_over_scales, causal_mask

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None and not os.environ.get("CI"), reason="Node.js is not installed"
)


def sweep(n=7, d=4, stops=6, seed=3):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(n, d)).astype(np.float32) for _ in range(3))
    return attention_over_scales(q, k, v, np.geomspace(0.1, 10, stops), causal_mask(n))


_SWEPT = ("scaled", "weights", "output")


def rows(array):
    """An array as nested lists, NaN as None (JSON has no NaN)."""
    return np.where(np.isnan(array), None, array).tolist()


def _float32(array):
    """An array as float32 frames hold it: −∞ (a masked scaled score) as NaN."""
    return np.where(np.isfinite(array), array, np.nan).astype(np.float32)


def write_fixtures(folder, monkeypatch):
    swept = sweep()
    titles = [protocol.scale_title(s) for s in swept.scales]
    _, f4 = protocol.sweep_frames(protocol.SOURCE, swept, head=2)
    header = protocol.header(f4)
    (folder / "sweep_f4.bin").write_bytes(f4)
    values = swept.weights.size + swept.output.size  # what 16-bit frames keep
    with monkeypatch.context() as patched:  # too little room for float32: 16 bits
        patched.setattr(protocol, "MAX_BYTES", protocol._HEADER_ROOM + 3 * values)
        _, u2 = protocol.sweep_frames(protocol.SOURCE, swept, head=2)
    assert protocol.header(u2)["arrays"]["weights"]["dtype"] == "u2"
    for packed in (f4, u2):  # the masked cells, the same at every stop, sent once
        assert "fixed" in protocol.header(packed)["arrays"]["weights"]
    (folder / "sweep_u2.bin").write_bytes(u2)
    heads = ScaleSweep(
        np.full(4, swept.scales[1]),
        np.stack([swept.scores] * 4),
        *(
            np.repeat(getattr(swept, name)[1:2], 4, axis=0)
            for name in ("scaled", "weights", "output")
        ),
    )
    curves = np.zeros((4, 3, 5))
    _, held = protocol.head_frames(protocol.SOURCE, heads, swept.scales[1], 1, "layer", curves)
    (folder / "heads.bin").write_bytes(held)
    (folder / "bundle.bin").write_bytes(protocol.bundle([f4, None, held]))  # a None left out
    n = swept.weights.shape[1]
    custom = np.zeros((n, n, 2))
    figure = go.Figure(
        go.Heatmap(z=swept.scaled[0], customdata=custom, colorbar={"title": {"text": "s·q·k"}}),
        layout={"title": {"text": "Scaled × ref<br>one head"}},
    )
    (folder / "figure.json").write_text(figure.to_json())
    labels = [f"t{i}" for i in range(n)]
    masked = {"scores": swept.scores, "scaled": swept.scaled[0]}
    compact = attention_maps.weights_figure(swept.weights[0], labels, **masked, compact=True)
    (folder / "masked_weights.json").write_text(compact.to_json())
    lists = attention_maps.weights_figure(swept.weights[0], labels, **masked).data[0]
    expected = {
        "source": protocol.SOURCE,
        "head": 2,
        "titles": titles,
        "subtitle": "one head",
        "f4": {name: rows(_float32(getattr(swept, name))) for name in _SWEPT},
        "u2": {"weights": rows(unpack(u2)[1]["weights"])},
        "hover": {"customdata": lists.customdata, "template": lists.hovertemplate},
        "live": protocol.follow(
            protocol.SOURCE,
            header["id"],
            0,
            title="Scaled × {scale}",
            heatmap="scaled",
            limits="scaled",
            hover=[["weights", 1]],
        ),
    }
    (folder / "expected.json").write_text(json.dumps(expected))


def test_the_pure_modules_in_node(tmp_path, monkeypatch):
    write_fixtures(tmp_path, monkeypatch)
    result = subprocess.run(
        [NODE or "node", "--experimental-detect-module", "--test", "tests/js/"],
        cwd=ROOT,
        env={**os.environ, "AE_JS_FIXTURES": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout
