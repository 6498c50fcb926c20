// Equations fitted to their width: a display that would be cut off on a narrow screen is
// scaled down to fit (KaTeX does not wrap).

// KaTeX draws a display equation on one line: on a narrow screen the line is cut off.
// Each display wider than its room is scaled down to fit it (the browser's own font
// scaling, no maths on the formula), and grows back when the room does. The room is the
// width of the layout block the equation sits in (the page's column, a column of
// st.columns, a horizontal row): the display's own box and its wrappers are as wide as
// their content, so measured there a shrunk equation only ever shrank further.
const ROOM = '[data-testid="stVerticalBlock"], [data-testid="stHorizontalBlock"]';

function fitEquations() {
  for (const display of document.querySelectorAll(".katex-display")) {
    const katex = display.querySelector(":scope > .katex");
    if (!katex) continue;
    const room = (display.closest(ROOM) ?? display).clientWidth;
    if (room === 0) continue; // hidden (a closed expander): fitted when shown
    if (katex.aeRoom === room && katex.aeText === katex.textContent) continue;
    katex.style.fontSize = "";
    katex.aeRoom = room;
    katex.aeText = katex.textContent;
    const natural = display.scrollWidth;
    if (natural <= room - 4) continue; // KaTeX's glyphs overhang their box by a pixel or two
    const size = parseFloat(getComputedStyle(katex).fontSize);
    katex.style.fontSize = `${(size * (room - 4)) / natural}px`;
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
const EQUATION = ".katex-display";
function touchesEquation(record) {
  const element = record.target.nodeType === 1 ? record.target : record.target.parentElement;
  if (element?.closest(EQUATION)) return true;
  return [...record.addedNodes].some(
    (node) => node.nodeType === 1 && (node.matches(EQUATION) || node.querySelector(EQUATION)),
  );
}

// Fit every equation now, and again whenever one is added or changed, or the page's column
// changes width (the window, the sidebar, presentation mode).
export function watchEquations() {
  if (window.__aeEquationsWatched) return;
  window.__aeEquationsWatched = true;
  // Not on every change: reading a width after one forces the page's layout there and then,
  // which cost 28-50 ms a head switch, whose reruns change captions and charts, not equations.
  new MutationObserver((records) => {
    if (column && !column.isConnected) watchColumn(); // Streamlit mounted another
    if (records.some(touchesEquation)) scheduleFit();
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
  window.addEventListener("resize", scheduleFit);
  document.addEventListener("toggle", scheduleFit, true); // an expander opened: its equations
  // KaTeX's fonts arrive after the first equations are drawn, and widen them: fit again.
  const refitAll = () => {
    for (const katex of document.querySelectorAll(".katex-display > .katex")) katex.aeRoom = null;
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
let columnResizes = null;
function watchColumn() {
  columnResizes ??= new ResizeObserver(([entry]) => {
    const now = Math.round(entry.contentRect.width);
    if (columnWidth !== null && now !== columnWidth) scheduleFit();
    columnWidth = now;
  });
  column = document.querySelector('[data-testid="stMainBlockContainer"]');
  columnResizes.disconnect();
  if (!column) {
    setTimeout(watchColumn, 200);
    return;
  }
  columnResizes.observe(column);
}
