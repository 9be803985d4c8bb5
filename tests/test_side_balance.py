"""experiments/side_balance.py: one in-core policy on both sides, wins counted per side."""

from __future__ import annotations

import json

import pytest

from traveller_env.core import available

pytestmark = pytest.mark.skipif(not available(), reason="the compiled core is not built here")


def test_counts_add_up_are_seeded_and_written(tmp_path, capsys):
    from experiments.side_balance import main, side_balance

    a = side_balance("duel", "marksman", 30, seed=5)
    assert list(a["wins"]) == ["blue", "red"]
    total = sum(w["count"] for w in a["wins"].values()) + a["draws"]["count"]
    assert total == 30
    for w in (*a["wins"].values(), a["draws"]):
        assert w["ci95"][0] <= w["rate"] == w["count"] / 30 <= w["ci95"][1]
    assert side_balance("duel", "marksman", 30, seed=5) == a
    out = tmp_path / "b.json"
    assert main(["--scenario", "duel", "--policy", "marksman", "--battles", "30", "--seed", "5",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text()) == a
    assert "blue" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--policy", "always_lead"], "--policy 'always_lead': an in-core policy is needed"),
    (["--battles", "0"], "--battles must be at least 1"),
])
def test_bad_arguments_are_named(argv, message):
    from experiments.side_balance import main

    with pytest.raises(SystemExit, match=message):
        main(["--scenario", "duel", *argv])
