// The previews' one adapter to plotly.js's internals: every selector, private field and path
// format preview.js relies on. tests/browser/test_plotly_parts.py checks each on plots drawn by
// the vendored plotly.js (scripts/build_plotly.sh), so an upgrade that moves one fails there.

// Whether plotly.js has drawn `gd` (its laid-out figure is there).
export const laidOut = (gd) => Boolean(gd._fullLayout);
// Trace `t` as plotly.js laid it out (z, zmin, zmax, colorscale, x, xaxis, yaxis), or null.
export const fullTrace = (gd, t = 0) => gd._fullData?.[t] ?? null;
export const fullTraces = (gd) => gd._fullData ?? null;
// The axis a trace or a shape names ("x", "y2", ...), with c2p: a value to a pixel.
export const axisOf = (gd, ref) => gd._fullLayout[`${ref[0]}axis${ref.slice(1)}`];
// The laid-out shape `index` of the figure's, and its drawn path.
export const shapeOf = (gd, index) => gd._fullLayout.shapes[index];
export const shapePath = (gd, index) => gd.querySelector(`.shapelayer path[data-index="${index}"]`);

// Trace 0's heatmap cells, drawn as one image.
export const heatmapImage = (gd) => gd.querySelector(".heatmaplayer image");
// A heatmap's colour bar: its fill (the colours, bottom to top), its axis of tick labels,
// and one of those labels to copy; null without one.
export function colourBar(gd) {
  const bar = gd.querySelector(".colorbar");
  const fill = bar?.querySelector(".cbfill");
  const axis = bar?.querySelector(".cbaxis");
  const tick = axis?.querySelector(":scope > g");
  return fill && tick ? { fill, axis, tick } : null;
}
// What a preview paints over, by the mark it puts on the chart while it does (preview.js
// hides each part so marked): the heatmap's image, the colour bar's labels, the hover labels.
export const UNDER_PREVIEW = {
  "data-recoloured": ".heatmaplayer image", "data-colour-bar": ".cbaxis", "data-hover-hidden": ".hoverlayer",
};
export const titleText = (gd) => gd.querySelector(".gtitle");

// Trace 0's bars, one path each, in the order of its x.
export const barPaths = (gd) => gd.querySelectorAll(".barlayer .trace:first-child .point path");
// A bar as plotly.js draws it, "M x0,y0 V y1 H x1 V y0 Z": its corners x0, y0 and x1, and
// the same bar with its top at y1.
export function barCorners(d) {
  const [x0, y0, , x1] = d.match(/-?[\d.]+(?:e-?\d+)?/g).map(Number);
  return { x0, y0, x1 };
}
export const barTo = ({ x0, y0, x1 }, y1) => `M${x0},${y0}V${y1}H${x1}V${y0}Z`;

// Each line trace's path, in the order of the traces.
export const linePaths = (gd) => gd.querySelectorAll(".scatterlayer .trace .js-line");

// A table's drawn cell texts (a long table draws the rows in view), and for each, where it
// is: {row, column (the column's index in the figure), value}, or null for a header's.
export const cellTexts = (gd) => gd.querySelectorAll(".cell-text");
export function cellOf(text) {
  const cell = text.__data__;
  if (text.closest(".column-block")?.__data__?.type !== "cells" || !cell?.column) return null;
  return { row: cell.rowNumber, column: cell.column.specIndex, value: cell.value };
}
