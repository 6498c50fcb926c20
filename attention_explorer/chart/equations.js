// Display equations scaled by their font size alone to fit their room, down and back up:
// KaTeX draws each on one line, which a narrow screen cuts off.

// The room is the layout block an equation sits in, not the display or its wrappers: they are
// as wide as their content, so a shrunk equation measured there would only shrink further.
const ROOM = '[data-testid="stVerticalBlock"], [data-testid="stHorizontalBlock"]';
const EQUATION = ".katex-display";

const fitted = new WeakMap(); // an equation's .katex -> the room and text it was fitted for
let watched = false;

// Whether `katex` is fitted to `room` as its text is now (the browser tests wait on it).
export const fittedTo = (katex, room) => fitted.get(katex)?.room === room && fitted.get(katex).text === katex.textContent;

function fitEquations() {
  for (const display of document.querySelectorAll(EQUATION)) {
    const katex = display.querySelector(":scope > .katex");
    const room = katex && (display.closest(ROOM) ?? display).clientWidth;
    if (!room) continue; // hidden (a closed expander): fitted when shown
    if (fittedTo(katex, room)) continue;
    katex.style.fontSize = "";
    fitted.set(katex, { room, text: katex.textContent });
    const natural = display.scrollWidth;
    if (natural <= room - 4) continue; // KaTeX's glyphs overhang their box by a pixel or two
    katex.style.fontSize = `${(parseFloat(getComputedStyle(katex).fontSize) * (room - 4)) / natural}px`;
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

// Whether a change to the page touched an equation: one added, or one's text changed.
function touchesEquation(record) {
  const element = record.target.nodeType === 1 ? record.target : record.target.parentElement;
  if (element?.closest(EQUATION)) return true;
  return [...record.addedNodes].some((node) => node.nodeType === 1 && (node.matches(EQUATION) || node.querySelector(EQUATION)));
}

// Not on every change to the page, only one to an equation, a width or the fonts: reading a
// width after a change forces the page's layout there and then.
export function watchEquations() {
  if (watched) return;
  watched = true;
  new MutationObserver((records) => {
    if (column && !column.isConnected) watchColumn(); // Streamlit mounted another
    if (records.some(touchesEquation)) scheduleFit();
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
  window.addEventListener("resize", scheduleFit);
  document.addEventListener("toggle", scheduleFit, true); // an expander opened: its equations
  // KaTeX's fonts arrive after the first equations are drawn, and widen them: fit again.
  const refitAll = () => {
    for (const katex of document.querySelectorAll(`${EQUATION} > .katex`)) fitted.delete(katex);
    scheduleFit();
  };
  document.fonts?.addEventListener("loadingdone", refitAll);
  document.fonts?.ready.then(refitAll);
  watchColumn();
  scheduleFit();
}

// The main column's width, watched once it is on the page (Streamlit mounts it later).
let column = null;
let columnWidth = null;
const columnResizes = new ResizeObserver(([entry]) => {
  const now = Math.round(entry.contentRect.width);
  if (columnWidth !== null && now !== columnWidth) scheduleFit();
  columnWidth = now;
});

function watchColumn() {
  column = document.querySelector('[data-testid="stMainBlockContainer"]');
  columnResizes.disconnect();
  if (column) columnResizes.observe(column);
  else setTimeout(watchColumn, 200);
}
