"""The live head on /attention, through AppTest: what the browser holds to show a head at once.

Every head of the layer at the current stop goes to the browser, and the scale's frames of
the head shown once the slider asks for them; the charts are drawn at a reference head, so
a head switch resends none of them. The numbers must be the engine's own.
"""

import json

import numpy as np
import pytest
from apptest_support import (
    LIVE_CHARTS,
    chart_payloads,
    chart_z,
    charts,
    control,
    decode,
    move,
    open_app,
    scale_frames,
    scale_slider,
    section_frames,
    unbundle,
    unpack,
)

import engine
from app.data import layers
from app.live import heads as live_heads
from app.state import controls
from app.views import heatmap
from engine import bert, checkpoint, one_layer
from engine.resources import minilm_dir

pytestmark = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


@pytest.fixture(scope="module")
def model_run():
    """MiniLM and its forward pass over the default passage."""
    model = checkpoint.load_minilm()
    return model, bert.run(model, controls.DEFAULT_TEXT)


def engine_heads(model_run, layer, scale, causal=False):
    """Every head of ``layer`` at ``scale``, as the engine computes it."""
    model, run = model_run
    return one_layer.layer_run(model, run, layer, scale, causal).attention.heads


def element(at, key):
    """The chart component's element with ``key`` in the last run."""
    for found in at.get("bidi_component"):
        if found.proto.id.endswith(f"-{key}"):
            return found
    raise LookupError(key)


def head_frames(at):
    """Every head at the current stop, as the last run sent them: ``(header, arrays)``."""
    return section_frames(at)["head"]


@pytest.mark.parametrize("scale", [None, 1.0])
def test_the_held_heads_are_the_engines_at_the_stop_shown(model_run, scale):
    at = open_app("attention", {} if scale is None else {"scale": str(scale)})
    header, held = head_frames(at)
    options = controls.scale_options(384, 12)
    at_scale = at.session_state["scale"]
    assert header["axis"] == "head"
    assert header["stop"] == options.index(at_scale)
    assert header["id"] == scale_frames(at)[0]["id"]  # the charts follow both
    # the same bits as the scale's frames at the stop: the browser may draw from either
    scale_header, swept = scale_frames(at)
    shown = scale_header["head"]
    for name in ("weights", "scaled", "output", "saturation", "saturation_mean"):
        np.testing.assert_array_equal(held[name][shown], swept[name][header["stop"]], name)
    np.testing.assert_array_equal(held["scores"][shown], swept["scores"][0])
    heads = engine_heads(model_run, controls.DEFAULT_LAYER, scale)
    assert held["weights"].shape == (12, *heads.weights.shape[1:])
    for head in range(12):
        np.testing.assert_allclose(held["weights"][head], heads.weights[head], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(held["scaled"][head], heads.masked[head], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(held["scores"][head], heads.scores[head], rtol=1e-6, atol=1e-5)
        output = heads.output[head][:, : heatmap.FEATURE_LIMIT]
        np.testing.assert_allclose(held["output"][head], output, rtol=1e-6, atol=1e-6)


def test_a_head_switch_resends_no_chart_and_sends_the_heads_frames_in_its_run(model_run):
    at = open_app("attention")
    assert scale_frames(at)[0]["head"] == controls.DEFAULT_HEAD  # in the first run
    before = chart_payloads(at)
    move(at, "head", 4)
    assert not at.exception
    after = chart_payloads(at)
    for key in LIVE_CHARTS:
        assert after[key] == before[key], key
    header, frames = scale_frames(at)  # the new head's, in the switch's own run
    assert header["head"] == 4
    heads = engine_heads(model_run, controls.DEFAULT_LAYER, None)
    np.testing.assert_allclose(chart_z(at, "att_weights"), heads.weights[4], atol=1e-6)
    np.testing.assert_allclose(frames["scores"][0], heads.scores[4], rtol=1e-6, atol=1e-5)
    assert at.query_params["head"] == "4"


@pytest.mark.parametrize("control", ["head", "layer", "mask", "text"])
def test_every_run_sends_all_the_sections_frames_the_sweep_last(control):
    """One delivery: in every run, the layer's heads at the stop in one element before the
    charts (the raw scores above them included: they are drawn from it); after the charts,
    the head in every layer and unmasked and masked there in one element (only a switch
    needs them: the first screen does not wait for them), then every stop's frames of the
    head shown in one element."""
    at = open_app("attention")
    if control == "head":
        move(at, "head", 5)
        shown = 5
    elif control == "layer":
        move(at, "layer", 1)
        shown = controls.DEFAULT_HEAD
    elif control == "mask":
        move(at, "causal", True)
        shown = controls.DEFAULT_HEAD
    else:
        at.sidebar.text_area(key="text").set_value("The bill came later.").run()
        shown = controls.DEFAULT_HEAD
    assert not at.exception
    sent = section_frames(at)
    assert sorted(sent) == ["head", "layer", "mask", "stop"]
    assert sent["stop"][0]["head"] == sent["layer"][0]["head"] == sent["mask"][0]["head"] == shown
    assert sent["stop"][0]["id"] == sent["head"][0]["id"]  # the charts follow both
    order = [e.proto.id.rsplit("-", 1)[-1] for e in at.get("bidi_component")]
    frames, sweep = order.index("att_scale_frames"), order.index(live_heads.SWEEP)
    switches = order.index(live_heads.SWITCHES)
    assert frames < order.index("att_weights") < switches < sweep  # the charts before a switch's
    before = unbundle(element(at, "att_scale_frames").proto.bytes)
    assert [unpack(part)[0].get("axis") for part in before] == ["head"]  # the heads alone


def sent_layer_frames(at):
    """The head shown in every layer, if the last run sent it: ``(header, arrays)`` or None."""
    return section_frames(at).get("layer")


def test_the_layers_of_the_head_shown_are_the_engines_and_come_with_the_frames(model_run):
    """Head h in every layer at the stop: sent with the frames of every stop, the same
    while a layer switch leaves them the same, and the same bits as each layer's own held
    heads."""
    at = open_app("attention", {"head": "7", "scale": "0.5"})
    header, along = sent_layer_frames(at)
    options = controls.scale_options(384, 12)
    assert (header["axis"], header["head"], header["stop"]) == ("layer", 7, options.index(0.5))
    n_layers = controls.MINILM.n_layers
    assert len(along["weights"]) == n_layers
    for layer in range(n_layers):
        heads = engine_heads(model_run, layer, 0.5)
        np.testing.assert_allclose(along["weights"][layer], heads.weights[7], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(along["scores"][layer], heads.scores[7], rtol=1e-6, atol=1e-5)
    move(at, "layer", 2)  # the same text, head and stop
    assert not at.exception
    kept = sent_layer_frames(at)
    assert kept is not None
    assert kept[0] == header
    held_header, held = head_frames(at)  # layer 2's heads, as a head switch paints them
    assert held_header["id"] != header["id"]  # no chart follows the layers' frames
    for name, array in along.items():
        np.testing.assert_array_equal(array[2], held[name][7], name)
    move(at, "head", 3)  # another head: its own, in the switch's run
    assert sent_layer_frames(at)[0]["head"] == 3


def test_the_seeded_model_sends_no_layers():
    at = open_app("attention", {"weights": "random", "heads": "4"})
    assert scale_frames(at) is not None
    assert sent_layer_frames(at) is None  # one layer: nothing to switch to


def sent_mask_frames(at):
    """The head shown unmasked and masked, if the last run sent it: ``(header, arrays)`` or None."""
    return section_frames(at).get("mask")


@pytest.mark.parametrize("weights", ["minilm", "random"])
def test_the_head_shown_unmasked_and_masked_is_the_engines_and_comes_with_the_frames(
    model_run, weights
):
    """Head h unmasked (frame 0) and masked (frame 1) at the stop: sent with the frames of
    every stop, the same while a mask toggle leaves them the same, and the same bits as
    either state's own held heads."""
    head = 7 if weights == "minilm" else 2
    query = {"head": str(head), "scale": "0.5"} | (
        {} if weights == "minilm" else {"weights": "random", "heads": "4"}
    )
    at = open_app("attention", query)
    header, both = sent_mask_frames(at)
    assert (header["axis"], header["head"]) == ("mask", head)
    assert header["stop"] == scale_slider(at)["value"]
    assert len(both["weights"]) == 2
    if weights == "minilm":
        for causal in (False, True):
            heads = engine_heads(model_run, controls.DEFAULT_LAYER, 0.5, causal)
            frame = both["weights"][int(causal)]
            np.testing.assert_allclose(frame, heads.weights[head], rtol=1e-6, atol=1e-7)
    upper = np.triu_indices(len(both["weights"][1]), 1)
    assert (both["weights"][1][upper] == 0).all()  # masked: no weight on a later token
    assert (both["weights"][0][upper] > 0).all()
    unmasked_header, unmasked = head_frames(at)
    move(at, "causal", True)  # the same text, head and stop
    assert not at.exception
    kept = sent_mask_frames(at)
    assert kept is not None
    assert kept[0] == header
    held_header, held = head_frames(at)  # the masked layer's heads, as a head switch paints them
    assert held_header["id"] != unmasked_header["id"]
    assert held_header["id"] != header["id"]  # no chart follows the mask's frames
    for name, array in both.items():
        np.testing.assert_array_equal(array[1], held[name][head], name)
    for name, array in unmasked.items():  # and frame 0 the unmasked heads' bits
        np.testing.assert_array_equal(both[name][0], array[head], name)
    move(at, "head", head - 1)  # another head: its own, in the switch's run
    assert sent_mask_frames(at)[0]["head"] == head - 1


def test_the_live_control_says_the_head_python_holds():
    at = open_app("attention", {"head": "7"})
    data = json_data(element(at, live_heads.HEAD))
    assert (data["kind"], data["name"]) == ("control", "head")
    assert (data["count"], data["value"], data["hidden"]) == (12, 7, False)
    assert data["placed"] == control(at, "head")["placed"]  # one channel: the sidebar's too
    at = open_app("attention", {"head": "7", "present": "1"})  # the presenter bar has one
    assert json_data(element(at, live_heads.HEAD))["hidden"] is True


def json_data(found):
    """A component element's JSON data."""
    return json.loads(found.proto.json)


@pytest.mark.parametrize("repeats", [8, 16])  # 16-bit frames of every stop; frames per stop
def test_without_float32_frames_of_every_stop_the_charts_are_the_head_shown(model_run, repeats):
    text = " ".join(["the cat sat on the mat while the dog slept by the door"] * repeats)
    at = open_app("attention", {"text": text, "head": "4"})
    assert not at.exception
    with pytest.raises(LookupError):
        element(at, live_heads.HEAD)  # no live head: the browser does not hold the heads
    assert "curves" not in chart_payloads(at)["att_saturation"]["live"]
    model, _ = model_run
    heads = one_layer.layer_run(model, bert.run(model, text), 3, None, False).attention.heads
    np.testing.assert_allclose(chart_z(at, "att_weights"), heads.weights[4], atol=1e-6)
    raw = decode(charts(at)["att_raw"]["data"][0]["z"])
    np.testing.assert_allclose(raw, heads.scores[4], rtol=1e-6, atol=1e-5)
    curves = charts(at)["att_saturation"]["data"][0]["y"]
    n = len(heads.scores[4])  # the curve is swept on evenly spaced rows of a long text
    rows = np.unique(np.linspace(0, n - 1, layers.SWEEP_ROWS).round().astype(int))
    stats = engine.saturation_sweep(heads.scores[4][rows], np.geomspace(1e-3, 1e3, 61))
    np.testing.assert_allclose(decode(curves), stats.entropy, rtol=1e-5, atol=1e-6)  # float32
