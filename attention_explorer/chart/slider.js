// The scale slider, which lives in the browser while it moves, and the frames it plays.
//
// While the slider is dragged, the charts that follow it show the frame of the stop under
// the pointer (preview.js); on release (pointer up, or a keyboard step) the stop goes back
// to Python. Frames arrive as bundles in elements of height 0, all of a section's in every
// run: the layer's heads at the stop, the head in every layer and unmasked and masked
// there, before the charts; every stop's of the head shown after them (app/live/heads.py);
// past 128 tokens one stop's per element, a release sending the stop that came into reach.

import { bundleHeaders, decodeBundle, forget, frameFor, frameOf, framesAt, heldFrames, source } from "./frames.js";
import { schedule, settled } from "./plot.js";
import { restorePlotly, showFrame } from "./preview.js";

const sliders = new WeakMap(); // parentElement -> slider

// Frames arrived, a bundle: hold them for their slider, and draw what they bring to the
// current stop.
export function mountFrames(component) {
  const { data, parentElement } = component;
  if (!parentElement.querySelector(".ae-frames")) {
    const marker = document.createElement("div");
    marker.className = "ae-frames";
    parentElement.appendChild(marker);
  }
  // Decoding is cheap next to the transfer, but skip it when the same frames come again.
  const headers = bundleHeaders(data);
  if (parentElement.aeHeaders === headers) return;
  parentElement.aeHeaders = headers;
  const bundle = decodeBundle(data);
  forget(parentElement); // what it held before
  if (!bundle.length) return;
  const src = source(bundle[0].source);
  src.held.set(parentElement, bundle);
  parentElement.querySelector(".ae-frames").dataset.bytes = String(data.byteLength);
  for (const frames of bundle) if (src.head === null && frames.head !== undefined) src.head = frames.head;
  if (src.slider && src.stop !== null) src.slider.describe(src.stop);
  // A neighbouring stop's frames (or another head's) wait for their turn; nothing to draw now.
  if (src.stop !== null && bundle.every((frames) => frameOf(frames, src.stop, src.head) < 0)) return;
  // Frames of the current stop alone arrive after a jump (a drag's release): show the
  // stop at once over the images Plotly drew, then draw the exact figures.
  const one = bundle.length === 1 && bundle[0].scales.length === 1 && bundle[0].axis !== "head";
  if (one && src.stop !== null) showFrame(src, src.stop);
  for (const chart of src.charts) if (!schedule(chart)) settled(chart);
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

// The slider's data arrived: {kind: "scale", source, label, stops, stop, placed, labels?}.
export function mountSlider(component) {
  const { data, parentElement, setStateValue } = component;
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
  // The stops' labels come with the data, or with the frames (which may arrive after).
  slider.labels = data.labels || null;
  src.slider = slider;
  slider.describe = (stop) => {
    const labels = slider.labels || [...heldFrames(src)].find((frames) => frames.labels)?.labels;
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
