"""Golden playthroughs: every checked-in event log and step trace is reproduced byte for byte.

A failure prints the first differing line. Regenerate only when a rule is meant to change:
``python tests/golden_playthroughs.py --write`` (see that module).
"""

from __future__ import annotations

import pytest
from golden_playthroughs import GOLDEN_DIR, PLAYTHROUGHS, play


def _first_difference(expected: str, got: str) -> str:
    exp, new = expected.splitlines(), got.splitlines()
    for i, (a, b) in enumerate(zip(exp, new, strict=False)):
        if a != b:
            return f"line {i + 1}:\n  golden: {a}\n  now:    {b}"
    return f"lengths differ: golden {len(exp)} lines, now {len(new)}"


@pytest.mark.parametrize(("name", "scenario", "seed", "policies"), PLAYTHROUGHS,
                         ids=[p[0] for p in PLAYTHROUGHS])
def test_golden_playthrough(name, scenario, seed, policies):
    events, trace = play(scenario, seed, policies)
    for suffix, text in ((".jsonl", events), (".trace", trace)):
        golden = (GOLDEN_DIR / (name + suffix)).read_text()
        assert text == golden, f"{name}{suffix} differs at " + _first_difference(golden, text)


def test_every_golden_file_belongs_to_a_playthrough():
    names = {p[0] for p in PLAYTHROUGHS}
    stray = [p.name for p in GOLDEN_DIR.iterdir() if p.stem not in names]
    assert not stray, f"golden files without a playthrough: {stray}"
