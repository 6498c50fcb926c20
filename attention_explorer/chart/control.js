// The controls the browser owns: the stop (and /pretrained's temperature), the head, the
// layer and the mask (app/widgets/channel.py). A move is previewed in the next frame
// (preview.js) and drawn at the release (plot.js), then reported to Python as the control's
// state value, which the link, the CSVs and the other pages read. Python sets a value only on
// purpose (a link, a new model, the presenter bar), by changing `placed`: one owner, one
// channel. Two controls of one name show the same value.

import { source } from "./frames.js";
import { moving, release } from "./plot.js";
import { showFrame } from "./preview.js";
import { addStyle } from "./theme.js";

// A stop whose frames are not held yet (past 128 tokens): the value says the charts wait.
addStyle("ae-control-style", `.ae-control[data-waiting] .ae-control-value::after {
  content: " · the charts follow when you let go"; font-size: 0.8em; font-weight: 400; opacity: 0.7;
}`);

const controls = new WeakMap(); // parentElement -> control

// What a source's controls of `name` hold (a layer's and the mask's `value`; the stop's and the
// head's are the source's own): the value the page's data are of (`given`), the last `placed`
// taken, the value last reported, the times of the move last sent and of the newest Python
// heard, the controls on the page, the animation frame that will show the value.
function held(src, name) {
  src.owned[name] ??= Object.seal({
    value: null, given: null, placed: null, reported: null, sent: null, heard: null, controls: new Set(), frame: null,
  });
  return src.owned[name];
}

// The stop and the head are the frames' own (frames.js reads src.stop and src.head); a
// layer and the mask, their controls'.
const framesOwn = (name) => name === "stop" || name === "head";
const valueOf = (src, name) => (framesOwn(name) ? src[name] : held(src, name).value);

function setValue(src, name, value) {
  if (framesOwn(name)) src[name] = value;
  else held(src, name).value = value;
}

// Show the value of `name` on every chart that follows `src`, in the next animation frame.
function show(src, name) {
  const own = held(src, name);
  cancelAnimationFrame(own.frame);
  own.frame = requestAnimationFrame(() => {
    own.frame = null;
    const { value, given } = own; // a layer or the mask: from the head along that axis
    const along = framesOwn(name) || value === given ? null : { axis: name, index: value };
    const painted = showFrame(src, src.stop, along);
    if (name === "stop") for (const control of own.controls) control.wrap.toggleAttribute("data-waiting", !painted);
  });
}

// The user moved a control of `name` to `value`: show it, and keep the others with it.
function moved(src, name, value) {
  if (valueOf(src, name) === value) return;
  setValue(src, name, value);
  describeAll(src, name);
  show(src, name);
}

// Every control of `name` on the page shows its value; each is marked while a move of
// theirs is not yet heard by Python (the page is quiet only when none is).
function describeAll(src, name) {
  const own = held(src, name);
  for (const control of own.controls) {
    if (!control.wrap.isConnected) {
      own.controls.delete(control);
      continue;
    }
    control.describe(valueOf(src, name));
    control.wrap.toggleAttribute("data-unheard", (own.sent ?? -1) > (own.heard ?? -1));
  }
}

// The control's element: a range input, or a switch for the mask.
function makeControl(parentElement, name) {
  const wrap = document.createElement("div");
  wrap.className = `ae-control ae-${name}`;
  const id = `ae-control-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const accent = "accent-color: var(--st-primary-color)";
  wrap.innerHTML = name === "mask"
    ? `<label class="ae-control-label" style="display: flex; align-items: center; gap: 0.5rem">
      <input id="${id}" type="checkbox" role="switch" style="${accent}"><span></span></label>`
    : `<label class="ae-control-label" for="${id}"></label><div class="ae-control-value" aria-hidden="true"></div>
      <input id="${id}" type="range" min="0" step="1" style="width: 100%; ${accent}">`;
  parentElement.appendChild(wrap);
  const input = wrap.querySelector("input");
  // `report`: the latest mount's report of a move; `labels`: each value as shown (a slider's).
  const control = Object.seal({ wrap, input, name, read: null, describe: null, report: null, labels: null });
  control.read = () => (name === "mask" ? Number(input.checked) : Number(input.value));
  control.describe = (value) => {
    if (name === "mask") {
      input.checked = Boolean(value);
      return;
    }
    const text = control.labels?.[value] ?? String(value);
    input.value = String(value);
    wrap.querySelector(".ae-control-value").textContent = text;
    input.setAttribute("aria-valuetext", text);
  };
  return control;
}

// The control's data arrived: {kind: "control", name, source, label, count, value, placed,
// heard, hidden, labels?, help?, stop?}.
export function mountControl(component) {
  const { data, parentElement, setStateValue } = component;
  const { name } = data;
  const src = source(data.source);
  const own = held(src, name);
  let control = controls.get(parentElement);
  if (!control || control.name !== name) {
    parentElement.replaceChildren();
    control = makeControl(parentElement, name);
    controls.set(parentElement, control);
    control.input.addEventListener("input", () => {
      if (name === "mask") return;
      if (!src.moving) moving(src);
      moved(src, name, control.read());
    });
    control.input.addEventListener("change", () => {
      const value = control.read();
      moved(src, name, value);
      release(src, framesOwn(name));
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
    describeAll(src, name);
  };
  control.labels = data.labels ?? control.labels ?? null; // a slider's, sent with a whole run
  control.wrap.querySelector(name === "mask" ? "label span" : "label").textContent = data.label;
  control.wrap.style.display = data.hidden ? "none" : "";
  if (data.help) control.wrap.title = data.help;
  if (name !== "mask") control.input.max = String(data.count - 1);
  if (src.stop === null && data.stop !== undefined) src.stop = data.stop; // charts above the slider
  own.given = data.value; // what the page's data are of now
  if (name === "stop") src.sent = data.value; // the stop of the figures Python drew
  own.heard = Math.max(own.heard ?? -1, data.heard ?? -1); // the newest move Python took
  if (own.placed !== data.placed) { // Python placed it: a link, a new model, the presenter bar
    own.placed = data.placed;
    own.reported = data.value;
    const changed = valueOf(src, name) !== data.value;
    setValue(src, name, data.value);
    if (changed && framesOwn(name)) {
      showFrame(src, src.stop);
      release(src, true);
    }
  }
  if (name === "stop") control.wrap.removeAttribute("data-waiting"); // Python's run: its stop drawn
  describeAll(src, name);
}
