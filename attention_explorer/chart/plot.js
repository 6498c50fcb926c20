// A chart: mounted once per element, drawn with Plotly.react and updated in place.
//
// Streamlit calls the component again whenever a chart's data change; the chart stays in
// the same element and Plotly.react draws the new figure (st.plotly_chart would remount
// it). A chart whose `live.drawn` is set got a reference figure (the same data at every
// stop and head, so Streamlit resends only a reference to it): the exact figure of any
// stop and head is that figure with their frame put in (exact.js). Every event here ends
// in `look`, which names what the chart is (state.js) and queues the drawing it owes.
// Drawings wait their turn in the queue, one chart a task, those in the window first: a
// control's release shows the new stop at once (the previews) and spends Plotly.react's
// 10-40 ms per chart after, leaving the socket room in between.

import { download } from "./download.js";
import { figureAt } from "./exact.js";
import {
  allSources, awaits, bundleHeaders, decodeBundle, follow, forget as forgetFrames, frameFor, frameOf,
  replaced, shownFrames, source, wanted,
} from "./frames.js";
import { hoverLines } from "./hover_lines.js";
import { drawnAtAnotherWidth, fitNarrow, fitted } from "./narrow.js";
import { plotlyReady } from "./plotly_loader.js";
import { restorePlotly, showFrame } from "./preview.js";
import { PENDING, stateOf } from "./state.js";
import { themeKey, themed } from "./theme.js";

const charts = new WeakMap(); // parentElement -> chart
const queue = new Set();
let pumping = false;

// Shapes Python sends apart from a chart's figure, by the chart's key (mountShapes), drawn
// over it: the model view's outline of the head shown moves so while its grid, a large
// figure, stays the same data, which Streamlit resends as a reference.
const overlays = new Map();

const byKey = new Map(); // the chart's key (Python's, in its data) -> chart

// The shapes over `chart` now.
const overlayOf = (chart) => overlays.get(chart.key) ?? null;

// Whether `chart` shows what it should: its stop and head, its overlay, at its width.
function current(chart) {
  return wanted(chart) === chart.shows && overlayOf(chart) === chart.overlay && !chart.resized;
}

// What `chart` is now (state.js), marked on its element.
function look(chart) {
  const details = chart.div.closest("details:not([open])");
  if (details) unfold(details);
  const state = stateOf({
    drawing: chart.reacting > 0,
    drawn: Boolean(chart.drawn),
    near: chart.near,
    hidden: Boolean(details) || !chart.div.isConnected,
    owed: !current(chart),
    awaits: awaits(chart),
    moving: Boolean(chart.live && source(chart.live.source).moving),
  });
  chart.state = state;
  const { dataset, style } = chart.div;
  dataset.state = state;
  if (PENDING.has(state) && !dataset.pending) dataset.pending = "1";
  if (!PENDING.has(state)) delete dataset.pending;
  if (state === "away") dataset.away = "1";
  else delete dataset.away;
  // A chart drawn and owed new data far away is hidden meanwhile: a jump to it (the End
  // key) shows nothing for a drawing's time rather than the layer or text before.
  style.visibility = state === "away" && chart.drawnSpec !== chart.spec ? "hidden" : "";
  return state;
}

// Look at `chart`, and queue the drawing it owes: after the previews are on screen, or, with
// no preview to wait for, in the next task (`soon`: a first drawing) or at once (`now`:
// new data, drawn as it arrives, beside Streamlit's rendering of the rest of the run).
function settle(chart, when = "after previews") {
  if (look(chart) !== "queued") return;
  if (when === "now") draw(chart).catch((error) => failed(chart, error));
  else enqueue(chart, when === "soon");
}

// One chart that fails to draw must not stop the others' drawings.
function failed(chart, error) {
  console.error("Attention Explorer: a chart failed to draw", error);
  settle(chart);
}

// Queue `chart` for a drawing; the queue runs after two frames (the first paints the
// preview, the second puts it on screen), or in the next task when `soon`.
function enqueue(chart, soon) {
  queue.add(chart);
  if (pumping) return;
  pumping = true;
  if (soon) setTimeout(pump, 0);
  else requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(pump, 0)));
}

// The next chart to draw: one in the window before the others (on a first load, the first
// screen), else the one queued first. What is in the window is the observer's (watch):
// measuring each chart here would force a layout of the page between Streamlit's renders.
function next() {
  for (const chart of queue) if (chart.inWindow) return chart;
  return queue.values().next().value;
}

async function pump() {
  try {
    while (queue.size) {
      const chart = next();
      queue.delete(chart);
      if (look(chart) !== "queued") continue; // it came current, went away, or is drawing
      await draw(chart).catch((error) => failed(chart, error));
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  } finally {
    pumping = false;
  }
}

// Draw `chart` as it should show now: its data as they came, or the stop and head shown.
function draw(chart) {
  chart.shows = wanted(chart);
  const found = chart.shows === null ? null : shownFrames(chart);
  return react(chart, found ? figureAt(chart, found.frames, found.frame) : chart.figure);
}

// A chart far from the window is not drawn until it comes near, the first time too, and not
// again whatever changed: plotly.js replots a whole figure, axes and all, for new numbers,
// and no one sees a chart that far. Near: within a window's height above or below it, so a
// chart is drawn a window before it scrolls into view; a page about to print draws them all.
const watchers = new Map(); // the element that scrolls -> its IntersectionObservers

// The element whose scrolling moves `element` (Streamlit's main area scrolls, not the
// page): a margin only reaches as far as the box it is measured in.
function scroller(element) {
  for (let node = element.parentElement; node; node = node.parentElement) {
    if (/auto|scroll/.test(getComputedStyle(node).overflowY)) return node;
  }
  return null;
}

window.addEventListener("beforeprint", () => {
  for (const div of document.querySelectorAll(".ae-chart[data-away]")) draw(div.aeChart);
});

function watch(chart) {
  const root = scroller(chart.host);
  if (!watchers.has(root)) {
    const inWindow = (entries) => {
      for (const entry of entries) entry.target.aeChart.inWindow = entry.isIntersecting;
    };
    const seen = (entries) => {
      for (const entry of entries) {
        const chart = entry.target.aeChart;
        chart.near = entry.isIntersecting;
        settle(chart, chart.drawn ? undefined : "soon");
      }
    };
    // The window's first: both report in one task, so a chart is known to be in the window
    // by the time the one that comes near is drawn (next).
    watchers.set(root, [
      new IntersectionObserver(inWindow, { root }),
      new IntersectionObserver(seen, { root, rootMargin: "100% 0px" }),
    ]);
  }
  chart.div.aeChart = chart;
  for (const watcher of watchers.get(root)) watcher.observe(chart.div);
}

// A closed expander's charts wait until it is opened (a Plotly table of 43 rows costs
// 60-150 ms to redraw, as much as all the heatmaps together).
function unfold(details) {
  if (details.aeWatched) return;
  details.aeWatched = true;
  details.addEventListener("toggle", () => {
    if (!details.open) return;
    for (const src of allSources()) for (const chart of src.charts) if (details.contains(chart.div)) settle(chart);
  });
}

// Draw `figure` in `chart` with Plotly.react, then fit it to a narrow screen.
async function react(chart, figure) {
  chart.reacting = (chart.reacting || 0) + 1;
  look(chart);
  const Plotly = await plotlyReady;
  // A config of its own, made once: Plotly.react rebuilds the whole plot when the config
  // differs (functions by identity). Our camera (download.js) replaces plotly.js's; its
  // "Share chart..." would upload to Plotly's cloud.
  chart.plotConfig ??= {
    responsive: false, // the chart follows its element's width, not the window's (narrow.js)
    displaylogo: false,
    modeBarButtonsToRemove: ["toImage", "sendChartToCloud"],
    modeBarButtonsToAdd: [{
      name: "download",
      title: "Download for a slide or a paper",
      icon: Plotly.Icons.camera,
      click: (gd) => download(chart, gd),
    }],
  };
  chart.drawn = figure;
  chart.overlay = overlayOf(chart);
  chart.drawnSpec = chart.spec;
  chart.resized = false; // drawn now, at the element's width
  try {
    const layout = fitted(chart, overlaid(figure, chart.overlay));
    await Plotly.react(chart.div, figure.data, themed(layout, chart.host), chart.plotConfig);
    chart.div.style.minHeight = ""; // the room kept until its first drawing
    await fitNarrow(chart, figure);
  } finally {
    chart.reacting -= 1;
  }
  followWidth(chart); // its element changed width while it was drawn
  restorePlotly(chart, true); // the frame drawn is the one the preview showed
  if (!chart.listening) {
    chart.listening = true;
    chart.div.on("plotly_click", (event) => chart.onClick(event));
    chart.div.on("plotly_hover", (event) => hoverLines(chart, event.points?.[0]));
    chart.div.on("plotly_unhover", () => hoverLines(chart, null));
  }
  settle(chart); // drawn, unless it was asked for since
}

// `figure` with `shapes` drawn over it (after its own).
function overlaid(figure, shapes) {
  if (!shapes) return figure;
  return { ...figure, layout: { ...figure.layout, shapes: [...(figure.layout.shapes ?? []), ...shapes] } };
}

// `chart`'s element changed width since it was drawn: drawn again in its turn, fitted to the
// new width (narrow.js). Not while Plotly.react draws it: react calls this again after.
function followWidth(chart) {
  if (chart.reacting || !chart.drawn || !drawnAtAnotherWidth(chart)) return;
  chart.resized = true;
  settle(chart);
}

// A chart's data arrived (new, or the same again): draw what it should show now.
export function mountChart(component) {
  const { data, parentElement, setTriggerValue } = component;
  let chart = charts.get(parentElement);
  if (!chart) {
    const div = parentElement.appendChild(Object.assign(document.createElement("div"), { className: "ae-chart" }));
    div.style.width = "100%";
    chart = { div, host: parentElement, listening: false, overlay: null };
    chart.followWidth = () => followWidth(chart); // the ResizeObserver's (narrow.js)
    charts.set(parentElement, chart);
    watch(chart);
  }
  chart.key = data.key;
  byKey.set(chart.key, chart);
  chart.config = data.config; // the export options, for the camera (download.js)
  chart.print = data.print || null;
  chart.onClick = (event) => {
    if (!chart.clicks || !event.points.length) return;
    const index = event.points[0].pointIndex;
    setTriggerValue("click", {
      trace: event.points[0].curveNumber,
      row: Array.isArray(index) ? index[0] : index,
      col: Array.isArray(index) ? index[1] : null,
    });
  };
  chart.clicks = Boolean(data.clicks);
  chart.live = data.live || null;
  follow(chart);
  const liveText = JSON.stringify(chart.live);
  const theme = themeKey(chart.host);
  if (chart.spec === data.spec && chart.liveText === liveText && chart.theme === theme) return settle(chart);
  Object.assign(chart, { theme, spec: data.spec, liveText, figure: JSON.parse(data.spec) });
  // Until it is first drawn, the chart keeps its figure's room: the page below does not move
  // when it is drawn, and the charts far from the window are seen to be.
  if (!chart.drawn) chart.div.style.minHeight = `${chart.figure.layout?.height ?? 450}px`;
  chart.cells = null; // the reference figure's customdata, decoded when first needed
  // New data: draw them (at the stop and head shown), unless their frames (a layer, the
  // mask, a text) are still to come in this run: until then it keeps what it shows (wanted).
  if (!replaced(chart)) chart.shows = undefined;
  return settle(chart, "now");
}

// The chart in `element`, which has left the page: free its plot.
export function forget(element) {
  const chart = charts.get(element);
  if (!chart) return;
  if (byKey.get(chart.key) === chart) byKey.delete(chart.key);
  for (const watcher of [...watchers.values()].flat()) watcher.unobserve(chart.div);
  if (window.Plotly) window.Plotly.purge(chart.div);
}

// Shapes for the chart `data.chart` arrived ({kind: "shapes", chart, shapes}): drawn over
// its figure, now if it is drawn, else with it (react).
export function mountShapes(component) {
  const { data, parentElement } = component;
  marker(parentElement, "ae-shapes");
  if (JSON.stringify(overlays.get(data.chart)) === JSON.stringify(data.shapes)) return;
  overlays.set(data.chart, data.shapes);
  const chart = byKey.get(data.chart);
  if (chart?.drawn) settle(chart);
}

// An element that only carries data draws nothing but a marker (page.js hides its room).
function marker(parentElement, name) {
  const div = () => Object.assign(document.createElement("div"), { className: name });
  return parentElement.querySelector(`.${name}`) ?? parentElement.appendChild(div());
}

// Frames arrived, a bundle (app/live/slider.py's send_frames): hold them for their source,
// and draw what they bring to the current stop and head.
export function mountFrames(component) {
  const { data, parentElement } = component;
  marker(parentElement, "ae-frames").dataset.bytes = String(data.byteLength);
  // Decoding is cheap next to the transfer, but skip it when the same frames come again.
  const headers = bundleHeaders(data);
  if (parentElement.aeHeaders === headers) return;
  parentElement.aeHeaders = headers;
  const bundle = decodeBundle(data);
  forgetFrames(parentElement); // what it held before
  if (!bundle.length) return;
  const src = source(bundle[0].source);
  src.held.set(parentElement, bundle);
  for (const frames of bundle) if (src.head === null && frames.head !== undefined) src.head = frames.head;
  // A neighbouring stop's frames (or another head's) wait for their turn; nothing to draw now.
  if (src.stop !== null && bundle.every((frames) => frameOf(frames, src.stop, src.head) < 0)) return;
  // Frames of the current stop alone arrive after a jump (a drag's release): show the
  // stop at once over the images Plotly drew, then draw the exact figures.
  const one = bundle.length === 1 && bundle[0].scales.length === 1 && bundle[0].axis !== "head";
  if (one && src.stop !== null) showFrame(src, src.stop);
  for (const chart of src.charts) settle(chart);
}

// A control of `src` began to move: its charts show previews until the release.
export function moving(src) {
  src.moving = true;
  for (const chart of src.charts) look(chart);
}

// A control of `src` released: every chart that follows it drawn as it should show now,
// after the previews. At a stop and head (`exact`), from float32 frames in the browser, else
// by Python; back on what it drew, its own drawing put back. A layer or the mask waits
// for its run, its preview painted.
export function release(src, exact) {
  src.moving = false;
  for (const chart of src.charts) {
    const fromFrames = frameFor(chart) !== null;
    const drawnThere = fromFrames ? current(chart) && !awaits(chart) : src.stop === src.sent;
    if (exact && drawnThere) restorePlotly(chart);
    settle(chart);
  }
}
