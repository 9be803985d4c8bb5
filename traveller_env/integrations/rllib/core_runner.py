"""``CoreEnvRunner``: RLlib's single-agent env runner for ``TravellerCoreVectorEnv``.

Two things set it apart from RLlib 2.60's ``SingleAgentEnvRunner``, which it extends:

**Autoreset.** The core resets a row in the step that ends its battle (Gymnasium's
``SAME_STEP``), while ``SingleAgentEnvRunner`` expects ``NEXT_STEP``. Here the step that
ends a battle hands RLlib the next battle's first observation as the ended episode's last
one, and the new episode starts with that same observation at once, so the next call's
action is the first step of the new battle. No decision and no reward is dropped or moved
between battles. A terminated battle's last observation is never used for bootstrapping; one
cut by ``max_rounds`` is bootstrapped from the next battle's first observation (the core keeps
no final observations).

**The lean path.** RLlib's own loop does per-row Python work on every step: the env-to-module
and module-to-env connector pipelines unbatch and re-batch each observation, and every row's
episode appends each item to its buffers. On the core that work costs several times the
battles themselves. When the runner uses RLlib's default connectors, no episode callbacks, a
stateless module and numpy episodes (``_lean_path_applies``), ``sample(num_timesteps=...)``
instead steps the whole batch into preallocated arrays (the module's forward pass, the
action distribution's sample and log-probability, as RLlib's ``GetActions`` computes them)
and cuts the arrays into ``SingleAgentEpisode`` chunks once per call: the same episodes,
chunk ids, ``t_started``, lookback buffers and extra model outputs as RLlib's loop builds
(``tests/integrations/test_rllib_core.py`` compares the two on the same seeds). Anything else
(custom connectors or callbacks, ``num_episodes`` sampling, random actions, a module on a GPU
or one whose forward pass returns more than the action logits) runs RLlib's loop.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import torch
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.core.columns import Columns
    from ray.rllib.env.env_runner import ENV_STEP_TIMER
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode
    from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
    from ray.rllib.utils.metrics import RLMODULE_INFERENCE_TIMER, WEIGHTS_SEQ_NO
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("traveller_env.integrations.rllib.core_runner needs Ray RLlib and torch: "
                      "install the project's 'rllib' extra (pip install -e '.[rllib]')") from exc

from traveller_env.integrations.rllib.core import TravellerCoreVectorEnv

__all__ = ["CoreEnvRunner"]

OBS, MASK = "observations", "action_mask"
_EPISODE_CALLBACKS = ("created", "start", "step", "end")


@dataclass
class _Steps:
    """One ``sample`` call's steps of every row: index ``[t, row]``; observations, masks and
    battle seeds have ``T + 1`` entries (the last is the state after the call)."""

    obs: np.ndarray
    mask: np.ndarray
    seed: np.ndarray
    actions: np.ndarray
    logp: np.ndarray
    logits: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    weights_seq_no: np.ndarray
    times: np.ndarray

    @classmethod
    def empty(cls, steps: int, rows: int, obs_dim: int, n_actions: int) -> _Steps:
        return cls(obs=np.empty((steps + 1, rows, obs_dim), np.float32),
                   mask=np.empty((steps + 1, rows, n_actions), np.float32),
                   seed=np.empty((steps + 1, rows), np.uint64),
                   actions=np.empty((steps, rows), np.int32),  # as RLlib's convert_to_numpy
                   logp=np.empty((steps, rows), np.float32),
                   logits=np.empty((steps, rows, n_actions), np.float32),
                   rewards=np.empty((steps, rows), np.float64),
                   terminated=np.empty((steps, rows), bool),
                   truncated=np.empty((steps, rows), bool),
                   weights_seq_no=np.empty(steps, np.int64),
                   times=np.empty(steps + 1, np.float64))

    @property
    def length(self) -> int:
        return len(self.actions)


#: ``_Steps`` fields with one entry per step and row (observations: the one the step saw).
_PER_STEP = ("obs", "mask", "seed", "actions", "rewards", "logp", "logits")


@dataclass
class _Rows:
    """What each row carries from one lean ``sample`` call to the next: the ongoing episode's
    id, start and running totals, its last steps (at most the lookback horizon: the next
    chunk's lookback, as RLlib's ``cut`` keeps it), and the previous call (its last state)."""

    ids: list[str]
    t_started: np.ndarray
    returns: np.ndarray
    lengths: np.ndarray
    started: np.ndarray
    lookback: list[dict[str, np.ndarray] | None]
    previous: _Steps | None = None


class CoreEnvRunner(SingleAgentEnvRunner):
    """RLlib's ``SingleAgentEnvRunner`` for ``TravellerCoreVectorEnv`` (see the module
    docstring): ``SAME_STEP`` autoreset, and the lean sampling path where it applies. Set it
    with ``config.env_runners(env_runner_cls=CoreEnvRunner,
    gym_env_vectorize_mode="vector_entry_point")``."""

    _resetting_all = False
    _rows: _Rows | None = None
    _logits_only: bool | None = None

    # -- RLlib's loop ------------------------------------------------------------------------

    def _reset_envs(self, episodes: Any, shared_data: Any, explore: bool) -> Any:
        """RLlib's reset of every row (its episodes get the reset observations there)."""
        self._resetting_all = True
        try:
            return super()._reset_envs(episodes, shared_data, explore)
        finally:
            self._resetting_all = False

    def _new_episode(self, env_index: int, episodes: Any = None) -> None:
        """A fresh episode for row ``env_index``; after a battle ended inside ``sample``, it
        starts with the next battle's first observation (the ended episode's last)."""
        episodes = episodes if episodes is not None else self._ongoing_episodes
        ended = episodes[env_index] if env_index < len(episodes) else None
        super()._new_episode(env_index, episodes)
        if self._resetting_all or ended is None or not ended.is_done:
            return
        episodes[env_index].add_env_reset(observation=ended.get_observations(-1),
                                          infos=ended.get_infos(-1))

    def _sample(self, *, num_timesteps: int | None = None, num_episodes: int | None = None,
                explore: bool, random_actions: bool = False,
                force_reset: bool = False) -> list[SingleAgentEpisode]:
        """The lean path for ``num_timesteps`` where it applies, else RLlib's loop (which
        then starts every row afresh: the two keep their ongoing episodes apart)."""
        if num_timesteps is not None and not random_actions and self._lean_path_applies():
            return self._lean_sample(num_timesteps, explore, force_reset)
        if self._rows is not None:
            self._rows = None
            self._needs_initial_reset = True
        return super()._sample(num_timesteps=num_timesteps, num_episodes=num_episodes,
                               explore=explore, random_actions=random_actions,
                               force_reset=force_reset)

    def _lean_path_applies(self) -> bool:
        """Whether RLlib's loop would do nothing beyond what the lean path does."""
        c = self.config
        return (isinstance(self.env.unwrapped, TravellerCoreVectorEnv)
                and self.module is not None and not self.module.is_stateful()
                and torch.device(self._device).type == "cpu"  # the batch is made on the CPU
                and c._env_to_module_connector is None and c._module_to_env_connector is None
                and c.add_default_connectors_to_env_to_module_pipeline
                and c.add_default_connectors_to_module_to_env_pipeline
                and c.callbacks_class is RLlibCallback
                and all(getattr(c, f"callbacks_on_episode_{w}") is None
                        for w in _EPISODE_CALLBACKS)
                and c.episodes_to_numpy and not c.restart_failed_sub_environments
                and self._module_gives_logits_only())

    def _module_gives_logits_only(self) -> bool:
        """Whether the module's forward passes return the action logits and nothing else
        (RLlib's loop would keep any other output in the episodes; a module that samples
        its own actions is not what the lean path samples for). Asked once, of an empty
        batch."""
        if self._logits_only is None:
            space = self.env.unwrapped.single_observation_space
            batch = {Columns.OBS: {OBS: torch.zeros((1, *space[OBS].shape)),
                                   MASK: torch.ones((1, *space[MASK].shape))}}
            outputs = (self.module.forward_exploration(batch, t=0),
                       self.module.forward_inference(batch))
            self._logits_only = all(set(out) == {Columns.ACTION_DIST_INPUTS}
                                    for out in outputs)
        return self._logits_only

    # -- the lean path -----------------------------------------------------------------------

    def _lean_sample(self, num_timesteps: int, explore: bool,
                     force_reset: bool) -> list[SingleAgentEpisode]:
        env: TravellerCoreVectorEnv = self.env.unwrapped
        n = self.num_envs
        steps = _Steps.empty(-(-num_timesteps // n), n, env.single_observation_space[OBS].shape[0],
                             env.single_action_space.n)
        if force_reset or self._needs_initial_reset or self._rows is None:
            self._lean_reset(env, steps)
        else:
            prev = self._rows.previous
            steps.obs[0], steps.mask[0], steps.seed[0] = prev.obs[-1], prev.mask[-1], prev.seed[-1]
            steps.times[0] = prev.times[-1]
        self._lean_step(env, steps, explore)
        return self._lean_episodes(steps, env)

    def _lean_reset(self, env: TravellerCoreVectorEnv, steps: _Steps) -> None:
        """Every row's next battle (seeded on the first reset, as RLlib's loop does)."""
        obs, infos = env.reset(seed=self._seed if self._needs_initial_reset else None)
        self._needs_initial_reset = False
        steps.obs[0], steps.mask[0], steps.seed[0] = obs[OBS], obs[MASK], infos["battle_seed"]
        steps.times[0] = time.perf_counter()
        n = self.num_envs
        self._rows = _Rows(ids=[uuid.uuid4().hex for _ in range(n)],
                           t_started=np.zeros(n, np.int64), returns=np.zeros(n),
                           lengths=np.zeros(n, np.int64), started=np.full(n, steps.times[0]),
                           lookback=[None] * n)

    def _lean_step(self, env: TravellerCoreVectorEnv, steps: _Steps, explore: bool) -> None:
        """Step every row ``steps.length`` times: the module's forward pass and RLlib's
        action sampling (``GetActions``) on the whole batch, the battles in the core."""
        module = self.module
        if explore:
            forward, dist_cls = module.forward_exploration, module.get_exploration_action_dist_cls()
        else:
            forward, dist_cls = module.forward_inference, module.get_inference_action_dist_cls()
        runners = self.config.num_env_runners or 1
        lifetime = self.num_env_steps_sampled_lifetime // runners
        inference = stepping = 0.0
        # The module reads each step's batch from these (torch allocates them aligned): a
        # slice of ``steps`` may start at any 4-byte boundary, and the matrix products'
        # last bits depend on their input's alignment.
        obs_in = torch.empty(steps.obs.shape[1:])
        mask_in = torch.empty(steps.mask.shape[1:])
        obs_view, mask_view = obs_in.numpy(), mask_in.numpy()
        for t in range(steps.length):
            start = time.perf_counter()
            np.copyto(obs_view, steps.obs[t])
            np.copyto(mask_view, steps.mask[t])
            batch = {Columns.OBS: {OBS: obs_in, MASK: mask_in}}
            kwargs = {"t": (lifetime + t * self.num_envs) * runners} if explore else {}
            logits = forward(batch, **kwargs)[Columns.ACTION_DIST_INPUTS]
            dist = dist_cls.from_logits(logits)
            if not explore:
                dist = dist.to_deterministic()
            actions = dist.sample()
            steps.logp[t] = dist.logp(actions).numpy()
            steps.actions[t] = actions.numpy()
            steps.logits[t] = logits.numpy()
            mid = time.perf_counter()
            obs, rewards, terminated, truncated, infos = env.step(steps.actions[t])
            steps.obs[t + 1], steps.mask[t + 1] = obs[OBS], obs[MASK]
            steps.seed[t + 1] = infos["battle_seed"]
            steps.rewards[t], steps.terminated[t], steps.truncated[t] = (rewards, terminated,
                                                                        truncated)
            steps.times[t + 1] = end = time.perf_counter()
            inference += mid - start
            stepping += end - mid
        steps.weights_seq_no[:] = self._weights_seq_no
        self.metrics.log_value(RLMODULE_INFERENCE_TIMER, inference / steps.length, reduce="ema")
        self.metrics.log_value(ENV_STEP_TIMER, stepping / steps.length, reduce="ema")
        self._log_env_steps(metric=self._metrics_num_try_env_step, num_steps=steps.length)

    def _lean_episodes(self, steps: _Steps, env: TravellerCoreVectorEnv
                       ) -> list[SingleAgentEpisode]:
        """Cut the call's steps into episode chunks as RLlib's loop does: the episodes that
        ended, in the order they ended, then each row's ongoing chunk; log the metrics."""
        rows = self._rows
        horizon = int(self.config.episode_lookback_horizon)
        done = steps.terminated | steps.truncated
        ended: list[tuple[int, int, SingleAgentEpisode]] = []
        ongoing: list[SingleAgentEpisode] = []
        length = steps.length
        for r in range(self.num_envs):
            start = 0
            for end in np.flatnonzero(done[:, r]):
                episode = self._lean_chunk(steps, r, start, int(end) + 1, env)
                ended.append((int(end), r, episode))
                total_len = int(rows.lengths[r]) + len(episode)
                total_ret = float(rows.returns[r] + steps.rewards[start:end + 1, r].sum())
                self._log_episode_metrics(total_len, total_ret,
                                          float(steps.times[end + 1] - rows.started[r]))
                rows.ids[r], rows.t_started[r] = uuid.uuid4().hex, 0
                rows.returns[r], rows.lengths[r] = 0.0, 0
                rows.started[r] = steps.times[end + 1]
                start = int(end) + 1
            if start == length:  # a battle ended at the call's last step
                rows.lookback[r] = None
                continue
            ongoing.append(self._lean_chunk(steps, r, start, length, env, horizon))
            rows.t_started[r] += length - start
            rows.lengths[r] += length - start
            rows.returns[r] += steps.rewards[start:, r].sum()
        rows.previous = steps
        ended.sort(key=lambda item: item[:2])
        done_episodes = [episode for _, _, episode in ended]
        sampled = length * self.num_envs
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=sampled)
        self._increase_sampled_metrics(sampled, len(done_episodes))
        return done_episodes + ongoing

    def _lean_chunk(self, steps: _Steps, r: int, start: int, stop: int,
                    env: TravellerCoreVectorEnv, horizon: int = 0) -> SingleAgentEpisode:
        """Row ``r``'s chunk over steps ``[start, stop)`` of this call, after the lookback
        that RLlib's ``cut`` keeps when it continues an earlier chunk (the episode's last
        steps before it, at most the lookback horizon); with ``horizon``, keep this chunk's
        last steps as the next one's lookback."""
        rows = self._rows
        fields = {k: getattr(steps, k)[start:stop, r] for k in _PER_STEP}
        fields["weights_seq_no"] = steps.weights_seq_no[start:stop]
        before = rows.lookback[r] if start == 0 else None
        lookback = 0
        if before is not None:
            lookback = len(before["actions"])
            fields = {k: np.concatenate([before[k], v]) for k, v in fields.items()}
        if horizon:
            rows.lookback[r] = {k: v[-horizon:] for k, v in fields.items()}

        def with_last(field: str) -> np.ndarray:
            return np.concatenate([fields[field], getattr(steps, field)[stop:stop + 1, r]])

        # The buffer takes a dict's length for its data's (the number of keys), so its
        # lookback is set after it is made.
        observations = InfiniteLookbackBuffer({OBS: with_last("obs"), MASK: with_last("mask")})
        observations.lookback = lookback
        last = stop - 1
        return SingleAgentEpisode(
            id_=rows.ids[r], observations=observations,
            observation_space=env.single_observation_space,
            infos=[{"battle_seed": s} for s in with_last("seed")], actions=fields["actions"],
            action_space=env.single_action_space, rewards=fields["rewards"],
            terminated=steps.terminated[last, r], truncated=steps.truncated[last, r],
            extra_model_outputs={
                Columns.ACTION_DIST_INPUTS: fields["logits"],
                Columns.ACTION_LOGP: fields["logp"], WEIGHTS_SEQ_NO: fields["weights_seq_no"]},
            t_started=int(rows.t_started[r]), len_lookback_buffer=lookback)
