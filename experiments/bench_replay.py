"""Frame times and file size of the replay page in headless Chromium.

    python -m experiments.bench_replay [--seeds 1-20] [--speeds 8,256] \
        [--json runs/bench_replay.json]

Picks the 20-round squad battle (uniformly random legal actions, ``traveller simulate``'s
player) with the most events among ``--seeds``, writes its replay page, opens it in Debian's
headless Chromium (``make browser``) and plays it from the first event to the last at each
speed in ``--speeds`` (events per second; 256 is the page's top speed). For every animation
frame while playing it records the time since the previous frame (requestAnimationFrame
deltas, what a viewer sees as smoothness) and the time the page spent rebuilding and drawing
the state (render time). The reference, in the same browser and run: the frame deltas of an
empty requestAnimationFrame loop on the same page for as long (what the machine and the
browser give with no work at all). It also times jumps to random events (slider scrubbing).
Prints a table and writes the figures as JSON.

``--screenshot docs/replay.png`` also writes the docs' picture: the squad_commander battle
of the scripted ``leader`` (blue) against the ``tactician`` (red), seed 0, at the first attack
that uses a leadership bonus.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from experiments.browser import console_errors, headless_chromium
from traveller_env.replay.html import replay_header, write_replay_html
from traveller_env.scenario import build_battle
from traveller_env.simulate import play_random

# Long animation frames (over 50 ms) as the browser reports them, with the time spent in
# scripts (those over 5 ms), style and layout: a long frame without such work was the page
# waiting for the CPU, not working.
LOAF_JS = """
window.__loaf = [];
new PerformanceObserver(list => list.getEntries().forEach(e => window.__loaf.push({
  start: e.startTime,
  duration: e.duration,
  script: e.scripts.reduce((t, s) => t + s.duration, 0),
  style_layout: e.styleAndLayoutStart ? e.startTime + e.duration - e.styleAndLayoutStart : 0,
}))).observe({type: "long-animation-frame", buffered: false});
"""

IDLE_JS = """
const done = arguments[arguments.length - 1];
const ms = arguments[0];
const deltas = [];
let last = performance.now(), end = last + ms;
function f(t) {
  deltas.push(t - last); last = t;
  if (t < end) requestAnimationFrame(f); else done(deltas);
}
requestAnimationFrame(f);
"""


def _summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "mean": statistics.fmean(values),
            "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "max": ordered[-1]}


def _seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def pick_battle(seeds: list[int]) -> tuple[int, Any]:
    """The 20-round squad battle with the most events among ``seeds``."""
    best = None
    for seed in seeds:
        b = build_battle("squad", seed=seed)
        play_random(b, random.Random(seed))
        if b.round == 20 and (best is None or len(b.events) > len(best[1].events)):
            best = (seed, b)
    if best is None:
        raise SystemExit("no 20-round battle among the seeds: widen --seeds")
    return best


def measure(page: Path, speeds: list[float], jumps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with headless_chromium() as d:
        d.set_script_timeout(600)
        d.get(page.as_uri())
        n = d.execute_script("return replayViewer.events")
        for speed in speeds:
            d.execute_script(LOAF_JS)
            d.execute_script("replayViewer.go(0); replayViewer.resetStats();"
                             "replayViewer.setSpeed(arguments[0]);"
                             "requestAnimationFrame(() => { window.__playStart = performance.now();"
                             " replayViewer.play(); });", speed)
            time.sleep(0.1)
            start = time.perf_counter()
            while d.execute_script("return replayViewer.playing()"):
                time.sleep(0.2)
            wall = time.perf_counter() - start
            stats = d.execute_script("return replayViewer.stats()")
            assert d.execute_script("return replayViewer.index()") == n - 1
            frames = stats["frameMs"][1:]  # the first delta includes the start-up
            # Long frames from the first frame of playing on (not the jump back to event 1).
            loaf = d.execute_script(
                "return window.__loaf.filter(x => x.start >= window.__playStart)")
            out[f"play_{speed:g}"] = {
                "seconds": wall, "frame_ms": _summary(frames),
                "render_ms": _summary(stats["renderMs"]),
                "long_frames": {"n": len(loaf),
                                "max_script_ms": max((x["script"] for x in loaf), default=0),
                                "max_style_layout_ms": max((x["style_layout"] for x in loaf),
                                                           default=0)}}
            ms = min(wall, 20) * 1000
            idle = d.execute_async_script(IDLE_JS, ms)[1:]
            out[f"idle_{speed:g}"] = {"frame_ms": _summary(idle)}
        d.execute_script("replayViewer.resetStats()")
        rng = random.Random(0)
        for _ in range(jumps):
            d.execute_script("replayViewer.go(arguments[0])", rng.randrange(n))
        out["jumps"] = {"render_ms": _summary(d.execute_script(
            "return replayViewer.stats().renderMs"))}
        out["console_errors"] = console_errors(d)
        out["browser"] = d.capabilities.get("browserVersion")
    return out


def screenshot(path: Path, width: int = 1100) -> Path:
    """The docs' picture (see the module docstring), scaled to ``width`` pixels."""
    import io

    from PIL import Image

    import traveller_env
    from traveller_agents.registry import make_policy
    from traveller_rl.evaluation import play_battle

    env = traveller_env.raw_env("squad_commander")
    pols = {a: make_policy("leader" if env.side_of(a) == 0 else "tactician")
            for a in env.possible_agents}
    battle = play_battle(env, pols, 0)
    index = next(i for i, e in enumerate(battle.events)
                 if e["type"] == "attack" and "leadership_bonus" in e["dms"])
    header = replay_header(env.scenario, battle, seed=0,
                           title="squad_commander, seed 0: leader (blue) vs tactician (red)")
    page = write_replay_html(Path("runs/bench_replay/screenshot.html"), header, battle.events)
    with headless_chromium(1400, 1530) as d:
        d.get(page.resolve().as_uri())
        d.execute_script("replayViewer.go(arguments[0])", index)
        png = d.get_screenshot_as_png()
    img = Image.open(io.BytesIO(png)).convert("RGB")
    img = img.resize((width, round(img.height * width / img.width)), Image.LANCZOS)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="1-20", help="squad seeds to choose from (1-20)")
    p.add_argument("--speeds", default="8,256", help="events per second to play at (8,256)")
    p.add_argument("--jumps", type=int, default=200, help="random jumps to time (200)")
    p.add_argument("--out", default="runs/bench_replay", help="folder of the page")
    p.add_argument("--json", default="runs/bench_replay.json", help="write the figures here")
    p.add_argument("--screenshot", default=None, metavar="PNG",
                   help="also write the docs' screenshot here (e.g. docs/replay.png)")
    args = p.parse_args(argv)
    if args.screenshot:
        print(f"wrote {screenshot(Path(args.screenshot))}")
    seed, battle = pick_battle(_seeds(args.seeds))
    page = write_replay_html(Path(args.out) / f"squad_seed{seed}.html",
                             replay_header("squad", battle, seed=seed), battle.events)
    size = page.stat().st_size
    load_before = os.getloadavg()[0]
    result = {"scenario": "squad", "seed": seed, "rounds": battle.round,
              "events": len(battle.events), "file_bytes": size,
              **measure(page.resolve(), [float(s) for s in args.speeds.split(",")], args.jumps),
              "cpu_count": os.cpu_count(),
              "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    print(f"squad seed {seed}: {battle.round} rounds, {len(battle.events)} events, "
          f"page {size / 1024:.0f} KiB ({page})")
    print(f"{'run':<12}{'frames':>8}{'frame mean':>12}{'p99':>8}{'max':>8}"
          f"{'render mean':>13}{'max':>8}  (ms)")
    for key, v in result.items():
        if not isinstance(v, dict) or ("frame_ms" not in v and "render_ms" not in v):
            continue
        f, r = v.get("frame_ms", {}), v.get("render_ms", {})
        print(f"{key:<12}{f.get('n', r.get('n', 0)):>8}"
              + "".join(f"{f[k]:>{w}.1f}" if k in f else " " * w
                        for k, w in (("mean", 12), ("p99", 8), ("max", 8)))
              + "".join(f"{r[k]:>{w}.2f}" if k in r else " " * w
                        for k, w in (("mean", 13), ("max", 8))))
    for speed in args.speeds.split(","):
        play, idle = result[f"play_{float(speed):g}"], result[f"idle_{float(speed):g}"]
        long = play["long_frames"]
        print(f"at {speed} events/s: max frame {play['frame_ms']['max']:.1f} ms playing vs "
              f"{idle['frame_ms']['max']:.1f} ms for an empty loop (ratio "
              f"{play['frame_ms']['max'] / idle['frame_ms']['max']:.2f}); "
              f"{long['n']} frames over 50 ms, in which scripts over 5 ms took at most "
              f"{long['max_script_ms']:.0f} ms and style+layout "
              f"{long['max_style_layout_ms']:.0f} ms")
    print(f"{os.cpu_count()} cores; 1-minute load average {result['load_average_1min'][0]} "
          f"before, {result['load_average_1min'][1]} after (other processes share the cores)")
    if result["console_errors"]:
        print(f"console errors: {result['console_errors']}")
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
