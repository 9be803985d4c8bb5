"""``TravellerMultiAgentEnv``: the AEC environment as a turn-based RLlib ``MultiAgentEnv``.

RLlib's multi-agent API is turn-based: ``reset`` and ``step`` return observations only for the
agents that must act next, and ``step`` takes one action per agent that got an observation.
Here exactly one live agent decides at a time (the AEC ``agent_selection``), so every
observation dict holds that agent, plus a final observation for each agent whose part in the
battle just ended.

Rewards are carried forward: everything an agent earns (damage, ``per_round``, the win/loss
at the end) is added up from the AEC rewards after every step and handed over with that
agent's *next* observation, or with its final observation when its part ends. No reward of
any seat is lost (the known pitfall of wrapping turn-based games: the loser's -1 arrives
after the winner's action, when the loser is not the one acting).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

try:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("traveller_env.integrations.rllib needs Ray RLlib: install the project's "
                      "'rllib' extra (pip install -e '.[rllib]', which pins ray[rllib]==2.60.0)"
                      ) from exc

from traveller_env.env import TravellerEnv
from traveller_env.integrations.discrete import discrete_action
from traveller_env.policy import policy_action, resolve_policy

__all__ = ["CONFIG_KEYS", "TravellerMultiAgentEnv"]

#: Keys of the env config besides the environment options of ``TravellerEnv``.
CONFIG_KEYS = ("scenario", "relative_actions", "npcs", "render_mode")
_ENV_OPTIONS = ("hastening", "reactions", "comms_range_m", "illegal_action", "max_rounds",
                "check_invariants")


class TravellerMultiAgentEnv(MultiAgentEnv):
    """A built-in (or any) scenario as a turn-based RLlib ``MultiAgentEnv``.

    Args:
        config: RLlib's env config (a dict or ``EnvContext``), all keys optional:

            * ``scenario``: built-in name, path or dict (default ``"duel"``);
            * ``relative_actions`` (default ``True``): actions name targets by observation
              slot (``attack:enemy0``; ``encoding.RelativeActions``), so one policy can play
              any seat; ``False`` uses the AEC's absolute labels (``attack:red_0``);
            * ``npcs``: ``{seat: policy name}``, seat an agent id (``"red_0"``) or a side
              name (``"red"``), to a policy name or trained checkpoint
              (``traveller_env.policy.resolve_policy``).
              Those seats are played by the scripted policy: their ``action_mask`` allows
              exactly the action it chose, which ``modules.ScriptedRLModule`` (a module
              that is not trained) takes. Map those agents to such a module;
            * ``render_mode`` and the environment options ``hastening``, ``reactions``,
              ``comms_range_m``, ``illegal_action`` (``"raise"``, the default, or
              ``"penalize"``), ``max_rounds``, ``check_invariants`` (see ``TravellerEnv``).

    Every agent has the same spaces: observations ``Dict({"observations": Box(-1, 1, (D,),
    float32), "action_mask": Box(0, 1, (N,), float32)})`` and actions ``Discrete(N)``
    (``action_labels`` names them). ``reset(seed=s)`` plays the same battle as the AEC
    environment's ``reset(seed=s)``; a later ``reset()`` without a seed draws the next battle
    seed from a generator seeded by ``s`` (or from fresh entropy if never seeded).

    ``step({agent: action})`` takes the action of the agent that got the last decision
    observation and returns RLlib's ``(observations, rewards, terminateds, truncateds,
    infos)``: an observation for the next agent to decide and a final one (all-zero mask,
    ``terminateds[agent]`` or ``truncateds[agent]`` True) for each agent whose part just
    ended; ``rewards`` holds, for each agent given an observation, everything it earned
    since its previous observation. ``terminateds["__all__"]`` is True when the battle ends
    (victory or mutual elimination), ``truncateds["__all__"]`` when ``max_rounds`` ends it;
    every agent still in play then gets its final observation. ``infos[agent]`` holds the
    ``round`` and ``phase`` (and ``winner`` at the end). ``aec`` is the underlying
    ``TravellerEnv``.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"]}

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if config is None:
            config = {}
        if not isinstance(config, Mapping):
            raise TypeError(f"TravellerMultiAgentEnv config must be a dict, got "
                            f"{type(config).__name__}")
        config = dict(config)  # an EnvContext is a dict with extra attributes
        unknown = sorted(set(config) - set(CONFIG_KEYS) - set(_ENV_OPTIONS))
        if unknown:
            raise ValueError(f"TravellerMultiAgentEnv config: unknown key(s) {unknown}; "
                             f"allowed: {', '.join(CONFIG_KEYS + _ENV_OPTIONS)}")
        relative = config.pop("relative_actions", True)
        if not isinstance(relative, bool):
            raise ValueError(f"TravellerMultiAgentEnv config: relative_actions must be True or "
                             f"False, got {relative!r}")
        npcs = config.pop("npcs", None) or {}
        scenario = config.pop("scenario", "duel")
        render_mode = config.pop("render_mode", None)
        # Per-agent termination: an agent's part ends (its final observation, terminateds)
        # when it is knocked out, as RLlib's multi-agent episodes expect.
        self.aec = TravellerEnv(scenario, render_mode=render_mode, terminate_on_knockout=True,
                                **config)
        self.render_mode = render_mode
        self.relative = self.aec.relative_actions if relative else None
        self.action_labels: list[str] = list(
            self.relative.labels if relative else self.aec.action_labels)
        n = len(self.action_labels)
        d = self.aec.observation_space(self.aec.possible_agents[0])["observation"].shape[0]
        space = gym.spaces.Dict({
            "observations": gym.spaces.Box(-1.0, 1.0, shape=(d,), dtype=np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
        })
        act = gym.spaces.Discrete(n)
        self.possible_agents = list(self.aec.possible_agents)
        self.agents = []
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = dict.fromkeys(self.possible_agents, act)
        self.observation_space = space  # the same for every agent
        self.action_space = act
        self.npcs = self._resolve_npcs(npcs)
        self._rng: np.random.Generator | None = None
        self._pending: dict[str, float] = {}
        self._finished: set[str] = set()
        self._decider: str | None = None

    def _resolve_npcs(self, npcs: Any) -> dict[str, Any]:
        """``{agent id: Policy}`` from the config's ``{seat: name}`` (seats: ids or sides)."""
        if not isinstance(npcs, Mapping):
            raise ValueError(f"TravellerMultiAgentEnv config: npcs must map a seat (agent id or "
                             f"side name) to a policy name, got {npcs!r}")

        sides = [s.name for s in self.aec.scenario.sides]
        out: dict[str, Any] = {}
        for seat, name in npcs.items():
            if seat in self.possible_agents:
                agents = [seat]
            elif seat in sides:
                agents = [a for a in self.possible_agents
                          if sides[self.aec.side_of(a)] == seat]
            else:
                raise ValueError(f"TravellerMultiAgentEnv config: npcs: {seat!r} is neither an "
                                 f"agent ({', '.join(self.possible_agents)}) nor a side "
                                 f"({', '.join(sides)})")
            if not isinstance(name, str):
                raise ValueError(f"TravellerMultiAgentEnv config: npcs[{seat!r}] must be a "
                                 f"policy name, got {name!r}")
            policy = resolve_policy(name, scenario=self.aec.scenario)
            for a in agents:
                out[a] = policy
        return out

    # ------------------------------------------------------------------ RLlib API
    def reset(self, *, seed: int | None = None,
              options: dict | None = None) -> tuple[dict[str, dict], dict[str, dict]]:
        """Start a battle; returns the first decider's observation and its info."""
        del options  # scenario options are fixed at construction
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
                raise TypeError(f"seed must be an int or None, got {type(seed).__name__} "
                                f"{seed!r}")
            self._rng = np.random.default_rng(int(seed))
            battle_seed: int | None = int(seed)
        elif self._rng is not None:
            battle_seed = int(self._rng.integers(2**62))
        else:
            battle_seed = None  # the AEC environment draws a fresh one
        self.aec.reset(seed=battle_seed)
        battle_seed = self.aec.battle_seed
        for i, p in enumerate({id(p): p for p in self.npcs.values()}.values()):
            # As traveller_rl.evaluation.play_battle, within the policies' 64-bit seeds
            # (battle seeds drawn here reach 2**62).
            p.reset((battle_seed * 7919 + i) % 2**64)
        self._pending = dict.fromkeys(self.possible_agents, 0.0)
        self._finished = set()
        obs, _, _, _, infos = self._advance()
        return obs, infos

    def step(self, action_dict: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Take the deciding agent's action; see the class docstring for the return values."""
        agent = self._decider
        if agent is None:
            raise RuntimeError("step() called before reset() or after the episode ended: "
                               "call reset()")
        if not isinstance(action_dict, Mapping) or set(action_dict) != {agent}:
            got = sorted(action_dict) if isinstance(action_dict, Mapping) else action_dict
            raise ValueError(f"step() expects {{{agent!r}: action}}, the one agent deciding "
                             f"now; got {got!r}")
        action = self._check_action(agent, action_dict[agent])
        if self.relative is not None:
            action = self._to_absolute(agent, action)
        self.aec.step(action)
        self._collect()
        return self._advance()

    def _check_action(self, agent: str, action: Any) -> int:
        n = self.action_space.n
        value = discrete_action(action, n)
        if value is None:
            raise ValueError(f"{agent}: action {action!r} is outside Discrete({n}): expected "
                             "one int, an index into action_labels")
        return value

    def _to_absolute(self, agent: str, action: int) -> int:
        """The AEC index of relative action ``action``. One naming an empty observation slot
        (never in the mask) raises ``ValueError``; with ``illegal_action="penalize"`` it
        becomes the same kind of action aimed at the agent itself, which the engine always
        refuses, so it is penalised like any other illegal action."""
        try:
            return self.relative.to_absolute(agent, action)
        except ValueError:
            if self.aec.illegal_action == "raise":
                raise
            kind = self.action_labels[action].split(":")[0]
            return self.aec.action_index(f"{kind}:{agent}")

    # ------------------------------------------------------------------ internals
    def _collect(self) -> None:
        """Add this AEC step's rewards to each agent's pending sum."""
        pending = self._pending
        for a, r in self.aec.rewards.items():
            if r:
                pending[a] += r

    def _observation(self, agent: str) -> dict[str, np.ndarray]:
        obs = self.aec.observe(agent)
        mask = obs["action_mask"]
        if agent in self.npcs and mask.any():
            chosen = policy_action(self.npcs[agent], self.aec, agent)
            mask = np.zeros_like(mask)
            mask[chosen] = 1
        if self.relative is not None:
            mask = self.relative.mask(agent, mask)
        return {"observations": obs["observation"], "action_mask": mask.astype(np.float32)}

    def _info(self) -> dict[str, Any]:
        b = self.aec.battle
        info: dict[str, Any] = {"round": b.round, "phase": b.phase}
        if b.done:
            info["winner"] = b.winner
        return info

    def _advance(self) -> tuple[dict, dict, dict, dict, dict]:
        """Take dead steps until a live agent decides or the battle ends; build the return."""
        aec = self.aec
        obs: dict[str, dict] = {}
        rewards: dict[str, float] = {}
        terminateds: dict[str, bool] = {"__all__": False}
        truncateds: dict[str, bool] = {"__all__": False}
        infos: dict[str, dict] = {}
        self._decider = None
        while aec.agents and not aec.battle.done:
            agent = aec.agent_selection
            if aec.terminations[agent] or aec.truncations[agent]:
                self._finish(agent, obs, rewards, terminateds, truncateds, infos)
                aec.step(None)  # its dead step (gives no reward)
                continue
            obs[agent] = self._observation(agent)
            rewards[agent] = self._pending[agent]
            self._pending[agent] = 0.0
            infos[agent] = self._info()
            self._decider = agent
            break
        if aec.battle.done:
            for agent in self.possible_agents:
                if agent not in self._finished:
                    self._finish(agent, obs, rewards, terminateds, truncateds, infos)
            truncated = aec.battle.truncated
            terminateds["__all__"] = not truncated
            truncateds["__all__"] = truncated
        self.agents = [] if aec.battle.done else list(aec.agents)
        return obs, rewards, terminateds, truncateds, infos

    def _finish(self, agent: str, obs: dict, rewards: dict, terminateds: dict,
                truncateds: dict, infos: dict) -> None:
        """The final observation of ``agent``, with what it earned since its last one."""
        self._finished.add(agent)
        obs[agent] = self._observation(agent)  # the mask is all zero: nothing to decide
        rewards[agent] = self._pending[agent]
        self._pending[agent] = 0.0
        truncated = self.aec.battle.truncated
        terminateds[agent] = not truncated
        truncateds[agent] = truncated
        infos[agent] = self._info()

    def render(self) -> str | np.ndarray | None:
        """The AEC environment's ``render`` (set ``render_mode`` in the config)."""
        return self.aec.render()

    def close(self) -> None:
        """Nothing to release."""
