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
