"""``traveller benchmark POLICY``: a versioned benchmark suite with a match record.

    traveller benchmark tactician                       # suite v1, table on stdout
    traveller benchmark results/league/stalker.onnx --out runs/benchmark/stalker.json
    traveller benchmark rush,cover,tactician --workers 2 --out results/benchmark_v1.json
    traveller benchmark results/league/wanderer.onnx --suite v2 --against tactician --html r.html

A *suite* is ``configs/benchmarks/v<N>.yaml`` (``--suite v1``, or a path): scenario sets
(built-in scenarios, or a distribution's held-out seed range: ``gen:squad`` seeds 1000-1003)
x opponents (scripted NPCs, committed league members) x ``battles_per_cell`` battles, half with
the policy on each side. A version is never edited once published; ``load_suite("v1")`` keeps
reading it.

**Battles.** Battle ``i`` of a cell plays scenario ``i // 2 % len(set)`` of its set with the
policy on side ``i % 2`` and battle seed ``suite.seed + i`` (each side's policy is seeded from
the battle seed and its side, as in ``traveller tournament``): the record depends only on the
suite and the policies, not on ``--workers``.

**Vector suites** (``play: vector``, v2 on). Battle ``i`` of a cell plays scenario ``i // 2``
of the set in a fixed shuffled order (``set_order``; a distribution's held-out range is drawn
from) with the policy on side ``i % 2``, in a one-row vector seeded ``derive_seed(suite.seed,
i)``: both sides of a draw, every opponent and every policy meet the same battles. A cell is
played by ``traveller_rl.scenario_eval.play_battles`` (``play_cell``): two in-core NPCs wholly
inside the core; a learned policy (``.onnx``/``.pt``, an RLlib checkpoint of the core path;
slot-relative) with its decisions batched
across the cell's battles against an in-core NPC or a learned opponent of the same layout.
Anything else (a ``.py`` policy, a Python-only NPC, two learned policies with different
layouts) plays one AEC battle at a time (``play_one``) on the battle seed the vector would
use. Each battle's record says which (``path``: ``core``, ``vector`` or ``aec``).

**Scores.** Per cell: wins, draws, losses, the win rate and its Wilson 95% interval. The
aggregate (``aggregate: mean``, v1) is the mean over cells of the cell win rates, with a
stratified bootstrap 95% interval (battles resampled within each cell, ``BOOTSTRAP_SAMPLES``
times; rliable's stratified bootstrap over the one run). Draws count as not won. With
``aggregate: iqm`` (v2) it is the interquartile mean of the cell win rates, with the mean and
the performance profile beside it (``traveller_rl.aggregates``), and ``--against B`` prints
each policy's probability of improvement over ``B`` on the cells both played.

**Not playable.** A learned policy plays only scenarios of its observation and action layout
(its ONNX file is checked against each scenario: ``traveller_agents.onnx_policy``); one trained on a
fixed layout (``traveller_env.layout``) plays every scenario that fits it, and the loader names
the limit a scenario beyond it breaks. A battle whose
scenario the policy or the opponent cannot play is recorded as ``not_playable`` with the
reason (the loader's message, naming the sizes), not played; a cell with no playable battle
shows ``n/p``, and the aggregate is taken over the playable cells only and says how many of
the suite's cells it covers (``cells_used``). Aggregates over different numbers of cells are
not comparable: the leaderboard lists ``cells_used`` beside each score.

A battle in which a policy raises (a scripted policy made for other scenarios, such as
``optimal_aim`` outside the ``range_*`` scenarios) is recorded as ``error`` with the exception,
and counted with the not-playable ones, never as a result.

**Part of a suite.** ``--sets gen-squad`` plays only the named scenario sets: the same battles
those cells have in the whole suite, with the aggregate over their cells only (the record's
``suite.sets`` names them), for a policy that plays one family.

**Match record** (``--out``, JSON, gzipped when the name ends ``.gz``): the suite (version,
file, SHA-256 of its text), the command, and per policy every battle (set, scenario, opponent,
side, seed, result, winner; rounds on the AEC path, the battle seed on a vector suite), the
cells and the aggregate; any number in the table can be recomputed from it. ``--markdown``
writes the leaderboard, ``--html`` a self-contained report with the plots
(``traveller_rl.benchmark_report``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from traveller_agents.registry import is_trained, make_policy, parse_policy_list
from traveller_agents.rllib_policy import is_rllib_checkpoint
from traveller_env.generate import GENERATED_PREFIX
from traveller_env.scenario import ScenarioError, config_dir, shipped_path
from traveller_rl.commandline import examples_epilog, int_at_least
from traveller_rl.common import run_chunks
from traveller_rl.evaluation import wilson_interval

__all__ = ["BOOTSTRAP_SAMPLES", "METRICS", "PLAY_MODES", "PROFILE_TAUS", "Suite", "aggregate",
           "build_parser", "cell_outcomes", "cell_summaries", "format_improvement",
           "format_iqm_leaderboard", "format_leaderboard", "format_table", "improvement",
           "load_suite", "plan_battles", "play_cell", "policy_file", "read_record", "run",
           "run_benchmark", "set_order", "suite_path", "vector_player", "write_record"]

#: Bootstrap resamples of the aggregate's interval.
BOOTSTRAP_SAMPLES = 2000
#: How a suite's battles are played (its ``play`` key; see the module docstring).
PLAY_MODES = ("aec", "vector")
#: A suite's aggregate (its ``aggregate`` key): the mean or the interquartile mean of the cells.
METRICS = ("mean", "iqm")


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its version, source file, text digest and contents."""

    version: int
    path: Path
    sha256: str
    description: str
    battles_per_cell: int
    seed: int
    scenario_sets: dict[str, tuple[str, ...]]  # set name -> scenario names
    opponents: tuple[str, ...]
    play: str = "aec"  # "aec": one AEC battle at a time; "vector": batched (module docstring)
    metric: str = "mean"  # the aggregate: "mean" or "iqm" of the cell win rates
    title: str = ""  # the file's ``name``: a suite beside the versioned ones (``duel-rush``)

    @property
    def name(self) -> str:
        """The file's ``name``, else ``v<version>``."""
        return self.title or f"v{self.version}"

    def cells(self) -> list[tuple[str, str]]:
        """Every (scenario set, opponent) pair, in file order."""
        return [(s, o) for s in self.scenario_sets for o in self.opponents]

    def only(self, sets: Sequence[str]) -> Suite:
        """The suite restricted to the scenario sets ``sets`` (``--sets``): the same battles of
        those cells as the whole suite plays (a set's order and seeds do not depend on the
        other sets). ``ValueError`` naming an unknown set and the suite's sets."""
        unknown = [s for s in sets if s not in self.scenario_sets]
        if unknown or not sets:
            raise ValueError(f"--sets {','.join(sets)}: {self.name} has the scenario sets "
                             f"{', '.join(self.scenario_sets)}")
        return replace(self, scenario_sets={s: self.scenario_sets[s] for s in sets})


def policy_file(name: str) -> str:
    """The policy ``name`` with a shipped file resolved: a suite's opponent such as
    ``results/league/understudy.onnx`` is the committed league's file, found from any current
    folder and in a wheel (``traveller_env.scenario.shipped_path``; a file of that name in the
    current folder is used first). Names that are not such paths are returned as given."""
    if not name.endswith((".onnx", ".pt", ".zip")):
        return name
    return str(shipped_path(name, prefer_cwd=True))


def suite_path(suite: str | Path) -> Path:
    """The file of ``suite``: ``"v1"`` is ``configs/benchmarks/v1.yaml``, and a bare name of a
    shipped suite (``"duel-rush"``) its file there; anything else is a path."""
    text = str(suite)
    if text.startswith("v") and text[1:].isdigit():
        return config_dir() / "benchmarks" / f"{text}.yaml"
    shipped = config_dir() / "benchmarks" / f"{text}.yaml"
    if "/" not in text and not text.endswith(".yaml") and shipped.is_file():
        return shipped
    return Path(suite)


def _fail(path: Path, problem: str) -> ValueError:
    return ValueError(f"{path}: {problem}")


def load_suite(suite: str | Path = "v1") -> Suite:
    """Read and check a suite file (``ValueError`` naming the file and the key)."""
    path = suite_path(suite)
    if not path.is_file():
        known = sorted(p.stem for p in (config_dir() / "benchmarks").glob("*.yaml"))
        raise _fail(path, f"no such benchmark suite; versions: {', '.join(known)}")
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    allowed = {"version", "name", "description", "battles_per_cell", "seed", "scenario_sets",
               "opponents", "play", "aggregate"}
    if not isinstance(data, dict) or set(data) - allowed or "version" not in data:
        raise _fail(path, f"a suite is a mapping with keys {', '.join(sorted(allowed))}")
    if isinstance(suite, str) and suite_path(suite) != Path(suite) and \
            data.get("name", f"v{data['version']}") != suite:
        raise _fail(path, f"says version {data['version']}, not {suite}")
    n = data.get("battles_per_cell", 8)
    if not isinstance(n, int) or n < 2 or n % 2:
        raise _fail(path, f"battles_per_cell must be an even number >= 2, got {n!r}")
    sets: dict[str, tuple[str, ...]] = {}
    for name, spec in (data.get("scenario_sets") or {}).items():
        if isinstance(spec, dict) and set(spec) == {"scenarios"}:
            sets[name] = tuple(spec["scenarios"])
        elif isinstance(spec, dict) and set(spec) == {"distribution", "seeds"}:
            dist, (low, high) = spec["distribution"], spec["seeds"]
            if not str(dist).startswith(GENERATED_PREFIX) or high < low:
                raise _fail(path, f"scenario_sets.{name}: a gen:<name> distribution and seeds "
                            "[low, high] with low <= high")
            sets[name] = tuple(f"{dist}@{s}" for s in range(low, high + 1))
        else:
            raise _fail(path, f"scenario_sets.{name}: either {{scenarios: [...]}} or "
                        "{distribution: gen:<name>, seeds: [low, high]}")
    opponents = tuple(data.get("opponents") or ())
    if not sets or not opponents:
        raise _fail(path, "a suite needs at least one scenario set and one opponent")
    play, metric = data.get("play", "aec"), data.get("aggregate", "mean")
    if play not in PLAY_MODES:
        raise _fail(path, f"play must be one of {', '.join(PLAY_MODES)}, got {play!r}")
    if metric not in METRICS:
        raise _fail(path, f"aggregate must be one of {', '.join(METRICS)}, got {metric!r}")
    return Suite(version=int(data["version"]), path=path,
                 sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                 description=str(data.get("description", "")).strip(), battles_per_cell=n,
                 seed=int(data.get("seed", 0)), scenario_sets=sets, opponents=opponents,
                 play=play, metric=metric, title=str(data.get("name", "")))


def plan_battles(suite: Suite, policy: str) -> list[dict[str, Any]]:
    """Every battle of ``policy`` on ``suite`` (see the module docstring), unplayed."""
    if suite.play == "vector":
        return _plan_vector(suite, policy)
    out = []
    for set_name, opponent in suite.cells():
        scenarios = suite.scenario_sets[set_name]
        for i in range(suite.battles_per_cell):
            out.append({"set": set_name, "opponent": opponent,
                        "scenario": scenarios[i // 2 % len(scenarios)], "index": i,
                        "side": i % 2, "seed": suite.seed + i, "policy": policy})
    return out


def set_order(suite: Suite, set_name: str) -> list[str]:
    """A vector suite's scenario set in the order its battles draw it: sorted by
    ``derive_seed(suite.seed, j)`` of each scenario's place ``j`` (a fixed shuffle)."""
    from traveller_env.rules.rng import derive_seed

    names = suite.scenario_sets[set_name]
    order = sorted(range(len(names)), key=lambda j: derive_seed(suite.seed, j))
    return [names[j] for j in order]


def _plan_vector(suite: Suite, policy: str) -> list[dict[str, Any]]:
    """A vector suite's battles: battle ``i`` of a cell plays scenario ``i // 2`` of
    ``set_order`` (cycling), the policy on side ``i % 2``, in a one-row vector seeded
    ``derive_seed(suite.seed, i)`` (so both sides of a scenario, and every policy and
    opponent, meet the same draws)."""
    from traveller_env.rules.rng import derive_seed

    out = []
    seeds = [derive_seed(suite.seed, i) for i in range(suite.battles_per_cell)]
    for set_name in suite.scenario_sets:
        scenarios = set_order(suite, set_name)
        for opponent in suite.opponents:
            for i in range(suite.battles_per_cell):
                out.append({"set": set_name, "opponent": opponent,
                            "scenario": scenarios[i // 2 % len(scenarios)], "index": i,
                            "side": i % 2, "seed": seeds[i], "policy": policy})
    return out


_PLAYABLE: dict[tuple[str, str], str | None] = {}


def why_not_playable(policy: str, scenario: str) -> str | None:
    """``None`` when ``policy`` can play ``scenario``, else the loader's reason."""
    key = (policy, scenario)
    if key not in _PLAYABLE:
        try:
            make_policy(policy, scenario=scenario)
            _PLAYABLE[key] = None
        except (ValueError, ScenarioError) as exc:
            _PLAYABLE[key] = str(exc)
    return _PLAYABLE[key]


def play_one(battle: dict[str, Any]) -> dict[str, Any]:
    """Play one planned battle (``tournament.play_game``); its record."""
    from traveller_rl.tournament import Game, play_game

    policy, opponent = policy_file(battle["policy"]), policy_file(battle["opponent"])
    reason = (why_not_playable(policy, battle["scenario"])
              or why_not_playable(opponent, battle["scenario"]))
    if reason is not None:  # the record names the files as the suite and command line do
        for name, file in ((battle["policy"], policy), (battle["opponent"], opponent)):
            reason = reason.replace(file, name)
        return {**battle, "result": "not_playable", "reason": reason}
    players = (policy, opponent)
    side0, side1 = players if battle["side"] == 0 else players[::-1]
    try:
        game = play_game(Game(battle["scenario"], side0, side1, battle["index"],
                              battle["seed"]))
    except Exception as exc:  # a policy failing mid-battle: recorded, not scored
        return {**battle, "result": "error",
                "reason": f"the battle failed: {type(exc).__name__}: {exc}"}
    winner = game["winner"]
    result = "draw" if winner is None else "win" if winner == battle["side"] else "loss"
    return {**battle, "result": result, "winner": winner, "rounds": game["rounds"],
            "truncated": game["truncated"]}


def _play_chunk(battles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [play_one(b) for b in battles]


_PLAYERS: dict[str, Any] = {}


def vector_player(name: str) -> Any:
    """``name`` as a ``scenario_eval`` player: the in-core policy's name, a loaded learned
    policy (``.onnx``/``.pt`` with slot-relative actions), or ``None`` (it plays through the
    AEC env only: a ``.py`` policy, a Python-only NPC, absolute actions)."""
    from traveller_env.core.vector import CORE_POLICIES
    from traveller_rl.scenario_eval import load_learned

    if name not in _PLAYERS:
        player: Any = None
        if name in CORE_POLICIES:
            player = name
        elif name.endswith((".onnx", ".pt")) or is_rllib_checkpoint(name):
            try:
                player = load_learned(policy_file(name), name=_short(name))
            except ValueError:
                player = None  # it plays through the AEC env
        _PLAYERS[name] = player
    return _PLAYERS[name]


def _shares_a_vector(policy: Any, opponent: Any) -> bool:
    if policy is None or opponent is None:
        return False
    if isinstance(policy, str) or isinstance(opponent, str):
        return True
    return policy.layout == opponent.layout and policy.views == opponent.views


def play_cell(battles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One cell of a vector suite (one policy, one opponent): batched through
    ``traveller_rl.scenario_eval.play_battles`` when both play there and can share a vector,
    else one AEC battle at a time (``play_one``, on the battle seed the vector would use)."""
    from traveller_env.rules.rng import battle_seed
    from traveller_rl.scenario_eval import BattleSpec, play_battles

    if not battles:
        return []
    policy = vector_player(battles[0]["policy"])
    opponent = vector_player(battles[0]["opponent"])
    if not _shares_a_vector(policy, opponent):
        out = []
        for b in battles:
            seed = battle_seed(b["seed"], 0, 0)
            rec = play_one({**b, "seed": seed})
            out.append({**rec, "seed": b["seed"], "battle_seed": seed, "path": "aec"})
        return out
    specs = [BattleSpec(b["scenario"], b["side"], b["seed"]) for b in battles]
    path = "core" if isinstance(policy, str) and isinstance(opponent, str) else "vector"
    out = []
    for b, rec in zip(battles, play_battles(policy, opponent, specs), strict=True):
        row = {**b, "result": rec["result"], "path": path}
        for key in ("battle_seed", "winner", "reason"):
            if key in rec:
                row[key] = rec[key]
        out.append(row)
    return out


def run_benchmark(policies: Sequence[str], suite: Suite, workers: int = 1,
                  progress: bool = True) -> dict[str, list[dict[str, Any]]]:
    """Every battle of every policy on ``suite``: policy -> battle records (plan order)."""
    plan = [b for p in policies for b in plan_battles(suite, p)]
    chunks = [plan[k:k + suite.battles_per_cell]
              for k in range(0, len(plan), suite.battles_per_cell)]
    from traveller_rl.benchmark import _play_chunk, play_cell  # by their importable names

    worker = play_cell if suite.play == "vector" else _play_chunk

    results = list(run_chunks(worker, chunks, workers, progress=progress, total=len(plan),
                              ordered=True))
    by_policy: dict[str, list[dict[str, Any]]] = {p: [] for p in policies}
    for part in results:
        for b in part:
            by_policy[b["policy"]].append({k: v for k, v in b.items() if k != "policy"})
    return by_policy


def cell_summaries(suite: Suite, battles: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell: battles played, wins, draws, losses, win rate and Wilson 95% interval;
    ``not_playable`` battles are counted apart (with the first reason)."""
    cells = []
    for set_name, opponent in suite.cells():
        mine = [b for b in battles if b["set"] == set_name and b["opponent"] == opponent]
        played = [b for b in mine if b["result"] in ("win", "draw", "loss")]
        skipped = [b for b in mine if b["result"] not in ("win", "draw", "loss")]
        wins = sum(b["result"] == "win" for b in played)
        draws = sum(b["result"] == "draw" for b in played)
        n = len(played)
        lo, hi = wilson_interval(wins, n)
        cells.append({"set": set_name, "opponent": opponent, "battles": n, "wins": wins,
                      "draws": draws, "losses": n - wins - draws,
                      "win_rate": wins / n if n else None,
                      "win_ci95": [lo, hi] if n else None, "not_playable": len(skipped),
                      "reason": skipped[0]["reason"] if skipped else None})
    return cells


def cell_outcomes(suite: Suite, battles: Sequence[dict[str, Any]]
                  ) -> dict[tuple[str, str], np.ndarray]:
    """Each playable cell's battle outcomes (1 won, 0 drawn or lost), in cell order."""
    out = {}
    for set_name, opponent in suite.cells():
        won = [b["result"] == "win" for b in battles if b["set"] == set_name
               and b["opponent"] == opponent and b["result"] in ("win", "draw", "loss")]
        if won:
            out[(set_name, opponent)] = np.asarray(won, dtype=float)
    return out


#: The thresholds of the performance profile (``aggregate``'s ``profile``).
PROFILE_TAUS = tuple(round(0.05 * k, 2) for k in range(21))


def aggregate(suite: Suite, battles: Sequence[dict[str, Any]],
              samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> dict[str, Any]:
    """The suite's aggregate over the playable cells' win rates (``mean``, or ``iqm`` with the
    mean beside it and the performance profile), each with a stratified bootstrap 95%
    interval (battles resampled within each cell: ``traveller_rl.aggregates``)."""
    if suite.metric == "iqm":
        return _iqm_aggregate(suite, battles, samples, seed)
    outcomes = list(cell_outcomes(suite, battles).values())
    total = len(suite.cells())
    if not outcomes:
        return {"metric": "mean cell win rate", "score": None, "ci95": None, "cells_used": 0,
                "cells": total}
    rng = np.random.default_rng(seed)
    boot = np.zeros(samples)
    for won in outcomes:
        picks = rng.integers(0, len(won), size=(samples, len(won)))
        boot += won[picks].mean(axis=1)
    boot /= len(outcomes)
    score = float(np.mean([w.mean() for w in outcomes]))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"metric": "mean cell win rate", "score": score, "ci95": [float(lo), float(hi)],
            "cells_used": len(outcomes), "cells": total}


def _iqm_aggregate(suite: Suite, battles: Sequence[dict[str, Any]], samples: int,
                   seed: int) -> dict[str, Any]:
    from traveller_rl.aggregates import iqm, performance_profile, stratified_bootstrap

    outcomes = list(cell_outcomes(suite, battles).values())
    out: dict[str, Any] = {"metric": "IQM of cell win rates", "score": None, "ci95": None,
                           "mean": None, "mean_ci95": None, "cells_used": len(outcomes),
                           "cells": len(suite.cells()), "profile": None}
    if not outcomes:
        return out

    def both(means: np.ndarray) -> np.ndarray:
        return np.stack([iqm(means, axis=-1), means.mean(axis=-1)], axis=-1)

    point, ci = stratified_bootstrap(outcomes, both, samples, seed)
    profile, band = performance_profile(outcomes, PROFILE_TAUS, samples, seed)
    out.update(score=float(point[0]), ci95=[float(ci[0][0]), float(ci[1][0])],
               mean=float(point[1]), mean_ci95=[float(ci[0][1]), float(ci[1][1])],
               profile={"tau": list(PROFILE_TAUS), "fraction": profile.tolist(),
                        "ci95": [band[0].tolist(), band[1].tolist()]})
    return out


def improvement(suite: Suite, battles_a: Sequence[dict[str, Any]],
                battles_b: Sequence[dict[str, Any]], samples: int = BOOTSTRAP_SAMPLES,
                seed: int = 0) -> dict[str, Any]:
    """The probability of improvement of policy A over B on the cells both played
    (``traveller_rl.aggregates.probability_of_improvement_interval``: per cell
    ``P(X > Y) + 0.5 P(X = Y)`` of a battle outcome of each, averaged over cells)."""
    from traveller_rl.aggregates import probability_of_improvement_interval

    a, b = cell_outcomes(suite, battles_a), cell_outcomes(suite, battles_b)
    shared = [c for c in a if c in b]
    if not shared:
        return {"score": None, "ci95": None, "cells_used": 0, "cells": len(suite.cells())}
    point, (lo, hi) = probability_of_improvement_interval(
        [a[c] for c in shared], [b[c] for c in shared], samples, seed)
    return {"score": point, "ci95": [lo, hi], "cells_used": len(shared),
            "cells": len(suite.cells())}


def _rate(cell: dict[str, Any]) -> str:
    if not cell["battles"]:
        return "n/p"
    lo, hi = cell["win_ci95"]
    return f"{cell['win_rate']:.2f} [{lo:.2f}, {hi:.2f}]"


def format_table(policy: str, suite: Suite, record: dict[str, Any]) -> str:
    """One policy's table: a row per cell, then the aggregate."""
    width = max(len("scenario set"), *(len(s) for s in suite.scenario_sets)) + 2
    owidth = max(len(Path(o).stem) for o in suite.opponents) + 2
    lines = [f"{policy} on benchmark {suite.name}",
             f"{'scenario set':<{width}}{'opponent':<{owidth}}{'W':>4}{'D':>4}{'L':>4}"
             f"{'n/p':>5}  win rate [95% Wilson]"]
    for c in record["cells"]:
        lines.append(f"{c['set']:<{width}}{Path(c['opponent']).stem:<{owidth}}{c['wins']:>4}"
                     f"{c['draws']:>4}{c['losses']:>4}{c['not_playable']:>5}  {_rate(c)}")
    agg = record["aggregate"]
    if agg["score"] is None:
        lines.append("aggregate: not playable on any cell")
    else:
        lo, hi = agg["ci95"]
        lines.append(f"aggregate ({agg['metric']}, {agg['cells_used']} of {agg['cells']} "
                     f"cells): {agg['score']:.3f} [{lo:.3f}, {hi:.3f}] (bootstrap 95%)")
        if agg.get("mean") is not None:
            lo, hi = agg["mean_ci95"]
            lines.append(f"mean cell win rate: {agg['mean']:.3f} [{lo:.3f}, {hi:.3f}]")
    reasons = sorted({c["reason"] for c in record["cells"] if c["reason"]})
    lines += [f"not playable: {r}" for r in reasons[:3]]
    return "\n".join(lines)


def _short(name: str) -> str:
    return Path(name).stem if name.endswith((".onnx", ".pt")) else name


def _ranked(records: dict[str, dict[str, Any]]) -> list[str]:
    """Policies by cells played, then aggregate, best first."""
    def key(name: str) -> tuple[int, float]:
        agg = records[name]["aggregate"]
        return (-agg["cells_used"], -(agg["score"] if agg["score"] is not None else -1))
    return sorted(records, key=key)


def format_iqm_leaderboard(suite: Suite, records: dict[str, dict[str, Any]]) -> str:
    """An IQM suite's Markdown leaderboard: a row per policy (IQM, mean, cells), best first;
    then a row per cell with each policy's win rate and Wilson interval."""
    names = _ranked(records)
    lines = ["| policy | IQM [95% CI] | mean [95% CI] | cells |", "|---|---|---|---|"]
    for name in names:
        agg = records[name]["aggregate"]
        if agg["score"] is None:
            lines.append(f"| {_short(name)} | n/p | n/p | 0/{agg['cells']} |")
            continue
        lines.append(f"| {_short(name)} | {agg['score']:.3f} [{agg['ci95'][0]:.3f}, "
                     f"{agg['ci95'][1]:.3f}] | {agg['mean']:.3f} [{agg['mean_ci95'][0]:.3f}, "
                     f"{agg['mean_ci95'][1]:.3f}] | {agg['cells_used']}/{agg['cells']} |")
    lines += ["", "| cell | " + " | ".join(_short(n) for n in names) + " |",
              "|---" * (len(names) + 1) + "|"]
    for k, (set_name, opponent) in enumerate(suite.cells()):
        row = [_rate(records[n]["cells"][k]) for n in names]
        lines.append(f"| {set_name} vs {_short(opponent)} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def format_leaderboard(suite: Suite, records: dict[str, dict[str, Any]]) -> str:
    """A Markdown leaderboard: a row per policy, best aggregate first, a column per cell
    (an IQM suite: ``format_iqm_leaderboard``)."""
    if suite.metric == "iqm":
        return format_iqm_leaderboard(suite, records)
    cells = suite.cells()
    head = ["policy", "score [95% CI]", "cells"] + [f"{s} vs {Path(o).stem}" for s, o in cells]
    rows = []
    for name, rec in records.items():
        agg = rec["aggregate"]
        score = ("n/p" if agg["score"] is None else
                 f"{agg['score']:.3f} [{agg['ci95'][0]:.2f}, {agg['ci95'][1]:.2f}]")
        row = [Path(name).stem if name.endswith(".onnx") else name, score,
               f"{agg['cells_used']}/{agg['cells']}"]
        row += [_rate(c) for c in rec["cells"]]
        key = (-agg["cells_used"], -(agg["score"] if agg["score"] is not None else -1))
        rows.append((key, row))
    rows.sort(key=lambda r: r[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for _, r in rows]
    return "\n".join(lines)


def write_record(path: Path, payload: dict[str, Any]) -> None:
    """Write the JSON match record; a path ending ``.gz`` is gzipped (no timestamp inside, so
    the same record gives the same bytes)."""
    text = json.dumps(payload, indent=1, allow_nan=False) + "\n"
    if path.suffix == ".gz":
        with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(text.encode("utf-8"))
    else:
        path.write_text(text, encoding="utf-8")


def read_record(path: Path) -> dict[str, Any]:
    """A match record written by ``write_record`` (gzipped or not)."""
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)


def format_improvement(name: str, against: str, poi: dict[str, Any]) -> str:
    """One line: the probability of improvement of ``name`` over ``against``."""
    if poi["score"] is None:
        return f"P({_short(name)} > {_short(against)}): no cell both played"
    lo, hi = poi["ci95"]
    return (f"P({_short(name)} > {_short(against)}) = {poi['score']:.3f} [{lo:.3f}, {hi:.3f}] "
            f"(probability of improvement, bootstrap 95%, {poi['cells_used']} of "
            f"{poi['cells']} cells)")


# ---------------------------------------------------------------------------- command
def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The options of ``traveller benchmark``."""
    p = parser or argparse.ArgumentParser(prog="traveller benchmark", description=__doc__,
                                          allow_abbrev=False)
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = examples_epilog("""
        traveller benchmark tactician
        traveller benchmark results/league/understudy.onnx --suite v1 --out runs/understudy.json
        traveller benchmark rush,marksman,cover,tactician --workers 2 --markdown runs/board.md
    """)
    p.add_argument("policies", metavar="POLICY",
                   help="the policy to benchmark (a registry name, a .onnx/.pt file, ...) or "
                        "a comma-separated list of them (a leaderboard)")
    p.add_argument("--suite", default="v1",
                   help="suite version (v1 is configs/benchmarks/v1.yaml) or a suite file")
    p.add_argument("--sets", metavar="SET[,SET...]",
                   help="play only these scenario sets of the suite (the same battles as in "
                        "the whole suite; the aggregate covers only their cells)")
    p.add_argument("--workers", type=int_at_least(1), default=1,
                   help="processes playing battles (1)")
    p.add_argument("--out", type=Path,
                   help="write the JSON match record to this file (gzipped if it ends .gz)")
    p.add_argument("--markdown", type=Path, help="write the leaderboard table (Markdown)")
    p.add_argument("--html", type=Path,
                   help="write an HTML report with the plots (self-contained, opens offline)")
    p.add_argument("--against", metavar="POLICY",
                   help="also play POLICY on the same battles and print the probability of "
                        "improvement of each POLICY over it, with its 95%% interval")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``traveller benchmark``; 0 on success, 2 on a bad suite or policy name."""
    try:
        suite = load_suite(args.suite)
        sets = getattr(args, "sets", None)
        if sets is not None:
            suite = suite.only([s.strip() for s in sets.split(",")])
        policies = parse_policy_list(args.policies)
        against = getattr(args, "against", None)
        if against is not None:
            checked = parse_policy_list(against)
            if len(checked) != 1:
                raise ValueError(f"--against {against}: one policy, not a list")
            against = checked[0]
            if against not in policies:
                policies = [*policies, against]
        for name in [*policies, *suite.opponents]:
            if is_trained(name):  # a folder (RLlib) or a file, loaded per scenario later
                if not Path(policy_file(name)).exists():
                    kind = "policy" if name in policies else f"{suite.name}'s opponent"
                    raise ValueError(f"{kind} {name}: no such policy file")
            elif not (name.endswith(".onnx") or name.endswith(".pt")):
                make_policy(name)  # an unknown name fails here, before any battle
            elif not Path(policy_file(name)).is_file():
                kind = "policy" if name in policies else f"{suite.name}'s opponent"
                raise ValueError(f"{kind} {name}: no such policy file")
    except (ValueError, ImportError) as exc:
        print(f"traveller benchmark: error: {exc}", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("traveller benchmark: error: --workers must be >= 1", file=sys.stderr)
        return 2
    started = time.time()
    played = run_benchmark(policies, suite, workers=args.workers,
                           progress=not args.no_progress)
    records = {}
    for name in policies:
        battles = played[name]
        records[name] = {"policy": name, "cells": cell_summaries(suite, battles),
                         "aggregate": aggregate(suite, battles), "battles": battles}
        print(format_table(name, suite, records[name]))
        print()
    if len(policies) > 1:
        print(format_leaderboard(suite, records))
    versus = {}
    if against is not None:
        for name in policies:
            if name != against:
                versus[name] = improvement(suite, records[name]["battles"],
                                           records[against]["battles"])
                print(format_improvement(name, against, versus[name]))
    command = "traveller benchmark " + shlex.join(
        [args.policies, "--suite", str(args.suite), "--workers", str(args.workers)]
        + (["--sets", sets] if sets is not None else [])
        + (["--against", against] if against is not None else []))
    payload = {"suite": {"version": suite.version, "name": suite.name,
                         "file": str(suite.path.relative_to(config_dir().parent))
                         if suite.path.is_relative_to(config_dir().parent) else str(suite.path),
                         "sha256": suite.sha256, "description": suite.description,
                         "sets": list(suite.scenario_sets)},
               "command": command, "seconds": round(time.time() - started, 1),
               "policies": records}
    if versus:
        payload["probability_of_improvement"] = {"over": against, "of": versus}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_record(args.out, payload)
        print(f"match record: {args.out}")
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(format_leaderboard(suite, records) + "\n", encoding="utf-8")
    if getattr(args, "html", None) is not None:
        from traveller_rl.benchmark_report import write_report

        write_report(args.html, suite, payload, format_leaderboard(suite, records))
        print(f"report: {args.html}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m traveller_rl.benchmark``."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

