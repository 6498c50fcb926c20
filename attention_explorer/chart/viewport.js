// Presentation mode's screen size, told to Python, which lays the figures out for it
// (app/views/chart.py): when it differs from the size Python assumed (`known`), at first
// and after a resize. Data: {kind: "viewport", known: [width, height]}.

const reporters = new WeakMap(); // the marker -> the latest mount's report of the screen

export function mountViewport(component) {
  const { data, parentElement, setStateValue } = component;
  let marker = parentElement.querySelector(".ae-viewport");
  if (!marker) {
    marker = document.createElement("div");
    marker.className = "ae-viewport";
    parentElement.appendChild(marker);
    let timer;
    window.addEventListener("resize", () => {
      clearTimeout(timer);
      timer = setTimeout(() => reporters.get(marker)(), 300);
    });
  }
  marker.dataset.known = data.known.join("x");
  const report = () => {
    const size = [window.innerWidth, window.innerHeight];
    const text = size.join("x");
    marker.dataset.size = text;
    if (text === marker.dataset.known || text === marker.dataset.sent) return;
    marker.dataset.sent = text; // once per size, even if Python keeps its assumption
    setStateValue("size", size);
  };
  reporters.set(marker, report);
  report();
}
