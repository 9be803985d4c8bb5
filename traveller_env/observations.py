"""Observation and global-state vectors (documented in ``TravellerEnv``'s docstring).

Every agent of a scenario gets a vector of the same length: its own block, the phase, then one
block per *slot*. Slots are relative to the observer: first its allies (scenario order, itself
excluded), then its enemies (scenario order), each padded to the largest side's size so that
one policy can play every seat. ``ObservationBuilder.slots(agent)`` names who sits where.
"""

from __future__ import annotations

import numpy as np

from .rules.actions import STANCES
from .rules.battle import Battle, range_dm

__all__ = ["PHASES", "SELF_FIELDS", "SLOT_FIELDS", "ObservationBuilder"]

PHASES = ("haste", "turn", "reaction")
INIT_SCALE = 30.0
POOL_SCALE = 10.0

SELF_FIELDS = (
    "x", "y",  # position / map size
    "wound_STR", "wound_DEX", "wound_END",  # damage taken / starting value
    "stance_stand", "stance_crouch", "stance_prone",
    "drawn", "melee_weapon", "ammo", "spares",  # ammo / magazine; spares / starting spares
    "aim_dm",  # / 6 (the aim target is flagged in its slot's "aimed")
    "minors_used", "significant_used",  # / 3 ; 0 or 1
    "significant_available", "minors_available",  # 0 or 1 ; / 3
    "hasty", "holds_bonus", "holds_penalty",
    "bonuses_to_hand", "penalties_to_impose",  # / 10
    "initiative",  # current round's Initiative / 30
    "ready_progress",  # draw/reload progress / actions needed
    "round",  # round / max_rounds
    "phase_haste", "phase_turn", "phase_reaction",
    "pending_attack_melee",  # in a reaction: the attack is a melee attack
)

SLOT_FIELDS = (
    "present",  # 1 when a combatant sits in this slot
    "in_play",
    "dx", "dy",  # its position minus mine / map size
    "distance",  # metres / (4x my weapon's range), capped at 1; melee weapons: / 6 m
    "band_short", "band_medium", "band_long", "band_extreme", "band_beyond",  # R5.1 bands
    "adjacent",
    "line_of_sight",
    "in_cover",  # in cover from me (R5.3)
    "stance_stand", "stance_crouch", "stance_prone",
    "wound_STR", "wound_DEX", "wound_END",
    "drawn", "melee_weapon",
    "aimed",  # I am aiming at it
    "holds_bonus", "holds_penalty",
    "acted",  # has begun its turn this round
    "hasty",
    "initiative",  # / 30
    "attacking_me",  # its attack on me awaits my reaction
)

_S = {name: i for i, name in enumerate(SELF_FIELDS)}
_F = {name: i for i, name in enumerate(SLOT_FIELDS)}
_BANDS = {1: "band_short", 0: "band_medium", -2: "band_long", -4: "band_extreme",
          None: "band_beyond"}

STATE_FIELDS = ("side", "in_play", "x", "y", "wound_STR", "wound_DEX", "wound_END",
                "stance_stand", "stance_crouch", "stance_prone", "drawn", "ammo", "aim_dm",
                "initiative", "hasty", "holds_bonus", "holds_penalty", "acted", "deciding")


class ObservationBuilder:
    """Builds per-agent observation vectors and the global state for one scenario."""

    def __init__(self, battle: Battle) -> None:
        self.ids = [c.id for c in battle.combatants]
        sides = [[c.id for c in battle.combatants if c.side == s] for s in (0, 1)]
        self.side_of = {c.id: c.side for c in battle.combatants}
        biggest = max(len(s) for s in sides)
        self.n_ally_slots, self.n_enemy_slots = biggest - 1, biggest
        self.n_slots = self.n_ally_slots + self.n_enemy_slots
        self._slots = {}
        for cid in self.ids:
            mine, theirs = sides[self.side_of[cid]], sides[1 - self.side_of[cid]]
            allies = [a for a in mine if a != cid]
            self._slots[cid] = (allies + [None] * (self.n_ally_slots - len(allies))
                                + theirs + [None] * (self.n_enemy_slots - len(theirs)))
        self.labels = [f"self.{f}" for f in SELF_FIELDS]
        for k in range(self.n_slots):
            name = f"ally{k}" if k < self.n_ally_slots else f"enemy{k - self.n_ally_slots}"
            self.labels += [f"{name}.{f}" for f in SLOT_FIELDS]
        self.size = len(self.labels)
        self.state_labels = [f"{cid}.{f}" for cid in self.ids for f in STATE_FIELDS]
        self.state_labels += [f"phase_{p}" for p in PHASES] + ["round"]
        self.state_size = len(self.state_labels)
        self._init_spares = {c.id: max(1, c.spares) for c in battle.combatants}

    def slots(self, agent: str) -> list[str | None]:
        """Who sits in each slot of ``agent``'s observation (``None``: an empty slot)."""
        return list(self._slots[agent])

    def observe(self, battle: Battle, agent: str, out: np.ndarray | None = None) -> np.ndarray:
        """The observation vector of ``agent`` (float32, every entry in [-1, 1])."""
        if out is None:
            out = np.zeros(self.size, dtype=np.float32)
        else:
            out[:] = 0.0
        me = battle.by_id[agent]
        W, H = battle.grid.width, battle.grid.height
        v = out
        v[_S["x"]], v[_S["y"]] = me.pos[0] / W, me.pos[1] / H
        for k in ("STR", "DEX", "END"):
            v[_S["wound_" + k]] = 1.0 - me.chars[k] / me.max_chars[k]
        v[_S["stance_" + me.stance]] = 1.0
        w = me.weapon
        v[_S["drawn"]] = float(me.drawn)
        v[_S["melee_weapon"]] = float(w.is_melee)
        if not w.is_melee:
            v[_S["ammo"]] = me.ammo / w.magazine
            v[_S["spares"]] = me.spares / self._init_spares[agent]
        v[_S["aim_dm"]] = me.aim_dm / 6.0
        v[_S["minors_used"]] = me.minors / 3.0
        v[_S["significant_used"]] = float(me.significant)
        deciding_turn = battle.phase == "turn" and battle.current_agent == agent
        if deciding_turn:
            sig, minors = battle.budget_left(agent)
            v[_S["significant_available"]] = float(sig)
            v[_S["minors_available"]] = minors / 3.0
        v[_S["hasty"]] = float(me.hasty)
        v[_S["holds_bonus"]] = float(me.bonus)
        v[_S["holds_penalty"]] = float(me.penalty)
        bonuses, penalties = battle.held_pools(agent)
        v[_S["bonuses_to_hand"]] = bonuses / POOL_SCALE
        v[_S["penalties_to_impose"]] = penalties / POOL_SCALE
        v[_S["initiative"]] = me.current_initiative / INIT_SCALE
        if me.ready_kind:
            needed = w.draw_actions if me.ready_kind == "draw" else w.reload_actions
            v[_S["ready_progress"]] = me.ready_count / needed
        v[_S["round"]] = battle.round / battle.options.max_rounds
        if battle.phase in PHASES:
            v[_S["phase_" + battle.phase]] = 1.0
        pending = battle.pending_attack
        if pending is not None and pending.target == agent:
            v[_S["pending_attack_melee"]] = float(pending.melee)
        base = len(SELF_FIELDS)
        stride = len(SLOT_FIELDS)
        grid = battle.grid
        for k, oid in enumerate(self._slots[agent]):
            if oid is None:
                continue
            o = battle.by_id[oid]
            s = base + k * stride
            v[s + _F["present"]] = 1.0
            if o.out:
                continue
            v[s + _F["in_play"]] = 1.0
            v[s + _F["dx"]] = (o.pos[0] - me.pos[0]) / W
            v[s + _F["dy"]] = (o.pos[1] - me.pos[1]) / H
            dist = grid.distance_m(me.pos, o.pos)
            if w.is_melee:
                v[s + _F["distance"]] = min(1.0, dist / 6.0)
            else:
                v[s + _F["distance"]] = min(1.0, dist / (4 * w.range_m))
                v[s + _F[_BANDS[range_dm(dist, w.range_m)]]] = 1.0
            adjacent = max(abs(o.pos[0] - me.pos[0]), abs(o.pos[1] - me.pos[1])) <= 1
            v[s + _F["adjacent"]] = float(adjacent)
            v[s + _F["line_of_sight"]] = float(grid.line_of_sight(me.pos, o.pos))
            v[s + _F["in_cover"]] = float(o.stance != "stand"
                                          and grid.cover_between(me.pos, o.pos))
            v[s + _F["stance_" + o.stance]] = 1.0
            for ch in ("STR", "DEX", "END"):
                v[s + _F["wound_" + ch]] = 1.0 - o.chars[ch] / o.max_chars[ch]
            v[s + _F["drawn"]] = float(o.drawn)
            v[s + _F["melee_weapon"]] = float(o.weapon.is_melee)
            v[s + _F["aimed"]] = float(me.aim_target == oid)
            v[s + _F["holds_bonus"]] = float(o.bonus)
            v[s + _F["holds_penalty"]] = float(o.penalty)
            v[s + _F["acted"]] = float(o.turn_begun)
            v[s + _F["hasty"]] = float(o.hasty)
            v[s + _F["initiative"]] = o.current_initiative / INIT_SCALE
            v[s + _F["attacking_me"]] = float(pending is not None and pending.target == agent
                                              and pending.attacker == oid)
        # Every entry is scaled to [-1, 1]; clipping only bites on extreme Initiative/pools.
        np.clip(out, -1.0, 1.0, out=out)
        return out

    def state(self, battle: Battle) -> np.ndarray:
        """The global state (every combatant's block, the phase and the round), float32."""
        out = np.zeros(self.state_size, dtype=np.float32)
        W, H = battle.grid.width, battle.grid.height
        n = len(STATE_FIELDS)
        deciding = battle.current_agent
        for i, c in enumerate(battle.combatants):
            s = i * n
            row = out[s:s + n]
            row[0] = float(c.side)
            row[1] = float(not c.out)
            row[2], row[3] = c.pos[0] / W, c.pos[1] / H
            for j, ch in enumerate(("STR", "DEX", "END")):
                row[4 + j] = 1.0 - c.chars[ch] / c.max_chars[ch]
            row[7 + STANCES.index(c.stance)] = 1.0
            row[10] = float(c.drawn)
            row[11] = c.ammo / c.weapon.magazine if c.weapon.magazine else 0.0
            row[12] = c.aim_dm / 6.0
            row[13] = c.current_initiative / INIT_SCALE
            row[14], row[15], row[16] = float(c.hasty), float(c.bonus), float(c.penalty)
            row[17] = float(c.turn_begun)
            row[18] = float(c.id == deciding)
        tail = len(self.ids) * n
        if battle.phase in PHASES:
            out[tail + PHASES.index(battle.phase)] = 1.0
        out[tail + 3] = battle.round / battle.options.max_rounds
        np.clip(out, -1.0, 1.0, out=out)
        return out
