"""Scenarios and equipment: YAML schemas, loading, validation, and building a battle.

A scenario is loaded by built-in name (``"duel"``), by path, or from a dict, and validated by a
schema that forbids unknown keys. Any problem raises one ``ScenarioError`` naming the source,
the field path (``sides[0].combatants[1].weapon``), the bad value and what is allowed.
"""

from __future__ import annotations

import math
import os
import re
import reprlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .rules.battle import Battle
from .rules.checks import SPECIALISED_SKILLS
from .rules.combatant import Combatant
from .rules.dice import Dice, parse_dice
from .rules.equipment import Armour, Weapon
from .rules.grid import TERRAIN_CHARS, WALL, GridMap
from .rules.options import RulesOptions

__all__ = [
    "Scenario",
    "ScenarioError",
    "build_battle",
    "builtin_scenarios",
    "config_dir",
    "generated_scenario",
    "load_equipment",
    "load_scenario",
    "shipped_path",
]

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
_SKILL_RE = re.compile(r"^[a-z][a-z_]*(\.[a-z][a-z_]*)?$")


class ScenarioError(ValueError):
    """A scenario or equipment file that does not follow the schema.

    ``source`` is the file (or ``<dict>``), ``path`` the field path, ``problem`` what is wrong.
    """

    def __init__(self, source: str, path: str, problem: str) -> None:
        self.source, self.path, self.problem = source, path, problem
        #: every ``(field path, problem)`` found (a schema check reports them all)
        self.problems: list[tuple[str, str]] = [(path, problem)]
        where = f"{source}: {path}: " if path else f"{source}: "
        super().__init__(where + problem)


def config_dir() -> Path:
    """The folder holding ``equipment.yaml`` and ``scenarios/`` (in a wheel, or the repo)."""
    packaged = Path(__file__).parent / "_configs"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[1] / "configs"


#: The repository folders a wheel ships, and where in the package (pyproject.toml's
#: ``[tool.scikit-build.wheel.force-include]``).
_SHIPPED = {"configs": "_configs", "results": "_results"}


def shipped_path(path: str | os.PathLike[str], *, prefer_cwd: bool = False) -> Path:
    """The installed copy of a file the project ships, named by its path in the repository
    (``configs/league_squad.yaml``, ``results/league/understudy.onnx``): in a checkout the
    repository's file, in a wheel the package's copy; found from any current folder. Any
    other path (absolute, or outside those folders) is returned as given. With
    ``prefer_cwd``, a path that exists from the current folder is kept (a user's own
    ``results/...``); a path the project does not ship is returned as given."""
    given = Path(path)
    if given.is_absolute() or not given.parts or given.parts[0] not in _SHIPPED or \
            (prefer_cwd and given.exists()):
        return given
    packaged = Path(__file__).parent / _SHIPPED[given.parts[0]]
    found = packaged.joinpath(*given.parts[1:]) if packaged.is_dir() else \
        Path(__file__).resolve().parents[1] / given
    return found if found.exists() else given


# ---------------------------------------------------------------------------- schema
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, v: Any, info: ValidationInfo) -> Any:
        # YAML yes/no/true/on are booleans, which pydantic would take as 1 or 0 for a number
        # (a position, a level, max_rounds...): refuse them wherever no bool is expected.
        annotation = cls.model_fields[info.field_name].annotation
        if not {int, float} & {annotation, *get_args(annotation)}:
            return v  # not a number, nor a container of numbers
        items = v.values() if isinstance(v, dict) else v if isinstance(v, list | tuple) else (v,)
        if any(isinstance(x, bool) for x in items):
            raise ValueError("a boolean (true/false, yes/no) where a number is expected")
        return v


class WeaponSpec(_Strict):
    """One weapon, as in ``configs/equipment.yaml`` (public field names)."""

    skill: str
    damage: str
    range: float | Literal["melee"]
    magazine: int | None = Field(default=None, ge=1)
    spare_magazines: int = Field(default=0, ge=0)
    str_requirement: int = Field(default=0, ge=0, le=15)
    draw_actions: int = Field(default=1, ge=1, le=6)
    reload_actions: int = Field(default=1, ge=1, le=6)

    @field_validator("skill")
    @classmethod
    def _skill(cls, v: str) -> str:
        if not _SKILL_RE.match(v):
            raise ValueError(f"{v!r} is not a skill name like 'gun_combat.slug' or 'leadership'")
        return v

    @field_validator("damage")
    @classmethod
    def _damage(cls, v: str) -> str:
        dice = parse_dice(v)
        if dice.count > 100 or abs(dice.modifier) > 1000:
            raise ValueError(f"{v!r}: at most 100 dice and a modifier within +-1000")
        return v

    @field_validator("range", mode="before")
    @classmethod
    def _range_kind(cls, v: Any) -> Any:
        # Checked before the float|'melee' union so that errors name 'range' itself, not a
        # union member ('range.float').
        if isinstance(v, str) and v != "melee":
            try:
                float(v)
            except ValueError:
                raise ValueError("range must be a positive number of metres or 'melee'") from None
        return v

    @field_validator("range")
    @classmethod
    def _range(cls, v: float | str) -> float | str:
        if v != "melee" and not 0 < v < math.inf:
            raise ValueError("range must be a positive number of metres or 'melee'")
        return v

    @model_validator(mode="after")
    def _magazine(self) -> WeaponSpec:
        if self.range == "melee" and self.magazine is not None:
            raise ValueError("a melee weapon has no 'magazine'")
        if self.range != "melee" and self.magazine is None:
            raise ValueError("'magazine' is required for a ranged weapon")
        return self

    def to_weapon(self, name: str) -> Weapon:
        """The engine's weapon object."""
        return Weapon(name=name, skill=self.skill, damage=parse_dice(self.damage),
                      range_m=None if self.range == "melee" else float(self.range),
                      magazine=self.magazine or 0, spare_magazines=self.spare_magazines,
                      str_requirement=self.str_requirement, draw_actions=self.draw_actions,
                      reload_actions=self.reload_actions)


class ArmourSpec(_Strict):
    """One armour, as in ``configs/equipment.yaml``."""

    protection: int = Field(ge=0, le=30)


class EquipmentFile(_Strict):
    """The schema of ``configs/equipment.yaml``."""

    weapons: dict[str, WeaponSpec]
    armour: dict[str, ArmourSpec]


class MapSpec(_Strict):
    """``map``: size in 1.5 m squares and optional terrain rows (R8.1)."""

    width: int = Field(ge=1, le=1000)
    height: int = Field(ge=1, le=1000)
    terrain: list[str] | None = None


class OptionsSpec(_Strict):
    """``options``: rules switches, and how the environment treats illegal actions."""

    hastening: bool = True
    reactions: bool = True
    comms_range_m: float = Field(default=30.0, ge=0)
    illegal_action: Literal["raise", "penalize"] = "raise"


class RewardsSpec(_Strict):
    """``rewards``: reward terms of the environment (team-shared unless ``shared: false``).

    ``damage_dealt`` / ``damage_taken`` are per point of damage (after armour);
    ``per_round`` goes to every agent in play each time a new round begins (round 2 on), e.g.
    a small negative value to prefer quick victories. Every term is a finite number.
    """

    model_config = ConfigDict(allow_inf_nan=False)

    win: float = 1.0
    loss: float = -1.0
    draw: float = 0.0
    damage_dealt: float = 0.0
    damage_taken: float = 0.0
    per_round: float = 0.0
    shared: bool = True


class CharacteristicsSpec(_Strict):
    """The six characteristics, whole numbers from 1 to 15 (R8.3)."""

    STR: int = Field(ge=1, le=15)
    DEX: int = Field(ge=1, le=15)
    END: int = Field(ge=1, le=15)
    INT: int = Field(ge=1, le=15)
    EDU: int = Field(ge=1, le=15)
    SOC: int = Field(ge=1, le=15)

    @field_validator("*", mode="before")
    @classmethod
    def _whole_number(cls, v: Any) -> Any:
        # R8.3: a string ("7"), a float (7.0) or a boolean (YAML yes/no) is refused, not coerced.
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"a characteristic is a whole number from 1 to 15, not a "
                             f"{type(v).__name__}")
        return v


class CombatantSpec(_Strict):
    """One combatant of a side."""

    name: str
    characteristics: CharacteristicsSpec
    skills: dict[str, int] = Field(default_factory=dict)
    weapon: str
    armour: str = "none"
    position: tuple[int, int]
    stance: Literal["stand", "crouch", "prone"] = "stand"
    drawn: bool = False
    radio: bool = False
    prepared: bool | None = None
    movement: float = Field(default=6.0, gt=0, le=60)

    @field_validator("skills", mode="before")
    @classmethod
    def _skill_levels_are_ints(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for k, level in v.items():
                if isinstance(level, bool) or not isinstance(level, int):
                    raise ValueError(f"skill {k!r} has level {level!r}; a level is a whole "
                                     "number from 0 to 6")
        return v

    @field_validator("skills")
    @classmethod
    def _skills(cls, v: dict[str, int]) -> dict[str, int]:
        for k, level in v.items():
            if not _SKILL_RE.match(k):
                raise ValueError(f"{k!r} is not a skill name like 'gun_combat.slug'")
            if not 0 <= level <= 6:
                raise ValueError(f"skill {k!r} has level {level}; levels are 0 to 6")
            if k in SPECIALISED_SKILLS and level > 0:  # R1.4
                raise ValueError(f"skill {k!r} has specialties: its base name is held at level "
                                 f"0 only; name the specialty for level {level} (e.g. "
                                 f"'{k}.<specialty>: {level}')")
        return v


class SideSpec(_Strict):
    """One of the two sides."""

    name: str
    prepared: bool = False
    combatants: list[CombatantSpec] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME_RE.match(v):
            raise ValueError(f"{v!r}: a side name starts with a letter and holds only letters, "
                             "digits and '-'")
        return v


class Scenario(_Strict):
    """A validated scenario (the public schema; see docs/scenarios.md)."""

    name: str
    description: str = ""
    map: MapSpec
    max_rounds: int = Field(default=20, ge=1, le=10_000)
    options: OptionsSpec = Field(default_factory=OptionsSpec)
    rewards: RewardsSpec = Field(default_factory=RewardsSpec)
    weapons: dict[str, WeaponSpec] = Field(default_factory=dict)
    armour: dict[str, ArmourSpec] = Field(default_factory=dict)
    sides: list[SideSpec] = Field(min_length=2, max_length=2)

    @property
    def agent_ids(self) -> list[str]:
        """Combatant ids in scenario order: ``<side>_<index>`` (R2.5)."""
        return [f"{s.name}_{i}" for s in self.sides for i in range(len(s.combatants))]

    def all_weapons(self) -> dict[str, WeaponSpec]:
        """Equipment weapons with this scenario's additions and overrides."""
        return {**load_equipment().weapons, **self.weapons}

    def all_armour(self) -> dict[str, ArmourSpec]:
        """Equipment armour with this scenario's additions and overrides."""
        return {**load_equipment().armour, **self.armour}


# ---------------------------------------------------------------------------- errors
def _format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str] | None:
    """Field names allowed at ``loc`` inside ``model`` (for unknown-key messages)."""
    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part)
            if field is None:
                return None
            current = field.annotation
        else:
            args = getattr(current, "__args__", ())
            current = next((a for a in args if isinstance(a, type)
                            and issubclass(a, BaseModel)), args[-1] if args else None)
            if isinstance(current, type) and issubclass(current, BaseModel):
                continue
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    args = getattr(current, "__args__", ())
    for a in args:
        if isinstance(a, type) and issubclass(a, BaseModel):
            return list(a.model_fields)
    return None


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def _short_repr(value: Any) -> str:
    """A bounded ``repr`` for error messages: hostile input (a huge string, a YAML alias
    bomb) must not make the message itself huge or slow to build: nested containers are cut
    at three levels and six items, and the whole at 120 characters."""
    text = _REPR.repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


#: How many of a file's schema problems one error message lists (the rest are counted).
MAX_LISTED_PROBLEMS = 20


def _located_problem(model: type[BaseModel], error: Any) -> tuple[str, str]:
    """The field path and the problem of one pydantic error."""
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        extra = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
        problem = f"unknown key {loc[-1]!r}{extra}"
    elif kind == "missing":
        problem = "required field is missing"
    else:
        msg = error["msg"].removeprefix("Value error, ")
        problem = f"{msg} (got {_short_repr(value)})"
    return _format_loc(loc), problem


def _from_validation_error(source: str, model: type[BaseModel],
                           err: ValidationError) -> ScenarioError:
    """One ``ScenarioError`` for every problem pydantic found (``_combined_error``)."""
    return _combined_error(source, [_located_problem(model, e) for e in err.errors()])


def _combined_error(source: str, located: list[tuple[str, str]]) -> ScenarioError:
    """One ``ScenarioError`` for the ``(field path, problem)`` pairs ``located``: the first
    is its ``path`` and ``problem``; the message lists each of the others on a line of its own
    with its field path, up to ``MAX_LISTED_PROBLEMS`` in all, then how many more there
    are."""
    path, problem = located[0]
    error = ScenarioError(source, path, problem)
    error.problems = located
    if len(located) > 1:
        listed = located[:MAX_LISTED_PROBLEMS]
        lines = [f"{error.args[0]} ({len(located)} problems in all, the others below)"]
        lines += [f"  {where or '(top level)'}: {what}" for where, what in listed[1:]]
        if len(located) > len(listed):
            lines.append(f"  and {len(located) - len(listed)} more")
        error.args = ("\n".join(lines),)
    return error


# ---------------------------------------------------------------------------- loading
def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(str(path), "", f"cannot read the file: {exc.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(str(path), "", f"not valid YAML: {_yaml_problem(exc)}") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error on one line: where (line and column) and what."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or problem is None:
        return " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    return (f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
            + (f" ({context})" if context else ""))


@lru_cache(maxsize=1)
def load_equipment() -> EquipmentFile:
    """Load and validate ``configs/equipment.yaml`` (cached)."""
    path = config_dir() / "equipment.yaml"
    data = _read_yaml(path)
    try:
        return EquipmentFile.model_validate(data)
    except ValidationError as err:
        raise _from_validation_error(str(path), EquipmentFile, err) from None


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped in ``configs/scenarios/``."""
    return sorted(p.stem for p in (config_dir() / "scenarios").glob("*.yaml"))


def load_scenario(source: str | Path | Mapping[str, Any] | Scenario) -> Scenario:
    """Load a scenario by built-in name, path or dict, and validate it fully.

    Raises ``ScenarioError`` (a ``ValueError``) naming the file, the field path, the bad value
    and what is allowed.
    """
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        return validate_scenario(dict(source), "<dict>")
    if not isinstance(source, str | Path):
        raise ScenarioError("<scenario>", "", f"expected a built-in name, a path or a dict, "
                            f"got {type(source).__name__}")
    if isinstance(source, str) and source.startswith("gen:"):
        return generated_scenario(source)
    path = Path(source)
    is_name = isinstance(source, str) and "/" not in source and not source.endswith(
        (".yaml", ".yml"))
    if is_name:
        path = config_dir() / "scenarios" / f"{source}.yaml"
        if not path.is_file():
            raise ScenarioError(str(source), "", "no built-in scenario of that name; built-in: "
                                + ", ".join(builtin_scenarios()))
    data = _read_yaml(path)
    return validate_scenario(data, str(path))


def generated_scenario(name: str) -> Scenario:
    """The scenario ``gen:<distribution>@<seed>`` names (``traveller_env.generate``: drawn
    from ``configs/generators/<distribution>.yaml``), validated; cached per name.
    ``ScenarioError`` for an unknown distribution, a missing or bad seed."""
    return _generated_scenario(name, str(config_dir()))


@lru_cache(maxsize=256)
def _generated_scenario(name: str, configs: str) -> Scenario:
    from .generate import (
        GeneratorError,
        draw_scenario,
        load_distribution,
        parse_generated_name,
    )

    try:
        dist_name, seed = parse_generated_name(name)
        if seed is None:
            raise GeneratorError(name, f"name a seed: {name}@<seed> (a distribution draws one "
                                 "scenario per seed)")
        dist = load_distribution(dist_name, Path(configs))
        data = draw_scenario(dist, seed, load_equipment().model_dump())
    except GeneratorError as exc:
        raise ScenarioError(exc.source, "", exc.problem) from None
    return validate_scenario(data, name)


def validate_scenario(data: Any, source: str = "<dict>") -> Scenario:
    """Validate a parsed scenario: schema first, then cross-field rules (R8.1, R8.3)."""
    if not isinstance(data, Mapping):
        raise ScenarioError(source, "", f"a scenario is a mapping of keys, got "
                            f"{type(data).__name__}")
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as err:
        raise _from_validation_error(source, Scenario, err) from None
    _check_semantics(sc, source)
    return sc


def _check_semantics(sc: Scenario, source: str) -> None:
    """The cross-field rules; every problem found is reported in one ``ScenarioError``
    (bad weapons, armour and positions of every combatant at once)."""
    problems: list[tuple[str, str]] = []

    def fail(path: str, problem: str) -> None:
        problems.append((path, problem))

    m = sc.map
    walls_known = True  # the terrain rows match the map, so walls can be looked up
    if m.terrain is not None:
        if len(m.terrain) != m.height:
            fail("map.terrain", f"has {len(m.terrain)} rows but map.height is {m.height}")
            walls_known = False
        for y, row in enumerate(m.terrain):
            if len(row) != m.width:
                fail(f"map.terrain[{y}]", f"{row!r} has {len(row)} characters but map.width "
                     f"is {m.width}")
                walls_known = False
            bad = sorted(set(row) - set(TERRAIN_CHARS))
            if bad:
                fail(f"map.terrain[{y}]", f"unknown terrain {bad[0]!r}; allowed: '.' open, "
                     "'~' difficult, 'c' low cover, '#' wall")
    if sc.sides[0].name == sc.sides[1].name:
        fail("sides[1].name", f"{sc.sides[1].name!r} is the name of the other side too; "
             "side names must differ")
    weapons, armour = sc.all_weapons(), sc.all_armour()
    seen: dict[tuple[int, int], str] = {}
    for s, side in enumerate(sc.sides):
        for i, c in enumerate(side.combatants):
            at = f"sides[{s}].combatants[{i}]"
            if c.weapon not in weapons:
                fail(f"{at}.weapon", f"unknown weapon {c.weapon!r}; allowed: "
                     + ", ".join(sorted(weapons)))
            if c.armour not in armour:
                fail(f"{at}.armour", f"unknown armour {c.armour!r}; allowed: "
                     + ", ".join(sorted(armour)))
            x, y = c.position
            if not (0 <= x < m.width and 0 <= y < m.height):
                fail(f"{at}.position", f"{[x, y]} is off the {m.width}x{m.height} map")
                continue
            if walls_known and m.terrain is not None and m.terrain[y][x] == WALL:
                fail(f"{at}.position", f"{[x, y]} is inside a wall")
            if (x, y) in seen:
                fail(f"{at}.position", f"{[x, y]} is already taken by {seen[(x, y)]} "
                     "(one combatant per square, R8.1)")
            seen[(x, y)] = f"{side.name}_{i}"
    if problems:
        raise _combined_error(source, problems)


# ---------------------------------------------------------------------------- building
def rules_options(sc: Scenario) -> RulesOptions:
    """The rules switches of a scenario."""
    o = sc.options
    return RulesOptions(hastening=o.hastening, reactions=o.reactions,
                        comms_range_m=o.comms_range_m, max_rounds=sc.max_rounds)


def with_options(sc: Scenario, overrides: Mapping[str, Any], source: str = "options") -> Scenario:
    """A copy of ``sc`` whose ``options`` are updated by ``overrides`` (validated)."""
    if not overrides:
        return sc
    merged = {**sc.options.model_dump(), **overrides}
    try:
        options = OptionsSpec.model_validate(merged)
    except ValidationError as err:
        raise _from_validation_error(source, OptionsSpec, err) from None
    return sc.model_copy(update={"options": options})


def build_battle(scenario: str | Path | Mapping[str, Any] | Scenario, seed: int | None = None,
                 dice: Dice | None = None) -> Battle:
    """Create a battle from a scenario. ``dice`` (e.g. ``ScriptedDice``) wins over ``seed``."""
    sc = load_scenario(scenario)
    weapons, armour = sc.all_weapons(), sc.all_armour()
    combatants: list[Combatant] = []
    for s, side in enumerate(sc.sides):
        for i, spec in enumerate(side.combatants):
            w = weapons[spec.weapon].to_weapon(spec.weapon)
            prepared = side.prepared if spec.prepared is None else spec.prepared
            chars = spec.characteristics.model_dump()
            combatants.append(Combatant(
                id=f"{side.name}_{i}", name=spec.name, side=s, order=len(combatants),
                chars=dict(chars), max_chars=dict(chars), skills=dict(spec.skills), weapon=w,
                armour=Armour(spec.armour, armour[spec.armour].protection),
                pos=tuple(spec.position), stance=spec.stance,
                drawn=spec.drawn or prepared or not w.needs_draw,
                ammo=w.magazine, spares=w.spare_magazines, radio=spec.radio, prepared=prepared,
                movement_m=spec.movement,
            ))
    grid = _grid(sc.map.width, sc.map.height, tuple(sc.map.terrain or ()))
    return Battle(combatants, [s.name for s in sc.sides], grid, rules_options(sc),
                  dice if dice is not None else Dice(seed))


@lru_cache(maxsize=64)
def _grid(width: int, height: int, terrain: tuple[str, ...]) -> GridMap:
    # Maps are immutable, so battles of one scenario share one (and its LOS cache).
    return GridMap(width, height, list(terrain) if terrain else None)
