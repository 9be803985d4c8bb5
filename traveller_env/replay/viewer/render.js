/* Traveller Tactics replay viewer, part 2 of 3: drawing the state into the page.
 *
 * Every string of the replay is shown with textContent, createElement or canvas fillText
 * only: never parsed as markup. TravellerReplay.render holds the status line (say), the title
 * and the list of problems, and create(replay), which lays out the map canvas and the roster
 * once and returns a renderer: render(i, view) draws the state after event i (map, initiative
 * track, roster, the round's events, the attack breakdown, the winner, the narration) and
 * times itself (stats); the hit tests (mapPoint, combatantAt, shotAt) and tooltip texts serve
 * controls.js. `view` is {pinned, hovered}: the attack whose breakdown is pinned or hovered.
 */
(function (root) {
  "use strict";

  var S = root.TravellerReplay.state;
  var isInt = S.isInt;
  var SIDE_COLOURS = ["rgb(40, 90, 220)", "rgb(215, 45, 35)"];
  var TERRAIN = { ".": "rgb(226, 219, 198)", "~": "rgb(184, 158, 116)",
                  "c": "rgb(126, 150, 100)", "#": "rgb(58, 58, 66)" };
  var DM_LABEL = { leadership_bonus: "leadership bonus", leadership_penalty: "leadership penalty" };
  var STANCE_WORD = { stand: "standing", crouch: "crouched", prone: "prone" };
  var TARGET = 8;
  var LOG_ROWS = 15, LOG_BEFORE = 8;

  function $(id) { return document.getElementById(id); }

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
  function plural(n, word, many) { return n + " " + (n === 1 ? word : (many || word + "s")); }
  function sum(list) { var t = 0; for (var k = 0; k < list.length; k++) t += list[k]; return t; }

  /** Show `message` in the status line (in red, as a stop, when fatal). */
  function say(message, fatal) {
    var statusEl = $("status");
    statusEl.textContent = message;
    statusEl.className = fatal ? "status fatal" : "status";
  }

  /** The page's title and the line under it (scenario, seed, sides, map, rounds, events). */
  function showTitle(replay) {
    var H = replay.header, sideNames = replay.sideNames;
    document.title = "Replay: " + String(H.title || H.scenario || "battle");
    $("title").textContent = "Replay: " + String(H.title || H.scenario || "battle");
    var sub = [];
    if (H.scenario) sub.push("scenario " + H.scenario);
    if (H.seed !== null && H.seed !== undefined) sub.push("seed " + H.seed);
    sub.push(sideNames[0] + " vs " + sideNames[1]);
    sub.push(H.map.width + "\u00d7" + H.map.height + " squares of 1.5 m");
    if (isInt(H.max_rounds)) sub.push("at most " + plural(H.max_rounds, "round"));
    sub.push(plural(replay.count, "event"));
    $("subtitle").textContent = sub.join(" \u00b7 ") + (H.description ? " \u2014 " + H.description : "");
  }

  /** The box listing the events that cannot be shown (hidden when there is none). */
  function showProblems(replay) {
    var box = $("problems"), problemList = replay.problems;
    if (!problemList.length) { box.hidden = true; return; }
    box.hidden = false;
    box.textContent = "";
    box.appendChild(el("strong", null, plural(problemList.length, "event") + " of " + replay.count +
      " cannot be shown: unknown or malformed (skipped when the battle is replayed; the rest plays on):"));
    var ul = el("ul");
    problemList.slice(0, 50).forEach(function (p) { ul.appendChild(el("li", null, p.message)); });
    if (problemList.length > 50) ul.appendChild(el("li", null, "\u2026 and " + (problemList.length - 50) + " more"));
    box.appendChild(ul);
  }

  function stateWord(c) {
    if (c.down) return c.down + (c.out ? "" : " (still in play)");
    if (c.out) return "out";
    return STANCE_WORD[c.stance] || c.stance;
  }

  function damageModifier(dice) {
    var m = /([+-]\d+)\s*$/.exec(String(dice || ""));
    return m ? parseInt(m[1], 10) : 0;
  }

  function addRow(table, name, value) {
    var tr = el("tr");
    tr.appendChild(el("td", null, name));
    tr.appendChild(el("td", "v", value));
    table.appendChild(tr);
  }

  // ------------------------------------------------------------------ the renderer
  /** Lay out the map (sized to the width the page has) and the roster for `replay`, and
   *  return the renderer (see the file's comment). */
  function create(replay) {
    var H = replay.header, E = replay.events, N = replay.count, C = replay.combatants;
    var byId = replay.byId, glyph = replay.glyph, sideNames = replay.sideNames, bad = replay.bad;
    var group = replay.group, groupEnd = replay.groupEnd, turnOf = replay.turnOf;
    var narration = replay.narration, cname = replay.cname;
    var W = H.map.width, HGT = H.map.height;

    // Map canvas and terrain layer.
    var canvas = $("map"), ctx = canvas.getContext("2d");
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

    var shotGeom = [];
    var logRows = [];
    var lastInitKey = "";
    var stats = { renderMs: [], frameMs: [], parts: {} };

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
      s.cs.forEach(function (c) {
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

    // The breakdown of the hovered attack, else the pinned one, else the current event's or
    // the latest of the current turn.
    function renderDetails(i, view) {
      var box = $("details");
      var pinned = view.pinned;
      var show = view.hovered !== null ? view.hovered : pinned;
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

    /** Draw the state after event i; `view` is {pinned, hovered} (attack indices or null). */
    function render(i, view) {
      var t0 = performance.now();
      var s = replay.stateAt(i);
      var t1 = performance.now();
      drawMap(s, i);
      var t2 = performance.now();
      renderInitiative(s, i);
      renderRoster(s);
      var t3 = performance.now();
      renderLog(i, s);
      renderDetails(i, view);
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
      var slider = $("slider");
      if (slider.value !== String(i)) slider.value = String(i);
      var t4 = performance.now();
      stats.renderMs.push(t4 - t0);
      [["state", t1 - t0], ["map", t2 - t1], ["panels", t3 - t2], ["log", t4 - t3]].forEach(function (p) {
        var part = stats.parts[p[0]] || (stats.parts[p[0]] = { sum: 0, max: 0, n: 0 });
        part.sum += p[1]; part.n += 1; if (p[1] > part.max) part.max = p[1];
      });
      if (stats.renderMs.length > 20000) stats.renderMs.shift();
    }

    // ---------------------------------------------------------------- hit tests, tooltips
    /** The canvas coordinates of a mouse event. */
    function mapPoint(ev) {
      var rect = canvas.getBoundingClientRect();
      return [(ev.clientX - rect.left) * canvas.width / rect.width, (ev.clientY - rect.top) * canvas.height / rect.height];
    }
    /** The index of the attack whose shot line (as last drawn) is nearest (x, y), or null. */
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
    /** The index of the (last) combatant drawn at (x, y) in state s, or null. */
    function combatantAt(s, x, y) {
      var found = null;
      s.cs.forEach(function (c, k) {
        var p = centre(c.pos);
        if (Math.abs(p[0] - x) <= Math.max(radius, cell / 2) && Math.abs(p[1] - y) <= Math.max(radius, cell / 2)) found = k;
      });
      return found;
    }
    /** The tooltip of combatant k in state s. */
    function combatantTip(s, k) {
      var c = s.cs[k], m = C[k].characteristics;
      return glyph[k] + "  " + C[k].id + " \u2014 " + C[k].name + " (" + sideNames[C[k].side] + ")\n" +
        "STR " + c.chars.STR + "/" + m.STR + "  DEX " + c.chars.DEX + "/" + m.DEX + "  END " + c.chars.END + "/" + m.END + "\n" +
        stateWord(c) + " at (" + c.pos[0] + ", " + c.pos[1] + ")\n" + weaponText(k, c) +
        (c.aim ? "\naiming at " + c.aim + " (" + signed(c.aimDm) + ")" : "") +
        (c.bonus ? "\nholds a leadership bonus (+1)" : "") + (c.penalty ? "\nholds a leadership penalty (\u22121)" : "");
    }
    /** The tooltip of the shot line of attack event q. */
    function shotTip(q) { return narration(q) + "\n(click to pin its breakdown)"; }

    return {
      canvas: canvas, stats: stats, render: render, renderDetails: renderDetails,
      mapPoint: mapPoint, shotAt: shotAt, combatantAt: combatantAt,
      combatantTip: combatantTip, shotTip: shotTip
    };
  }

  root.TravellerReplay.render = {
    el: el, say: say, showTitle: showTitle, showProblems: showProblems, create: create
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
