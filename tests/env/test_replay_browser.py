"""The replay page in a real browser (Debian's headless Chromium through selenium).

These tests need ``/usr/bin/chromium`` and ``/usr/bin/chromedriver``: ``make test`` installs
them (``make browser``). Without them the tests fail with a message naming that target; they
are never skipped. Selenium is always handed the driver's path, so Selenium Manager (which
downloads browsers) is never called: the driver fixture makes any call to it an error.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from unittest import mock

import pytest
from conftest import fighter, scenario

import traveller_env
from experiments.browser import (
    CHROMEDRIVER,
    browser_missing,
    console_errors,
    headless_chromium,
    requested_urls,
)
from traveller_agents.registry import make_policy
from traveller_env.replay.html import (
    _page,
    read_replay_jsonl,
    replay_header,
    write_replay_html,
    write_replay_jsonl,
)
from traveller_env.rules.narrate import narrate
from traveller_env.scenario import build_battle
from traveller_env.simulate import play_random
from traveller_rl.evaluation import play_battle

try:  # without selenium the driver fixture fails with the install hint
    from selenium.webdriver.common.keys import Keys
except ImportError:  # pragma: no cover
    Keys = None

HOSTILE = "<img src=x onerror=alert(1)>"
MINUS = "\u2212"


def _signed(n: int) -> str:
    return f"+{n}" if n >= 0 else f"{MINUS}{-n}"


@pytest.fixture(scope="module")
def driver():
    why = browser_missing()
    if why is not None:
        pytest.fail(f"the browser tests need Chromium: {why}", pytrace=False)
    from selenium.webdriver.common.selenium_manager import SeleniumManager

    def refuse(*args, **kwargs):
        raise AssertionError("Selenium Manager was asked for a driver (it would download one)")

    with mock.patch.object(SeleniumManager, "binary_paths", refuse), headless_chromium() as d:
        assert d.service.path == str(CHROMEDRIVER)
        d.get("about:blank")  # let the start page finish, then forget its logs
        time.sleep(0.5)
        console_errors(d)
        requested_urls(d)
        yield d


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """Replay pages and what they hold: ``name -> (path, {header, events, ...})``."""
    out = tmp_path_factory.mktemp("replays")
    made = {}
    # A scripted battle with leadership, shots, a winner.
    env = traveller_env.raw_env("squad_commander")
    pols = {a: make_policy("leader" if env.side_of(a) == 0 else "tactician")
            for a in env.possible_agents}
    battle = play_battle(env, pols, 0)
    header = replay_header(env.unwrapped.scenario, battle, seed=0, title="leader vs tactician")
    made["main"] = (write_replay_html(out / "main.html", header, battle.events),
                    {"header": header, "events": battle.events, "winner": battle.winner,
                     "rounds": battle.round})
    # Hostile strings everywhere a string can be.
    sc = scenario([fighter([2, 2], name=HOSTILE),
                   fighter([2, 4], name="<script>window.__pwned=1</script>")],
                  [fighter([8, 3], name="</script><b>x</b>&amp;<!--")], width=12, height=7)
    sc["name"] = "<i>evil</i></title><script>window.__pwned=2</script>"
    sc["description"] = "</SCRIPT><script>window.__pwned=3</script><!-- -->"
    hb = build_battle(sc, seed=3)
    play_random(hb, random.Random(3))
    hh = replay_header(sc, hb)
    made["hostile"] = (write_replay_html(out / "hostile.html", hh, hb.events),
                       {"header": hh, "events": hb.events})
    # A malformed log: unknown type, not an object, a missing field, an unreadable line.
    sq = build_battle("squad", seed=2)
    play_random(sq, random.Random(2))
    events = [dict(e) for e in sq.events]
    events[15] = {"type": "teleport", "actor": "blue_0"}
    events[20] = 42
    attack = next(i for i, e in enumerate(events) if i > 20 and e.get("type") == "attack")
    del events[attack]["dms"]
    log = write_replay_jsonl(replay_header("squad", sq), events, out / "bad.jsonl")
    lines = log.read_text().splitlines()
    lines.insert(31, "{not json")
    log.write_text("\n".join(lines) + "\n")
    bh, bev, bprob = read_replay_jsonl(log)
    # The unreadable line becomes event index 30: the events from there on move one further.
    made["bad"] = (write_replay_html(out / "bad.html", bh, bev, bprob),
                   {"events": bev, "attack": attack if attack < 30 else attack + 1})
    # Pages that cannot be played at all.
    made["no_header"] = (out / "no_header.html", {})
    made["no_header"][0].write_text(_page({"format": "traveller-replay", "version": 1,
                                           "events": []}))
    corrupt = out / "corrupt.html"
    text = (out / "main.html").read_text()
    start = text.index('type="application/json">') + len('type="application/json">')
    corrupt.write_text(text[:start] + '{"format": "traveller-replay", broken' +
                       text[text.index("</script>", start):])
    made["corrupt"] = (corrupt, {})
    made["version"] = (out / "version.html", {})
    made["version"][0].write_text(_page({"format": "traveller-replay", "version": 99}))
    return made


def load(driver, path: Path) -> None:
    requested_urls(driver)  # forget earlier pages' requests and console entries
    console_errors(driver)
    driver.get(path.as_uri())
    driver.find_element("id", "status")  # the document is there


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def assert_clean(driver) -> None:
    """No console error, no alert, no network request (not even for a resource)."""
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert  # noqa: B018
    assert console_errors(driver) == []
    assert js(driver, "return performance.getEntriesByType('resource').length") == 0
    page = js(driver, "return location.href")
    assert requested_urls(driver, page) == [page]  # the page itself, nothing else
    assert js(driver, "return typeof window.__pwned") == "undefined"


def text(driver, element_id: str) -> str:
    return js(driver, "return document.getElementById(arguments[0]).textContent", element_id)


def hover_square(driver, x: float, y: float) -> None:
    """Move the mouse to map coordinates ``(x, y)`` in squares (0.5 = a square's centre)."""
    from selenium.webdriver.common.action_chains import ActionChains

    canvas = driver.find_element("id", "map")
    js(driver, "arguments[0].scrollIntoView({block: 'center'})", canvas)
    width = js(driver, "return JSON.parse(document.getElementById('replay-data').textContent)"
                       ".header.map.width")
    cell = js(driver, "return arguments[0].width", canvas) / width
    size = canvas.size
    ActionChains(driver).move_to_element_with_offset(
        canvas, round(x * cell - size["width"] / 2), round(y * cell - size["height"] / 2)
    ).perform()


def keys(driver, *sequence: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    body = driver.find_element("tag name", "body")
    chain = ActionChains(driver).move_to_element(body)
    for k in sequence:
        chain = chain.send_keys(k)
    chain.perform()


# ---------------------------------------------------------------------------- tests
def test_page_opens_on_round_1_with_the_combatants(driver, pages, tmp_path):
    path, info = pages["main"]
    load(driver, path)
    assert text(driver, "status") == ""
    assert text(driver, "round-label") == "Round 1 / 20"
    assert driver.find_element("id", "round-label").is_displayed()
    assert text(driver, "title") == "Replay: leader vs tactician"
    first_round = next(i for i, e in enumerate(info["events"]) if e["type"] == "round")
    assert js(driver, "return replayViewer.index()") == first_round
    assert text(driver, "narration") == "Round 1."
    roster = js(driver, "return Array.from(document.querySelectorAll('#roster .card')).map("
                        "c => [c.querySelector('.cid').textContent, "
                        "c.querySelector('.name').textContent])")
    assert roster == [[c["id"], c["name"]] for c in info["header"]["combatants"]]
    order = js(driver, "return Array.from(document.querySelectorAll('#init-list li')).map("
                       "li => li.children[1].textContent)")
    assert sorted(order) == sorted(c["id"] for c in info["header"]["combatants"])
    assert js(driver, "return document.getElementById('problems').hidden") is True
    shot = tmp_path / "replay.png"
    driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert_clean(driver)


def test_stepping_to_an_attack_shows_its_dice_and_every_dm(driver, pages):
    path, info = pages["main"]
    load(driver, path)
    events = info["events"]
    start = js(driver, "return replayViewer.index()")
    k = next(i for i, e in enumerate(events) if e["type"] == "attack" and e["hit"])
    keys(driver, *[Keys.ARROW_RIGHT] * (k - start))  # one event at a time
    e = events[k]
    assert text(driver, "event-counter") == f"event {k + 1} / {len(events)}"
    assert text(driver, "narration") == narrate(e)
    rows = js(driver, "return Array.from(document.querySelectorAll('#details table.dms tr'))"
                      ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    labels = {"leadership_bonus": "leadership bonus", "leadership_penalty": "leadership penalty"}
    assert rows == [["roll 2D", f"[{e['roll'][0]}, {e['roll'][1]}] = {sum(e['roll'])}"],
                    *[[f"DM {labels.get(n, n)}", _signed(v)] for n, v in e["dms"].items()],
                    ["total", str(e["total"])], [f"Effect (total {MINUS} 8)",
                                                 _signed(e["effect"])]]
    damage = js(driver, "return Array.from(document.querySelectorAll('#details table.damage tr'))"
                        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    dice = e["damage_roll"]
    assert damage[0] == [f"damage {e['damage_dice']}", f"[{', '.join(map(str, dice))}] = "
                         f"{sum(dice)}"]
    assert ["Effect", _signed(e["effect"])] in damage
    assert damage[-1] == ["damage", str(e["damage"])]
    assert "HIT" in text(driver, "details")
    # Stepping back and forth with the buttons.
    driver.find_element("id", "btn-back").click()
    assert js(driver, "return replayViewer.index()") == k - 1
    driver.find_element("id", "btn-fwd").click()
    assert js(driver, "return replayViewer.index()") == k
    assert_clean(driver)


def _middle(e) -> tuple[float, float]:
    return tuple((e["actor_pos"][j] + e["target_pos"][j]) / 2 for j in (0, 1))


def _segment_distance(p, e) -> float:
    """Distance in squares from point ``p`` to the shot line of attack event ``e``."""
    (ax, ay), (bx, by) = e["actor_pos"], e["target_pos"]
    dx, dy = bx - ax, by - ay
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy)
                                                / (dx * dx + dy * dy)))
    return ((p[0] - ax - t * dx) ** 2 + (p[1] - ay - t * dy) ** 2) ** 0.5


def test_hovering_attacks_shows_their_breakdown(driver, pages):
    from selenium.webdriver.common.action_chains import ActionChains

    path, info = pages["main"]
    load(driver, path)
    events = info["events"]
    # In the list of the round's events.
    rnd = [i for i, e in enumerate(events) if e["type"] == "round"]
    attacks = [i for i in range(rnd[1], rnd[2]) if events[i]["type"] == "attack"]
    js(driver, "replayViewer.go(arguments[0])", attacks[0] - 1)  # just before the attack
    assert not text(driver, "details").startswith(f"Attack (event {attacks[0] + 1})")
    item = driver.find_element("css selector", f"#log-list li[data-index='{attacks[0]}']")
    ActionChains(driver).move_to_element(item).perform()
    assert text(driver, "details").startswith(f"Attack (event {attacks[0] + 1})")
    # On the map, at the end of a round: the middle of one of its shot lines (not the last
    # turn's), one that no other shot line of the round passes near (the viewer picks the
    # nearest line within 0.3 squares) and long enough that no combatant sits at its middle.
    first, end = None, None
    bounds = [*rnd, len(events)]
    for k in range(len(rnd)):
        shots = [i for i in range(bounds[k], bounds[k + 1]) if events[i]["type"] == "attack"]
        last_actor = events[bounds[k + 1] - 1].get("actor")
        first = next((i for i in shots if events[i]["actor"] != last_actor and all(
            _segment_distance(_middle(events[i]), events[j]) > 0.5 for j in shots if j != i)
            and max(abs(events[i]["actor_pos"][d] - events[i]["target_pos"][d])
                    for d in (0, 1)) >= 2),
            None)
        if first is not None:
            end = bounds[k + 1] - 1
            break
    assert first is not None, "no round of the replay has a shot line to hover alone"
    js(driver, "replayViewer.go(arguments[0])", end)
    e = events[first]
    hover_square(driver, *[(e["actor_pos"][j] + e["target_pos"][j] + 1) / 2 for j in (0, 1)])
    assert text(driver, "details").startswith(f"Attack (event {first + 1})")
    assert text(driver, "tooltip") == narrate(e) + "\n(click to pin its breakdown)"
    ActionChains(driver).click().perform()
    ActionChains(driver).move_to_element(driver.find_element("id", "narration")).perform()
    assert text(driver, "details").startswith(f"Attack (event {first + 1}, pinned")
    assert_clean(driver)


def test_leadership_is_shown_on_the_holder(driver, pages):
    path, info = pages["main"]
    load(driver, path)
    events = info["events"]
    k = next(i for i, e in enumerate(events) if e["type"] == "bonus_granted")
    e = events[k]
    js(driver, "replayViewer.go(arguments[0])", k)
    held = js(driver, "return Array.from(document.querySelectorAll('#roster .card')).map("
                      "c => c.querySelector('.held').textContent)")
    ids = [c["id"] for c in info["header"]["combatants"]]
    assert held[ids.index(e["target"])] == f"holds a leadership bonus +1 (from {e['actor']})"
    assert_clean(driver)


def test_slider_to_the_end_shows_the_winner(driver, pages):
    from selenium.webdriver.common.action_chains import ActionChains

    path, info = pages["main"]
    load(driver, path)
    slider = driver.find_element("id", "slider")
    assert driver.find_element("id", "winner").is_displayed() is False
    ActionChains(driver).click_and_hold(slider).move_by_offset(
        slider.size["width"], 0).release().perform()
    n = len(info["events"])
    assert js(driver, "return replayViewer.index()") == n - 1
    banner = driver.find_element("id", "winner")
    assert banner.is_displayed()
    rounds = info["rounds"]
    assert text(driver, "winner") == (f"Victory: {info['winner']} wins"
                                      f"after {rounds} round{'s' if rounds > 1 else ''}")
    assert text(driver, "narration") == narrate(info["events"][-1])
    assert_clean(driver)


def test_keyboard_and_playing(driver, pages):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait

    path, info = pages["main"]
    load(driver, path)
    n = len(info["events"])
    keys(driver, Keys.HOME)
    assert js(driver, "return replayViewer.index()") == 0
    assert text(driver, "round-label") == "Before round 1"
    keys(driver, Keys.PAGE_DOWN)  # the next round
    assert text(driver, "round-label") == "Round 1 / 20"
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ARROW_RIGHT).key_up(
        Keys.SHIFT).perform()  # the next turn
    assert info["events"][js(driver, "return replayViewer.index()")]["type"] == "turn"
    keys(driver, Keys.END)
    assert js(driver, "return replayViewer.index()") == n - 1
    keys(driver, Keys.HOME)
    js(driver, "replayViewer.setSpeed(256)")
    keys(driver, " ")  # play
    assert js(driver, "return replayViewer.playing()") is True
    WebDriverWait(driver, 20).until(lambda d: js(d, "return replayViewer.index()") == n - 1)
    assert js(driver, "return replayViewer.playing()") is False
    assert driver.find_element("id", "winner").is_displayed()
    frames = js(driver, "return replayViewer.stats().frameMs.length")
    assert frames > 5  # it played frame by frame, not in one jump
    assert_clean(driver)


def test_hostile_names_appear_verbatim_and_run_nothing(driver, pages):

    path, info = pages["hostile"]
    load(driver, path)
    header = info["header"]
    assert text(driver, "status") == ""
    assert text(driver, "title") == "Replay: " + header["title"]
    assert driver.title == "Replay: " + header["title"]
    names = js(driver, "return Array.from(document.querySelectorAll('#roster .name'))"
                       ".map(n => n.textContent)")
    assert names == [c["name"] for c in header["combatants"]]
    assert names[0] == HOSTILE
    assert header["description"] in text(driver, "subtitle")
    assert js(driver, "return document.querySelectorAll('img, b, i, iframe, object').length") == 0
    assert js(driver, "return document.scripts.length") == 2
    # Hovering the hostile combatant on the map shows its name as text.
    start = header["combatants"][0]["position"]
    js(driver, "replayViewer.go(0)")
    hover_square(driver, start[0] + 0.5, start[1] + 0.5)
    assert HOSTILE in text(driver, "tooltip")
    js(driver, "replayViewer.go(1e9)")
    assert driver.find_element("id", "winner").is_displayed()
    assert_clean(driver)


def test_a_malformed_log_shows_a_message_and_plays_the_rest(driver, pages):
    path, info = pages["bad"]
    load(driver, path)
    problems = driver.find_element("id", "problems")
    assert problems.is_displayed()
    message = problems.text
    assert message.startswith(f"4 events of {len(info['events'])} cannot be shown")
    assert 'event 16 has an unknown type "teleport"' in message
    assert "event 21 is not a JSON object (42)" in message
    assert "event 31 (line 32 of bad.jsonl) is not valid JSON" in message
    assert f"event {info['attack'] + 1} (attack): field 'dms' is missing" in message
    js(driver, "replayViewer.go(15)")
    assert text(driver, "narration").startswith(
        'Cannot show this event: event 16 has an unknown type "teleport"')
    js(driver, "replayViewer.go(arguments[0])", info["attack"])
    assert "field 'dms' is missing" in text(driver, "narration")
    js(driver, "replayViewer.go(1e9)")
    assert text(driver, "round-label") == "Round 20 / 20"
    assert driver.find_element("id", "winner").is_displayed()
    assert_clean(driver)


@pytest.mark.parametrize(("name", "expected"), [
    ("no_header", "This replay cannot be shown: the replay has no header"),
    ("corrupt", "This replay cannot be shown: its embedded data is not valid JSON"),
    ("version", "This replay cannot be shown: this viewer reads replay version 1, not 99"),
])
def test_an_unusable_page_says_why_instead_of_going_blank(driver, pages, name, expected):
    load(driver, pages[name][0])
    status = driver.find_element("id", "status")
    assert status.is_displayed() and status.text.startswith(expected)
    assert "fatal" in status.get_attribute("class")
    assert_clean(driver)


# ---------------------------------------------------------------------------- the reducer
#: state.js run with no DOM: ``document``, ``window`` and ``self`` are undefined inside it and
#: ``globalThis`` is a plain object, so any page access throws. Then the state of the
#: combatants after each event index of ``arguments[2]``, in that order, in the shape of
#: ``_engine_state``.
_REDUCER_STATES = """
var root = {};
new Function("document", "window", "self", "globalThis", arguments[0])(
    undefined, undefined, undefined, root);
var S = root.TravellerReplay.state, replay = S.replay(JSON.parse(arguments[1]));
function view(s) {
  var pools = {};
  Object.keys(s.pools).forEach(function (id) {
    var p = s.pools[id];
    if (p.bonus || p.penalty) pools[id] = [p.bonus, p.penalty];
  });
  return {round: s.round, pools: pools, combatants: s.cs.map(function (c) {
    return {pos: c.pos, stance: c.stance, chars: [c.chars.STR, c.chars.DEX, c.chars.END],
            ammo: c.ammo, spares: c.spares, drawn: c.drawn, aim: c.aim, aim_dm: c.aimDm,
            down: !!c.down, out: c.out, initiative: c.base + c.now, base: c.base,
            next_round: c.next, hasty: c.hasty, begun: c.begun, bonus: !!c.bonus,
            penalty: !!c.penalty, ready: c.ready && [c.ready.kind, c.ready.progress]};
  })};
}
return {problems: replay.problems, leaked: typeof window.TravellerReplay,
        states: arguments[2].map(function (i) { return view(replay.stateAt(i)); }),
        fresh: view(S.stateAfter(replay.header, replay.events, arguments[2][0]))};
"""


def _engine_state(battle) -> dict:
    """The engine's state of the combatants, in the shape the reducer's state is read in."""
    pools: dict[str, list[int]] = {}
    for p in battle.pools:
        held = pools.setdefault(p.leader, [0, 0])
        held[0 if p.kind == "bonus" else 1] += p.count
    return {"round": battle.round, "pools": pools, "combatants": [
        {"pos": list(c.pos), "stance": c.stance, "chars": [c.chars[k] for k in ("STR", "DEX",
                                                                                  "END")],
         "ammo": c.ammo, "spares": c.spares, "drawn": c.drawn, "aim": c.aim_target,
         "aim_dm": c.aim_dm, "down": c.down or c.dead, "out": c.out,
         "initiative": c.current_initiative, "base": c.initiative,
         "next_round": c.init_mod_next, "hasty": c.hasty, "begun": c.turn_begun,
         "bonus": c.bonus, "penalty": c.penalty,
         "ready": [c.ready_kind, c.ready_count] if c.ready_kind else None}
        for c in battle.combatants]}


def _engine_battle(name: str, seed: int) -> tuple[dict, list[dict], dict[int, dict]]:
    """A battle of the Python engine (random legal actions): its header, its events and the
    engine's state after every action, keyed by the index of the action's last event. States
    with an attack pending (the target deciding its reaction: ammunition and aim already
    spent, the attack event not yet logged) are left out."""
    battle = build_battle(name, seed=seed)
    rng = random.Random(seed)
    states = {}
    while not battle.done:
        battle.apply(rng.choice(battle.legal_actions()))
        if battle.pending_attack is None:
            states[len(battle.events) - 1] = _engine_state(battle)
    return replay_header(name, battle), battle.events, states


@pytest.mark.parametrize(("name", "seed", "shown"), [
    ("squad_commander", 3, {"bonus_granted", "penalty_imposed", "lapse", "initiative_change"}),
    ("ambush", 2, {"draw", "reload", "incapacitated", "stance"}),
])
def test_the_state_reducer_agrees_with_the_engine(driver, name, seed, shown):
    """state.js alone, without a page: after every action of a whole battle its state
    (positions, stances, wounds, ammunition, drawing and reloading, aim, incapacitation,
    initiative, leadership) is the engine's, whether reached by stepping forward or by jumping
    about."""
    header, events, states = _engine_battle(name, seed)
    assert len(states) > 200 and any(e["type"] == "attack" and e["hit"] for e in events)
    assert shown <= {e["type"] for e in events}
    source = (Path(traveller_env.__file__).parent / "replay" / "viewer" / "state.js").read_text()
    data = json.dumps({"header": header, "events": events})
    forward = sorted(states)
    jumps = random.Random(seed).sample(forward, len(forward))
    driver.get("about:blank")
    for order in (forward, jumps):
        got = js(driver, _REDUCER_STATES, source, data, order)
        assert got["problems"] == [] and got["leaked"] == "undefined"
        assert got["fresh"] == states[order[0]]
        for i, state in zip(order, got["states"], strict=True):
            assert state == states[i], f"after event {i} ({events[i]['type']})"
