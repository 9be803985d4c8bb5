"""Observation and global-state vectors (documented in ``TravellerEnv``'s docstring).

Every agent of a scenario gets a vector of the same length: its own block, the phase, then one
block per *slot*. Slots are relative to the observer: first its allies (scenario order, itself
excluded), then its enemies (scenario order), each padded to the largest side's size so that
one policy can play every seat. ``ObservationBuilder.slots(agent)`` names who sits where.
"""

from __future__ import annotations

import copy
import functools
import struct

import numpy as np

from traveller_env.rules.vocabulary import STANCES

from .layout import Layout
from .rules.attack import hit_probability, range_dm
from .rules.battle import Battle
from .rules.checks import skill_dm
from .rules.grid import DIRECTIONS, GridMap
from .rules.leadership import leadership_dms

__all__ = ["AIM_VIEW_FIELDS", "ATTACK_SQUARE_FIELDS", "ATTACK_VIEW_FIELDS", "MOVE_VIEW_FIELDS",
           "PHASES", "SELF_FIELDS", "SLOT_FIELDS", "VIEWS", "ObservationBuilder",
           "attack_square_view", "move_view", "move_view_labels", "move_view_square_names",
           "move_view_squares", "view_labels"]

PHASES = ("haste", "turn", "reaction")
#: The optional views, in the order the observation vector appends them; each is a keyword of
#: ``ObservationBuilder`` and ``TravellerEnv``.
VIEWS = ("move_view", "aim_view", "attack_view")
_frombuffer, _FLOAT32 = np.frombuffer, np.float32
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
    "weapon_skill_dm",  # the DM its weapon skill gives (level, or -3 unskilled) / 6
    "leadership_dm",  # DM of its Leadership check (skill + best of INT/EDU/SOC) / 10
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

#: The optional move view (``move_view=True``): for the observer's own square and the end
#: square of each move action (catalogue order: direction, then squares), three shares of the
#: enemies in play (0 when none is, or when the square is off the map or a wall).
MOVE_VIEW_FIELDS = (
    "seen_by",       # enemies with line of sight to the square (R8.1): who could shoot me there
    "covered_from",  # of those, the ones whose line passes low cover next to the square: in
                     # cover from them there when crouched or prone (R5.3, R8.1)
    "clear_shots",   # enemies I would see from there that are not in cover from it
)

#: The optional aim view (``aim_view=True``), per slot after the move view: who is aiming at
#: the observer. In the tabletop an aim is there to be seen, and scripted policies read it
#: (``tactician`` weighs each enemy's held aim on it); the plain vector only flags the
#: observer's own aim (its slot's ``aimed``).
AIM_VIEW_FIELDS = (
    "on_me",  # the aim DM it holds on me (R4.3, R5.2) / 6; 0 when it aims elsewhere or not
)

#: The optional attack view (``attack_view=True``), after the aim view: exact hit chances
#: (``rules.attack.hit_probability``: 2D + every DM of the attack >= 8, before reactions; 0 out
#: of reach). First per slot, then for each square of ``move_view_squares``. A scripted policy
#: like ``tactician`` reads these odds off the rules; a network would otherwise have to learn
#: the 2D6 curve over range band, cover, stance, aim, haste and skill from noisy outcomes.
ATTACK_VIEW_FIELDS = (
    "hit",      # my attack on it now: where we both stand, my aim on it, my haste, held DMs
    "hits_me",  # its attack on me now, likewise from its side
)
ATTACK_SQUARE_FIELDS = (
    "best_hit",  # the best chance of an unaimed attack (a move breaks an aim, R4.3) from
                 # there on an enemy in play, as I stand (stance) now
    "threat",    # the mean over the enemies in play of their chance to hit me there, in my
                 # stance now, with the aims they hold on me
)

# Position of each R5.1 band DM among the slot's five band flags (None: beyond 4x Range).
_BAND_INDEX = {1: 0, 0: 1, -2: 2, -4: 3, None: 4}

_PHASE_FLAGS = {ph: tuple(float(ph == other) for other in PHASES) for ph in PHASES}
_NO_PHASE = (0.0, 0.0, 0.0)
_STANCE_FLAGS = {st: tuple(float(st == other) for other in STANCES) for st in STANCES}


def _offset_geometry(dx: int, dy: int, width: int, height: int, weapon) -> list[float]:
    """A slot's leading entries for another combatant in play ``(dx, dy)`` squares away:
    present, in play, relative position, distance, range-band flags and adjacency for the
    observer's weapon. They depend on the offset only, so they are cached per (offset,
    weapon); line of sight and cover come from the map's own caches."""
    dist = GridMap.distance_m((0, 0), (dx, dy))
    bands = [0.0] * 5
    if weapon.is_melee:
        d = min(1.0, dist / 6.0)
    else:
        d = min(1.0, dist / (4 * weapon.range_m))
        bands[_BAND_INDEX[range_dm(dist, weapon.range_m)]] = 1.0
    return [1.0, 1.0, dx / width, dy / height, d, *bands, float(max(abs(dx), abs(dy)) <= 1)]


def _public_block(c) -> tuple[list, list]:
    """The slot entries that depend on the other combatant alone (the same for every
    observer), in two runs around the observer's ``aimed`` flag."""
    ch, mx = c.chars, c.max_chars
    return ([*_STANCE_FLAGS[c.stance], 1.0 - ch["STR"] / mx["STR"], 1.0 - ch["DEX"] / mx["DEX"],
             1.0 - ch["END"] / mx["END"], float(c.drawn), float(c.weapon.is_melee)],
            [float(c.bonus), float(c.penalty), float(c.turn_begun), float(c.hasty),
             _unit(c.current_initiative / INIT_SCALE)])


def _unit(x: float) -> float:
    """Clamp to [-1, 1]: for the few entries whose scale can be exceeded (Initiative,
    leadership pools, skill DMs); every other entry lies in [-1, 1] by construction."""
    return -1.0 if x < -1.0 else 1.0 if x > 1.0 else x


STATE_FIELDS = ("side", "in_play", "x", "y", "wound_STR", "wound_DEX", "wound_END",
                "stance_stand", "stance_crouch", "stance_prone", "drawn", "ammo", "aim_dm",
                "initiative", "hasty", "holds_bonus", "holds_penalty", "acted", "deciding")


def move_view_squares(battle: Battle, agent: str,
                      max_move_squares: int | None = None) -> list[tuple[int, int]]:
    """The squares the move view describes: ``agent``'s own, then the end square of each
    move action in catalogue order (``DIRECTIONS`` x 1..``max_move_squares``: the battle's
    own unless given, as a ``Layout`` does), whether or not that move is legal now (the action
    mask says that)."""
    x, y = battle.by_id[agent].pos
    n = battle.max_move_squares if max_move_squares is None else max_move_squares
    return [(x, y)] + [(x + dx * k, y + dy * k) for dx, dy in DIRECTIONS.values()
                       for k in range(1, n + 1)]


def move_view_square_names(max_move_squares: int) -> list[str]:
    """The names of ``move_view_squares`` in labels: ``here``, ``N:1``, ... ``NW:max``."""
    return ["here"] + [f"{d}:{k}" for d in DIRECTIONS for k in range(1, max_move_squares + 1)]


def move_view_labels(max_move_squares: int) -> list[str]:
    """The labels of the move view's entries (``move.here.seen_by``, ``move.N:1.seen_by``, ...)."""
    return [f"move.{n}.{f}" for n in move_view_square_names(max_move_squares)
            for f in MOVE_VIEW_FIELDS]


def slot_names(n_ally_slots: int, n_enemy_slots: int) -> list[str]:
    """The slots' names in observation order (``ally0``..., then ``enemy0``...)."""
    return ([f"ally{k}" for k in range(n_ally_slots)]
            + [f"enemy{k}" for k in range(n_enemy_slots)])


@functools.lru_cache(maxsize=64)
def observation_labels(n_ally_slots: int, n_enemy_slots: int, views: tuple[str, ...],
                       max_move_squares: int) -> tuple[str, ...]:
    """The observation's labels for these slots and views, built once per shape: every env of
    a scenario set under one layout shares them (a set of 1,000 maps held 1,000 copies)."""
    slots = slot_names(n_ally_slots, n_enemy_slots)
    labels = [f"self.{f}" for f in SELF_FIELDS]
    for name in slots:
        labels += [f"{name}.{f}" for f in SLOT_FIELDS]
    for view in views:
        labels += view_labels(view, slots, max_move_squares)
    return tuple(labels)


@functools.lru_cache(maxsize=64)
def state_labels(state_names: tuple[str, ...]) -> tuple[str, ...]:
    """The global state's labels for these state blocks (a combatant's id or an empty
    block's name each), built once per list of names."""
    labels = [f"{name}.{f}" for name in state_names for f in STATE_FIELDS]
    return tuple(labels + [f"phase_{p}" for p in PHASES] + ["round"])


def view_labels(view: str, slot_names: list[str], max_move_squares: int) -> list[str]:
    """The labels of ``view``'s entries (one of ``VIEWS``) for an observer with these slots
    (``ally0``, ..., ``enemy0``, ...) and moves of up to ``max_move_squares`` squares."""
    if view == "move_view":
        return move_view_labels(max_move_squares)
    if view == "aim_view":
        return [f"aim.{n}.{f}" for n in slot_names for f in AIM_VIEW_FIELDS]
    if view == "attack_view":
        squares = move_view_square_names(max_move_squares)
        return ([f"attack.{n}.{f}" for n in slot_names for f in ATTACK_VIEW_FIELDS]
                + [f"attack.{n}.{f}" for n in squares for f in ATTACK_SQUARE_FIELDS])
    raise ValueError(f"view {view!r}: one of {', '.join(VIEWS)}")


def move_view(battle: Battle, agent: str, max_move_squares: int | None = None) -> list[float]:
    """The move view of ``agent`` (``MOVE_VIEW_FIELDS`` for each of ``move_view_squares``): what
    the map offers at each square it could end a move on, asked of the map's own line-of-sight
    and cover rules (``GridMap.line_of_sight``, ``GridMap.cover_between``)."""
    me = battle.by_id[agent]
    grid = battle.grid
    enemies = [c for c in battle.combatants if c.side != me.side and not c.out]
    out: list[float] = []
    squares = move_view_squares(battle, agent, max_move_squares)
    if not enemies:
        return [0.0] * (len(MOVE_VIEW_FIELDS) * len(squares))
    n = len(enemies)
    los, cover = grid.line_of_sight, grid.cover_between
    for sq in squares:
        if not grid.passable(sq):
            out += (0.0, 0.0, 0.0)
            continue
        seen = covered = clear = 0
        for e in enemies:
            if los(e.pos, sq):
                seen += 1
                if cover(e.pos, sq):
                    covered += 1
                if not (e.stance != "stand" and cover(sq, e.pos)):
                    clear += 1
        out += (seen / n, covered / n, clear / n)
    return out


def attack_square_view(battle: Battle, agent: str,
                       max_move_squares: int | None = None) -> list[float]:
    """The per-square part of ``agent``'s attack view (``ATTACK_SQUARE_FIELDS`` for each of
    ``move_view_squares``; zeros for a square off the map or a wall, and when no enemy is in
    play), asked of ``rules.attack.hit_probability``."""
    me = battle.by_id[agent]
    grid = battle.grid
    enemies = [c for c in battle.combatants if c.side != me.side and not c.out]
    squares = move_view_squares(battle, agent, max_move_squares)
    if not enemies:
        return [0.0] * (len(ATTACK_SQUARE_FIELDS) * len(squares))
    n = len(enemies)
    out: list[float] = []
    for sq in squares:
        if not grid.passable(sq):
            out += (0.0, 0.0)
            continue
        best = 0.0
        threat = 0.0
        for e in enemies:
            best = max(best, hit_probability(me, e, grid, apos=sq, aim=0))
            threat += hit_probability(e, me, grid, tpos=sq)
        out += (best, threat / n)
    return out


class ObservationBuilder:
    """Builds per-agent observation vectors and the global state for one scenario."""

    def __init__(self, battle: Battle, move_view: bool = False, aim_view: bool = False,
                 attack_view: bool = False, layout: Layout | None = None) -> None:
        self.move_view = bool(move_view)
        self.aim_view = bool(aim_view)
        self.attack_view = bool(attack_view)
        #: The fixed layout (``traveller_env.layout``), or ``None``: the scenario's own.
        self.layout = layout
        self.ids = [c.id for c in battle.combatants]
        sides = [[c.id for c in battle.combatants if c.side == s] for s in (0, 1)]
        self.side_of = {c.id: c.side for c in battle.combatants}
        state_names: list[str] = []
        if layout is None:
            biggest = max(len(s) for s in sides)
            self.n_ally_slots, self.n_enemy_slots = biggest - 1, biggest
            #: The squares per direction of the move and attack views.
            self.max_move_squares: int = battle.max_move_squares
            self._map_size: int | None = None  # None: divide by the battle's own map size
            self._state_seats: list[int | None] = list(range(len(self.ids)))
            state_names = list(self.ids)
        else:
            layout.check(battle)
            self.n_ally_slots, self.n_enemy_slots = layout.allies, layout.enemies
            self.max_move_squares = layout.max_move_squares
            self._map_size = layout.map_size
            self._state_seats = []
            for s in (0, 1):
                mine = [i for i, c in enumerate(battle.combatants) if c.side == s]
                pad = layout.side_limit - len(mine)
                self._state_seats += mine + [None] * pad
                state_names += ([self.ids[i] for i in mine]
                                + [f"side{s}.empty{k}" for k in range(pad)])
        self.n_slots = self.n_ally_slots + self.n_enemy_slots
        self._slots = {}
        for cid in self.ids:
            mine, theirs = sides[self.side_of[cid]], sides[1 - self.side_of[cid]]
            allies = [a for a in mine if a != cid]
            self._slots[cid] = (allies + [None] * (self.n_ally_slots - len(allies))
                                + theirs + [None] * (self.n_enemy_slots - len(theirs)))
        views = tuple(view for view in VIEWS if getattr(self, view))
        self.labels = observation_labels(self.n_ally_slots, self.n_enemy_slots, views,
                                         self.max_move_squares)
        self.size = len(self.labels)
        # Native float32 (one type, so no padding): a plain cast per entry, the same bytes as
        # the standard size's rounding for values in [-1, 1], and cheaper.
        packer = struct.Struct(f"@{self.size}f")
        self._pack_into, self._pack_size = packer.pack_into, packer.size
        self.state_labels = state_labels(tuple(state_names))
        self.state_size = len(self.state_labels)
        self._init_spares = {c.id: max(1, c.spares) for c in battle.combatants}
        self._skill_dms = {
            c.id: (_unit(skill_dm(c.skills, c.weapon.skill) / 6.0),
                   _unit(sum(leadership_dms(c, hasty=False).values()) / 10.0))
            for c in battle.combatants}  # skills and INT/EDU/SOC never change in battle
        self._empty_slot = [0.0] * len(SLOT_FIELDS)
        self._present_only = [1.0] + [0.0] * (len(SLOT_FIELDS) - 1)
        self._geometry: dict[tuple, list[float]] = {}  # per (dx, dy, weapon)
        self._public: dict[str, tuple[int, tuple[list, list]]] = {}
        self._public_battle: Battle | None = None

    def _public_blocks(self, battle: Battle) -> dict[str, tuple[int, tuple[list, list]]]:
        """The cache of ``_public_block`` per combatant: ``(combatant version, block)``; a
        block is rebuilt when the combatant's ``version`` has moved on (every change to a
        combatant stamps it, ``rules.events``). Tests compare the result with a fresh
        builder's at every step of fuzzed battles."""
        if battle is not self._public_battle:
            self._public.clear()
            self._public_battle = battle
        return self._public

    def slot_names(self) -> list[str]:
        """The slots' names in observation order (``ally0``..., then ``enemy0``...)."""
        return slot_names(self.n_ally_slots, self.n_enemy_slots)

    def aim_view_labels(self) -> list[str]:
        """The labels of the aim view's entries (``aim.ally0.on_me``, ..., ``aim.enemy0.on_me``)."""
        return view_labels("aim_view", self.slot_names(), 0)

    def aim_view_entries(self, battle: Battle, agent: str) -> list[float]:
        """The aim view of ``agent`` (``AIM_VIEW_FIELDS`` per slot): the aim DM each combatant
        in play holds on it, / 6 (R4.3, R5.2: at most +6); 0 for empty slots, combatants out
        of play and aims at anyone else."""
        by_id = battle.by_id
        out = []
        for oid in self._slots[agent]:
            o = None if oid is None else by_id[oid]
            out.append(o.aim_dm / 6.0 if o is not None and not o.out and o.aim_target == agent
                       else 0.0)
        return out

    def attack_view_labels(self, max_move_squares: int) -> list[str]:
        """The labels of the attack view's entries: per slot (``attack.ally0.hit``,
        ``attack.ally0.hits_me``, ...), then per square (``attack.here.best_hit``,
        ``attack.here.threat``, ``attack.N:1.best_hit``, ...)."""
        return view_labels("attack_view", self.slot_names(), max_move_squares)

    def attack_view_entries(self, battle: Battle, agent: str) -> list[float]:
        """The attack view of ``agent``: ``ATTACK_VIEW_FIELDS`` per slot (0 for empty slots and
        combatants out of play), then ``attack_square_view``."""
        me = battle.by_id[agent]
        grid = battle.grid
        out: list[float] = []
        for oid in self._slots[agent]:
            o = None if oid is None else battle.by_id[oid]
            if o is None or o.out:
                out += (0.0, 0.0)
            else:
                out += (hit_probability(me, o, grid), hit_probability(o, me, grid))
        return out + attack_square_view(battle, agent, self.max_move_squares)

    def slots(self, agent: str) -> list[str | None]:
        """Who sits in each slot of ``agent``'s observation (``None``: an empty slot)."""
        return list(self._slots[agent])

    def observe(self, battle: Battle, agent: str, out: np.ndarray | None = None) -> np.ndarray:
        """The observation vector of ``agent`` (float32, every entry in [-1, 1]).

        Built as one Python list of floats and packed once, much faster than item assignment
        (flags are written as 0.0/1.0: packing converts a bool much more slowly); distance,
        range band and adjacency are cached per offset and weapon.
        """
        me = battle.by_id[agent]
        grid = battle.grid
        W = H = self._map_size
        if W is None:
            W, H = grid.width, grid.height
        w = me.weapon
        mx, my = me.pos
        chars, maxc = me.chars, me.max_chars
        stance = me.stance
        phase = battle.phase
        if phase == "turn" and battle.current_agent == agent:
            sig, minors = battle.budget_left(agent)
            sig_avail, minors_avail = float(sig), minors / 3.0
        else:
            sig_avail = minors_avail = 0.0
        bonuses, penalties = battle.held_pools(agent) if battle.pools.entries else (0, 0)
        ready = 0.0
        if me.ready_kind:
            needed = w.draw_actions if me.ready_kind == "draw" else w.reload_actions
            ready = me.ready_count / needed
        pending = battle.pending_attack
        attacker = pending.attacker if pending is not None and pending.target == agent else None
        ranged = not w.is_melee
        v = [
            mx / W, my / H,
            1.0 - chars["STR"] / maxc["STR"], 1.0 - chars["DEX"] / maxc["DEX"],
            1.0 - chars["END"] / maxc["END"],
            *_STANCE_FLAGS[stance],
            1.0 if me.drawn else 0.0, 1.0 if w.is_melee else 0.0,
            me.ammo / w.magazine if ranged else 0.0,
            me.spares / self._init_spares[agent] if ranged else 0.0,
            me.aim_dm / 6.0, me.minors / 3.0, 1.0 if me.significant else 0.0,
            sig_avail, minors_avail,
            1.0 if me.hasty else 0.0, 1.0 if me.bonus else 0.0, 1.0 if me.penalty else 0.0,
            _unit(bonuses / POOL_SCALE) if bonuses else 0.0,
            _unit(penalties / POOL_SCALE) if penalties else 0.0,
            _unit(me.current_initiative / INIT_SCALE), ready,
            battle.round / battle.options.max_rounds,
            *_PHASE_FLAGS.get(phase, _NO_PHASE),
            1.0 if attacker is not None and pending.melee else 0.0,
            *self._skill_dms[agent],
        ]
        empty = self._empty_slot
        geometry = self._geometry
        public = self._public if battle is self._public_battle else self._public_blocks(battle)
        line_of_sight, cover_between = grid.line_of_sight, grid.cover_between
        by_id = battle.by_id
        aim_target = me.aim_target
        mpos = me.pos
        for oid in self._slots[agent]:
            if oid is None:
                v += empty
                continue
            o = by_id[oid]
            if o.out:
                v += self._present_only
                continue
            ox, oy = opos = o.pos
            key = (ox - mx, oy - my, w.name)  # weapon names are unique within a scenario
            geo = geometry.get(key)
            if geo is None:
                geo = geometry[key] = _offset_geometry(ox - mx, oy - my, W, H, w)
            v += geo  # present, in play, dx, dy, distance, five band flags, adjacent
            v.append(1.0 if line_of_sight(mpos, opos) else 0.0)
            v.append(1.0 if o.stance != "stand" and cover_between(mpos, opos) else 0.0)
            cached = public.get(oid)
            if cached is None or cached[0] != o.version:
                cached = public[oid] = (o.version, _public_block(o))
            block = cached[1]
            v += block[0]  # stance, wounds, drawn, melee weapon
            v.append(1.0 if aim_target == oid else 0.0)
            v += block[1]  # bonus, penalty, acted, hasty, Initiative
            v.append(1.0 if attacker == oid else 0.0)
        if self.move_view:
            v += move_view(battle, agent, self.max_move_squares)
        if self.aim_view:
            v += self.aim_view_entries(battle, agent)
        if self.attack_view:
            v += self.attack_view_entries(battle, agent)
        # Every entry is in [-1, 1] (see ``_unit``). Packing straight into float32 bytes is
        # faster than NumPy's conversion of a mixed list, with the same rounding.
        buf = bytearray(self._pack_size)
        self._pack_into(buf, 0, *v)
        arr = _frombuffer(buf, dtype=_FLOAT32)
        if out is not None:
            out[:] = arr
            return out
        return arr

    def state(self, battle: Battle) -> np.ndarray:
        """The global state (every combatant's block, the phase and the round), float32."""
        out = np.zeros(self.state_size, dtype=np.float32)
        W = H = self._map_size
        if W is None:
            W, H = battle.grid.width, battle.grid.height
        n = len(STATE_FIELDS)
        deciding = battle.current_agent
        combatants = battle.combatants
        for k, i in enumerate(self._state_seats):
            if i is None:
                continue  # a layout's empty block: zeros
            c = combatants[i]
            s = k * n
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
        tail = len(self._state_seats) * n
        if battle.phase in PHASES:
            out[tail + PHASES.index(battle.phase)] = 1.0
        out[tail + 3] = battle.round / battle.options.max_rounds
        np.clip(out, -1.0, 1.0, out=out)
        return out

    def fork(self) -> ObservationBuilder:
        """A builder for another battle of the same scenario, for callers that step several
        battles in turn (``traveller_env.vector``): it shares this builder's per-scenario
        tables (slots, labels, skill DMs, starting spares) and its per-offset geometry cache,
        and has its own per-battle cache, so that battles observed in turn do not evict each
        other's blocks. (A per-battle cache added to this class must be reset here.)"""
        twin = copy.copy(self)
        twin._public = {}
        twin._public_battle = None
        return twin
