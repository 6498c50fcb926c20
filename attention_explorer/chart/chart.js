// Attention Explorer's chart component: every chart in the app, kept mounted by its key, the
// controls the browser owns and the frames they play. Streamlit calls the default export on
// mount and whenever the element's data change. The data, from app/views/chart.py,
// app/widgets/channel.py, app/live/slider.py and app/views/model_view.py, by kind:
//   chart   {key, spec: figure JSON string, config, print, clicks, live?: {...}}  plot.js
//   control {kind: "control", name, source, label, count, value, placed, heard, ...}  control.js
//   frames  bytes: a bundle of packed frames (app/live/protocol.py)                plot.js, frames.js
//   shapes  {kind: "shapes", chart, shapes}: drawn over a chart                   plot.js
//
// No static import: a module runs only once all it imports, however deep, has arrived, and
// the browser learns a module's imports only when it arrives. So plotly.js (most of a first
// load's scripting) is asked for first and every module under mount.js at once beside it; a
// chart mounted before they are in is mounted when they are, in Streamlit's order
// (docs/benchmarks.md, "The first load"). tests/app/test_component.py holds MODULES to mount.js's.
const MODULES = [
  "./mount.js",
  "./control.js", "./frames.js", "./plot.js",
  "./bindings.js", "./download.js", "./hover_lines.js", "./narrow.js", "./plotly_loader.js",
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
