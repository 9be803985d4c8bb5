"""Round-robin tournament of policies on built-in (or any) scenarios.

    python -m traveller_rl.tournament --policies rush,marksman,cover,leader,tactician,random \
        --scenarios duel,squad,ambush --battles 200 --seed 0 --workers 2 --out runs/t

Every pair of policies meets on every scenario, ``--battles`` times with each side
assignment (A plays side 0 and B side 1, then B side 0 and A side 1); battle ``i`` of a
pairing uses battle seed ``--seed + i`` for both assignments, and each side's policy is seeded
from that battle seed and its side, so the table depends only on the arguments (not on the
number of workers or the order games finish in). Games run in parallel processes
(``--workers``, default: all cores) with a progress bar.

Outputs in ``--out``: ``pairings.csv`` (win/draw/loss per scenario and ordered pairing, from
the first policy's side of the table, with Wilson 95% intervals, mean rounds and damage, and
its battles, wins and win rate on each of the scenario's sides: ``n_side0``, ``wins_side0``...),
``ratings.csv`` (per policy: record, Elo with bootstrap 95% interval, OpenSkill),
``games.csv`` (one row per battle), ``results.json`` (all of it plus the run's settings),
``summary.md`` (the tables in Markdown) and ``winrate_heatmap.png``. With ``--replays DIR``,
one example battle per scenario and pairing (battle 0, the first policy on side 0) is played
again and written as a self-contained replay page (``traveller_env.replay.html``).

**Resuming.** Finished games are appended to ``results.jsonl`` in ``--out`` as they finish
(a first line records the arguments the tables depend on; each chunk of games is flushed and
synced to disk). ``--resume`` with the same arguments keeps the games recorded there, plays the
rest, and writes the same tables as an uninterrupted run (``--workers``, ``--no-progress`` and
``--replays`` may change; any other changed flag is refused, naming it). ``--policies`` may
grow: the recorded games are kept and only the new pairings are played, so a policy joins a
rated tournament (the search NPC at a new budget) without replaying the others' games.

``build_parser(parser)`` and ``run(args)`` are the ``traveller tournament`` command; the default
``--out`` is ``runs/tournament`` (the docs' published tables are written only when asked).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from traveller_agents.registry import is_trained, make_policy, parse_policy_list
from traveller_rl.commandline import (
    SEED_MAX,
    UsageError,
    check_at_least,
    check_output_folder,
    check_seed,
    int_at_least,
    seed_type,
)
from traveller_rl.common import run_chunks
from traveller_rl.evaluation import play_turns, wilson_interval
from traveller_rl.stats import bootstrap_elo, openskill_ratings

__all__ = ["DEFAULT_OUT", "RESULTS_LOG", "Game", "build_games", "build_parser", "command_line",
           "game_key", "main", "play_game", "read_results_log", "run", "run_tournament",
           "summarise", "write_example_replays", "write_outputs"]


class Game(NamedTuple):
    """One battle to play: ``side0``'s policy plays the scenario's first side."""

    scenario: str
    side0: str
    side1: str
    index: int
    seed: int


def build_games(policies: Sequence[str], scenarios: Sequence[str], battles: int,
                seed: int) -> list[Game]:
    """Every unordered pair on every scenario, ``battles`` seeds, both side assignments."""
    games = []
    for sc in scenarios:
        for a, b in combinations(policies, 2):
            for i in range(battles):
                games.append(Game(sc, a, b, i, seed + i))
                games.append(Game(sc, b, a, i, seed + i))
    return games


def policy_seed(battle_seed: int, side: int) -> int:
    """The seed a side's policy gets for a battle (independent of the battle's dice)."""
    return int(np.random.SeedSequence([battle_seed, side, 7919]).generate_state(1)[0])


# ---------------------------------------------------------------------------- playing
_ENVS: dict[str, Any] = {}
_POLICIES: dict[tuple[str, str, int], Any] = {}


def _env_for(scenario: str) -> Any:
    from traveller_env.env import TravellerEnv

    env = _ENVS.get(scenario)
    if env is None:
        env = _ENVS[scenario] = TravellerEnv(scenario)
    return env


def _policy_for(name: str, scenario: str, side: int) -> Any:
    key = (name, scenario, side)
    pol = _POLICIES.get(key)
    if pol is None:
        pol = _POLICIES[key] = make_policy(name, scenario=scenario)
    return pol


def play_game(game: Game) -> dict[str, Any]:
    """Play one battle; return its outcome (winner side index or None, rounds, damage).

    Raises ``RuntimeError`` naming the policy, battle and action if a policy picks an
    illegal action.
    """
    env = _env_for(game.scenario)
    env.reset(seed=game.seed)
    names = (game.side0, game.side1)
    pols = []
    for side, name in enumerate(names):
        pol = _policy_for(name, game.scenario, side)
        pol.reset(policy_seed(game.seed, side))
        pols.append(pol)
    battle = env.battle
    side_of = {c.id: c.side for c in battle.combatants}

    def illegal(agent: str, action: int) -> RuntimeError:
        labels = env.action_labels
        label = labels[action] if 0 <= action < len(labels) else action
        return RuntimeError(f"policy {names[side_of[agent]]!r} chose illegal action "
                            f"{label!r} for {agent} in {game.scenario} seed {game.seed}")

    decisions = play_turns(env, {agent: pols[side] for agent, side in side_of.items()},
                           illegal)
    damage = [0, 0]
    for ev in battle.events:
        if ev["type"] == "attack":
            damage[side_of[ev["actor"]]] += ev["damage"]
    winner = None if battle.winner is None else battle.side_names.index(battle.winner)
    return {"scenario": game.scenario, "side0": game.side0, "side1": game.side1,
            "index": game.index, "seed": game.seed, "winner": winner,
            "rounds": battle.round, "truncated": battle.truncated,
            "damage0": damage[0], "damage1": damage[1], "decisions": decisions}


def _run_chunk(games: list[tuple]) -> list[dict[str, Any]]:
    """Worker entry point (top level, so spawn-started processes can import it); games come
    as plain tuples so that pickling them needs no class from this module."""
    return [play_game(Game(*g)) for g in games]


def _chunks(games: Sequence[Game], size: int) -> list[list[Game]]:
    groups: dict[tuple, list[Game]] = defaultdict(list)
    for g in games:
        groups[(g.scenario, g.side0, g.side1)].append(g)
    out = []
    for group in groups.values():
        for k in range(0, len(group), size):
            out.append(group[k:k + size])
    return out


def game_key(result: dict[str, Any] | Game) -> tuple[str, str, str, int]:
    """What identifies a game among a tournament's: scenario, side assignment, battle index."""
    if isinstance(result, Game):
        return result.scenario, result.side0, result.side1, result.index
    return result["scenario"], result["side0"], result["side1"], int(result["index"])


def run_tournament(policies: Sequence[str], scenarios: Sequence[str], battles: int,
                   seed: int = 0, workers: int = 1, progress: bool = True,
                   chunk_size: int = 20, done: Sequence[dict[str, Any]] = (),
                   record: Callable[[list[dict[str, Any]]], None] | None = None,
                   ) -> list[dict[str, Any]]:
    """Play every game (see the module docstring); results in a canonical order. Games in
    ``done`` (results of an earlier, interrupted run) are kept, not played again; ``record``
    is called with each chunk's results as it finishes."""
    games = build_games(policies, scenarios, battles, seed)
    wanted = {game_key(g) for g in games}
    kept = {game_key(r): r for r in done if game_key(r) in wanted}
    results: list[dict[str, Any]] = list(kept.values())
    chunks = _chunks([g for g in games if game_key(g) not in kept], chunk_size)
    # the worker by its importable name, whether this file runs as a script, as
    # ``traveller_rl.tournament`` or loaded from its path by another command
    from traveller_rl.tournament import _run_chunk as worker

    for part in run_chunks(worker, [[tuple(g) for g in chunk] for chunk in chunks], workers,
                           progress=progress, total=len(games), initial=len(kept)):
        results.extend(part)
        if record is not None:
            record(part)
    order = {sc: k for k, sc in enumerate(scenarios)}
    results.sort(key=lambda r: (order[r["scenario"]], r["side0"], r["side1"], r["index"]))
    return results


# ---------------------------------------------------------------------------- statistics
def _record(rows: Iterable[tuple[int, float, float, int]]) -> dict[str, Any]:
    """Aggregate ``(outcome, dealt, taken, rounds)`` rows; outcome 1 win, 0 draw, -1 loss."""
    rows = list(rows)
    n = len(rows)
    wins = sum(1 for o, *_ in rows if o == 1)
    draws = sum(1 for o, *_ in rows if o == 0)
    losses = n - wins - draws
    rec: dict[str, Any] = {"n": n, "wins": wins, "draws": draws, "losses": losses}
    for key, k in (("win", wins), ("draw", draws), ("loss", losses)):
        lo, hi = wilson_interval(k, n)
        rec[f"{key}_rate"] = k / n if n else 0.0
        rec[f"{key}_lo"], rec[f"{key}_hi"] = lo, hi
    rec["score"] = (wins + 0.5 * draws) / n if n else 0.0
    rec["mean_rounds"] = float(np.mean([r for *_, r in rows])) if n else 0.0
    rec["mean_damage_dealt"] = float(np.mean([d for _, d, _, _ in rows])) if n else 0.0
    rec["mean_damage_taken"] = float(np.mean([t for _, _, t, _ in rows])) if n else 0.0
    return rec


def _perspective(r: dict[str, Any], side: int) -> tuple[int, float, float, int]:
    w = r["winner"]
    outcome = 0 if w is None else (1 if w == side else -1)
    dealt, taken = (r["damage0"], r["damage1"]) if side == 0 else (r["damage1"], r["damage0"])
    return outcome, dealt, taken, r["rounds"]


def summarise(results: Sequence[dict[str, Any]], policies: Sequence[str],
              scenarios: Sequence[str], bootstrap: int = 200) -> dict[str, Any]:
    """Tables from game results: ``pairings`` (per scenario and ``all``, per ordered pair,
    from the first policy's view; ``n_side0``/``wins_side0``/``win_rate_side0`` and the same
    for ``side1`` split them by the side the policy played: on a map that favours one side,
    a pairing's total hides that), ``ratings`` (per policy), ``matrix`` (win rate of row vs
    column per scenario). Deterministic in ``results``."""
    per: dict[tuple[str, str, str], list] = defaultdict(list)
    outcomes_by_side: dict[tuple[str, str, str, int], list[int]] = defaultdict(list)
    overall: dict[str, list] = defaultdict(list)
    for r in results:
        for side, (me, opp) in enumerate(((r["side0"], r["side1"]), (r["side1"], r["side0"]))):
            row = _perspective(r, side)
            for sc in (r["scenario"], "all"):
                per[(sc, me, opp)].append(row)
                outcomes_by_side[(sc, me, opp, side)].append(row[0])
            overall[me].append(row)
    pairings = []
    matrix: dict[str, list[list[float | None]]] = {}
    for sc in [*scenarios, "all"]:
        mat: list[list[float | None]] = []
        for me in policies:
            line: list[float | None] = []
            for opp in policies:
                rows = per.get((sc, me, opp))
                if me == opp or not rows:
                    line.append(None)
                    continue
                rec = _record(rows)
                for side in (0, 1):  # the policy on the scenario's first / second side
                    outcomes = outcomes_by_side.get((sc, me, opp, side), [])
                    wins = sum(1 for o in outcomes if o == 1)
                    rec[f"n_side{side}"], rec[f"wins_side{side}"] = len(outcomes), wins
                    rec[f"win_rate_side{side}"] = wins / len(outcomes) if outcomes else 0.0
                pairings.append({"scenario": sc, "policy": me, "opponent": opp, **rec})
                line.append(rec["win_rate"])
            mat.append(line)
        matrix[sc] = mat
    index = {p: k for k, p in enumerate(policies)}
    games = []
    for r in results:
        w = r["winner"]
        games.append((index[r["side0"]], index[r["side1"]],
                      0.5 if w is None else (1.0 if w == 0 else 0.0)))
    elo, lo, hi = bootstrap_elo(policies, games, resamples=bootstrap, seed=0)
    skill = openskill_ratings(policies, games, permutations=10, seed=0)
    ratings = []
    for k, p in enumerate(policies):
        rec = _record(overall.get(p, []))
        ratings.append({"policy": p, **rec, "elo": float(elo[k]), "elo_lo": float(lo[k]),
                        "elo_hi": float(hi[k]), "openskill_mu": skill[k]["mu"],
                        "openskill_sigma": skill[k]["sigma"],
                        "openskill_ordinal": skill[k]["ordinal"]})
    ratings.sort(key=lambda x: -x["elo"])
    return {"policies": list(policies), "scenarios": list(scenarios), "pairings": pairings,
            "ratings": ratings, "matrix": matrix}


# ---------------------------------------------------------------------------- output
def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def markdown_tables(summary: dict[str, Any]) -> str:
    """The ratings table and the overall win-rate matrix in Markdown."""
    lines = ["| policy | battles | W / D / L | win rate (95% CI) | Elo (95% CI) | OpenSkill "
             "μ ± σ | mean rounds | mean damage dealt / taken |",
             "|---|---:|---|---|---|---|---:|---|"]
    for r in summary["ratings"]:
        lines.append(
            f"| {r['policy']} | {r['n']} | {r['wins']} / {r['draws']} / {r['losses']} | "
            f"{_pct(r['win_rate'])} ({_pct(r['win_lo'])}–{_pct(r['win_hi'])}) | "
            f"{r['elo']:.0f} ({r['elo_lo']:.0f}–{r['elo_hi']:.0f}) | "
            f"{r['openskill_mu']:.1f} ± {r['openskill_sigma']:.1f} | {r['mean_rounds']:.1f} | "
            f"{r['mean_damage_dealt']:.1f} / {r['mean_damage_taken']:.1f} |")
    pols = summary["policies"]
    out = ["\n".join(lines)]
    for sc in [*summary["scenarios"], "all"]:
        mat = summary["matrix"][sc]
        title = "all scenarios" if sc == "all" else sc
        rows = [f"Win rate of the row policy against the column policy ({title}; draws "
                "count as neither):", "",
                "| | " + " | ".join(pols) + " |", "|---" * (len(pols) + 1) + "|"]
        for p, line in zip(pols, mat, strict=True):
            cells = ["–" if v is None else _pct(v) for v in line]
            rows.append(f"| **{p}** | " + " | ".join(cells) + " |")
        out.append("\n".join(rows))
    return "\n\n".join(out) + "\n"


def plot_heatmap(summary: dict[str, Any], path: Path) -> None:
    """Win-rate matrices (all scenarios, then each) as one annotated PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pols = summary["policies"]
    panels = ["all", *summary["scenarios"]]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1, 4.6),
                             squeeze=False)
    im = None
    for ax, sc in zip(axes[0], panels, strict=True):
        mat = np.array([[np.nan if v is None else v for v in line]
                        for line in summary["matrix"][sc]], dtype=float)
        im = ax.imshow(mat, vmin=0, vmax=1, cmap="RdYlGn")
        ax.set_xticks(range(len(pols)), pols, rotation=45, ha="right")
        ax.set_yticks(range(len(pols)), pols if ax is axes[0][0] else [""] * len(pols))
        ax.set_title("all scenarios" if sc == "all" else sc)
        for i in range(len(pols)):
            for j in range(len(pols)):
                if not np.isnan(mat[i, j]):
                    ax.text(j, i, f"{100 * mat[i, j]:.0f}", ha="center", va="center",
                            fontsize=8)
        ax.set_xlabel("opponent")
    axes[0][0].set_ylabel("policy (row wins)")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="win rate")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def write_outputs(summary: dict[str, Any], results: Sequence[dict[str, Any]], out: Path,
                  run: dict[str, Any]) -> list[Path]:
    """Write the CSV, JSON, Markdown and PNG files; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []

    def write_csv(name: str, rows: list[dict[str, Any]]) -> None:
        path = out / name
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else [])
            writer.writeheader()
            for row in rows:
                writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v)
                                 for k, v in row.items()})
        paths.append(path)

    write_csv("pairings.csv", summary["pairings"])
    write_csv("ratings.csv", summary["ratings"])
    write_csv("games.csv", list(results))
    path = out / "results.json"
    path.write_text(json.dumps({"run": run, **summary}, indent=1))
    paths.append(path)
    path = out / "summary.md"
    path.write_text(f"Command: `{run['command']}`\n\n{markdown_tables(summary)}")
    paths.append(path)
    path = out / "winrate_heatmap.png"
    plot_heatmap(summary, path)
    paths.append(path)
    return paths


def write_example_replays(policies: Sequence[str], scenarios: Sequence[str], seed: int,
                          out: Path) -> list[Path]:
    """One replay page per scenario and pairing: battle 0 of the tournament with the first
    policy on side 0, played again (the same battle: seeds depend only on the arguments), as
    ``<scenario>__<a>_vs_<b>.html`` in ``out``."""
    from traveller_env.replay.html import safe_filename, write_battle_html

    paths = []
    for sc in scenarios:
        for a, b in combinations(policies, 2):
            play_game(Game(sc, a, b, 0, seed))
            env = _env_for(sc)
            sides = env.battle.side_names
            title = f"{sc}, seed {seed}: {a} ({sides[0]}) vs {b} ({sides[1]})"
            name = f"{safe_filename(sc)}__{safe_filename(a)}_vs_{safe_filename(b)}.html"
            paths.append(write_battle_html(out / name, env.battle, env.scenario, seed=seed,
                                           title=title))
    return paths


# ---------------------------------------------------------------------------- the results log
#: The log of finished games in ``--out``: a header line, then one line per game.
RESULTS_LOG = "results.jsonl"
#: The flags whose values the tables depend on; a resumed tournament may not change them.
RESUME_FLAGS = ("policies", "scenarios", "battles", "seed", "bootstrap")


def resume_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments recorded in the results log's header (a resumed run must match them)."""
    return {name: getattr(args, name) for name in RESUME_FLAGS}


def _adds_to(recorded: Any, now: str) -> bool:
    """Whether the ``--policies`` list ``now`` keeps every recorded policy and adds some."""
    if not isinstance(recorded, str):
        return False
    old, new = recorded.split(","), now.split(",")
    return set(old) < set(new)


def read_results_log(path: Path, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The games recorded in ``path`` by a tournament with the same ``settings`` (a
    ``UsageError`` naming each changed flag otherwise). A line cut by a kill is dropped, and
    the file is cut back to its complete lines."""
    if not path.is_file():
        raise UsageError(f"--resume: {path} does not exist; there is no tournament to resume "
                         "in this --out folder")
    data = path.read_bytes()
    complete = data[:data.rfind(b"\n") + 1]
    lines = complete.decode().splitlines()
    try:
        header = json.loads(lines[0])["tournament"] if lines else None
    except (ValueError, KeyError, TypeError):
        header = None
    if not isinstance(header, dict):
        raise UsageError(f"--resume: {path} is not a tournament's results log")
    changed = [f"--{name} (recorded: {header.get(name)!r}, now: {value!r})"
               for name, value in settings.items()
               if header.get(name) != value and not (name == "policies"
                                                     and _adds_to(header.get(name), value))]
    if changed:
        raise UsageError("--resume: the tournament was started with other arguments; these "
                         "may not change on resume: " + "; ".join(changed))
    if len(complete) != len(data):
        with path.open("r+b") as fh:
            fh.truncate(len(complete))
    return [json.loads(line) for line in lines[1:] if line.strip()]


def read_games_csv(path: Path) -> list[dict[str, Any]]:
    """The games a finished tournament wrote to ``games.csv``, as ``play_game`` returned them
    (``ValueError`` naming the file and line for one that is not a tournament's)."""
    ints = ("index", "seed", "rounds", "damage0", "damage1", "decisions")
    games = []
    with Path(path).open(newline="") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            try:
                game: dict[str, Any] = {k: row[k] for k in ("scenario", "side0", "side1")}
                game.update({k: int(row[k]) for k in ints})
                game["winner"] = None if row["winner"] == "" else int(row["winner"])
                if row["truncated"] not in ("True", "False"):
                    raise ValueError(row["truncated"])
                game["truncated"] = row["truncated"] == "True"
            except (KeyError, ValueError, TypeError) as exc:
                raise ValueError(f"{path}: line {line} is not a tournament game ({exc})") from None
            games.append({k: game[k] for k in GAME_FIELDS})
    return games


#: The fields of a game's result, in ``play_game``'s order.
GAME_FIELDS = ("scenario", "side0", "side1", "index", "seed", "winner", "rounds", "truncated",
               "damage0", "damage1", "decisions")


class ResultsLog:
    """Appends finished games to the results log, each chunk flushed and synced to disk."""

    def __init__(self, path: Path, settings: dict[str, Any] | None) -> None:
        """Open ``path`` for appending; a new log (``settings`` given) starts with its header
        line."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = path.open("w" if settings is not None else "a")
        if settings is not None:
            self.append([{"tournament": settings}])

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Write ``rows``, one JSON line each, and make them durable."""
        self.fh.write("".join(json.dumps(r) + "\n" for r in rows))
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        """Close the file."""
        self.fh.close()


# ---------------------------------------------------------------------------- command line
#: Where a tournament writes when no ``--out`` is given (``runs/`` is ignored by git).
DEFAULT_OUT = "runs/tournament"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The tournament's arguments (added to ``parser`` when given, e.g. a subcommand's)."""
    if parser is None:
        parser = argparse.ArgumentParser(allow_abbrev=False,
            prog="python -m traveller_rl.tournament",
            description="Round-robin tournament of policies.")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = ("examples:\n"
                     "  traveller tournament --policies rush,marksman --scenarios duel "
                     "--battles 50\n"
                     "  traveller tournament --policies runs/squad/ppo.pt,tactician,cover "
                     "--scenarios squad --out runs/t1\n"
                     "  traveller tournament --out runs/tournament --overwrite")
    play = parser.add_argument_group("who plays where")
    play.add_argument("--policies", default="rush,marksman,cover,leader,tactician,random",
                      help="comma-separated registry names, trained policy files (MaskablePPO "
                           ".zip, train_ppo .pt, exported .onnx) or RLlib checkpoint folders "
                           "(default: %(default)s)")
    play.add_argument("--scenarios", default="duel,squad,ambush",
                      help="comma-separated scenario names or paths (default: %(default)s)")
    play.add_argument("--battles", type=int_at_least(1), default=200,
                      help="battles per pairing, scenario and side assignment "
                           "(default: %(default)s)")
    play.add_argument("--seed", type=seed_type, default=0,
                      help="battle i uses seed SEED + i (default: %(default)s)")
    play.add_argument("--workers", type=int_at_least(1), default=os.cpu_count() or 1,
                      help="worker processes (default: all cores)")
    out = parser.add_argument_group("output")
    out.add_argument("--out", default=DEFAULT_OUT,
                     help=f"output folder, refused when it holds files unless --overwrite "
                          f"(default: {DEFAULT_OUT}; the docs' published tables are written "
                          "only when asked, with --out results/tournament)")
    out.add_argument("--overwrite", action="store_true",
                     help="write over the files of an existing --out folder")
    out.add_argument("--resume", action="store_true",
                     help=f"continue the interrupted tournament in --out (its {RESULTS_LOG}): "
                          "the same arguments; finished games are kept, the rest played")
    out.add_argument("--bootstrap", type=int_at_least(0), default=200,
                     help="bootstrap resamples for the Elo intervals (default: %(default)s)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    out.add_argument("--replays", default=None, metavar="DIR",
                     help="also write one example replay page (HTML) per scenario and "
                          "pairing to DIR")
    return parser


def check_args(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The policies and scenarios of ``args``, every flag checked before any battle (a
    ``UsageError`` naming the flag): names, files, the seed range, the output folder."""
    from traveller_env.scenario import ScenarioError, load_scenario

    try:
        policies = parse_policy_list(args.policies)
    except ValueError as exc:
        raise UsageError(f"--policies: {exc}") from None
    if len(policies) < 2:
        raise UsageError(f"--policies: a tournament needs at least two policies, got "
                         f"{len(policies)} ({args.policies!r})")
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if not scenarios:
        raise UsageError("--scenarios: name at least one scenario")
    check_at_least("--battles", args.battles, 1)
    check_at_least("--workers", args.workers, 1)
    check_seed("--seed", args.seed)
    if args.seed + args.battles - 1 > SEED_MAX:
        raise UsageError(f"--seed {args.seed} with --battles {args.battles}: the last battle's "
                         "seed SEED + BATTLES - 1 must be at most 2**64 - 1")
    try:
        for sc in scenarios:
            load_scenario(sc)
    except ScenarioError as exc:
        raise UsageError(f"--scenarios: {exc}") from None
    try:
        for p in policies:
            if is_trained(p):
                for sc in scenarios:
                    make_policy(p, scenario=sc)
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(f"--policies: {exc}") from None
    check_out(args)
    return policies, scenarios


def check_out(args: argparse.Namespace) -> None:
    """The output folder: ``--resume`` needs the results log of the tournament to continue;
    otherwise the rule of every command (a non-empty folder needs ``--overwrite``)."""
    resume = getattr(args, "resume", False)
    if resume and getattr(args, "overwrite", False):
        raise UsageError("--resume and --overwrite: choose one (--resume continues the "
                         "tournament in --out, --overwrite starts it again)")
    if resume:
        if not (Path(args.out) / RESULTS_LOG).is_file():
            raise UsageError(f"--resume: {Path(args.out) / RESULTS_LOG} does not exist; there "
                             "is no tournament to resume in this --out folder")
        return
    try:
        check_output_folder("--out", args.out, getattr(args, "overwrite", False))
    except UsageError as exc:
        if not (Path(args.out) / RESULTS_LOG).is_file():
            raise
        raise UsageError(f"{exc}, or --resume to continue its tournament") from None


def run_from_args(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    """Run the tournament described by parsed ``args``; return the exit status."""
    policies, scenarios = check_args(args)
    log_path = Path(args.out) / RESULTS_LOG
    settings = resume_settings(args)
    resuming = getattr(args, "resume", False)
    done = read_results_log(log_path, settings) if resuming else []
    start = time.perf_counter()
    # a resumed tournament with policies added: its header now names them all (kept games too)
    grown = resuming and json.loads(log_path.read_text().split("\n", 1)[0])[
        "tournament"]["policies"] != args.policies
    log = ResultsLog(log_path, None if resuming and not grown else settings)
    if grown:
        log.append(done)
    try:
        results = run_tournament(policies, scenarios, args.battles, args.seed, args.workers,
                                 progress=not args.no_progress, done=done, record=log.append)
    finally:
        log.close()
    if done:
        print(f"resumed: {len(done)} battles were recorded, {len(results) - len(done)} played")
    elapsed = time.perf_counter() - start
    summary = summarise(results, policies, scenarios, bootstrap=args.bootstrap)
    run_info = {"command": command_line(args, argv), "policies": policies, "scenarios": scenarios,
                "battles": args.battles, "seed": args.seed, "workers": args.workers,
                "games": len(results), "elapsed_s": round(elapsed, 1),
                "cpu_count": os.cpu_count()}
    paths = write_outputs(summary, results, Path(args.out), run_info)
    print(markdown_tables(summary))
    print(f"{len(results)} battles in {elapsed:.0f} s with {args.workers} worker(s); wrote "
          + ", ".join(str(p) for p in paths))
    if args.replays is not None:
        pages = write_example_replays(policies, scenarios, args.seed, Path(args.replays))
        print(f"Replay pages: {len(pages)} in {args.replays}")
    return 0


def command_line(args: argparse.Namespace, argv: Sequence[str] | None = None) -> str:
    """The command that reruns this tournament, for ``results.json``: ``python -m
    traveller_rl.tournament ARGV`` when the arguments ``argv`` are known, else every option
    spelled out from the parsed ``args`` (as when ``traveller tournament`` runs it)."""
    head = ["python", "-m", "traveller_rl.tournament"]
    if argv is not None:  # the same command whether or not it was resumed
        return shlex.join([*head, *(a for a in argv if a != "--resume")])
    words = [*head, "--policies", args.policies, "--scenarios", args.scenarios,
             "--battles", str(args.battles), "--seed", str(args.seed),
             "--workers", str(args.workers), "--out", str(args.out),
             "--bootstrap", str(args.bootstrap)]
    return shlex.join(words + (["--no-progress"] if args.no_progress else []))


def run(args: argparse.Namespace) -> int:
    """Run the tournament described by ``args`` (parsed by ``build_parser``); return the exit
    status. The ``traveller tournament`` command calls this."""
    return run_from_args(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run the tournament. A leading ``--``
    (as a wrapping command may pass through) is ignored."""
    if argv is not None:
        argv = list(argv)
        if argv[:1] == ["--"]:
            argv = argv[1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return run_from_args(args, sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
