// The binding kinds: the parts of a chart that follow its frames, as a chart's `live` names
// them (app/live/protocol.py's follow). Each kind has one `exact`, its part of the exact figure
// of a frame (the reference figure with that frame's numbers in place: indexing only, drawn by
// plotly.js with Python's templates), and one `paint`, its part of the preview painted over
// plotly.js's drawing while a control moves (preview.js). A new kind is one entry here.

import { frameRows, start, valueAt } from "./frames.js";
import {
  axisOf, barCorners, barPaths, barTo, cellOf, cellTexts, fullTraces, laidOut, linePaths, shapeOf, shapePath,
  titleText,
} from "./plotly_parts.js";
import { hideHover, recolour, relabelColourBar, TEXT, touch } from "./preview.js";

const TYPES = { f4: Float32Array, f8: Float64Array, i4: Int32Array, u1: Uint8Array };
const colourOf = (colours, value) => colours[Math.max(0, Math.min(255, Math.round(value * 255)))];

// A typed array as plotly.py writes it ({dtype, bdata: base64, shape}) as nested arrays of
// its shape; anything else as it is.
function nested(spec) {
  if (!spec || !spec.bdata) return spec;
  const bytes = Uint8Array.from(atob(spec.bdata), (c) => c.charCodeAt(0));
  const flat = Array.from(new TYPES[spec.dtype](bytes.buffer));
  const shape = String(spec.shape ?? flat.length).split(",").map(Number);
  const split = (values, dims) => {
    if (dims.length === 1) return values;
    const size = values.length / dims[0];
    return Array.from({ length: dims[0] }, (_, i) => split(values.slice(i * size, (i + 1) * size), dims.slice(1)));
  };
  return split(flat, shape);
}

// Write, in place, the customdata of each trace whose meta names its gaps' text
// (app/views/attention_maps.py's score_hover, compact): each cell [raw, scaled] becomes
// [raw, scaled, ""], or [raw, "", text] where scaled is NaN (a masked cell), as plotly.js's
// template reads them. Sent so, the text crosses the wire once, not once per masked cell.
export function writeGaps(figure) {
  for (const trace of figure.data ?? []) {
    const text = trace.meta?.gap_text;
    if (text === undefined || !trace.customdata) continue;
    trace.customdata = nested(trace.customdata).map((row) =>
      row.map(([raw, scaled]) => (Number.isNaN(scaled) ? [raw, "", text] : [raw, scaled, ""])));
    delete trace.meta;
  }
  return figure;
}

// One row of frame `frame` of `array` (n_frames, n_rows, n): a view.
function rowOf(array, frame, row) {
  const n = array.shape[2];
  const first = start(array, frame) + row * n;
  return array.values.subarray(first, first + n);
}

// Each kind gets {chart, live, frames, frame} and, for `exact`, the figure's copies to change
// ({data, layout, trace: trace 0}), for `paint`, the stop painted and what the chart then shows.
export const KINDS = {
  // The title's first line names the stop ("{scale}"); the lines under it stay the figure's.
  title: {
    exact({ live, frames, frame, layout }) {
      const [, ...rest] = (layout.title?.text ?? "").split("<br>");
      const text = [live.title.replace("{scale}", frames.titles[frame]), ...rest].join("<br>");
      layout.title = { ...(layout.title || {}), text };
    },
    paint({ chart, live, frames, frame }) {
      const title = titleText(chart.div);
      if (title) (title.querySelector("tspan.line") ?? title).textContent = live.title.replace("{scale}", frames.titles[frame]);
    },
  },
  // An array recolouring trace 0's heatmap.
  heatmap: {
    exact({ live, frames, frame, trace }) {
      trace.z = frameRows(frames.arrays[live.heatmap], frame);
    },
    paint({ chart, live, frames, frame, stop, shows }) {
      const limits = live.limits ? frames.limits[live.limits] : null;
      if (recolour(chart, frames.arrays[live.heatmap], frame, limits, shows)) chart.div.dataset.recoloured = String(stop);
      hideHover(chart);
    },
  },
  // The heatmap's colour scale spans ± a limit per frame; its colour bar is labelled to match.
  limits: {
    exact({ live, frames, frame, trace }) {
      if (!live.heatmap) return;
      const limit = frames.limits[live.limits][frame];
      Object.assign(trace, { zmin: -limit, zmax: limit, zmid: 0 });
      const ticks = frames.ticks?.[live.limits]?.[frame];
      if (ticks) trace.colorbar = { ...trace.colorbar, tickmode: "array", tickvals: ticks[0], ticktext: ticks[1] };
    },
    paint({ chart, live, frames, frame }) {
      if (live.heatmap) relabelColourBar(chart, frames.ticks?.[live.limits], frames.limits[live.limits], frame);
    },
  },
  // [[array, entry], ...]: each array fills that entry of each cell of trace 0's customdata;
  // a gap (NaN: a masked cell) becomes "", so the template's other entries speak for it. While
  // painting, no hover (it would give the figure's numbers).
  hover: {
    exact({ chart, live, frames, frame, trace }) {
      if (!trace.customdata) return;
      chart.cells ??= nested(trace.customdata); // the reference figure's, decoded once
      const slots = live.hover
        .filter(([name]) => frames.arrays[name])
        .map(([name, slot]) => [frameRows(frames.arrays[name], frame), slot]);
      trace.customdata = chart.cells.map((row, i) =>
        row.map((original, j) => {
          const cell = original.slice();
          for (const [rows, slot] of slots) cell[slot] = Number.isNaN(rows[i][j]) ? "" : rows[i][j];
          return cell;
        }));
    },
    paint() {},
  },
  // Row `live.row` of an array as trace 0's bars, coloured with `live.colors` (256 steps).
  bar: {
    exact({ live, frames, frame, trace }) {
      const row = rowOf(frames.arrays[live.bar], frame, live.row);
      trace.y = row;
      trace.marker = { ...trace.marker, color: Array.from(row, (v) => colourOf(live.colors, v)) };
    },
    paint({ chart, live, frames, frame }) {
      const array = frames.arrays[live.bar];
      const axis = laidOut(chart.div) && axisOf(chart.div, "y");
      const paths = barPaths(chart.div);
      if (!axis || paths.length !== array.shape[2]) return;
      const row = rowOf(array, frame, live.row);
      paths.forEach((path, j) => {
        const value = array.dtype === "f4" ? row[j] : valueAt(array, frame, live.row * array.shape[2] + j);
        const original = chart.paint.touched?.get(path)?.d?.original ?? path.getAttribute("d");
        touch(chart, path, "d", barTo(barCorners(original), axis.c2p(value)));
        touch(chart, path, "style", colourOf(live.colors, value), "fill");
      });
      hideHover(chart);
    },
  },
  // [array, first]: a table's columns first, first + 1, ... from the frame, one per entry of
  // the array's last axis; painted as Python wrote the numbers (frames.texts), in the cells
  // plotly.js drew, unless the table is in a closed expander (drawn when opened).
  columns: {
    exact({ live, frames, frame, trace }) {
      const [name, first] = live.columns;
      const array = frames.arrays[name];
      const [rows, width] = [array.shape[1], array.shape[2]];
      const values = trace.cells.values.slice();
      for (let c = 0; c < width; c++) {
        values[first + c] = Array.from({ length: rows }, (_, i) => array.values[start(array, frame) + i * width + c]);
      }
      trace.cells = { ...trace.cells, values };
    },
    paint({ chart, live, frames, frame }) {
      const [name, first] = live.columns;
      const [array, texts] = [frames.arrays[name], frames.texts?.[name]?.[frame]];
      if (!array || !texts || chart.div.closest("details:not([open])")) return;
      const [rows, width] = [array.shape[1], array.shape[2]];
      for (const text of cellTexts(chart.div)) {
        const cell = cellOf(text);
        const [row, column] = [cell?.row, cell?.column - first];
        if (!cell || !(column >= 0 && column < width && row < rows)) continue;
        if (text.textContent !== texts[row][column]) touch(chart, text, TEXT, texts[row][column]);
      }
    },
  },
  // Indices of layout shapes drawn at the current scale (vertical lines on log axes).
  markers: {
    exact({ live, frames, frame, layout }) {
      layout.shapes = layout.shapes.slice();
      for (const index of live.markers) {
        layout.shapes[index] = { ...layout.shapes[index], x0: frames.scales[frame], x1: frames.scales[frame] };
      }
    },
    paint({ chart, live, frames, frame }) {
      for (const index of live.markers) {
        const [shape, path] = [shapeOf(chart.div, index), shapePath(chart.div, index)];
        if (!shape || !path) continue;
        const axis = axisOf(chart.div, shape.xref);
        touch(chart, path, "transform", `translate(${axis.c2p(frames.scales[frame]) - axis.c2p(shape.x0)},0)`);
      }
    },
  },
  // An array (n_frames, n_lines, n_points): the y of line traces 0, 1, ...
  curves: {
    exact({ live, frames, frame, data }) {
      const array = frames.arrays[live.curves];
      if (array) frameRows(array, frame).forEach((row, t) => (data[t] = { ...data[t], y: row }));
    },
    paint({ chart, live, frames, frame }) {
      const [array, full, paths] = [frames.arrays[live.curves], fullTraces(chart.div), linePaths(chart.div)];
      if (!array || !full || paths.length < array.shape[1]) return;
      const [lines, points] = [array.shape[1], array.shape[2]];
      for (let t = 0; t < lines; t++) {
        const [xaxis, yaxis] = [axisOf(chart.div, full[t].xaxis), axisOf(chart.div, full[t].yaxis)];
        let d = "";
        for (let j = 0; j < points; j++) {
          d += `${j ? "L" : "M"}${xaxis.c2p(full[t].x[j])},${yaxis.c2p(valueAt(array, frame, t * points + j))}`;
        }
        touch(chart, paths[t], "d", d);
      }
      hideHover(chart);
    },
  },
};

// The kinds `live` binds, in the table's order.
const bound = (live) => Object.keys(KINDS).filter((name) => live[name] !== undefined && live[name] !== null);

// The exact figure of frame `frame` of `frames` for `chart` (its reference figure, chart.figure).
export function figureAt(chart, frames, frame) {
  const { live, figure } = chart;
  const data = figure.data.slice();
  data[0] = { ...data[0] }; // the kinds change copies: trace 0's (`trace`), the layout's
  const context = { chart, live, frames, frame, data, layout: { ...figure.layout }, trace: data[0] };
  for (const name of bound(live)) KINDS[name].exact(context);
  return { data, layout: context.layout };
}

// Paint frame `frame` of `frames` over `chart`'s drawing: the slider's `stop`, which the chart
// then shows as `shows` ("frames id:head:stop").
export function paint(chart, frames, frame, stop, shows) {
  const context = { chart, live: chart.live, frames, frame, stop, shows };
  for (const name of bound(chart.live)) KINDS[name].paint(context);
}
