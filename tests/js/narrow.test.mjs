// A figure drawn to scale (narrow.js, the model view's grid) cut to the height it draws at
// its width: the blank plotly.js leaves under a plot held to its data's aspect, measured
// on its layout as plotly.js laid it out, taken off the figure's height, and the height
// found drawn at once the next time at that width.
import assert from "node:assert/strict";
import { test } from "node:test";

import { blankUnder, fitNarrow, fitted } from "../../attention_explorer/chart/narrow.js";
import { Chart } from "../../attention_explorer/chart/state.js";

// SmolLM2's grid on a 390 px phone, as Chromium laid it out before the cut: a 2,760 px
// figure whose plot, 2,698 px, drew the grid in its top 1,036 px.
const PHONE = { height: 2760, margin: { t: 52, b: 10 }, _size: { h: 2698 }, yaxis: { domain: [0.616, 1] } };

test("the blank under a plot drawn to scale is what its y domain leaves of the plot", () => {
  assert.equal(blankUnder(PHONE), Math.floor(0.616 * 2698));
  assert.equal(blankUnder({ ...PHONE, yaxis: { domain: [0, 1] } }), 0); // as tall as its grid
  assert.equal(blankUnder({ ...PHONE, yaxis: { domain: [0.0003, 1] } }), 0); // under a pixel
});

// A plotly.js div with `full` as its layout, that records the updates it is relaid with.
function plotDiv(full, updates) {
  globalThis.window = {
    Plotly: {
      relayout: async (gd, update) => {
        updates.push(update);
        if (update.height) Object.assign(full, { height: update.height, yaxis: { domain: [0, 1] } });
      },
    },
  };
  return {
    _fullLayout: full,
    querySelector: () => null,
    querySelectorAll: () => [],
    getBoundingClientRect: () => ({ left: 0, right: 358, top: 0, bottom: full.height }),
    classList: { contains: () => false },
    style: { setProperty: () => {} },
  };
}

function phoneChart(full, updates) {
  const chart = new Chart({}, plotDiv(full, updates));
  chart.fit.observer = {}; // its width as the ResizeObserver saw it
  chart.fit.width = 358;
  return chart;
}

test("a figure drawn to scale is cut to its grid, and drawn at that height the next time", async () => {
  const figure = { data: [], layout: { height: 2760, meta: "to-scale", margin: { t: 48, b: 10 } } };
  const updates = [];
  const chart = phoneChart(structuredClone(PHONE), updates);
  await fitNarrow(chart, figure);
  const cut = 2760 - Math.floor(0.616 * 2698);
  assert.deepEqual(updates, [{ height: cut }]);
  assert.equal(fitted(chart, figure).height, cut); // the next drawing: at once
  assert.equal(figure.layout.height, 2760); // the figure stays as Python sent it
  chart.fit.width = 700; // a wider column: drawn at its own height, then measured again
  assert.equal(fitted(chart, figure).height, 2760);
});

test("a figure not drawn to scale keeps its height, blank or not", async () => {
  const figure = { data: [], layout: { height: 2760, margin: { t: 48, b: 10 } } };
  const updates = [];
  const chart = phoneChart(structuredClone(PHONE), updates);
  await fitNarrow(chart, figure);
  assert.deepEqual(updates, []);
  assert.equal(fitted(chart, figure).height, 2760);
});
