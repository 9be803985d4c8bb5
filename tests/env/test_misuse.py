"""API misuse gets clear errors, and artifacts are safe.

* The AEC environment (``raw_env`` and ``env``): calls before ``reset``, steps after the end,
  out-of-range and non-int actions, a dead agent's action, bad seeds, unknown agents, labels
  and options: each a ``RuntimeError``/``ValueError``/``TypeError`` saying what is wrong.
* The SB3 bridge: actions outside its ``Discrete`` space, steps before reset or after the end;
  a trained policy fed a mask or an observation of the wrong shape.
* Artifacts: ``atomic_write_bytes`` never leaves a truncated file in place of a good one nor a
  temporary file behind; loading an empty, truncated, non-zip or mismatched model gives a
  ``ValueError`` naming the file and the mismatch.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import fighter, scenario

import traveller_env
from traveller_env.integrations.sb3 import TravellerSB3Env
from traveller_env.scenario import ScenarioError
from traveller_rl import common as train_common


def finished(e):
    """Play ``e`` (reset) to the end with the first legal action; dead steps take None."""
    for _ in e.agent_iter():
        _, _, terminated, truncated, _ = e.last()
        e.step(None if terminated or truncated else int(np.flatnonzero(e.action_mask())[0]))
    return e


# ---------------------------------------------------------------------------- AEC misuse
@pytest.mark.parametrize("call", ["step", "observe", "last", "state", "action_mask"])
def test_raw_env_before_reset_is_a_runtime_error_not_an_attribute_error(call):
    e = traveller_env.raw_env("duel")
    args = {"step": (0,), "observe": ("blue_0",)}.get(call, ())
    with pytest.raises(RuntimeError, match=r"before reset\(\): call reset\(\) first"):
        getattr(e, call)(*args)


def test_wrapped_env_before_reset_is_refused_by_the_order_enforcing_wrapper():
    e = traveller_env.env("duel")
    with pytest.raises(AssertionError, match="reset"):
        e.step(0)
    with pytest.raises(AssertionError, match="reset"):
        e.observe("blue_0")
    with pytest.raises(AttributeError, match="before reset"):
        e.last()


@pytest.mark.parametrize("factory", [traveller_env.raw_env, traveller_env.env])
@pytest.mark.parametrize("action", [0, None])
def test_step_after_the_episode_is_over_says_so(factory, action):
    e = factory("duel", max_rounds=1)
    e.reset(seed=0)
    finished(e)
    assert not e.agents
    with pytest.raises(RuntimeError, match=r"episode is over.*call reset\(\)"):
        e.step(action)
    e.reset(seed=1)  # and reset starts a new one
    assert e.agents


def test_last_after_the_episode_is_over_says_so():
    e = finished(_reset(traveller_env.raw_env("duel", max_rounds=1)))
    with pytest.raises(RuntimeError, match="episode is over"):
        e.last()


def _reset(e, seed=0):
    e.reset(seed=seed)
    return e


@pytest.mark.parametrize("bad", [52, -1, 10**9, 1.5, "end_turn", True, [1], np.array([1, 2]),
                                 np.float32(1.0)])
def test_out_of_range_and_non_int_actions_name_the_agent_and_the_range(bad):
    e = _reset(traveller_env.raw_env("duel"))
    agent = e.agent_selection
    before = len(e.battle.events)
    with pytest.raises(ValueError, match=rf"{agent}: action .* out of range; expected an int "
                                         rf"in \[0, 52\)"):
        e.step(bad)
    assert len(e.battle.events) == before  # refused before anything changed


@pytest.mark.parametrize("ok", [np.int64(0), np.int32(0), 0])
def test_numpy_integer_actions_are_accepted(ok):
    """A NumPy integer action takes effect exactly as the same Python ``int`` does."""
    e, twin = _reset(traveller_env.raw_env("duel")), _reset(traveller_env.raw_env("duel"))
    legal = int(np.flatnonzero(e.action_mask())[0])
    before = len(e.unwrapped.battle.events)
    e.step(type(ok)(legal))
    twin.step(legal)
    assert len(e.unwrapped.battle.events) > before  # the action was applied
    assert e.unwrapped.battle.events == twin.unwrapped.battle.events
    assert e.agent_selection == twin.agent_selection


def test_none_for_a_live_agent_and_an_action_for_a_dead_one_are_refused():
    e = _reset(traveller_env.raw_env("duel"))
    with pytest.raises(ValueError, match="None is only for agents that are terminated"):
        e.step(None)
    frail = {"chars": {"STR": 1, "DEX": 1, "END": 1}}
    sc = scenario([fighter((1, 1), **frail), fighter((3, 1), **frail)],
                  [fighter((1, 4), **frail), fighter((3, 4), **frail)])
    e = _reset(traveller_env.raw_env(sc), seed=3)
    for agent in e.agent_iter():
        _, _, terminated, truncated, _ = e.last()
        if terminated or truncated:
            with pytest.raises(ValueError, match=rf"{agent} is (terminated|truncated): its only "
                                                 "valid action is None"):
                e.step(0)
            e.step(None)
            break
        labels = [e.action_labels[i] for i in np.flatnonzero(e.action_mask())]
        attack = [lbl for lbl in labels if lbl.startswith("attack")]
        e.step(e.action_index(attack[0] if attack else labels[-1]))
    else:
        pytest.fail("no agent was knocked out")


def test_illegal_action_names_agent_label_and_reason():
    e = _reset(traveller_env.raw_env("duel"))
    agent = e.agent_selection
    with pytest.raises(ValueError, match=rf"{agent}: illegal action 'end_turn' \(index 0\): "
                                         r"only haste"):
        e.step(e.action_index("end_turn"))


@pytest.mark.parametrize("seed", ["1", 1.5, True, [1]])
def test_reset_with_a_seed_that_is_not_an_int_is_a_type_error(seed):
    e = traveller_env.raw_env("duel")
    with pytest.raises(TypeError, match="seed must be an int or None"):
        e.reset(seed=seed)
    e.reset(seed=np.int64(3))
    assert e.battle_seed == 3


@pytest.mark.parametrize("call", ["observe", "action_space", "observation_space",
                                  "observation_slots", "side_of", "action_mask"])
def test_unknown_agent_names_are_refused_listing_the_agents(call):
    e = _reset(traveller_env.raw_env("duel"))
    with pytest.raises(ValueError, match=r"unknown agent 'blue_9'; agents: blue_0, red_0"):
        getattr(e, call)("blue_9")


def test_unknown_labels_options_and_arguments_are_refused():
    e = traveller_env.raw_env("duel")
    with pytest.raises(ValueError, match="not in this scenario's action space"):
        e.action_index("attack:red_7")
    with pytest.raises(ValueError, match="unknown action label"):
        e.action_index("fire!")
    with pytest.raises(ScenarioError, match="env options: hastenning: unknown key"):
        traveller_env.raw_env("duel", hastenning=False)
    with pytest.raises(ScenarioError, match="env options: illegal_action"):
        traveller_env.raw_env("duel", illegal_action="ignore")
    with pytest.raises(ValueError, match="max_rounds must be a positive integer"):
        traveller_env.raw_env("duel", max_rounds=0)
    with pytest.raises(ValueError, match="render_mode 'video' is not supported"):
        traveller_env.raw_env("duel", render_mode="video")
    with pytest.raises(ScenarioError, match="no built-in scenario of that name"):
        traveller_env.raw_env("dule")


# ---------------------------------------------------------------------------- SB3 bridge misuse
@pytest.mark.parametrize("bad", [52, -1, 1.5, "0", None, True, np.array([1, 2])])
def test_bridge_refuses_actions_outside_its_space_naming_it(bad):
    bridge = TravellerSB3Env("duel")
    bridge.reset(seed=0)
    with pytest.raises(ValueError, match=r"outside the bridge's action space Discrete\(52\): "
                                         r"expected one int in \[0, 52\)"):
        bridge.step(bad)


def test_bridge_accepts_numpy_scalars_and_one_element_arrays():
    bridge = TravellerSB3Env("duel")
    bridge.reset(seed=0)
    for wrap in (np.int64, lambda a: np.array(a), lambda a: np.array([a])):
        legal = int(np.flatnonzero(bridge.action_masks())[0])
        bridge.step(wrap(legal))


def test_bridge_with_assist_names_its_larger_space_and_the_delegate_action():
    from traveller_agents.registry import make_policy

    bridge = TravellerSB3Env("squad", learner="blue", assist=make_policy("marksman", seed=0),
                             focus=("leadership", "direct"))
    bridge.reset(seed=0)
    n = bridge.action_space.n
    with pytest.raises(ValueError, match=rf"Discrete\({n}\).*{n - 1} hands the decision"):
        bridge.step(n)


def test_bridge_step_before_reset_and_after_the_end_is_a_runtime_error():
    bridge = TravellerSB3Env("duel", max_rounds=1)
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        bridge.step(0)
    bridge.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, _ = bridge.step(int(np.flatnonzero(bridge.action_masks())[0]))
        done = terminated or truncated
    with pytest.raises(RuntimeError, match=r"episode ended.*call reset\(\)"):
        bridge.step(0)


# ---------------------------------------------------------------------------- atomic writes
def _only(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


class _HalfWriter:
    """A file whose ``write`` puts half the bytes on disk, then fails (a full disk)."""

    def __init__(self, fh) -> None:
        self.fh = fh

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()

    def write(self, data: bytes) -> int:
        self.fh.write(data[: len(data) // 2])
        self.fh.flush()
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("failure", ["write", "fsync", "replace", "interrupt"])
def test_atomic_write_never_leaves_a_truncated_file_nor_a_temporary_one(tmp_path, monkeypatch,
                                                                        failure):
    """Whatever fails mid-way (a write that stops half-way, fsync, the rename, Ctrl-C), the
    good file stays as it was and no temporary file is left behind."""
    target = tmp_path / "model.zip"
    good = b"GOOD" * 1000
    train_common.atomic_write_bytes(target, good)
    new = b"NEW!" * 5000
    real_fdopen = os.fdopen
    if failure == "write":
        monkeypatch.setattr(train_common.os, "fdopen",
                            lambda fd, mode: _HalfWriter(real_fdopen(fd, mode)))
        expected: type[BaseException] = OSError
    elif failure == "fsync":
        def fail_fsync(fd):
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(train_common.os, "fsync", fail_fsync)
        expected = OSError
    elif failure == "replace":
        def fail_replace(src, dst):
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr(train_common.os, "replace", fail_replace)
        expected = PermissionError
    else:
        def interrupt(fd):
            raise KeyboardInterrupt
        monkeypatch.setattr(train_common.os, "fsync", interrupt)
        expected = KeyboardInterrupt
    with pytest.raises(expected):
        train_common.atomic_write_bytes(target, new)
    monkeypatch.undo()
    assert target.read_bytes() == good
    assert _only(tmp_path) == ["model.zip"]
    train_common.atomic_write_bytes(target, new)  # and a later write succeeds
    assert target.read_bytes() == new
    assert _only(tmp_path) == ["model.zip"]


def test_atomic_save_model_that_fails_while_serialising_writes_nothing(tmp_path):
    class Broken:
        def save(self, buf):
            buf.write(b"partial")
            raise RuntimeError("serialisation failed")

    with pytest.raises(RuntimeError):
        train_common.atomic_save_model(Broken(), tmp_path / "m.zip", scenario="duel")
    assert _only(tmp_path) == []


# ---------------------------------------------------------------------------- model loading
class _SpacesOnly(gym.Env):
    """An environment with given spaces, to build a model of a chosen shape."""

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (obs_dim,), np.float32)
        self.action_space = gym.spaces.Discrete(n_actions)

    def reset(self, *, seed=None, options=None):
        return np.zeros(self.observation_space.shape, np.float32), {}

    def step(self, action):
        return np.zeros(self.observation_space.shape, np.float32), 0.0, True, False, {}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny untrained MaskablePPO for the duel (saved with its .meta.json), and one whose
    observations are 3 entries longer than the duel's (same actions)."""
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("models")
    duel = MaskablePPO("MlpPolicy", TravellerSB3Env("duel"), n_steps=16, batch_size=16,
                       seed=0, device="cpu")
    train_common.atomic_save_model(duel, folder / "duel.zip", scenario="duel")
    d = duel.observation_space.shape[0]
    wide = MaskablePPO("MlpPolicy", _SpacesOnly(d + 3, duel.action_space.n), n_steps=16,
                       batch_size=16, seed=0, device="cpu")
    wide.save(folder / "wide.zip")
    return folder


def _junk_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("notes.txt", "not a model")
    return buf.getvalue()


@pytest.mark.parametrize("kind", ["empty", "truncated", "cut_short", "not_a_zip", "junk_zip"])
def test_loading_a_broken_model_file_is_a_value_error_naming_the_file(models, kind, tmp_path):
    from traveller_agents.trained import load_policy

    good = (models / "duel.zip").read_bytes()
    data = {"empty": b"", "truncated": good[: len(good) // 2], "cut_short": good[:-64],
            "not_a_zip": b"name: duel\n", "junk_zip": _junk_zip()}[kind]
    path = tmp_path / f"{kind}.zip"
    path.write_bytes(data)
    with pytest.raises(ValueError) as info:
        load_policy(path, "duel")
    assert str(info.value).startswith(f"{path}: cannot be loaded as a MaskablePPO model")


def test_loading_a_model_for_another_scenario_names_the_spaces_and_scenarios(models):
    from traveller_agents.trained import load_policy

    path = models / "duel.zip"
    assert load_policy(path, "duel").name == "duel"
    with pytest.raises(ValueError, match=rf"^{path}: action space Discrete\(52\) \(trained on "
                                         r"'duel'\) does not fit scenario 'squad', which has "
                                         r"Discrete\(76\) actions"):
        load_policy(path, "squad")
    with pytest.raises(ValueError, match=rf"^{models / 'wide.zip'}: observation space .* does "
                                         r"not fit scenario 'duel', whose observation vectors "
                                         r"have shape \(\d+,\)"):
        load_policy(models / "wide.zip", "duel")
    with pytest.raises(FileNotFoundError, match="no such trained-policy file"):
        load_policy(models / "missing.zip", "duel")


def test_a_corrupt_meta_file_is_named(models, tmp_path):
    from traveller_agents.trained import load_policy

    path = tmp_path / "m.zip"
    path.write_bytes((models / "duel.zip").read_bytes())
    path.with_suffix(".meta.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"m\.meta\.json: unreadable model metadata"):
        load_policy(path, "duel")


def test_trained_policy_refuses_a_mask_or_observation_of_the_wrong_shape(models):
    from traveller_agents.trained import load_policy

    policy = load_policy(models / "duel.zip", "duel")
    d = policy.model.observation_space.shape[0]
    obs = np.zeros(d, np.float32)
    with pytest.raises(ValueError, match=r"action mask of shape \(10,\).*Discrete\(52\) actions: "
                                         r"a mask of 52 entries"):
        policy.act(obs, np.ones(10, np.int8), "blue_0", None)
    with pytest.raises(ValueError, match=rf"observation of shape \(5,\).*expects \({d},\)"):
        policy.act(np.zeros(5, np.float32), np.ones(52, np.int8), "blue_0", None)
    assert 0 <= policy.act(obs, np.ones(52, np.int8), "blue_0", None) < 52
