// Equations fitted to their width: a display that would be cut off on a narrow screen is
// scaled down to fit (KaTeX does not wrap).

// KaTeX draws a display equation on one line: on a narrow screen the line is cut off.
// Each display wider than its box is scaled down to fit it (the browser's own font
// scaling, no maths on the formula), and grows back when the box does. A box's width is
// a ResizeObserver's: reading it from the page after every change the charts make
// forced the page's layout each time (a fifth of a head switch's time).
const boxes = new ResizeObserver((entries) => {
  for (const entry of entries) entry.target.aeBoxWidth = Math.round(entry.contentRect.width);
  scheduleFit();
});

function fitEquations() {
  for (const display of document.querySelectorAll(".katex-display")) {
    const katex = display.querySelector(":scope > .katex");
    if (!katex) continue;
    if (display.aeBoxWidth === undefined) {
      display.aeBoxWidth = null; // observed: its first size comes with the next layout
      boxes.observe(display);
    }
    const width = display.aeBoxWidth;
    if (!width) continue; // not measured yet, or hidden (a closed expander): fitted when shown
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
  new MutationObserver(scheduleFit).observe(document.body, { childList: true, subtree: true });
  window.addEventListener("resize", scheduleFit);
  scheduleFit();
}
