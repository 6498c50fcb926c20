// Charts fitted to a phone after each drawing: there plotly.js runs a long title past the
// right edge (it wraps none) and its mode bar over the title, a table whose header wraps
// pushes its last rows out of its fixed height, and panels side by side crowd each other off
// the screen: they are stacked in fewer columns (a plot cannot be scrolled sideways by touch,
// which plotly.js takes for itself). A figure drawn to scale is cut to the height it draws
// at its width (the model view's grid on a phone left 1,700 px blank under it).

import { Chart } from "./state.js";
import { addStyle } from "./theme.js";

// The tallest, in px, a table grows to show every row.
const TABLE_MAX = 700;
// A figure of one panel whose labels run off the side on a phone is drawn up to WIDE px
// wide, and its column scrolls sideways.
const WIDE = 640;
// Panels side by side that crowd each other are stacked in columns at least this wide (px).
const MIN_PANEL = 140;
// Charts side by side hang their titles this far (px) below their tops (alignRow).
const TITLE_PAD = 8;
// A horizontal colour bar of stacked panels hangs this far (px) below its panel, under the
// panel's tick labels (stacking).
const BAR_BELOW = 36;

// layout.meta of a figure drawn to scale, as tall as what it draws (app/views/chart.py's
// TO_SCALE): the model view's grid.
const TO_SCALE = "to-scale";

// The blank, in px, under the plot of a figure drawn to scale: plotly.js holds the plot to
// its data's aspect (y's scaleanchor, constrained to its domain toward the top) at the width
// it has, and leaves the rest of the height it was given blank. `full`: plotly.js's
// _fullLayout. 0 when less than a pixel is left.
export function blankUnder(full) {
  const [low, high] = full.yaxis?.domain ?? [0, 1];
  const blank = Math.floor((1 - (high - low)) * full._size.h);
  return blank >= 1 ? blank : 0;
}

// The chart's width, as a ResizeObserver last saw it (read without forcing a layout).
export function widthOf(chart) {
  const fit = chart.fit;
  if (!fit.observer) {
    fit.observer = new ResizeObserver(([entry]) => {
      fit.width = Math.round(entry.contentRect.width);
      if (!chart.drawing && chart.drawn && drawnAtAnotherWidth(chart)) chart.relay();
    });
    fit.observer.observe(chart.div);
  }
  return fit.width ?? chart.div.clientWidth;
}

// Its column changed width (presentation mode, the sidebar), which plotly.js's `responsive`,
// following the window only, misses: plot.js draws it again and fits it anew.
export function drawnAtAnotherWidth(chart) {
  const drawn = chart.div._fullLayout?.width;
  return Boolean(drawn && chart.fit.width && Math.abs(drawn - chart.fit.width) > 1);
}

// What a fit depends on: a table's header too, as it may wrap.
function fitKey(chart, figure) {
  const headers = figure.data.map((trace) => (trace.type === "table" ? trace.header?.values : null));
  return JSON.stringify([widthOf(chart), figure.layout, headers]);
}

const titleOf = (layout) => (typeof layout.title === "string" ? layout.title : layout.title?.text);

// `figure`'s layout with what earlier fits at this width found (in copies: the figure stays
// as Python sent it), and the width, which plotly.js reads on a first drawing only.
export function fitted(chart, figure) {
  const layout = figure.layout;
  const width = widthOf(chart);
  const out = { ...layout, margin: { ...(layout.margin || {}) } };
  if (typeof layout.title === "object") out.title = structuredClone(layout.title);
  if (width) out.width = width;
  const fit = chart.fit.titles.get(`${width}|${titleOf(layout)}`);
  if (fit) {
    out.title = { ...(typeof layout.title === "object" ? layout.title : {}), ...fit.title };
    out.margin.t = (layout.margin?.t ?? 100) + fit.extra;
    out.height = (layout.height ?? 450) + fit.extra;
  }
  const key = chart.fit.table || chart.fit.stack || chart.fit.scale ? fitKey(chart, figure) : null;
  if (chart.fit.scale?.fit === key) out.height = chart.fit.scale.height;
  const stack = chart.fit.stack;
  if (stack?.fit === key) {
    for (const [name, axis] of Object.entries(stack.axes)) out[name] = { ...(layout[name] || {}), ...axis };
    out.annotations = stack.annotations;
    out.height = (out.height ?? layout.height ?? 450) + stack.extra;
  }
  chart.fit.natural = { t: out.margin.t ?? 100, h: out.height ?? 450 }; // before its row's (alignRow)
  const row = chart.fit.row;
  if (row) {
    [out.margin.t, out.height] = [row.t, row.h];
    if (titleOf(layout)) {
      const title = typeof out.title === "object" ? out.title : { text: out.title };
      const pad = TITLE_PAD + (chart.fit.titleShifts.get(title.text) ?? 0);
      out.title = { ...title, y: 1, yref: "container", yanchor: "top", pad: { ...(title.pad || {}), t: pad } };
    }
  }
  const table = chart.fit.table;
  if (table?.fit === key) out.height = Math.max(out.height ?? 0, table.height);
  return out;
}

// `figure`'s traces with their colour bars beside their stacked panels (stack), in copies.
export function fittedData(chart, figure) {
  const stack = chart.fit.stack;
  if (!stack || stack.fit !== fitKey(chart, figure)) return figure.data;
  return figure.data.map((trace, i) => (stack.colorbars[i] ? { ...trace, colorbar: { ...(trace.colorbar || {}), ...stack.colorbars[i] } } : trace));
}

const round = (v) => Math.round(v * 1000) / 1000;

// The figure's panels as drawn: each with its axes' names, domains, row and column (from the
// top left); null unless some stand side by side.
function panelsOf(gd) {
  const full = gd._fullLayout;
  const ids = full._subplots?.cartesian ?? [];
  const panels = ids.map((id) => {
    const [, x, y] = id.match(/^(x\d*)(y\d*)$/);
    const [xName, yName] = [x.replace("x", "xaxis"), y.replace("y", "yaxis")];
    return { id, x: xName, y: yName, xd: [...full[xName].domain], yd: [...full[yName].domain] };
  });
  const lefts = [...new Set(panels.map((p) => round(p.xd[0])))].sort((a, b) => a - b);
  const tops = [...new Set(panels.map((p) => round(p.yd[1])))].sort((a, b) => b - a);
  if (lefts.length < 2) return null;
  for (const p of panels) [p.col, p.row] = [lefts.indexOf(round(p.xd[0])), tops.indexOf(round(p.yd[1]))];
  panels.sort((a, b) => a.row - b.row || a.col - b.col);
  return { panels, cols: lefts.length, rows: tops.length };
}

// The layout and colour bars that stack `grid`'s panels in `cols` columns: each keeps its
// height in px, the columns share the plot's width, and the panel titles (make_subplots'
// annotations), tick labels of shared axes and colour bars move with their panels.
function stacking(gd, grid, cols) {
  const full = gd._fullLayout;
  const { w: W, h: H, b: bottom } = full._size;
  const { panels } = grid;
  const at = (row, col) => panels.find((p) => p.row === row && p.col === col);
  const first = at(0, 0) ?? panels[0];
  const hgap = grid.cols > 1 ? (at(0, 1).xd[0] - first.xd[1]) * W : 0;
  const below = panels.find((p) => p.row === 1);
  // A row needs room below for its key labels and above for the next row's title.
  const vgap = Math.max(below ? (first.yd[0] - below.yd[1]) * H : 0, bottom + 40);
  const ph = Math.max(...panels.map((p) => (p.yd[1] - p.yd[0]) * H));
  const rows = Math.ceil(panels.length / cols);
  const plotH = rows * ph + (rows - 1) * vgap;
  const pw = (W - (cols - 1) * hgap) / cols;
  const labels = (name) => ({ showticklabels: full[name].showticklabels, ticks: full[name].ticks });
  const yRole = [labels(first.y), labels((at(0, 1) ?? first).y)]; // first column, others
  const lastRow = panels.filter((p) => p.row === grid.rows - 1);
  const xRole = [labels((panels.find((p) => p.row === 0 && grid.rows > 1) ?? lastRow[0]).x), labels(lastRow[0].x)];
  const axes = {};
  const moved = new Map();
  panels.forEach((p, k) => {
    const [row, col] = [Math.floor(k / cols), k % cols];
    const left = col * (pw + hgap);
    const top = row * (ph + vgap);
    const xd = [left / W, (left + pw) / W].map((v) => Math.min(1, Math.max(0, v)));
    const yd = [1 - (top + ph) / plotH, 1 - top / plotH].map((v) => Math.min(1, Math.max(0, v)));
    const lowest = k + cols >= panels.length;
    axes[p.x] = { domain: xd, ...xRole[lowest ? 1 : 0] };
    axes[p.y] = { domain: yd, ...yRole[col === 0 ? 0 : 1] };
    moved.set(p.id, { p, xd, yd });
  });
  const annotations = (full.annotations || []).map((a) => {
    const source = gd.layout.annotations?.[a._index] ?? {};
    if (a.xref !== "paper" || a.yref !== "paper") return source;
    for (const { p, xd, yd } of moved.values()) {
      if (Math.abs(a.x - (p.xd[0] + p.xd[1]) / 2) < 0.01 && Math.abs(a.y - p.yd[1]) < 0.01) {
        return { ...source, x: (xd[0] + xd[1]) / 2, y: yd[1] };
      }
    }
    return source;
  });
  const right = Math.max(...panels.map((p) => p.xd[1]));
  const colorbars = {};
  gd._fullData.forEach((trace, i) => {
    const bar = trace.showscale && trace.colorbar;
    const place = bar && moved.get(`${trace.xaxis}${trace.yaxis}`);
    if (!place) return;
    if (bar.orientation === "h") {
      // A bar under its panel (the neuron view's) stays one: under the panel's tick labels,
      // as long as the panel is wide, its title beside it within that length.
      const y = place.yd[0] - BAR_BELOW / plotH;
      colorbars[i] = { x: (place.xd[0] + place.xd[1]) / 2, xanchor: "center", y, yanchor: "top", len: place.xd[1] - place.xd[0], lenmode: "fraction" };
      return;
    }
    const x = bar.x >= right - 1e-6 ? bar.x : place.xd[1] + (bar.x - place.p.xd[1]);
    colorbars[i] = { x, y: (place.yd[0] + place.yd[1]) / 2, yanchor: "middle", len: place.yd[1] - place.yd[0], lenmode: "fraction" };
  });
  return { axes, annotations, colorbars, extra: Math.round(plotH - H) };
}

// Stack `grid`'s panels in fewer columns until they no longer crowd each other (or in one).
async function stack(chart, gd, grid, fit) {
  const { w: W } = gd._fullLayout._size;
  const height = gd._fullLayout.height; // as drawn unstacked
  let cols = Math.min(grid.cols - 1, Math.max(1, Math.floor(W / MIN_PANEL)));
  for (;;) {
    const plan = stacking(gd, grid, cols);
    chart.fit.stack = { fit, ...plan };
    const update = { annotations: plan.annotations, height: height + plan.extra };
    for (const [name, axis] of Object.entries(plan.axes)) for (const [k, v] of Object.entries(axis)) update[`${name}.${k}`] = v;
    await window.Plotly.relayout(gd, update);
    for (const [i, bar] of Object.entries(plan.colorbars)) {
      const style = Object.fromEntries(Object.entries(bar).map(([k, v]) => [`colorbar.${k}`, v]));
      await window.Plotly.restyle(gd, style, [Number(i)]);
    }
    if (cols === 1 || !crowded(gd)) return;
    cols -= 1;
  }
}

let measurer = null; // a canvas's context, made when first needed (Node's tests have none)
// plotly.js writes a <sup> line (a title's note) at this share of the title's size.
const SUP_SIZE = 0.7;

// `text` (a title line, no markup) broken at spaces into lines no wider than `room` px, in
// the font of the SVG text `element` at `scale` of its size.
function wrapLine(text, room, element, scale = 1) {
  const css = getComputedStyle(element);
  measurer ??= document.createElement("canvas").getContext("2d");
  measurer.font = `${css.fontWeight} ${parseFloat(css.fontSize) * scale}px ${css.fontFamily}`;
  const plain = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  const lines = [];
  for (const word of text.split(" ")) {
    const last = lines.length ? `${lines[lines.length - 1]} ${word}` : null;
    if (last !== null && measurer.measureText(plain(last)).width <= room) lines[lines.length - 1] = last;
    else lines.push(word);
  }
  return lines;
}

const boxes = (gd, selector) => [...gd.querySelectorAll(selector)].map((t) => t.getBoundingClientRect()).filter((r) => r.width);
const overlap = (a, b, slack = 0) =>
  a.left < b.right - slack && b.left < a.right - slack && a.top < b.bottom && b.top < a.bottom;

// Whether a figure's labels run off its sides, or its panel titles into each other.
function crowded(gd) {
  const box = gd.getBoundingClientRect();
  const texts = boxes(gd, ".annotation-text, .legendtext, .gtitle, .g-xtitle text, .g-ytitle text, .cbtitle text");
  if (texts.some((r) => r.right > box.right + 1 || r.left < box.left - 1)) return true;
  const titles = boxes(gd, ".annotation-text");
  return titles.some((a, i) => titles.slice(i + 1).some((b) => overlap(a, b, 1)));
}

// The title wrapped at its spaces to the chart's width: the layout update, or null when it
// fits. Kept per title and width, so the next drawing is fitted at once (fitted).
async function wrapTitle(chart, gd, source, width) {
  const title = gd.querySelector(".g-gtitle .gtitle");
  const key = `${width}|${source}`;
  if (!source || !title || chart.fit.titles.has(key)) return null;
  const [box, drawn] = [gd.getBoundingClientRect(), title.getBoundingClientRect()];
  const [margin, height] = [gd._fullLayout.margin.t, gd._fullLayout.height];
  if (!drawn.width || drawn.right <= box.right - 1) return null;
  const room = box.right - 8 - drawn.left;
  const lines = source.split(/<br\s*\/?>/i).flatMap((line) => {
    const tagged = line.match(/^<(\w+)>([^<]*)<\/\1>$/); // a whole line in <sup> or <b>
    if (tagged) {
      const scale = tagged[1] === "sup" ? SUP_SIZE : 1; // measured at the size it is drawn
      return wrapLine(tagged[2], room, title, scale).map((part) => `<${tagged[1]}>${part}</${tagged[1]}>`);
    }
    return line.includes("<") ? [line] : wrapLine(line, room, title);
  });
  if (lines.length <= source.split(/<br\s*\/?>/i).length) return null;
  // The title hangs from where it starts and keeps the room it had above the plot (subplot
  // titles live there): the top margin grows by what the new lines take.
  const top = drawn.top - box.top;
  const below = box.top + margin - drawn.bottom;
  const hung = { text: lines.join("<br>"), y: 1, yref: "container", yanchor: "top", pad: { t: Math.max(0, top) } };
  const titleTop = () => gd.querySelector(".g-gtitle .gtitle").getBoundingClientRect().top - gd.getBoundingClientRect().top;
  await window.Plotly.relayout(gd, {
    "title.text": hung.text, "title.y": 1, "title.yref": "container", "title.yanchor": "top", "title.pad.t": hung.pad.t,
  });
  const rise = top - titleTop(); // plotly.js hangs a title of several lines higher: down again
  if (rise > 0.5) {
    hung.pad.t = Math.ceil(hung.pad.t + rise);
    await window.Plotly.relayout(gd, { "title.pad.t": hung.pad.t });
  }
  const bottom = gd.querySelector(".g-gtitle .gtitle").getBoundingClientRect().bottom - gd.getBoundingClientRect().top;
  const extra = Math.max(0, Math.ceil(bottom + below - margin));
  chart.fit.titles.set(key, { title: hung, extra });
  return { "margin.t": margin + extra, height: height + extra };
}

// Once per width and layout: reading a size after Plotly.react forces the page's layout,
// which a redraw with new numbers only need not pay.
export async function fitNarrow(chart, figure) {
  const gd = chart.div;
  const layout = gd._fullLayout;
  const width = widthOf(chart);
  const fit = fitKey(chart, figure);
  if (!layout || !width || chart.fit.done === fit) return;
  const update = (await wrapTitle(chart, gd, titleOf(figure.layout), width)) ?? {};
  const blank = figure.layout.meta === TO_SCALE ? blankUnder(layout) : 0;
  if (blank) {
    update.height = (update.height ?? layout.height) - blank;
    chart.fit.scale = { fit, height: update.height };
  }
  const view = gd.querySelector(".table-control-view")?.__data__;
  if (view && gd._fullData.length === 1) {
    const rows = (blocks) => (blocks || []).reduce((sum, b) => sum + b.rows.reduce((s, r) => s + (r.rowHeight || 0), 0), 0);
    const margin = (update["margin.t"] ?? layout.margin.t) + layout.margin.b;
    const needed = Math.ceil(rows(view.headerRowBlocks) + rows(view.rowBlocks) + margin + 2);
    if (needed > (update.height ?? layout.height) && needed <= TABLE_MAX) {
      update.height = needed;
      chart.fit.table = { fit, height: needed };
    }
  }
  if (Object.keys(update).length) await window.Plotly.relayout(gd, update);
  const grid = chart.fit.stack?.fit !== fit && crowded(gd) && panelsOf(gd);
  if (grid) await stack(chart, gd, grid, fit);
  if (!chart.fit.wide && chart.fit.stack?.fit !== fit && crowded(gd)) {
    chart.fit.wide = Math.max(width + 1, Math.min(WIDE, Math.round(width * 1.6)));
    gd.style.minWidth = `${chart.fit.wide}px`; // then drawn again at that width (plot.js)
    chart.host.style.overflowX = "auto";
  }
  const bar = gd.querySelector(".modebar")?.getBoundingClientRect();
  if (bar && !gd.classList.contains("ae-modebar-above")
    && boxes(gd, ".g-gtitle .gtitle, .annotation-text, .legendtext").some((r) => overlap(r, bar))) {
    gd.style.setProperty("--ae-modebar", `${Math.ceil(bar.height) + 2}px`);
    gd.classList.add("ae-modebar-above");
  }
  chart.fit.done = fit;
}

// The columns `chart` stands in, side by side; null when it is in none, or they are stacked
// (a phone, presentation mode).
function columnsOf(chart) {
  const block = chart.host.closest('[data-testid="stHorizontalBlock"]');
  const columns = block ? [...block.querySelectorAll(':scope > [data-testid="stColumn"]')] : [];
  if (columns.length < 2) return null;
  const [a, b] = columns.map((column) => column.getBoundingClientRect());
  return Math.abs(a.top - b.top) > 1 || b.left <= a.left ? null : columns;
}

const chartsIn = (column) => [...column.querySelectorAll(".ae-chart")].map(Chart.of).filter(Boolean);

// Charts side by side line up: the k-th chart of each column gets the row's largest top
// margin and height, and its title hung from its top, so titles, plots and the CSV buttons
// below start at one height (one title of two lines, or wrapped, put its plot ~27 px lower).
// A chart drawn anew redraws those of its row whose room changed (`redraw`, plot.js).
export async function alignRow(chart) {
  const columns = columnsOf(chart);
  if (!columns) {
    if (chart.fit.row) [chart.fit.row, chart.relaid] = [null, true];
    return;
  }
  const index = chartsIn(columns.find((column) => column.contains(chart.host))).indexOf(chart);
  const row = columns.map((column) => chartsIn(column)[index]).filter((member) => member?.fit.natural);
  if (row.length < 2) return;
  const t = Math.max(...row.map((member) => member.fit.natural.t));
  const h = t + Math.max(...row.map((member) => member.fit.natural.h - member.fit.natural.t));
  // A mode bar moved above its title (fitNarrow) moves the chart down: all of the row's then.
  const above = row.find((member) => member.div.classList.contains("ae-modebar-above"));
  for (const member of above ? row : []) {
    member.div.style.setProperty("--ae-modebar", above.div.style.getPropertyValue("--ae-modebar"));
    member.div.classList.add("ae-modebar-above");
  }
  for (const member of row) {
    if (member.fit.row?.t === t && member.fit.row?.h === h) continue;
    member.fit.row = { t, h };
    member.relay();
  }
  if (chart.fit.row?.t === t && chart.fit.row?.h === h) await hangTitle(chart);
}

// A title hung from the top lands TITLE_PAD px below it: plotly.js hangs one of several lines
// higher, by what is measured here once per title (kept, as the next drawing's pad).
async function hangTitle(chart) {
  const gd = chart.div;
  const title = gd.querySelector(".g-gtitle .gtitle");
  const text = titleOf(gd.layout);
  if (!title || !text) return;
  const off = title.getBoundingClientRect().top - gd.getBoundingClientRect().top;
  if (Math.abs(off - TITLE_PAD) < 0.5) return;
  const shift = (chart.fit.titleShifts.get(text) ?? 0) + TITLE_PAD - off;
  chart.fit.titleShifts.set(text, shift);
  await window.Plotly.relayout(gd, { "title.pad.t": Math.max(0, TITLE_PAD + shift) });
}

addStyle("ae-chart-style", `.ae-chart.ae-modebar-above { margin-top: var(--ae-modebar); }
.ae-chart.ae-modebar-above .modebar-container { top: calc(-1 * var(--ae-modebar)) !important; }`);
