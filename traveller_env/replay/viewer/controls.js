/* Traveller Tactics replay viewer, part 3 of 3: controls and wiring.
 *
 * Reads the JSON of the element #replay-data (written by traveller_env/replay/html.py):
 * {format, version, header, events, narration, problems}; builds the replay
 * (TravellerReplay.state) and the renderer (TravellerReplay.render); then wires the buttons,
 * the keyboard, the slider, the speed selector, the playback timer (requestAnimationFrame)
 * and the mouse over the map and the list of events. No network request is made (the page's
 * Content-Security-Policy forbids them anyway).
 *
 * window.replayViewer exposes go/play/pause/speed and frame statistics for tests and for
 * experiments/bench_replay.py.
 */
(function (root) {
  "use strict";

  var S = root.TravellerReplay.state, R = root.TravellerReplay.render;
  var SPEEDS = [0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256];
  var DEFAULT_SPEED = 4;

  function $(id) { return document.getElementById(id); }

  window.addEventListener("error", function (ev) {
    R.say("The replay viewer stopped on an error: " + (ev && ev.message ? ev.message : ev) +
          ". The file may be damaged: write it again with `traveller replay`.", true);
  });

  // ------------------------------------------------------------------ loading
  var data;
  try {
    data = JSON.parse($("replay-data").textContent);
  } catch (err) {
    R.say("This replay cannot be shown: its embedded data is not valid JSON (" + err.message + "). Write the file again with `traveller replay`.", true);
    return;
  }
  var why = S.headerProblem(data);
  if (why) {
    R.say("This replay cannot be shown: " + why + ".", true);
    return;
  }

  var replay = S.replay(data);
  var E = replay.events, N = replay.count, bad = replay.bad;
  R.showTitle(replay);
  if (N === 0) {
    R.say("This replay holds no event: there is nothing to play.", true);
    return;
  }
  var renderer = R.create(replay);
  var canvas = renderer.canvas, wrap = $("map-wrap");

  // Speed selector.
  var speedSel = $("speed");
  SPEEDS.forEach(function (v) {
    var o = R.el("option", null, v + " events/s");
    o.value = String(v);
    if (v === DEFAULT_SPEED) o.selected = true;
    speedSel.appendChild(o);
  });

  // ------------------------------------------------------------------ position and playback
  var cur = replay.firstRound >= 0 ? replay.firstRound : 0;
  var shown = { pinned: null, hovered: null };  // attacks whose breakdown is pinned / hovered
  var slider = $("slider");
  slider.max = String(N - 1);
  var playBtn = $("btn-play");
  var playing = false, raf = 0, lastT = 0, acc = 0;
  var stats = renderer.stats;

  function renderDetails() { renderer.renderDetails(cur, shown); }
  function go(i) {
    i = Math.max(0, Math.min(N - 1, i | 0));
    if (i !== cur) { shown.pinned = null; shown.hovered = null; }
    cur = i;
    renderer.render(cur, shown);
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

  // ------------------------------------------------------------------ buttons, slider, keys
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

  // ------------------------------------------------------------------ mouse
  // Log list: click to jump, hover an attack to see its breakdown.
  var logList = $("log-list");
  logList.addEventListener("click", function (ev) {
    var li = ev.target.closest ? ev.target.closest("li") : null;
    if (!li || !li.dataset.index) return;
    var j = parseInt(li.dataset.index, 10);
    pause();
    go(j);
    if (!bad[j] && E[j].type === "attack") { shown.pinned = j; renderDetails(); }
  });
  logList.addEventListener("mouseover", function (ev) {
    var li = ev.target.closest ? ev.target.closest("li") : null;
    var j = li && li.dataset.index ? parseInt(li.dataset.index, 10) : null;
    var next = j !== null && !bad[j] && E[j].type === "attack" ? j : null;
    if (next !== shown.hovered) { shown.hovered = next; renderDetails(); }
  });
  logList.addEventListener("mouseleave", function () { if (shown.hovered !== null) { shown.hovered = null; renderDetails(); } });

  // Map: hover a combatant for its card, hover or click a shot for its breakdown.
  var tooltip = $("tooltip");
  canvas.addEventListener("mousemove", function (ev) {
    var pt = renderer.mapPoint(ev), s = replay.stateAt(cur);
    var k = renderer.combatantAt(s, pt[0], pt[1]);
    var shot = k === null ? renderer.shotAt(pt[0], pt[1]) : null;
    if (k !== null) tooltip.textContent = renderer.combatantTip(s, k);
    else if (shot !== null) tooltip.textContent = renderer.shotTip(shot);
    tooltip.hidden = k === null && shot === null;
    if (!tooltip.hidden) {
      var wr = wrap.getBoundingClientRect();
      tooltip.style.left = Math.min(ev.clientX - wr.left + wrap.scrollLeft + 14, wrap.scrollLeft + wr.width - 330) + "px";
      tooltip.style.top = (ev.clientY - wr.top + wrap.scrollTop + 14) + "px";
    }
    if (shot !== shown.hovered) { shown.hovered = shot; renderDetails(); }
  });
  canvas.addEventListener("mouseleave", function () {
    tooltip.hidden = true;
    if (shown.hovered !== null) { shown.hovered = null; renderDetails(); }
  });
  canvas.addEventListener("click", function (ev) {
    var pt = renderer.mapPoint(ev);
    shown.pinned = renderer.shotAt(pt[0], pt[1]);
    shown.hovered = null;
    renderDetails();
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
    problems: function () { return replay.problems.map(function (p) { return p.message; }); }
  };

  $("app").hidden = false;
  R.showProblems(replay);
  renderer.render(cur, shown);
  R.say("", false);
})(typeof globalThis !== "undefined" ? globalThis : this);
