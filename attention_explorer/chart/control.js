// The controls the browser owns: the head, the layer and the mask (app/widgets/channel.py).
//
// The sidebar's "Layer ℓ", "Head h" and "Mask future tokens", and /attention's live head
// control, are these. Each belongs to a slider's frames (its `source`) and moves one of
// what they show: a head is shown on every chart that follows the frames in the next
// animation frame, from the layer's heads at the stop (preview.js), then drawn exactly
// from the same frames (plot.js); a layer or the mask is shown from the head shown in
// every layer, or unmasked and masked, until the run that brings it draws it. Then, and
// only then, the move is reported to Python (the control's state value, with the time of
// the move), which stores it for the link, the CSVs and the other pages.
//
// Python writes a value only on purpose (a link, a new model, the presenter bar): the
// data's `placed` then changes, and only then is the data's value taken. Every other
// run's value is the one the browser reported or an older one, and is ignored: the
// browser owns the value. Two controls of one name (the sidebar's head and the page's)
// show the same value: a move of either moves both.

import { source } from "./frames.js";
import { showFrame } from "./preview.js";
import { redrawExact } from "./slider.js";

const controls = new WeakMap(); // parentElement -> control

// What a source's controls hold: by name, the value shown, the value the page's data are
// of (Python's, last run), the last `placed` taken, and the controls on the page.
function held(src, name) {
  src.owned ??= {};
  src.owned[name] ??= { value: null, drawn: null, placed: null, controls: new Set(), frame: null };
  return src.owned[name];
}

// The value `name` shows in `src`: the head is the frames' own (frames.js reads src.head).
function valueOf(src, name) {
  return name === "head" ? src.head : held(src, name).value;
}

function setValue(src, name, value) {
  if (name === "head") src.head = value;
  else held(src, name).value = value;
}

// Show `value` of `name` on every chart that follows `src`, in the next animation frame.
function show(src, name) {
  const own = held(src, name);
  cancelAnimationFrame(own.frame);
  own.frame = requestAnimationFrame(() => {
    own.frame = null;
    if (name === "head") return showFrame(src, src.stop);
    // a layer or the mask: from the head shown along that axis, until the run draws it
    const { value, drawn } = own;
    const axis = name === "layer" ? "layer" : "mask";
    showFrame(src, src.stop, value === drawn ? null : { axis, index: value });
  });
}

// Every control of `name` on the page shows `value`.
function describeAll(src, name) {
  for (const control of held(src, name).controls) {
    if (control.wrap.isConnected) control.describe(valueOf(src, name));
    else held(src, name).controls.delete(control);
  }
}

// The user moved a control of `name` to `value`: show it, and keep the others with it.
function moved(src, name, value) {
  if (valueOf(src, name) === value) return false;
  setValue(src, name, value);
  describeAll(src, name);
  show(src, name);
  return true;
}

// Every control of a name is marked while a move of theirs is not yet heard by Python (a
// run's data say which was heard last): the page is quiet only when none is.
function markUnheard(own) {
  const unheard = (own.sent ?? -1) > (own.heard ?? -1);
  for (const control of own.controls) {
    if (unheard) control.wrap.dataset.unheard = "1";
    else delete control.wrap.dataset.unheard;
  }
}

// The control's element: a range input, or a switch for the mask.
function makeControl(parentElement, data) {
  const wrap = document.createElement("div");
  wrap.className = `ae-control ae-${data.name}`;
  const id = `ae-control-${data.name}-${Math.random().toString(36).slice(2, 8)}`;
  const input = data.name === "mask"
    ? `<input id="${id}" type="checkbox" role="switch" style="accent-color: var(--st-primary-color)">`
    : `<input id="${id}" type="range" min="0" step="1" style="width: 100%; accent-color: var(--st-primary-color)">`;
  wrap.innerHTML = data.name === "mask"
    ? `<label class="ae-control-label" style="display: flex; align-items: center; gap: 0.5rem">${input}<span></span></label>`
    : `<label class="ae-control-label" for="${id}"></label>
      <div class="ae-control-value" aria-hidden="true"></div>${input}`;
  parentElement.appendChild(wrap);
  return { wrap, input: wrap.querySelector("input"), name: data.name };
}

// The control's data arrived: {kind: "control", name, source, label, count, value, placed,
// heard, hidden, help?, stop?}.
export function mountControl(component) {
  const { data, parentElement, setStateValue } = component;
  const src = source(data.source);
  const own = held(src, data.name);
  let control = controls.get(parentElement);
  if (!control || control.name !== data.name) {
    parentElement.replaceChildren();
    control = makeControl(parentElement, data);
    controls.set(parentElement, control);
    const { input } = control;
    const read = () => (control.name === "mask" ? Number(input.checked) : Number(input.value));
    input.addEventListener("input", () => {
      if (control.name !== "mask") moved(src, control.name, read());
    });
    input.addEventListener("change", () => {
      const value = read();
      moved(src, control.name, value);
      if (control.name === "head") redrawExact(src, src.stop);
      if (own.reported !== value) control.report(value);
      own.reported = value;
    });
  }
  own.controls.add(control);
  // The latest mount's setter. A state, not a trigger: it goes with every rerun request
  // after, so a report whose run was cut short is not lost; `at` orders two controls'.
  control.report = (value) => {
    own.sent = performance.now();
    setStateValue("value", { value, at: own.sent });
    markUnheard(own);
  };
  control.describe = (value) => {
    if (control.name === "mask") {
      control.input.checked = Boolean(value);
      return;
    }
    control.input.value = String(value);
    control.wrap.querySelector(".ae-control-value").textContent = String(value);
    control.input.setAttribute("aria-valuetext", String(value));
  };
  control.wrap.querySelector(data.name === "mask" ? "label span" : "label").textContent = data.label;
  control.wrap.style.display = data.hidden ? "none" : "";
  if (data.help) control.wrap.title = data.help;
  if (control.name !== "mask") control.input.max = String(data.count - 1);
  if (src.stop === null && data.stop !== undefined) src.stop = data.stop; // charts above the slider
  if (control.name !== "head") own.drawn = data.value; // what the page's data are of now
  own.heard = Math.max(own.heard ?? -1, data.heard ?? -1); // the newest move Python took
  markUnheard(own);
  if (own.placed !== data.placed) { // Python placed it: a link, a new model, the presenter bar
    own.placed = data.placed;
    own.reported = data.value;
    const changed = valueOf(src, data.name) !== data.value;
    setValue(src, data.name, data.value);
    if (changed && data.name === "head") {
      showFrame(src, src.stop);
      redrawExact(src, src.stop);
    }
  }
  describeAll(src, data.name);
}
