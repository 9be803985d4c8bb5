"""The hypothesis strategy of random *valid* scenarios (1-8 combatants a side, maps of 4-30
squares with walls, cover and difficult ground, shipped and scenario-local weapons and armour,
random characteristics, skills, stances and options), shared by the fuzz tests
(tests/rules/test_fuzz.py), the differential tests of the core (tests/core/) and
tests/diff_backends.py."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

from traveller_env.rules.checks import SPECIALISED_SKILLS
from traveller_env.scenario import load_equipment

__all__ = ["CHARS", "SHIPPED_ARMOUR", "SHIPPED_WEAPONS", "SIDE_NAMES", "SKILLS", "local_weapons",
           "valid_scenarios"]

EQUIPMENT = load_equipment()
SHIPPED_WEAPONS = sorted(EQUIPMENT.weapons)
SHIPPED_ARMOUR = sorted(EQUIPMENT.armour)
SKILLS = ("gun_combat.slug", "gun_combat.energy", "gun_combat", "melee.blade", "melee.bludgeon",
          "melee.unarmed", "melee", "heavy_weapons.portable", "athletics.dexterity",
          "leadership", "tactics.military", "tactics.naval", "tactics")
CHARS = ("STR", "DEX", "END", "INT", "EDU", "SOC")
SIDE_NAMES = ("blue", "red", "Raiders", "guards-2", "x9", "B")


@st.composite
def local_weapons(draw) -> dict[str, dict]:
    """Scenario-local weapons (new names, and overrides of shipped ones)."""
    out = {}
    for name in draw(st.lists(st.sampled_from(["zapper", "club", "sling", "autorifle"]),
                              max_size=2, unique=True)):
        count, mod = draw(st.integers(1, 6)), draw(st.integers(-3, 3))
        spec: dict[str, Any] = {"skill": draw(st.sampled_from(SKILLS)),
                                "damage": f"{count}D{mod:+d}" if mod else f"{count}D"}
        if draw(st.booleans()):
            spec["range"] = "melee"
        else:
            spec["range"] = draw(st.sampled_from([1.5, 5, 10, 50, 120, 300]))
            spec["magazine"] = draw(st.integers(1, 30))
            spec["spare_magazines"] = draw(st.integers(0, 3))
        spec.update(draw(st.fixed_dictionaries({}, optional={
            "str_requirement": st.integers(0, 15), "draw_actions": st.integers(1, 3),
            "reload_actions": st.integers(1, 3)})))
        out[name] = spec
    return out


@st.composite
def valid_scenarios(draw, max_side: int = 8, max_map: int = 30, max_char: int = 15) -> dict:
    """A random scenario that follows the schema (docs/scenarios.md, R8.1, R8.3);
    ``max_char`` caps STR, DEX and END (lower: quicker knockouts)."""
    width, height = draw(st.integers(4, max_map)), draw(st.integers(4, max_map))
    sizes = [draw(st.integers(1, max_side)), draw(st.integers(1, max_side))]
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    grid = None
    if draw(st.booleans()):
        weights = draw(st.sampled_from([(8, 1, 1, 1), (4, 2, 2, 2), (2, 1, 1, 3), (1, 0, 0, 0)]))
        grid = [[rnd.choices(".~c#", weights)[0] for _ in range(width)] for _ in range(height)]
    free = [(x, y) for y in range(height) for x in range(width)
            if grid is None or grid[y][x] != "#"]
    walls = [(x, y) for y in range(height) for x in range(width)
             if grid is not None and grid[y][x] == "#"]
    for x, y in walls[:max(0, sum(sizes) - len(free))]:  # make room for everyone
        grid[y][x] = "."
        free.append((x, y))
    positions = rnd.sample(free, sum(sizes))
    weapons = draw(local_weapons())
    armour = draw(st.dictionaries(st.sampled_from(["plate", "jack"]),
                                  st.builds(lambda p: {"protection": p}, st.integers(0, 30)),
                                  max_size=2))
    weapon_names = sorted(set(SHIPPED_WEAPONS) | set(weapons))
    armour_names = sorted(set(SHIPPED_ARMOUR) | set(armour))
    names = draw(st.lists(st.sampled_from(SIDE_NAMES), min_size=2, max_size=2, unique=True))
    sides, k = [], 0
    for s in range(2):
        combatants = []
        for _ in range(sizes[s]):
            c: dict[str, Any] = {
                "name": draw(st.sampled_from(["a", "rifleman", "Sgt. Kell"])),
                "characteristics": {ch: draw(st.integers(1, max_char if ch in
                                                          ("STR", "DEX", "END") else 15))
                                    for ch in CHARS},
                "skills": {k: 0 if k in SPECIALISED_SKILLS else v  # R1.4: base names at 0
                           for k, v in draw(st.dictionaries(st.sampled_from(SKILLS),
                                                            st.integers(0, 6),
                                                            max_size=3)).items()},
                "weapon": draw(st.sampled_from(weapon_names)),
                "position": list(positions[k]),
            }
            k += 1
            c.update(draw(st.fixed_dictionaries({}, optional={
                "armour": st.sampled_from(armour_names),
                "stance": st.sampled_from(["stand", "crouch", "prone"]),
                "drawn": st.booleans(), "radio": st.booleans(), "prepared": st.booleans(),
                "movement": st.sampled_from([1.5, 3, 6, 9, 12])})))
            combatants.append(c)
        side: dict[str, Any] = {"name": names[s], "combatants": combatants}
        if draw(st.booleans()):
            side["prepared"] = draw(st.booleans())
        sides.append(side)
    sc: dict[str, Any] = {
        "name": "fuzz", "map": {"width": width, "height": height},
        "max_rounds": draw(st.integers(1, 10)),
        "options": draw(st.fixed_dictionaries({}, optional={
            "hastening": st.booleans(), "reactions": st.booleans(),
            "comms_range_m": st.sampled_from([0, 3, 30, 200]),
            "illegal_action": st.sampled_from(["raise", "penalize"])})),
        "rewards": draw(st.fixed_dictionaries({}, optional={
            k: st.floats(-5, 5, allow_nan=False) for k in
            ("win", "loss", "draw", "damage_dealt", "damage_taken", "per_round")} | {
            "shared": st.booleans()})),
        "sides": sides,
    }
    if grid is not None:
        sc["map"]["terrain"] = ["".join(row) for row in grid]
    if weapons:
        sc["weapons"] = weapons
    if armour:
        sc["armour"] = armour
    return sc
