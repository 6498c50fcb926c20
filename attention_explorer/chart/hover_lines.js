// The line view (BertViz's head view): a token under the pointer keeps its lines, in the
// browser alone; a click keeps them for good (Python draws them, and the picker names it).

// A line view (app/views/line_view.py, layout.meta "line-view") draws its lines as path shapes
// "M0,q L1,k M0,q′ L1,k′ …", which plotly.js draws as SVG paths of the same segments in the
// same order, in pixels.

const paths = new WeakMap(); // a line path -> {all: every line as drawn, shown: the lines kept} A query token (trace 0) keeps the lines from it, a key token
// (trace 1) those into it; no token (`point` null) brings every line back.
export function hoverLines(chart, point) {
  const layout = chart.div._fullLayout;
  if (!layout || chart.div.layout?.meta !== "line-view") return;
  const side = point && point.curveNumber <= 1 ? point.curveNumber : null;
  for (const path of chart.div.querySelectorAll(".shapelayer path[data-index]")) {
    const shape = layout.shapes[Number(path.dataset.index)];
    if (!shape || typeof shape.path !== "string") continue;
    let known = paths.get(path);
    if (path.getAttribute("d") !== known?.shown) known = { all: path.getAttribute("d") }; // drawn anew
    let d = known.all;
    if (side !== null) {
      const ends = [...shape.path.matchAll(/M0,(\d+)L1,(\d+)/g)].map((m) => Number(m[side + 1]));
      const segments = known.all.split("M").slice(1); // the same lines, in pixels
      d = segments.filter((_, j) => ends[j] === point.pointNumber).map((s) => `M${s}`).join("");
    }
    path.setAttribute("d", d);
    paths.set(path, { all: known.all, shown: d });
  }
}
