// The chart object (chart/state.js's Chart): its fields declared in one place, found from its
// div, Python's data taken with what changed said, a click reported as Python reads it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Chart } from "../../attention_explorer/chart/state.js";

const data = (changes = {}) => ({ key: "att_weights", spec: '{"data":[]}', config: { a: 1 }, clicks: 1, ...changes });

test("a chart is found from its div alone, and no other div finds it", () => {
  const [host, div, other] = [{}, {}, {}];
  const chart = new Chart(host, div);
  assert.equal(Chart.of(div), chart);
  assert.equal(Chart.of(other), null);
  const second = new Chart(host, other);
  assert.equal(Chart.of(other), second);
  assert.equal(Chart.of(div), chart);
});

test("its fields are the constructor's: a field set elsewhere throws", () => {
  const chart = new Chart({}, {});
  const fields = Object.keys(chart).sort();
  chart.take(data({ live: { source: "s" }, print: { width: 3 } }), "theme");
  chart.relay();
  chart.click({ points: [] });
  assert.deepEqual(Object.keys(chart).sort(), fields);
  assert.throws(() => {
    chart.drawnSpec = "x"; // a name from before the record, which means nothing now
  }, TypeError);
  assert.throws(() => {
    chart.fit.fittedFor = "x";
  }, TypeError);
  assert.throws(() => {
    chart.paint.preview = {};
  }, TypeError);
});

test("new data change what it shows; the same data again, in any run, do not", () => {
  const chart = new Chart({}, {});
  assert.equal(chart.take(data(), "light"), true);
  assert.equal(chart.take(data(), "light"), false);
  assert.equal(chart.take(data({ config: { a: 2 }, print: { width: 1 } }), "light"), false); // export only
  assert.deepEqual(chart.config, { a: 2 });
  assert.deepEqual(chart.print, { width: 1 });
  assert.equal(chart.take(data({ spec: '{"data":[1]}' }), "light"), true);
  assert.equal(chart.take(data({ spec: '{"data":[1]}' }), "dark"), true); // a theme redraws
  const live = { source: "att_scale", frames: "f", drawn: 0, heatmap: "weights" };
  assert.equal(chart.take(data({ spec: '{"data":[1]}', live }), "dark"), true);
  assert.equal(chart.take(data({ spec: '{"data":[1]}', live: { ...live } }), "dark"), false); // equal, not the same object
  assert.equal(chart.take(data({ spec: '{"data":[1]}', live: { ...live, row: 2 } }), "dark"), true);
  assert.equal(chart.take(data({ spec: '{"data":[1]}' }), "dark"), true); // it stopped following
  assert.equal(chart.live, null);
  assert.equal(chart.print, null);
  assert.equal(chart.key, "att_weights");
});

test("a change of its width or its row's room makes it owe a drawing", () => {
  const owed = [];
  const chart = new Chart({}, {}, (owing) => owed.push(owing));
  assert.equal(chart.relaid, false);
  chart.relay();
  assert.equal(chart.relaid, true);
  assert.deepEqual(owed, [chart]);
});

test("a click on a cell is reported as {trace, row, col}, a bar's with no column", () => {
  const chart = new Chart({}, {});
  const told = [];
  chart.trigger = (name, value) => told.push([name, value]);
  chart.take(data({ clicks: false }), "t");
  chart.click({ points: [{ curveNumber: 0, pointIndex: [2, 3] }] });
  assert.deepEqual(told, []); // a chart that reports no clicks
  chart.take(data({ clicks: true }), "t");
  chart.click({ points: [] });
  chart.click({ points: [{ curveNumber: 1, pointIndex: [2, 3] }] });
  chart.click({ points: [{ curveNumber: 0, pointIndex: 4 }] });
  assert.deepEqual(told, [
    ["click", { trace: 1, row: 2, col: 3 }],
    ["click", { trace: 0, row: 4, col: null }],
  ]);
});
