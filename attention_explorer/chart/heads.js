// The live head control: a head switch shown from the layer's heads the browser holds.
//
// Python sends every head of the layer at the current stop beside the scale's frames of the
// head shown (frames.js). Moving this control shows the new head on every chart that follows
// the frames in the next animation frame (preview.js, as the scale's slider does), then its
// exact figures from the same frames (plot.js), and only then tells Python the head, whose
// run keeps the charts' data (drawn from frames, they do not depend on the head); the scale
// slider asks for the new head's frames of every stop once that run is over (slider.js).
// The sidebar's "Head h" and the link follow from that run. A move of the sidebar's own
// "Head h" is shown the same way as it happens (followSidebar), before its run; a move of
// its "Layer ℓ" or a click on its "Mask future tokens" is shown from the head shown in every
// layer, or unmasked and masked, at the stop, which Python sends too, and the run then
// draws the exact figures as ever.

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
  // layer, causal: those the page's data are of; previewed: another shown (previewOther)
  const control = { wrap, input, src, pending: [], frame: null, layer: null, causal: null, previewed: null };
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

// How long after a key or the pointer on a sidebar slider Python may still be catching up
// with the user's moves (a run per key press): sidebarAhead.
const TOUCH_MS = 2000;
// A move of a sidebar slider is the user's when it follows a key that moves it (within
// KEY_MS: the slider shows the new value in the same task or the next frame), or comes
// while the pointer holds it (or within RELEASE_MS of its release). Any other move is
// Python's: a run after the live head control, a link, a new model; Streamlit then
// writes the old value again before the new, and neither is the user's.
const KEY_MS = 500;
const RELEASE_MS = 150;
const MOVING_KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);
const LOWERING_KEYS = new Set(["ArrowLeft", "ArrowDown", "Home", "PageDown"]);

// Whether the key `key`, pressed on the range input `input`, moves it: a moving key, not
// towards the end it is at (Home at the first head moves nothing, and no move follows).
function moves(input, key) {
  if (!MOVING_KEYS.has(key)) return false;
  if (input?.type !== "range") return true; // its value unknown: taken as moving
  const value = Number(input.value);
  return LOWERING_KEYS.has(key) ? value > Number(input.min) : value < Number(input.max);
}

// The sidebar controls followed (Streamlit's `key`s), each to its handler (followSidebar).
const SIDEBAR_SLIDERS = ["head", "layer"];
const SIDEBAR_TOGGLES = ["causal"];
// control: the head control on the page now; touched, keyed, released: key -> ms; held: key
const sidebar = { control: null, moves: {}, flips: {}, touched: {}, keyed: {}, released: {}, held: null };

// The Streamlit key whose holder (`.st-key-<key>`) holds `element`, among `keys`, or null.
function keyOf(element, keys) {
  for (const key of keys) if (element?.closest?.(`.st-key-${key}`)) return key;
  return null;
}

// Whether the move of the sidebar's slider `key` happening now is the user's.
function usersMove(key, now) {
  return sidebar.held === key || now - (sidebar.keyed[key] ?? -Infinity) <= KEY_MS
    || now - (sidebar.released[key] ?? -Infinity) <= RELEASE_MS;
}

// Watch the sidebar once for the page's lifetime, by delegation from the document: the
// user's keys and pointer on a followed slider, each move of its value (its range input's
// aria-valuetext) and each click of a followed checkbox, whatever elements Streamlit has
// rendered them in since (it re-renders the sidebar as it pleases: an element found at a
// head control's mount may be gone by the user's first key).
function watchSidebarOnce() {
  if (sidebar.watching) return;
  sidebar.watching = true;
  document.addEventListener("keydown", (event) => {
    const key = keyOf(event.target, SIDEBAR_SLIDERS);
    if (!key) return;
    sidebar.touched[key] = performance.now();
    if (moves(event.target, event.key)) sidebar.keyed[key] = performance.now();
  }, true);
  document.addEventListener("pointerdown", (event) => {
    sidebar.held = keyOf(event.target, SIDEBAR_SLIDERS);
    if (sidebar.held) sidebar.touched[sidebar.held] = performance.now();
  }, true);
  document.addEventListener("pointermove", () => {
    if (sidebar.held) sidebar.touched[sidebar.held] = performance.now();
  }, true);
  const release = () => {
    if (sidebar.held) sidebar.released[sidebar.held] = performance.now();
    sidebar.held = null;
  };
  document.addEventListener("pointerup", release, true);
  document.addEventListener("pointercancel", release, true);
  document.addEventListener("change", (event) => {
    const key = event.target.type === "checkbox" && keyOf(event.target, SIDEBAR_TOGGLES);
    if (key && live(sidebar.control)) sidebar.flips[key](sidebar.control, event.target.checked);
  }, true);
  new MutationObserver((records) => {
    const now = performance.now();
    const moved = new Set();
    for (const { target } of records) {
      const key = target.type === "range" && keyOf(target, SIDEBAR_SLIDERS);
      if (!key || !usersMove(key, now) || !live(sidebar.control)) continue;
      const value = Number(target.getAttribute("aria-valuetext"));
      if (Number.isInteger(value)) {
        sidebar.moves[key](sidebar.control, value);
        moved.add(key);
      }
    }
    for (const key of moved) sidebar.keyed[key] = -Infinity; // one move per key press
  }).observe(document.body, { attributes: true, subtree: true, attributeFilter: ["aria-valuetext"] });
}

// Whether `control` is on the page now (a page without one leaves the last one behind).
const live = (control) => Boolean(control?.wrap.isConnected);

// Whether the user had a key or the pointer on the sidebar's slider `key` within TOUCH_MS.
function touchedLately(key) {
  return performance.now() - (sidebar.touched[key] ?? -Infinity) <= TOUCH_MS;
}

// Show `axis` at `index` (a layer, or the mask off 0 or on 1) on every chart, from the head
// shown along that axis, in the next animation frame: a preview until the run that brings
// it draws it. Back at the one the page's data are of, the charts show their own again.
function previewOther(control, axis, index) {
  const drawn = () => (axis === "layer" ? control.layer : Number(control.causal));
  const preview = index === drawn() ? null : `${axis} ${index}`; // null: Plotly's own
  if (preview === control.previewed) return; // Streamlit writes the slider's value twice
  control.previewed = preview;
  cancelAnimationFrame(control.otherFrame); // in the next animation frame, as a head: after
  control.otherFrame = requestAnimationFrame(() => // Streamlit has sent the value to Python
    showFrame(control.src, control.src.stop, index === drawn() ? null : { axis, index })); // drawn since?
}

// The sidebar's "Head h" shown on every chart as the user moves it, from the held heads,
// as this control's own moves are; its "Layer ℓ" and "Mask future tokens" too, from the
// head shown in every layer and unmasked and masked (a preview until the run draws it).
// Without those controls (one head, the seeded model's one layer; presentation mode's
// selectors) the run's data bring the change. `control` is the head control on the page now.
function followSidebar(control) {
  sidebar.control = control;
  sidebar.moves.head = (shown, head) => {
    if (head < 0 || head > Number(shown.input.max)) return;
    shown.input.value = String(head);
    if (shown.show(head)) redrawExact(shown.src, shown.src.stop);
  };
  sidebar.moves.layer = (shown, layer) => previewOther(shown, "layer", layer);
  sidebar.flips.causal = (shown, causal) => previewOther(shown, "mask", Number(causal));
  watchSidebarOnce();
}

// Whether the sidebar's "Head h", lately moved by the user, shows the head shown: one
// Python is still catching up with (a run per key press, the last one's on its way).
function sidebarAhead(control) {
  const slider = document.querySelector(".st-key-head input[type='range']");
  return Boolean(slider) && touchedLately("head")
    && Number(slider.getAttribute("aria-valuetext")) === control.src.head;
}

// The control's data arrived: {kind: "head", source, label, heads, head, stop, layer, causal,
// hidden?}.
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
  if (control.layer !== data.layer || control.causal !== data.causal) control.previewed = null;
  control.layer = data.layer; // the layer and mask the page's data are of
  control.causal = data.causal;
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
