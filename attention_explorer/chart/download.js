// The camera button: the figure downloaded for a slide or a paper, laid out for print
// (app/views/export.py: its own size from the token count, thinned tick labels, the print
// font), on white.

import { shownFrames, source } from "./frames.js";
import { plotlyReady } from "./plotly_loader.js";

export async function download(chart, gd) {
  const Plotly = await plotlyReady;
  const options = chart.config.toImageButtonOptions;
  const print = chart.print || {};
  const layout = {
    ...gd.layout,
    paper_bgcolor: "white",
    plot_bgcolor: "white",
    ...print,
    font: { ...(gd.layout.font || {}), color: "#222", ...(print.font || {}) },
  };
  for (const axis of Object.keys(print).filter((name) => /^[xy]axis\d*$/.test(name))) {
    layout[axis] = { ...(gd.layout[axis] || {}), ...print[axis] };
  }
  const found = shownFrames(chart); // a chart drawn from frames names the stop and head it shows
  const filename = found
    ? options.filename.replace("{scale}", found.frames.titles[found.frame]).replace("{head}", String(source(chart.live.source).head))
    : options.filename;
  await Plotly.downloadImage({ data: gd.data, layout }, {
    format: options.format,
    filename,
    width: layout.width,
    height: layout.height,
    scale: options.scale,
  });
}
