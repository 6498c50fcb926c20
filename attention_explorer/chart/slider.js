// The scale slider, which lives in the browser while it moves, and the frames it plays.
//
// While the slider is dragged, the charts that follow it show the frame of the stop under
// the pointer (preview.js); on release (pointer up, or a keyboard step) the stop goes back
// to Python. Frames arrive as elements of height 0: every stop's in one, or (past 128
// tokens) one stop's per element, a release sending the stop that came into reach. Every
// stop's frames of the head shown (2 MB at 45 tokens) are asked for once a run is over:
// the run that changed the head, layer, mask or text drew its charts from the layer's
// heads at the stop, and sent none.

import { allSources, decodeFrames, frameFor, frameOf, framesAt, headerText, source } from "./frames.js";
import { schedule, settled } from "./plot.js";
import { restorePlotly, showFrame } from "./preview.js";

const sliders = new WeakMap(); // parentElement -> slider

// Frames arrived: hold them for their slider, and draw what they bring to the current stop.
export function mountFrames(component) {
  const { data, parentElement } = component;
  if (!parentElement.querySelector(".ae-frames")) {
    const marker = document.createElement("div");
    marker.className = "ae-frames";
    parentElement.appendChild(marker);
  }
  // Decoding is cheap next to the transfer, but skip it when the same frames come again.
  const header = headerText(data);
  const src = source(JSON.parse(header).source);
  if (src.held.get(parentElement)?.header === header) return;
  const frames = decodeFrames(data);
  frames.header = header;
  src.held.set(parentElement, frames);
  parentElement.querySelector(".ae-frames").dataset.bytes = String(data.byteLength);
  if (src.head === null && frames.head !== undefined) src.head = frames.head;
  if (src.slider) askForFrames(src, src.slider); // perhaps the frames it asked for
  if (src.slider && src.stop !== null) src.slider.describe(src.stop);
  // A neighbouring stop's frames (or another head's) wait for their turn; nothing to draw now.
  if (src.stop !== null && frameOf(frames, src.stop, src.head) < 0) return;
  // Frames of the current stop alone arrive after a jump (a drag's release): show the
  // stop at once over the images Plotly drew, then draw the exact figures.
  if (frames.scales.length === 1 && frames.axis !== "head" && src.stop !== null) showFrame(src, src.stop);
  for (const chart of src.charts) if (!schedule(chart)) settled(chart);
}

// Whether `slider` plays frames of every stop it does not hold yet: those of the layer and
// head Python drew (its data's `frames` and `head`), while the browser shows that head.
function lacks(src, slider) {
  const want = slider.wants;
  if (!want || src.head !== want.head) return false;
  for (const frames of src.held.values()) {
    if (frames.id === want.id && frames.head === want.head && frames.axis !== "head") return false;
  }
  return true;
}

// Ask Python for the frames `slider` lacks once the run is over and the page idle (its
// charts drawn first), again if they have not come 5 s after (a run that replaced the
// one asked for), at most three times; the slider is pending until they come.
const RETRY_MS = 5000;
function askForFrames(src, slider) {
  if (!lacks(src, slider)) {
    slider.asking = null;
    delete slider.wrap.dataset.pending;
    return;
  }
  slider.wrap.dataset.pending = "1"; // until they arrive (the tests wait on it)
  const want = slider.wants;
  const key = `${want.id}:${want.head}`;
  if (slider.asking === key) return;
  slider.asking = key;
  const ask = (tries) => whenRunOver(() => {
    if (slider.asking !== key || !lacks(src, slider) || !slider.wrap.isConnected) return;
    slider.ask(want);
    if (tries > 1) setTimeout(() => ask(tries - 1), RETRY_MS);
  });
  ask(3);
}

// `callback` once the app's script is not running (at once if it is not), when the page is idle.
const afterRun = [];
function whenRunOver(callback) {
  afterRun.push(callback);
  if (!whenRunOver.watching) {
    whenRunOver.watching = true;
    new MutationObserver(runOver).observe(document.body, {
      subtree: true,
      attributes: true,
      attributeFilter: ["data-test-script-state"],
    });
  }
  runOver();
}

function runOver() {
  const state = document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState;
  if (state === "running" || state === "rerunRequested") return;
  const idle = window.requestIdleCallback ?? ((f) => setTimeout(f, 50));
  for (const callback of afterRun.splice(0)) idle(callback, { timeout: 500 });
  idle(stillHeld, { timeout: 500 });
}

// After every run, each slider checks it still holds the frames it plays: a run that did
// not send them again took them off the page (a new session, after a lost connection came
// back through another replica, has asked for nothing yet).
function stillHeld() {
  for (const src of allSources()) if (src.slider?.wrap.isConnected) askForFrames(src, src.slider);
}

// Release: the stop goes back to Python, which draws the exact figures. Back on the stop
// Python last drew, put its images back. Charts drawn from float32 frames get the exact
// figure of the stop now.
function release(src, slider, stop) {
  src.stop = stop;
  if (stop !== slider.held) slider.send(stop);
  slider.held = stop;
  redrawExact(src, stop);
}

// Every chart that follows `src` drawn exactly at `stop` and the head shown, after the
// previews: from float32 frames in the browser, else by Python (back on the stop it drew,
// its own images put back).
export function redrawExact(src, stop) {
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
}

// The slider's range input, in `parentElement`, playing `src`'s frames as it moves.
function makeSlider(parentElement, src, name) {
  const wrap = document.createElement("div");
  wrap.className = "ae-scale";
  const id = `ae-scale-${name}`;
  wrap.innerHTML = `<label class="ae-scale-label" for="${id}"></label>
    <div class="ae-scale-value" aria-hidden="true"></div>
    <input id="${id}" type="range" min="0" step="1"
      style="width: 100%; accent-color: var(--st-primary-color)">`;
  parentElement.appendChild(wrap);
  const input = wrap.querySelector("input");
  const slider = { wrap, input, pending: null, placed: undefined, held: null };
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
  input.addEventListener("change", () => release(src, slider, Number(input.value)));
  return slider;
}

// The slider's data arrived: {kind: "scale", source, label, stops, stop, placed, labels?,
// frames?, head?}; `frames` names the frames of every stop of head `head` to ask for.
export function mountSlider(component) {
  const { data, parentElement, setStateValue, setTriggerValue } = component;
  const src = source(data.source);
  let slider = sliders.get(parentElement);
  if (!slider) {
    slider = makeSlider(parentElement, src, data.source);
    sliders.set(parentElement, slider);
  }
  // The latest mount's setter: the slider moves between the page's fragments (its own
  // when the frames draw every chart, else the charts'), and the setter names the one
  // whose run a release starts.
  slider.send = (stop) => setStateValue("stop", stop);
  slider.ask = (want) => setTriggerValue("frames", want);
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
  if (src.head === null && data.head !== undefined) src.head = data.head;
  slider.wants = data.frames === undefined ? null : { id: data.frames, head: data.head };
  askForFrames(src, slider);
  for (const chart of src.charts) schedule(chart);
}
