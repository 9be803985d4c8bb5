"""Leadership (R4.2, R7): the check's DMs, who may receive a bonus, and the pools of bonuses
and penalties a check leaves.

``LeadershipPools`` is the battle's record of pools not yet handed out: a bonus pool belongs
to its leader (R7.1), a penalty pool to the leader's enemies (R7.4); both lapse at the leader's
next turn or when it leaves the fight (R7.5).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .attack import HASTE_DM
from .checks import skill_dm

__all__ = ["LEADERSHIP_SKILL", "LeadershipPools", "Pool", "can_communicate",
           "leadership_dms"]

LEADERSHIP_SKILL = "leadership"
_SOCIAL = ("INT", "EDU", "SOC")  # the best of these DMs; ties go to the first


def leadership_dms(leader: Any, *, hasty: bool | None = None) -> dict[str, int]:
    """R4.2: Leadership skill (or -3 unskilled) + the best of INT, EDU and SOC DM, and the
    haste DM (R3.5). Held bonuses and penalties come on top (``attack.held_dms``)."""
    dms = {"skill": skill_dm(leader.skills, LEADERSHIP_SKILL)}
    best = max(_SOCIAL, key=lambda k: leader.dm(k))
    dms[best] = leader.dm(best)
    if leader.hasty if hasty is None else hasty:
        dms["haste"] = HASTE_DM
    return dms


def can_communicate(a: Any, b: Any, grid: Any, comms_range_m: float) -> bool:
    """R7.2: within ``comms_range_m`` of each other, or both carrying a radio."""
    if a.radio and b.radio:
        return True
    return grid.distance_m(a.pos, b.pos) <= comms_range_m


@dataclass(slots=True)
class Pool:
    """Bonuses (for the leader to hand out) or penalties (for the leader's enemies)."""

    leader: str
    kind: str  # "bonus" | "penalty"
    count: int


class LeadershipPools:
    """The pools of one battle. ``side_of`` maps a combatant id to its side index."""

    __slots__ = ("_pools", "_side_of", "entries")

    def __init__(self, side_of: dict[str, int]) -> None:
        self._pools: list[Pool] = []
        #: The pools as a list (the same object): ``if pools.entries`` is the cheap test.
        self.entries = self._pools
        self._side_of = side_of

    def __bool__(self) -> bool:
        return bool(self._pools)

    def __iter__(self) -> Iterator[Pool]:
        return iter(list(self._pools))

    def clone(self) -> LeadershipPools:
        """An independent copy."""
        twin = LeadershipPools(self._side_of)
        twin._pools[:] = [Pool(p.leader, p.kind, p.count) for p in self._pools]
        return twin

    def add(self, leader: str, kind: str, count: int) -> None:
        """Record a check's bonuses or penalties (nothing when ``count`` is 0)."""
        if count:
            self._pools.append(Pool(leader, kind, count))

    def bonus_pool(self, leader: str) -> Pool | None:
        """The leader's bonuses to hand out, if any."""
        return next((p for p in self._pools if p.kind == "bonus" and p.leader == leader), None)

    def penalty_pool(self, against_side: int) -> Pool | None:
        """Penalties that may be imposed on ``against_side`` (made by one of its leaders)."""
        return next((p for p in self._pools if p.kind == "penalty"
                     and self._side_of[p.leader] == against_side), None)

    def penalised_sides(self) -> set[int]:
        """Sides that some penalty pool may be imposed on."""
        return {self._side_of[p.leader] for p in self._pools if p.kind == "penalty"}

    def held(self, cid: str) -> tuple[int, int]:
        """``(bonuses cid may hand out, penalties cid may impose)``."""
        side = self._side_of[cid]
        bonuses = sum(p.count for p in self._pools if p.kind == "bonus" and p.leader == cid)
        penalties = sum(p.count for p in self._pools
                        if p.kind == "penalty" and self._side_of[p.leader] != side)
        return bonuses, penalties

    def take_one(self, pool: Pool) -> None:
        """Hand out one bonus or penalty of ``pool``."""
        pool.count -= 1
        if pool.count == 0:
            self._pools.remove(pool)

    def of_leader(self, leader: str) -> list[Pool]:
        """The pools a leader made (they lapse together, R7.5)."""
        return [p for p in self._pools if p.leader == leader]

    def remove(self, pool: Pool) -> None:
        """Drop a lapsed pool."""
        self._pools.remove(pool)
