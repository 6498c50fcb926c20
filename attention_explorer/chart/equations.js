// Equations fitted to their width: a display that would be cut off on a narrow screen is
// scaled down to fit (KaTeX does not wrap).

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

// Fit every equation now, and again whenever the page or the window changes.
export function watchEquations() {
  if (window.__aeEquationsWatched) return;
  window.__aeEquationsWatched = true;
  // Not on the charts' own changes: reading a width after each of those forced the page's
  // layout there (about 50 ms a head switch), and no equation is inside a chart.
  const outsideCharts = (record) => !record.target.closest?.(".ae-chart");
  new MutationObserver((records) => {
    if (records.some(outsideCharts)) scheduleFit();
  }).observe(document.body, { childList: true, subtree: true });
  window.addEventListener("resize", scheduleFit);
  scheduleFit();
}
