// A chart: mounted once per element, drawn with Plotly.react and updated in place.
//
// Streamlit calls the component again whenever a chart's data change; the chart stays in
// the same element and Plotly.react draws the new figure (st.plotly_chart would remount
// it). A chart whose `live.drawn` is set got a reference figure (the same data at every
// stop, so Streamlit resends only a reference to it): with float32 frames the exact figure
// of any stop is that figure with the stop's frame put in (exact.js), drawn at release.
// Redraws wait their turn in a queue, so a release shows the new stop at once (the
// previews) and spends Plotly.react's time after.

import { download } from "./download.js";
import { figureAt } from "./exact.js";
import { allSources, awaits, follow, replaced, shownFrames, wanted } from "./frames.js";
import { hoverLines } from "./hover_lines.js";
import { drawnAtAnotherWidth, fitNarrow, fitted } from "./narrow.js";
import { plotlyReady } from "./plotly_loader.js";
import { restorePlotly } from "./preview.js";
import { themeKey, themed } from "./theme.js";

const charts = new WeakMap(); // parentElement -> chart

// Shapes Python sends apart from a chart's figure, by the chart's key (mountShapes): the
// browser draws them over it. The model view's outline of the head shown moves so while
// its grid, a large figure, stays the same data, which Streamlit resends as a reference.
const overlays = new Map();

// The key of the Streamlit element `element` is in, once it is in the page.
function keyOf(element) {
  return element.closest("[class*='st-key-']")?.className.match(/st-key-(\S+)/)?.[1];
}

// The shapes over `chart` now. Its key is its element's, known once the element is in the
// page (a chart may be mounted before).
function overlayOf(chart) {
  chart.key ??= keyOf(chart.host);
  return overlays.get(chart.key) ?? null;
}

// `figure` with `shapes` drawn over it (after its own).
function overlaid(figure, shapes) {
  if (!shapes) return figure;
  return { ...figure, layout: { ...figure.layout, shapes: [...(figure.layout.shapes ?? []), ...shapes] } };
}

// Whether `chart` shows what it should: its stop and head, and its overlay.
function current(chart) {
  return wanted(chart) === chart.shows && overlayOf(chart) === chart.overlay;
}

// Draw `chart` at the stop it should show, unless it already does (at its element's width).
function redraw(chart) {
  if (current(chart)) return chart.resized ? react(chart, chart.drawn) : null;
  const want = wanted(chart);
  chart.shows = want;
  chart.version += 1;
  chart.div.dataset.pending = "1";
  if (want === null) return react(chart, chart.figure);
  const { frames, frame } = shownFrames(chart);
  return react(chart, figureAt(chart, frames, frame));
}

// Shapes for the chart `data.chart` arrived ({kind: "shapes", chart, shapes}): drawn over
// its figure, now if it is drawn, else with it (react).
export function mountShapes(component) {
  const { data, parentElement } = component;
  if (!parentElement.querySelector(".ae-shapes")) {
    const marker = document.createElement("div"); // draws nothing itself
    marker.className = "ae-shapes";
    parentElement.appendChild(marker);
  }
  if (JSON.stringify(overlays.get(data.chart)) === JSON.stringify(data.shapes)) return;
  overlays.set(data.chart, data.shapes);
  const chart = document.querySelector(`.st-key-${CSS.escape(data.chart)} .ae-chart`)?.aeChart;
  if (chart?.drawn) schedule(chart);
}

// Redraws from frames wait their turn, one chart per task, after two frames: a release
// shows the new stop at once (the previews), sends it to Python, and only then
// spends Plotly.react's 10-40 ms per chart, leaving the socket room in between.
const queue = new Set();
let pumping = false;

// A chart with nothing left to draw is no longer pending (unless Plotly is drawing it, it
// waits for the observer's first look to know whether it is near, see away, or it keeps
// another head or stop until the frames of the one shown arrive, see awaits).
export function settled(chart) {
  if (chart.reacting || queue.has(chart) || unseen(chart) || owes(chart)) return;
  delete chart.div.dataset.pending;
}

// A chart in view that keeps another head or stop until the frames of the one shown
// arrive (awaits): it owes a drawing. One folded away or far from the window draws when
// it is opened or comes near, and owes nothing now.
function owes(chart) {
  return awaits(chart) && chart.div.isConnected && !chart.div.closest("details:not([open])")
    && chart.near !== false;
}

// A chart never drawn that the observer has not looked at yet: near or far, it owes a drawing.
function unseen(chart) {
  return !chart.drawn && chart.near === undefined;
}

// Queue `chart` for a redraw when it shows other than it should; whether it was queued.
// `first`: its first drawing, as it comes near (watch), which has no preview to wait for.
export function schedule(chart, first = false) {
  if (current(chart) && !chart.resized) return false;
  queue.add(chart);
  chart.div.dataset.pending = "1"; // until drawn (the tests wait on it)
  if (!pumping) {
    pumping = true;
    // two frames: the first paints the preview, the second puts it on screen
    if (first) setTimeout(pump, 0);
    else requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(pump, 0)));
  }
  return true;
}

// The next chart to draw: one in the window before the others (what the reader sees first:
// on a first load, the first screen), else the one queued first. What is in the window is
// the observer's (watch): measuring each chart here would force a layout of the page
// between Streamlit's renders, once per chart passed over far away.
function next() {
  for (const chart of queue) if (chart.inWindow) return chart;
  return queue.values().next().value;
}

// A chart far from the window is not drawn until it comes near, the first time too, and
// not again whatever changed (a head, a stop, a width, new data: a layer, the mask, a
// text): plotly.js replots a whole figure, axes and all, for new numbers (20-40 ms a chart,
// docs/benchmarks.md; 100-150 ms for a first drawing, its labels measured), and no one
// sees a chart that far. Near: within a window's height above or below it, so a chart is
// drawn a window before it scrolls into view; a page about to print draws them all.
const watchers = new Map(); // the element that scrolls -> its IntersectionObservers

// The element whose scrolling moves `element` (Streamlit's main area scrolls, not the
// page): a margin only reaches as far as the box it is measured in.
function scroller(element) {
  for (let node = element.parentElement; node; node = node.parentElement) {
    if (/auto|scroll/.test(getComputedStyle(node).overflowY)) return node;
  }
  return null;
}

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
        if (chart.near && chart.div.dataset.away && !schedule(chart, !chart.drawn)) {
          delete chart.div.dataset.away;
        }
        if (!chart.near && !chart.drawn) settled(chart); // seen far: it waits, owing nothing now
      }
    };
    // The window's first: both report in one task, so a chart is known to be in the window
    // by the time the one that comes near is drawn (next).
    watchers.set(root, [
      new IntersectionObserver(inWindow, { root }),
      new IntersectionObserver(seen, { root, rootMargin: "100% 0px" }),
    ]);
  }
  if (!watch.printing) {
    watch.printing = true;
    window.addEventListener("beforeprint", () => {
      for (const div of document.querySelectorAll(".ae-chart[data-away]")) redraw(div.aeChart);
    });
  }
  chart.div.aeChart = chart;
  for (const watcher of watchers.get(root)) watcher.observe(chart.div);
}

// Whether `chart`, owed a drawing, waits until it comes near (marked `data-away` until
// then). A chart never drawn waits for the observer's first look (its room kept, see
// mountChart); one drawn and owed new data is hidden meanwhile: a jump to it (the End key)
// shows nothing for a redraw's time rather than the layer or text before.
function away(chart) {
  if (!chart.drawn) {
    if (chart.near) return false;
    chart.div.dataset.away = "1";
    if (unseen(chart)) chart.div.dataset.pending = "1"; // until that first look
    return true;
  }
  if (chart.near !== false) return false;
  if (current(chart) && !chart.resized) return false; // nothing to draw
  chart.div.dataset.away = "1";
  chart.div.style.visibility = chart.drawnSpec === chart.spec ? "" : "hidden";
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
      for (const src of allSources()) {
        for (const other of src.charts) if (details.contains(other.div)) schedule(other);
      }
    });
  }
  return true;
}

async function pump() {
  try {
    while (queue.size) {
      const chart = next();
      queue.delete(chart);
      const due = chart.div.isConnected && !folded(chart) && !away(chart);
      const drawing = due ? redraw(chart) : null;
      if (drawing === null) {
        if (!chart.reacting && !unseen(chart) && !owes(chart)) delete chart.div.dataset.pending;
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

// Draw `figure` in `chart` with Plotly.react, then fit it to a narrow screen.
async function react(chart, figure) {
  const Plotly = await plotlyReady;
  const version = chart.version;
  // plotly.js gets a config of its own, made once: Plotly.react compares the config it is
  // given with the plot's (functions by identity) and rebuilds the whole plot when they
  // differ, about three times a redraw's cost. The export options (a file name per
  // settings) are our camera's (download.js), which replaces plotly.js's; its "Share
  // chart..." would upload to Plotly's cloud.
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
  // Bars and shapes restyled during a drag differ from the figure, so react redraws them.
  chart.reacting = (chart.reacting || 0) + 1;
  chart.drawn = figure;
  chart.overlay = overlayOf(chart); // in the page by now: its key is known
  chart.drawnSpec = chart.spec;
  delete chart.div.dataset.away;
  chart.div.style.visibility = "";
  chart.resized = false; // drawn now, at the element's width
  // What plotly.js writes of what the preview touched is its own again, even when it wrote
  // the same value (a bar the preview moved where the new figure has it).
  const writes = chart.touched?.size ? watchWrites(chart.div) : null;
  try {
    const layout = fitted(chart, overlaid(figure, chart.overlay));
    await Plotly.react(chart.div, figure.data, themed(layout, chart.host), chart.plotConfig);
    chart.div.style.minHeight = ""; // the room kept until its first drawing
    await fitNarrow(chart, figure);
  } finally {
    chart.reacting -= 1;
  }
  followWidth(chart); // its element changed width while it was drawn
  restorePlotly(chart, writes?.stop());
  if (!chart.listening) {
    chart.listening = true;
    chart.div.on("plotly_click", (event) => chart.onClick(event));
    chart.div.on("plotly_hover", (event) => hoverLines(chart, event.points?.[0]));
    chart.div.on("plotly_unhover", () => hoverLines(chart, null));
  }
  // Drawn, unless it was asked for since: another draw (queued, or a newer version) or a
  // head or stop whose frames are still to come (owes).
  if (version === chart.version) settled(chart);
}

// Watch the attributes written in `element`'s subtree; stop() gives them, by element.
function watchWrites(element) {
  const seen = new Map();
  const note = (records) => {
    for (const record of records) {
      if (!seen.has(record.target)) seen.set(record.target, new Set());
      seen.get(record.target).add(record.attributeName);
    }
  };
  const observer = new MutationObserver(note);
  observer.observe(element, { subtree: true, attributes: true });
  return {
    stop() {
      note(observer.takeRecords()); // those not yet delivered
      observer.disconnect();
      return seen;
    },
  };
}

// `chart`'s element changed width since it was drawn: the same figure, drawn again in
// its turn and fitted to the new width (narrow.js). Not while Plotly.react draws it:
// react calls this again after.
function followWidth(chart) {
  if (chart.reacting || !chart.drawn || !drawnAtAnotherWidth(chart)) return;
  chart.resized = true;
  schedule(chart);
}

// A chart's data arrived (new, or the same again): draw what it should show now.
export function mountChart(component) {
  const { data, parentElement, setTriggerValue } = component;
  let chart = charts.get(parentElement);
  if (!chart) {
    const div = document.createElement("div");
    div.className = "ae-chart";
    div.style.width = "100%";
    parentElement.appendChild(div);
    chart = { div, host: parentElement, key: keyOf(parentElement), version: 0, listening: false, overlay: null };
    chart.followWidth = () => followWidth(chart); // the ResizeObserver's (narrow.js)
    charts.set(parentElement, chart);
    watch(chart);
  }
  chart.config = data.config; // the export options, for the camera (download.js)
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
  chart.live = data.live || null;
  follow(chart);
  const same = chart.spec === data.spec && chart.liveText === JSON.stringify(chart.live);
  if (same && chart.theme === themeKey(chart.host)) return schedule(chart); // at most a new stop
  chart.theme = themeKey(chart.host);
  chart.spec = data.spec;
  chart.liveText = JSON.stringify(chart.live);
  chart.figure = JSON.parse(data.spec);
  // Until it is first drawn, the chart keeps its figure's room: the page below it does not
  // move when it is drawn, and the charts far from the window are seen to be (away).
  if (!chart.drawn) chart.div.style.minHeight = `${chart.figure.layout?.height ?? 450}px`;
  chart.cells = null; // the reference figure's customdata, decoded when first needed
  // New data: draw them (at the current stop, from frames), unless their frames (new
  // settings: a layer, the mask, a text) are still to come in this run: until then the
  // chart keeps what it shows (wanted), not its reference figure's other head for a moment.
  if (!replaced(chart)) chart.shows = undefined;
  // A live chart drawn once, now in a closed expander, draws again when it is opened
  // (folded): a head or layer switch need not wait for a table no one sees.
  if (chart.live && chart.div._fullLayout && folded(chart)) return schedule(chart);
  return away(chart) ? null : redraw(chart);
}

// The chart in `element`, which has left the page: free its plot.
export function forget(element) {
  const chart = charts.get(element);
  if (!chart) return;
  for (const watcher of [...watchers.values()].flat()) watcher.unobserve(chart.div);
  if (window.Plotly) window.Plotly.purge(chart.div);
}
