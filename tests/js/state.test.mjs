// What a chart can be (chart/state.js): every combination of the facts plot.js gathers
// named, and the rules the names stand for.
import assert from "node:assert/strict";
import { test } from "node:test";

import { PENDING, stateOf } from "../../attention_explorer/chart/state.js";

const NAMES = ["waiting", "away", "preview", "awaiting", "queued", "drawing", "drawn"];

// Every combination of the facts: near is true, false or unknown (before the first look).
function* allFacts() {
  const flags = ["drawing", "drawn", "hidden", "owed", "awaits", "moving"];
  for (let bits = 0; bits < 2 ** flags.length; bits++) {
    for (const near of [true, false, undefined]) {
      yield { ...Object.fromEntries(flags.map((flag, i) => [flag, Boolean(bits & (1 << i))])), near };
    }
  }
}

test("every combination of facts has one of the named states", () => {
  const seen = new Set();
  for (const facts of allFacts()) {
    const state = stateOf(facts);
    assert.ok(NAMES.includes(state), `${JSON.stringify(facts)} -> ${state}`);
    seen.add(state);
  }
  assert.deepEqual([...seen].sort(), [...NAMES].sort()); // and each name is reachable
});

test("a chart is pending exactly while it owes a drawing that is under way or due", () => {
  assert.deepEqual([...PENDING].sort(), ["awaiting", "drawing", "queued", "waiting"]);
  for (const facts of allFacts()) {
    const state = stateOf(facts);
    if (facts.drawing) assert.equal(state, "drawing");
    // nothing owed, nothing moving, seen: drawn, and not pending
    if (!facts.drawing && facts.drawn && !facts.owed && !facts.awaits && !facts.moving && facts.near !== undefined) {
      assert.equal(state, "drawn", JSON.stringify(facts));
    }
    // what no one can see owes nothing now
    if (!facts.drawing && (facts.hidden || facts.near === false)) {
      assert.ok(!PENDING.has(state), `${JSON.stringify(facts)} -> ${state}`);
    }
  }
});

test("a moving control defers a drawn chart's drawing to the release; a first drawing is not deferred", () => {
  const moving = { drawing: false, drawn: true, near: true, hidden: false, owed: true, awaits: false, moving: true };
  assert.equal(stateOf(moving), "preview");
  assert.equal(stateOf({ ...moving, moving: false }), "queued"); // released
  assert.equal(stateOf({ ...moving, moving: false, owed: false, awaits: true }), "awaiting");
  assert.equal(stateOf({ ...moving, drawn: false }), "queued");
  assert.equal(stateOf({ ...moving, near: false }), "away"); // far: drawn when it comes near
});

test("a chart never drawn waits for the observer's first look, then is drawn or waits away", () => {
  const fresh = { drawing: false, drawn: false, near: undefined, hidden: false, owed: true, awaits: false, moving: false };
  assert.equal(stateOf(fresh), "waiting");
  assert.equal(stateOf({ ...fresh, near: true }), "queued");
  assert.equal(stateOf({ ...fresh, near: false }), "away");
  assert.equal(stateOf({ ...fresh, hidden: true }), "away"); // in a closed expander
});
