// The chart component's modules, loaded by chart.js once plotly.js is on its way: one
// mount per kind of data.

import { forget as forgetFrames } from "./frames.js";
import { mountControl } from "./control.js";
import { forget as forgetChart, mountChart, mountFrames, mountShapes } from "./plot.js";

export default function (component) {
  const { data, parentElement } = component;
  if (data instanceof Uint8Array) mountFrames(component);
  else if (data.kind === "control") mountControl(component);
  else if (data.kind === "shapes") mountShapes(component);
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
