/* Traveller Tactics replay viewer.
 *
 * Reads the JSON of the element #replay-data (written by traveller_env/replay_html.py):
 * {format, version, header, events, narration, problems}. Every string from it is shown
 * with textContent, createElement or canvas fillText only: never parsed as markup. No
 * network request is made (the page's Content-Security-Policy forbids them anyway).
 *
 * The state after event i is rebuilt from a checkpoint (one every CHECKPOINT events) by
 * applying the events in order; stepping forward applies one event to the working state.
 * window.replayViewer exposes go/play/pause/speed and frame statistics for tests and for
 * experiments/bench_replay.py.
 */
(function () {
  "use strict";

  var CHECKPOINT = 64;
  var SPEEDS = [0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256];
  var DEFAULT_SPEED = 4;
  var SIDE_COLOURS = ["rgb(40, 90, 220)", "rgb(215, 45, 35)"];
  var SIDE_RGB = [[40, 90, 220], [215, 45, 35]];
  var TERRAIN = { ".": "rgb(226, 219, 198)", "~": "rgb(184, 158, 116)",
                  "c": "rgb(126, 150, 100)", "#": "rgb(58, 58, 66)" };
  var GLYPHS = ["ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789abdefghijklmnopqrstuvwxyz"];
  var DM_LABEL = { leadership_bonus: "leadership bonus", leadership_penalty: "leadership penalty" };
  var STANCE_WORD = { stand: "standing", crouch: "crouched", prone: "prone" };
  var TARGET = 8;

  function $(id) { return document.getElementById(id); }
  var statusEl = $("status");

  function say(message, fatal) {
    statusEl.textContent = message;
    statusEl.className = fatal ? "status fatal" : "status";
  }

  window.addEventListener("error", function (ev) {
    say("The replay viewer stopped on an error: " + (ev && ev.message ? ev.message : ev) +
        ". The file may be damaged: write it again with `traveller replay`.", true);
  });

  // ------------------------------------------------------------------ small helpers
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function signed(n) {
    return (typeof n === "number" && n >= 0 ? "+" : n < 0 ? "\u2212" : "") +
      (typeof n === "number" ? String(Math.abs(n)) : String(n));
  }
  // Writes that skip the DOM when nothing changed (playing fast must not re-lay the page).
  function setText(node, value) {
    if (node.__text !== value) { node.textContent = value; node.__text = value; }
  }
  function setClass(node, value) {
    if (node.className !== value) node.className = value;
  }
  function isInt(v) { return typeof v === "number" && Math.floor(v) === v; }
  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  function plural(n, word, many) { return n + " " + (n === 1 ? word : (many || word + "s")); }
  function sum(list) { var t = 0; for (var k = 0; k < list.length; k++) t += list[k]; return t; }

  // ------------------------------------------------------------------ loading
  function headerProblem(data) {
    if (!isObj(data)) return "the embedded data is not an object";
    if (data.format !== "traveller-replay") return "the embedded data is not a Traveller replay (format " + JSON.stringify(data.format) + ")";
    if (data.version !== 1) return "this viewer reads replay version 1, not " + JSON.stringify(data.version);
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

  var data;
  try {
    data = JSON.parse($("replay-data").textContent);
  } catch (err) {
    say("This replay cannot be shown: its embedded data is not valid JSON (" + err.message + "). Write the file again with `traveller replay`.", true);
    return;
  }
  var why = headerProblem(data);
  if (why) {
    say("This replay cannot be shown: " + why + ".", true);
    return;
  }

  var H = data.header;
  var E = data.events;
  var N = E.length;
  var NAR = Array.isArray(data.narration) ? data.narration : [];
  var C = H.combatants;
  var W = H.map.width, HGT = H.map.height;
  var byId = {};
  var glyph = [];
  var perSide = [0, 0];
  C.forEach(function (c, k) {
    byId[c.id] = k;
    var n = perSide[c.side]++;
    glyph.push(n < GLYPHS[c.side].length ? GLYPHS[c.side][n] : "?");
  });
  var sideNames = H.sides.map(String);

  var bad = {};
  var problemList = [];
  (Array.isArray(data.problems) ? data.problems : []).forEach(function (p) {
    if (isObj(p) && isInt(p.index)) { bad[p.index] = String(p.message); problemList.push(p); }
  });
  for (var i0 = 0; i0 < N; i0++) {
    if (!bad[i0] && (!isObj(E[i0]) || typeof E[i0].type !== "string")) {
      bad[i0] = "event " + (i0 + 1) + " is not an event object";
      problemList.push({ index: i0, message: bad[i0] });
    }
  }

  function cname(id) {
    var k = byId[id];
    return k === undefined ? String(id) : C[k].id + " (" + C[k].name + ")";
  }
  function narration(i) {
    var text = NAR[i];
    if (typeof text === "string") return text;
    return "[" + (isObj(E[i]) ? String(E[i].type) : "not an event") + "]";
  }

  // ------------------------------------------------------------------ state
  function initialState() {
    return {
      round: 0, turn: null, end: null, pools: {},
      cs: C.map(function (c) {
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

  function who(s, id) {
    var k = byId[id];
    if (k === undefined) throw new Error("unknown combatant " + JSON.stringify(id));
    return s.cs[k];
  }
  function pool(s, id) {
    if (!s.pools[id]) s.pools[id] = { bonus: 0, penalty: 0 };
    return s.pools[id];
  }

  var APPLY = {
    initiative: function (s, e) { var c = who(s, e.actor); c.base = e.initiative; c.now = 0; c.start = c.base; },
    tactics: function (s, e) {
      var side = sideNames.indexOf(e.unit);
      s.cs.forEach(function (c, k) { if (C[k].side === side) { c.base += e.added; c.start = c.base + c.now; } });
    },
    round: function (s, e) {
      s.round = e.round; s.turn = null;
      s.cs.forEach(function (c) {
        c.now = c.next; c.next = 0; c.hasty = false; c.begun = false; c.changes = [];
        c.start = c.base + c.now;
      });
    },
    haste: function (s, e) { var c = who(s, e.actor); c.hasty = e.haste; c.now = e.initiative - c.base; },
    simultaneous: function () {},
    turn: function (s, e) { var c = who(s, e.actor); s.turn = e.actor; c.begun = true; c.now = e.initiative - c.base; },
    move: function (s, e) { var c = who(s, e.actor); c.pos = [e.to[0], e.to[1]]; c.ready = null; },
    stance: function (s, e) { var c = who(s, e.actor); c.stance = e.to; c.ready = null; },
    draw: function (s, e) {
      var c = who(s, e.actor);
      c.ready = e.done ? null : { kind: "draw", progress: e.progress, needed: e.needed };
      if (e.done) c.drawn = true;
    },
    reload: function (s, e) {
      var c = who(s, e.actor);
      c.ready = e.done ? null : { kind: "reload", progress: e.progress, needed: e.needed };
      if (e.done) {
        var w = C[byId[e.actor]].weapon;
        if (isInt(w.magazine)) c.ammo = w.magazine;
        if (isInt(c.spares)) c.spares -= 1;
      }
    },
    aim: function (s, e) { var c = who(s, e.actor); who(s, e.target); c.aim = e.target; c.aimDm = e.aim; c.ready = null; },
    aim_lost: function (s, e) { var c = who(s, e.actor); if (c.aim === e.target) { c.aim = null; c.aimDm = 0; } },
    attack: function (s, e) {
      var a = who(s, e.actor), t = who(s, e.target);
      a.aim = null; a.aimDm = 0; a.ready = null;
      if (isInt(e.ammo_left)) a.ammo = e.ammo_left;
      ["STR", "DEX", "END"].forEach(function (k) { if (isInt(e.target_after[k])) t.chars[k] = e.target_after[k]; });
    },
    reaction: function (s, e) { who(s, e.actor); who(s, e.attacker); },
    initiative_change: function (s, e) {
      var c = who(s, e.actor);
      c.now = e.initiative - c.base;
      c.next = e.next_round_change;
      c.changes.push({ reason: String(e.reason), change: e.change, next: e.applies_to === "next_round" });
    },
    leadership: function (s, e) {
      var c = who(s, e.actor); c.ready = null;
      var p = pool(s, e.actor); p.bonus += e.bonuses; p.penalty += e.penalties;
    },
    bonus_granted: function (s, e) { who(s, e.target).bonus = e.actor; pool(s, e.actor).bonus -= 1; },
    penalty_imposed: function (s, e) { who(s, e.target).penalty = e.actor; pool(s, e.leader).penalty -= 1; },
    bonus_used: function (s, e) { who(s, e.actor).bonus = null; },
    penalty_used: function (s, e) { who(s, e.actor).penalty = null; },
    lapse: function (s, e) { who(s, e.actor); var p = pool(s, e.actor); if (e.kind === "bonus") p.bonus = 0; else p.penalty = 0; },
    incapacitated: function (s, e) { var c = who(s, e.actor); c.down = String(e.state); if (!e.stays_until_group_ends) c.out = true; },
    out: function (s, e) { who(s, e.actor).out = true; },
    end_turn: function (s, e) { who(s, e.actor); s.turn = null; },
    illegal_action: function (s, e) { who(s, e.actor); },
    end: function (s, e) { s.end = { round: e.round, winner: e.winner, reason: e.reason }; s.turn = null; }
  };

  function applyEvent(s, i) {
    if (bad[i]) return;
    var e = E[i];
    var fn = Object.prototype.hasOwnProperty.call(APPLY, e.type) ? APPLY[e.type] : null;
    if (!fn) {
      bad[i] = "event " + (i + 1) + " has an unknown type " + JSON.stringify(e.type);
      problemList.push({ index: i, message: bad[i] });
      return;
    }
    try {
      fn(s, e);
    } catch (err) {
      bad[i] = "event " + (i + 1) + " (" + e.type + ") could not be applied: " + err.message;
      problemList.push({ index: i, message: bad[i] });
    }
  }

  // Checkpoints (and, on the way, every event's round group and turn).
  var checkpoints = [];
  var group = new Array(N);      // index of the first event of the event's round group
  var turnOf = new Array(N);     // index of the turn event the event belongs to, or -1
  var firstRound = -1;
  (function () {
    var s = initialState();
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
      applyEvent(s, i);
    }
  })();
  var groupEnd = {};  // first index of a group -> last index
  for (var gi = 0; gi < N; gi++) groupEnd[group[gi]] = gi;

  var work = null, workIndex = -2;
  function stateAt(i) {
    if (i === workIndex) return work;
    if (work && i > workIndex && i - workIndex <= CHECKPOINT) {
      for (var f = workIndex + 1; f <= i; f++) applyEvent(work, f);
      workIndex = i;
      return work;
    }
    var k = Math.floor(i / CHECKPOINT);
    work = cloneState(checkpoints[k]);
    for (var j = k * CHECKPOINT; j <= i; j++) applyEvent(work, j);
    workIndex = i;
    return work;
  }

  // ------------------------------------------------------------------ page set-up
  document.title = "Replay: " + String(H.title || H.scenario || "battle");
  $("title").textContent = "Replay: " + String(H.title || H.scenario || "battle");
  var sub = [];
  if (H.scenario) sub.push("scenario " + H.scenario);
  if (H.seed !== null && H.seed !== undefined) sub.push("seed " + H.seed);
  sub.push(sideNames[0] + " vs " + sideNames[1]);
  sub.push(W + "\u00d7" + HGT + " squares of 1.5 m");
  if (isInt(H.max_rounds)) sub.push("at most " + plural(H.max_rounds, "round"));
  sub.push(plural(N, "event"));
  $("subtitle").textContent = sub.join(" \u00b7 ") + (H.description ? " \u2014 " + H.description : "");

  function showProblems() {
    var box = $("problems");
    if (!problemList.length) { box.hidden = true; return; }
    box.hidden = false;
    box.textContent = "";
    box.appendChild(el("strong", null, plural(problemList.length, "event") + " of " + N +
      " cannot be shown: unknown or malformed (skipped when the battle is replayed; the rest plays on):"));
    var ul = el("ul");
    problemList.slice(0, 50).forEach(function (p) { ul.appendChild(el("li", null, p.message)); });
    if (problemList.length > 50) ul.appendChild(el("li", null, "\u2026 and " + (problemList.length - 50) + " more"));
    box.appendChild(ul);
  }

  if (N === 0) {
    say("This replay holds no event: there is nothing to play.", true);
    return;
  }

  // Map canvas and terrain layer.
  var canvas = $("map"), ctx = canvas.getContext("2d");
  var wrap = $("map-wrap");
  $("app").hidden = false;  // laid out, so that the map can take the width it has
  var avail = Math.max(300, ($("stage").clientWidth || 800) - 4);
  // The whole map fits the width it has (squares of 2 to 34 px; wider maps scroll).
  var cell = Math.min(avail / W, 620 / HGT, 34);
  cell = cell >= 8 ? Math.floor(cell) : Math.max(2, Math.floor(cell * 4) / 4);
  canvas.width = Math.ceil(W * cell);
  canvas.height = Math.ceil(HGT * cell);
  var terrainLayer = document.createElement("canvas");
  terrainLayer.width = canvas.width;
  terrainLayer.height = canvas.height;
  (function drawTerrain() {
    var t = terrainLayer.getContext("2d");
    for (var y = 0; y < HGT; y++) {
      var row = H.map.terrain[y], x = 0;
      while (x < W) {
        var ch = row[x], x1 = x;
        while (x1 < W && row[x1] === ch) x1++;
        t.fillStyle = TERRAIN[ch] || TERRAIN["."];
        t.fillRect(x * cell, y * cell, (x1 - x) * cell, cell);
        x = x1;
      }
    }
    if (cell >= 8) {
      t.strokeStyle = "rgba(0, 0, 0, 0.07)";
      t.lineWidth = 1;
      t.beginPath();
      for (var gx = 0; gx <= W; gx++) { t.moveTo(gx * cell + 0.5, 0); t.lineTo(gx * cell + 0.5, HGT * cell); }
      for (var gy = 0; gy <= HGT; gy++) { t.moveTo(0, gy * cell + 0.5); t.lineTo(W * cell, gy * cell + 0.5); }
      t.stroke();
      // Low cover: a darker rim (a low wall); difficult ground: dots.
      for (var yy = 0; yy < HGT; yy++) {
        for (var xx = 0; xx < W; xx++) {
          var c2 = H.map.terrain[yy][xx];
          if (c2 === "c") {
            t.strokeStyle = "rgb(88, 110, 66)";
            t.lineWidth = Math.max(1, cell / 8);
            t.strokeRect(xx * cell + t.lineWidth / 2, yy * cell + t.lineWidth / 2, cell - t.lineWidth, cell - t.lineWidth);
          } else if (c2 === "~") {
            t.fillStyle = "rgb(142, 116, 78)";
            var step = Math.max(3, Math.floor(cell / 4));
            for (var dy = step / 2; dy < cell; dy += step) {
              for (var dx = step / 2; dx < cell; dx += step) t.fillRect(xx * cell + dx, yy * cell + dy, 1.5, 1.5);
            }
          }
        }
      }
    }
  })();

  function centre(p) { return [p[0] * cell + cell / 2, p[1] * cell + cell / 2]; }
  var radius = Math.max(3.5, cell * 0.36);

  // Speed selector.
  var speedSel = $("speed");
  SPEEDS.forEach(function (v) {
    var o = el("option", null, v + " events/s");
    o.value = String(v);
    if (v === DEFAULT_SPEED) o.selected = true;
    speedSel.appendChild(o);
  });

  // Roster cards (built once, updated on every frame).
  var cards = [];
  (function buildRoster() {
    var roster = $("roster");
    [0, 1].forEach(function (side) {
      roster.appendChild(el("div", "side-title s" + side, "Side " + sideNames[side]));
      C.forEach(function (c, k) {
        if (c.side !== side) return;
        var card = el("div", "card");
        var head = el("div", "head");
        var chip = el("span", "chip s" + side, glyph[k]);
        head.appendChild(chip);
        head.appendChild(el("span", "name", c.name));
        head.appendChild(el("span", "cid", c.id));
        var state = el("span", "state");
        head.appendChild(state);
        card.appendChild(head);
        var bars = el("div", "bars");
        var fills = {}, nums = {};
        ["STR", "DEX", "END"].forEach(function (key) {
          bars.appendChild(el("span", null, key));
          var bar = el("div", "bar"), fill = el("span");
          bar.appendChild(fill);
          bars.appendChild(bar);
          var num = el("span");
          bars.appendChild(num);
          fills[key] = fill; nums[key] = num;
        });
        card.appendChild(bars);
        var weapon = el("div", "line"), aim = el("div", "line"), held = el("div", "held"), extra = el("div", "line");
        card.appendChild(weapon); card.appendChild(aim); card.appendChild(held); card.appendChild(extra);
        roster.appendChild(card);
        cards[k] = { card: card, chip: chip, state: state, fills: fills, nums: nums, weapon: weapon, aim: aim, held: held, extra: extra };
      });
    });
  })();

  // ------------------------------------------------------------------ rendering
  var cur = firstRound >= 0 ? firstRound : 0;
  var pinned = null, hovered = null;
  var shotGeom = [];
  var LOG_ROWS = 15, LOG_BEFORE = 8;
  var logRows = [];
  var lastInitKey = "";

  function stateWord(c) {
    if (c.down) return c.down + (c.out ? "" : " (still in play)");
    if (c.out) return "out";
    return STANCE_WORD[c.stance] || c.stance;
  }

  function weaponText(k, c) {
    var w = C[k].weapon, text = String(w.name) + (w.damage ? " " + w.damage : "");
    if (w.range_m === null || w.range_m === undefined) return text + " (melee)";
    text += " \u00b7 ammo " + (c.ammo === null ? "?" : c.ammo) + "/" + w.magazine;
    if (c.spares !== null) text += " + " + plural(c.spares, "spare magazine");
    if (!c.drawn) text += " \u00b7 not drawn";
    if (c.ready) text += " \u00b7 " + c.ready.kind + " " + c.ready.progress + "/" + c.ready.needed;
    return text;
  }

  function drawArrow(x1, y1, x2, y2, size, back) {
    var dx = x2 - x1, dy = y2 - y1, len = Math.sqrt(dx * dx + dy * dy);
    if (len <= back + size) return;
    var ux = dx / len, uy = dy / len;
    var tx = x2 - ux * back, ty = y2 - uy * back;
    var bx = tx - ux * size, by = ty - uy * size, half = size * 0.55;
    ctx.beginPath();
    ctx.moveTo(tx, ty);
    ctx.lineTo(bx - uy * half, by + ux * half);
    ctx.lineTo(bx + uy * half, by - ux * half);
    ctx.closePath();
    ctx.fill();
  }

  function drawMap(s, i) {
    ctx.setLineDash([]);
    ctx.globalAlpha = 1;
    ctx.drawImage(terrainLayer, 0, 0);
    var g = group[i], t = turnOf[i];
    var lw = Math.max(1.5, cell * 0.12);
    shotGeom = [];
    // Movement trails of this round.
    for (var j = g; j <= i; j++) {
      if (bad[j] || E[j].type !== "move") continue;
      var e = E[j], side = C[byId[e.actor]].side, a = centre(e.from), b = centre(e.to);
      ctx.strokeStyle = SIDE_COLOURS[side];
      ctx.fillStyle = SIDE_COLOURS[side];
      ctx.globalAlpha = j === i ? 0.95 : 0.4;
      ctx.lineWidth = j === i ? lw * 1.6 : lw;
      ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke();
      ctx.beginPath(); ctx.arc(a[0], a[1], lw, 0, 2 * Math.PI); ctx.fill();
      if (j === i) drawArrow(a[0], a[1], b[0], b[1], Math.max(5, cell * 0.35), radius);
    }
    ctx.globalAlpha = 1;
    // Leadership links: who holds a bonus or a penalty, from whom.
    ctx.setLineDash([Math.max(3, cell * 0.25), Math.max(3, cell * 0.2)]);
    s.cs.forEach(function (c, k) {
      [["bonus", "rgb(26, 140, 60)"], ["penalty", "rgb(170, 30, 30)"]].forEach(function (kind) {
        var from = c[kind[0]];
        if (!from || byId[from] === undefined) return;
        var a = centre(s.cs[byId[from]].pos), b = centre(c.pos);
        ctx.strokeStyle = kind[1];
        ctx.lineWidth = lw;
        ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke();
      });
    });
    var ce = bad[i] ? null : E[i];
    if (ce && (ce.type === "bonus_granted" || ce.type === "penalty_imposed")) {
      var a1 = centre(s.cs[byId[ce.actor]].pos), b1 = centre(s.cs[byId[ce.target]].pos);
      ctx.setLineDash([]);
      ctx.strokeStyle = ce.type === "bonus_granted" ? "rgb(26, 140, 60)" : "rgb(170, 30, 30)";
      ctx.fillStyle = ctx.strokeStyle;
      ctx.lineWidth = lw * 1.8;
      ctx.beginPath(); ctx.moveTo(a1[0], a1[1]); ctx.lineTo(b1[0], b1[1]); ctx.stroke();
      drawArrow(a1[0], a1[1], b1[0], b1[1], Math.max(6, cell * 0.4), radius + 2);
    }
    // Aim lines.
    ctx.setLineDash([2, Math.max(3, cell * 0.18)]);
    s.cs.forEach(function (c, k) {
      if (!c.aim || c.out || byId[c.aim] === undefined) return;
      var a = centre(c.pos), b = centre(s.cs[byId[c.aim]].pos);
      ctx.strokeStyle = SIDE_COLOURS[C[k].side];
      ctx.lineWidth = Math.max(1, lw * 0.7);
      ctx.globalAlpha = 0.8;
      ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke();
    });
    ctx.globalAlpha = 1;
    // Shots of this round: faint, this turn's stronger, the current one strongest.
    for (var q = g; q <= i; q++) {
      if (bad[q] || E[q].type !== "attack") continue;
      var at = E[q], p1 = centre(at.actor_pos), p2 = centre(at.target_pos);
      var now = q === i, thisTurn = t >= 0 && q >= t;
      ctx.globalAlpha = now ? 1 : thisTurn ? 0.75 : 0.3;
      ctx.lineWidth = now ? lw * 2 : lw * 1.2;
      ctx.strokeStyle = at.hit ? "rgb(235, 20, 20)" : "rgb(105, 105, 105)";
      ctx.fillStyle = ctx.strokeStyle;
      ctx.setLineDash(at.hit ? [] : [Math.max(4, cell * 0.3), Math.max(3, cell * 0.2)]);
      ctx.beginPath(); ctx.moveTo(p1[0], p1[1]); ctx.lineTo(p2[0], p2[1]); ctx.stroke();
      ctx.setLineDash([]);
      drawArrow(p1[0], p1[1], p2[0], p2[1], Math.max(6, cell * 0.4), radius + 1);
      if (now || thisTurn) {
        ctx.font = "bold " + Math.max(10, Math.round(cell * 0.5)) + "px sans-serif";
        ctx.textAlign = "center";
        ctx.textBaseline = "bottom";
        var label = at.hit ? "\u2212" + at.damage : "miss";
        ctx.lineWidth = 3; ctx.strokeStyle = "rgba(255, 255, 255, 0.85)";
        ctx.strokeText(label, p2[0], p2[1] - radius - 3);
        ctx.fillText(label, p2[0], p2[1] - radius - 3);
      }
      shotGeom.push({ index: q, x1: p1[0], y1: p1[1], x2: p2[0], y2: p2[1] });
    }
    ctx.globalAlpha = 1;
    ctx.setLineDash([]);
    // Combatants.
    var focusTarget = ce && ce.type === "attack" ? ce.target : null;
    s.cs.forEach(function (c, k) {
      var p = centre(c.pos), x = p[0], y = p[1], r = radius;
      var down = c.down || c.out;
      var rx = r, ry = r;
      if (down || c.stance === "prone") { ry = Math.max(2, r * 0.6); }
      else if (c.stance === "crouch") { rx = ry = Math.max(3, r * 0.82); }
      if (s.turn === C[k].id) {
        ctx.strokeStyle = "rgb(255, 196, 0)";
        ctx.lineWidth = Math.max(2, cell * 0.14);
        ctx.beginPath(); ctx.ellipse(x, y, rx + 3, ry + 3, 0, 0, 2 * Math.PI); ctx.stroke();
      }
      if (focusTarget === C[k].id) {
        ctx.strokeStyle = "rgb(235, 20, 20)";
        ctx.lineWidth = 2;
        ctx.beginPath(); ctx.ellipse(x, y, rx + 5, ry + 5, 0, 0, 2 * Math.PI); ctx.stroke();
      }
      ctx.fillStyle = down ? "rgb(140, 140, 140)" : SIDE_COLOURS[C[k].side];
      ctx.strokeStyle = "rgb(25, 25, 30)";
      ctx.lineWidth = 1;
      ctx.beginPath(); ctx.ellipse(x, y, rx, ry, 0, 0, 2 * Math.PI); ctx.fill();
      if (cell >= 8) ctx.stroke();
      if (down) {
        ctx.beginPath();
        ctx.moveTo(x - rx * 0.55, y - ry * 0.55); ctx.lineTo(x + rx * 0.55, y + ry * 0.55);
        ctx.moveTo(x - rx * 0.55, y + ry * 0.55); ctx.lineTo(x + rx * 0.55, y - ry * 0.55);
        ctx.stroke();
      } else if (cell >= 14) {
        ctx.fillStyle = "#fff";
        ctx.font = "bold " + Math.round(r * 1.2) + "px sans-serif";
        ctx.textAlign = "center";
        ctx.textBaseline = "middle";
        ctx.fillText(glyph[k], x, y + 0.5);
      }
      if (c.bonus || c.penalty) {
        ctx.font = "bold " + Math.max(9, Math.round(cell * 0.42)) + "px sans-serif";
        ctx.textAlign = "left";
        ctx.textBaseline = "top";
        ctx.fillStyle = c.bonus ? "rgb(26, 140, 60)" : "rgb(170, 30, 30)";
        ctx.fillText(c.bonus && c.penalty ? "\u00b1" : c.bonus ? "+1" : "\u22121", x + rx * 0.6, y + ry * 0.3);
      }
      if (c.aim && c.aimDm && !c.out) {
        ctx.font = Math.max(9, Math.round(cell * 0.38)) + "px sans-serif";
        ctx.textAlign = "right";
        ctx.textBaseline = "top";
        ctx.fillStyle = "rgb(20, 20, 20)";
        ctx.fillText("aim +" + c.aimDm, x - rx * 0.5, y + ry * 0.5);
      }
      if (cell >= 10) {  // STR+DEX+END over the starting values
        var m = C[k].characteristics, top = m.STR + m.DEX + m.END;
        var frac = top > 0 ? Math.max(0, Math.min(1, (c.chars.STR + c.chars.DEX + c.chars.END) / top)) : 0;
        var bw = 2 * r, bh = Math.max(2, Math.round(r / 4)), bx = x - r, by = y - ry - bh - 2;
        ctx.fillStyle = "rgb(40, 40, 40)";
        ctx.fillRect(bx, by, bw, bh);
        ctx.fillStyle = frac > 0.6 ? "rgb(60, 185, 60)" : frac > 0.3 ? "rgb(230, 185, 40)" : "rgb(225, 70, 40)";
        if (frac > 0) ctx.fillRect(bx, by, Math.max(1, bw * frac), bh);
      }
    });
  }

  function initOrder(s) {
    var order = C.map(function (c, k) { return k; });
    order.sort(function (a, b) {
      var ca = s.cs[a], cb = s.cs[b];
      if (ca.out !== cb.out) return ca.out ? 1 : -1;
      var ia = ca.base + ca.now, ib = cb.base + cb.now;
      if (ia !== ib) return ib - ia;
      if (ca.chars.DEX !== cb.chars.DEX) return cb.chars.DEX - ca.chars.DEX;
      return a - b;
    });
    return order;
  }

  function renderInitiative(s, i) {
    var ce = bad[i] ? null : E[i];
    var touched = ce && (ce.type === "haste" || ce.type === "initiative_change" ||
                         ce.type === "initiative" || ce.type === "tactics") ? ce : null;
    var order = initOrder(s);
    var key = JSON.stringify([order, s.round, s.turn, i >= 0 && touched ? i : -1,
      order.map(function (k) { var c = s.cs[k]; return [c.base + c.now, c.start, c.hasty, c.begun, c.out, c.next, c.changes.length]; })]);
    if (key === lastInitKey) return;
    lastInitKey = key;
    $("init-round").textContent = s.round ? "\u2014 round " + s.round : "\u2014 rolls before round 1";
    var list = $("init-list");
    list.textContent = "";
    order.forEach(function (k) {
      var c = s.cs[k], id = C[k].id;
      var li = el("li");
      if (c.out) li.className = "out";
      else if (s.turn === id) li.className = "acting";
      else if (c.begun) li.className = "done";
      if (touched && (touched.actor === id || (touched.type === "tactics" && sideNames.indexOf(touched.unit) === C[k].side))) {
        li.className += " changed";
      }
      li.appendChild(el("span", "chip s" + C[k].side + (c.down || c.out ? " down" : ""), glyph[k]));
      li.appendChild(el("span", null, id));
      if (c.hasty) li.appendChild(el("span", "badge haste", "haste +2, DM \u22121"));
      c.changes.forEach(function (ch) {
        li.appendChild(el("span", "badge react", ch.reason + " " + signed(ch.change) + (ch.next ? " next round" : "")));
      });
      if (c.next && !c.changes.some(function (ch) { return ch.next; })) li.appendChild(el("span", "badge next", "next round " + signed(c.next)));
      var now = c.base + c.now;
      li.appendChild(el("span", "val", c.start !== now && s.round ? c.start + " \u2192 " + now : String(now)));
      list.appendChild(li);
    });
  }

  function renderRoster(s) {
    s.cs.forEach(function (c, k) {
      var r = cards[k], base = C[k].characteristics;
      setClass(r.card, "card" + (c.down || c.out ? " down" : "") + (s.turn === C[k].id ? " acting" : ""));
      setClass(r.chip, "chip s" + C[k].side + (c.down || c.out ? " down" : ""));
      setText(r.state, stateWord(c));
      ["STR", "DEX", "END"].forEach(function (key) {
        var max = base[key] || 1, v = c.chars[key], frac = Math.max(0, Math.min(1, v / max));
        var width = (100 * frac).toFixed(1) + "%";
        if (r.fills[key].__width !== width) { r.fills[key].style.width = width; r.fills[key].__width = width; }
        setClass(r.fills[key], frac > 0.6 ? "" : frac > 0.3 ? "mid" : "low");
        setText(r.nums[key], v + "/" + base[key]);
      });
      setText(r.weapon, weaponText(k, c) + " \u00b7 armour " + C[k].armour.name + " (" + C[k].armour.protection + ")");
      setText(r.aim, c.aim ? "aiming at " + c.aim + " (" + signed(c.aimDm) + ")" : "");
      var held = [];
      if (c.bonus) held.push("holds a leadership bonus +1 (from " + c.bonus + ")");
      if (c.penalty) held.push("holds a leadership penalty \u22121 (imposed by " + c.penalty + ")");
      setText(r.held, held.join("; "));
      setClass(r.held, "held " + (c.penalty ? "penalty" : c.bonus ? "bonus" : ""));
      var p = s.pools[C[k].id], extra = [];
      if (p && p.bonus > 0) extra.push("orders: " + plural(p.bonus, "bonus", "bonuses") + " to hand out");
      if (p && p.penalty > 0) extra.push("failed orders: " + sideNames[1 - C[k].side] + " may impose " + plural(p.penalty, "penalty", "penalties"));
      setText(r.extra, extra.join("; "));
    });
  }

  function logClass(idx, i) {
    var base = bad[idx] ? "bad" : E[idx].type === "attack" ? "attack" + (E[idx].hit ? " hit" : "") : "";
    return base + (idx === i ? " current" : idx > i ? " future" : "");
  }

  // The round's events around the current one: a fixed window of single-line rows, so that
  // stepping rewrites a few lines and never re-lays or scrolls a long list.
  function renderLog(i, s) {
    var list = $("log-list");
    if (!logRows.length) {
      for (var r = 0; r < LOG_ROWS; r++) { var row = el("li"); logRows.push(row); list.appendChild(row); }
    }
    var g = group[i], end = groupEnd[g];
    var start = Math.max(g, Math.min(i - LOG_BEFORE, end - LOG_ROWS + 1));
    setText($("log-title"), "Events of " + (s.round ? "round " + s.round : "the Initiative rolls") +
      " (" + (i - g + 1) + " of " + (end - g + 1) + ")");
    for (var k = 0; k < LOG_ROWS; k++) {
      var idx = start + k, li = logRows[k];
      if (idx > end) { if (!li.hidden) li.hidden = true; continue; }
      if (li.hidden) li.hidden = false;
      var line = (idx + 1) + ". " + narration(idx);
      if (li.__text !== line) { li.textContent = line; li.__text = line; li.title = line; }
      li.dataset.index = String(idx);
      setClass(li, logClass(idx, i));
    }
  }

  function addRow(table, name, value) {
    var tr = el("tr");
    tr.appendChild(el("td", null, name));
    tr.appendChild(el("td", "v", value));
    table.appendChild(tr);
  }

  function damageModifier(dice) {
    var m = /([+-]\d+)\s*$/.exec(String(dice || ""));
    return m ? parseInt(m[1], 10) : 0;
  }

  function renderDetails(i) {
    var box = $("details");
    var show = hovered !== null ? hovered : pinned;
    if (show === null) {
      if (!bad[i] && E[i].type === "attack") show = i;
      else {
        var t = turnOf[i];
        for (var j = i; t >= 0 && j >= t; j--) if (!bad[j] && E[j].type === "attack") { show = j; break; }
      }
    }
    var key = show === null ? "none" : show + (show === pinned ? "p" : "");
    if (box.__key === key) return;
    box.__key = key;
    box.textContent = "";
    if (show === null) {
      box.appendChild(el("span", "hint", "Hover or click an attack (a shot line on the map, or an attack in the list of events) to see its dice, every DM by name, the Effect and the damage."));
      return;
    }
    var e = E[show];
    var head = el("div");
    head.appendChild(el("strong", null, "Attack (event " + (show + 1) + (show === pinned ? ", pinned: click the map to unpin" : "") + "): "));
    head.appendChild(el("span", null, cname(e.actor) + " \u2192 " + cname(e.target) + " with " + e.weapon +
      (e.melee ? ", in melee" : ", range " + Number(e.range_m).toFixed(1) + " m") +
      (e.reaction && e.reaction !== "none" ? ", target reacts: " + e.reaction : "")));
    box.appendChild(head);
    var table = el("table");
    table.className = "dms";
    addRow(table, "roll 2D", "[" + e.roll.join(", ") + "] = " + sum(e.roll));
    Object.keys(e.dms).forEach(function (name) { addRow(table, "DM " + (DM_LABEL[name] || name), signed(e.dms[name])); });
    addRow(table, "total", String(e.total));
    addRow(table, "Effect (total \u2212 " + TARGET + ")", signed(e.effect));
    var cols = el("div", "cols");
    var left = el("div");
    left.appendChild(table);
    left.appendChild(el("div", "res " + (e.hit ? "hit" : "miss"), e.hit ? "HIT (Effect \u2265 0)" : "MISS (Effect below 0)"));
    cols.appendChild(left);
    box.appendChild(cols);
    if (e.hit && Array.isArray(e.damage_roll)) {
      var dt = el("table");
      dt.className = "damage";
      var mod = damageModifier(e.damage_dice), raw = sum(e.damage_roll);
      addRow(dt, "damage " + e.damage_dice, "[" + e.damage_roll.join(", ") + "] = " + raw);
      if (mod) addRow(dt, "weapon modifier", signed(mod));
      addRow(dt, "Effect", signed(e.effect));
      var armour = C[byId[e.target]].armour;
      addRow(dt, "armour" + (armour && armour.name ? " (" + armour.name + ")" : ""), signed(-e.protection));
      var before = raw + mod + e.effect - e.protection;
      addRow(dt, "damage", before < 0 ? "0 (" + before + ", no damage)" : String(e.damage));
      var right = el("div");
      right.appendChild(dt);
      var after = e.target_after;
      right.appendChild(el("div", null, e.target + " now STR " + after.STR + " DEX " + after.DEX + " END " + after.END));
      cols.appendChild(right);
    }
  }

  function renderBanner(s) {
    var banner = $("winner");
    if (!s.end) { banner.hidden = true; return; }
    if (!banner.hidden) return;
    banner.hidden = false;
    banner.textContent = "";
    var rounds = isInt(s.end.round) ? plural(s.end.round, "round") : "the battle";
    if (s.end.winner !== null && s.end.winner !== undefined) {
      banner.appendChild(document.createTextNode("Victory: " + s.end.winner + " wins"));
      banner.appendChild(el("small", null, "after " + rounds));
    } else if (s.end.reason === "max_rounds") {
      banner.appendChild(document.createTextNode("No winner"));
      banner.appendChild(el("small", null, "stopped after " + rounds + " (max_rounds reached)"));
    } else {
      banner.appendChild(document.createTextNode("Draw"));
      banner.appendChild(el("small", null, "no one left able to fight after " + rounds));
    }
  }

  function render(i) {
    var t0 = performance.now();
    var s = stateAt(i);
    var t1 = performance.now();
    drawMap(s, i);
    var t2 = performance.now();
    renderInitiative(s, i);
    renderRoster(s);
    var t3 = performance.now();
    renderLog(i, s);
    renderDetails(i);
    renderBanner(s);
    setText($("round-label"), s.round ? "Round " + s.round + (isInt(H.max_rounds) ? " / " + H.max_rounds : "") : "Before round 1");
    var e = bad[i] ? null : E[i];
    var phase = s.end ? "battle over" : s.turn ? "turn of " + cname(s.turn) :
      e && e.type === "haste" ? "haste declarations" : s.round ? "" : "Initiative and Tactics rolls";
    setText($("phase-label"), phase);
    setText($("event-counter"), "event " + (i + 1) + " / " + N);
    var nar = $("narration");
    setText(nar, bad[i] ? "Cannot show this event: " + bad[i] + " (as logged: " + narration(i) + ")" : narration(i));
    setClass(nar, bad[i] ? "problem" : "");
    if (slider.value !== String(i)) slider.value = String(i);
    var t4 = performance.now();
    stats.renderMs.push(t4 - t0);
    [["state", t1 - t0], ["map", t2 - t1], ["panels", t3 - t2], ["log", t4 - t3]].forEach(function (p) {
      var part = stats.parts[p[0]] || (stats.parts[p[0]] = { sum: 0, max: 0, n: 0 });
      part.sum += p[1]; part.n += 1; if (p[1] > part.max) part.max = p[1];
    });
    if (stats.renderMs.length > 20000) stats.renderMs.shift();
  }

  // ------------------------------------------------------------------ controls
  var slider = $("slider");
  slider.max = String(N - 1);
  var playBtn = $("btn-play");
  var playing = false, raf = 0, lastT = 0, acc = 0;
  var stats = { renderMs: [], frameMs: [], parts: {} };

  function go(i) {
    i = Math.max(0, Math.min(N - 1, i | 0));
    if (i !== cur) { pinned = null; hovered = null; }
    cur = i;
    render(cur);
  }
  function speed() { return parseFloat(speedSel.value) || DEFAULT_SPEED; }
  function tick(now) {
    if (!playing) return;
    var dt = now - lastT;
    lastT = now;
    stats.frameMs.push(dt);
    if (stats.frameMs.length > 20000) stats.frameMs.shift();
    acc += Math.min(dt, 250) * speed() / 1000;
    var steps = Math.floor(acc);
    if (steps > 0) {
      acc -= steps;
      go(cur + steps);
    }
    if (cur >= N - 1) { pause(); return; }
    raf = requestAnimationFrame(tick);
  }
  function play() {
    if (playing) return;
    if (cur >= N - 1) go(0);
    playing = true;
    playBtn.textContent = "Pause";
    acc = 0;
    lastT = performance.now();
    raf = requestAnimationFrame(tick);
  }
  function pause() {
    playing = false;
    cancelAnimationFrame(raf);
    playBtn.textContent = cur >= N - 1 ? "Replay" : "Play";
  }
  function toggle() { if (playing) pause(); else play(); }
  function step(d) { pause(); go(cur + d); }
  function findFrom(start, d, test) {
    for (var j = start; j >= 0 && j < N; j += d) if (!bad[j] && test(E[j])) return j;
    return d > 0 ? N - 1 : 0;
  }
  function jumpTurn(d) {
    pause();
    go(findFrom(cur + d, d, function (e) { return e.type === "turn" || e.type === "round" || e.type === "end"; }));
  }
  function jumpRound(d) {
    pause();
    go(findFrom(cur + d, d, function (e) { return e.type === "round" || e.type === "end"; }));
  }
  function changeSpeed(d) {
    var k = SPEEDS.indexOf(speed());
    k = Math.max(0, Math.min(SPEEDS.length - 1, (k < 0 ? SPEEDS.indexOf(DEFAULT_SPEED) : k) + d));
    speedSel.value = String(SPEEDS[k]);
  }

  playBtn.addEventListener("click", toggle);
  $("btn-back").addEventListener("click", function () { step(-1); });
  $("btn-fwd").addEventListener("click", function () { step(1); });
  $("btn-start").addEventListener("click", function () { pause(); go(0); });
  $("btn-end").addEventListener("click", function () { pause(); go(N - 1); });
  slider.addEventListener("input", function () { pause(); go(parseInt(slider.value, 10)); });
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var tag = ev.target && ev.target.tagName;
    if (tag === "SELECT" || tag === "TEXTAREA") return;
    var k = ev.key, handled = true;
    if (k === " " || k === "Spacebar" || k === "k") toggle();
    else if (k === "ArrowRight") { if (ev.shiftKey) jumpTurn(1); else step(1); }
    else if (k === "ArrowLeft") { if (ev.shiftKey) jumpTurn(-1); else step(-1); }
    else if (k === "PageDown") jumpRound(1);
    else if (k === "PageUp") jumpRound(-1);
    else if (k === "Home") { pause(); go(0); }
    else if (k === "End") { pause(); go(N - 1); }
    else if (k === "+" || k === "=") changeSpeed(1);
    else if (k === "-" || k === "_") changeSpeed(-1);
    else handled = false;
    if (handled) ev.preventDefault();
  });
  document.addEventListener("keyup", function (ev) {
    // Space on a focused button would click it as well: the keydown above already acted.
    if ((ev.key === " " || ev.key === "Spacebar") && ev.target && ev.target.tagName === "BUTTON") ev.preventDefault();
  });

  // Log list: click to jump, hover an attack to see its breakdown.
  var logList = $("log-list");
  logList.addEventListener("click", function (ev) {
    var li = ev.target.closest ? ev.target.closest("li") : null;
    if (!li || !li.dataset.index) return;
    var j = parseInt(li.dataset.index, 10);
    pause();
    go(j);
    if (!bad[j] && E[j].type === "attack") { pinned = j; renderDetails(cur); }
  });
  logList.addEventListener("mouseover", function (ev) {
    var li = ev.target.closest ? ev.target.closest("li") : null;
    var j = li && li.dataset.index ? parseInt(li.dataset.index, 10) : null;
    var next = j !== null && !bad[j] && E[j].type === "attack" ? j : null;
    if (next !== hovered) { hovered = next; renderDetails(cur); }
  });
  logList.addEventListener("mouseleave", function () { if (hovered !== null) { hovered = null; renderDetails(cur); } });

  // Map: hover a combatant for its card, hover or click a shot for its breakdown.
  var tooltip = $("tooltip");
  function mapPoint(ev) {
    var rect = canvas.getBoundingClientRect();
    return [(ev.clientX - rect.left) * canvas.width / rect.width, (ev.clientY - rect.top) * canvas.height / rect.height];
  }
  function shotAt(x, y) {
    var best = null, bestD = Math.max(5, cell * 0.3);
    shotGeom.forEach(function (g) {
      var dx = g.x2 - g.x1, dy = g.y2 - g.y1, len2 = dx * dx + dy * dy;
      var t = len2 ? Math.max(0, Math.min(1, ((x - g.x1) * dx + (y - g.y1) * dy) / len2)) : 0;
      var px = g.x1 + t * dx - x, py = g.y1 + t * dy - y, d = Math.sqrt(px * px + py * py);
      if (d <= bestD) { bestD = d; best = g.index; }
    });
    return best;
  }
  function combatantAt(s, x, y) {
    var found = null;
    s.cs.forEach(function (c, k) {
      var p = centre(c.pos);
      if (Math.abs(p[0] - x) <= Math.max(radius, cell / 2) && Math.abs(p[1] - y) <= Math.max(radius, cell / 2)) found = k;
    });
    return found;
  }
  canvas.addEventListener("mousemove", function (ev) {
    var pt = mapPoint(ev), s = stateAt(cur);
    var k = combatantAt(s, pt[0], pt[1]);
    var shot = k === null ? shotAt(pt[0], pt[1]) : null;
    if (k !== null) {
      var c = s.cs[k], m = C[k].characteristics;
      tooltip.textContent = glyph[k] + "  " + C[k].id + " \u2014 " + C[k].name + " (" + sideNames[C[k].side] + ")\n" +
        "STR " + c.chars.STR + "/" + m.STR + "  DEX " + c.chars.DEX + "/" + m.DEX + "  END " + c.chars.END + "/" + m.END + "\n" +
        stateWord(c) + " at (" + c.pos[0] + ", " + c.pos[1] + ")\n" + weaponText(k, c) +
        (c.aim ? "\naiming at " + c.aim + " (" + signed(c.aimDm) + ")" : "") +
        (c.bonus ? "\nholds a leadership bonus (+1)" : "") + (c.penalty ? "\nholds a leadership penalty (\u22121)" : "");
    } else if (shot !== null) {
      tooltip.textContent = narration(shot) + "\n(click to pin its breakdown)";
    }
    tooltip.hidden = k === null && shot === null;
    if (!tooltip.hidden) {
      var wr = wrap.getBoundingClientRect();
      tooltip.style.left = Math.min(ev.clientX - wr.left + wrap.scrollLeft + 14, wrap.scrollLeft + wr.width - 330) + "px";
      tooltip.style.top = (ev.clientY - wr.top + wrap.scrollTop + 14) + "px";
    }
    if (shot !== hovered) { hovered = shot; renderDetails(cur); }
  });
  canvas.addEventListener("mouseleave", function () {
    tooltip.hidden = true;
    if (hovered !== null) { hovered = null; renderDetails(cur); }
  });
  canvas.addEventListener("click", function (ev) {
    var pt = mapPoint(ev);
    pinned = shotAt(pt[0], pt[1]);
    hovered = null;
    renderDetails(cur);
  });

  window.replayViewer = {
    events: N,
    go: function (i) { pause(); go(i); },
    play: play,
    pause: pause,
    index: function () { return cur; },
    playing: function () { return playing; },
    setSpeed: function (v) { speedSel.value = String(v); return speed(); },
    stats: function () { return { renderMs: stats.renderMs.slice(), frameMs: stats.frameMs.slice(), parts: JSON.parse(JSON.stringify(stats.parts)) }; },
    resetStats: function () { stats.renderMs = []; stats.frameMs = []; stats.parts = {}; },
    problems: function () { return problemList.map(function (p) { return p.message; }); }
  };

  $("app").hidden = false;
  showProblems();
  render(cur);
  say("", false);
})();
