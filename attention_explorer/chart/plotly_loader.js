// plotly.js: the copy served beside these modules (attention_explorer copies it there on
// import, never from a CDN); importing this module starts its download.

export const plotlyReady = import("./plotly.min.js").then(() => window.Plotly);
