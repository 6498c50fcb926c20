// The preview while a control moves: a frame painted over what plotly.js drew, each binding
// kind by its own painter (bindings.js), since a replot is too slow for every frame of a drag;
// here what they share: the heatmap's canvas and colour bar, the record of what was touched.
// restorePlotly gives plotly.js its drawing back. Each frame painted is announced as an
// "ae-frame" event.

import { paint } from "./bindings.js";
import { colourBar, fullTrace, heatmapImage, laidOut, UNDER_PREVIEW } from "./plotly_parts.js";
import { framesAt, otherFrames, shownKey, start as startOf, valueAt } from "./frames.js";
import { addStyle } from "./theme.js";

const SVG = "http://www.w3.org/2000/svg";
export const TEXT = "textContent"; // an element's text, touched as if it were an attribute

// What a preview paints over is hidden while the chart is marked so (plotly_parts.js).
const hidden = Object.entries(UNDER_PREVIEW).map(([mark, part]) => `.ae-chart[${mark}] ${part}`);
addStyle("ae-preview-style", `${hidden.join(", ")} { visibility: hidden; }
.ae-chart.ae-waiting { opacity: 0.4; transition: opacity 0.15s; }`);

// 256 RGBA colours along a Plotly colour scale ([[t, css colour], ...]).
function colourTable(colorscale) {
  const ctx = Object.assign(document.createElement("canvas"), { width: 256, height: 1 }).getContext("2d");
  const gradient = ctx.createLinearGradient(0, 0, 256, 0);
  for (const [t, colour] of colorscale) gradient.addColorStop(t, colour);
  ctx.fillStyle = gradient;
  ctx.fillRect(0, 0, 256, 1);
  return new Uint32Array(ctx.getImageData(0, 0, 256, 1).data.buffer);
}

// Frame `frame` of `array` on a canvas of one pixel a cell over trace 0's heatmap image, at
// its place and size (our heatmaps' y axes are reversed: rows top to bottom). Whether painted.
export function recolour(chart, array, frame, limits, shows) {
  const [image, full] = [heatmapImage(chart.div), fullTrace(chart.div)];
  if (!image || !full) return false;
  chart.paint.colours ??= colourTable(full.colorscale);
  const [rows, cols] = [array.shape[1], array.shape[2]];
  const shown = [full.z.length, full.z[0].length]; // a cropped figure shows fewer columns
  const [zmin, zmax] = limits ? [-limits[frame], limits[frame]] : [full.zmin, full.zmax];
  let preview = chart.paint.recoloured;
  if (preview?.image !== image || !preview.holder.isConnected) {
    chart.paint.recoloured?.holder.remove();
    const holder = document.createElementNS(SVG, "foreignObject");
    const canvas = Object.assign(document.createElement("canvas"), { width: shown[1], height: shown[0] });
    canvas.className = "ae-preview";
    canvas.style.cssText = "display: block; width: 100%; height: 100%; image-rendering: pixelated";
    holder.appendChild(canvas);
    image.after(holder);
    const ctx = canvas.getContext("2d");
    const pixels = ctx.createImageData(shown[1], shown[0]);
    preview = { image, holder, canvas, ctx, pixels, words: new Uint32Array(pixels.data.buffer) };
    chart.paint.recoloured = preview;
  }
  for (const name of ["x", "y", "width", "height", "transform"]) {
    if (image.hasAttribute(name)) preview.holder.setAttribute(name, image.getAttribute(name));
  }
  const span = zmax - zmin || 1;
  const first = startOf(array, frame);
  for (let i = 0; i < shown[0]; i++) {
    for (let j = 0; j < shown[1]; j++) {
      let word = 0; // transparent, like Plotly's gaps
      if (i < rows && j < cols) {
        const v = array.dtype === "f4" ? array.values[first + i * cols + j] : valueAt(array, frame, i * cols + j);
        if (!Number.isNaN(v)) word = chart.paint.colours[Math.max(0, Math.min(255, Math.round(((v - zmin) / span) * 255)))];
      }
      preview.words[i * shown[1] + j] = word;
    }
  }
  preview.ctx.putImageData(preview.pixels, 0, 0);
  preview.canvas.dataset.shows = shows; // what the canvas shows, "frames id:head:stop"
  return true;
}

// The colour bar's ticks for frame `frame` (± `limits[frame]`), each where the bar shows it.
export function relabelColourBar(chart, ticks, limits, frame) {
  const bar = colourBar(chart.div);
  if (!bar || !ticks) return;
  if (!chart.paint.ticks?.isConnected) {
    chart.paint.ticks = document.createElementNS(SVG, "g");
    chart.paint.ticks.setAttribute("class", "ae-cbticks");
    bar.axis.after(chart.paint.ticks);
  }
  const [values, labels] = ticks[frame];
  const limit = limits[frame] || 1;
  const [top, height] = [Number(bar.fill.getAttribute("y")), Number(bar.fill.getAttribute("height"))];
  const copies = values.map(() => bar.tick.cloneNode(true));
  for (const tick of copies) tick.removeAttribute("class");
  chart.paint.ticks.replaceChildren(...copies);
  // One pair of matrices for every label until Plotly draws again: reading one after a write
  // forces a layout.
  if (copies.length) chart.paint.tickMatrices ??= [bar.fill.getCTM(), copies[0].getCTM().inverse()];
  copies.forEach((tick, i) => {
    const text = tick.querySelector("text");
    const y = top + height * (1 - (values[i] + limit) / (2 * limit)); // the bar runs up from -limit
    const at = new DOMPoint(0, y).matrixTransform(chart.paint.tickMatrices[0]).matrixTransform(chart.paint.tickMatrices[1]);
    text.textContent = labels[i];
    text.removeAttribute("data-unformatted");
    text.setAttribute("transform", `translate(0,${at.y})`);
  });
  chart.div.dataset.colourBar = String(frame);
}

// Give Plotly back its drawing. What the preview wrote and Plotly has not drawn since is put
// back, unless Plotly.react just drew the frame the preview showed (`drawnAgain`).
export function restorePlotly(chart, drawnAgain = false) {
  chart.paint.recoloured?.holder.remove();
  chart.paint.ticks?.remove();
  Object.assign(chart.paint, { recoloured: null, ticks: null, tickMatrices: null });
  const { dataset } = chart.div;
  if (dataset.hoverHidden) window.Plotly?.Fx.unhover(chart.div); // a label of the figure before
  for (const mark of ["recoloured", "colourBar", "hoverHidden"]) delete dataset[mark];
  for (const [element, record] of drawnAgain ? [] : chart.paint.touched || []) {
    for (const [attr, { original, ours }] of Object.entries(record)) {
      if (read(element, attr) !== ours) continue; // Plotly has drawn it since
      if (attr === TEXT) setText(element, original);
      else if (original === null) element.removeAttribute(attr);
      else element.setAttribute(attr, original);
    }
  }
  chart.paint.touched = null;
}

// Set an attribute (or a style property, or TEXT) Plotly drew, keeping Plotly's for restorePlotly.
export function touch(chart, element, attr, value, property) {
  chart.paint.touched ??= new Map();
  if (!chart.paint.touched.has(element)) chart.paint.touched.set(element, {});
  const record = chart.paint.touched.get(element);
  record[attr] ??= { original: read(element, attr) };
  if (property) element.style[property] = value;
  else if (attr === TEXT) setText(element, value);
  else element.setAttribute(attr, value);
  record[attr].ours = read(element, attr);
}

// A text node changed in place: cheaper to lay out than a new node.
function setText(element, value) {
  if (element.childNodes.length === 1 && element.firstChild.nodeType === Node.TEXT_NODE) {
    element.firstChild.nodeValue = value;
  } else {
    element.textContent = value;
  }
}

const read = (element, attr) => (attr === TEXT ? element.textContent : element.getAttribute(attr));

// A hover label would give the figure's numbers, not the frame's: none until Plotly draws it.
export function hideHover(chart) {
  if (chart.div.dataset.hoverHidden) return;
  window.Plotly?.Fx.unhover(chart.div);
  chart.div.dataset.hoverHidden = "1";
}

// Show `stop` and the head on every chart that follows `src`; with `other` ({axis, index}: a
// layer, or the mask 0 or 1), that one's from the frames along its axis, until its run.
// Returns whether frames of the stop were held (else nothing was painted).
export function showFrame(src, stop, other = null) {
  const started = performance.now();
  const parts = {};
  const along = other === null ? null : otherFrames(src, other.axis);
  if (other !== null && !(along && other.index >= 0 && other.index < along.scales.length)) return;
  let held = false;
  for (const chart of src.charts) {
    const live = chart.live;
    // past 128 tokens the stop's own frames may be still to come
    const found = along ? { frames: along, frame: other.index } : framesAt(src, stop, live.frames);
    held ||= found !== null;
    if (!found || !chart.div.isConnected || !laidOut(chart.div)) continue;
    if (!along && chart.shows === shownKey(chart, src.head, stop)) {
      if (!chart.drawing) restorePlotly(chart); // back on what was drawn: Plotly's own
      continue;
    }
    const { frames, frame } = found;
    const begun = performance.now();
    const shows = along ? `${other.axis} ${other.index}:${src.head}:${stop}` : shownKey(chart, src.head, stop);
    paint(chart, frames, frame, stop, shows);
    parts[chart.key] = performance.now() - begun;
  }
  // Past 128 tokens a drag runs past the stops held: the charts, still at the last stop
  // drawn, are dimmed until its frames come (at the release), and the slider says so.
  if (other === null) for (const chart of src.charts) chart.div.classList.toggle("ae-waiting", !held);
  if (!held) return false; // no frames of this stop yet: nothing was painted
  const detail = { stop, head: src.head, other, started, painted: performance.now(), parts };
  window.dispatchEvent(new CustomEvent("ae-frame", { detail }));
  return true;
}
