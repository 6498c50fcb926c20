// The controls the browser owns: the stop (and /pretrained's temperature) and /attention's
// live head (app/widgets/channel.py). A move is previewed in the next frame (preview.js) and
// drawn at the release (plot.js), then reported to Python as the control's state value, which
// the link, the CSVs and the sidebar read. Python sets a value only on purpose (a link, a new
// model, the sidebar's head, the presenter bar), by changing `placed`.

import { source } from "./frames.js";
import { moving, release } from "./plot.js";
import { showFrame } from "./preview.js";
import { addStyle } from "./theme.js";

// A stop whose frames are not held yet (past 128 tokens): the value says the charts wait.
addStyle("ae-control-style", `.ae-control[data-waiting] .ae-control-value::after {
  content: " · the charts follow when you let go"; font-size: 0.8em; font-weight: 400; opacity: 0.7;
}`);

const controls = new WeakMap(); // parentElement -> control
const owned = new WeakMap(); // source -> {name: the record of its control}

// What `src`'s control of `name` ("stop" or "head", each the source's own: frames.js reads
// src.stop and src.head) holds besides its value: the last `placed` taken, the move last
// reported, sent and heard, its element, the frame it waits for.
function held(src, name) {
  if (!owned.has(src)) owned.set(src, {});
  const own = owned.get(src);
  own[name] ??= { placed: null, reported: null, sent: null, heard: null, control: null, frame: null };
  return own[name];
}

// Show the value of `name` on every chart that follows `src`, in the next animation frame.
function show(src, name) {
  const own = held(src, name);
  cancelAnimationFrame(own.frame);
  own.frame = requestAnimationFrame(() => {
    own.frame = null;
    const painted = showFrame(src, src.stop);
    if (name === "stop") own.control?.wrap.toggleAttribute("data-waiting", !painted);
  });
}

// The control shows `src`'s value, marked while a move of its is not yet heard by Python.
function describe(src, name) {
  const { control, sent, heard } = held(src, name);
  if (!control) return;
  const value = src[name];
  const text = control.labels?.[value] ?? String(value);
  control.input.value = String(value);
  control.wrap.querySelector(".ae-control-value").textContent = text;
  control.input.setAttribute("aria-valuetext", text);
  control.wrap.toggleAttribute("data-unheard", (sent ?? -1) > (heard ?? -1));
}

function makeControl(parentElement, name) {
  const wrap = document.createElement("div");
  wrap.className = `ae-control ae-${name}`;
  const id = `ae-control-${name}-${Math.random().toString(36).slice(2, 8)}`;
  wrap.innerHTML = `<label class="ae-control-label" for="${id}"></label><div class="ae-control-value" aria-hidden="true"></div>
    <input id="${id}" type="range" min="0" step="1" style="width: 100%; accent-color: var(--st-primary-color)">`;
  parentElement.appendChild(wrap);
  return { wrap, input: wrap.querySelector("input"), name, labels: null, report: null };
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
    const moved = () => {
      const value = Number(control.input.value);
      if (src[name] === value) return;
      src[name] = value;
      describe(src, name);
      show(src, name);
    };
    control.input.addEventListener("input", () => {
      if (!src.moving) moving(src);
      moved();
    });
    control.input.addEventListener("change", () => {
      moved();
      release(src, true);
      if (own.reported !== src[name]) control.report(src[name]);
      own.reported = src[name];
    });
  }
  own.control = control;
  // The latest mount's setter. A state, not a trigger: it goes with every rerun request
  // after, so a report whose run was cut short is not lost; `at` tells it from one taken.
  control.report = (value) => {
    own.sent = performance.now();
    setStateValue("value", { value, at: own.sent });
    describe(src, name);
  };
  control.labels = data.labels ?? control.labels; // a slider's, sent with a whole run
  control.wrap.querySelector("label").textContent = data.label;
  control.wrap.style.display = data.hidden ? "none" : "";
  if (data.help) control.wrap.title = data.help;
  control.input.max = String(data.count - 1);
  if (src.stop === null && data.stop !== undefined) src.stop = data.stop; // charts above the slider
  if (name === "stop") src.sent = data.value; // the stop of the figures Python drew
  own.heard = Math.max(own.heard ?? -1, data.heard ?? -1); // the newest move Python took
  // Python placed it (a link, a new model, the sidebar's head), in a run that took every move
  // of ours: a placement that a move of ours not yet heard overtook is not taken.
  if (own.placed !== data.placed) {
    own.placed = data.placed;
    const taken = (own.sent ?? -1) <= own.heard;
    if (taken) own.reported = data.value;
    if (taken && src[name] !== data.value) {
      src[name] = data.value;
      showFrame(src, src.stop);
      release(src, true);
    }
  }
  if (name === "stop") control.wrap.removeAttribute("data-waiting"); // Python's run: its stop drawn
  describe(src, name);
}
