"""A league of opponents: several learners trained against each other, their own past and the
scripted NPCs, with per-learner style shaping; rated in one tournament; exported to ONNX.

    traveller league train --config configs/league_squad.yaml --out runs/league
    traveller league rate runs/league --battles 40 --scripted rush,marksman,cover,tactician
    traveller league export runs/league --to results/league
    traveller league add runs/league --name stalker --checkpoint runs/x/ppo.pt
    traveller league rate runs/league --resume  # plays only the new member's games

**Training** (``train``). The config (YAML: ``configs/league_squad.yaml`` documents every key)
names a scenario, the learners (each a name and a ``style``: ``train_ppo --style`` weights such
as ``distance``, ``exposure``, ``low_stance``, ``shots``, ``lead``), the number of generations
and the decisions per generation. In each generation every learner runs
``traveller_rl.ppo.trainer`` in pool mode: it starts from its own checkpoint of the previous
generation (or the config's ``init``, or a fresh network), and its pool holds the latest
checkpoint of every other league member and every earlier snapshot (``--pool-opponents``),
its own past selves of this run, and the scripted policies of ``train.pool_scripted``;
opponents are drawn per battle by prioritised fictitious self-play (``--pool-sampling pfsp``:
the ones it beats least, most often). Each learner's checkpoint after each generation is a
league member (``members/<learner>_g<generation>.pt``), so the population spans strengths
(earlier generations) as well as styles. ``league.json`` lists the members: name, learner,
generation, scenario, training decisions, style, checkpoint, and (after ``rate``) rating and
behaviour. ``train --resume`` continues a killed run in its ``--out``: the members
``league.json`` lists are kept, an interrupted member continues from its trainer's resume
checkpoint (``train.checkpoint_every`` in the config) or else trains again from its start, and
the league ends as an uninterrupted run's would.

**Rating** (``rate``). Every member and every scripted NPC named by ``--scripted`` meet in one
round-robin tournament (``traveller_rl.tournament``: both sides, the same seeds for every
pairing; OpenSkill and Elo with a bootstrap interval, win-rate matrix and heatmap in
``DIR/tournament``). Each member's behaviour (``traveller_rl.behaviour``: distance kept, share of
turns in cover, crouched or prone, shots and aims per shot, leadership use, focus fire)
is measured against ``--behaviour-vs``; ``population.png`` places every policy by its style
(distance kept) and strength (Elo).

**Export** (``export``). Every member as an ONNX file (``traveller export``'s exporter) plus
``league.json`` with the ONNX paths, into ``--to`` (``results/league`` is the committed one):
ready opponents for a game, no PyTorch needed (``traveller_agents.onnx_policy.OnnxPolicy``).

**Adding** (``add``). A checkpoint trained elsewhere joins an existing league as an imported
member (as the config's ``imports`` do at ``train``), without retraining anyone: a
``train_ppo`` checkpoint or an exported policy (``.onnx``) that plays the league's scenario
(same slot-relative actions, directly or through its layout) under a new name. In an exported
league (every member ONNX, as ``results/league``) a checkpoint joins as its ONNX export. Its
rating is empty until the next ``rate``; ``rate --resume`` keeps the last rating's games and
behaviour (same ``--battles`` and ``--seed``) and plays only the new pairings, so the tables
equal a whole run's (the tournament's seeds depend only on the pairing and battle).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from traveller_env.scenario import shipped_path
from traveller_rl.commandline import (
    UsageError,
    check_output_folder,
    examples_epilog,
    int_at_least,
    seed_type,
)

__all__ = ["LEAGUE_FILE", "build_parser", "load_config", "load_league", "main", "run"]

LEAGUE_FILE = "league.json"
CONFIG_KEYS = {"scenario", "generations", "decisions_per_generation", "init", "train",
               "learners", "imports"}


# ============================================================================ config
def load_config(path: Path) -> dict[str, Any]:
    """The league config, checked (``ValueError`` naming the file and the key)."""
    import yaml

    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.shaping import parse_style

    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the league config ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a league config is a mapping of {sorted(CONFIG_KEYS)}")
    unknown = sorted(set(data) - CONFIG_KEYS)
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown}; allowed: {sorted(CONFIG_KEYS)}")
    for key in ("scenario", "learners"):
        if key not in data:
            raise ValueError(f"{path}: missing key {key!r}")
    data.setdefault("generations", 1)
    data.setdefault("decisions_per_generation", 1_000_000)
    data.setdefault("init", "")
    data.setdefault("train", {})
    data.setdefault("imports", [])
    if not isinstance(data["imports"], list):
        raise ValueError(f"{path}: imports must be a list of {{name, checkpoint}}")
    for k, item in enumerate(data["imports"]):
        if not isinstance(item, dict) or set(item) != {"name", "checkpoint"}:
            raise ValueError(f"{path}: imports[{k}] must have exactly the keys name and "
                             "checkpoint")
        if not str(item["checkpoint"]).endswith(".pt") or not Path(item["checkpoint"]).is_file():
            raise ValueError(f"{path}: imports[{k}].checkpoint: {item['checkpoint']!r} is not a "
                             "train_ppo checkpoint file (.pt)")
    for key in ("generations", "decisions_per_generation"):
        if not isinstance(data[key], int) or data[key] < 1:
            raise ValueError(f"{path}: {key} must be a positive integer, got {data[key]!r}")
    fields = {f.replace("_", "-") for f in Args.flag_names()}
    reserved = {"scenario", "pool", "pool-opponents", "init", "style", "total-timesteps",
                "seed", "out", "overwrite", "opponents"}
    for flag in data["train"] or {}:
        name = str(flag).replace("_", "-")
        if name not in fields or name in reserved:
            raise ValueError(f"{path}: train.{flag}: not a train_ppo flag the league may set "
                             f"(the league sets {', '.join(sorted(reserved))} itself)")
    names = [str(item["name"]) for item in data["imports"]]
    if not isinstance(data["learners"], list) or not data["learners"]:
        raise ValueError(f"{path}: learners must be a non-empty list")
    for k, learner in enumerate(data["learners"]):
        if not isinstance(learner, dict) or not learner.get("name"):
            raise ValueError(f"{path}: learners[{k}] needs a name")
        extra = sorted(set(learner) - {"name", "style"})
        if extra:
            raise ValueError(f"{path}: learners[{k}]: unknown keys {extra}; allowed: name, style")
        style = learner.get("style") or {}
        try:
            parse_style(style_flag(style))
        except ValueError as exc:
            raise ValueError(f"{path}: learners[{k}].style: {exc}") from None
        names.append(learner["name"])
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{path}: learner and import names repeated: {dupes}")
    return data


def style_flag(style: dict[str, float]) -> str:
    """``{"distance": 0.03}`` -> ``"distance=0.03"`` (train_ppo's ``--style``)."""
    return ",".join(f"{k}={v}" for k, v in style.items())


def _checkpoint_info(path: Path) -> dict[str, Any]:
    """A train_ppo checkpoint's bookkeeping: decisions trained, ``lineage``, the entries
    that say how it began (``{"imitation": teacher}`` after a behaviour-cloning start), the
    ``scenario`` it trained on and the name of its ``layout`` (``None`` without one)."""
    from traveller_agents.checkpoint import imitation_of, read_checkpoint

    data = read_checkpoint(path)
    layout = data.get("layout")
    return {"decisions": int(data.get("decisions", 0)), "lineage": imitation_of(data),
            "scenario": data.get("scenario"),
            "layout": layout.get("name") if isinstance(layout, dict) else None}


def load_league(folder: Path) -> dict[str, Any]:
    """``folder/league.json`` (``ValueError`` naming the file when it is missing)."""
    path = Path(folder) / LEAGUE_FILE
    if not path.is_file():
        raise ValueError(f"{path}: no league here (run `traveller league train` first)")
    return json.loads(path.read_text())


def write_league(folder: Path, league: dict[str, Any]) -> None:
    """Write ``league.json`` atomically."""
    from traveller_rl.common import atomic_write_bytes

    atomic_write_bytes(Path(folder) / LEAGUE_FILE,
                       (json.dumps(league, indent=2) + "\n").encode())


# ============================================================================ add
def add(folder: Path, name: str, checkpoint: Path) -> dict[str, Any]:
    """List ``checkpoint`` in ``league.json`` as an imported member (see the module docstring):
    a ``.pt`` is copied into ``folder/members/<name>.pt``; an exported policy (``.onnx``) is
    copied to ``folder/<name>.onnx``, and so is a ``.pt`` exported there when the league is an
    exported one (every member ONNX, as ``results/league``). ``ValueError`` naming the argument
    for a taken or malformed name, a missing or unreadable file, or one that does not fit the
    league's scenario."""
    import shutil

    league = load_league(folder)
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"--name {name!r}: use letters, digits, '-' and '_'")
    taken = {m["name"] for m in league["members"]}
    if name in taken:
        raise ValueError(f"--name {name!r}: the league has a member of that name already "
                         f"({', '.join(sorted(taken))})")
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file() or checkpoint.suffix not in (".pt", ".onnx"):
        raise ValueError(f"--checkpoint {checkpoint}: not a train_ppo checkpoint file (.pt) or "
                         "an exported policy (.onnx)")
    exported = bool(league["members"]) and all(m.get("onnx") for m in league["members"])
    entry: dict[str, Any] = {"name": name, "learner": "imported", "generation": 0,
                             "scenario": league["scenario"]}
    if checkpoint.suffix == ".pt":
        entry.update(_fitting_checkpoint(checkpoint, league["scenario"]))
    if checkpoint.suffix == ".onnx" or exported:
        target = Path(folder) / f"{name}.onnx"
        entry.update(_onnx_member(checkpoint, target, league["scenario"]))
        entry.update({"checkpoint": None, "imported_from": str(checkpoint),
                      "onnx": target.name})
    else:
        target = Path(folder) / "members" / f"{name}.pt"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(checkpoint, target)
        entry.update({"checkpoint": str(target), "imported_from": str(checkpoint)})
    league["members"].append(entry)
    write_league(folder, league)
    return league


def _fitting_checkpoint(checkpoint: Path, scenario: str) -> dict[str, Any]:
    """A ``.pt`` member's manifest entries (decisions, lineage, where it trained), after
    checking that it plays ``scenario`` (``ValueError`` naming ``--checkpoint``)."""
    from traveller_agents.ppo_policy import load_ppo_policy

    with _naming_checkpoint():
        load_ppo_policy(checkpoint, scenario)  # fits the scenario (clear errors)
    info = _checkpoint_info(checkpoint)
    trained_on = info["scenario"]
    return {"training_decisions": info["decisions"], "style": {},
            **({"training_scenario": trained_on} if trained_on not in (None, scenario) else {}),
            **({"layout": info["layout"]} if info["layout"] is not None else {}),
            **info["lineage"]}


def _onnx_member(source: Path, target: Path, scenario: str) -> dict[str, Any]:
    """Write the ONNX file of a member at ``target``: ``source`` copied (an ``.onnx``, checked
    against ``scenario``) or exported (a ``.pt``); the entries its file tells."""
    import shutil

    from traveller_agents.onnx_policy import read_metadata
    from traveller_agents.registry import make_policy
    from traveller_rl.onnx_export import export_onnx

    if source.suffix == ".onnx":
        with _naming_checkpoint():
            make_policy(str(source), scenario=scenario)  # fits the scenario (clear errors)
        shutil.copyfile(source, target)
        training = read_metadata(target).get("training") or {}
        return {"training_decisions": int(training.get("decisions", 0)), "style": {}}
    with _naming_checkpoint():
        export_onnx(source, target, scenario=scenario)
    return {}


@contextmanager
def _naming_checkpoint() -> Iterator[None]:
    """Re-raise a loader's ``ValueError`` or ``FileNotFoundError`` as a ``ValueError`` naming
    ``--checkpoint`` (the message already names the file)."""
    try:
        yield
    except (ValueError, FileNotFoundError) as exc:
        raise ValueError(f"--checkpoint {exc}") from None


# ============================================================================ train
def resumed_league(out: Path, config: dict[str, Any], seed: int) -> dict[str, Any] | None:
    """The league a killed ``league train`` left in ``out`` (``None`` when it wrote none yet),
    checked against this run's config and seed (``ValueError`` naming the flag when either
    differs: a resumed league continues the same training)."""
    path = Path(out) / LEAGUE_FILE
    if not path.is_file():
        return None
    league = load_league(out)
    if league.get("config") != json.loads(json.dumps(config)):
        raise ValueError(f"--config: differs from the config of the league in {out} "
                         "(--resume continues a league with its own config)")
    if league.get("seed") != seed:
        raise ValueError(f"--seed {seed}: the league in {out} was trained with --seed "
                         f"{league.get('seed')}")
    return league


def train(config_path: Path, out: Path, seed: int, progress: bool,
          resume: bool = False) -> dict[str, Any]:
    """Train every learner for every generation (see the module docstring). With ``resume``,
    the members ``out/league.json`` lists already are kept and only the others are trained
    (an interrupted member's run resumes from its ``resume.ckpt`` when it wrote one, else
    starts again), so the league ends as an uninterrupted run's would."""
    import shutil

    from traveller_rl.ppo import trainer as train_ppo

    config = load_config(config_path)
    previous_league = resumed_league(out, config, seed) if resume else None
    out.mkdir(parents=True, exist_ok=True)
    (out / "members").mkdir(exist_ok=True)
    league: dict[str, Any] = previous_league or {
        "format": "traveller-league", "format_version": 1, "scenario": config["scenario"],
        "config": config, "seed": seed, "members": []}
    finished = {m["name"] for m in league["members"]}
    latest: dict[str, str] = {m["learner"]: m["checkpoint"] for m in league["members"]
                              if m["learner"] != "imported"}
    if previous_league is not None:
        print(f"league: resuming {out} ({len(finished)} members kept)", flush=True)
    for item in [] if previous_league else config["imports"]:  # joining as they are
        checkpoint = out / "members" / f"{item['name']}.pt"
        shutil.copyfile(item["checkpoint"], checkpoint)
        data = _checkpoint_info(checkpoint)
        league["members"].append({
            "name": item["name"], "learner": "imported", "generation": 0,
            "scenario": config["scenario"], "training_decisions": data["decisions"],
            "style": {}, "checkpoint": str(checkpoint), "imported_from": item["checkpoint"],
            **data["lineage"]})
    write_league(out, league)
    shared = [item for flag, value in (config["train"] or {}).items()
              for item in (f"--{str(flag).replace('_', '-')}", str(value))]
    for gen in range(1, config["generations"] + 1):
        for k, learner in enumerate(config["learners"]):
            name = learner["name"]
            member = f"{name}_g{gen}"
            if member in finished:
                continue
            # every member so far (imports, earlier generations, the others' latest) but its own
            # latest checkpoint, which it starts from
            others = [m["checkpoint"] for m in league["members"]
                      if m["checkpoint"] != latest.get(name)]
            run_dir = out / "runs" / member
            # an interrupted member continues from its resume checkpoint (with
            # train.checkpoint_every), else starts again
            resumable = resume and (run_dir / "resume.ckpt").is_file()
            if resume and run_dir.exists() and not resumable:
                shutil.rmtree(run_dir)
            output = ["--resume", str(run_dir)] if resumable else \
                ["--out", str(run_dir), "--overwrite"]
            flags = ["--scenario", config["scenario"], "--pool",
                     "--total-timesteps", str(config["decisions_per_generation"]),
                     "--seed", str(seed * 1000 + gen * 100 + k), *output,
                     "--eval-vs", "rush,marksman", "--eval-every", "50",
                     "--final-eval-battles", "0", *shared]
            if others:
                flags += ["--pool-opponents", ",".join(others)]
            init = latest.get(name) or config.get("init") or ""
            previous = next((m["training_decisions"] for m in reversed(league["members"])
                             if m["checkpoint"] == latest.get(name)), 0)
            if init:
                flags += ["--init", init]
            if learner.get("style"):
                flags += ["--style", style_flag(learner["style"])]
            if not progress:
                flags.append("--no-progress")
            print(f"league: generation {gen}, {name}: {len(others)} league opponents",
                  flush=True)
            start = time.perf_counter()
            if train_ppo.main(flags) != 0:
                raise SystemExit(f"league: training {member} failed (flags: {flags})")
            checkpoint = out / "members" / f"{member}.pt"
            shutil.copyfile(run_dir / "ppo.pt", checkpoint)
            latest[name] = str(checkpoint)
            evaluation = json.loads((run_dir / "evaluation.json").read_text())
            league["members"].append({
                "name": member, "learner": name, "generation": gen,
                "scenario": config["scenario"],
                "training_decisions": _checkpoint_info(checkpoint)["decisions"] + previous,
                "style": learner.get("style") or {}, "checkpoint": str(checkpoint),
                "train_seconds": round(time.perf_counter() - start, 1),
                "eval_after": evaluation.get("eval_after", {})})
            write_league(out, league)
    return league


# ============================================================================ rate
def rate(folder: Path, scripted: list[str], battles: int, seed: int, workers: int,
         behaviour_vs: str, behaviour_battles: int, progress: bool,
         resume: bool = False) -> dict[str, Any]:
    """One tournament of every member and the scripted NPCs; behaviour per policy; the
    population map. Writes the ratings into ``league.json``. With ``resume``, the games and
    behaviour of the league's last rating (same ``battles`` and ``seed``) are kept and only
    what a new member or NPC adds is played: the tables are a whole run's."""
    from traveller_rl import tournament

    league = load_league(folder)
    scenario = league["scenario"]
    members = league["members"]
    paths = [policy_path(folder, m) for m in members]
    policies = [*paths, *scripted]
    names = {p: m["name"] for p, m in zip(paths, members, strict=True)}
    done: list[dict[str, Any]] = []
    kept_behaviour: dict[str, Any] = {}
    if resume:
        done, kept_behaviour = recorded_rating(folder, league, names, battles, seed,
                                               behaviour_vs, behaviour_battles)
    results = tournament.run_tournament(policies, [scenario], battles, seed=seed,
                                        workers=workers, progress=progress, done=done)
    if resume:
        recorded = {tournament.game_key(r) for r in done}
        kept = sum(1 for r in results if tournament.game_key(r) in recorded)
        print(f"resumed: {kept} battles were recorded, {len(results) - kept} played")
    summary = tournament.summarise(results, policies, [scenario])
    summary_named = rename(summary, names)
    named_results = [{**r, "side0": names.get(r["side0"], r["side0"]),
                      "side1": names.get(r["side1"], r["side1"])} for r in results]
    command = (f"traveller league rate {folder} --scripted {','.join(scripted)} "
               f"--battles {battles} --seed {seed}")
    tournament.write_outputs(summary_named, named_results, Path(folder) / "tournament",
                             {"command": command, "battles": battles, "seed": seed,
                              "scenario": scenario})
    by_policy = {r["policy"]: r for r in summary_named["ratings"]}
    behaviour = {**kept_behaviour, **measure_behaviour(
        [p for p in policies if names.get(p, p) not in kept_behaviour], names, scenario,
        behaviour_vs, behaviour_battles, seed)}
    for m in members:
        r = by_policy[m["name"]]
        m["rating"] = rating_of(r)
        m["behaviour"] = behaviour.get(m["name"])
    league["scripted"] = [{"name": s, "rating": rating_of(by_policy[s]),
                           "behaviour": behaviour.get(s)} for s in scripted]
    league["rating"] = {"battles_per_pairing_and_side": battles, "seed": seed,
                        "policies": len(policies), "behaviour_vs": behaviour_vs,
                        "behaviour_battles": behaviour_battles}
    write_league(folder, league)
    plot_population(league, Path(folder) / "population.png")
    return league


def recorded_rating(folder: Path, league: dict[str, Any], names: dict[str, str], battles: int,
                    seed: int, behaviour_vs: str, behaviour_battles: int,
                    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The games of the league's last rating (``folder/tournament/games.csv``) with its
    members' names turned back into the files they play from (``names``: file -> name), and
    the behaviour recorded for each policy when it was measured as now asked. ``ValueError``
    naming the flag when that rating had other ``--battles`` or ``--seed``. A member is
    trusted to be the policy it was under its name."""
    from traveller_rl.tournament import read_games_csv

    record = Path(folder) / "tournament"
    if not (record / "games.csv").is_file() or not (record / "results.json").is_file():
        raise ValueError(f"--resume: {record} holds no rating to continue (rate the league "
                         "once without --resume)")
    run = json.loads((record / "results.json").read_text()).get("run") or {}
    changed = [f"--{flag} (recorded: {run.get(flag)!r}, now: {value!r})"
               for flag, value in (("battles", battles), ("seed", seed))
               if run.get(flag) != value]
    if changed:
        raise ValueError("--resume: the league was rated with other arguments; these may not "
                         "change on resume: " + "; ".join(changed))
    files = {name: path for path, name in names.items()}
    games = [{**g, "side0": files.get(g["side0"], g["side0"]),
              "side1": files.get(g["side1"], g["side1"])}
             for g in read_games_csv(record / "games.csv")]
    rated = league.get("rating") or {}
    if (rated.get("behaviour_vs"), rated.get("behaviour_battles")) != (behaviour_vs,
                                                                       behaviour_battles):
        return games, {}
    behaviour = {m["name"]: m["behaviour"] for m in [*league["members"],
                                                     *league.get("scripted", [])]
                 if m.get("behaviour") is not None}
    return games, behaviour


def policy_path(folder: Path, member: dict[str, Any]) -> str:
    """The file a member plays from (its ONNX file in an exported league, else its .pt)."""
    path = Path(member.get("onnx") or member["checkpoint"])
    return str(path if path.is_absolute() or path.exists() else Path(folder) / path)


def rename(summary: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The tournament summary with member paths replaced by member names."""
    def n(p: str) -> str:
        return names.get(p, p)

    out = dict(summary)
    out["policies"] = [n(p) for p in summary["policies"]]
    out["pairings"] = [{**r, "policy": n(r["policy"]), "opponent": n(r["opponent"])}
                       for r in summary["pairings"]]
    out["ratings"] = [{**r, "policy": n(r["policy"])} for r in summary["ratings"]]
    return out


def rating_of(r: dict[str, Any]) -> dict[str, Any]:
    """The rating fields ``league.json`` keeps for a policy."""
    return {"elo": round(r["elo"], 1), "elo_ci95": [round(r["elo_lo"], 1),
                                                    round(r["elo_hi"], 1)],
            "openskill_mu": round(r["openskill_mu"], 3),
            "openskill_sigma": round(r["openskill_sigma"], 3),
            "win_rate": round(r["win_rate"], 4), "battles": r["n"]}


def measure_behaviour(policies: list[str], names: dict[str, str], scenario: str, vs: str,
                      battles: int, seed: int) -> dict[str, dict]:
    """Behaviour descriptors of every policy against ``vs`` (``traveller_rl.behaviour``)."""
    if battles < 1:
        return {}
    from traveller_rl.behaviour import DESCRIPTORS, behaviour_stats

    out = {}
    for p in policies:
        stats = behaviour_stats(p, scenario, vs=vs, battles=battles, seed=seed + 50_000)
        out[names.get(p, p)] = {k: _finite(stats.get(k)) for k in DESCRIPTORS}
    return out


def _finite(x: Any) -> Any:
    """A descriptor for JSON: ``None`` for an undefined (NaN) share."""
    return None if isinstance(x, float) and x != x else x


def plot_population(league: dict[str, Any], path: Path) -> None:
    """Every policy by style (x: distance kept to the nearest enemy, metres) and strength
    (y: Elo), league members coloured by learner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    rows = [(m["name"], m.get("learner", "scripted"), m) for m in league["members"]]
    rows += [(s["name"], "scripted", s) for s in league.get("scripted", [])]
    learners = sorted({r[1] for r in rows})
    colours = {name: plt.cm.tab10(i % 10) for i, name in enumerate(learners)}
    for name, learner, m in rows:
        b, r = m.get("behaviour") or {}, m.get("rating") or {}
        x, y = b.get("distance_m"), r.get("elo")
        if x is None or y is None:
            continue
        ax.scatter([x], [y], color=colours[learner], marker="s" if learner == "scripted"
                   else "o", s=50, label=learner)
        ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), fontsize=8)
    ax.set_xlabel("distance kept to the nearest enemy (m, mean at turn start)")
    ax.set_ylabel("Elo (league tournament)")
    ax.set_title(f"League population: {league['scenario']}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ============================================================================ export
def export(folder: Path, to: Path) -> dict[str, Any]:
    """Every member as ONNX in ``to`` plus ``league.json`` pointing at the ONNX files."""
    import shutil

    from traveller_rl.onnx_export import export_onnx

    league = load_league(folder)
    to.mkdir(parents=True, exist_ok=True)
    for m in league["members"]:
        target = to / f"{m['name']}.onnx"
        source = Path(policy_path(folder, m))
        if source.suffix == ".onnx":  # a member that joined as an exported policy
            shutil.copyfile(source, target)
        else:
            export_onnx(source, target, scenario=league["scenario"])
        m["onnx"] = target.name
        m["checkpoint"] = None
    for extra in ("population.png",):
        if (Path(folder) / extra).exists():
            shutil.copyfile(Path(folder) / extra, to / extra)
    if (Path(folder) / "tournament").is_dir():
        shutil.copytree(Path(folder) / "tournament", to / "tournament", dirs_exist_ok=True)
    write_league(to, league)
    return league


# ============================================================================ CLI
def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``traveller league train|rate|add|export``."""
    parser = parser or argparse.ArgumentParser(prog="traveller league", allow_abbrev=False,
                                               description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples_epilog("""
        traveller league train --config configs/league_squad.yaml --out runs/league
        traveller league rate runs/league --battles 40
        traveller league export runs/league --to runs/league_onnx""")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help_line: str, examples: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_line, description=help_line,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=examples_epilog(examples))
        p.set_defaults(_parser=p)  # its usage errors name it: traveller league NAME: error:
        return p

    t = action("train", "train the league's learners", """
        traveller league train --out runs/league
        traveller league train --config my_league.yaml --out runs/my_league --seed 2""")
    t.add_argument("--config", type=Path, default=Path("configs/league_squad.yaml"),
                   help="league config YAML (default: configs/league_squad.yaml)")
    t.add_argument("--out", type=Path, default=Path("runs/league"),
                   help="league folder, refused when it holds files unless --overwrite "
                        "(default: runs/league)")
    t.add_argument("--overwrite", action="store_true",
                   help="write over the files of an existing --out folder")
    t.add_argument("--resume", action="store_true",
                   help="continue an interrupted league in --out: keep its finished members "
                        "and train the rest (same --config and --seed)")
    t.add_argument("--seed", type=seed_type, default=1, help="seed (default: 1)")
    t.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bars")
    r = action("rate", "rate members and scripted NPCs in one tournament", """
        traveller league rate runs/league
        traveller league rate runs/league --scripted rush,tactician --battles 100""")
    r.add_argument("folder", type=Path, help="league folder (holds league.json)")
    r.add_argument("--scripted", default="rush,marksman,cover,tactician",
                   help="scripted NPCs in the tournament (default: rush,marksman,cover,"
                        "tactician)")
    r.add_argument("--battles", type=int_at_least(1), default=40,
                   help="battles per pairing and side (default: 40)")
    r.add_argument("--seed", type=seed_type, default=70_000,
                   help="first battle seed (default: 70000)")
    r.add_argument("--workers", type=int_at_least(1), default=2, help="processes (default: 2)")
    r.add_argument("--behaviour-vs", default="marksman",
                   help="opponent of the behaviour measurements (default: marksman)")
    r.add_argument("--behaviour-battles", type=int_at_least(0), default=100,
                   help="behaviour battles per policy (default: 100; 0: none)")
    r.add_argument("--resume", action="store_true",
                   help="keep the games and behaviour of the league's last rating (same "
                        "--battles and --seed) and play only what new members or NPCs add")
    r.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar")
    a = action("add", "add a checkpoint trained elsewhere as a member", """
        traveller league add runs/league --name sniper --checkpoint runs/sniper/ppo.pt
        traveller league rate runs/league --resume  # plays only the new member's games""")
    a.add_argument("folder", type=Path, help="league folder (holds league.json)")
    a.add_argument("--name", required=True, help="the new member's name")
    a.add_argument("--checkpoint", type=Path, required=True,
                   help="a train_ppo checkpoint (.pt) or an exported policy (.onnx) for "
                        "the league's scenario")
    e = action("export", "write every member as ONNX with league.json", """
        traveller league export runs/league --to runs/league_onnx""")
    e.add_argument("folder", type=Path, help="league folder (holds league.json)")
    e.add_argument("--to", type=Path, required=True,
                   help="output folder, refused when it holds files unless --overwrite")
    e.add_argument("--overwrite", action="store_true",
                   help="write over the files of an existing --to folder")
    return parser


def check_args(args: argparse.Namespace) -> None:
    """Every flag of the chosen action checked before any work (a ``UsageError`` naming it):
    input files and folders, policy names, output folders (the one rule: a folder with files
    in it is refused unless --overwrite)."""
    if args.action == "train":
        args.config = shipped_path(args.config, prefer_cwd=True)  # the shipped one anywhere
        if not args.config.is_file():
            raise UsageError(f"--config {args.config}: no such file (a league config YAML)")
        if getattr(args, "resume", False):
            if args.overwrite:
                raise UsageError("--resume and --overwrite: choose one (--resume continues the "
                                 "league in --out, --overwrite starts it again)")
            if args.out.exists() and not args.out.is_dir():
                raise UsageError(f"--out {args.out}: is a file, not a folder")
        else:
            check_output_folder("--out", args.out, args.overwrite)
        return
    try:
        load_league(args.folder)
    except ValueError as exc:
        raise UsageError(f"FOLDER {exc}") from None
    if args.action == "rate":
        from traveller_agents.registry import parse_policy_list

        for flag, text in (("--scripted", args.scripted), ("--behaviour-vs",
                                                             args.behaviour_vs)):
            try:
                if text:
                    parse_policy_list(text)
            except ValueError as exc:
                raise UsageError(f"{flag}: {exc}") from None
    elif args.action == "add":
        if not args.checkpoint.is_file():
            raise UsageError(f"--checkpoint {args.checkpoint}: no such file (a train_ppo .pt "
                             "or an exported .onnx)")
    elif args.action == "export":
        check_output_folder("--to", args.to, args.overwrite)


def run(args: argparse.Namespace) -> int:
    """Run the chosen action (a ``UsageError`` naming the flag on bad input, before any
    work)."""
    check_args(args)
    try:
        if args.action == "train":
            league = train(args.config, args.out, args.seed, args.progress,
                           resume=getattr(args, "resume", False))
            print(f"league: {len(league['members'])} members in {args.out / LEAGUE_FILE}")
        elif args.action == "rate":
            from traveller_agents.registry import parse_policy_list

            scripted = parse_policy_list(args.scripted) if args.scripted else []
            league = rate(args.folder, scripted, args.battles, args.seed, args.workers,
                          args.behaviour_vs, args.behaviour_battles, args.progress,
                          resume=args.resume)
            print(format_league(league))
        elif args.action == "add":
            league = add(args.folder, args.name, args.checkpoint)
            print(f"league: {args.name} added ({len(league['members'])} members); rate the "
                  f"league again to rate it: traveller league rate {args.folder}")
        else:
            league = export(args.folder, args.to)
            print(f"league: {len(league['members'])} members exported to {args.to}")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return 0


def format_league(league: dict[str, Any]) -> str:
    """Members and scripted NPCs by Elo, with their style descriptors, as Markdown."""
    rows = [*league["members"], *league.get("scripted", [])]
    rows.sort(key=lambda m: -(m.get("rating") or {}).get("elo", 0))
    lines = ["| policy | style | Elo (95% CI) | win rate | distance kept (m) | turns in cover | "
             "turns low | focus fire | aims / shot | shots / battle |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in rows:
        r, b = m.get("rating") or {}, m.get("behaviour") or {}
        style = style_flag(m["style"]) if m.get("style") else ("-" if "learner" in m
                                                                 else "scripted")
        lo, hi = r.get("elo_ci95", [0, 0])
        lines.append(f"| {m['name']} | {style} | {r.get('elo', 0):.0f} ({lo:.0f}-{hi:.0f}) | "
                     f"{r.get('win_rate', 0):.2f} | {_fmt(b.get('distance_m'), 1)} | "
                     f"{_fmt(b.get('in_cover_share'), 2)} | "
                     f"{_fmt(_sum(b.get('prone_share'), b.get('crouch_share')), 2)} | "
                     f"{_fmt(b.get('focus_fire'), 2)} | {_fmt(b.get('aims_per_shot'), 2)} | "
                     f"{_fmt(b.get('shots_per_battle'), 1)} |")
    return "\n".join(lines)


def _fmt(x: Any, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _sum(*xs: Any) -> Any:
    return None if any(x is None for x in xs) else sum(xs)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for a bad flag)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    chosen = vars(args).pop("_parser", parser)
    try:
        return run(args)
    except UsageError as exc:
        print(f"{chosen.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
