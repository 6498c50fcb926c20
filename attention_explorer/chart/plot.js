// A chart: mounted once per element and redrawn in place with Plotly.react (st.plotly_chart
// would remount it). Every event ends in `look`, which names what the chart is (state.js)
// and queues the drawing it owes; drawings run one chart a task, those in the window first,
// so the previews show a release at once and the socket keeps room between drawings.

import { download } from "./download.js";
import { figureAt, writeGaps } from "./bindings.js";
import {
  allSources, awaits, bundleHeaders, decodeBundle, follow, forget as forgetFrames, frameFor, frameOf,
  replaced, shownFrames, shownKey, source, wanted,
} from "./frames.js";
import { hoverLines } from "./hover_lines.js";
import { alignRow, drawnAtAnotherWidth, fitNarrow, fitted, fittedData } from "./narrow.js";
import { plotlyReady } from "./plotly_loader.js";
import { restorePlotly, showFrame } from "./preview.js";
import { Chart, PENDING, stateOf } from "./state.js";
import { themeKey, themed } from "./theme.js";

const charts = new WeakMap(); // parentElement -> chart
const queue = new Set();
let pumping = false; // the queue is being drawn
let scheduled = null; // when it will be: "soon" (next task), "after previews" (two frames on)

// Shapes drawn over a chart, by its key (mountShapes): the model view's outline moves while
// its large grid stays the same data, which Streamlit resends as a reference.
const overlays = new Map();

const byKey = new Map(); // the chart's key (Python's, in its data) -> chart

// The shapes over `chart` now.
const overlayOf = (chart) => overlays.get(chart.key) ?? null;

// Whether `chart` shows its stop and head, its overlay, at its width. Its data as they came
// are drawn at a head and stop (`live.head`, `live.drawn`): the frames of those, when they
// come, would draw the same numbers again.
function current(chart) {
  const want = wanted(chart);
  const shows = want === chart.shows || (chart.shows === null && want === asTheyCame(chart));
  return shows && overlayOf(chart) === (chart.drawn?.overlay ?? null) && !chart.relaid;
}

// The frames a chart's data as they came are the numbers of, named as wanted() names them.
function asTheyCame(chart) {
  const live = chart.live;
  return live?.head === undefined || live.drawn === undefined ? undefined : shownKey(chart, live.head, live.drawn);
}

// What `chart` is now (state.js), marked on its element for the page's waits.
function look(chart) {
  const details = chart.div.closest("details:not([open])");
  if (details) unfold(details);
  const state = stateOf({
    drawing: chart.drawing > 0,
    drawn: chart.drawn !== null,
    near: chart.near,
    hidden: Boolean(details) || !chart.div.isConnected,
    owed: !current(chart),
    awaits: awaits(chart),
    moving: Boolean(chart.live && source(chart.live.source).moving),
  });
  const { dataset, style } = chart.div;
  dataset.state = state;
  if (PENDING.has(state) && !dataset.pending) dataset.pending = "1";
  if (!PENDING.has(state)) delete dataset.pending;
  if (state === "away") dataset.away = "1";
  else delete dataset.away;
  // Far away and owed new data: a jump to it shows nothing for a moment, not stale data.
  style.visibility = state === "away" && chart.drawn?.spec !== chart.sent.spec ? "hidden" : "";
  return state;
}

// Look at `chart`, and queue the drawing it owes: after the previews are on screen, in the
// next task (`soon`: a first drawing) or at once (`now`: new data, beside Streamlit's render).
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

// The queue runs after two frames (the preview painted, then on screen), or `soon`, next
// task: a drawing asked for soon does not wait for a run after previews already planned.
function enqueue(chart, soon) {
  queue.add(chart);
  if (pumping || scheduled === "soon" || (scheduled && !soon)) return;
  scheduled = soon ? "soon" : "after previews";
  if (soon) setTimeout(pump, 0);
  else requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(pump, 0)));
}

// One in the window first, else the oldest. The observer says what is in the window (watch):
// measuring here would force a layout between Streamlit's renders.
function next() {
  for (const chart of queue) if (chart.inWindow) return chart;
  return queue.values().next().value;
}

async function pump() {
  if (pumping) return; // a run planned earlier, and one is under way
  pumping = true;
  scheduled = null;
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

// Draw `chart` as it should show now: its data as they came, or its stop and head.
function draw(chart) {
  chart.shows = wanted(chart);
  const found = chart.shows === null ? null : shownFrames(chart);
  if (found || chart.shows === null) chart.div.classList.remove("ae-waiting"); // at its stop
  return react(chart, found ? figureAt(chart, found.frames, found.frame) : chart.figure);
}

// A chart more than a window's height from view waits until it comes near: plotly.js replots
// the whole figure for new numbers, and no one sees it. Printing draws them all.
const watchers = new Map(); // the element that scrolls -> its IntersectionObservers

// The element that scrolls `element` (Streamlit's main area): a root margin needs that box.
function scroller(element) {
  for (let node = element.parentElement; node; node = node.parentElement) {
    if (/auto|scroll/.test(getComputedStyle(node).overflowY)) return node;
  }
  return null;
}

window.addEventListener("beforeprint", () => {
  for (const div of document.querySelectorAll(".ae-chart[data-away]")) draw(Chart.of(div));
});

function watch(chart) {
  const root = scroller(chart.host);
  if (!watchers.has(root)) {
    const inWindow = (entries) => {
      for (const entry of entries) Chart.of(entry.target).inWindow = entry.isIntersecting;
    };
    const seen = (entries) => {
      for (const entry of entries) {
        const chart = Chart.of(entry.target);
        chart.near = entry.isIntersecting;
        settle(chart, chart.drawn ? undefined : "soon");
      }
    };
    // In the window first: both report in one task, so `next` knows it before a drawing.
    watchers.set(root, [
      new IntersectionObserver(inWindow, { root }),
      new IntersectionObserver(seen, { root, rootMargin: "100% 0px" }),
    ]);
  }
  for (const watcher of watchers.get(root)) watcher.observe(chart.div);
}

// A closed expander's charts wait until it is opened (a table redraws slowly).
const unfolding = new WeakSet(); // the expanders watched
function unfold(details) {
  if (unfolding.has(details)) return;
  unfolding.add(details);
  details.addEventListener("toggle", () => {
    if (!details.open) return;
    for (const src of allSources()) for (const chart of src.charts) if (details.contains(chart.div)) settle(chart);
  });
}

// Draw `figure` in `chart` with Plotly.react, then fit it to a narrow screen.
async function react(chart, figure) {
  chart.drawing += 1;
  look(chart);
  const Plotly = await plotlyReady;
  // Made once: Plotly.react rebuilds the plot for a new config (functions by identity). Our
  // camera replaces plotly.js's (download.js); "Share chart" would upload to Plotly's cloud.
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
  chart.drawn = { figure, spec: chart.sent.spec, overlay: overlayOf(chart) };
  chart.relaid = false; // drawn now, at the element's width
  try {
    const layout = fitted(chart, overlaid(figure, chart.drawn.overlay));
    await Plotly.react(chart.div, fittedData(chart, figure), themed(layout, chart.host), chart.plotConfig);
    chart.div.style.minHeight = ""; // the room kept until its first drawing
    await fitNarrow(chart, figure);
    await alignRow(chart); // with the charts beside it
  } finally {
    chart.drawing -= 1;
  }
  followWidth(chart); // its element changed width while it was drawn
  restorePlotly(chart, true); // the frame drawn is the one the preview showed
  if (!chart.listening) {
    chart.listening = true;
    chart.div.on("plotly_click", (event) => chart.click(event));
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

// Its element changed width since it was drawn: drawn again, fitted (narrow.js); react calls
// this again after a drawing under way.
function followWidth(chart) {
  if (!chart.drawing && chart.drawn && drawnAtAnotherWidth(chart)) chart.relay();
}

// A chart's data arrived (new, or the same again): draw what it should show now.
export function mountChart(component) {
  const { data, parentElement, setTriggerValue } = component;
  let chart = charts.get(parentElement);
  if (!chart) {
    const div = parentElement.appendChild(Object.assign(document.createElement("div"), { className: "ae-chart" }));
    div.style.width = "100%";
    chart = new Chart(parentElement, div, settle);
    charts.set(parentElement, chart);
    watch(chart);
  }
  chart.trigger = setTriggerValue;
  if (byKey.get(chart.key) === chart) byKey.delete(chart.key);
  const changed = chart.take(data, themeKey(chart.host));
  byKey.set(chart.key, chart);
  follow(chart);
  if (!changed) return settle(chart);
  chart.figure = writeGaps(JSON.parse(data.spec));
  // Its room kept until its first drawing: the page below does not jump.
  if (!chart.drawn) chart.div.style.minHeight = `${chart.figure.layout?.height ?? 450}px`;
  chart.cells = null; // the reference figure's customdata, decoded when first needed
  // New data, drawn at the stop and head shown, unless their frames come later in this run.
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

// Shapes for chart `data.chart`: drawn over it now, or with its first drawing.
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

const heard = new WeakMap(); // an element of frames -> its bundle's headers

// A bundle of frames (app/live/slider.py): held for their source, drawn where they are due.
export function mountFrames(component) {
  const { data, parentElement } = component;
  marker(parentElement, "ae-frames").dataset.bytes = String(data.byteLength);
  // The same frames again: nothing to do.
  const headers = bundleHeaders(data);
  if (heard.get(parentElement) === headers) return;
  heard.set(parentElement, headers);
  const bundle = decodeBundle(data);
  forgetFrames(parentElement); // what it held before
  if (!bundle.length) return;
  const src = source(bundle[0].source);
  src.held.set(parentElement, bundle);
  for (const frames of bundle) if (src.head === null && frames.head !== undefined) src.head = frames.head;
  // Another stop's or head's frames wait for their turn.
  if (src.stop !== null && bundle.every((frames) => frameOf(frames, src.stop, src.head) < 0)) return;
  // The current stop's alone (after a jump, past 128 tokens): previewed at once, then drawn.
  const one = bundle.length === 1 && bundle[0].scales.length === 1 && bundle[0].axis !== "head";
  const preview = one && src.stop !== null;
  if (preview) showFrame(src, src.stop);
  // No preview to paint first (new frames of a text, a layer, a head): drawn from the next task.
  for (const chart of src.charts) settle(chart, preview || src.moving ? "after previews" : "soon");
}

// A control of `src` began to move: its charts show previews until the release.
export function moving(src) {
  src.moving = true;
  for (const chart of src.charts) look(chart);
}

// A control of `src` released: its charts drawn after the previews. Back on what Plotly drew
// at a stop and head (`exact`), its drawing put back; a layer or the mask waits for its run.
export function release(src, exact) {
  src.moving = false;
  for (const chart of src.charts) {
    const fromFrames = frameFor(chart) !== null;
    const drawnThere = fromFrames ? current(chart) && !awaits(chart) : src.stop === src.sent;
    if (exact && drawnThere) restorePlotly(chart);
    settle(chart);
  }
}
