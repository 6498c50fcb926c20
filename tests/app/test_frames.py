"""The scale's frames and a cell's arithmetic: oracle and property tests against the matrix form."""

import numpy as np
import pytest
from apptest_support import unpack
from hypothesis import given
from hypothesis import strategies as st

import engine
from app.data import layers
from app.live import protocol
from app.state import controls
from app.views import numbers, style
from engine.arithmetic import cell_arithmetic
from engine.attention import attention_over_scales, causal_mask, scaled_dot_product_attention


@pytest.fixture
def head():
    rng = np.random.default_rng(7)
    return rng.normal(size=(9, 4)), rng.normal(size=(9, 4)), rng.normal(size=(9, 3))


@pytest.mark.parametrize("masked", [False, True])
def test_every_frame_is_the_matrix_form_at_its_scale(head, masked):
    q, k, v = head
    mask = causal_mask(9) if masked else None
    scales = np.array(controls.scale_options(16, 1))
    sweep = attention_over_scales(q, k, v, scales, mask)
    assert sweep.weights.shape == (len(scales), 9, 9)
    for t, scale in enumerate(scales):
        one = scaled_dot_product_attention(q, k, v, mask, scale)
        np.testing.assert_array_equal(sweep.weights[t], one.weights)
        np.testing.assert_array_equal(sweep.scaled[t], one.masked)
        np.testing.assert_allclose(sweep.output[t], one.output, rtol=0, atol=1e-13)


def test_frames_sharpen_as_the_scale_grows(head):
    sweep = attention_over_scales(*head, np.geomspace(1e-3, 1e3, 13))
    np.testing.assert_allclose(sweep.weights.sum(axis=-1), 1.0)
    largest = sweep.weights.max(axis=-1).mean(axis=-1)
    assert np.all(np.diff(largest) >= -1e-12)
    assert largest[0] == pytest.approx(1 / 9, abs=1e-3)
    assert largest[-1] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("masked", [False, True])
def test_a_cells_arithmetic_gives_the_cells_weight(head, masked):
    q, k, v = head
    mask = causal_mask(9) if masked else None
    full = scaled_dot_product_attention(q, k, v, mask, 0.6)
    for i, j in [(0, 0), (4, 2), (8, 8), (2, 6)]:
        cell = cell_arithmetic(q, k, v, i, j, 0.6, mask)
        assert cell.weight == full.weights[i, j]  # the same bits, not just close
        assert cell.exp / cell.row_sum == pytest.approx(cell.weight, rel=1e-15)
        assert cell.masked == full.masked[i, j]
        assert cell.scaled == full.scaled[i, j]  # finite: the mask comes after the scale
        assert cell.masked == cell.scaled + cell.mask_term
        assert cell.mask_term == (-np.inf if masked and j > i else 0.0)
        np.testing.assert_allclose(cell.output, full.output[i], atol=1e-14)
        np.testing.assert_allclose(cell.contribution, full.weights[i, j] * v[j])
        if masked and j > i:
            assert cell.exp == 0.0
        else:
            assert cell.shifted <= 0.0
            assert cell.dot == pytest.approx(q[i] @ k[j])


def test_a_cell_without_values_stops_at_the_weight(head):
    q, k, _ = head
    cell = cell_arithmetic(q, k, None, 1, 2)
    assert cell.scale == pytest.approx(0.5)  # 1/√d_k with d_k = 4
    assert cell.output is None


def test_small_frames_are_float32(head):
    sweep = attention_over_scales(*head, np.array(controls.scale_options(16, 1)))
    frame_id, payload = protocol.sweep_frames("s", sweep)
    header, arrays = unpack(payload)
    assert header["id"] == frame_id
    assert header["arrays"]["weights"]["dtype"] == "f4"
    np.testing.assert_allclose(arrays["weights"], sweep.weights, atol=1e-7)
    assert header["titles"][0] == f"{sweep.scales[0]:.4g}"


def test_the_frames_carry_the_saturation_tables_texts_as_the_tables_write_them(head):
    """A table's text at each stop is its float32 number with the table's own format."""
    sweep = attention_over_scales(*head, np.array(controls.scale_options(16, 1)))
    header, arrays = unpack(protocol.sweep_frames("s", sweep)[1])
    for name in ("saturation", "saturation_mean"):
        texts = np.array(header["texts"][name])
        assert texts.shape == arrays[name].shape  # (stops, rows, 4)
        expected = [format(float(v), numbers.NUMBER_FORMAT) for v in arrays[name].ravel()]
        assert texts.ravel().tolist() == expected
    stats = np.stack(engine.saturation(sweep.weights), axis=-1).mean(axis=1)  # [n_s, 4]
    np.testing.assert_allclose(texts[:, 0].astype(float), stats, atol=5.1e-5)


def test_large_frames_are_16_bit_and_within_budget():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, protocol.MAX_TOKENS, 16))
    mask = causal_mask(protocol.MAX_TOKENS)
    sweep = attention_over_scales(q, k, v, np.array(controls.scale_options(16, 1)), mask)
    _, payload = protocol.sweep_frames("s", sweep)
    assert len(payload) <= protocol.MAX_BYTES
    header, arrays = unpack(payload)
    assert header["arrays"]["weights"]["dtype"] == "u2"
    finite = np.isfinite(sweep.weights)
    np.testing.assert_allclose(arrays["weights"][finite], sweep.weights[finite], atol=1 / 65534)


@pytest.mark.parametrize("wide", [True, False])
def test_cells_the_same_at_every_stop_travel_once_and_come_back(wide, monkeypatch):
    """A causal head's masked cells (0 weights, NaN scaled scores) are sent once, not per stop.

    Read back independently (:func:`apptest_support.unpack`), every value is what the
    whole frames held: float32 bit for bit, 16 bits the codes of the same arrays.
    """
    rng = np.random.default_rng(1)
    n = 40
    q, k, v = rng.normal(size=(3, n, 8))
    sweep = attention_over_scales(q, k, v, np.array(controls.scale_options(16, 1)), causal_mask(n))
    if not wide:  # too little room for float32: 16 bits
        room = sweep.weights.size + sweep.output.size
        monkeypatch.setattr(protocol, "MAX_BYTES", protocol._HEADER_ROOM + 3 * room)
    _, payload = protocol.sweep_frames("s", sweep)
    header, arrays = unpack(payload)
    weights = header["arrays"]["weights"]
    assert weights["dtype"] == ("f4" if wide else "u2")
    below = n * (n + 1) // 2  # the causal mask keeps the diagonal and below
    assert weights["fixed"]["kept"] <= below  # query 0's lone weight of 1 is fixed too
    # query 0 sees itself alone: its output row is v[0] at every stop, the rest move
    assert header["arrays"]["output"]["fixed"]["kept"] == (n - 1) * 8
    if wide:
        np.testing.assert_array_equal(arrays["weights"], sweep.weights.astype(np.float32))
        scaled = np.where(np.isfinite(sweep.scaled), sweep.scaled, np.nan).astype(np.float32)
        np.testing.assert_array_equal(arrays["scaled"], scaled)
    else:
        finite = np.isfinite(sweep.weights)
        np.testing.assert_allclose(arrays["weights"], sweep.weights, atol=1 / 65534)
        assert finite.all()
    monkeypatch.setattr(protocol, "_fixed_cells", lambda blob: None)
    whole = protocol.sweep_frames("s", sweep)[1]
    itemsize = 4 if wide else 2
    masked = n * n - below  # 0 at every stop; in float32 the scaled scores' NaN too
    assert len(whole) - len(payload) >= (1 + wide) * (
        masked * (len(sweep.scales) - 1) * itemsize - n * n
    )


@given(
    st.integers(2, 5),
    st.integers(1, 30),
    st.sampled_from(["f4", "u2"]),
    st.integers(0, 2**32 - 1),
)
def test_packed_arrays_come_back_whole_whatever_cells_stay_put(frames, cells, dtype, seed):
    rng = np.random.default_rng(seed)
    array = rng.normal(size=(frames, cells))
    stay = rng.random(cells) < 0.5  # the same in every frame
    array[:, stay] = rng.normal(size=stay.sum())
    array[:, rng.random(cells) < 0.3] = -np.inf  # gaps in every frame
    itemsize = 4 if dtype == "f4" else 2
    limit = protocol._HEADER_ROOM + array.size * itemsize
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(protocol, "MAX_BYTES", limit)
        _, payload = protocol.pack("s", {"a": array}, np.ones(frames), ["1"] * frames, {})
    header, arrays = unpack(payload)
    assert header["arrays"]["a"]["dtype"] == dtype
    expected = np.where(np.isfinite(array), array, np.nan)
    if dtype == "f4":
        np.testing.assert_array_equal(arrays["a"], expected.astype(np.float32))
    else:
        span = np.nanmax(expected) - np.nanmin(expected) if np.isfinite(expected).any() else 1
        np.testing.assert_allclose(arrays["a"], expected, atol=(span or 1) / 65534)
        np.testing.assert_array_equal(np.isnan(arrays["a"]), np.isnan(expected))


@pytest.mark.parametrize(("d_model", "heads", "d_out"), [(384, 12, 32), (16, 1, 16)])
@pytest.mark.parametrize("masked", [False, True])
def test_a_sweeps_sizes_say_how_it_will_be_packed(d_model, heads, d_out, masked):
    """sweep_mode, from sizes alone, says what sweep_frames then does with real frames:
    either side of the last length drawn in the browser, and at the longest with frames."""
    scales = np.array(controls.scale_options(d_model, heads))
    constants = lambda n: (n * n, 3 * layers.CURVE_POINTS)  # noqa: E731 - as sweeps.frames_mode counts
    modes = [protocol.sweep_mode(len(scales), n, n, d_out, constants(n)) for n in range(1, 129)]
    last = max(n for n, mode in enumerate(modes, start=1) if mode == (False, True))
    assert 8 < last < protocol.MAX_TOKENS  # the test spans a change of mode
    rng = np.random.default_rng(3)
    for n in (last, last + 1, protocol.MAX_TOKENS):
        q, k, v = rng.normal(size=(3, n, d_out)) * np.array([1, 1, 1e3])[:, None, None]
        sweep = attention_over_scales(q, k, v, scales, causal_mask(n) if masked else None)
        curves = rng.normal(size=(3, layers.CURVE_POINTS))
        constant = {"scores": sweep.scores, "curves": curves}
        labels = [controls.scale_label(scale, d_model, heads) for scale in scales]
        payload = protocol.sweep_frames("s", sweep, labels, constant=constant)[1]
        packed = (payload is None, protocol.drawn_in_browser(payload))
        assert packed == protocol.sweep_mode(len(scales), n, n, d_out, constants(n)), n


@pytest.mark.parametrize(("per_value", "past", "dtype"), [
    (4, 0, "f4"), (4, 1, "u2"), (2, 0, "u2"), (2, 1, None),
])  # fmt: skip
def test_sizes_alone_decide_how_frames_are_packed(per_value, past, dtype):
    """Frames of the same shapes are packed alike, whatever their numbers, and fit.

    At the last size that fits float32 (or 16 bits) and one value past it, with MiniLM's
    81 stops: two heads with numbers 1 and 1e6 apart (longer colour-bar labels, a longer
    header) go the same way, so their sizes decide for every head, layer and mask of a text
    (app.live.protocol.sweep_mode, app.live.sweeps.frames_mode).
    """
    scales = np.array(controls.scale_options(384, 12))
    room = protocol.MAX_BYTES - protocol._HEADER_ROOM
    width = room // per_value // len(scales) + past  # values per frame
    rng = np.random.default_rng(0)
    packed = []
    for size in (1.0, 1e6):
        shapes = {"a": width // 3 + width % 3, "b": width // 3, "c": width // 3}
        arrays = {name: size * rng.normal(size=(len(scales), n)) for name, n in shapes.items()}
        limits = {name: np.abs(a).max(axis=1) for name, a in arrays.items()}
        titles = [protocol.scale_title(s) for s in scales]
        labels = [controls.scale_label(s, 384, 12) for s in scales]
        _, payload = protocol.pack("s", arrays, scales, titles, limits, labels)
        packed.append(None if payload is None else unpack(payload)[0]["arrays"]["a"]["dtype"])
        if payload is not None:
            assert len(payload) <= protocol.MAX_BYTES
    assert packed == [dtype, dtype]


@given(st.floats(min_value=1e-6, max_value=1e7, allow_nan=False))
def test_colour_bar_ticks_are_round_symmetric_and_span_half_the_range(limit):
    values, labels = style.colorbar_ticks(limit)
    assert values == [-v for v in reversed(values)]
    assert 0.0 in values
    assert len(values) <= 2 * style.MAX_TICKS + 1
    assert limit / 2 <= max(values) <= limit * (1 + 1e-9)
    step = values[-1] - values[-2]
    mantissa = step / 10 ** np.floor(np.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-6
    assert len(set(labels)) == len(labels)  # no two ticks read the same


def test_the_frames_carry_each_stops_colour_bar(head):
    q, k, v = head
    scales = np.array(controls.scale_options(16, 1))
    sweep = attention_over_scales(q, k, v, scales)
    _, payload = protocol.sweep_frames("s", sweep)
    header = protocol.header(payload)
    for name in ("scaled", "output"):
        assert len(header["ticks"][name]) == len(scales)
        for limit, ticks in zip(header["limits"][name], header["ticks"][name], strict=True):
            assert ticks == style.colorbar_ticks(limit)
