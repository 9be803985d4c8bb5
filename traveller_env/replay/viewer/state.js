/* Traveller Tactics replay viewer, part 1 of 3: the battle's state after each event.
 *
 * A pure reducer over the engine's event log: no DOM, no timer, no global but the one it
 * defines (TravellerReplay.state), so it runs the same in the page and under node
 * (`require("./state.js")`). render.js draws what it computes; controls.js wires the page.
 *
 * The state (initialState, then reduce once per event, in place) holds the round, whose turn
 * it is, the end of the battle, leadership pools per leader and, per combatant in scenario
 * order: position, stance, STR/DEX/END, aim, leadership bonus/penalty held, ammunition,
 * drawing/reloading progress, initiative (base, this round's change, next round's change),
 * haste, incapacitation.
 *
 * replay(data) reads a whole replay ({header, events, narration, problems}): it applies every
 * event once, recording the events it cannot apply (unknown type, unknown combatant) as
 * problems, each event's round group and turn, and a checkpoint every CHECKPOINT events; its
 * stateAt(i) rebuilds the state after event i from the nearest checkpoint (or steps the
 * working state forward), so a jump anywhere costs at most CHECKPOINT events.
 */
(function (root) {
  "use strict";

  var CHECKPOINT = 64;
  var GLYPHS = ["ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789abdefghijklmnopqrstuvwxyz"];
  var FORMAT = "traveller-replay", VERSION = 1;

  function isInt(v) { return typeof v === "number" && Math.floor(v) === v; }
  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }

  // ------------------------------------------------------------------ the embedded data
  /** Why `data` cannot be replayed (a sentence), or null when it can. */
  function headerProblem(data) {
    if (!isObj(data)) return "the embedded data is not an object";
    if (data.format !== FORMAT) return "the embedded data is not a Traveller replay (format " + JSON.stringify(data.format) + ")";
    if (data.version !== VERSION) return "this viewer reads replay version 1, not " + JSON.stringify(data.version);
    var h = data.header;
    if (!isObj(h)) return "the replay has no header (map, sides and combatants)";
    var m = h.map;
    if (!isObj(m) || !isInt(m.width) || !isInt(m.height) || m.width < 1 || m.height < 1) return "the header's map has no valid width and height";
    if (!Array.isArray(m.terrain) || m.terrain.length !== m.height) return "the header's map.terrain must hold " + m.height + " rows";
    for (var y = 0; y < m.height; y++) {
      if (typeof m.terrain[y] !== "string" || m.terrain[y].length !== m.width) return "the header's map.terrain row " + y + " must hold " + m.width + " characters";
    }
    if (!Array.isArray(h.sides) || h.sides.length !== 2) return "the header must name two sides";
    if (!Array.isArray(h.combatants) || h.combatants.length === 0) return "the header lists no combatants";
    var seen = {};
    for (var i = 0; i < h.combatants.length; i++) {
      var c = h.combatants[i];
      var where = "combatants[" + i + "]";
      if (!isObj(c) || typeof c.id !== "string" || !c.id) return "the header's " + where + " has no id";
      if (seen[c.id]) return "the header's " + where + " repeats the id " + c.id;
      seen[c.id] = true;
      if (c.side !== 0 && c.side !== 1) return "the header's " + where + ".side must be 0 or 1";
      if (!Array.isArray(c.position) || c.position.length !== 2 || !isInt(c.position[0]) || !isInt(c.position[1])) return "the header's " + where + ".position must be [x, y]";
      var ch = c.characteristics;
      if (!isObj(ch) || !isInt(ch.STR) || !isInt(ch.DEX) || !isInt(ch.END)) return "the header's " + where + ".characteristics must hold STR, DEX and END";
      if (!isObj(c.weapon) || !isObj(c.armour)) return "the header's " + where + " has no weapon or armour";
    }
    if (!Array.isArray(data.events)) return "the replay has no list of events";
    return null;
  }

  /** What the reducer needs of a (checked) header: the combatants, their index by id, their
   *  one-character map glyphs (A, B... for side 0; 0, 1... for side 1) and the side names. */
  function scenario(header) {
    var byId = {}, glyph = [], perSide = [0, 0];
    header.combatants.forEach(function (c, k) {
      byId[c.id] = k;
      var n = perSide[c.side]++;
      glyph.push(n < GLYPHS[c.side].length ? GLYPHS[c.side][n] : "?");
    });
    return { header: header, combatants: header.combatants, byId: byId, glyph: glyph,
             sideNames: header.sides.map(String) };
  }

  // ------------------------------------------------------------------ the reducer
  /** The state before the first event: the header's starting positions and equipment. */
  function initialState(scn) {
    return {
      round: 0, turn: null, end: null, pools: {},
      cs: scn.combatants.map(function (c) {
        return {
          pos: [c.position[0], c.position[1]], stance: String(c.stance || "stand"),
          chars: { STR: c.characteristics.STR, DEX: c.characteristics.DEX, END: c.characteristics.END },
          aim: null, aimDm: 0, bonus: null, penalty: null,
          ammo: isInt(c.ammo) ? c.ammo : null, spares: isInt(c.spares) ? c.spares : null,
          drawn: c.drawn !== false, ready: null,
          base: 0, now: 0, next: 0, start: 0, hasty: false, begun: false, changes: [],
          down: null, out: false
        };
      })
    };
  }
  function cloneState(s) { return JSON.parse(JSON.stringify(s)); }

  function who(scn, s, id) {
    var k = scn.byId[id];
    if (k === undefined) throw new Error("unknown combatant " + JSON.stringify(id));
    return s.cs[k];
  }
  function pool(s, id) {
    if (!s.pools[id]) s.pools[id] = { bonus: 0, penalty: 0 };
    return s.pools[id];
  }

  // One function per event type: fn(scn, s, e) updates the state s in place.
  var APPLY = {
    initiative: function (scn, s, e) { var c = who(scn, s, e.actor); c.base = e.initiative; c.now = 0; c.start = c.base; },
    tactics: function (scn, s, e) {
      var side = scn.sideNames.indexOf(e.unit);
      s.cs.forEach(function (c, k) { if (scn.combatants[k].side === side) { c.base += e.added; c.start = c.base + c.now; } });
    },
    round: function (scn, s, e) {
      s.round = e.round; s.turn = null;
      s.cs.forEach(function (c) {
        c.now = c.next; c.next = 0; c.hasty = false; c.begun = false; c.changes = [];
        c.start = c.base + c.now;
      });
    },
    haste: function (scn, s, e) { var c = who(scn, s, e.actor); c.hasty = e.haste; c.now = e.initiative - c.base; },
    simultaneous: function () {},
    turn: function (scn, s, e) { var c = who(scn, s, e.actor); s.turn = e.actor; c.begun = true; c.now = e.initiative - c.base; },
    move: function (scn, s, e) { var c = who(scn, s, e.actor); c.pos = [e.to[0], e.to[1]]; c.ready = null; },
    stance: function (scn, s, e) { var c = who(scn, s, e.actor); c.stance = e.to; c.ready = null; },
    draw: function (scn, s, e) {
      var c = who(scn, s, e.actor);
      c.ready = e.done ? null : { kind: "draw", progress: e.progress, needed: e.needed };
      if (e.done) c.drawn = true;
    },
    reload: function (scn, s, e) {
      var c = who(scn, s, e.actor);
      c.ready = e.done ? null : { kind: "reload", progress: e.progress, needed: e.needed };
      if (e.done) {
        var w = scn.combatants[scn.byId[e.actor]].weapon;
        if (isInt(w.magazine)) c.ammo = w.magazine;
        if (isInt(c.spares)) c.spares -= 1;
      }
    },
    aim: function (scn, s, e) { var c = who(scn, s, e.actor); who(scn, s, e.target); c.aim = e.target; c.aimDm = e.aim; c.ready = null; },
    aim_lost: function (scn, s, e) { var c = who(scn, s, e.actor); if (c.aim === e.target) { c.aim = null; c.aimDm = 0; } },
    attack: function (scn, s, e) {
      var a = who(scn, s, e.actor), t = who(scn, s, e.target);
      a.aim = null; a.aimDm = 0; a.ready = null;
      if (isInt(e.ammo_left)) a.ammo = e.ammo_left;
      ["STR", "DEX", "END"].forEach(function (k) { if (isInt(e.target_after[k])) t.chars[k] = e.target_after[k]; });
    },
    reaction: function (scn, s, e) { who(scn, s, e.actor); who(scn, s, e.attacker); },
    initiative_change: function (scn, s, e) {
      var c = who(scn, s, e.actor);
      c.now = e.initiative - c.base;
      c.next = e.next_round_change;
      c.changes.push({ reason: String(e.reason), change: e.change, next: e.applies_to === "next_round" });
    },
    leadership: function (scn, s, e) {
      var c = who(scn, s, e.actor); c.ready = null;
      var p = pool(s, e.actor); p.bonus += e.bonuses; p.penalty += e.penalties;
    },
    bonus_granted: function (scn, s, e) { who(scn, s, e.target).bonus = e.actor; pool(s, e.actor).bonus -= 1; },
    penalty_imposed: function (scn, s, e) { who(scn, s, e.target).penalty = e.actor; pool(s, e.leader).penalty -= 1; },
    bonus_used: function (scn, s, e) { who(scn, s, e.actor).bonus = null; },
    penalty_used: function (scn, s, e) { who(scn, s, e.actor).penalty = null; },
    lapse: function (scn, s, e) { who(scn, s, e.actor); var p = pool(s, e.actor); if (e.kind === "bonus") p.bonus = 0; else p.penalty = 0; },
    incapacitated: function (scn, s, e) { var c = who(scn, s, e.actor); c.down = String(e.state); if (!e.stays_until_group_ends) c.out = true; },
    out: function (scn, s, e) { who(scn, s, e.actor).out = true; },
    end_turn: function (scn, s, e) { who(scn, s, e.actor); s.turn = null; },
    illegal_action: function (scn, s, e) { who(scn, s, e.actor); },
    end: function (scn, s, e) { s.end = { round: e.round, winner: e.winner, reason: e.reason }; s.turn = null; }
  };

  /** Whether the reducer knows events of this type. */
  function knows(type) { return Object.prototype.hasOwnProperty.call(APPLY, type); }

  /** Apply event `e` to state `s` in place (throws on an unknown type or combatant; a throw
   *  may come after part of the event was applied). */
  function reduce(scn, s, e) {
    if (!isObj(e) || !knows(e.type)) throw new Error("unknown event type " + JSON.stringify(isObj(e) ? e.type : e));
    APPLY[e.type](scn, s, e);
    return s;
  }

  // ------------------------------------------------------------------ a whole replay
  /** A replay of `data` ({header, events, narration?, problems?}; headerProblem(data) must
   *  be null): its events' problems, round groups and turns, and stateAt(i). */
  function replay(data) {
    var H = data.header, E = data.events, N = E.length;
    var scn = scenario(H);
    var C = scn.combatants;
    var NAR = Array.isArray(data.narration) ? data.narration : [];

    // Problems: those written in the page, events that are not objects, then (while the
    // checkpoints are built) those the reducer cannot apply. bad[i]: event i's message.
    var bad = {};
    var problems = [];
    (Array.isArray(data.problems) ? data.problems : []).forEach(function (p) {
      if (isObj(p) && isInt(p.index)) { bad[p.index] = String(p.message); problems.push(p); }
    });
    for (var i0 = 0; i0 < N; i0++) {
      if (!bad[i0] && (!isObj(E[i0]) || typeof E[i0].type !== "string")) {
        bad[i0] = "event " + (i0 + 1) + " is not an event object";
        problems.push({ index: i0, message: bad[i0] });
      }
    }

    function applyAt(s, i) {
      if (bad[i]) return;
      var e = E[i];
      if (!knows(e.type)) {
        bad[i] = "event " + (i + 1) + " has an unknown type " + JSON.stringify(e.type);
        problems.push({ index: i, message: bad[i] });
        return;
      }
      try {
        APPLY[e.type](scn, s, e);
      } catch (err) {
        bad[i] = "event " + (i + 1) + " (" + e.type + ") could not be applied: " + err.message;
        problems.push({ index: i, message: bad[i] });
      }
    }

    // Checkpoints (and, on the way, every event's round group and turn).
    var checkpoints = [];
    var group = new Array(N);      // index of the first event of the event's round group
    var turnOf = new Array(N);     // index of the turn event the event belongs to, or -1
    var firstRound = -1;
    (function () {
      var s = initialState(scn);
      var gStart = 0, tStart = -1;
      for (var i = 0; i < N; i++) {
        if (i % CHECKPOINT === 0) checkpoints.push(cloneState(s));
        var e = E[i];
        var type = bad[i] ? null : e.type;
        if (type === "round") {
          if (firstRound < 0) firstRound = i; else gStart = i;
          tStart = -1;
        } else if (type === "turn") {
          tStart = i;
        }
        group[i] = gStart;
        turnOf[i] = tStart;
        applyAt(s, i);
      }
    })();
    var groupEnd = {};  // first index of a group -> last index
    for (var gi = 0; gi < N; gi++) groupEnd[group[gi]] = gi;

    // The working state: stepping forward applies the next events to it.
    var work = null, workIndex = -2;
    function stateAt(i) {
      if (i === workIndex) return work;
      if (work && i > workIndex && i - workIndex <= CHECKPOINT) {
        for (var f = workIndex + 1; f <= i; f++) applyAt(work, f);
        workIndex = i;
        return work;
      }
      var k = Math.floor(i / CHECKPOINT);
      work = cloneState(checkpoints[k]);
      for (var j = k * CHECKPOINT; j <= i; j++) applyAt(work, j);
      workIndex = i;
      return work;
    }

    return {
      header: H, events: E, count: N, scenario: scn,
      combatants: C, byId: scn.byId, glyph: scn.glyph, sideNames: scn.sideNames,
      /** event index -> why it cannot be shown (absent when it can) */
      bad: bad,
      /** [{index, message}] in the order found */
      problems: problems,
      group: group, groupEnd: groupEnd, turnOf: turnOf, firstRound: firstRound,
      /** The state after event i (0 <= i < count); shared and changed by the next call:
       *  clone it (cloneState) to keep it. */
      stateAt: stateAt,
      /** The narrator's line of event i (or its type in brackets when there is none). */
      narration: function (i) {
        var text = NAR[i];
        if (typeof text === "string") return text;
        return "[" + (isObj(E[i]) ? String(E[i].type) : "not an event") + "]";
      },
      /** "id (name)" of a combatant id (the id itself when unknown). */
      cname: function (id) {
        var k = scn.byId[id];
        return k === undefined ? String(id) : C[k].id + " (" + C[k].name + ")";
      }
    };
  }

  /** The state after event i of `events` played from `header` (a fresh copy). */
  function stateAfter(header, events, i) {
    return cloneState(replay({ header: header, events: events }).stateAt(i));
  }

  var api = {
    CHECKPOINT: CHECKPOINT, FORMAT: FORMAT, VERSION: VERSION,
    isInt: isInt, isObj: isObj, headerProblem: headerProblem, scenario: scenario,
    initialState: initialState, cloneState: cloneState, knows: knows, reduce: reduce,
    replay: replay, stateAfter: stateAfter
  };
  root.TravellerReplay = root.TravellerReplay || {};
  root.TravellerReplay.state = api;
  if (typeof module === "object" && module && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
