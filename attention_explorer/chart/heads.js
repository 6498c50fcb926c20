// The live head control: a head switch shown from the layer's heads the browser holds.
//
// Python sends every head of the layer at the current stop beside the scale's frames of the
// head shown (frames.js). Moving this control shows the new head on every chart that follows
// the frames in the next animation frame (preview.js, as the scale's slider does), then its
// exact figures from the same frames (plot.js), and only then tells Python the head, whose
// run keeps the charts' data (drawn from frames, they do not depend on the head); the scale
// slider asks for the new head's frames of every stop once that run is over (slider.js).
// The sidebar's "Head h" and the link follow from that run. A move of the sidebar's own
// "Head h" is shown the same way as it happens (followSidebar), before its run.

import { source } from "./frames.js";
import { showFrame } from "./preview.js";
import { redrawExact } from "./slider.js";

const controls = new WeakMap(); // parentElement -> control

// The range input, in `parentElement`, that shows `src`'s heads as it moves.
function makeControl(parentElement, src, name) {
  const wrap = document.createElement("div");
  wrap.className = "ae-head";
  const id = `ae-head-${name}`;
  wrap.innerHTML = `<label class="ae-head-label" for="${id}"></label>
    <div class="ae-head-value" aria-hidden="true"></div>
    <input id="${id}" type="range" min="0" step="1"
      style="width: 100%; accent-color: var(--st-primary-color)">`;
  parentElement.appendChild(wrap);
  const input = wrap.querySelector("input");
  // touched: when the sidebar's "Head h" last had a key or the pointer (followSidebar)
  const control = { wrap, input, src, pending: [], frame: null, sidebar: null, touched: -Infinity };
  const paint = () => {
    control.frame = null;
    showFrame(src, src.stop);
  };
  control.show = (head) => { // the new head on every chart, in the next animation frame
    control.describe(head);
    if (src.head === head) return false;
    src.head = head;
    if (control.frame === null) control.frame = requestAnimationFrame(paint);
    return true;
  };
  input.addEventListener("input", () => control.show(Number(input.value)));
  input.addEventListener("change", () => {
    const head = Number(input.value);
    if (control.pending.at(-1) !== head) {
      control.pending.push(head);
      control.send(head);
    }
    redrawExact(src, src.stop);
  });
  return control;
}

// How long after a key or the pointer on the sidebar's "Head h" its moves are the user's:
// a move later than that is Python's (a link, a new model), whose run brings the head.
const TOUCH_MS = 2000;

// The sidebar's "Head h" (Streamlit's slider, key "head": its range input's aria-valuetext
// is the head) shown on every chart as the user moves it, from the held heads, as this
// control's own moves are; Streamlit sends it to Python as ever. Without that slider (one
// head; presentation mode's selector) nothing changes: the run's data bring the head.
function followSidebar(control) {
  const slider = document.querySelector(".st-key-head input[type='range']");
  if (!slider) return;
  const holder = slider.closest(".st-key-head");
  holder.aeControl = control; // the control on the page now (a page may mount another)
  control.sidebar = slider;
  if (!holder.aeTouch) { // once per element: Streamlit may replace the input alone
    holder.aeTouch = () => (holder.aeControl.touched = performance.now());
    holder.addEventListener("keydown", holder.aeTouch, true);
    holder.addEventListener("pointerdown", holder.aeTouch, true);
    holder.addEventListener("pointermove", (event) => event.buttons && holder.aeTouch(), true);
  }
  if (slider.aeWatched) return;
  slider.aeWatched = true; // one watch per input, gone with it
  new MutationObserver(() => {
    const shown = holder.aeControl;
    if (performance.now() - shown.touched > TOUCH_MS) return;
    const head = Number(slider.getAttribute("aria-valuetext"));
    if (!Number.isInteger(head) || head < 0 || head > Number(shown.input.max)) return;
    shown.input.value = String(head);
    if (shown.show(head)) redrawExact(shown.src, shown.src.stop);
  }).observe(slider, { attributes: true, attributeFilter: ["aria-valuetext"] });
}

// Whether the sidebar's "Head h", lately moved by the user, shows the head shown: one
// Python is still catching up with (a run per key press, the last one's on its way).
function sidebarAhead(control) {
  const slider = control.sidebar;
  return Boolean(slider?.isConnected) && performance.now() - control.touched <= TOUCH_MS
    && Number(slider.getAttribute("aria-valuetext")) === control.src.head;
}

// The control's data arrived: {kind: "head", source, label, heads, head, stop, hidden?}.
// `head` is the one Python holds: the control moves to it unless it is one this control
// sent and Python is catching up with (a run per step, the last step still on its way).
export function mountHead(component) {
  const { data, parentElement, setTriggerValue } = component;
  const src = source(data.source);
  let control = controls.get(parentElement);
  if (!control) {
    control = makeControl(parentElement, src, data.source);
    controls.set(parentElement, control);
  }
  control.send = (head) => setTriggerValue("chosen", head); // an event: the same head again counts
  control.describe = (head) => {
    control.wrap.querySelector(".ae-head-value").textContent = String(head);
    control.input.setAttribute("aria-valuetext", `${data.label} ${head}`);
  };
  control.wrap.querySelector("label").textContent = data.label;
  control.wrap.style.display = data.hidden ? "none" : "";
  control.input.max = String(data.heads - 1);
  if (src.stop === null) src.stop = data.stop; // the charts above the slider need a stop
  const sent = control.pending.indexOf(data.head);
  if (sent >= 0) {
    control.pending.splice(0, sent + 1);
  } else if (!control.pending.length && src.head !== data.head && !sidebarAhead(control)) {
    src.head = data.head; // the sidebar, the presenter bar or a link chose it
    control.input.value = String(data.head);
    showFrame(src, src.stop);
    redrawExact(src, src.stop);
  }
  if (src.head === null) src.head = data.head;
  control.input.value = String(src.head);
  control.describe(src.head);
  followSidebar(control);
}
