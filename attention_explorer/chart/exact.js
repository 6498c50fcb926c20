// The exact figure of a stop: the chart's reference figure with the engine's float32 numbers
// of that stop in place. Indexing only: colours, cell and hover text follow from the numbers,
// drawn by plotly.js with Python's texttemplate and hovertemplate: nothing is formatted here.

import { frameRows, start } from "./frames.js";

const TYPES = { f4: Float32Array, f8: Float64Array, i4: Int32Array, u1: Uint8Array };

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

// `customdata` (rows of cells, each a list) with entry `slot` of each cell from `rows`, for
// each [rows, slot] of `slots`. A gap (NaN: a masked cell) becomes "", which plotly.js writes
// as it is, so the template's other entries (Python's note for such a cell) speak for it.
function withSlots(customdata, slots) {
  return customdata.map((row, i) =>
    row.map((original, j) => {
      const cell = original.slice();
      for (const [rows, slot] of slots) {
        const v = rows[i][j];
        cell[slot] = Number.isNaN(v) ? "" : v;
      }
      return cell;
    }));
}

// The figure of frame `frame` of `frames`; the chart's `live` binding says where each array
// goes (app/live/protocol.py's follow).
export function figureAt(chart, frames, frame) {
  const live = chart.live;
  const figure = chart.figure;
  const data = figure.data.slice();
  const layout = { ...figure.layout };
  const trace = { ...data[0] };
  if (live.title) {
    // The title's first line names the stop; the lines under it stay the figure's.
    const [, ...rest] = (layout.title?.text ?? "").split("<br>");
    const text = [live.title.replace("{scale}", frames.titles[frame]), ...rest].join("<br>");
    layout.title = { ...(layout.title || {}), text };
  }
  if (live.heatmap) {
    trace.z = frameRows(frames.arrays[live.heatmap], frame);
    if (live.limits) {
      const limit = frames.limits[live.limits][frame];
      Object.assign(trace, { zmin: -limit, zmax: limit, zmid: 0 });
      const ticks = frames.ticks?.[live.limits]?.[frame];
      if (ticks) trace.colorbar = { ...trace.colorbar, tickmode: "array", tickvals: ticks[0], ticktext: ticks[1] };
    }
  }
  if (live.hover && trace.customdata) {
    chart.cells ??= nested(trace.customdata); // the reference figure's, decoded once
    const slots = live.hover
      .filter(([name]) => frames.arrays[name])
      .map(([name, slot]) => [frameRows(frames.arrays[name], frame), slot]);
    trace.customdata = withSlots(chart.cells, slots);
  }
  if (live.bar) {
    const array = frames.arrays[live.bar];
    const n = array.shape[2];
    const first = start(array, frame);
    const row = array.values.subarray(first + live.row * n, first + (live.row + 1) * n);
    trace.y = row;
    trace.marker = { ...trace.marker, color: Array.from(row, (v) => live.colors[Math.max(0, Math.min(255, Math.round(v * 255)))]) };
  }
  if (live.columns) {
    // A table: columns first, first + 1, ... are the stop's frame, one per last axis entry.
    const [name, first] = live.columns;
    const array = frames.arrays[name];
    const [rows, width] = [array.shape[1], array.shape[2]];
    const values = trace.cells.values.slice();
    for (let c = 0; c < width; c++) {
      values[first + c] = Array.from({ length: rows }, (_, i) => array.values[start(array, frame) + i * width + c]);
    }
    trace.cells = { ...trace.cells, values };
  }
  if (live.markers) {
    layout.shapes = layout.shapes.slice();
    for (const index of live.markers) {
      layout.shapes[index] = { ...layout.shapes[index], x0: frames.scales[frame], x1: frames.scales[frame] };
    }
  }
  data[0] = trace;
  if (live.curves && frames.arrays[live.curves]) {
    // Line traces 0, 1, ...: one row of the frame each.
    const array = frames.arrays[live.curves];
    frameRows(array, frame).forEach((row, t) => (data[t] = { ...(t ? data[t] : trace), y: row }));
  }
  return { data, layout };
}
