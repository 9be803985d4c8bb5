"""Mutation testing of the learning code (``make mutate``, not part of ``make test``).

Each mutant in ``MUTANTS`` is one single-line change to the learner, the rollout/GAE, the
evaluation or the rating code. The script copies the tracked tree (and the built core) into a
scratch folder once, then for each mutant edits the copy, runs the test files that cover the
mutated code with ``pytest -x``, and restores the file. A mutant is *killed* when those tests
fail and *survives* when they pass. The report lists both; the exit status is 1 if any mutant
survived or no longer applies (its line is gone: update the list with the code).

Add a mutant: one ``Mutant(file, original, mutated, tests, why)`` line below, where
``original`` occurs exactly once in ``file``; run ``make mutate``; if it survives, write the
test that kills it.

    python tests/mutate.py                 # every mutant
    python tests/mutate.py --only pg_sign  # some, by name
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
LEARNING = ("tests/training/test_learning.py",)


class Mutant(NamedTuple):
    """One single-line change and the tests that must catch it."""

    name: str
    file: str
    original: str
    mutated: str
    why: str
    tests: tuple[str, ...] = LEARNING


UPDATE = "traveller_rl/ppo/update.py"
ROLLOUT = "traveller_rl/ppo/rollout.py"
MUTANTS = (
    # the five of the original report
    Mutant("pg_sign", UPDATE, "pg_loss = torch.max(-mb_adv * ratio,",
           "pg_loss = torch.max(mb_adv * ratio,", "policy-gradient sign flipped"),
    Mutant("value_sign", UPDATE, "+ settings.vf_coef * v_loss", "- settings.vf_coef * v_loss",
           "value loss subtracted instead of added"),
    Mutant("entropy_sign", UPDATE, "loss = pg_loss - settings.ent_coef * entropy",
           "loss = pg_loss + settings.ent_coef * entropy", "entropy bonus sign flipped"),
    Mutant("advantages_zero", UPDATE, "mb_adv = b_adv[mb]\n", "mb_adv = b_adv[mb] * 0\n",
           "advantages multiplied by 0"),
    Mutant("misaligned_minibatch", UPDATE, "mb_obs = b_obs[mb]", "mb_obs = b_obs[mb.roll(1)]",
           "minibatch observations misaligned with their actions"),
    # the update
    Mutant("no_clip", UPDATE, "-mb_adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()",
           "-mb_adv * ratio).mean()", "the surrogate's ratio clipping removed"),
    Mutant("update_unmasked", UPDATE, "logits = net.logits(mb_obs, b_mask[mb])",
           "logits = net.logits(mb_obs, torch.ones_like(b_mask[mb]))",
           "the update ignores the decisions' action masks"),
    Mutant("stale_logp", UPDATE, "log_ratio = new_logp - b_logp[mb]",
           "log_ratio = new_logp - new_logp.detach()",
           "the ratio taken against the current policy instead of the rollout's"),
    Mutant("no_step", UPDATE, "            optimizer.step()", "            pass",
           "the optimizer step removed"),
    # rollout and GAE
    Mutant("returns_without_values", ROLLOUT, "return idx, adv[idx], adv[idx] + value[idx]",
           "return idx, adv[idx], adv[idx]", "returns are advantages only (values dropped)"),
    Mutant("no_discount", ROLLOUT, "delta = reward_t + g * next_value * alive_t - value",
           "delta = reward_t + next_value * alive_t - value",
           "the successor's value not discounted"),
    Mutant("lambda_dropped", ROLLOUT, "+ gl * next_adv * alive_t[start:end]",
           "+ g * next_adv * alive_t[start:end]", "GAE's lambda ignored"),
    Mutant("end_not_closed", ROLLOUT,
           "closing = self.pending[ended]\n            self.done[closing[closing >= 0]] = True",
           "closing = self.pending[ended]\n            self.done[closing[closing >= 0]] = False",
           "a battle's end does not close its seats' last transitions"),
    Mutant("credit_overwrites", ROLLOUT, "self.reward[self.pending[live]] += rewards[live]",
           "self.reward[self.pending[live]] = rewards[live]",
           "a step's reward replaces the seat's earlier rewards instead of adding"),
    Mutant("carry_drops", ROLLOUT, "        return m\n", "        return 0\n",
           "pending transitions not reported as carried"),
    # evaluation and ratings
    Mutant("winrate_any_winner", ROLLOUT, "wins += int((w == learner_side).sum())",
           "wins += int((w >= 0).sum())", "the evaluation counts any side's win as the learner's"),
    Mutant("matchup_side_swapped", "traveller_rl/evaluation.py",
           '"wins" if b.winner == names[mine] else "losses")',
           '"losses" if b.winner == names[mine] else "wins")',
           "evaluate_matchup credits a side the other side's result"),
    Mutant("wilson_no_z2", "traveller_rl/evaluation.py", "    z2 = z * z\n", "    z2 = z\n",
           "Wilson's z squared dropped"),
    Mutant("elo_scores_swapped", "traveller_rl/stats.py", "        wins[i, j] += s\n",
           "        wins[i, j] += 1 - s\n", "Elo credits a game's winner with the loss"),
)


def _copy_tree(dest: Path) -> None:
    """The files git tracks or would track, and the built core, copied into ``dest``."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for core in (ROOT / "traveller_env").glob("_core*.so"):
        shutil.copy2(core, dest / "traveller_env" / core.name)


def run_mutant(tree: Path, m: Mutant) -> str:
    """``killed``, ``survived`` or ``stale`` (the original line is not in the file once)."""
    path = tree / m.file
    text = path.read_text(encoding="utf-8")
    if text.count(m.original) != 1:
        return "stale"
    path.write_text(text.replace(m.original, m.mutated), encoding="utf-8")
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                               "no:cacheprovider", *m.tests], cwd=tree, capture_output=True,
                              text=True)
    finally:
        path.write_text(text, encoding="utf-8")
    return "survived" if done.returncode == 0 else "killed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant names")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"--only: unknown mutants {sorted(unknown)}; known: "
                     f"{', '.join(m.name for m in MUTANTS)}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="mutate-") as scratch:
        tree = Path(scratch)
        _copy_tree(tree)
        for m in chosen:
            start = time.perf_counter()
            results[m.name] = run_mutant(tree, m)
            print(f"{results[m.name]:<9} {m.name:<24} {time.perf_counter() - start:5.0f} s  "
                  f"{m.why}", flush=True)
    bad = [n for n, r in results.items() if r != "killed"]
    print(f"\n{len(results) - len(bad)} of {len(results)} mutants killed"
          + (f"; not killed: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
