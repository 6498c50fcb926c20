// Attention Explorer's chart component: every chart in the app, kept mounted by its key,
// and the scale slider that plays engine-computed frames while it is dragged.
//
// Streamlit calls the default export on mount and again whenever the element's data change.
// Three kinds of data arrive from Python (app/views/chart.py, app/widgets/channel.py,
// app/live/slider.py):
//   chart   {spec: figure JSON string, config, print, clicks: bool, live?: {...}}  plot.js
//   control {kind: "control", name, source, label, count, value, placed, heard, ...}  control.js
//   frames  bytes: a bundle of packed frames (app/live/protocol.py)                frames.js
// The modules beside this one each do one job: plot.js mounts and redraws a chart,
// control.js the scale's stop and the head, layer and mask controls, frames.js holds and
// decodes the frames, preview.js shows a stop or a head while a control moves, exact.js
// builds a stop's exact figure from them, narrow.js fits a chart to a phone, download.js
// exports it, hover_lines.js keeps a hovered token's lines, theme.js applies Streamlit's
// theme; plotly_loader.js loads plotly.js, mount.js hands each kind of data to its module.
//
// This entry imports nothing statically: a module runs only once every module it imports,
// however deep, has arrived, and plotly.js (the largest file, and most of a first load's
// scripting) was asked for only after the deepest of them. So plotly.js is asked for first
// and the modules that draw with it beside it; a chart mounted before they are in is
// mounted when they are, in the order Streamlit called (docs/benchmarks.md, "The first load").
//
// Every module under mount.js is asked for at once too: the browser learns of a module's
// imports only once the module has arrived, so mount.js's tree came one level at a time,
// three round trips to a server busy with the page's run: the deepest arrived after
// plotly.js was ready, and the first drawing waited for them (docs/benchmarks.md).
// tests/app/test_component.py holds this list to mount.js's imports.
const MODULES = [
  "./mount.js",
  "./control.js", "./frames.js", "./plot.js",
  "./download.js", "./exact.js", "./hover_lines.js", "./narrow.js", "./plotly_loader.js",
  "./plotly_parts.js", "./preview.js", "./state.js", "./theme.js",
];

import("./plotly.min.js").catch(() => {}); // the module plotly_loader.js waits for (and reports)
for (const module of MODULES.slice(1)) import(module).catch(() => {}); // mount.js's import reports
let mount = null;
const loaded = import(MODULES[0]).then((module) => (mount = module.default));

export default function (component) {
  if (mount) return mount(component);
  let cleanup = null;
  loaded.then(() => {
    if (component.parentElement.isConnected) cleanup = mount(component);
  });
  return () => cleanup?.();
}
