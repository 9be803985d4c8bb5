"""Your own policy, everywhere a policy is named: ``module:Class`` and ``path/to/file.py``
through the one registry (``traveller_env.policy``), in a tournament, as a vector opponent on
the python backend, in ``traveller behaviour`` and ``traveller eval --vs``; bad specs get a
one-line error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from traveller_env import vector
from traveller_env.policy import make_policy, resolve_policy

#: A policy written outside the package: always the first legal action.
FIRST_LEGAL = textwrap.dedent('''
    import numpy as np

    class FirstLegal:
        name = "first_legal"
        needs_observation = False
        calls = 0

        def reset(self, seed=None):
            pass

        def act(self, observation, action_mask, agent, env):
            FirstLegal.calls += 1
            return int(np.flatnonzero(action_mask)[0])
''')


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """``mypolicies.py`` in a folder of its own, that folder the current directory."""
    (tmp_path / "mypolicies.py").write_text(FIRST_LEGAL)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in [m for m in sys.modules if m == "mypolicies"]:
        del sys.modules[name]


def test_module_class_and_file_specs_make_the_same_policy(user_module):
    for spec in ("mypolicies:FirstLegal", "mypolicies.py:FirstLegal", "mypolicies.py",
                 str(user_module / "mypolicies.py")):
        policy = make_policy(spec, seed=3)
        assert type(policy).__name__ == "FirstLegal", spec
        assert resolve_policy(spec, scenario="duel").name == "first_legal"


@pytest.mark.parametrize(("spec", "message"), [
    ("mypolicies:Nobody", "has no attribute 'Nobody'"),
    ("nosuchmodule:X", "no module 'nosuchmodule'"),
    ("missing.py", "no Python file 'missing.py'"),
    ("1bad:X", "expected module:Class"),
])
def test_bad_specs_say_what_is_wrong(user_module, spec, message):
    with pytest.raises(ValueError, match=message):
        make_policy(spec)


def test_a_file_with_two_policy_classes_must_name_one(user_module):
    (user_module / "two.py").write_text(FIRST_LEGAL + FIRST_LEGAL.replace("FirstLegal", "Other"))
    with pytest.raises(ValueError, match=r"2 policy classes \(FirstLegal, Other\)"):
        make_policy("two.py")
    assert make_policy("two.py:Other").name == "first_legal"


def test_user_policy_as_a_vector_opponent_on_the_python_backend(user_module):
    v = vector.make("duel", num_envs=2, seed=0, backend="python",
                    opponents={"red": "mypolicies:FirstLegal"})
    obs, mask, _ = v.reset()
    rng = np.random.default_rng(0)
    for _ in range(50):
        obs, mask, *_ = v.step(vector.random_legal_actions(mask, rng))
    assert obs.shape[0] == 2
    assert type(make_policy("mypolicies:FirstLegal")).calls > 0  # red played with it


def _traveller(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "traveller_cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_user_policy_in_a_tournament_and_in_behaviour(user_module):
    done = _traveller("tournament", "--policies", "mypolicies:FirstLegal,rush",
                      "--scenarios", "duel", "--battles", "3", "--workers", "1",
                      "--out", str(user_module / "t"), cwd=user_module)
    assert done.returncode == 0, done.stderr
    summary = json.loads((user_module / "t" / "results.json").read_text())
    assert "mypolicies:FirstLegal" in json.dumps(summary)
    done = _traveller("behaviour", "--policies", "mypolicies.py", "--vs", "rush",
                      "--scenario", "duel", "--battles", "4", "--no-progress",
                      "--json", str(user_module / "b.json"), cwd=user_module)
    assert done.returncode == 0, done.stderr
    assert "mypolicies.py" in (user_module / "b.json").read_text()


def test_unknown_user_module_in_a_tournament_is_one_line_and_status_2(user_module):
    done = _traveller("tournament", "--policies", "nosuchmodule:X,rush", "--scenarios",
                      "duel", "--battles", "1", "--out", str(user_module / "t"),
                      cwd=user_module)
    assert done.returncode == 2
    assert "nosuchmodule" in done.stderr and "Traceback" not in done.stderr
