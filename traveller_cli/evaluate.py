"""``traveller eval MODEL --scenario duel --vs marksman,rush``: a trained model against
scripted policies, win/draw/loss with 95% intervals."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traveller_rl.commandline import UsageError, int_at_least, seed_type

__all__ = ["add_arguments", "run", "write_eval_replays"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``traveller eval``."""
    p.add_argument("model", type=Path,
                   help="a trained policy: a MaskablePPO .zip, a train_ppo .pt, an exported "
                        ".onnx or an RLlib checkpoint folder (scripted policies such as rush "
                        "are ranked by traveller tournament)")
    battles = p.add_argument_group("battles")
    battles.add_argument("--scenario", default="duel", help="scenario to play (default: duel)")
    battles.add_argument("--vs", default="marksman",
                         help="opponent policies, comma-separated (default: marksman)")
    battles.add_argument("--battles", type=int_at_least(1), default=200,
                         help="battles per opponent (default: 200)")
    battles.add_argument("--seed", type=seed_type, default=20_000,
                         help="first battle seed (default: 20000)")
    output = p.add_argument_group("output")
    output.add_argument("--json", type=Path, default=None,
                        help="write the results here (default: print only)")
    output.add_argument("--html-dir", type=Path, default=None, metavar="DIR",
                        help="write replay pages of the first --html-battles battles per "
                             "opponent")
    output.add_argument("--html-battles", type=int_at_least(1), default=2, metavar="N",
                        help="battles per opponent written by --html-dir (default: 2, one per "
                             "side)")


EXAMPLES = """
traveller eval runs/duel/ppo.pt --scenario duel --vs rush,marksman
traveller eval runs/squad/ppo.pt --scenario squad --battles 400 --json runs/eval.json
traveller eval model.onnx --vs tactician --html-dir runs/replays"""


def _check_model(model: Path) -> None:
    """A usage error unless ``model`` is a trained-policy file or RLlib folder."""
    from traveller_agents.registry import is_known

    if model.exists():
        return
    try:
        scripted = is_known(str(model))
    except (ValueError, ImportError):
        scripted = False
    hint = (f"; {str(model)!r} is a scripted policy: rank scripted policies with traveller "
            f"tournament --policies {model},...") if scripted else ""
    raise UsageError(f"MODEL {model}: no such trained-policy file (a .zip, .pt or .onnx, or "
                     f"an RLlib checkpoint folder){hint}")


def run(args: argparse.Namespace) -> int:
    """Evaluate ``args.model`` against each ``--vs`` policy; print the table (exit 0), or the
    error on stderr (exit 2) for a model that does not fit the scenario or an unknown
    policy."""
    from traveller_agents.registry import make_policy, parse_policy_list
    from traveller_agents.trained import load_policy
    from traveller_env.scenario import load_scenario
    from traveller_rl.evaluation import evaluate_matchup, format_matchups

    _check_model(args.model)
    load_scenario(args.scenario)
    try:
        names = parse_policy_list(args.vs)
    except ValueError as exc:
        raise UsageError(f"--vs: {exc}") from None
    if not names:
        raise UsageError("--vs: name at least one opponent policy")
    if args.json is not None and args.json.is_dir():
        raise UsageError(f"--json {args.json}: is a folder; give a file path")
    try:
        learned = load_policy(args.model, args.scenario)
        opponents = [make_policy(name) for name in names]
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    rows = [evaluate_matchup(learned, opponent, args.scenario,
                             battles=args.battles, seed=args.seed)
            for opponent in opponents]
    print(format_matchups(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    if args.html_dir is not None:
        pages = write_eval_replays(learned, opponents, args.scenario, args.seed,
                                   args.html_battles, args.html_dir)
        print(f"Replay pages: {len(pages)} in {args.html_dir}")
    return 0


def write_eval_replays(policy: Any, opponents: Sequence[Any], scenario: str,
                       seed: int, battles: int, out_dir: str | Path) -> list[Path]:
    """Replay pages of the first ``battles`` battles of ``traveller_rl.evaluation.evaluate_matchup``
    against each opponent (same seeds and side assignment, so the same battles), as
    ``<scenario>_vs_<opponent>_<i>.html`` in ``out_dir``."""
    import traveller_env
    from traveller_env.replay.html import safe_filename, write_battle_html
    from traveller_rl.evaluation import play_battle

    env = traveller_env.raw_env(scenario)
    paths = []
    for opponent in opponents:
        name = getattr(opponent, "name", "opponent")
        for i in range(battles):
            mine = i % 2
            policies = {a: (policy if env.side_of(a) == mine else opponent)
                        for a in env.possible_agents}
            battle = play_battle(env, policies, seed + i)
            side = env.scenario.sides[mine].name
            title = (f"{scenario}, seed {seed + i}: evaluated policy ({side}) vs {name}")
            paths.append(write_battle_html(
                Path(out_dir) / f"{safe_filename(scenario)}_vs_{safe_filename(name)}_{i}.html",
                battle, env.scenario, seed=seed + i, title=title))
    return paths

