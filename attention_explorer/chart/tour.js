// The tour: a new step starts at its heading even when the reader had scrolled down to the
// figure (here, not inline: serve_class.sh's Content-Security-Policy allows no inline script).

// Scroll to the top whenever the tour's heading changes (a new step).
export function scrollOnNewHeading() {
  if (window.__aeScrollOnNewHeading) return;
  window.__aeScrollOnNewHeading = true;
  let heading; // undefined until the first heading is seen
  new MutationObserver(() => {
    const h1 = document.querySelector('[data-testid="stMain"] h1');
    const text = h1 ? h1.textContent : null;
    if (text === heading) return;
    if (heading !== undefined && location.pathname.endsWith("/tour")) {
      for (const pane of [document.scrollingElement, ...document.querySelectorAll('[data-testid="stMain"]')]) {
        pane.scrollTo({ top: 0 });
      }
    }
    heading = text;
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
}
