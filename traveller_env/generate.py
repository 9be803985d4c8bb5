"""Scenario generators: named, seeded distributions of complete scenarios.

A *distribution* is a YAML file in ``configs/generators/`` (``skirmish.yaml`` is
``gen:skirmish``): ranges for the map size and its terrain (walls, low walls, rubble: density
and clustering), the team sizes, the roster (weapons, armour, skill levels, a leader with
Leadership and Tactics or none) and weighted start placements (``lines``, ``corners``,
``scattered``, ``ambush``). ``draw_scenario(distribution, seed, ...)`` turns one
``(distribution, seed)`` pair into one scenario dict, the same forever: every choice is drawn
from the project's shared generator (``rules.rng.Pcg32``) seeded by
``derive_seed(name_key(name), seed)``, in a fixed order. ``tests/env/test_generate.py`` pins the
hashes of a few drawn scenarios; a change to this module or to a distribution's file that
moves them is a new version of that distribution (give it a new name).

**Spelling.** ``gen:<distribution>@<seed>`` names one scenario (``gen:skirmish@7``):
``load_scenario("gen:skirmish@7")``, ``raw_env("gen:skirmish@7")``, ``--scenario
gen:skirmish@7``. The drawn scenario's ``name`` is that string.

**Guarantees** of every drawn scenario (checked by the drawing itself, tested over seed
ranges): it validates against the schema (``traveller_env.scenario``); no combatant stands in
a wall or on another; every combatant can walk to every other (a breadth-first search over the
grid with the rules' steps: ``GridMap.passable``, no cut wall corners). A draw whose terrain
would break the last rule is thrown away and drawn again from the same stream (up to
``MAX_ATTEMPTS`` times, then the terrain is left open), so the result is still a function of
the seed.

This module is in the rules layer's spirit: it imports the rules, YAML and pydantic only (not
``traveller_env.scenario``, which calls it to resolve ``gen:`` names and validates the
result).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .rules.grid import COVER, DIFFICULT, DIRECTIONS, OPEN, WALL, GridMap
from .rules.rng import Pcg32, check_u64, derive_seed

__all__ = ["GENERATED_PREFIX", "MAX_ATTEMPTS", "PLACEMENTS", "Distribution", "GeneratorError",
           "distribution_names", "draw_scenario", "load_distribution", "name_key",
           "parse_generated_name", "reachable", "scenario_hash"]

#: The prefix of a generated scenario's name: ``gen:<distribution>@<seed>``.
GENERATED_PREFIX = "gen:"
#: Terrain draws per scenario before the terrain is left open (see the module docstring).
MAX_ATTEMPTS = 50
#: The start placements a distribution may weigh.
PLACEMENTS = ("lines", "corners", "scattered", "ambush")
_NAME_RE = re.compile(r"^gen:([a-z][a-z0-9_-]*)(?:@(.*))?$")
_CHARACTERISTICS = ("STR", "DEX", "END", "INT", "EDU", "SOC")
_PPM = 1_000_000  # probabilities are drawn in millionths


class GeneratorError(ValueError):
    """A bad generator name, seed or distribution file (``source``: what was asked for)."""

    def __init__(self, source: str, problem: str) -> None:
        self.source, self.problem = source, problem
        super().__init__(f"{source}: {problem}")


# ---------------------------------------------------------------------------- schema
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_range(v: tuple[float, float]) -> tuple[float, float]:
    if v[0] > v[1]:
        raise ValueError(f"a range [low, high] needs low <= high, got {list(v)}")
    return v


class Clusters(_Strict):
    """One terrain feature: the share of the map it covers and the size of each cluster (a
    straight run of squares for walls and low walls, a random-walk blob for rubble)."""

    density: tuple[float, float] = (0.0, 0.0)
    size: tuple[int, int] = (1, 1)

    @field_validator("density")
    @classmethod
    def _density(cls, v: tuple[float, float]) -> tuple[float, float]:
        _check_range(v)
        if not 0.0 <= v[0] <= v[1] <= 0.5:
            raise ValueError(f"density is a share of the map in [0, 0.5], got {list(v)}")
        return v

    @field_validator("size")
    @classmethod
    def _size(cls, v: tuple[int, int]) -> tuple[int, int]:
        _check_range(v)
        if v[0] < 1 or v[1] > 40:
            raise ValueError(f"cluster size is 1 to 40 squares, got {list(v)}")
        return v


class MapRanges(_Strict):
    """``map``: width and height ranges (squares) and the three terrain features."""

    width: tuple[int, int]
    height: tuple[int, int]
    walls: Clusters = Field(default_factory=Clusters)
    low_walls: Clusters = Field(default_factory=Clusters)
    rubble: Clusters = Field(default_factory=Clusters)

    @field_validator("width", "height")
    @classmethod
    def _dims(cls, v: tuple[int, int]) -> tuple[int, int]:
        _check_range(v)
        if v[0] < 6 or v[1] > 200:
            raise ValueError(f"map sides are 6 to 200 squares, got {list(v)}")
        return v


class SideRanges(_Strict):
    """``sides``: names, team sizes (``even``: the chance both sides have the same size) and
    the chance a side has a leader (its first combatant, with Leadership and Tactics)."""

    names: tuple[str, str] = ("blue", "red")
    size: tuple[int, int]
    even: float = Field(default=0.5, ge=0.0, le=1.0)
    leader: float = Field(default=0.5, ge=0.0, le=1.0)
    leadership: tuple[int, int] = (1, 3)
    tactics: tuple[int, int] = (0, 2)

    @field_validator("size", "leadership", "tactics")
    @classmethod
    def _levels(cls, v: tuple[int, int], info: Any) -> tuple[int, int]:
        _check_range(v)
        low, high = (1, 16) if info.field_name == "size" else (0, 6)
        if v[0] < low or v[1] > high:
            raise ValueError(f"{info.field_name} is {low} to {high}, got {list(v)}")
        return v


class RosterRanges(_Strict):
    """``roster``: the weapons and armour drawn from (names in ``configs/equipment.yaml``),
    weapon skill levels and the range of each characteristic."""

    weapons: tuple[str, ...] = Field(min_length=1)
    armour: tuple[str, ...] = Field(min_length=1)
    skill: tuple[int, int] = (0, 2)
    characteristics: tuple[int, int] = (5, 10)

    @field_validator("skill", "characteristics")
    @classmethod
    def _levels(cls, v: tuple[int, int], info: Any) -> tuple[int, int]:
        _check_range(v)
        low, high = (0, 6) if info.field_name == "skill" else (1, 15)
        if v[0] < low or v[1] > high:
            raise ValueError(f"{info.field_name} is {low} to {high}, got {list(v)}")
        return v


class Distribution(_Strict):
    """A generator file (``configs/generators/<name>.yaml``); see docs/scenarios.md."""

    name: str
    description: str = ""
    map: MapRanges
    sides: SideRanges
    roster: RosterRanges
    placements: dict[str, float]
    max_rounds: int = Field(default=20, ge=1, le=10_000)

    @field_validator("placements")
    @classmethod
    def _placements(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(v) - set(PLACEMENTS))
        if unknown:
            raise ValueError(f"unknown placement {unknown[0]!r}; allowed: "
                             + ", ".join(PLACEMENTS))
        if any(w < 0 for w in v.values()) or not any(w > 0 for w in v.values()):
            raise ValueError("placement weights are >= 0 and at least one is > 0")
        return v

    @model_validator(mode="after")
    def _fits(self) -> Distribution:
        need = 2 * self.sides.size[1]
        if self.map.width[0] * self.map.height[0] < 4 * need:
            raise ValueError(f"the smallest map ({self.map.width[0]}x{self.map.height[0]}) is "
                             f"too small for {self.sides.size[1]} a side")
        return self


# ---------------------------------------------------------------------------- names
def generators_dir(config_dir: Path) -> Path:
    """The folder of the distribution files under a config folder."""
    return config_dir / "generators"


def distribution_names(config_dir: Path) -> list[str]:
    """The distributions shipped in ``<config_dir>/generators/`` as ``gen:<name>``."""
    return sorted(GENERATED_PREFIX + p.stem for p in generators_dir(config_dir).glob("*.yaml"))


def parse_generated_name(text: str) -> tuple[str, int | None]:
    """``"gen:skirmish@7"`` -> ``("skirmish", 7)``; ``"gen:skirmish"`` -> ``("skirmish",
    None)``. ``GeneratorError`` for anything else (a seed that is not an int in
    ``[0, 2**64 - 1]``)."""
    m = _NAME_RE.match(text)
    if m is None:
        raise GeneratorError(text, "a generated scenario is named gen:<distribution>@<seed>, "
                             "e.g. gen:skirmish@7")
    name, seed_text = m.group(1), m.group(2)
    if seed_text is None:
        return name, None
    if not seed_text.isdigit():
        raise GeneratorError(text, f"seed {seed_text!r} is not a whole number in "
                             "[0, 2**64 - 1]")
    try:
        return name, check_u64(int(seed_text))
    except ValueError as exc:
        raise GeneratorError(text, str(exc)) from None


def load_distribution(name: str, config_dir: Path) -> Distribution:
    """The distribution ``name`` (``"skirmish"`` or ``"gen:skirmish"``), validated."""
    return _load_distribution(name.removeprefix(GENERATED_PREFIX), str(config_dir))


@lru_cache(maxsize=32)
def _load_distribution(name: str, config_dir: str) -> Distribution:
    path = generators_dir(Path(config_dir)) / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(distribution_names(Path(config_dir))) or "none"
        raise GeneratorError(GENERATED_PREFIX + name,
                             f"no scenario distribution of that name; known: {known}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        dist = Distribution.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise GeneratorError(str(path), f"not a valid distribution: {exc}") from None
    if dist.name != name:
        raise GeneratorError(str(path), f"its name is {dist.name!r}, not the file's {name!r}")
    return dist


def name_key(name: str) -> int:
    """The 64-bit key of a distribution's name (first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")


def scenario_hash(scenario: Mapping[str, Any]) -> str:
    """A short SHA-256 of a scenario dict in canonical JSON (sorted keys): the golden tests
    pin drawn scenarios by it."""
    text = json.dumps(scenario, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# ---------------------------------------------------------------------------- drawing
class _Draw:
    """The draws of one scenario, all from one ``Pcg32``."""

    def __init__(self, rng: Pcg32) -> None:
        self.rng = rng

    def between(self, r: Sequence[int]) -> int:
        """A uniform int in ``[r[0], r[1]]``."""
        return r[0] + self.rng.below(r[1] - r[0] + 1)

    def share(self, r: Sequence[float]) -> float:
        """A share in ``[r[0], r[1]]`` (in millionths)."""
        low, high = round(r[0] * _PPM), round(r[1] * _PPM)
        return self.between((low, high)) / _PPM

    def chance(self, p: float) -> bool:
        """True with probability ``p`` (in millionths)."""
        return self.rng.below(_PPM) < round(p * _PPM)

    def pick(self, items: Sequence[Any]) -> Any:
        """A uniform element of ``items``."""
        return items[self.rng.below(len(items))]

    def weighted(self, weights: Mapping[str, float]) -> str:
        """A key of ``weights`` with probability proportional to its weight (in
        millionths, keys in file order)."""
        keys = [k for k, w in weights.items() if round(w * _PPM) > 0]
        total = sum(round(weights[k] * _PPM) for k in keys)
        x = self.rng.below(total)
        for k in keys:
            x -= round(weights[k] * _PPM)
            if x < 0:
                return k
        return keys[-1]  # pragma: no cover

    def sample(self, items: Sequence[Any], n: int) -> list[Any]:
        """``n`` distinct elements of ``items`` (a partial Fisher-Yates shuffle)."""
        pool = list(items)
        for i in range(n):
            j = i + self.rng.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:n]


def _terrain(d: _Draw, m: MapRanges, width: int, height: int) -> list[list[str]]:
    """Open ground with walls and low walls (straight runs) and rubble (blobs)."""
    grid = [[OPEN] * width for _ in range(height)]
    area = width * height
    for feature, char, straight in ((m.walls, WALL, True), (m.low_walls, COVER, True),
                                    (m.rubble, DIFFICULT, False)):
        target = round(d.share(feature.density) * area)
        placed = 0
        while placed < target:
            x, y = d.rng.below(width), d.rng.below(height)
            size = d.between(feature.size)
            if straight:
                dx, dy = ((1, 0), (0, 1))[d.rng.below(2)]
            for _ in range(size):
                if 0 <= x < width and 0 <= y < height:
                    if grid[y][x] == OPEN:
                        placed += 1
                    grid[y][x] = char
                if not straight:
                    dx, dy = d.pick(list(DIRECTIONS.values()))
                x, y = x + dx, y + dy
                if placed >= target:
                    break
    return grid


def reachable(rows: Sequence[str], start: tuple[int, int]) -> set[tuple[int, int]]:
    """The squares a combatant at ``start`` can walk to (breadth-first search with the rules'
    steps: onto passable squares, no diagonal cutting a wall corner; R8.1)."""
    grid = GridMap(len(rows[0]), len(rows), list(rows))
    seen = {start}
    todo = deque([start])
    while todo:
        sq = todo.popleft()
        for dx, dy in DIRECTIONS.values():
            nxt = (sq[0] + dx, sq[1] + dy)
            if nxt not in seen and grid.passable(nxt) and not grid.cuts_corner(sq, nxt):
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _zones(d: _Draw, placement: str, width: int, height: int,
           ) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """The deployment zones of the two sides (all squares, walls included) and, for an
    ambush, the ambushing side's index (-1 otherwise)."""
    def box(x0: int, x1: int, y0: int, y1: int) -> list[tuple[int, int]]:
        return [(x, y) for y in range(max(0, y0), min(height, y1))
                for x in range(max(0, x0), min(width, x1))]

    bw, bh = max(2, width // 3), max(2, height // 3)
    if placement == "lines":
        if d.chance(0.5):  # west against east
            return box(0, 3, 0, height), box(width - 3, width, 0, height), -1
        return box(0, width, 0, 3), box(0, width, height - 3, height), -1
    if placement == "corners":
        if d.chance(0.5):  # north-west against south-east
            return box(0, bw, 0, bh), box(width - bw, width, height - bh, height), -1
        return box(width - bw, width, 0, bh), box(0, bw, height - bh, height), -1
    if placement == "scattered":
        everywhere = box(0, width, 0, height)
        return everywhere, everywhere, -1
    ambusher = d.rng.below(2)
    edge = box(0, width, 0, 2)
    middle = box(0, width, height // 2 - 1, height // 2 + 2)
    return (edge, middle, 0) if ambusher == 0 else (middle, edge, 1)


def _place(d: _Draw, grid: list[list[str]], zones: tuple[list, list],
           sizes: tuple[int, int]) -> list[list[tuple[int, int]]] | None:
    """Distinct starting squares, none in a wall; ``None`` when a zone has too few."""
    taken: set[tuple[int, int]] = set()
    out = []
    for zone, n in zip(zones, sizes, strict=True):
        free = [sq for sq in zone if grid[sq[1]][sq[0]] != WALL and sq not in taken]
        if len(free) < n:
            return None
        chosen = d.sample(free, n)
        taken.update(chosen)
        out.append(chosen)
    return out


def _all_connected(grid: list[list[str]], positions: list[list[tuple[int, int]]]) -> bool:
    squares = [sq for side in positions for sq in side]
    reach = reachable(["".join(r) for r in grid], squares[0])
    return all(sq in reach for sq in squares)


def _combatant(d: _Draw, roster: RosterRanges, equipment: Mapping[str, Any],
               position: tuple[int, int]) -> dict[str, Any]:
    chars = {c: d.between(roster.characteristics) for c in _CHARACTERISTICS}
    weapon = d.pick(roster.weapons)
    need = int(equipment["weapons"][weapon].get("str_requirement", 0))
    chars["STR"] = max(chars["STR"], need)  # R3.7: bulky weapons go to the strong
    return {"name": "trooper", "characteristics": chars,
            "skills": {equipment["weapons"][weapon]["skill"]: d.between(roster.skill)},
            "weapon": weapon, "armour": d.pick(roster.armour), "position": list(position),
            "drawn": True}


def _side(d: _Draw, dist: Distribution, equipment: Mapping[str, Any], index: int,
          positions: list[tuple[int, int]], ambusher: int) -> dict[str, Any]:
    people = [_combatant(d, dist.roster, equipment, p) for p in positions]
    if d.chance(dist.sides.leader):
        lead = people[0]
        lead["name"] = "leader"
        lead["skills"]["leadership"] = d.between(dist.sides.leadership)
        tactics = d.between(dist.sides.tactics)
        if tactics:
            lead["skills"]["tactics.military"] = tactics
        for c in people:
            c["radio"] = True
    side: dict[str, Any] = {"name": dist.sides.names[index]}
    if ambusher >= 0:
        side["prepared"] = index == ambusher
        for c in people:
            if index == ambusher:
                c["stance"] = "crouch"
            else:
                c["drawn"] = False  # walking into it, weapons holstered
    side["combatants"] = people
    return side


def draw_scenario(distribution: Distribution, seed: int,
                  equipment: Mapping[str, Any]) -> dict[str, Any]:
    """Scenario ``seed`` of ``distribution`` as a scenario dict (validate it with
    ``traveller_env.scenario.validate_scenario``; ``load_scenario("gen:<name>@<seed>")`` does
    both). ``equipment`` is ``configs/equipment.yaml`` as a dict (``weapons``, ``armour``);
    names in the distribution that it lacks raise ``GeneratorError``."""
    label = f"{GENERATED_PREFIX}{distribution.name}@{seed}"
    for kind, names in (("weapons", distribution.roster.weapons),
                        ("armour", distribution.roster.armour)):
        unknown = [n for n in names if n not in equipment[kind]]
        if unknown:
            raise GeneratorError(label, f"roster {kind} {unknown[0]!r} is not in the equipment "
                                 "file; known: " + ", ".join(sorted(equipment[kind])))
    d = _Draw(Pcg32(derive_seed(name_key(distribution.name), check_u64(seed))))
    m, s = distribution.map, distribution.sides
    width, height = d.between(m.width), d.between(m.height)
    first = d.between(s.size)
    sizes = (first, first if d.chance(s.even) else d.between(s.size))
    placement = d.weighted(distribution.placements)
    zones = _zones(d, placement, width, height)
    ambusher = zones[2]
    positions = None
    for _ in range(MAX_ATTEMPTS):
        grid = _terrain(d, m, width, height)
        positions = _place(d, grid, zones[:2], sizes)
        if positions is not None and _all_connected(grid, positions):
            break
    else:  # open ground always fits (Distribution checks the smallest map)
        grid = [[OPEN] * width for _ in range(height)]
        positions = _place(d, grid, zones[:2], sizes)
        assert positions is not None
    sides = [_side(d, distribution, equipment, i, positions[i], ambusher) for i in (0, 1)]
    return {
        "name": label,
        "description": (f"Drawn from {GENERATED_PREFIX}{distribution.name} at seed {seed}: "
                        f"{placement}, {sizes[0]} against {sizes[1]} on {width}x{height}."),
        "map": {"width": width, "height": height, "terrain": ["".join(r) for r in grid]},
        "max_rounds": distribution.max_rounds,
        "sides": sides,
    }
