// Attention Explorer's chart component: every chart in the app, kept mounted by its key,
// and the scale slider that plays engine-computed frames while it is dragged.
//
// Streamlit calls the default export on mount and again whenever the element's data change.
// A chart stays in the same element and is updated in place with Plotly.react (no remount).
// plotly.js is the copy served beside this file, never a CDN; importing it at the top
// starts the 4.6 MB download when the first chart's script loads.
//
// Four kinds of data arrive from Python (app/render.py, app/controls.py):
//   chart   {spec: figure JSON string, config, clicks: bool, live?: {...}}
//   scale   {kind: "scale", source, label, stops, stop, placed, labels?: [text per stop] (else in frames)}
//   frames  bytes: [uint32 header length][header JSON][pad to 8][arrays], see decodeFrames;
//           every stop's in one element, or (past 128 tokens) one stop's per element: the
//           current stop's and its neighbours', a release sending the stop that came in reach
//   viewport {kind: "viewport", known: [width, height]}: presentation mode's screen, see mountViewport
// While the slider moves, the charts whose `live` names its source show the frame of the
// stop under the pointer: a canvas over their heatmap image shows the frame (indexing and
// colour mapping only, no maths), bars are restyled, markers moved, titles relabelled. On
// release the stop goes back to Python. A chart whose `live.drawn` is set got a reference figure (the same
// data at every stop, so Streamlit resends only a reference to it): with float32 frames
// the exact figure of any stop is that figure with the stop's frame put in (figureAt),
// drawn by Plotly.react at release; Python then reruns only the slider. Otherwise
// Python sends the exact figures and Plotly.react draws them. A heatmap recoloured from
// frames gets the frame's colour-bar ticks too, so its bar reads the stop shown.
// On a narrow screen each chart is fitted after it is drawn (fitNarrow): a title wraps
// to the chart's width, the mode bar leaves a title it would cover, a crowded figure is
// drawn wider in a column that scrolls, a short table shows every row.

const plotlyReady = import("./plotly.min.js").then(() => window.Plotly);

// On the tour, a new step starts at its heading even when the reader had scrolled down to
// the figure. Here, in a script the app serves, rather than inline: a Content-Security-
// Policy (scripts/serve_class.sh) allows no inline scripts of ours.
if (!window.__aeScrollOnNewHeading) {
  window.__aeScrollOnNewHeading = true;
  let heading; // undefined until the first heading is seen
  new MutationObserver(() => {
    const h1 = document.querySelector('[data-testid="stMain"] h1');
    const text = h1 ? h1.textContent : null;
    if (text === heading) return;
    if (heading !== undefined && location.pathname.endsWith("/tour")) {
      for (const pane of [document.scrollingElement, ...document.querySelectorAll('[data-testid="stMain"]')]) {
        pane.scrollTo({ top: 0 });
      }
    }
    heading = text;
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
}

const elements = new WeakMap(); // parentElement -> chart or slider state
const sources = new Map(); // slider key -> {held: Map(element -> frames), stop, charts: Set, sent}

function source(name) {
  if (!sources.has(name)) sources.set(name, { held: new Map(), stop: null, sent: null, slider: null, charts: new Set() });
  return sources.get(name);
}

// The frames `src` holds for the slider's `stop`, named `id` (any name when omitted), or
// null. Each frames element holds one set: every stop's, or one stop's. An element may
// be mounted before it is in the page: its frames count from the mount and are forgotten
// when it has left the page (the cleanup at the end of this file).
function framesAt(src, stop, id) {
  for (const frames of src.held.values()) {
    if ((id === undefined || frames.id === id) && frameOf(frames, stop) >= 0) return frames;
  }
  return null;
}

// Whether `src` holds frames named `id`, whatever their stops.
function holds(src, id) {
  return [...src.held.values()].some((frames) => frames.id === id);
}

// ---- theme ---------------------------------------------------------------------------------

// The theme's CSS variables that themed() reads, as one string (a change redraws).
function themeKey(element) {
  const css = getComputedStyle(element);
  return ["--st-text-color", "--st-font", "--st-border-color-light"].map((name) => css.getPropertyValue(name)).join("|");
}

// Streamlit's theme, from the CSS variables its component wrapper carries.
function themed(layout, element) {
  const css = getComputedStyle(element);
  const text = css.getPropertyValue("--st-text-color").trim() || undefined;
  const font = css.getPropertyValue("--st-font").trim() || undefined;
  const grid = css.getPropertyValue("--st-border-color-light").trim() || undefined;
  const axis = { automargin: true, gridcolor: grid, zerolinecolor: grid };
  const out = {
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    ...layout,
    font: { color: text, family: font, ...(layout.font || {}) },
  };
  for (const name of ["xaxis", "yaxis", ...Object.keys(out).filter((n) => /^[xy]axis\d+$/.test(n))]) {
    out[name] = { ...axis, ...(out[name] || {}) };
  }
  return out;
}

// ---- frames --------------------------------------------------------------------------------

// Header: {source, id, first, scales, titles, limits, ticks, labels, arrays: {name: {dtype,
// shape, offset, lo?, hi?}}}; limits[name][f] spans the colour scale of frame f (± it),
// ticks[name][f] its colour bar's [values, labels]. dtype "f4" is float32; "u2" is 16-bit fixed point over [lo, hi],
// 65535 marking a gap (a masked cell). Arrays are (n_frames, ...) in C order; frame f is
// the slider's stop first + f (first is 0 when the frames hold every stop).
function decodeFrames(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length)));
  const start = 4 + length + ((8 - ((4 + length) % 8)) % 8);
  const body = bytes.slice(start).buffer; // aligned copy
  const arrays = {};
  for (const [name, info] of Object.entries(header.arrays)) {
    const count = info.shape.reduce((a, b) => a * b, 1);
    const values =
      info.dtype === "f4"
        ? new Float32Array(body, info.offset, count)
        : new Uint16Array(body, info.offset, count);
    arrays[name] = { ...info, values, size: count / info.shape[0] };
  }
  return { ...header, arrays };
}

// The frame of the slider's `stop` in `frames`, or -1 when they do not hold it.
function frameOf(frames, stop) {
  const frame = stop - (frames.first || 0);
  return frame >= 0 && frame < frames.scales.length ? frame : -1;
}

// The value at flat position `index` of frame `stop`, as a number (NaN for a gap).
function valueAt(array, stop, index) {
  const raw = array.values[stop * array.size + index];
  if (array.dtype === "f4") return raw;
  return raw === 65535 ? NaN : array.lo + (raw / 65534) * (array.hi - array.lo);
}

// ---- colour mapping ------------------------------------------------------------------------

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
  const image = chart.div.querySelector(".heatmaplayer image");
  const full = chart.div._fullData && chart.div._fullData[0];
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
  const start = stop * array.size;
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
  const bar = chart.div.querySelector(".colorbar");
  const fill = bar?.querySelector(".cbfill");
  const axis = bar?.querySelector(".cbaxis");
  const model = axis?.querySelector(":scope > g"); // one of Plotly's tick labels
  if (!fill || !model || !ticks) return;
  touch(chart, axis, "style", "hidden", "visibility");
  let ours = chart.colourBarTicks;
  if (!ours || !ours.isConnected) {
    ours = document.createElementNS(SVG, "g");
    ours.setAttribute("class", "ae-cbticks");
    axis.after(ours);
    chart.colourBarTicks = ours;
  }
  ours.replaceChildren();
  const [values, labels] = ticks[stop];
  const limit = limits[stop] || 1;
  const [top, height] = [Number(fill.getAttribute("y")), Number(fill.getAttribute("height"))];
  values.forEach((value, i) => {
    const tick = model.cloneNode(true);
    tick.removeAttribute("class");
    ours.appendChild(tick);
    const text = tick.querySelector("text");
    const y = top + height * (1 - (value + limit) / (2 * limit)); // the bar runs up from -limit
    const at = new DOMPoint(0, y).matrixTransform(fill.getCTM()).matrixTransform(tick.getCTM().inverse());
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
// Plotly.react (which leaves an image alone when the figure did not change).
function restorePlotly(chart) {
  removePreview(chart);
  chart.colourBarTicks?.remove();
  chart.colourBarTicks = null;
  delete chart.div.dataset.recoloured;
  delete chart.div.dataset.colourBar;
  // A label made while the hover was hidden holds the numbers of the figure before.
  if (chart.hoverHidden) window.Plotly?.Fx.unhover(chart.div);
  chart.hoverHidden = false;
  for (const [element, record] of chart.touched || []) {
    for (const [attr, { original, ours }] of Object.entries(record)) {
      if (element.getAttribute(attr) !== ours) continue; // Plotly has drawn it again
      if (original === null) element.removeAttribute(attr);
      else element.setAttribute(attr, original);
    }
  }
  chart.touched = null;
}

// Set an attribute (or one style property) that Plotly drew, remembering Plotly's value so
// that restorePlotly can put it back if Plotly has not redrawn the element since.
function touch(chart, element, attr, value, property) {
  if (!chart.touched) chart.touched = new Map();
  if (!chart.touched.has(element)) chart.touched.set(element, {});
  const record = chart.touched.get(element);
  if (!(attr in record)) record[attr] = { original: element.getAttribute(attr) };
  if (property) element.style[property] = value;
  else element.setAttribute(attr, value);
  record[attr].ours = element.getAttribute(attr);
}

// While a chart shows a stop its figure does not hold, a hover label would give the
// figure's numbers, not the ones seen: hide the labels until Plotly draws that stop.
function hideHover(chart) {
  const layer = chart.div.querySelector(".hoverlayer");
  if (!layer || chart.hoverHidden) return;
  window.Plotly?.Fx.unhover(chart.div);
  touch(chart, layer, "style", "hidden", "visibility");
  chart.hoverHidden = true;
}

// Bars of trace 0 at frame `stop`: one row of `array`, heights and colours. Plotly draws a
// bar as "M x0,y0 V y1 H x1 V y0 Z"; only y1 and the fill change.
function moveBars(chart, array, stop, row, colours) {
  const axis = chart.div._fullLayout && chart.div._fullLayout.yaxis;
  const paths = chart.div.querySelectorAll(".barlayer .trace:first-child .point path");
  const n = array.shape[2];
  if (!axis || paths.length !== n) return;
  paths.forEach((path, j) => {
    const value = valueAt(array, stop, row * n + j);
    const original = chart.touched?.get(path)?.d?.original ?? path.getAttribute("d");
    const [x0, y0, , x1] = original.match(/-?[\d.]+(?:e-?\d+)?/g).map(Number);
    touch(chart, path, "d", `M${x0},${y0}V${axis.c2p(value)}H${x1}V${y0}Z`);
    const colour = colours[Math.max(0, Math.min(255, Math.round(value * 255)))];
    touch(chart, path, "style", colour, "fill");
  });
}

// Shapes at the current scale (vertical lines on log axes) moved to `scale`.
function moveMarkers(chart, indices, scale) {
  const layout = chart.div._fullLayout;
  for (const index of indices) {
    const shape = layout.shapes[index];
    const path = chart.div.querySelector(`.shapelayer path[data-index="${index}"]`);
    if (!shape || !path) continue;
    const axis = layout[`xaxis${shape.xref.slice(1)}`];
    const shift = axis.c2p(scale) - axis.c2p(shape.x0);
    touch(chart, path, "transform", `translate(${shift},0)`);
  }
}

// ---- the line view: a token under the pointer keeps its lines ------------------------------

// A line view (figures.line_view_figure, layout.meta "line-view") draws its lines as path
// shapes "M0,q L1,k M0,q′ L1,k′ …"; plotly.js draws each as an SVG path with the same
// segments in the same order, in pixels. As in BertViz's head view, a token of the query
// column (trace 0) under the pointer keeps the lines from it, one of the key column
// (trace 1) the lines into it; leaving the token brings every line back. A click still
// keeps a token's lines for good (Python draws them, and the picker names it).
function hoverLines(chart, point) {
  const layout = chart.div._fullLayout;
  if (!layout || chart.div.layout?.meta !== "line-view") return;
  const side = point && point.curveNumber <= 1 ? point.curveNumber : null;
  for (const path of chart.div.querySelectorAll(".shapelayer path[data-index]")) {
    const shape = layout.shapes[Number(path.dataset.index)];
    if (!shape || typeof shape.path !== "string") continue;
    if (path.getAttribute("d") !== path.aeShown) path.aeAll = path.getAttribute("d"); // drawn anew
    let d = path.aeAll;
    if (side !== null) {
      const ends = [...shape.path.matchAll(/M0,(\d+)L1,(\d+)/g)].map((m) => Number(m[side + 1]));
      const segments = path.aeAll.split("M").slice(1); // the same lines, in pixels
      d = segments.filter((_, j) => ends[j] === point.pointNumber).map((s) => `M${s}`).join("");
    }
    path.setAttribute("d", d);
    path.aeShown = d;
  }
}

// ---- one frame on every live chart ---------------------------------------------------------

function showFrame(src, stop) {
  const started = performance.now();
  const parts = {};
  let held = false;
  for (const chart of src.charts) {
    const live = chart.live;
    // Frames of other stops only (past 128 tokens): wait for the stop's own.
    const frames = framesAt(src, stop, live.frames);
    held ||= frames !== null;
    // not yet drawn by Plotly (the frames of one stop may come before a chart's first draw)
    if (!frames || !chart.div.isConnected || !chart.div._fullLayout) continue;
    if (chart.shows === `${frames.id}:${stop}`) {
      if (!chart.reacting) restorePlotly(chart); // back on the stop drawn: Plotly's own
      continue;
    }
    const frame = frameOf(frames, stop);
    const begun = performance.now();
    if (live.title) {
      const title = chart.div.querySelector(".gtitle");
      const text = live.title.replace("{scale}", frames.titles[frame]).split("<br>")[0];
      const lines = title ? title.querySelectorAll("tspan.line") : [];
      if (lines.length) lines[0].textContent = text;
      else if (title) title.textContent = text;
    }
    if (live.heatmap) {
      const array = frames.arrays[live.heatmap];
      recolour(chart, array, frame, live.limits ? frames.limits[live.limits] : null, `${frames.id}:${stop}`);
      chart.div.dataset.recoloured = String(stop);
      if (live.limits) relabelColourBar(chart, frames.ticks?.[live.limits], frames.limits[live.limits], frame);
    }
    if (live.bar) moveBars(chart, frames.arrays[live.bar], frame, live.row, live.colors);
    if (live.markers) moveMarkers(chart, live.markers, frames.scales[frame]);
    if (live.heatmap || live.bar) hideHover(chart);
    parts[chart.key] = performance.now() - begun;
  }
  if (!held) return; // no frames of this stop yet: nothing was painted
  const painted = performance.now();
  const log = (window.__aeFrames = window.__aeFrames || []);
  log.push({ stop, started, painted, parts });
  if (log.length > 2000) log.splice(0, 1000);
}

// ---- the exact figure of a stop, from float32 frames -----------------------------------------

// A typed array as plotly.py writes it ({dtype, bdata: base64, shape}) as a flat array.
function typed(spec) {
  if (!spec || !spec.bdata) return null;
  const bytes = Uint8Array.from(atob(spec.bdata), (c) => c.charCodeAt(0));
  const types = { f4: Float32Array, f8: Float64Array };
  return new types[spec.dtype](bytes.buffer);
}

// The raw scores (flat, row by row) and the masked cells' note of a weights heatmap's
// customdata: a typed array of (raw, scaled) pairs without masked cells, else nested
// lists of [raw, scaled or "", note or ""] (figures.attention_heatmap).
function scoreHover(customdata) {
  const pairs = typed(customdata);
  if (pairs) return { raw: pairs.filter((_, k) => k % 2 === 0), masked: "" };
  const cells = customdata.flat();
  return { raw: cells.map((cell) => cell[0]), masked: cells.find((cell) => cell[2])?.[2] ?? "" };
}

// Rows of frame `stop` of `array`, each a view of its first `cols` columns.
function frameRows(array, stop, cols) {
  const [rows, width] = [array.shape[1], array.shape[2]];
  const start = stop * array.size;
  return Array.from({ length: rows }, (_, i) =>
    array.values.subarray(start + i * width, start + i * width + Math.min(cols ?? width, width)));
}

// Cell text as the figure builders write it (two decimals; a gap is a masked −∞ score).
const cellText = (rows) => rows.map((row) => Array.from(row, (v) => (Number.isNaN(v) ? "−∞" : v.toFixed(2))));

// The figure at the slider's `stop`: the reference figure (the chart's data) with the
// engine's float32 numbers of that stop (its frame) put in its place. Indexing only: every
// number shown comes from the frames, and colours, text and hover follow from them as
// plotly.js draws them.
function figureAt(chart, frames, stop) {
  const frame = frameOf(frames, stop);
  const live = chart.live;
  const figure = chart.figure;
  const data = figure.data.slice();
  const layout = { ...figure.layout };
  const trace = { ...data[0] };
  if (live.title) {
    layout.title = { ...(layout.title || {}), text: live.title.replace("{scale}", frames.titles[frame]) };
  }
  if (live.heatmap) {
    const array = frames.arrays[live.heatmap];
    trace.z = frameRows(array, frame);
    if (live.limits) {
      const limit = frames.limits[live.limits][frame];
      Object.assign(trace, { zmin: -limit, zmax: limit, zmid: 0 });
      const ticks = frames.ticks?.[live.limits]?.[frame];
      if (ticks) trace.colorbar = { ...trace.colorbar, tickmode: "array", tickvals: ticks[0], ticktext: ticks[1] };
    }
    if (trace.text) trace.text = cellText(trace.z);
  }
  if (live.hover && trace.customdata) {
    // customdata holds (raw score, scaled score, note) per cell; the scaled one is the
    // stop's. Where the mask forbids (a gap in the frames) the score is "" and the note
    // the figure's own (figures.MASKED_HOVER): plotly.js writes "" as it is.
    const hover = chart.scoreHover || (chart.scoreHover = scoreHover(trace.customdata));
    const scaled = frameRows(frames.arrays[live.hover], frame);
    trace.customdata = scaled.map((row, i) =>
      Array.from(row, (v, j) => {
        const raw = hover.raw[i * row.length + j];
        return Number.isNaN(v) ? [raw, "", hover.masked] : [raw, v, ""];
      }));
  }
  if (live.bar) {
    const array = frames.arrays[live.bar];
    const n = array.shape[2];
    const row = array.values.subarray(frame * array.size + live.row * n, frame * array.size + (live.row + 1) * n);
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
      values[first + c] = Array.from({ length: rows }, (_, i) => array.values[frame * array.size + i * width + c]);
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
  return { data, layout };
}

// Whether `chart` is drawn from frames (float32, its reference figure) and which stop it
// should show now: null when it shows its data as they came.
function frameFor(chart) {
  const live = chart.live;
  if (!live || live.drawn === undefined) return null;
  const src = source(live.source);
  if (src.stop === null || !holds(src, live.frames)) return null;
  return src.stop;
}

// What `chart` should show: its data as they came (null) or "frames id:stop".
// Frames of one stop that is not the current one: keep what is shown until the
// current stop's frames arrive.
function wanted(chart) {
  const stop = frameFor(chart);
  if (stop === null) return null;
  if (!framesAt(source(chart.live.source), stop, chart.live.frames)) return chart.shows;
  return `${chart.live.frames}:${stop}`;
}

// Draw `chart` at the stop it should show, unless it already does.
function redraw(chart) {
  const want = wanted(chart);
  if (want === chart.shows) return null;
  chart.shows = want;
  chart.version += 1;
  chart.div.dataset.pending = "1";
  if (want === null) return react(chart, chart.figure);
  const stop = frameFor(chart);
  return react(chart, figureAt(chart, framesAt(source(chart.live.source), stop, chart.live.frames), stop));
}

// Redraws from frames wait their turn, one chart per task, after two frames: a release
// shows the new stop at once (the previews), sends it to Python, and only then
// spends Plotly.react's 10-40 ms per chart, leaving the socket room in between.
const queue = new Set();
let pumping = false;

// A chart with nothing left to draw is no longer pending (unless Plotly is drawing it).
function settled(chart) {
  if (!chart.reacting && !queue.has(chart)) delete chart.div.dataset.pending;
}

function schedule(chart) {
  if (wanted(chart) === chart.shows) return false;
  queue.add(chart);
  chart.div.dataset.pending = "1"; // until drawn (the tests wait on it)
  if (!pumping) {
    pumping = true;
    // two frames: the first paints the preview, the second puts it on screen
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(pump, 0)));
  }
  return true;
}

// A chart in a closed expander waits until it is opened (a Plotly table of 43 rows costs
// 60-150 ms to redraw, as much as all the heatmaps together).
function folded(chart) {
  const details = chart.div.closest("details");
  if (!details || details.open) return false;
  if (!details.aeWatched) {
    details.aeWatched = true;
    details.addEventListener("toggle", () => {
      if (!details.open) return;
      for (const src of sources.values()) {
        for (const other of src.charts) if (details.contains(other.div)) schedule(other);
      }
    });
  }
  return true;
}

async function pump() {
  try {
    while (queue.size) {
      const chart = queue.values().next().value;
      queue.delete(chart);
      const drawing = chart.div.isConnected && !folded(chart) ? redraw(chart) : null;
      if (drawing === null) {
        if (!chart.reacting) delete chart.div.dataset.pending;
        continue;
      }
      try {
        await drawing;
      } catch (error) { // one chart that fails to draw must not stop the others' redraws
        console.error("Attention Explorer: a chart failed to redraw", error);
        settled(chart);
      }
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  } finally {
    pumping = false;
  }
}

// ---- a chart -------------------------------------------------------------------------------

// The camera button saves the figure laid out for print (app/export.py): its own size
// from the token count, thinned tick labels, the print font, on white.
async function download(chart, gd) {
  const Plotly = await plotlyReady;
  const options = chart.config.toImageButtonOptions;
  const print = chart.print || {};
  const layout = {
    ...gd.layout,
    paper_bgcolor: "white",
    plot_bgcolor: "white",
    ...print,
    font: { ...(gd.layout.font || {}), color: "#222", ...(print.font || {}) },
  };
  for (const axis of Object.keys(print).filter((name) => /^[xy]axis\d*$/.test(name))) {
    layout[axis] = { ...(gd.layout[axis] || {}), ...print[axis] };
  }
  const stop = frameFor(chart); // a chart drawn from frames names the stop it shows
  const frames = stop === null ? null : framesAt(source(chart.live.source), stop, chart.live.frames);
  const frame = frames ? frameOf(frames, stop) : -1;
  const shown = frame < 0 ? null : frames.titles[frame];
  await Plotly.downloadImage({ data: gd.data, layout }, {
    format: options.format,
    filename: shown === null ? options.filename : options.filename.replace("{scale}", shown),
    width: layout.width,
    height: layout.height,
    scale: options.scale,
  });
}

// ---- narrow screens: a title that fits, a mode bar that covers nothing, a whole table --------

// On a phone a chart is ~360 px wide: a long title runs past the right edge (plotly.js
// does not wrap it), plotly.js's toolbar (the mode bar, over the figure's top right
// corner) covers the title, and a table whose header wraps to two lines pushes its last
// row out of its fixed height. After a draw, measured: a title wider than the chart is
// wrapped at its spaces and the top margin grows by the lines added (remembered for the
// same title at the same width, so the next draw is fitted at once); a mode bar that
// covers a title moves into a strip of its own above the figure; a table grows to show
// every row, up to TABLE_MAX px (past it the rows scroll, as intended).
const TABLE_MAX = 700;

function titleOf(layout) {
  return typeof layout.title === "string" ? layout.title : layout.title?.text;
}

// `layout` with what earlier draws at this width found it needs.
function fitted(chart, layout) {
  const width = chart.div.clientWidth;
  const out = { ...layout };
  const fit = chart.titleFits?.get(`${width}|${titleOf(layout)}`);
  if (fit) {
    out.title = { ...(typeof layout.title === "object" ? layout.title : {}), ...fit.title };
    out.margin = { ...(layout.margin || {}), t: (layout.margin?.t ?? 100) + fit.extra };
    out.height = (layout.height ?? 450) + fit.extra;
  }
  const table = chart.tableFit;
  if (table && table.width === width && table.spec === chart.spec) out.height = Math.max(out.height ?? 0, table.height);
  return out;
}

const measurer = document.createElement("canvas").getContext("2d");

// `text` (a title line, no markup) broken at spaces into lines no wider than `room` px,
// in the font of the SVG text `element`.
function wrapLine(text, room, element) {
  const css = getComputedStyle(element);
  measurer.font = `${css.fontWeight} ${css.fontSize} ${css.fontFamily}`;
  const plain = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  const lines = [];
  for (const word of text.split(" ")) {
    const last = lines.length ? `${lines[lines.length - 1]} ${word}` : null;
    if (last !== null && measurer.measureText(plain(last)).width <= room) lines[lines.length - 1] = last;
    else lines.push(word);
  }
  return lines;
}

// A figure of several panels on a phone: its labels run off the side or into each other.
// It is then drawn WIDE px wide (at most), and its column scrolls sideways.
const WIDE = 640;

function crowded(gd) {
  const box = gd.getBoundingClientRect();
  const texts = [...gd.querySelectorAll(".annotation-text, .legendtext, .gtitle, .g-xtitle text, .g-ytitle text, .cbtitle text")]
    .map((t) => t.getBoundingClientRect())
    .filter((r) => r.width);
  if (texts.some((r) => r.right > box.right + 1 || r.left < box.left - 1)) return true;
  const titles = [...gd.querySelectorAll(".annotation-text")].map((t) => t.getBoundingClientRect()).filter((r) => r.width);
  return titles.some((a, i) => titles.slice(i + 1).some((b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom && b.top < a.bottom));
}

async function fitNarrow(chart, figure) {
  const gd = chart.div;
  const layout = gd._fullLayout;
  const width = gd.clientWidth;
  if (!layout || !width) return;
  const box = gd.getBoundingClientRect();
  const update = {};
  const source = titleOf(figure.layout);
  const title = gd.querySelector(".g-gtitle .gtitle");
  const key = `${width}|${source}`;
  if (source && title && !chart.titleFits?.has(key)) {
    const drawn = title.getBoundingClientRect();
    if (drawn.width && drawn.right > box.right - 1) {
      const room = box.right - 8 - drawn.left;
      const lines = source.split(/<br\s*\/?>/i).flatMap((line) => {
        const tagged = line.match(/^<(\w+)>([^<]*)<\/\1>$/); // a whole line in <sup> or <b>
        if (tagged) return wrapLine(tagged[2], room, title).map((part) => `<${tagged[1]}>${part}</${tagged[1]}>`);
        return line.includes("<") ? [line] : wrapLine(line, room, title);
      });
      const added = lines.length - source.split(/<br\s*\/?>/i).length;
      if (added > 0) {
        // The title hangs from where it starts, and keeps the room it had above the plot
        // (subplot titles live there): the top margin grows by what the new lines take.
        const [top, margin, height] = [drawn.top - box.top, layout.margin.t, layout.height];
        const below = box.top + margin - drawn.bottom;
        const hung = { text: lines.join("<br>"), y: 1, yref: "container", yanchor: "top", pad: { t: Math.max(0, top) } };
        await window.Plotly.relayout(gd, {
          "title.text": hung.text,
          "title.y": 1,
          "title.yref": "container",
          "title.yanchor": "top",
          "title.pad.t": hung.pad.t,
        });
        // plotly.js hangs a title of several lines higher than its first line was: down again.
        const rise = top - (gd.querySelector(".g-gtitle .gtitle").getBoundingClientRect().top - gd.getBoundingClientRect().top);
        if (rise > 0.5) {
          hung.pad.t = Math.ceil(hung.pad.t + rise);
          await window.Plotly.relayout(gd, { "title.pad.t": hung.pad.t });
        }
        const bottom = gd.querySelector(".g-gtitle .gtitle").getBoundingClientRect().bottom - gd.getBoundingClientRect().top;
        const extra = Math.max(0, Math.ceil(bottom + below - margin));
        (chart.titleFits ||= new Map()).set(key, { title: hung, extra });
        Object.assign(update, { "margin.t": margin + extra, height: height + extra });
      }
    }
  }
  const view = gd.querySelector(".table-control-view")?.__data__;
  if (view && gd._fullData.length === 1) {
    const rows = (blocks) => (blocks || []).reduce((sum, b) => sum + b.rows.reduce((s, r) => s + (r.rowHeight || 0), 0), 0);
    const margin = (update["margin.t"] ?? layout.margin.t) + layout.margin.b;
    const needed = Math.ceil(rows(view.headerRowBlocks) + rows(view.rowBlocks) + margin + 2);
    const height = update.height ?? layout.height;
    if (needed > height && needed <= TABLE_MAX) {
      update.height = needed;
      chart.tableFit = { width, spec: chart.spec, height: needed };
    }
  }
  if (Object.keys(update).length) await window.Plotly.relayout(gd, update);
  if (!chart.wide && crowded(gd)) {
    chart.wide = Math.max(width + 1, Math.min(WIDE, Math.round(width * 1.6)));
    gd.style.minWidth = `${chart.wide}px`;
    chart.host.style.overflowX = "auto";
    await window.Plotly.Plots.resize(gd);
  }
  const bar = gd.querySelector(".modebar");
  if (bar && !gd.classList.contains("ae-modebar-above")) {
    const b = bar.getBoundingClientRect();
    const covers = (r) => r.width && r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom;
    const texts = gd.querySelectorAll(".g-gtitle .gtitle, .annotation-text, .legendtext");
    if ([...texts].some((t) => covers(t.getBoundingClientRect()))) {
      gd.style.setProperty("--ae-modebar", `${Math.ceil(b.height) + 2}px`);
      gd.classList.add("ae-modebar-above");
    }
  }
}

if (!document.getElementById("ae-chart-style")) {
  const style = document.createElement("style");
  style.id = "ae-chart-style";
  style.textContent = `
.ae-chart.ae-modebar-above { margin-top: var(--ae-modebar); }
.ae-chart.ae-modebar-above .modebar-container { top: calc(-1 * var(--ae-modebar)) !important; }`;
  document.head.appendChild(style);
}

async function react(chart, figure) {
  const Plotly = await plotlyReady;
  const version = chart.version;
  // Our camera replaces plotly.js's; its "Share chart..." would upload to Plotly's cloud.
  chart.config.modeBarButtonsToRemove = ["toImage", "sendChartToCloud"];
  chart.config.modeBarButtonsToAdd = [{
    name: "download",
    title: "Download for a slide or a paper",
    icon: Plotly.Icons.camera,
    click: (gd) => download(chart, gd),
  }];
  // Bars and shapes restyled during a drag differ from the figure, so react redraws them.
  chart.reacting = (chart.reacting || 0) + 1;
  try {
    await Plotly.react(chart.div, figure.data, themed(fitted(chart, figure.layout), chart.host), chart.config);
    await fitNarrow(chart, figure);
  } finally {
    chart.reacting -= 1;
  }
  restorePlotly(chart);
  if (!chart.listening) {
    chart.listening = true;
    chart.div.on("plotly_click", (event) => chart.onClick(event));
    chart.div.on("plotly_hover", (event) => hoverLines(chart, event.points?.[0]));
    chart.div.on("plotly_unhover", () => hoverLines(chart, null));
  }
  if (version === chart.version && !queue.has(chart)) delete chart.div.dataset.pending;
}

function mountChart(component) {
  const { data, parentElement, setTriggerValue } = component;
  let chart = elements.get(parentElement);
  if (!chart) {
    const div = document.createElement("div");
    div.className = "ae-chart";
    div.style.width = "100%";
    parentElement.appendChild(div);
    const key = parentElement.closest("[class*='st-key-']")?.className.match(/st-key-(\S+)/)?.[1];
    chart = { div, host: parentElement, key, version: 0, listening: false };
    elements.set(parentElement, chart);
  }
  chart.config = { responsive: true, ...data.config };
  chart.print = data.print || null;
  chart.onClick = (event) => {
    if (!chart.clicks || !event.points.length) return;
    const point = event.points[0];
    const index = point.pointIndex;
    setTriggerValue("click", {
      trace: point.curveNumber,
      row: Array.isArray(index) ? index[0] : index,
      col: Array.isArray(index) ? index[1] : null,
    });
  };
  chart.clicks = Boolean(data.clicks);
  for (const src of sources.values()) src.charts.delete(chart);
  chart.live = data.live || null;
  if (chart.live) source(chart.live.source).charts.add(chart);
  const same = chart.spec === data.spec && chart.liveText === JSON.stringify(chart.live);
  if (same && chart.theme === themeKey(chart.host)) return schedule(chart); // at most a new stop
  chart.theme = themeKey(chart.host);
  chart.spec = data.spec;
  chart.liveText = JSON.stringify(chart.live);
  chart.figure = JSON.parse(data.spec);
  chart.scoreHover = null;
  chart.shows = undefined; // new data: draw them (at the current stop, from frames)
  return redraw(chart);
}

// ---- the scale slider and its frames -------------------------------------------------------

function mountFrames(component) {
  const { data, parentElement } = component;
  if (!parentElement.querySelector(".ae-frames")) {
    const marker = document.createElement("div");
    marker.className = "ae-frames";
    parentElement.appendChild(marker);
  }
  // Decoding is cheap next to the transfer, but skip it when the same frames come again.
  const header = new TextDecoder().decode(data.subarray(4, 4 + new DataView(data.buffer, data.byteOffset).getUint32(0, true)));
  const src = source(JSON.parse(header).source);
  if (src.held.get(parentElement)?.header === header) return;
  const frames = decodeFrames(data);
  frames.header = header;
  src.held.set(parentElement, frames);
  parentElement.querySelector(".ae-frames").dataset.bytes = String(data.byteLength);
  if (src.slider && src.stop !== null) src.slider.describe(src.stop);
  // A neighbouring stop's frames wait for its step; nothing to draw now.
  if (src.stop !== null && frameOf(frames, src.stop) < 0) return;
  // Frames of the current stop alone arrive after a jump (a drag's release): show the
  // stop at once over the images Plotly drew, then draw the exact figures.
  if (frames.scales.length === 1 && src.stop !== null) showFrame(src, src.stop);
  for (const chart of src.charts) if (!schedule(chart)) settled(chart);
}

function mountSlider(component) {
  const { data, parentElement, setStateValue } = component;
  const src = source(data.source);
  let slider = elements.get(parentElement);
  if (!slider) {
    const wrap = document.createElement("div");
    wrap.className = "ae-scale";
    const id = `ae-scale-${data.source}`;
    wrap.innerHTML = `<label class="ae-scale-label" for="${id}"></label>
      <div class="ae-scale-value" aria-hidden="true"></div>
      <input id="${id}" type="range" min="0" step="1"
        style="width: 100%; accent-color: var(--st-primary-color)">`;
    parentElement.appendChild(wrap);
    const input = wrap.querySelector("input");
    slider = { wrap, input, pending: null, placed: undefined, held: null };
    elements.set(parentElement, slider);
    const paint = () => {
      slider.pending = null;
      showFrame(src, src.stop);
    };
    input.addEventListener("input", () => {
      const stop = Number(input.value);
      slider.describe(stop);
      if (src.stop === stop) return;
      src.stop = stop;
      if (slider.pending === null) slider.pending = requestAnimationFrame(paint);
    });
    // Release (pointer up, or a keyboard step): the stop goes back to Python, which
    // draws the exact figures. Back on the stop Python last drew, put its images back.
    // Charts drawn from float32 frames get the exact figure of the stop now.
    input.addEventListener("change", () => {
      const stop = Number(input.value);
      src.stop = stop;
      if (stop !== slider.held) slider.send(stop);
      slider.held = stop;
      for (const chart of src.charts) {
        if (frameFor(chart) === null) {
          if (stop === src.sent) restorePlotly(chart);
        } else if (!framesAt(src, stop, chart.live.frames)) {
          chart.div.dataset.pending = "1"; // drawn when the stop's own frames arrive
        } else if (!schedule(chart)) {
          restorePlotly(chart); // already drawn at this stop
          settled(chart);
        }
      }
    });
  }
  // The latest mount's setter: the slider moves between the page's fragments (its own
  // when the frames draw every chart, else the charts'), and the setter names the one
  // whose run a release starts.
  slider.send = (stop) => setStateValue("stop", stop);
  // The stops' labels come with the data, or with the frames (which may arrive after).
  slider.labels = data.labels || null;
  src.slider = slider;
  slider.describe = (stop) => {
    const labels = slider.labels || [...src.held.values()].find((frames) => frames.labels)?.labels;
    if (!labels) return;
    slider.wrap.querySelector(".ae-scale-value").textContent = labels[stop];
    slider.input.setAttribute("aria-valuetext", labels[stop]);
  };
  slider.wrap.querySelector("label").textContent = data.label;
  slider.input.max = String(data.stops - 1);
  // The thumb goes to `stop` when it is new here or Python placed it (`placed` counts
  // that): a release reruns only the slider's fragment, whose data keep the stop of the
  // last full run, so Streamlit resends them as a reference and the thumb stays put.
  if (slider.placed !== data.placed) {
    slider.placed = data.placed;
    slider.held = data.stop; // the stop Python holds
    slider.input.value = String(data.stop);
    src.stop = data.stop;
  }
  slider.describe(src.stop);
  src.sent = data.stop; // the stop of the figures Python drew (those not drawn from frames)
  for (const chart of src.charts) schedule(chart);
}

// ---- presentation mode: the screen's size ---------------------------------------------------

// Python lays presentation mode's figures out for the screen (app/render.py): say its size
// when it differs from the size Python assumed (`known`), at first and after a resize.
function mountViewport(component) {
  const { data, parentElement, setStateValue } = component;
  let marker = parentElement.querySelector(".ae-viewport");
  if (!marker) {
    marker = document.createElement("div");
    marker.className = "ae-viewport";
    parentElement.appendChild(marker);
    let timer;
    window.addEventListener("resize", () => {
      clearTimeout(timer);
      timer = setTimeout(() => marker.report(), 300);
    });
  }
  marker.dataset.known = data.known.join("x");
  marker.report = () => {
    const size = [window.innerWidth, window.innerHeight];
    const text = size.join("x");
    marker.dataset.size = text;
    if (text === marker.dataset.known || text === marker.dataset.sent) return;
    marker.dataset.sent = text; // once per size, even if Python keeps its assumption
    setStateValue("size", size);
  };
  marker.report();
}

export default function (component) {
  const { data, parentElement } = component;
  if (data instanceof Uint8Array) mountFrames(component);
  else if (data.kind === "scale") mountSlider(component);
  else if (data.kind === "viewport") mountViewport(component);
  else mountChart(component);
  // Called when the data change as well as on unmount: free a plot only once its element
  // has really left the page.
  return () =>
    setTimeout(() => {
      if (parentElement.isConnected) return;
      const chart = elements.get(parentElement);
      if (chart && chart.div && window.Plotly) window.Plotly.purge(chart.div);
      for (const src of sources.values()) src.held.delete(parentElement); // its frames too
    }, 0);
}
