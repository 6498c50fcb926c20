// Attention Explorer's chart component: every chart in the app, kept mounted by its key,
// and the scale slider that plays engine-computed frames while it is dragged.
//
// Streamlit calls the default export on mount and again whenever the element's data change.
// Four kinds of data arrive from Python (app/views/chart.py, app/live/slider.py, heads.py):
//   chart   {spec: figure JSON string, config, print, clicks: bool, live?: {...}}  plot.js
//   scale   {kind: "scale", source, label, stops, stop, placed, labels?}          slider.js
//   head    {kind: "head", source, label, heads, head, stop, hidden?}             heads.js
//   frames  bytes: [uint32 header length][header JSON][pad to 8][arrays]          frames.js
// The modules beside this one each do one job: plot.js mounts and redraws a chart,
// slider.js the slider and its frames, heads.js the live head control, frames.js holds and
// decodes them, preview.js shows a stop or a head while a control moves, exact.js builds
// a stop's exact figure from them,
// narrow.js fits a chart to a phone, download.js exports it, hover_lines.js keeps a hovered
// token's lines, theme.js applies Streamlit's theme; plotly_loader.js loads plotly.js.

import { forget as forgetFrames } from "./frames.js";
import { mountHead } from "./heads.js";
import { forget as forgetChart, mountChart } from "./plot.js";
import "./plotly_loader.js"; // starts plotly.js's download with the first chart's script
import { mountFrames, mountSlider } from "./slider.js";

export default function (component) {
  const { data, parentElement } = component;
  if (data instanceof Uint8Array) mountFrames(component);
  else if (data.kind === "scale") mountSlider(component);
  else if (data.kind === "head") mountHead(component);
  else mountChart(component);
  // Called when the data change as well as on unmount: free a plot only once its element
  // has really left the page.
  return () =>
    setTimeout(() => {
      if (parentElement.isConnected) return;
      forgetChart(parentElement);
      forgetFrames(parentElement); // its frames too
    }, 0);
}
