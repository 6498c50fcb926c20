// The browser's frames decoder and exact figure (chart/frames.js, chart/bindings.js) against
// the frames Python packed (app/live/protocol.py): run by tests/app/test_javascript.py,
// which writes the fixtures and says where (AE_JS_FIXTURES).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { figureAt, writeGaps } from "../../attention_explorer/chart/bindings.js";
import {
  awaits, decodeBundle, decodeFrames, frameOf, frameRows, replaced, source, valueAt, wanted,
} from "../../attention_explorer/chart/frames.js";

const dir = process.env.AE_JS_FIXTURES;
const bytes = (name) => new Uint8Array(readFileSync(join(dir, name)));
const expected = JSON.parse(readFileSync(join(dir, "expected.json"), "utf8"));

// A frame's array as nested rows of numbers (NaN for a gap), by valueAt.
function rowsOf(array, frame) {
  const [rows, cols] = [array.shape[1], array.shape[2]];
  return Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => valueAt(array, frame, i * cols + j)));
}

// Python's numbers, null for NaN (JSON has no NaN).
const asJson = (rows) => rows.map((row) => row.map((v) => (Number.isNaN(v) ? null : v)));

test("float32 frames decode to Python's numbers, bit for bit", () => {
  const frames = decodeFrames(bytes("sweep_f4.bin"));
  assert.equal(frames.source, expected.source);
  assert.equal(frames.head, expected.head);
  assert.deepEqual(frames.titles, expected.titles);
  for (const [name, perFrame] of Object.entries(expected.f4)) {
    const array = frames.arrays[name];
    assert.equal(array.dtype, "f4", name);
    for (const [frame, rows] of perFrame.entries()) {
      assert.deepEqual(asJson(rowsOf(array, frame)), rows, `${name} frame ${frame}`);
    }
  }
});

test("16-bit frames decode onto [lo, hi], a masked cell a gap", () => {
  const frames = decodeFrames(bytes("sweep_u2.bin"));
  const array = frames.arrays.weights;
  assert.equal(array.dtype, "u2");
  for (const [frame, rows] of expected.u2.weights.entries()) {
    rowsOf(array, frame).forEach((row, i) => row.forEach((v, j) => {
      const want = rows[i][j];
      if (want === null) assert.ok(Number.isNaN(v), `gap at ${frame},${i},${j}`);
      else assert.ok(Math.abs(v - want) < 1e-12, `${frame},${i},${j}: ${v} vs ${want}`);
    }));
  }
});

test("a stop and a head find their frame, or none", () => {
  const sweep = decodeFrames(bytes("sweep_f4.bin"));
  const stops = sweep.scales.length;
  assert.equal(frameOf(sweep, 0, expected.head), 0);
  assert.equal(frameOf(sweep, stops - 1, expected.head), stops - 1);
  assert.equal(frameOf(sweep, stops, expected.head), -1);
  assert.equal(frameOf(sweep, 0, expected.head + 1), -1); // another head's frames
  const heads = decodeFrames(bytes("heads.bin"));
  assert.equal(heads.axis, "head");
  assert.equal(frameOf(heads, heads.stop, 2), 2);
  assert.equal(frameOf(heads, heads.stop + 1, 2), -1); // the layer's heads at another stop
  assert.equal(frameOf(heads, heads.stop, heads.scales.length), -1);
});

test("the exact figure of a stop is the reference figure with that stop's numbers", () => {
  const frames = decodeFrames(bytes("sweep_f4.bin"));
  const figure = JSON.parse(readFileSync(join(dir, "figure.json"), "utf8"));
  const chart = { figure, live: expected.live };
  for (const frame of [0, 3, frames.scales.length - 1]) {
    const drawn = figureAt(chart, frames, frame);
    const z = drawn.data[0].z.map((row) => Array.from(row));
    assert.deepEqual(asJson(z), expected.f4.scaled[frame]);
    const limit = frames.limits.scaled[frame];
    assert.equal(drawn.data[0].zmax, limit);
    assert.equal(drawn.data[0].zmin, -limit);
    assert.deepEqual(drawn.data[0].colorbar.tickvals, frames.ticks.scaled[frame][0]);
    assert.equal(drawn.layout.title.text, `Scaled × ${frames.titles[frame]}<br>${expected.subtitle}`);
    const hover = drawn.data[0].customdata.map((row) => row.map((cell) => cell[1]));
    const weights = frameRows(frames.arrays.weights, frame).map((row) => Array.from(row));
    assert.deepEqual(hover, weights.map((row) => row.map((v) => (Number.isNaN(v) ? "" : v))));
  }
  assert.ok(figure.data[0].z.bdata); // the reference figure itself untouched
});

test("a bundle holds each of an element's frames, in order", () => {
  const bundle = decodeBundle(bytes("bundle.bin"));
  assert.deepEqual(bundle.map((frames) => frames.axis ?? "stop"), ["stop", "head"]);
  assert.deepEqual(asJson(rowsOf(bundle[0].arrays.weights, 2)), expected.f4.weights[2]);
});

test("a chart whose frames gave way keeps its drawing until its own data come", () => {
  const src = source("test-replaced");
  const element = {};
  const held = (id) => ({ id, head: 2, scales: [0.5, 1, 2], arrays: {} });
  src.held.set(element, [held("old")]);
  [src.stop, src.head] = [1, 2];
  const chart = { live: { source: "test-replaced", frames: "old", drawn: 0 }, shows: undefined };
  const first = wanted(chart);
  chart.shows = first;
  src.held.set(element, [held("new")]); // new settings: the chart's new data come after
  const waiting = wanted(chart);
  chart.live = { ...chart.live, frames: "new" }; // they came
  chart.shows = undefined;
  assert.deepEqual([first, waiting, wanted(chart)], ["old:2:1", "old:2:1", "new:2:1"]);
});

test("new data drawn at the head and stop shown are drawn as they came, not held back", () => {
  const src = source("test-as-they-came");
  const element = {};
  src.held.set(element, [{ id: "old", head: 0, scales: [0.5, 1, 2], arrays: {} }]);
  [src.stop, src.head] = [1, 0];
  // New settings' data (a text), drawn at head 0 and stop 1; their frames still to come.
  const chart = { live: { source: "test-as-they-came", frames: "new", drawn: 1, head: 0 }, shows: "old:0:1" };
  assert.equal(replaced(chart), false);
  assert.equal(wanted({ ...chart, shows: undefined }), null); // the data as they came
  src.head = 2; // another head is shown: its frames are awaited, the old drawing kept
  assert.equal(replaced(chart), true);
  src.head = 0;
  src.stop = 2; // another stop
  assert.equal(replaced(chart), true);
  assert.equal(replaced({ ...chart, live: { ...chart.live, stopless: true } }), false);
  src.moving = true; // a control moving: its previews, not these data
  assert.equal(replaced({ ...chart, live: { ...chart.live, stopless: true } }), true);
  src.moving = false;
  assert.equal(replaced({ ...chart, live: { ...chart.live, head: undefined } }), true); // no head said
});

test("a chart shown at a head whose frames are still to come owes a drawing", () => {
  const src = source("test-awaits");
  const element = {};
  src.held.set(element, [{ id: "layer", head: 2, scales: [0.5, 1, 2], arrays: {} }]);
  [src.stop, src.head] = [1, 2];
  const chart = { live: { source: "test-awaits", frames: "layer", drawn: 0 } };
  assert.equal(awaits(chart), false); // head 2's frames are held
  src.head = 3; // another head, at a stop whose heads have not come
  assert.equal(awaits(chart), true);
  src.held.set(element, [{ id: "layer", axis: "head", stop: 1, scales: [1, 1, 1, 1], arrays: {} }]);
  assert.equal(awaits(chart), false); // the layer's heads at the stop came
});

test("a masked head's hover, sent as one float32 array, is written as the lists plotly.js reads", () => {
  const figure = writeGaps(JSON.parse(readFileSync(join(dir, "masked_weights.json"), "utf8")));
  const [trace] = figure.data;
  const want = expected.hover.customdata; // Python's lists: [raw, scaled, ""] or [raw, "", text]
  assert.equal(trace.meta, undefined);
  assert.equal(trace.hovertemplate, expected.hover.template);
  assert.equal(trace.customdata.length, want.length);
  trace.customdata.forEach((row, i) => row.forEach((cell, j) => {
    const [raw, scaled, text] = want[i][j];
    assert.ok(Math.abs(cell[0] - raw) <= 1e-6 * Math.max(1, Math.abs(raw)), `raw ${i},${j}`);
    if (scaled === "") assert.equal(cell[1], "", `masked ${i},${j}`);
    else assert.ok(Math.abs(cell[1] - scaled) <= 1e-6 * Math.max(1, Math.abs(scaled)), `scaled ${i},${j}`);
    assert.equal(cell[2], text, `text ${i},${j}`);
  }));
  assert.ok(want.flat().some((cell) => cell[2] !== ""), "the fixture has masked cells");
});
