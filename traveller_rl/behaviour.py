"""Behaviour statistics of a policy, read from the event logs of the battles it played.

What a policy *does*, beside whether it wins: how often it gets down, whether it moves into
cover, whom it shoots, how long it aims, how much it fires, whether it leads, how far it keeps
from the enemy. ``behaviour_stats(policy, scenario, vs, battles, seed)`` plays the policy
against each opponent in ``vs`` from both sides (``traveller_rl.evaluation.evaluate_matchup``, the
machinery of ``traveller eval``), replays each battle's event log on the scenario's map and
returns one flat dict of descriptors; ``traveller behaviour`` prints them as a table.

**The descriptors** (``DESCRIPTORS``, in table order). All are aggregated over every seat the
policy played and every battle (a ratio of sums, not a mean of per-battle ratios); "per
battle" figures are summed over the policy's side (all its seats) and divided by the battles;
a share whose denominator is 0 is ``nan``. *Living* means not incapacitated (no
``incapacitated`` event yet); the *nearest* living enemy is the one at the least distance
(R8.1), the first in scenario order on a tie.

* ``win_rate``, ``draw_rate``: battles won / drawn (the ``end`` event's winner; none is a
  draw) over battles played;
* ``prone_share``, ``crouch_share``: the share of the policy's turns at whose end the seat is
  prone / crouched. A turn ends at its ``end_turn`` event, or at the next ``turn`` or ``end``
  (a battle won mid-turn);
* ``in_cover_share`` (time in cover): the share of its turns that end in cover from the
  nearest living enemy, i.e. crouched or prone behind low cover on the line from that enemy
  (R5.3, ``Battle.in_cover_from``) or out of its line of sight (R8.1); turns that end with no
  living enemy left are not counted;
* ``cover_moves`` (moves toward cover): the share of its Move actions that end in a square
  shielded from more living enemies than the square it left; a square is *shielded* from an
  enemy when there is no line of sight (R8.1) or the line passes low cover next to the square
  (``GridMap.cover_between``: the square gives cover once the seat is crouched or prone);
* ``focus_fire``: among its attacks that had a choice (at least two living enemies in line of
  sight from the attacker, not all equally hurt), the share aimed at a most wounded one: the
  greatest damage taken so far (starting STR + DEX + END minus the current sum, from the
  ``attack`` events' ``target_after``);
* ``aims_per_shot``: ``aim`` actions / attacks (melee or ranged);
* ``hit_rate``: its ranged attacks that hit / its ranged attacks;
* ``shots_into_cover``: the share of its ranged attacks that met the target's cover (the
  attack's DMs hold ``cover``, R5.3): shooting at whoever is in the open scores low;
* ``fired_on_in_cover``: the share of the enemies' ranged attacks on its seats that met its
  cover: where it stands and lies down relative to who shoots at it;
* ``shots_per_battle``: ranged attacks per battle (each spends one round, R4.1);
* ``reloads_per_battle``: completed reloads per battle (a ``reload`` event with ``done``);
* ``leadership_per_turn``: Leadership checks (``leadership`` events) / turns;
* ``bonuses_per_battle``: bonuses handed to allies (``bonus_granted``) per battle;
* ``distance_m``: the mean distance in metres to the nearest living enemy at the start of its
  turns (the ``turn`` event);
* ``damage_dealt``, ``damage_taken``: damage (after armour) its attacks dealt / its seats took,
  per battle;
* ``reacted_share``: the share of its reactions (``reaction`` events: one per attack on its
  seats when the scenario has reactions, R3.6) that dodge or parry rather than ``none``; a
  reaction costs Initiative and breaks its own aim (R4.3);
* ``aims_lost_share``: ``aim_lost`` events of its seats / its ``aim`` actions: aims broken
  by another action or a reaction before an attack could spend them (R4.3);
* ``turns_ended_early``: the share of its turns that it ended itself (``end_turn`` with reason
  ``chosen``) rather than by spending its budget (R2.1, R2.3): Minor actions left unused.

The dict also holds the counts behind them (``COUNTS``: turns, moves, attacks, focus choices,
...), so callers can merge runs or compute intervals, and ``win_ci95`` (Wilson).

The lower layers, for callers with their own logs: ``BattleStart.from_scenario`` (the map, sides,
starting squares, stances and STR + DEX + END, which the log does not repeat),
``tally_battle(events, layout, side)`` (one battle's counts for one side; checks that the log
fits the layout) and ``BehaviourTally`` (counts summed over battles, ``descriptors()``).

The state is replayed from the log alone (``move``, ``stance``, ``attack``, ``incapacitated``
events on the scenario's start), so any engine's log works (the compiled core's AEC env
records the same log without building its Python twin); the map questions go to the rules'
own functions (``GridMap.line_of_sight``, ``GridMap.cover_between``, ``GridMap.distance_m``,
``Battle.in_cover_from``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import traveller_env
from traveller_env.policy import Policy
from traveller_env.rules.battle import Battle
from traveller_env.rules.grid import GridMap
from traveller_env.scenario import build_battle, load_scenario
from traveller_rl.evaluation import evaluate_matchup, wilson_interval

__all__ = [
    "COUNTS",
    "DESCRIPTORS",
    "BattleStart",
    "BehaviourTally",
    "behaviour_stats",
    "format_behaviour",
    "tally_battle",
]

Square = tuple[int, int]
VITALS = ("STR", "DEX", "END")

#: The descriptors, in table order (the keys ``BehaviourTally.descriptors`` returns).
DESCRIPTORS: tuple[str, ...] = (
    "win_rate", "draw_rate", "prone_share", "crouch_share", "in_cover_share", "cover_moves",
    "focus_fire", "aims_per_shot", "shots_per_battle", "reloads_per_battle",
    "leadership_per_turn", "bonuses_per_battle", "distance_m", "damage_dealt", "damage_taken",
    "hit_rate", "shots_into_cover", "fired_on_in_cover", "reacted_share", "aims_lost_share",
    "turns_ended_early",
)


@dataclass
class BehaviourTally:
    """Counts of one policy's behaviour, summed over battles (``+=`` merges two tallies)."""

    battles: int = 0
    wins: int = 0
    draws: int = 0
    turns: int = 0
    turns_prone: int = 0
    turns_crouch: int = 0
    turns_with_enemy: int = 0  # turns that ended with a living enemy (in_cover_share's base)
    turns_in_cover: int = 0
    distance_sum_m: float = 0.0
    distance_turns: int = 0
    moves: int = 0
    moves_to_cover: int = 0
    attacks: int = 0
    shots: int = 0
    focus_choices: int = 0
    focus_attacks: int = 0
    aims: int = 0
    reloads: int = 0
    leadership_checks: int = 0
    bonuses_granted: int = 0
    penalties_imposed: int = 0
    damage_dealt: int = 0
    damage_taken: int = 0
    hits: int = 0               # its ranged attacks that hit
    shots_into_cover: int = 0   # its ranged attacks with a cover DM
    shots_taken: int = 0        # enemy ranged attacks on its seats
    shots_taken_in_cover: int = 0
    reactions: int = 0          # its reactions (any choice)
    reacted: int = 0            # ... that were a dodge or a parry
    aims_lost: int = 0          # aim_lost events of its seats
    turns_ended_early: int = 0  # its turns ended by end_turn (reason "chosen")

    def __iadd__(self, other: BehaviourTally) -> BehaviourTally:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def counts(self) -> dict[str, float]:
        """The raw counts as a dict (``COUNTS`` order)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def descriptors(self) -> dict[str, float]:
        """The descriptors (``DESCRIPTORS``; see the module docstring), ``nan`` where the
        denominator is 0."""
        n = self.battles
        return {
            "win_rate": _ratio(self.wins, n),
            "draw_rate": _ratio(self.draws, n),
            "prone_share": _ratio(self.turns_prone, self.turns),
            "crouch_share": _ratio(self.turns_crouch, self.turns),
            "in_cover_share": _ratio(self.turns_in_cover, self.turns_with_enemy),
            "cover_moves": _ratio(self.moves_to_cover, self.moves),
            "focus_fire": _ratio(self.focus_attacks, self.focus_choices),
            "aims_per_shot": _ratio(self.aims, self.attacks),
            "shots_per_battle": _ratio(self.shots, n),
            "reloads_per_battle": _ratio(self.reloads, n),
            "leadership_per_turn": _ratio(self.leadership_checks, self.turns),
            "bonuses_per_battle": _ratio(self.bonuses_granted, n),
            "distance_m": _ratio(self.distance_sum_m, self.distance_turns),
            "damage_dealt": _ratio(self.damage_dealt, n),
            "damage_taken": _ratio(self.damage_taken, n),
            "hit_rate": _ratio(self.hits, self.shots),
            "shots_into_cover": _ratio(self.shots_into_cover, self.shots),
            "fired_on_in_cover": _ratio(self.shots_taken_in_cover, self.shots_taken),
            "reacted_share": _ratio(self.reacted, self.reactions),
            "aims_lost_share": _ratio(self.aims_lost, self.aims),
            "turns_ended_early": _ratio(self.turns_ended_early, self.turns),
        }


#: The counts behind the descriptors (``BehaviourTally``'s fields).
COUNTS: tuple[str, ...] = tuple(f.name for f in fields(BehaviourTally))


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


# ---------------------------------------------------------------------------- the layout
@dataclass(frozen=True)
class BattleStart:
    """What a battle's event log does not repeat: the map, the sides, and each combatant's
    side, starting square, stance and STR + DEX + END (scenario order)."""

    grid: GridMap
    side_names: tuple[str, ...]
    side: Mapping[str, int]
    start_pos: Mapping[str, Square]
    start_stance: Mapping[str, str]
    start_vitals: Mapping[str, int]

    @classmethod
    def from_battle(cls, battle: Battle) -> BattleStart:
        """The layout of a Python-engine battle *before its first action* (its combatants'
        squares, stances and characteristics are read as they are now)."""
        cs = battle.combatants
        return cls(grid=battle.grid, side_names=tuple(battle.side_names),
                   side={c.id: c.side for c in cs}, start_pos={c.id: tuple(c.pos) for c in cs},
                   start_stance={c.id: c.stance for c in cs},
                   start_vitals={c.id: sum(c.chars[k] for k in VITALS) for c in cs})

    @classmethod
    def from_scenario(cls, scenario: Any) -> BattleStart:
        """The layout of a scenario (a built-in name, a path, a dict or a ``Scenario``)."""
        return cls.from_battle(build_battle(load_scenario(scenario), seed=0))


class _Seat:
    """One combatant's replayed state (what ``Battle``'s map queries read)."""

    __slots__ = ("down", "id", "pos", "stance", "vitals")

    def __init__(self, cid: str, pos: Square, stance: str, vitals: int) -> None:
        self.id, self.pos, self.stance, self.vitals, self.down = cid, pos, stance, vitals, False


class _Replay:
    """Every combatant's square, stance, STR + DEX + END and incapacitation, replayed from an
    event log on the layout (``apply`` one event at a time). Map questions go to ``Battle``'s
    own methods, which read only ``by_id`` and ``grid``, so the rules keep one home."""

    in_cover_from = Battle.in_cover_from
    distance_m = Battle.distance_m
    line_of_sight = Battle.line_of_sight

    def __init__(self, layout: BattleStart) -> None:
        self.layout = layout
        self.grid = layout.grid
        self.side = layout.side
        self.by_id = {cid: _Seat(cid, layout.start_pos[cid], layout.start_stance[cid],
                                 layout.start_vitals[cid]) for cid in layout.side}

    def seat(self, i: int, ev: Mapping[str, Any], key: str = "actor") -> str:
        """The combatant ``ev[key]`` names (``ValueError`` when the layout has none)."""
        cid = ev.get(key)
        if cid not in self.side:
            raise ValueError(f"event {i} ({ev.get('type')}): {key} {cid!r} is not a combatant "
                             f"of this layout ({', '.join(self.side)})")
        return cid

    def check_square(self, i: int, ev: Mapping[str, Any], key: str, cid: str) -> Square:
        """``ev[key]``, which must be ``cid``'s replayed square (else the log is of another
        scenario)."""
        value = ev.get(key)
        if not (isinstance(value, (list, tuple)) and len(value) == 2):
            raise ValueError(f"event {i} ({ev.get('type')}): {key} should be a square [x, y], "
                             f"got {value!r}")
        square = (int(value[0]), int(value[1]))
        if key != "to" and square != self.by_id[cid].pos:
            raise ValueError(f"event {i} ({ev.get('type')}): {key} {list(square)} differs from "
                             f"{cid}'s square {list(self.by_id[cid].pos)} in the replay: the "
                             "log is not of this layout's scenario")
        return square

    def apply(self, i: int, ev: Mapping[str, Any]) -> None:
        """Update the state with event ``i`` (``move``, ``stance``, ``attack``,
        ``incapacitated``; other events change nothing replayed here)."""
        kind = ev.get("type")
        if kind == "move":
            cid = self.seat(i, ev)
            self.check_square(i, ev, "from", cid)
            self.by_id[cid].pos = self.check_square(i, ev, "to", cid)
        elif kind == "stance":
            self.by_id[self.seat(i, ev)].stance = ev["to"]
        elif kind == "attack":
            self.check_square(i, ev, "actor_pos", self.seat(i, ev))
            target = self.seat(i, ev, "target")
            self.check_square(i, ev, "target_pos", target)
            self.by_id[target].vitals = sum(ev["target_after"][k] for k in VITALS)
        elif kind == "incapacitated":
            self.by_id[self.seat(i, ev)].down = True

    def enemies(self, cid: str) -> list[_Seat]:
        """``cid``'s living enemies, in scenario order."""
        mine = self.side[cid]
        return [s for o, s in self.by_id.items() if self.side[o] != mine and not s.down]

    def nearest_enemy(self, cid: str) -> str | None:
        """The nearest living enemy of ``cid`` (the first in scenario order on a tie)."""
        best, best_d = None, math.inf
        for seat in self.enemies(cid):
            d = self.distance_m(cid, seat.id)
            if d < best_d:
                best, best_d = seat.id, d
        return best

    def shielded(self, cid: str, square: Square) -> int:
        """From how many of ``cid``'s living enemies ``square`` is shielded: no line of sight,
        or low cover next to it on the line (R8.1)."""
        grid = self.grid
        return sum(1 for s in self.enemies(cid)
                   if not grid.line_of_sight(s.pos, square) or grid.cover_between(s.pos, square))

    def focus(self, actor: str, target: str) -> bool | None:
        """Whether an attack on ``target`` now goes to a most wounded living enemy in
        ``actor``'s line of sight; ``None`` when there is no choice (fewer than two such
        enemies, or all equally hurt)."""
        start = self.layout.start_vitals
        hurt = {s.id: start[s.id] - s.vitals for s in self.enemies(actor)
                if s.id == target or self.line_of_sight(actor, s.id)}
        if len(hurt) < 2 or len(set(hurt.values())) == 1:
            return None
        return hurt[target] == max(hurt.values())


def tally_battle(events: Sequence[Mapping[str, Any]], layout: BattleStart, side: int
                 ) -> BehaviourTally:
    """The behaviour counts of side ``side``'s seats in one finished battle.

    ``events``: the battle's whole event log (``battle.events``), which must end with an
    ``end`` event; ``layout``: its scenario's (``BattleStart.from_scenario``). ``ValueError``
    naming the event when the log does not fit the layout (an unknown combatant, a move or
    attack from a square other than the replayed one: the wrong scenario) or is unfinished.
    """
    if isinstance(side, bool) or side not in range(len(layout.side_names)):
        raise ValueError(f"side must be 0..{len(layout.side_names) - 1} (the layout's "
                         f"{', '.join(layout.side_names)}), got {side!r}")
    state = _Replay(layout)
    mine = {cid for cid, s in layout.side.items() if s == side}
    t = BehaviourTally(battles=1)
    turn: str | None = None  # the seat whose turn is open

    def close_turn() -> None:
        if turn not in mine:
            return
        seat = state.by_id[turn]
        t.turns += 1
        t.turns_prone += seat.stance == "prone"
        t.turns_crouch += seat.stance == "crouch"
        enemy = state.nearest_enemy(turn)
        if enemy is not None:
            t.turns_with_enemy += 1
            t.turns_in_cover += (state.in_cover_from(enemy, turn)
                                 or not state.line_of_sight(enemy, turn))

    ended = False
    for i, ev in enumerate(events):
        kind = ev.get("type")
        if kind == "turn":
            close_turn()
            turn = state.seat(i, ev)
            if turn in mine:
                enemy = state.nearest_enemy(turn)
                if enemy is not None:
                    t.distance_sum_m += state.distance_m(turn, enemy)
                    t.distance_turns += 1
        elif kind == "end_turn":
            if state.seat(i, ev) == turn:
                t.turns_ended_early += turn in mine and ev["reason"] == "chosen"
                close_turn()
                turn = None
        elif kind == "move":
            actor = state.seat(i, ev)
            if actor in mine:
                frm = state.check_square(i, ev, "from", actor)
                to = state.check_square(i, ev, "to", actor)
                t.moves += 1
                t.moves_to_cover += state.shielded(actor, to) > state.shielded(actor, frm)
        elif kind == "attack":
            actor, target = state.seat(i, ev), state.seat(i, ev, "target")
            if actor in mine:
                state.check_square(i, ev, "actor_pos", actor)
                t.attacks += 1
                t.shots += not ev["melee"]
                if not ev["melee"]:
                    t.hits += bool(ev["hit"])
                    t.shots_into_cover += "cover" in (ev["dms"] or {})
                t.damage_dealt += ev["damage"]
                focus = state.focus(actor, target)
                if focus is not None:
                    t.focus_choices += 1
                    t.focus_attacks += focus
            if target in mine:
                t.damage_taken += ev["damage"]
                if not ev["melee"]:
                    t.shots_taken += 1
                    t.shots_taken_in_cover += "cover" in (ev["dms"] or {})
        elif kind == "reaction":
            if state.seat(i, ev) in mine:
                t.reactions += 1
                t.reacted += ev["reaction"] != "none"
        elif kind in _COUNTED:
            if state.seat(i, ev) in mine and (kind != "reload" or ev["done"]):
                setattr(t, _COUNTED[kind], getattr(t, _COUNTED[kind]) + 1)
        elif kind == "end":
            close_turn()
            turn = None
            winner = ev["winner"]
            if winner is None:
                t.draws += 1
            elif winner not in layout.side_names:
                raise ValueError(f"event {i} (end): winner {winner!r} is not a side of this "
                                 f"layout ({', '.join(layout.side_names)})")
            else:
                t.wins += layout.side_names.index(winner) == side
            ended = True
        state.apply(i, ev)
    if not ended:
        raise ValueError("the event log has no 'end' event: tally finished battles only")
    return t


#: Events counted one for one (a ``reload`` only when it completes): type -> tally field.
_COUNTED = {"aim": "aims", "aim_lost": "aims_lost", "reload": "reloads",
            "leadership": "leadership_checks",
            "bonus_granted": "bonuses_granted", "penalty_imposed": "penalties_imposed"}


# ---------------------------------------------------------------------------- the runner
def behaviour_stats(policy: Policy | str, scenario: str = "squad",
                    vs: Policy | str | Sequence[Policy | str] = "marksman",
                    battles: int = 200, seed: int = 1000, *, backend: str | None = None,
                    name: str | None = None,
                    on_battle: Callable[[], None] | None = None) -> dict[str, Any]:
    """Play ``policy`` against each opponent in ``vs`` for ``battles`` battles on each side
    (``2 * battles`` per opponent: ``traveller_rl.evaluation.evaluate_matchup``, battle seeds
    ``seed .. seed + 2 * battles - 1``, the policy on the first side in even battles) and
    return its behaviour.

    ``policy`` and each opponent: a ``Policy`` or anything ``traveller_agents.registry.make_policy``
    accepts (a scripted name, a ``.zip`` or ``.pt`` path; trained ones are checked against
    ``scenario``). ``backend``: the engine (``traveller_env.raw_env``'s; default its
    default, the compiled core). ``on_battle``: called after every battle (progress bars).

    Returns a flat dict: ``policy`` (``name``, or the name given, or the policy's ``name``),
    ``scenario``, ``vs`` (opponent names), ``battles`` (played in all), ``seed``, every
    descriptor of ``DESCRIPTORS``, ``win_ci95``, ``counts`` (``COUNTS``), ``by_opponent``
    (opponent name -> its descriptors and ``battles``) and ``by_side`` (the side the policy
    played, scenario order -> its descriptors and ``battles``, over every opponent: on a map
    that is not mirror-symmetric a policy can play one side much better than the other).
    """
    from traveller_agents.registry import make_policy

    if isinstance(battles, bool) or not isinstance(battles, int) or battles < 1:
        raise ValueError(f"battles (per side and opponent) must be a positive integer, got "
                         f"{battles!r}")
    scenario_name = getattr(load_scenario(scenario), "name", str(scenario))
    opponents = [vs] if isinstance(vs, (str, bytes)) or not isinstance(vs, Sequence) else list(vs)
    if not opponents:
        raise ValueError("vs: name at least one opponent")

    def resolve(p: Policy | str) -> Policy:
        return make_policy(p, scenario=scenario) if isinstance(p, str) else p

    def label(p: Policy | str) -> str:
        return p if isinstance(p, str) else str(getattr(p, "name", type(p).__name__))

    learner = resolve(policy)
    opp_policies = [resolve(o) for o in opponents]
    opp_names = [label(o) for o in opponents]
    layout = BattleStart.from_scenario(scenario)
    options = {} if backend is None else {"backend": backend}

    def make_env(sc: Any) -> Any:
        return traveller_env.raw_env(sc, **options)

    total = BehaviourTally()
    by_opponent: dict[str, dict[str, Any]] = {}
    per_side = [BehaviourTally() for _ in layout.side_names]
    for opp_name, opp in zip(opp_names, opp_policies, strict=True):
        part = BehaviourTally()

        def record(index: int, battle: Any, side: int, part: BehaviourTally = part) -> None:
            del index
            counts = tally_battle(battle.events, layout, side)
            part.__iadd__(counts)
            per_side[side].__iadd__(counts)
            if on_battle is not None:
                on_battle()

        result = evaluate_matchup(learner, opp, scenario, battles=2 * battles, seed=seed,
                                  make_env=make_env, on_battle=record)
        if (part.wins, part.draws) != (result["wins"], result["draws"]):
            raise RuntimeError(f"the event logs' outcomes ({part.wins} wins, {part.draws} "
                               f"draws) differ from the evaluation's ({result['wins']}, "
                               f"{result['draws']})")
        key = opp_name if opp_name not in by_opponent else f"{opp_name}#{len(by_opponent)}"
        by_opponent[key] = {"battles": part.battles, **part.descriptors()}
        total += part
    return {"policy": name or label(policy), "scenario": scenario_name, "vs": opp_names,
            "battles": total.battles, "seed": seed, **total.descriptors(),
            "win_ci95": list(wilson_interval(total.wins, total.battles)),
            "counts": total.counts(), "by_opponent": by_opponent,
            "by_side": {name: {"battles": t.battles, **t.descriptors()}
                        for name, t in zip(layout.side_names, per_side, strict=True)}}


# ---------------------------------------------------------------------------- the table
#: Column headings of ``format_behaviour`` (descriptor -> heading, format).
COLUMNS: dict[str, tuple[str, str]] = {
    "win_rate": ("win", ".2f"), "draw_rate": ("draw", ".2f"),
    "prone_share": ("prone", ".2f"), "crouch_share": ("crouch", ".2f"),
    "in_cover_share": ("in cover", ".2f"), "cover_moves": ("to cover", ".2f"),
    "focus_fire": ("focus", ".2f"), "aims_per_shot": ("aims/shot", ".2f"),
    "shots_per_battle": ("shots", ".1f"), "reloads_per_battle": ("reloads", ".2f"),
    "leadership_per_turn": ("lead/turn", ".3f"), "bonuses_per_battle": ("bonuses", ".2f"),
    "distance_m": ("dist m", ".1f"), "damage_dealt": ("dealt", ".1f"),
    "damage_taken": ("taken", ".1f"), "hit_rate": ("hit", ".2f"),
    "shots_into_cover": ("into cover", ".2f"), "fired_on_in_cover": ("fired on in cover", ".2f"),
    "reacted_share": ("reacted", ".2f"), "aims_lost_share": ("aims lost", ".2f"),
    "turns_ended_early": ("ended early", ".2f"),
}


def _cell(value: float, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else format(value, fmt)


def format_behaviour(rows: Iterable[Mapping[str, Any]], markdown: bool = False) -> str:
    """``behaviour_stats`` results as a table: one row per policy, one column per
    descriptor (``-`` where undefined); ``markdown=True`` for a Markdown table."""
    rows = list(rows)
    heads = ["policy", "battles", *(COLUMNS[d][0] for d in DESCRIPTORS)]
    body = [[str(r["policy"]), str(r["battles"]),
             *(_cell(r[d], COLUMNS[d][1]) for d in DESCRIPTORS)] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(heads) + " |",
                 "|---|" + "---:|" * (len(heads) - 1)]
        lines += ["| " + " | ".join(b) + " |" for b in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(b[k]) for b in body)) for k, h in enumerate(heads)]

    def fmt_row(cells: list[str]) -> str:
        return "  ".join(c.ljust(widths[0]) if k == 0 else c.rjust(widths[k])
                         for k, c in enumerate(cells))

    return "\n".join([fmt_row(heads), *map(fmt_row, body)])
