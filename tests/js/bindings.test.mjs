// The binding table (chart/bindings.js): every kind has one exact figure's part and one
// painter, and the exact parts put a frame's numbers where the binding says, leaving the
// reference figure untouched. Run by tests/app/test_javascript.py (node --test tests/js/).
import assert from "node:assert/strict";
import { test } from "node:test";

import { figureAt, KINDS } from "../../attention_explorer/chart/bindings.js";

// The kinds app/live/protocol.py's follow documents.
const DOCUMENTED = ["title", "heatmap", "limits", "hover", "bar", "columns", "markers", "curves"];

// Frames of `n_frames` stops holding float32 arrays given as nested lists [frame][row][col].
function framesOf(arrays, scales) {
  const out = {};
  for (const [name, nested] of Object.entries(arrays)) {
    const shape = [nested.length, nested[0].length, nested[0][0].length];
    const values = Float32Array.from(nested.flat(2));
    out[name] = { dtype: "f4", shape, values, size: values.length / shape[0] };
  }
  return {
    arrays: out,
    scales,
    titles: scales.map(String),
    limits: { a: scales.map((s) => 10 * s) },
    ticks: { a: scales.map((s) => [[-s, 0, s], ["-", "0", "+"]]) },
  };
}

test("every documented kind has exactly one exact part and one painter", () => {
  assert.deepEqual(Object.keys(KINDS).sort(), [...DOCUMENTED].sort());
  for (const [name, kind] of Object.entries(KINDS)) {
    assert.deepEqual(Object.keys(kind).sort(), ["exact", "paint"], name);
    assert.equal(typeof kind.exact, "function", name);
    assert.equal(typeof kind.paint, "function", name);
  }
});

test("the exact figure puts each bound kind's numbers of the frame in place", () => {
  const frames = framesOf(
    {
      a: [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
      lines: [[[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], [[1.1, 1.2, 1.3], [1.4, 1.5, 1.6]]],
    },
    [0.5, 2],
  );
  const colors = Array.from({ length: 256 }, (_, i) => `c${i}`);
  const figure = {
    data: [
      { z: [[0, 0], [0, 0]], y: [0, 0], cells: { values: [["r0", "r1"], [9, 9], [9, 9], [9, 9]] } },
      { y: [0, 0, 0] },
    ],
    layout: { title: { text: "Old<br>kept" }, shapes: [{ x0: 1, x1: 1 }, { x0: 7, x1: 7 }] },
  };
  const live = {
    title: "At {scale}", heatmap: "a", limits: "a", bar: "a", row: 1, colors,
    columns: ["a", 1], markers: [1], curves: "lines",
  };
  const drawn = figureAt({ figure, live }, frames, 1);
  const trace = drawn.data[0];
  assert.equal(drawn.layout.title.text, "At 2<br>kept");
  assert.deepEqual(trace.z.map((row) => Array.from(row)), [[5, 6], [7, 8]]);
  assert.deepEqual([trace.zmin, trace.zmax, trace.zmid], [-20, 20, 0]);
  assert.deepEqual(trace.colorbar.tickvals, [-2, 0, 2]);
  assert.deepEqual(Array.from(trace.y), [1.1, 1.2, 1.3].map(Math.fround)); // curves: line 0
  assert.deepEqual(Array.from(drawn.data[1].y), [1.4, 1.5, 1.6].map(Math.fround));
  assert.deepEqual(trace.cells.values, [["r0", "r1"], [5, 7], [6, 8], [9, 9]]);
  assert.deepEqual(drawn.layout.shapes, [{ x0: 1, x1: 1 }, { x0: 2, x1: 2 }]);
  assert.deepEqual(figure.data[0].z, [[0, 0], [0, 0]]); // the reference figure untouched
  assert.equal(figure.layout.title.text, "Old<br>kept");
  assert.equal(figure.layout.shapes[1].x0, 7);
});

test("a bar binding is one row of the frame, coloured by value", () => {
  const frames = framesOf({ w: [[[0, 1], [0.5, 0.25]], [[1, 0], [0.75, 0]]] }, [1, 2]);
  const colors = Array.from({ length: 256 }, (_, i) => i);
  const figure = { data: [{ y: [0, 0], marker: { line: 1 } }], layout: {} };
  const drawn = figureAt({ figure, live: { bar: "w", row: 1, colors } }, frames, 1);
  assert.deepEqual(Array.from(drawn.data[0].y), [0.75, 0]);
  assert.deepEqual(drawn.data[0].marker, { line: 1, color: [191, 0] });
});

test("a hover binding fills its entry of each cell, a gap left to the template", () => {
  const frames = framesOf({ w: [[[0.5, NaN]]] }, [1]);
  const figure = { data: [{ customdata: [[["q", 0], ["q", 0]]] }], layout: {} };
  const drawn = figureAt({ figure, live: { hover: [["w", 1], ["absent", 0]] } }, frames, 0);
  assert.deepEqual(drawn.data[0].customdata, [[["q", 0.5], ["q", ""]]]);
});
