// Attention Explorer's page component: what every page needs from the browser itself.
// The data, from app/lecture/share.py and app/lecture/presentation.py, by kind:
//   page      {kind: "page"}, once per run on every page: a run from the address bar after a
//             lost connection (connection.js), equations fitted (equations.js)
//   top       {kind: "top", at}: the page scrolled to its top when `at` changes (the tour's step)
//   share     {kind: "share", button?}: the share box, the address bar's link; with `button`,
//             presentation mode's copy button alone (share.js)
//   viewport  {kind: "viewport", known: [width, height]}: presentation mode's screen (viewport.js)

import { rerunOnReconnect } from "./connection.js";
import { watchEquations } from "./equations.js";
import { forgetShare, mountCopyButton, mountShare } from "./share.js";
import { addStyle } from "./theme.js";
import { mountViewport } from "./viewport.js";

function mountPage(component) {
  const { parentElement, setTriggerValue } = component;
  // The elements that only carry data (frames, shapes over a chart, the tour's step) take
  // no room: Streamlit's container of each is a flex item of its own, with a gap beside it.
  addStyle("ae-data-only", '[data-testid="stElementContainer"]:has(.ae-frames, .ae-shapes, .ae-top) { display: none; }');
  if (!parentElement.querySelector(".ae-page")) {
    const marker = document.createElement("div");
    marker.className = "ae-page";
    parentElement.appendChild(marker);
  }
  rerunOnReconnect(() => setTriggerValue("reconnected", Date.now()));
  watchEquations();
}

const steps = new WeakMap(); // the tour's element -> the step it last scrolled for

// A new `at` (the tour's next step) starts at the top though the reader had scrolled down;
// a rerun, or this element's first data, leaves the page where it is.
function scrollToTop(parentElement, at) {
  if (!parentElement.querySelector(".ae-top")) {
    parentElement.append(Object.assign(document.createElement("div"), { className: "ae-top" }));
  }
  if (steps.has(parentElement) && steps.get(parentElement) !== at) {
    for (const pane of [document.scrollingElement, ...document.querySelectorAll('[data-testid="stMain"]')]) {
      pane.scrollTo({ top: 0 });
    }
  }
  steps.set(parentElement, at);
}

export default function (component) {
  const { data, parentElement } = component;
  let box = null;
  if (data.kind === "share" && data.button) mountCopyButton(parentElement);
  else if (data.kind === "share") box = mountShare(parentElement);
  else if (data.kind === "viewport") mountViewport(component);
  else if (data.kind === "top") scrollToTop(parentElement, data.at);
  else mountPage(component);
  return () =>
    setTimeout(() => {
      if (!parentElement.isConnected && box) forgetShare(box);
    }, 0);
}
