// The frames in the browser: decoded from Python's binary messages, held per source (a
// slider's key, which its charts name), and which head and stop each chart should show.
// A source holds its elements' frames: every stop's of the head shown in one element, or past
// 128 tokens one stop's per element, the current stop's and its neighbours'; beside them, to
// paint a head switch, every head of the layer at the current stop (header `axis: "head"`), and
// for a layer switch and a mask toggle, the head shown in every layer (`axis: "layer"`) and
// unmasked and masked (`axis: "mask"`) there. An element's frames count from its mount, though
// it may not be in the page yet, and go when it has left.

// name -> {held: Map(element -> [frames]), stop, head, sent, moving, charts: Set, owned: {}}
// (`owned`: the controls' own values, by name: control.js)
const sources = new Map();

// Made on first use: a chart, a control or frames may name it first.
export function source(name) {
  if (!sources.has(name)) {
    sources.set(name, Object.seal({
      held: new Map(), stop: null, head: null, sent: null, moving: false, charts: new Set(), owned: {},
    }));
  }
  return sources.get(name);
}

// For what spans every source (a chart that stops following, an element gone).
export const allSources = () => sources.values();

// `chart` follows the source its `live` binding names, and no other.
export function follow(chart) {
  for (const src of sources.values()) src.charts.delete(chart);
  if (chart.live) source(chart.live.source).charts.add(chart);
}

// An element has left the page: the frames it held go with it.
export function forget(element) {
  for (const src of sources.values()) src.held.delete(element);
}

// A packed message (app/live/protocol.py's pack): a uint32 header length, the header
// {source, id, first, scales, titles, limits, ticks, labels, texts, head?, axis?, stop?,
// arrays: {name: {dtype, shape, offset, lo?, hi?}}}, padding to 8, the arrays. limits[name][f]
// spans frame f's colour scale (± it), ticks[name][f] its colour bar's [values, labels],
// texts[name][f] a table's array as Python writes its numbers. dtype "f4" is float32, "u2"
// 16-bit fixed point over [lo, hi], 65535 a gap (a masked cell). Arrays are (n_frames, ...)
// in C order (with `fixed: {mask, values, kept}`, the offsets of a uint8 mask of one frame's
// cells the same in every frame and of their values, and each frame's other cells alone): frame f is stop first + f of head `head`, or with axis "head", head f at stop
// `stop`; an array whose first axis is 1 is the same in every frame (a head's raw scores).
export function headerText(bytes) {
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
  return new TextDecoder().decode(bytes.subarray(4, 4 + length));
}

// A bundle, the one message an element's frames come in (app/live/protocol.py's bundle):
// "AEFB", a uint32 count, then each packed frames message after its uint32 length.
function parts(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const found = [];
  for (let i = 0, at = 8; i < view.getUint32(4, true); i++, at += 4 + view.getUint32(at, true)) {
    found.push(bytes.subarray(at + 4, at + 4 + view.getUint32(at, true)));
  }
  return found;
}

// The bundle's headers as one text, which tells the same frames sent again.
export function bundleHeaders(bytes) {
  return parts(bytes).map(headerText).join("\n");
}

export function decodeBundle(bytes) {
  return parts(bytes).map(decodeFrames);
}

// Every frames message `src` holds, whichever element brought it (exported for the browser
// tests, which read what is held).
export function* heldFrames(src) {
  for (const list of src.held.values()) yield* list;
}

export function decodeFrames(bytes) {
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true); // in bytes
  const header = JSON.parse(headerText(bytes));
  const start = 4 + length + ((8 - ((4 + length) % 8)) % 8);
  const body = bytes.slice(start).buffer; // aligned copy
  const arrays = {};
  for (const [name, info] of Object.entries(header.arrays)) {
    const count = info.shape.reduce((a, b) => a * b, 1);
    const Typed = info.dtype === "f4" ? Float32Array : Uint16Array;
    const size = count / info.shape[0];
    const fixed = info.fixed;
    let values = new Typed(body, info.offset, fixed ? info.shape[0] * fixed.kept : count);
    if (fixed) {
      const mask = new Uint8Array(body, fixed.mask, size);
      values = whole(values, mask, new Typed(body, fixed.values, size - fixed.kept), info.shape[0], Typed);
    }
    arrays[name] = { ...info, values, size };
  }
  return { ...header, arrays };
}

// Frames sent with the cells the same in every frame once (1 in `mask`, their values
// `same`) and each frame's other cells alone (`kept`), whole again: `n` frames.
function whole(kept, mask, same, n, Typed) {
  const size = mask.length;
  const frames = new Typed(n * size);
  for (let f = 0, k = 0; f < n; f++) {
    for (let j = 0, s = 0, at = f * size; j < size; j++, at++) frames[at] = mask[j] ? same[s++] : kept[k++];
  }
  return frames;
}

// The frame of the slider's `stop` and head `head` in `frames`, or -1 when they do not hold it.
export function frameOf(frames, stop, head) {
  if (frames.axis && frames.axis !== "head") return -1; // a layer switch's or mask toggle's preview alone
  if (frames.axis === "head") return stop === frames.stop && head >= 0 && head < frames.scales.length ? head : -1;
  if (frames.head !== undefined && head !== null && head !== undefined && frames.head !== head) return -1;
  const frame = stop - (frames.first || 0);
  return frame >= 0 && frame < frames.scales.length ? frame : -1;
}

// Where frame `frame` of `array` starts: an array the same in every frame has one.
export function start(array, frame) {
  return (array.shape[0] === 1 ? 0 : frame) * array.size;
}

// The value at flat position `index` of frame `frame`, as a number (NaN for a gap).
export function valueAt(array, frame, index) {
  const raw = array.values[start(array, frame) + index];
  if (array.dtype === "f4") return raw;
  return raw === 65535 ? NaN : array.lo + (raw / 65534) * (array.hi - array.lo);
}

// Rows of frame `frame` of a float32 `array`, each a view.
export function frameRows(array, frame) {
  const [rows, width, first] = [array.shape[1], array.shape[2], start(array, frame)];
  return Array.from({ length: rows }, (_, i) => array.values.subarray(first + i * width, first + (i + 1) * width));
}

// The frames `src` holds for `stop` and the head shown, named `id` (any name when omitted),
// and the frame in them: {frames, frame}, or null; the head's frames first, else the layer's.
export function framesAt(src, stop, id) {
  let found = null;
  for (const frames of heldFrames(src)) {
    if (id !== undefined && frames.id !== id) continue;
    const frame = frameOf(frames, stop, src.head);
    if (frame >= 0 && (!found || frames.axis !== "head")) found = { frames, frame };
  }
  return found;
}

// The frames of the head shown at the slider's stop along `axis`: "layer" (frame l is
// layer l) or "mask" (frame 0 unmasked, 1 masked), from which a layer switch or a mask
// toggle is shown before its run; or null.
export function otherFrames(src, axis) {
  for (const frames of heldFrames(src)) {
    if (frames.axis === axis && frames.stop === src.stop && frames.head === src.head) return frames;
  }
  return null;
}

const holds = (src, id) => [...heldFrames(src)].some((frames) => frames.id === id);

// Whether `chart` is drawn from frames (float32, its reference figure) and which stop it
// should show now: null when it shows its data as they came.
export function frameFor(chart) {
  const live = chart.live;
  if (!live || live.drawn === undefined) return null;
  const src = source(live.source);
  if (src.stop === null || !holds(src, live.frames)) return null;
  return src.stop;
}

// The frames `chart` follows at the stop and head it should show now: {frames, frame}, or null.
export function shownFrames(chart) {
  const stop = frameFor(chart);
  return stop === null ? null : framesAt(source(chart.live.source), stop, chart.live.frames);
}

// What `chart` should show: its data as they came (null) or "frames id:head:stop" (a
// chart that does not follow the scale, "frames id:head"). Without frames of that head and
// stop, keep what is shown until they arrive.
export function wanted(chart) {
  const stop = frameFor(chart);
  if (stop === null) return replaced(chart) ? chart.shows : null;
  const src = source(chart.live.source);
  if (!framesAt(src, stop, chart.live.frames)) return chart.shows;
  return shownKey(chart, src.head, stop);
}

// Whether `chart` keeps a drawing of another head or stop than the one shown until that
// one's frames arrive (a head moved at a stop whose heads are still to come).
export function awaits(chart) {
  const stop = frameFor(chart);
  return stop !== null && !framesAt(source(chart.live.source), stop, chart.live.frames);
}

// Whether `chart`, which shows frames, and the frames its data name are apart: new settings
// (a layer, the mask, a text) whose frames or data are still to come in the same run, in
// either order. Until both are in it keeps what it shows, not its reference figure's head,
// unless that figure is drawn at the head and stop shown (`live.head`): then it is drawn
// as it came, before its frames.
export function replaced(chart) {
  const live = chart.live;
  if (!live || live.drawn === undefined || chart.shows === null || chart.shows === undefined) return false;
  const src = source(live.source);
  if (src.held.size === 0 || holds(src, live.frames)) return false;
  return src.moving || live.head !== src.head || !(live.stopless || live.drawn === src.stop);
}

// What `chart` shows at `head` and `stop`, named as wanted() names it.
export function shownKey(chart, head, stop) {
  const live = chart.live;
  return live.stopless ? `${live.frames}:${head}` : `${live.frames}:${head}:${stop}`;
}
