// The camera button: the figure downloaded for a slide or a paper.

import { frameFor, frameOf, shownFrames } from "./frames.js";
import { plotlyReady } from "./plotly_loader.js";

// The camera button saves the figure laid out for print (app/views/export.py): its own size
// from the token count, thinned tick labels, the print font, on white.
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
  const frames = shownFrames(chart); // a chart drawn from frames names the stop it shows
  const frame = frames ? frameOf(frames, frameFor(chart)) : -1;
  const shown = frame < 0 ? null : frames.titles[frame];
  await Plotly.downloadImage({ data: gd.data, layout }, {
    format: options.format,
    filename: shown === null ? options.filename : options.filename.replace("{scale}", shown),
    width: layout.width,
    height: layout.height,
    scale: options.scale,
  });
}
