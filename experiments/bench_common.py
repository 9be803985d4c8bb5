"""What several benchmarks share: the generated big battle."""

from __future__ import annotations


def big_scenario(n: int = 16) -> dict:
    """An n-vs-n open-field firefight (rifles), generated."""
    width, height = 60, 2 * n + 2

    def side(name: str, x: int) -> dict:
        return {"name": name, "combatants": [
            {"name": f"{name}{i}", "characteristics": dict.fromkeys(
                ("STR", "DEX", "END", "INT", "EDU", "SOC"), 7),
             "skills": {"gun_combat.slug": 1}, "weapon": "autorifle", "armour": "jack",
             "position": [x, 1 + 2 * i], "drawn": True} for i in range(n)]}

    terrain = ["." * width] * height
    return {"name": f"battle{n}v{n}", "map": {"width": width, "height": height,
                                              "terrain": terrain},
            "max_rounds": 20, "sides": [side("blue", 2), side("red", width - 3)]}
