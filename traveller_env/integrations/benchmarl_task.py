"""The built-in scenarios as BenchMARL tasks: one learner seat, every other seat played inside.

BenchMARL's algorithms assume that every agent of a group acts at every step (its PettingZoo
tasks build TorchRL's env with ``parallel=True``; its losses read the groups' ``action_mask``,
not TorchRL's per-agent ``mask`` of who acted). A turn-based battle breaks that unless only one
seat learns: ``TravellerTaskClass`` builds ``learner_seats_env`` with every seat but the
learner played by a scripted policy, so each environment step is the learner's decision::

    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models import MlpConfig
    from traveller_env.integrations.benchmarl_task import TravellerTask

    task = TravellerTask.DUEL.get_task({"opponent": "rush"})   # blue_0 learns, red_0 rushes
    Experiment(task=task, algorithm_config=MappoConfig.get_from_yaml(),
               model_config=MlpConfig.get_from_yaml(), seed=0,
               config=ExperimentConfig.get_from_yaml()).run()

The task's config (every key optional): ``scenario`` (a built-in name or a path; default the
member's name), ``learner`` (the learning agent id; default the scenario's first), ``opponent``
(the policy name for ``traveller_env.policy.make_policy`` that plays every other seat; default
``"rush"``), ``backend`` (``"core"`` when built, else ``"python"``) and ``max_steps`` (the
length of an evaluation rollout; default 1000 learner decisions). The group is the learner's
side name. Each member is registered in BenchMARL's ``task_config_registry`` as
``"traveller/<scenario>"``.

BenchMARL 1.5.1 was written against TorchRL 0.10 and does not import on TorchRL 0.14 by itself
(``import benchmarl`` fails on ``torchrl.collectors.SyncDataCollector``): importing this module
applies ``traveller_env.integrations.benchmarl_compat`` (the renamed names, and the action-shape
check of IQL, QMIX and VDN), so it must be imported before anything of ``benchmarl`` — the
one line to put first. An import of BenchMARL that failed before it does no harm: importing
this module afterwards still works. MAPPO, IPPO, IQL, QMIX, VDN, MASAC and ISAC run.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

from traveller_env.integrations import benchmarl_compat

benchmarl_compat.apply()

try:
    from benchmarl.environments import Task, TaskClass, task_config_registry
except ImportError as exc:  # a BenchMARL or TorchRL that the patch does not cover
    raise ImportError(f"BenchMARL does not import here even with "
                      f"traveller_env.integrations.benchmarl_compat applied ({exc}); the "
                      "benchmarl extra pins the versions that work: pip install -e "
                      "'.[benchmarl]' (benchmarl 1.5.1, torchrl 0.14.1)") from exc
from torchrl.data import Composite  # noqa: E402
from torchrl.envs import EnvBase, PettingZooWrapper  # noqa: E402

from traveller_env import core  # noqa: E402
from traveller_env.env import raw_env  # noqa: E402
from traveller_env.integrations.learner_seats import learner_seats_env  # noqa: E402
from traveller_env.scenario import builtin_scenarios  # noqa: E402

__all__ = ["ENV_NAME", "TravellerTask", "TravellerTaskClass", "make_torchrl_env"]

#: The environment name of the tasks in BenchMARL (``"traveller/duel"``, ...).
ENV_NAME = "traveller"

#: The defaults of a task's config (``scenario`` defaults to the member's name).
DEFAULT_CONFIG: dict[str, Any] = {"learner": None, "opponent": "rush", "backend": None,
                                  "max_steps": 1000}


def make_torchrl_env(scenario: str, learner: str | None = None, opponent: str = "rush",
                     backend: str | None = None, seed: int | None = None,
                     device: Any = "cpu") -> PettingZooWrapper:
    """TorchRL's ``PettingZooWrapper`` over ``learner_seats_env(scenario)`` with ``learner``
    (default: the scenario's first agent) the only learner seat and ``opponent`` playing every
    other seat; the group is the learner's side name."""
    backend = backend or ("core" if core.available() else "python")
    probe = raw_env(scenario, backend="python")
    agents = probe.possible_agents
    learner = learner or agents[0]
    if learner not in agents:
        raise ValueError(f"learner {learner!r} is not an agent of {scenario!r} "
                         f"({', '.join(agents)})")
    side = probe.scenario.sides[probe.side_of(learner)].name
    opponents = {a: opponent for a in agents if a != learner}
    aec = learner_seats_env(scenario, opponents=opponents, seed=seed, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the wrapper warns about the AEC (not parallel) env
        return PettingZooWrapper(aec, group_map={side: [learner]}, use_mask=True,
                                 categorical_actions=True, done_on_any=False, seed=seed,
                                 device=device)


class TravellerTaskClass(TaskClass):
    """A BenchMARL task over one scenario (see the module docstring for its config)."""

    def __init__(self, name: str, config: dict[str, Any] | None) -> None:
        merged = {"scenario": name.lower(), **DEFAULT_CONFIG, **(config or {})}
        unknown = set(merged) - {"scenario", *DEFAULT_CONFIG}
        if unknown:
            raise ValueError(f"unknown task config keys: {sorted(unknown)} (known: scenario, "
                             f"{', '.join(DEFAULT_CONFIG)})")
        super().__init__(name, merged)

    def get_env_fun(self, num_envs: int, continuous_actions: bool, seed: int | None,
                    device: Any) -> Callable[[], EnvBase]:
        """A constructor of the TorchRL env (BenchMARL batches it in a ``SerialEnv``)."""
        config = copy.deepcopy(self.config)
        return lambda: make_torchrl_env(config["scenario"], config["learner"],
                                        config["opponent"], config["backend"], seed, device)

    def supports_continuous_actions(self) -> bool:
        """No: the actions are discrete."""
        return False

    def supports_discrete_actions(self) -> bool:
        """Yes."""
        return True

    def max_steps(self, env: EnvBase) -> int:
        """The length of an evaluation rollout, in learner decisions."""
        return int(self.config["max_steps"])

    def has_render(self, env: EnvBase) -> bool:
        """No video rendering in BenchMARL's loggers."""
        return False

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        """The learner's side name to ``[learner]``."""
        return env.group_map

    def observation_spec(self, env: EnvBase) -> Composite:
        """The learner group's ``observation`` entry only."""
        return self._group_entries(env, "observation")

    def action_mask_spec(self, env: EnvBase) -> Composite | None:
        """The learner group's ``action_mask`` entry only."""
        return self._group_entries(env, "action_mask")

    def info_spec(self, env: EnvBase) -> Composite | None:
        """None: ``infos`` are empty (``infos="none"``)."""
        return None

    def state_spec(self, env: EnvBase) -> Composite | None:
        """None: the learner-seat env returns no global state to TorchRL."""
        return None

    def action_spec(self, env: EnvBase) -> Composite:
        """The wrapper's full action spec."""
        return env.full_action_spec

    @staticmethod
    def env_name() -> str:
        """``"traveller"``."""
        return ENV_NAME

    def _group_entries(self, env: EnvBase, key: str) -> Composite:
        """The observation spec with only ``(group, key)`` left for each group."""
        spec = env.observation_spec.clone()
        groups = self.group_map(env)
        for name in list(spec.keys()):
            if name not in groups:
                del spec[name]
        for group in groups:
            for name in list(spec[group].keys()):
                if name != key:
                    del spec[group][name]
        return spec


class _TravellerTaskBase(Task):
    """The members' behaviour: ``TravellerTaskClass``, and defaults without a YAML file."""

    @staticmethod
    def associated_class() -> type[TaskClass]:
        """``TravellerTaskClass``."""
        return TravellerTaskClass

    def get_from_yaml(self, path: str | None = None) -> TaskClass:
        """The task with the default config (there is no YAML file in BenchMARL's tree)."""
        return self.associated_class()(name=self.name, config={})


#: One member per built-in scenario (``TravellerTask.DUEL``, ...).
TravellerTask = _TravellerTaskBase(  # type: ignore[call-overload]
    "TravellerTask", [(name.upper(), None) for name in builtin_scenarios()],
    module=__name__)

for _task in TravellerTask:
    task_config_registry[f"{ENV_NAME}/{_task.name.lower()}"] = _task
