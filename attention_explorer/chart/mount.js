// The chart component's mount for each kind of data (chart.js loads it).

import { forget as forgetFrames } from "./frames.js";
import { mountControl } from "./control.js";
import { forget as forgetChart, mountChart, mountFrames, mountShapes } from "./plot.js";

export default function (component) {
  const { data, parentElement } = component;
  if (data instanceof Uint8Array) mountFrames(component);
  else if (data.kind === "control") mountControl(component);
  else if (data.kind === "shapes") mountShapes(component);
  else mountChart(component);
  // Called when the data change as well as on unmount: free a plot, and its frames, only
  // once its element has left the page.
  return () =>
    setTimeout(() => {
      if (parentElement.isConnected) return;
      forgetChart(parentElement);
      forgetFrames(parentElement);
    }, 0);
}
