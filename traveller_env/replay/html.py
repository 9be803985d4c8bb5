"""Battle replays in the browser: one self-contained HTML file per battle.

A replay is the scenario's starting state (a *header*) plus the engine's event log, unchanged.
``replay_header(scenario, battle)`` builds the header; ``render_html(header, events)`` turns both
into one HTML page (inline CSS and JavaScript from ``traveller_env/replay/viewer/``, the scripts
``SCRIPTS`` inlined in their order; no network request, works from ``file://``) that plays the
battle: map, combatants, initiative track, narration (``traveller_env.rules.narrate``, one line per
event, computed here) and, for every attack, its dice, DMs, Effect and damage.

Replay files (``.jsonl``): either the plain event log written by ``traveller simulate --json``
(then the scenario must be named: ``traveller replay log.jsonl --scenario squad``), or the
same log preceded by a header line ``{"type": "header", ...}`` (``write_replay_jsonl``).

Every event is checked against the fields the viewer reads (``VIEWER_FIELDS``); an event that
is not a JSON object, has an unknown type or lacks a field is kept in the page, skipped when
the state is rebuilt, and listed in a message at the top of the page (and returned by
``check_events``). Every string of the log and the scenario reaches the page as JSON data
inside ``<script type="application/json">`` (``<``, ``>`` and ``&`` escaped) and is shown
with ``textContent`` or canvas text only, so a hostile name stays text.

Also here: the helpers behind ``traveller replay`` (its command is in
``traveller_cli.env_commands``), ``simulate --html``, ``eval --html-dir`` and the tournament's
``--replays``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traveller_env.rules.narrate import narrate
from traveller_env.scenario import Scenario, build_battle, load_scenario

if TYPE_CHECKING:  # pragma: no cover
    from traveller_env.rules.battle import Battle

__all__ = [
    "FORMAT",
    "SCRIPTS",
    "VERSION",
    "VIEWER_FIELDS",
    "ReplayError",
    "build_payload",
    "check_events",
    "check_header",
    "read_replay_jsonl",
    "render_html",
    "replay_header",
    "safe_filename",
    "viewer_script",
    "write_battle_html",
    "write_replay_html",
    "write_replay_jsonl",
]

#: ``format`` and ``version`` of a header (and of the page's embedded data).
FORMAT = "traveller-replay"
VERSION = 1

#: The viewer's files in ``traveller_env/replay/viewer/``: the page, its style sheet, and its
#: scripts in the order they run, inlined one after the other into the page's one ``<script>``
#: element: the state reducer (``TravellerReplay.state``, no DOM), the drawing
#: (``TravellerReplay.render``), then the controls, which start the viewer.
TEMPLATE = "template.html"
STYLESHEET = "viewer.css"
SCRIPTS = ("state.js", "render.js", "controls.js")


class ReplayError(ValueError):
    """A replay file or header that cannot be used; the message names the file, the line or
    field, and what is expected."""


# ---------------------------------------------------------------------------- header
def replay_header(scenario: str | Path | Mapping[str, Any] | Scenario,
                  battle: Battle | None = None, *, seed: int | None = None,
                  title: str | None = None) -> dict[str, Any]:
    """The scenario's starting state as a JSON-serialisable dict (``{"type": "header", ...}``).

    ``scenario`` is what ``load_scenario`` accepts (the scenario the battle was played on,
    with any option overrides: ``env.unwrapped.scenario``). ``battle``, when given, supplies
    the rules options actually used (``max_rounds``, hastening...) and must have the
    scenario's combatants (``ValueError`` otherwise). ``seed`` and ``title`` are shown in the
    page. The starting state is read from a battle freshly built from the scenario, so it is
    exactly the engine's (positions, stances, drawn weapons, magazines).
    """
    sc = load_scenario(scenario)
    start = build_battle(sc, seed=0)
    if battle is not None:
        ids, want = [c.id for c in battle.combatants], [c.id for c in start.combatants]
        if ids != want or list(battle.side_names) != list(start.side_names):
            raise ValueError(f"the battle's combatants {ids} are not those of scenario "
                             f"{sc.name!r} ({want})")
    opts = (battle or start).options
    combatants = []
    for c in start.combatants:
        w = c.weapon
        combatants.append({
            "id": c.id, "name": c.name, "side": c.side, "order": c.order,
            "position": list(c.pos), "stance": c.stance,
            "characteristics": dict(c.max_chars), "skills": dict(c.skills),
            "weapon": {"name": w.name, "skill": w.skill, "damage": str(w.damage),
                       "range_m": w.range_m, "magazine": w.magazine,
                       "spare_magazines": w.spare_magazines},
            "armour": {"name": c.armour.name, "protection": c.armour.protection},
            "drawn": c.drawn, "ammo": c.ammo, "spares": c.spares, "radio": c.radio,
            "prepared": c.prepared, "movement_m": c.movement_m,
        })
    return {
        "type": "header", "format": FORMAT, "version": VERSION,
        "title": title if title is not None else f"{sc.name}" + (
            f", seed {seed}" if seed is not None else ""),
        "scenario": sc.name, "description": sc.description, "seed": seed,
        "map": {"width": start.grid.width, "height": start.grid.height,
                "terrain": list(start.grid.rows)},
        "sides": list(start.side_names),
        "max_rounds": opts.max_rounds,
        "options": {"hastening": opts.hastening, "reactions": opts.reactions,
                    "comms_range_m": opts.comms_range_m},
        "combatants": combatants,
    }


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def check_header(header: Any, source: str = "header") -> dict[str, Any]:
    """Check a header read from a file; return it, or raise ``ReplayError`` naming the field
    and what it should hold."""
    def fail(field: str, problem: str) -> None:
        raise ReplayError(f"{source}: {field}: {problem}")

    if not isinstance(header, dict):
        fail("header", "not a JSON object")
    if header.get("type") != "header":
        fail("type", f"expected 'header', got {header.get('type')!r}")
    if header.get("format") != FORMAT:
        fail("format", f"expected {FORMAT!r}, got {header.get('format')!r}")
    if header.get("version") != VERSION:
        fail("version", f"this viewer reads version {VERSION}, got {header.get('version')!r}")
    m = header.get("map")
    if not isinstance(m, dict):
        fail("map", "missing or not an object {width, height, terrain}")
    w, h = m.get("width"), m.get("height")
    if not (_is_int(w) and _is_int(h) and 1 <= w <= 1000 and 1 <= h <= 1000):
        fail("map.width/height", f"whole numbers from 1 to 1000, got {w!r} x {h!r}")
    rows = m.get("terrain")
    if not (isinstance(rows, list) and len(rows) == h
            and all(isinstance(r, str) and len(r) == w for r in rows)):
        fail("map.terrain", f"{h} strings of {w} characters")
    sides = header.get("sides")
    if not (isinstance(sides, list) and len(sides) == 2 and all(isinstance(s, str) for s in sides)):
        fail("sides", "two side names")
    if not _is_int(header.get("max_rounds")):
        fail("max_rounds", "a whole number")
    cs = header.get("combatants")
    if not isinstance(cs, list) or not cs:
        fail("combatants", "a non-empty list")
    seen = set()
    for i, c in enumerate(cs):
        where = f"combatants[{i}]"
        if not isinstance(c, dict):
            fail(where, "not an object")
        for key, ok, what in (
                ("id", lambda v: isinstance(v, str) and v, "a non-empty string"),
                ("name", lambda v: isinstance(v, str), "a string"),
                ("side", lambda v: v in (0, 1) and not isinstance(v, bool), "0 or 1"),
                ("position", lambda v: isinstance(v, list) and len(v) == 2
                 and all(_is_int(x) for x in v), "[x, y]"),
                ("stance", lambda v: v in ("stand", "crouch", "prone"), "stand|crouch|prone"),
                ("characteristics", lambda v: isinstance(v, dict)
                 and all(_is_int(v.get(k)) for k in ("STR", "DEX", "END")),
                 "an object with STR, DEX and END"),
                ("weapon", lambda v: isinstance(v, dict) and isinstance(v.get("name"), str),
                 "an object with a name"),
                ("armour", lambda v: isinstance(v, dict) and _is_int(v.get("protection")),
                 "an object with a protection")):
            if not ok(c.get(key)):
                fail(f"{where}.{key}", f"expected {what}, got {c.get(key)!r}")
        if c["id"] in seen:
            fail(f"{where}.id", f"duplicate id {c['id']!r}")
        seen.add(c["id"])
    return header


# ---------------------------------------------------------------------------- events
#: The fields the viewer reads, per event type (kinds: id = a combatant of the header,
#: pos = [x, y], roll = list of whole numbers, dms = {name: whole number}; ``?`` = may be
#: null). Every type the engine emits is here (a test checks it against the narrator's).
_CHECK = {"roll": "roll", "dms": "dms", "total": "int", "effect": "int"}
_READY = {"actor": "id", "weapon": "str", "progress": "int", "needed": "int", "done": "bool"}
VIEWER_FIELDS: dict[str, dict[str, str]] = {
    "initiative": {"actor": "id", "roll": "roll?", "dms": "dms", "initiative": "int"},
    "tactics": {**_CHECK, "actor": "id", "unit": "str", "added": "int"},
    "round": {"round": "int"},
    "haste": {"actor": "id", "haste": "bool", "initiative": "int"},
    "simultaneous": {"group": "ids", "initiative": "int"},
    "turn": {"actor": "id", "initiative": "int", "round": "int"},
    "move": {"actor": "id", "from": "pos", "to": "pos", "metres": "num"},
    "stance": {"actor": "id", "from": "str", "to": "str"},
    "draw": _READY,
    "reload": _READY,
    "aim": {"actor": "id", "target": "id", "aim": "int"},
    "aim_lost": {"actor": "id", "target": "id"},
    "attack": {**_CHECK, "actor": "id", "target": "id", "weapon": "str", "damage_dice": "str",
               "melee": "bool", "range_m": "num", "actor_pos": "pos", "target_pos": "pos",
               "ammo_left": "int?", "reaction": "str", "hit": "bool", "damage_roll": "roll?",
               "damage": "int", "protection": "int", "target_after": "dms"},
    "reaction": {"actor": "id", "reaction": "str", "attacker": "id"},
    "initiative_change": {"actor": "id", "change": "int", "reason": "str", "applies_to": "str",
                          "initiative": "int", "next_round_change": "int"},
    "leadership": {**_CHECK, "actor": "id", "bonuses": "int", "penalties": "int"},
    "bonus_granted": {"actor": "id", "target": "id"},
    "penalty_imposed": {"actor": "id", "target": "id", "leader": "id"},
    "bonus_used": {"actor": "id", "check": "str"},
    "penalty_used": {"actor": "id", "check": "str"},
    "lapse": {"actor": "id", "kind": "str", "count": "int", "reason": "str"},
    "incapacitated": {"actor": "id", "by": "id", "state": "str",
                      "stays_until_group_ends": "bool"},
    "out": {"actor": "id"},
    "end_turn": {"actor": "id", "reason": "str"},
    "illegal_action": {"actor": "id", "label": "str", "reason": "str"},
    "end": {"round": "int", "winner": "str?", "reason": "str"},
}


def _field_problem(kind: str, v: Any, ids: set[str]) -> str | None:
    """Why ``v`` is not of ``kind`` (``None`` when it is)."""
    if kind.endswith("?"):
        if v is None:
            return None
        kind = kind[:-1]
    if kind == "id":
        if not isinstance(v, str):
            return f"expected a combatant id, got {v!r}"
        return None if v in ids else f"{v!r} is not a combatant of this scenario"
    if kind == "ids":
        if not isinstance(v, list) or not v:
            return f"expected a list of combatant ids, got {v!r}"
        bad = [x for x in v if x not in ids]
        return f"{bad!r}: not combatants of this scenario" if bad else None
    checks = {
        "int": (_is_int, "a whole number"),
        "num": (_is_num, "a number"),
        "str": (lambda x: isinstance(x, str), "a string"),
        "bool": (lambda x: isinstance(x, bool), "true or false"),
        "pos": (lambda x: isinstance(x, list) and len(x) == 2 and all(map(_is_int, x)),
                "[x, y]"),
        "roll": (lambda x: isinstance(x, list) and all(map(_is_int, x)),
                 "a list of dice"),
        "dms": (lambda x: isinstance(x, dict) and all(map(_is_int, x.values())),
                "an object of whole numbers"),
    }
    ok, what = checks[kind]
    return None if ok(v) else f"expected {what}, got {json.dumps(v, default=str)[:60]}"


def check_events(events: Sequence[Any], header: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events the viewer cannot use: ``[{"index": i, "message": ...}]`` for every item
    that is not an object, has no known ``type``, or lacks a field (or holds a bad value) of
    ``VIEWER_FIELDS``. ``index`` counts from 0; messages count events from 1, as the page
    does."""
    ids = {c["id"] for c in header["combatants"]}
    width, height = header["map"]["width"], header["map"]["height"]
    problems = []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            problems.append({"index": i, "message": f"event {i + 1} is not a JSON object "
                             f"({json.dumps(e, default=str)[:60]})"})
            continue
        kind = e.get("type")
        spec = VIEWER_FIELDS.get(kind) if isinstance(kind, str) else None
        if spec is None:
            problems.append({"index": i, "message": f"event {i + 1} has an unknown type "
                             f"{json.dumps(kind, default=str)[:40]}: this viewer knows "
                             + ", ".join(VIEWER_FIELDS)})
            continue
        for name, fkind in spec.items():
            if name not in e:
                why = "is missing"
            else:
                why = _field_problem(fkind, e[name], ids)
                if why is None and fkind == "pos":
                    x, y = e[name]
                    if not (0 <= x < width and 0 <= y < height):
                        why = f"{e[name]} is off the {width}x{height} map"
            if why is not None:
                problems.append({"index": i, "message": f"event {i + 1} ({kind}): field "
                                 f"{name!r} {why}"})
                break
    return problems


# ---------------------------------------------------------------------------- files
def write_replay_jsonl(header: Mapping[str, Any], events: Iterable[Mapping[str, Any]],
                       path: str | Path) -> Path:
    """Write the header line then one line per event (the events exactly as given)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(dict(header)) + "\n")
        for e in events:
            fh.write(json.dumps(e) + "\n")
    return path


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_replay_jsonl(path: str | Path) -> tuple[dict[str, Any] | None, list[Any],
                                                  list[dict[str, Any]]]:
    """Read a replay file: ``(header or None, events, problems)``.

    A first line of type ``header`` is the header (checked: ``ReplayError`` if it is
    unusable). A later line that is not valid JSON becomes a ``None`` event with a problem
    naming its line, so the page still plays the rest. A file without one readable event
    raises ``ReplayError``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReplayError(f"{path}: not a UTF-8 text file of JSON lines ({exc})") from None
    header: dict[str, Any] | None = None
    events: list[Any] = []
    problems: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line, parse_constant=_no_constant)
        except ValueError as exc:
            why = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
                   else str(exc))
            problems.append({"index": len(events), "message": f"event {len(events) + 1} (line "
                             f"{lineno} of {path.name}) is not valid JSON ({why})"})
            events.append(None)
            continue
        if isinstance(item, dict) and item.get("type") == "header":
            if header is not None or events:
                raise ReplayError(f"{path}:{lineno}: a header line must be the first line")
            header = check_header(item, f"{path}:{lineno}")
            continue
        events.append(item)
    if len(problems) == len(events):
        raise ReplayError(f"{path}: no readable event (expected one JSON object per line, "
                          "as written by `traveller simulate --json`)")
    return header, events, problems


# ---------------------------------------------------------------------------- the page
def _asset(name: str) -> str:
    viewer = resources.files("traveller_env.replay").joinpath("viewer")
    return viewer.joinpath(name).read_text(encoding="utf-8")


def build_payload(header: Mapping[str, Any], events: Sequence[Any],
                  problems: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The data the page reads: the header, the events unchanged, the narrated line of each
    (``narrate``; ``None`` for a non-object) and the problems (given ones first, then those
    of ``check_events``; one per event at most)."""
    found = {p["index"]: dict(p) for p in problems}
    for p in check_events(events, header):
        found.setdefault(p["index"], p)
    return {"format": FORMAT, "version": VERSION, "header": dict(header),
            "events": list(events), "narration": [narrate(e) for e in events],
            "problems": [found[i] for i in sorted(found)]}


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` (escaped as
    ``\\u003c`` etc.), so no string can close the element or open a comment."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(header: Mapping[str, Any], events: Sequence[Any],
                problems: Sequence[Mapping[str, Any]] = ()) -> str:
    """The whole page, as text (see the module docstring)."""
    return _page(build_payload(header, events, problems))


def viewer_script() -> str:
    """The viewer's JavaScript: ``SCRIPTS`` joined in their order (what the page inlines)."""
    return "\n".join(_asset(name) for name in SCRIPTS)


def _page(payload: Mapping[str, Any]) -> str:
    template, css, js = _asset(TEMPLATE), _asset(STYLESHEET), viewer_script()
    data = _script_json(payload)
    for marker, text in (("/*@CSS@*/", css), ("/*@JS@*/", js), ("@DATA@", data)):
        if template.count(marker) != 1:
            raise RuntimeError(f"viewer template: marker {marker} must appear exactly once")
        head, tail = template.split(marker)
        template = head + text + tail
    return template


def write_replay_html(path: str | Path, header: Mapping[str, Any], events: Sequence[Any],
                      problems: Sequence[Mapping[str, Any]] = ()) -> Path:
    """Write ``render_html(header, events, problems)`` to ``path`` (folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(header, events, problems), encoding="utf-8")
    return path


def write_battle_html(path: str | Path, battle: Battle,
                      scenario: str | Path | Mapping[str, Any] | Scenario,
                      *, seed: int | None = None, title: str | None = None) -> Path:
    """The replay page of a finished (or running) ``battle`` played on ``scenario``."""
    header = replay_header(scenario, battle, seed=seed, title=title)
    return write_replay_html(path, header, battle.events)


def safe_filename(text: str) -> str:
    """``text`` reduced to letters, digits, ``-``, ``_`` and ``.`` (for file names made from
    policy names, which may be paths)."""
    name = Path(text).name if ("/" in text or "\\" in text) else text
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "x"
