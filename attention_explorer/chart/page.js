// Attention Explorer's page component: what every page needs from the browser itself.
//
// Two kinds of data arrive from Python (app/render.py):
//   page   {kind: "page"}   mounted once per run by the entry point, on every page:
//          - after a lost connection comes back, one run of the page from the address bar.
//            When a replica behind HAProxy dies (scripts/serve_class.sh) the page reconnects
//            to another, whose new session knows nothing; Streamlit reruns nothing by itself,
//            and a page switch would send no query string (it clears it), so the session
//            would start from the defaults. This run reads the link first (app/state.py).
//          - equations fitted to their width: a display that would be cut off on a narrow
//            screen is scaled down to fit (KaTeX does not wrap).
//   share  {kind: "share"}  the share box: the address bar's link, kept up to date, with
//          a copy button, and the same link in presentation mode. The address bar is the
//          one place that always holds the whole view (every control, the tokens picked,
//          the scale after in-browser steps): Streamlit writes it after every run, a
//          fragment's included, while a box drawn by Python would keep the link of the
//          last full run.
// User text (the link holds the student's sentence) is only ever set as textContent.

const STYLE = `
.ae-share { font-size: 0.875rem; }
.ae-share p { margin: 0 0 0.25rem; color: var(--st-text-color); opacity: 0.7; }
.ae-share-row { display: flex; gap: 0.5rem; align-items: flex-start; margin-bottom: 0.75rem; }
.ae-share-row code {
  flex: 1; min-width: 0; overflow-wrap: anywhere; white-space: pre-wrap; padding: 0.5rem;
  border-radius: 0.5rem; font-family: var(--st-code-font, monospace); font-size: 0.8rem;
  background: var(--st-secondary-background-color); color: var(--st-text-color);
}
.ae-share-row button {
  flex: none; cursor: pointer; padding: 0.35rem 0.6rem; border-radius: 0.5rem;
  border: 1px solid var(--st-border-color, #ccc); background: transparent;
  color: var(--st-text-color); font: inherit;
}
`;

function addStyle() {
  if (document.getElementById("ae-page-style")) return;
  const style = document.createElement("style");
  style.id = "ae-page-style";
  style.textContent = STYLE;
  document.head.appendChild(style);
}

// ---- the address bar, watched ------------------------------------------------------------

// Streamlit writes the query string with history.pushState / replaceState; an event after
// each lets the share boxes follow. Wrapped once per window.
function watchHistory() {
  if (window.__aeHistoryWatched) return;
  window.__aeHistoryWatched = true;
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

// The view's link in presentation mode: the same address with present=1.
function presenting(href) {
  const url = new URL(href);
  url.searchParams.set("present", "1");
  return url.toString();
}

// ---- the share box -----------------------------------------------------------------------

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text); // only in a secure context (https, localhost)
  } catch {
    const area = document.createElement("textarea"); // a class served over plain http
    area.value = text;
    area.style.cssText = "position: fixed; opacity: 0";
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = "Copy"), 1500);
}

function row(box, note) {
  const caption = document.createElement("p");
  caption.textContent = note;
  const line = document.createElement("div");
  line.className = "ae-share-row";
  const code = document.createElement("code");
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Copy";
  button.title = "Copy the link";
  button.addEventListener("click", () => copy(code.textContent, button));
  line.append(code, button);
  box.append(caption, line);
  return code;
}

function mountShare(parentElement) {
  addStyle();
  watchHistory();
  let box = parentElement.querySelector(".ae-share");
  if (!box) {
    box = document.createElement("div");
    box.className = "ae-share";
    const link = row(box, "The link carries every control, the tokens picked and the scale: it is the address bar's.");
    link.classList.add("ae-share-link");
    const present = row(box, "The same view in presentation mode:");
    present.classList.add("ae-share-present");
    parentElement.appendChild(box);
    const show = () => {
      link.textContent = location.href;
      present.textContent = presenting(location.href);
    };
    window.addEventListener("ae-url", show);
    box.aeShow = show;
    box.aeForget = () => window.removeEventListener("ae-url", show);
  }
  box.aeShow();
  return box;
}

// ---- every page --------------------------------------------------------------------------

// The latest page element's trigger: a run of the page, with the address bar's query string.
let rerun = null;

// After the connection was lost and is back, run the page once from the address bar.
function watchConnection() {
  if (window.__aeConnectionWatched) return;
  window.__aeConnectionWatched = true;
  let state = null; // the connection state last seen, once the app has connected
  const look = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const now = app?.dataset.testConnectionState;
    if (!now || now === state) return;
    const back = now === "CONNECTED" && state !== null && state !== "CONNECTED";
    if (now === "CONNECTED" || state !== null) state = now;
    if (back && rerun) rerun();
  };
  new MutationObserver(look).observe(document.body, {
    subtree: true,
    attributes: true,
    attributeFilter: ["data-test-connection-state"],
    childList: true,
  });
  look();
}

// KaTeX draws a display equation on one line: on a narrow screen the line is cut off.
// Each display wider than its box is scaled down to fit it (the browser's own font
// scaling, no maths on the formula), and grows back when the box does.
function fitEquations() {
  for (const display of document.querySelectorAll(".katex-display")) {
    const katex = display.querySelector(":scope > .katex");
    if (!katex) continue;
    const width = display.clientWidth;
    if (width === 0) continue; // hidden (a closed expander): fitted when shown
    if (katex.aeWidth === width && katex.aeText === katex.textContent) continue;
    katex.style.fontSize = "";
    katex.aeWidth = width;
    katex.aeText = katex.textContent;
    const overflow = display.scrollWidth - width;
    if (overflow <= 4) continue; // KaTeX's glyphs overhang their box by a pixel or two
    const size = parseFloat(getComputedStyle(katex).fontSize);
    katex.style.fontSize = `${(size * (width - 4)) / display.scrollWidth}px`;
  }
}

let fitting = false;
function scheduleFit() {
  if (fitting) return;
  fitting = true;
  requestAnimationFrame(() => {
    fitting = false;
    fitEquations();
  });
}

function watchEquations() {
  if (window.__aeEquationsWatched) return;
  window.__aeEquationsWatched = true;
  new MutationObserver(scheduleFit).observe(document.body, { childList: true, subtree: true });
  window.addEventListener("resize", scheduleFit);
  scheduleFit();
}

function mountPage(component) {
  const { parentElement, setTriggerValue } = component;
  if (!parentElement.querySelector(".ae-page")) {
    const marker = document.createElement("div");
    marker.className = "ae-page";
    parentElement.appendChild(marker);
  }
  rerun = () => setTriggerValue("reconnected", Date.now());
  watchConnection();
  watchEquations();
}

export default function (component) {
  const { data, parentElement } = component;
  const box = data.kind === "share" ? mountShare(parentElement) : (mountPage(component), null);
  return () =>
    setTimeout(() => {
      if (!parentElement.isConnected && box) box.aeForget();
    }, 0);
}
