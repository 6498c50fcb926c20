// plotly.js: the copy served beside these modules (copied there on import, never a CDN:
// the partial bundle of the traces the app draws, 1.3 MB, or the plotly package's own).
// Importing this module starts its download when the component's script loads.

export const plotlyReady = import("./plotly.min.js").then(() => window.Plotly);
