"""The exact aiming optimum for one shooter against a passive target (R4.3, R5).

The shooter's problem in the ``range_*`` scenarios (no haste, no reactions, a target that never
acts) is a small Markov decision process over *(target's STR, DEX, END; aim DM held; actions
used this round)*. Each turn the shooter may aim (Minor), attack (Significant) or end its turn,
within the R2.1 budget; aim carries over rounds (R4.3) and an attack spends it. Hit chances and
damage come from the engine's own rules: the attack's DMs (``Battle.attack_dms``), the exact
2D6 distribution and the weapon's damage dice, with damage applied by
``rules.damage.apply_damage``. ``solve`` finds, by value iteration, the policy minimising the
expected number of rounds until the target is incapacitated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from traveller_env.rules.attack import AIM_MAX, damage_on_hit, next_aim_dm, total_dm
from traveller_env.rules.battle import Battle
from traveller_env.rules.budget import Budget
from traveller_env.rules.checks import TARGET_NUMBER, dice_sum_distribution
from traveller_env.rules.damage import apply_damage, is_incapacitated
from traveller_env.rules.dice import DiceExpr
from traveller_env.view import BattleView

__all__ = [
    "BUDGETS",
    "AimProblem",
    "AimSolution",
    "OptimalAimPolicy",
    "problem_from_battle",
    "problem_from_view",
    "solve",
]

MAX_AIM = AIM_MAX
# Budget states (minors used, significant used) in which the turn still has actions (R2.1).
BUDGETS = tuple((m, s) for s in (0, 1) for m in range(3) if not Budget(m, bool(s)).spent)
_SPENT = None  # marker: budget spent, the round is over


def _after(b: tuple[int, int], cost: str) -> tuple[int, int] | None:
    nxt = Budget(b[0], bool(b[1])).after(cost)
    return _SPENT if nxt.spent else (nxt.minors_used, int(nxt.significant_used))


def _after_minor(b: tuple[int, int]) -> tuple[int, int] | None:
    return _after(b, "minor")


def _after_significant(b: tuple[int, int]) -> tuple[int, int] | None:
    return _after(b, "significant")


def _aim_once_more(aim: int) -> int:
    """The aim DM after one more aim at the same target (R4.3)."""
    return next_aim_dm("target", aim, "target")


@dataclass(frozen=True)
class AimProblem:
    """One shooter, one passive target.

    ``base_dm``: the attack's DMs without aim; ``damage``: the weapon's dice;
    ``protection``: the target's armour; ``target``: its ``(STR, DEX, END)``.
    """

    base_dm: int
    damage: DiceExpr
    protection: int
    target: tuple[int, int, int]


def outcome_distribution(problem: AimProblem, aim: int) -> dict[int, float]:
    """``{damage: probability}`` of one attack with ``aim`` (damage 0 includes misses)."""
    out: dict[int, float] = {}
    dice = dice_sum_distribution(problem.damage.count)
    for s in range(2, 13):
        p_roll = (6 - abs(s - 7)) / 36
        effect = s + problem.base_dm + aim - TARGET_NUMBER
        if effect < 0:
            out[0] = out.get(0, 0.0) + p_roll
            continue
        for total, p_dmg in dice.items():
            dmg = damage_on_hit(total, problem.damage.modifier, effect, problem.protection)
            out[dmg] = out.get(dmg, 0.0) + p_roll * p_dmg
    return out


@dataclass
class AimSolution:
    """Value and policy of an ``AimProblem``.

    ``rounds[(t, aim)]``: expected rounds to incapacitate from the start of a round (the
    current round counts as 1); ``policy[(t, aim, budget)]``: ``"aim"``, ``"attack"`` or
    ``"end_turn"``.
    """

    problem: AimProblem
    rounds: dict[tuple[tuple[int, int, int], int], float] = field(default_factory=dict)
    policy: dict[tuple[tuple[int, int, int], int, tuple[int, int]], str] = field(
        default_factory=dict)
    values: dict[tuple[tuple[int, int, int], int, tuple[int, int]], float] = field(
        default_factory=dict)  # expected further rounds mid-turn

    @property
    def expected_rounds(self) -> float:
        """Expected rounds to incapacitate the unhurt target with no aim held."""
        return self.rounds[(self.problem.target, 0)]

    def aims_before_first_shot(self) -> int:
        """How many aim actions the optimal policy takes before its first attack."""
        t, aim, b, count = self.problem.target, 0, (0, 0), 0
        for _ in range(100):
            action = self.policy[(t, aim, b)]
            if action == "attack":
                return count
            if action == "aim":
                count += 1
                aim = _aim_once_more(aim)
                b = _after_minor(b)
            if action == "end_turn" or b is _SPENT:
                b = (0, 0)
        return count  # never attacks: an impossible shot

    def action(self, target: tuple[int, int, int], aim: int, budget: tuple[int, int]) -> str:
        """The optimal action in a state."""
        return self.policy[(target, aim, budget)]


def _reachable_targets(problem: AimProblem) -> list[tuple[int, int, int]]:
    damages = sorted({d for a in range(MAX_AIM + 1) for d in outcome_distribution(problem, a)})
    seen, todo = {problem.target}, [problem.target]
    while todo:
        t = todo.pop()
        if is_incapacitated(*t):
            continue
        for d in damages:
            nt = apply_damage(t[0], t[1], t[2], d)
            if nt not in seen:
                seen.add(nt)
                todo.append(nt)
    return sorted(seen, key=lambda t: sum(t))  # damage only lowers the sum


def solve(problem: AimProblem, tol: float = 1e-12, max_iter: int = 100_000) -> AimSolution:
    """Value iteration, target state by target state in increasing health (damage never
    heals, so every other state a transition reaches is already solved)."""
    sol = AimSolution(problem)
    outcomes = [outcome_distribution(problem, a) for a in range(MAX_AIM + 1)]
    for t in _reachable_targets(problem):
        if is_incapacitated(*t):
            continue
        # Attack outcomes from t for each aim: (probability of the target going down,
        # [(probability, next target state)] for non-incapacitating results).
        trans = []
        for a in range(MAX_AIM + 1):
            p_down, rest = 0.0, {}
            for d, p in outcomes[a].items():
                nt = apply_damage(t[0], t[1], t[2], d)
                if is_incapacitated(*nt):
                    p_down += p
                else:
                    rest[nt] = rest.get(nt, 0.0) + p
            trans.append((p_down, list(rest.items())))
        if all(p_down == 0.0 and all(nt == t for nt, _ in rest) for p_down, rest in trans):
            for a in range(MAX_AIM + 1):
                sol.rounds[(t, a)] = math.inf
                for b in BUDGETS:
                    sol.policy[(t, a, b)] = "end_turn"
                    sol.values[(t, a, b)] = math.inf
            continue
        R = dict.fromkeys(range(MAX_AIM + 1), 1.0)
        for _ in range(max_iter):
            X: dict[tuple[int, tuple[int, int]], float] = {}
            choice: dict[tuple[int, tuple[int, int]], str] = {}

            def value(a: int, b: tuple[int, int] | None) -> float:
                return R[a] if b is _SPENT else X[(a, b)]  # noqa: B023 (this iteration's)

            # Budgets in reverse order of use: (0,1) and (2,0) lead only to spent budgets.
            for b in ((0, 1), (2, 0), (1, 0), (0, 0)):
                for a in range(MAX_AIM + 1):
                    # Ties go to the earlier of end_turn, attack, aim (no wasted actions).
                    best, best_action = R[a], "end_turn"
                    if Budget(b[0], bool(b[1])).significant_left:
                        nb = _after_significant(b)
                        p_down, rest = trans[a]
                        v = 0.0
                        for nt, p in rest:
                            v += p * (value(0, nb) if nt == t else _start_value(sol, nt, nb))
                        if v < best - 1e-15:
                            best, best_action = v, "attack"
                    v = value(_aim_once_more(a), _after_minor(b))
                    if v < best - 1e-15:
                        best, best_action = v, "aim"
                    X[(a, b)] = best
                    choice[(a, b)] = best_action
            new_R = {a: 1.0 + X[(a, (0, 0))] for a in range(MAX_AIM + 1)}
            delta = max(abs(new_R[a] - R[a]) for a in R)
            R = new_R
            if delta < tol:
                break
        for a in range(MAX_AIM + 1):
            sol.rounds[(t, a)] = R[a]
            for b in BUDGETS:
                sol.policy[(t, a, b)] = choice[(a, b)]
                sol.values[(t, a, b)] = X[(a, b)]
    return sol


def _start_value(sol: AimSolution, t: tuple[int, int, int], b: tuple[int, int] | None) -> float:
    """Expected further rounds from an already solved target state ``t`` with no aim held,
    in the middle of a turn with budget ``b`` (``None``: the round is over)."""
    if b is _SPENT:
        return sol.rounds[(t, 0)]
    return sol.values[(t, 0, b)]


def problem_from_view(view: BattleView, shooter: str, target: str) -> AimProblem:
    """The ``AimProblem`` of a battle's shooter and target, from the engine's own DMs."""
    s, t = view.combatant(shooter), view.combatant(target)
    dms = view.attack_dms(shooter, target, aim=0)
    return AimProblem(base_dm=total_dm(dms), damage=s.weapon.damage,
                      protection=t.armour.protection,
                      target=(t.chars["STR"], t.chars["DEX"], t.chars["END"]))


def problem_from_battle(battle: Battle, shooter: str, target: str) -> AimProblem:
    """``problem_from_view`` for a ``Battle``."""
    return problem_from_view(BattleView(battle), shooter, target)


class OptimalAimPolicy:
    """``optimal_aim``: plays the exact optimum of ``solve`` in one-shooter ``range_*``
    scenarios (aim, attack or end turn; reload when empty). A baseline for learned aiming."""

    name = "optimal_aim"
    needs_observation = False  # decides from the view and the mask

    def __init__(self, seed: int | None = None) -> None:
        self._cache: dict[AimProblem, AimSolution] = {}

    def reset(self, seed: int | None = None) -> None:
        """Nothing random to reseed."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The optimal action for the selected shooter."""
        env = getattr(env, "unwrapped", env)
        view = env.view
        enemies = view.enemies(agent)
        legal = set(np.flatnonzero(action_mask).tolist())
        if view.phase != "turn" or not enemies:
            return min(legal)
        target = enemies[0]
        me = view.combatant(agent)
        if "reload" in [env.action_labels[i] for i in legal] and me.ammo == 0:
            return env.action_index("reload")
        problem = problem_from_view(view, agent, target.id)
        sol = self._cache.get(problem)
        if sol is None:
            sol = self._cache[problem] = solve(problem)
        aim = me.aim_dm if me.aim_target == target.id else 0
        budget = (me.minors, int(me.significant))
        choice = sol.action((target.chars["STR"], target.chars["DEX"], target.chars["END"]),
                            aim, budget) if budget in BUDGETS else "end_turn"
        label = {"aim": f"aim:{target.id}", "attack": f"attack:{target.id}"}.get(choice,
                                                                             "end_turn")
        idx = env.action_index(label)
        return idx if idx in legal else env.action_index("end_turn")
