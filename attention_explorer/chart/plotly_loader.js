// plotly.js: the copy served beside these modules (copied there from the plotly package,
// never a CDN). Importing this module starts the 4.6 MB download when the component's
// script loads.

export const plotlyReady = import("./plotly.min.js").then(() => window.Plotly);
