// The preview of a stop while the slider moves: one frame on every chart that follows it.
//
// A canvas over a heatmap's image shows the frame (indexing and colour mapping only, no
// maths), bars are restyled, markers moved, titles relabelled, tables' numbers rewritten,
// and a recoloured heatmap's colour bar gets the frame's ticks. Whatever is touched here is
// Plotly's to draw again: restorePlotly puts Plotly's own drawing back once the exact
// figure is drawn. Each frame painted is announced to the page as an "ae-frame" event (its
// stop and timings).

import {
  axisOf, barCorners, barPaths, barTo, cellOf, cellTexts, colourBar, drawn, fullTrace, fullTraces,
  heatmapImage, hoverLayer, linePaths, shapeOf, shapePath, titleText,
} from "./plotly_parts.js";
import { framesAt, otherFrames, shownKey, start as startOf, valueAt } from "./frames.js";

// 256 RGBA colours along a Plotly colour scale ([[t, css colour], ...]), drawn by the canvas.
function colourTable(colorscale) {
  const canvas = document.createElement("canvas");
  canvas.width = 256;
  canvas.height = 1;
  const ctx = canvas.getContext("2d");
  const gradient = ctx.createLinearGradient(0, 0, 256, 0);
  for (const [t, colour] of colorscale) gradient.addColorStop(t, colour);
  ctx.fillStyle = gradient;
  ctx.fillRect(0, 0, 256, 1);
  return ctx.getImageData(0, 0, 256, 1).data;
}

// Show frame `stop` of `array` over the heatmap image Plotly drew for trace 0: a canvas
// of one pixel per cell, in a foreignObject at the image's place and size (stretched
// like it, pixelated), written with putImageData, while the image under it is hidden.
// Rows are the canvas's rows, top to bottom, as the reversed y axes of our heatmaps draw
// them. The canvas goes and Plotly's image comes back with the exact figure (restorePlotly).
function recolour(chart, array, stop, limits, shows) {
  const image = heatmapImage(chart.div);
  const full = fullTrace(chart.div);
  if (!image || !full) return;
  if (!chart.table) chart.table = new Uint32Array(colourTable(full.colorscale).buffer);
  const [rows, cols] = [array.shape[1], array.shape[2]];
  const shown = [full.z.length, full.z[0].length]; // a cropped figure shows fewer columns
  const [zmin, zmax] = limits ? [-limits[stop], limits[stop]] : [full.zmin, full.zmax];
  let preview = chart.preview;
  if (!preview || preview.image !== image || !preview.holder.isConnected) {
    removePreview(chart);
    const holder = document.createElementNS(SVG, "foreignObject");
    const canvas = document.createElement("canvas");
    canvas.className = "ae-preview";
    canvas.style.cssText = "display: block; width: 100%; height: 100%; image-rendering: pixelated";
    [canvas.width, canvas.height] = [shown[1], shown[0]];
    holder.appendChild(canvas);
    image.after(holder);
    const ctx = canvas.getContext("2d");
    preview = { image, holder, canvas, ctx, pixels: ctx.createImageData(shown[1], shown[0]) };
    preview.words = new Uint32Array(preview.pixels.data.buffer);
    preview.style = image.getAttribute("style");
    image.style.visibility = "hidden"; // what is seen is the canvas, whatever its gaps
    chart.preview = preview;
  }
  for (const name of ["x", "y", "width", "height", "transform"]) {
    if (image.hasAttribute(name)) preview.holder.setAttribute(name, image.getAttribute(name));
  }
  const { words, pixels } = preview;
  const span = zmax - zmin || 1;
  const start = startOf(array, stop);
  const float = array.dtype === "f4";
  for (let i = 0; i < shown[0]; i++) {
    for (let j = 0; j < shown[1]; j++) {
      let word = 0; // transparent, like Plotly's gaps
      if (i < rows && j < cols) {
        const v = float ? array.values[start + i * cols + j] : valueAt(array, stop, i * cols + j);
        if (!Number.isNaN(v)) word = chart.table[Math.max(0, Math.min(255, Math.round(((v - zmin) / span) * 255)))];
      }
      words[i * shown[1] + j] = word;
    }
  }
  preview.ctx.putImageData(pixels, 0, 0);
  preview.canvas.dataset.shows = shows; // what the canvas shows, "frames id:stop"
}

const SVG = "http://www.w3.org/2000/svg";

// The colour bar of a heatmap recoloured at frame `stop` with ± `limits[stop]`: the
// frame's ticks (values and labels from the engine's frames) in place of Plotly's, each
// put where the bar shows its value, as the canvas maps values to colours. Plotly's own
// labels are hidden until it draws the figure again (restorePlotly).
function relabelColourBar(chart, ticks, limits, stop) {
  const bar = colourBar(chart.div);
  if (!bar || !ticks) return;
  const { fill, axis, tick: model } = bar; // model: one of Plotly's tick labels
  touch(chart, axis, "style", "hidden", "visibility");
  let ours = chart.colourBarTicks;
  if (!ours || !ours.isConnected) {
    ours = document.createElementNS(SVG, "g");
    ours.setAttribute("class", "ae-cbticks");
    axis.after(ours);
    chart.colourBarTicks = ours;
  }
  const [values, labels] = ticks[stop];
  const limit = limits[stop] || 1;
  const [top, height] = [Number(fill.getAttribute("y")), Number(fill.getAttribute("height"))];
  const copies = values.map(() => model.cloneNode(true));
  for (const tick of copies) tick.removeAttribute("class");
  ours.replaceChildren(...copies);
  // The copies share their group and attributes, so one pair of matrices takes the bar's
  // y to every label's, until Plotly draws the chart again (restorePlotly forgets them):
  // a CTM read after a write forces a layout, and one per label was most of a drag's
  // frame (docs/benchmarks.md).
  if (copies.length && !chart.colourBarMatrices) {
    chart.colourBarMatrices = [fill.getCTM(), copies[0].getCTM().inverse()];
  }
  const [fromBar, toLabel] = chart.colourBarMatrices ?? [];
  copies.forEach((tick, i) => {
    const text = tick.querySelector("text");
    const y = top + height * (1 - (values[i] + limit) / (2 * limit)); // the bar runs up from -limit
    const at = new DOMPoint(0, y).matrixTransform(fromBar).matrixTransform(toLabel);
    text.textContent = labels[i];
    text.removeAttribute("data-unformatted");
    text.setAttribute("transform", `translate(0,${at.y})`);
  });
  chart.div.dataset.colourBar = String(stop);
}

// Take the preview canvas away and show Plotly's image again.
function removePreview(chart) {
  const preview = chart.preview;
  if (!preview) return;
  preview.holder.remove();
  if (preview.image.isConnected) {
    if (preview.style === null) preview.image.removeAttribute("style");
    else preview.image.setAttribute("style", preview.style);
  }
  chart.preview = null;
}

// Give Plotly back its own drawing: after a drag ends on the stop already drawn, or after
// Plotly.react (which leaves an image alone when the figure did not change). `written`:
// the attributes Plotly.react wrote, by element, whatever their value; without it, an
// attribute that still holds the preview's value is taken as one Plotly left alone.
export function restorePlotly(chart, written = null) {
  removePreview(chart);
  chart.colourBarTicks?.remove();
  chart.colourBarTicks = null;
  chart.colourBarMatrices = null;
  delete chart.div.dataset.recoloured;
  delete chart.div.dataset.colourBar;
  // A label made while the hover was hidden holds the numbers of the figure before.
  if (chart.hoverHidden) window.Plotly?.Fx.unhover(chart.div);
  chart.hoverHidden = false;
  for (const [element, record] of chart.touched || []) {
    for (const [attr, { original, ours }] of Object.entries(record)) {
      if (read(element, attr) !== ours) continue; // Plotly has drawn it again
      if (written?.get(element)?.has(attr)) continue; // the same, and Plotly's own now
      if (attr === TEXT && redrawn(element)) continue; // the same text, Plotly's own now
      if (attr === TEXT) setText(element, original);
      else if (original === null) element.removeAttribute(attr);
      else element.setAttribute(attr, original);
    }
  }
  for (const text of chart.valued ?? []) delete text.aeValue;
  chart.valued = null;
  chart.touched = null;
}

// Set an attribute (or one style property) that Plotly drew, remembering Plotly's value so
// that restorePlotly can put it back if Plotly has not redrawn the element since.
// TEXT names an element's text as if it were an attribute.
function touch(chart, element, attr, value, property) {
  if (!chart.touched) chart.touched = new Map();
  if (!chart.touched.has(element)) chart.touched.set(element, {});
  const record = chart.touched.get(element);
  if (!(attr in record)) record[attr] = { original: read(element, attr) };
  if (property) element.style[property] = value;
  else if (attr === TEXT) setText(element, value);
  else element.setAttribute(attr, value);
  record[attr].ours = read(element, attr);
}

const TEXT = "textContent";

// Whether plotly.js has drawn a table cell whose text we wrote, with the number we wrote
// (then it wrote the same text, and the cell is its own again).
function redrawn(text) {
  return text.aeValue !== undefined && text.aeValue === cellOf(text)?.value;
}

// A text's one text node changed in place (cheaper to lay out than a new node).
function setText(element, value) {
  if (element.childNodes.length === 1 && element.firstChild.nodeType === Node.TEXT_NODE) {
    element.firstChild.nodeValue = value;
  } else {
    element.textContent = value;
  }
}

function read(element, attr) {
  return attr === TEXT ? element.textContent : element.getAttribute(attr);
}

// While a chart shows a stop its figure does not hold, a hover label would give the
// figure's numbers, not the ones seen: hide the labels until Plotly draws that stop.
function hideHover(chart) {
  const layer = hoverLayer(chart.div);
  if (!layer || chart.hoverHidden) return;
  window.Plotly?.Fx.unhover(chart.div);
  touch(chart, layer, "style", "hidden", "visibility");
  chart.hoverHidden = true;
}

// Bars of trace 0 at frame `stop`: one row of `array`, heights and colours. Plotly draws a
// bar as "M x0,y0 V y1 H x1 V y0 Z"; only y1 and the fill change.
function moveBars(chart, array, stop, row, colours) {
  const axis = drawn(chart.div) && axisOf(chart.div, "y");
  const paths = barPaths(chart.div);
  const n = array.shape[2];
  if (!axis || paths.length !== n) return;
  paths.forEach((path, j) => {
    const value = valueAt(array, stop, row * n + j);
    const original = chart.touched?.get(path)?.d?.original ?? path.getAttribute("d");
    touch(chart, path, "d", barTo(barCorners(original), axis.c2p(value)));
    const colour = colours[Math.max(0, Math.min(255, Math.round(value * 255)))];
    touch(chart, path, "style", colour, "fill");
  });
}

// Shapes at the current scale (vertical lines on log axes) moved to `scale`.
function moveMarkers(chart, indices, scale) {
  for (const index of indices) {
    const [shape, path] = [shapeOf(chart.div, index), shapePath(chart.div, index)];
    if (!shape || !path) continue;
    const axis = axisOf(chart.div, shape.xref);
    const shift = axis.c2p(scale) - axis.c2p(shape.x0);
    touch(chart, path, "transform", `translate(${shift},0)`);
  }
}

// The line traces 0, 1, ... at frame `frame` of `array` (n_lines, n_points per frame): each
// trace's path redrawn through its points, on the axes Plotly laid out (their ranges are
// fixed by Python, the same for every head).
function moveCurves(chart, array, frame) {
  const full = fullTraces(chart.div);
  const paths = linePaths(chart.div);
  const [lines, points] = [array.shape[1], array.shape[2]];
  if (!full || paths.length < lines) return;
  for (let t = 0; t < lines; t++) {
    const trace = full[t];
    const [xaxis, yaxis] = [axisOf(chart.div, trace.xaxis), axisOf(chart.div, trace.yaxis)];
    let d = "";
    for (let j = 0; j < points; j++) {
      const [x, y] = [xaxis.c2p(trace.x[j]), yaxis.c2p(valueAt(array, frame, t * points + j))];
      d += `${j ? "L" : "M"}${x},${y}`;
    }
    touch(chart, paths[t], "d", d);
  }
}

// A table's columns `first`, `first` + 1, ... at frame `stop` of the frames' array
// `name` (n_rows, n_columns per frame): each body cell that plotly.js drew (a long table
// draws the rows in view) gets the frame's text, as Python wrote the number with the
// table's format (frames.texts), and keeps the number in its aeValue until Plotly draws it.
function setColumns(chart, frames, name, stop, first) {
  const [array, texts] = [frames.arrays[name], frames.texts?.[name]?.[stop]];
  if (!array || !texts) return;
  const [rows, width] = [array.shape[1], array.shape[2]];
  for (const text of cellTexts(chart.div)) {
    const cell = cellOf(text);
    if (!cell) continue;
    const [row, column] = [cell.row, cell.column - first];
    if (!(column >= 0 && column < width && row < rows)) continue;
    const shown = texts[row][column];
    if (text.textContent !== shown) touch(chart, text, TEXT, shown);
    text.aeValue = valueAt(array, stop, row * width + column); // a property: no restyle
    (chart.valued ??= new Set()).add(text);
  }
}

// Show the slider's `stop` and the head shown on every chart that follows `src`, from the
// frames held for them; with `other` ({axis, index}: a layer, or the mask off 0 or on 1),
// that one's, from the frames held along its axis (otherFrames), until the run that
// brings it draws it.
export function showFrame(src, stop, other = null) {
  const started = performance.now();
  const parts = {};
  const along = other === null ? null : otherFrames(src, other.axis);
  if (other !== null && !(along && other.index >= 0 && other.index < along.scales.length)) return;
  let held = false;
  for (const chart of src.charts) {
    const live = chart.live;
    // Frames of other stops only (past 128 tokens): wait for the stop's own.
    const found = along ? { frames: along, frame: other.index } : framesAt(src, stop, live.frames);
    held ||= found !== null;
    // not yet drawn by Plotly (the frames of one stop may come before a chart's first draw)
    if (!found || !chart.div.isConnected || !drawn(chart.div)) continue;
    if (!along && chart.shows === shownKey(chart, src.head, stop)) {
      if (!chart.reacting) restorePlotly(chart); // back on the stop drawn: Plotly's own
      continue;
    }
    const { frames, frame } = found;
    const begun = performance.now();
    if (live.title) {
      const title = titleText(chart.div);
      const text = live.title.replace("{scale}", frames.titles[frame]); // the first line
      const lines = title ? title.querySelectorAll("tspan.line") : [];
      if (lines.length) lines[0].textContent = text;
      else if (title) title.textContent = text;
    }
    if (live.heatmap) {
      const array = frames.arrays[live.heatmap];
      const shows = along ? `${other.axis} ${other.index}:${src.head}:${stop}` : shownKey(chart, src.head, stop);
      recolour(chart, array, frame, live.limits ? frames.limits[live.limits] : null, shows);
      chart.div.dataset.recoloured = String(stop);
      if (live.limits) relabelColourBar(chart, frames.ticks?.[live.limits], frames.limits[live.limits], frame);
    }
    if (live.bar) moveBars(chart, frames.arrays[live.bar], frame, live.row, live.colors);
    if (live.markers) moveMarkers(chart, live.markers, frames.scales[frame]);
    if (live.curves && frames.arrays[live.curves]) moveCurves(chart, frames.arrays[live.curves], frame);
    // a table in a closed expander is drawn at the stop when it is opened (plot.js, folded)
    const hidden = chart.div.closest("details:not([open])");
    if (live.columns && !hidden) setColumns(chart, frames, live.columns[0], frame, live.columns[1]);
    if (live.heatmap || live.bar || live.curves) hideHover(chart);
    parts[chart.key] = performance.now() - begun;
  }
  if (!held) return; // no frames of this stop yet: nothing was painted
  const painted = performance.now();
  const detail = { stop, head: src.head, other, started, painted, parts };
  window.dispatchEvent(new CustomEvent("ae-frame", { detail }));
}
