"""BenchMARL over the learner-seat env: ``traveller_env.integrations.benchmarl_task.TravellerTask``
runs BenchMARL's own ``Experiment`` with MAPPO, IPPO, IQL, QMIX and VDN on duel (blue learns,
red plays rush), on tiny budgets.

A run is asserted, not learning (measured, seed 0: MAPPO's mean training return went from -1.0
to -0.36 over 12 iterations of 512 frames, ~30 s on 2 cores, too slow for this file)."""

from __future__ import annotations

import importlib.util
import warnings

import pytest

if importlib.util.find_spec("benchmarl") is None or importlib.util.find_spec("torchrl") is None:
    pytest.skip("benchmarl (and torchrl) not installed: pip install -e .[benchmarl]",
                allow_module_level=True)

import torch

from traveller_env import core
from traveller_env.integrations.benchmarl_task import TravellerTask, make_torchrl_env

from benchmarl.algorithms import IppoConfig, IqlConfig, MappoConfig, QmixConfig, VdnConfig  # isort: skip
from benchmarl.environments import task_config_registry  # isort: skip
from benchmarl.experiment import Experiment, ExperimentConfig  # isort: skip
from benchmarl.models import MlpConfig  # isort: skip

BACKEND = "core" if core.available() else "python"
FRAMES = 128
#: The off-policy algorithms' budget: 2 iterations of this many frames.
OFF_POLICY_FRAMES = 64


def short_config(tmp_path) -> ExperimentConfig:
    config = ExperimentConfig.get_from_yaml()
    config.loggers = []
    config.create_json = False
    config.render = False
    config.save_folder = str(tmp_path)
    config.checkpoint_at_end = False
    config.on_policy_collected_frames_per_batch = FRAMES
    config.on_policy_n_envs_per_worker = 1
    config.on_policy_n_minibatch_iters = 2
    config.on_policy_minibatch_size = 64
    config.max_n_iters = 2
    config.max_n_frames = None
    config.lr = 3e-4
    config.evaluation = True
    config.evaluation_interval = 2 * FRAMES
    config.evaluation_episodes = 1
    config.off_policy_collected_frames_per_batch = OFF_POLICY_FRAMES
    config.off_policy_n_envs_per_worker = 1
    config.off_policy_n_optimizer_steps = 2
    config.off_policy_train_batch_size = 32
    config.off_policy_init_random_frames = 0
    config.off_policy_memory_size = 1000
    return config


def test_every_scenario_is_registered_as_a_task():
    assert task_config_registry["traveller/duel"] is TravellerTask.DUEL
    assert {t.name.lower() for t in TravellerTask} >= {"duel", "squad", "ambush"}
    task = TravellerTask.SQUAD.get_task()
    assert task.config["scenario"] == "squad" and task.config["opponent"] == "rush"
    with pytest.raises(ValueError, match="unknown task config"):
        TravellerTask.DUEL.get_task({"opponents": {"red": "rush"}})


@pytest.mark.parametrize(("scenario", "learner", "group"),
                         [("duel", None, "blue"), ("squad", "red_2", "red")])
def test_the_task_env_has_one_learner_who_acts_at_every_step(scenario, learner, group):
    env = make_torchrl_env(scenario, learner=learner, backend=BACKEND, seed=0)
    assert env.group_map == {group: [learner or f"{group}_0"]}
    td = env.rollout(60, break_when_any_done=False)
    assert bool(td[group, "mask"].all())  # the learner is the agent that acted, every step
    assert bool(td[group, "action_mask"].gather(-1, td[group, "action"].unsqueeze(-1)).all())


@pytest.mark.parametrize("algorithm", [MappoConfig, IppoConfig])
def test_an_experiment_trains_on_duel_against_rush(algorithm, tmp_path):
    torch.manual_seed(0)
    warnings.simplefilter("ignore")
    task = TravellerTask.DUEL.get_task({"backend": BACKEND, "max_steps": 200})
    model = MlpConfig.get_from_yaml()
    experiment = Experiment(task=task, algorithm_config=algorithm.get_from_yaml(),
                            model_config=model, critic_model_config=model, seed=0,
                            config=short_config(tmp_path))
    before = [p.detach().clone() for p in experiment.policy.parameters()]
    experiment.run()
    assert experiment.n_iters_performed == 2
    assert experiment.total_frames == 2 * FRAMES
    after = list(experiment.policy.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))


@pytest.mark.parametrize("algorithm", [IqlConfig, QmixConfig, VdnConfig])
def test_the_discrete_value_algorithms_train_on_duel(algorithm, tmp_path):
    """IQL, QMIX and VDN (TorchRL's ``QValueModule`` over the group's action spec) run: the
    action-shape check TorchRL 0.11 added is what ``benchmarl_compat`` turns off for them."""
    torch.manual_seed(0)
    warnings.simplefilter("ignore")
    config = short_config(tmp_path)
    config.evaluation = False
    experiment = Experiment(task=TravellerTask.DUEL.get_task({"backend": BACKEND}),
                            algorithm_config=algorithm.get_from_yaml(),
                            model_config=MlpConfig.get_from_yaml(), seed=0, config=config)
    before = [p.detach().clone() for p in experiment.policy.parameters()]
    experiment.run()
    assert experiment.n_iters_performed == 2
    assert experiment.total_frames == 2 * OFF_POLICY_FRAMES
    after = list(experiment.policy.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
