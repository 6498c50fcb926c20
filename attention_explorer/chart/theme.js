// Streamlit's theme on a chart: its text colour, font and grid colour, from the CSS
// variables Streamlit's component wrapper carries.

// The theme's CSS variables that themed() reads, as one string (a change redraws).
export function themeKey(element) {
  const css = getComputedStyle(element);
  return ["--st-text-color", "--st-font", "--st-border-color-light"].map((name) => css.getPropertyValue(name)).join("|");
}

// `layout` over Streamlit's theme: what the figure sets wins.
export function themed(layout, element) {
  const css = getComputedStyle(element);
  const text = css.getPropertyValue("--st-text-color").trim() || undefined;
  const font = css.getPropertyValue("--st-font").trim() || undefined;
  const grid = css.getPropertyValue("--st-border-color-light").trim() || undefined;
  const axis = { automargin: true, gridcolor: grid, zerolinecolor: grid };
  const out = {
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    ...layout,
    font: { color: text, family: font, ...(layout.font || {}) },
  };
  for (const name of ["xaxis", "yaxis", ...Object.keys(out).filter((n) => /^[xy]axis\d+$/.test(n))]) {
    out[name] = { ...axis, ...(out[name] || {}) };
  }
  return out;
}

// The app's own CSS only, never user text; added once per `id`.
export function addStyle(id, css) {
  if (typeof document === "undefined" || document.getElementById(id)) return; // Node's tests
  const style = Object.assign(document.createElement("style"), { id, textContent: css });
  document.head.appendChild(style);
}
