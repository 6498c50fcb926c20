// Charts fitted to a phone after each drawing: there plotly.js runs a long title past the
// right edge (it wraps none) and its mode bar over the title, and a table whose header wraps
// pushes its last rows out of its fixed height.

import { addStyle } from "./theme.js";

// The tallest, in px, a table grows to show every row.
const TABLE_MAX = 700;
// A figure of several panels whose labels run off the side or into each other on a phone
// is drawn up to WIDE px wide, and its column scrolls sideways.
const WIDE = 640;

// The chart's width, as a ResizeObserver last saw it (read without forcing a layout).
export function widthOf(chart) {
  if (!chart.resizes) {
    chart.resizes = new ResizeObserver(([entry]) => {
      chart.width = Math.round(entry.contentRect.width);
      chart.followWidth?.();
    });
    chart.resizes.observe(chart.div);
  }
  return chart.width ?? chart.div.clientWidth;
}

// Its column changed width (presentation mode, the sidebar), which plotly.js's `responsive`,
// following the window only, misses: plot.js draws it again and fits it anew.
export function drawnAtAnotherWidth(chart) {
  const drawn = chart.div._fullLayout?.width;
  return Boolean(drawn && chart.width && Math.abs(drawn - chart.width) > 1);
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
  const fit = chart.titleFits?.get(`${width}|${titleOf(layout)}`);
  if (fit) {
    out.title = { ...(typeof layout.title === "object" ? layout.title : {}), ...fit.title };
    out.margin.t = (layout.margin?.t ?? 100) + fit.extra;
    out.height = (layout.height ?? 450) + fit.extra;
  }
  const table = chart.tableFit;
  if (table?.fit === fitKey(chart, figure)) out.height = Math.max(out.height ?? 0, table.height);
  return out;
}

const measurer = document.createElement("canvas").getContext("2d");

// `text` (a title line, no markup) broken at spaces into lines no wider than `room` px, in
// the font of the SVG text `element`.
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
  if (!source || !title || chart.titleFits?.has(key)) return null;
  const [box, drawn] = [gd.getBoundingClientRect(), title.getBoundingClientRect()];
  const [margin, height] = [gd._fullLayout.margin.t, gd._fullLayout.height];
  if (!drawn.width || drawn.right <= box.right - 1) return null;
  const room = box.right - 8 - drawn.left;
  const lines = source.split(/<br\s*\/?>/i).flatMap((line) => {
    const tagged = line.match(/^<(\w+)>([^<]*)<\/\1>$/); // a whole line in <sup> or <b>
    if (tagged) return wrapLine(tagged[2], room, title).map((part) => `<${tagged[1]}>${part}</${tagged[1]}>`);
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
  (chart.titleFits ||= new Map()).set(key, { title: hung, extra });
  return { "margin.t": margin + extra, height: height + extra };
}

// Once per width and layout: reading a size after Plotly.react forces the page's layout,
// which a redraw with new numbers only need not pay.
export async function fitNarrow(chart, figure) {
  const gd = chart.div;
  const layout = gd._fullLayout;
  const width = widthOf(chart);
  const fit = fitKey(chart, figure);
  if (!layout || !width || chart.fittedFor === fit) return;
  const update = (await wrapTitle(chart, gd, titleOf(figure.layout), width)) ?? {};
  const view = gd.querySelector(".table-control-view")?.__data__;
  if (view && gd._fullData.length === 1) {
    const rows = (blocks) => (blocks || []).reduce((sum, b) => sum + b.rows.reduce((s, r) => s + (r.rowHeight || 0), 0), 0);
    const margin = (update["margin.t"] ?? layout.margin.t) + layout.margin.b;
    const needed = Math.ceil(rows(view.headerRowBlocks) + rows(view.rowBlocks) + margin + 2);
    if (needed > (update.height ?? layout.height) && needed <= TABLE_MAX) {
      update.height = needed;
      chart.tableFit = { fit, height: needed };
    }
  }
  if (Object.keys(update).length) await window.Plotly.relayout(gd, update);
  if (!chart.wide && crowded(gd)) {
    chart.wide = Math.max(width + 1, Math.min(WIDE, Math.round(width * 1.6)));
    gd.style.minWidth = `${chart.wide}px`; // then drawn again at that width (plot.js)
    chart.host.style.overflowX = "auto";
  }
  const bar = gd.querySelector(".modebar")?.getBoundingClientRect();
  if (bar && !gd.classList.contains("ae-modebar-above")
    && boxes(gd, ".g-gtitle .gtitle, .annotation-text, .legendtext").some((r) => overlap(r, bar))) {
    gd.style.setProperty("--ae-modebar", `${Math.ceil(bar.height) + 2}px`);
    gd.classList.add("ae-modebar-above");
  }
  chart.fittedFor = fit;
}

addStyle("ae-chart-style", `.ae-chart.ae-modebar-above { margin-top: var(--ae-modebar); }
.ae-chart.ae-modebar-above .modebar-container { top: calc(-1 * var(--ae-modebar)) !important; }`);
