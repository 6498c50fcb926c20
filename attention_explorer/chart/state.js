// What a chart can be: one name, derived from the facts plot.js gathers after every event
// (data, frames, a control's move or release, the observer, a drawing's end).
//   waiting   never drawn nor yet seen by the observer: near or far, it owes a drawing
//   away      owes a drawing, but far from the window or in a closed expander: drawn when it
//             comes near or is opened (no one sees it meanwhile)
//   preview   a control of its frames is moving: a frame painted over its drawing (preview.js),
//             the exact drawing waiting for the release
//   awaiting  keeps a drawing of another head or stop until the frames of the one shown arrive
//   queued    owes a drawing, in the queue
//   drawing   plotly.js is drawing it
//   drawn     plotly.js's drawing of what it should show, or a preview painted back on that
//             stop until the drawing is put back
// Pending (data-pending, which the page's waits and the tests read): owing a drawing that is
// under way or due.

export const PENDING = new Set(["waiting", "awaiting", "queued", "drawing"]);

// The facts: `drawing` (plotly.js is at it), `drawn` (ever), `near` (the observer's last look:
// true, false, or undefined before the first), `hidden` (folded, or off the page), `owed` (its
// drawing is not of what it should show, its overlay or its width), `awaits` (the frames of
// what it should show are still to come), `moving` (a control of its frames is moving).
export function stateOf({ drawing, drawn, near, hidden, owed, awaits, moving }) {
  if (drawing) return "drawing";
  if (!drawn && near === undefined && !hidden) return "waiting";
  if ((owed || awaits) && (hidden || near === false)) return "away";
  if (moving && drawn) return "preview";
  if (awaits) return "awaiting";
  return owed ? "queued" : "drawn";
}

// The chart object: every field any module keeps on a chart, listed here, one meaning each
// (sealed: a field set anywhere else throws). plot.js makes one per element; Chart.of finds it
// from its plotly.js div. narrow.js, preview.js and bindings.js keep their records in `fit`,
// `paint` and `cells`.
export class Chart {
  static #byDiv = new WeakMap(); // plotly.js's div -> its chart

  static of(div) {
    return Chart.#byDiv.get(div) ?? null;
  }

  // `host`: Streamlit's element; `div`: plotly.js's, inside it; `owe`: called when the chart
  // owes a drawing for a reason of its own (its width, its row's room: narrow.js).
  constructor(host, div, owe = () => {}) {
    this.host = host;
    this.div = div;
    this.owe = owe;
    Chart.#byDiv.set(div, this);
    // What Python sent (take): its key, the figure's JSON as sent and parsed (the reference
    // figure a frame is put into), the live binding (app/live/protocol.py's follow), the
    // camera's export options, the print layout, whether clicks are reported and how.
    this.key = null;
    this.sent = { spec: null, live: null, theme: null }; // as texts: what a new run compares
    this.figure = null;
    this.live = null;
    this.config = null;
    this.print = null;
    this.clicks = false;
    this.trigger = null; // the latest mount's setTriggerValue
    // What it shows: `shows` names the frames its drawing is of ("frames id:head:stop"; null,
    // its data as they came; undefined, to be drawn anew); `drawn` is its last drawing's
    // {figure, spec, overlay}, null before the first; `relaid` says its width or its row's
    // room changed since; `drawing` counts plotly.js's drawings under way.
    this.shows = undefined;
    this.drawn = null;
    this.relaid = false;
    this.drawing = 0;
    // Where it is, as the IntersectionObservers last saw it: within a window's height of
    // the window (`near`: undefined before the first look), in the window itself.
    this.near = undefined;
    this.inWindow = false;
    // plotly.js's config (made once: Plotly.react rebuilds a plot for a new one) and
    // whether its events are listened to.
    this.plotConfig = null;
    this.listening = false;
    // The others' records: the fitting to a narrow screen (narrow.js), what a preview
    // painted (preview.js), the reference figure's customdata, decoded (bindings.js).
    this.fit = {
      observer: null, width: null, natural: null, row: null, done: null,
      titles: new Map(), titleShifts: new Map(), table: null, stack: null, wide: null, scale: null,
    };
    this.paint = Object.seal({ colours: null, recoloured: null, ticks: null, tickMatrices: null, touched: null });
    this.cells = null;
    Object.seal(this.fit);
    Object.seal(this); // no module adds a field of its own: each is listed here
  }

  // Python's data for this chart (new, or the same again); whether they changed what it shows.
  take(data, theme) {
    Object.assign(this, { key: data.key, config: data.config, print: data.print || null });
    this.clicks = Boolean(data.clicks);
    this.live = data.live || null;
    const sent = { spec: data.spec, live: JSON.stringify(this.live), theme };
    const same = Object.keys(sent).every((name) => sent[name] === this.sent[name]);
    this.sent = sent;
    return !same;
  }

  // Its width or its row's room changed: it owes a drawing.
  relay() {
    this.relaid = true;
    this.owe(this);
  }

  // A click on a cell, reported to Python as {trace, row, col}.
  click(event) {
    if (!this.clicks || !event.points.length || !this.trigger) return;
    const index = event.points[0].pointIndex;
    this.trigger("click", {
      trace: event.points[0].curveNumber,
      row: Array.isArray(index) ? index[0] : index,
      col: Array.isArray(index) ? index[1] : null,
    });
  }
}
