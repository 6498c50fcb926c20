// The share box: the address bar's link, and the same in presentation mode, to copy; in the
// presenter bar, one button that copies the address bar's link (mountCopyButton). Only the
// address bar always holds the whole view (the scale's in-browser steps too): Streamlit writes
// it after every run, a fragment's included, where a box drawn by Python would keep the last
// full run's. User text (the link holds the student's sentence) is only set as textContent.

import { addStyle } from "./theme.js";

const STYLE = `
.ae-share { font-size: 0.875rem; }
.ae-share p { margin: 0 0 0.25rem; color: var(--st-text-color); opacity: 0.7; }
.ae-share-row { display: flex; gap: 0.5rem; align-items: flex-start; margin-bottom: 0.75rem; }
.ae-share-row code {
  flex: 1; min-width: 0; overflow-wrap: anywhere; white-space: pre-wrap; padding: 0.5rem;
  border-radius: 0.5rem; font-family: var(--st-code-font, monospace); font-size: 0.8rem;
  background: var(--st-secondary-background-color); color: var(--st-text-color);
}
.ae-share-row button, button.ae-share-copy {
  flex: none; cursor: pointer; padding: 0.35rem 0.6rem; border-radius: 0.5rem;
  border: 1px solid var(--st-border-color, #ccc); background: transparent;
  color: var(--st-text-color); font: inherit;
}
button.ae-share-copy { height: 2.5rem; padding: 0 1rem; font-size: 18px; white-space: nowrap; }`;

// Streamlit writes the query string with history.pushState / replaceState, which fire no
// event: an "ae-url" after each lets the share boxes follow.
let watched = false;
function watchHistory() {
  if (watched) return;
  watched = true;
  for (const name of ["pushState", "replaceState"]) {
    const original = history[name];
    history[name] = function (...args) {
      const result = original.apply(this, args);
      window.dispatchEvent(new Event("ae-url"));
      return result;
    };
  }
  window.addEventListener("popstate", () => window.dispatchEvent(new Event("ae-url")));
}

async function copy(text, button, label = "Copy") {
  try {
    await navigator.clipboard.writeText(text); // only in a secure context (https, localhost)
  } catch {
    const area = Object.assign(document.createElement("textarea"), { value: text }); // plain http
    area.style.cssText = "position: fixed; opacity: 0";
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = label), 1500);
}

// A caption and a row of `box` for a link, with its copy button; returns the link's element.
function row(box, note, name) {
  const line = Object.assign(document.createElement("div"), { className: "ae-share-row" });
  const code = Object.assign(document.createElement("code"), { className: name });
  const button = Object.assign(document.createElement("button"), { type: "button", textContent: "Copy" });
  button.title = "Copy the link";
  button.addEventListener("click", () => copy(code.textContent, button));
  line.append(code, button);
  box.append(Object.assign(document.createElement("p"), { textContent: note }), line);
  return code;
}

const shown = new WeakMap(); // a share box -> what writes its links

// Made once per element; page.js forgets it (forgetShare) once the element has left the page.
export function mountShare(parentElement) {
  addStyle("ae-page-style", STYLE);
  watchHistory();
  let box = parentElement.querySelector(".ae-share");
  if (!box) {
    box = Object.assign(document.createElement("div"), { className: "ae-share" });
    const note = "The link carries every control, the tokens picked and the scale: it is the address bar's.";
    const link = row(box, note, "ae-share-link");
    const present = row(box, "The same view in presentation mode:", "ae-share-present");
    parentElement.appendChild(box);
    const show = () => {
      link.textContent = location.href;
      const url = new URL(location.href);
      url.searchParams.set("present", "1");
      present.textContent = url.toString();
    };
    window.addEventListener("ae-url", show);
    shown.set(box, show);
  }
  shown.get(box)();
  return box;
}

// The share box `box` has left the page: its links no longer follow the address bar.
export function forgetShare(box) {
  window.removeEventListener("ae-url", shown.get(box));
}

// Presentation mode's copy button, in the presenter bar: the link as the address bar has it
// when clicked (present=1 included: the class opens the slide the lecturer shows).
export function mountCopyButton(parentElement) {
  addStyle("ae-page-style", STYLE);
  if (parentElement.querySelector(".ae-share")) return;
  const label = "Copy link";
  const button = Object.assign(document.createElement("button"), { type: "button", className: "ae-share-copy", textContent: label });
  button.title = "Copy the link to this view";
  button.addEventListener("click", () => copy(location.href, button, label));
  const box = Object.assign(document.createElement("div"), { className: "ae-share" });
  box.append(button);
  parentElement.appendChild(box);
}
