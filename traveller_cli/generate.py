"""``traveller scenarios generate``: draw scenarios from a distribution on the command line.

    traveller scenarios generate gen:skirmish --seed 7 --out x.yaml   # one scenario file
    traveller scenarios generate gen:skirmish --seeds 0-99 --check    # list and check a range
    traveller scenarios generate gen:skirmish --seeds 0-9 --out dir/  # one file per seed

A written file is an ordinary scenario file: loading it gives the same scenario as
``gen:skirmish@7`` (tests compare the battles played from both). ``--check`` re-checks every
drawn scenario's guarantees from its file form (schema, no combatant in a wall, every
combatant able to reach every other) and exits 1 when one fails. Bad flags raise
``ScenarioError``, which ``traveller_rl.commandline.dispatch`` prints as a usage error (status 2).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from traveller_env.generate import GENERATED_PREFIX, distribution_names, reachable, scenario_hash
from traveller_env.rules.grid import WALL
from traveller_env.scenario import (
    Scenario,
    ScenarioError,
    config_dir,
    generated_scenario,
    validate_scenario,
)
from traveller_rl.commandline import UsageError

__all__ = ["add_scenarios_args", "check_scenario", "parse_seed_range", "run_generate",
           "scenario_yaml"]

_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
#: The most seeds one ``--seeds`` range may name.
MAX_SEEDS = 100_000


def add_scenarios_args(p: argparse.ArgumentParser) -> None:
    """The arguments of ``traveller scenarios`` (the listing, and ``generate``)."""
    p.add_argument("action", nargs="?", choices=("list", "generate"), default="list",
                   help="list the built-in scenarios and distributions (default), or "
                        "generate scenarios from a distribution")
    p.add_argument("distribution", nargs="?", metavar="gen:NAME",
                   help="the distribution to draw from (generate), e.g. gen:skirmish")
    p.add_argument("--seed", type=int, help="the seed of the one scenario to draw")
    p.add_argument("--seeds", metavar="A-B", help="a range of seeds, both ends included")
    p.add_argument("--out", type=Path, metavar="PATH",
                   help="write the scenario to PATH (one seed) or one file per seed into the "
                        "folder PATH (--seeds); without it, --seed prints the YAML")
    p.add_argument("--overwrite", action="store_true",
                   help="write over existing scenario files at --out")
    p.add_argument("--check", action="store_true",
                   help="check each drawn scenario's guarantees from its file form")


def parse_seed_range(text: str) -> range:
    """``"0-99"`` -> ``range(0, 100)``; ``"7"`` -> ``range(7, 8)``."""
    m = _RANGE_RE.match(text.strip())
    if m is None:
        raise ScenarioError("--seeds", "", f"{text!r} is not a seed range like 0-99")
    low = int(m.group(1))
    high = int(m.group(2)) if m.group(2) is not None else low
    if high < low or high - low + 1 > MAX_SEEDS:
        raise ScenarioError("--seeds", "", f"{text!r}: the range must run upwards and name at "
                            f"most {MAX_SEEDS} seeds")
    return range(low, high + 1)


def scenario_yaml(sc: Scenario) -> str:
    """The YAML text of a scenario, in the order of the schema's fields (defaults left
    out)."""
    data = sc.model_dump(mode="json", exclude_defaults=True)
    data["map"] = sc.map.model_dump(mode="json")
    return yaml.safe_dump(data, sort_keys=False, width=100)


def check_scenario(sc: Scenario) -> list[str]:
    """The broken guarantees of a drawn scenario, from its YAML text (empty: all hold)."""
    problems = []
    try:
        again = validate_scenario(yaml.safe_load(scenario_yaml(sc)), sc.name)
    except ScenarioError as exc:
        return [f"its file does not validate: {exc}"]
    if again != sc:
        problems.append("its file does not load back to the same scenario")
    rows = again.map.terrain or ["." * again.map.width] * again.map.height
    squares = [tuple(c.position) for side in again.sides for c in side.combatants]
    problems += [f"{sq} is in a wall" for sq in squares if rows[sq[1]][sq[0]] == WALL]
    reach = reachable(rows, squares[0])
    problems += [f"{sq} cannot be reached from {squares[0]}" for sq in squares
                 if sq not in reach]
    return problems


def _seed_path(folder: Path, name: str, seed: int) -> Path:
    """The file of seed ``seed`` of distribution ``name`` in ``folder`` (``--seeds``)."""
    return folder / f"{name[len(GENERATED_PREFIX):]}_{seed}.yaml"


def _summary(sc: Scenario) -> str:
    sizes = " vs ".join(f"{s.name} {len(s.combatants)}" for s in sc.sides)
    return (f"{sc.name:<24} {sc.map.width}x{sc.map.height:<4} {sizes:<18} "
            f"{scenario_hash(sc.model_dump(mode='json'))}")


def run_generate(args: argparse.Namespace) -> int:
    """``traveller scenarios generate``: see the module docstring."""
    name = args.distribution
    if not name or not name.startswith(GENERATED_PREFIX):
        raise ScenarioError("generate", "", "name a distribution: traveller scenarios "
                            "generate gen:<name> --seed N (or --seeds A-B); distributions: "
                            + ", ".join(distribution_names(config_dir())))
    if "@" in name:
        raise ScenarioError(name, "", "give the seed with --seed or --seeds, not in the name")
    if (args.seed is None) == (args.seeds is None):
        raise ScenarioError("generate", "", "give exactly one of --seed N and --seeds A-B")
    seeds = range(args.seed, args.seed + 1) if args.seeds is None else \
        parse_seed_range(args.seeds)
    if args.seed is not None and args.seed < 0:
        raise ScenarioError("--seed", "", f"{args.seed}: a seed is a whole number >= 0")
    single = args.seeds is None
    if args.out is not None and not args.overwrite:
        paths = [args.out] if single else \
            [_seed_path(args.out, name, seed) for seed in seeds]
        if single and args.out.is_dir():
            raise UsageError(f"--out {args.out}: is a folder; give a file path (.yaml) for "
                             "one --seed")
        taken = [p for p in paths if p.exists()]
        if taken:
            raise UsageError(f"--out {taken[0]}: exists; choose another path, or pass "
                             "--overwrite to write over it")
    if single and args.out is None and not args.check:
        sys.stdout.write(scenario_yaml(generated_scenario(f"{name}@{args.seed}")))
        return 0
    if not single and args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for seed in seeds:
        sc = generated_scenario(f"{name}@{seed}")
        line = _summary(sc)
        if args.check:
            problems = check_scenario(sc)
            failed += bool(problems)
            line += "  ok" if not problems else "  FAILED: " + "; ".join(problems)
        if args.out is not None:
            path = args.out if single else _seed_path(args.out, name, seed)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(scenario_yaml(sc), encoding="utf-8")
            line += f"  -> {path}"
        print(line)
    if args.check:
        print(f"{len(seeds) - failed} of {len(seeds)} scenarios hold every guarantee")
    return 1 if failed else 0

