"""CleanRL-style masked PPO on Traveller Tactics, in one file.

It trains one policy for the blue rifleman of the ``duel`` scenario against the scripted
``rush`` NPC, which the compiled core plays inside the vector environment, then evaluates
the greedy policy over 200 battles whose seeds training never used and prints the win rate
with its 95% Wilson interval::

    python examples/cleanrl_ppo.py                        # 400,000 steps, 2-4 min on 2 cores
    python examples/cleanrl_ppo.py --total-timesteps 4096 --eval-battles 20   # a smoke run

The environment is plain Gymnasium: ``import traveller_env`` registers ``traveller/duel-v0``
and ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`` builds the core's
``gymnasium.vector.VectorEnv`` (one battle per row; ``infos["action_mask"]`` is each row's mask
of legal actions; rows reset themselves, Gymnasium's ``SAME_STEP`` autoreset). The algorithm
is CleanRL's ``ppo.py`` (GAE, clipped surrogate, value loss, entropy bonus, minibatch epochs)
with one addition: illegal actions get a logit of -1e9 before sampling, in the rollout and in
the update alike. Writes nothing unless ``--out FILE`` (a JSON summary) is given.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import traveller_env  # noqa: F401  (registers the traveller/<scenario>-v0 ids)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("--env-id", default="traveller/duel-v0")
    p.add_argument("--opponent", default="rush", help="the policy the core plays for red")
    p.add_argument("--seed", type=int, default=1,
                   help="torch/numpy seed and training's vector seed")
    p.add_argument("--total-timesteps", type=int, default=400_000)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--num-envs", type=int, default=32)
    p.add_argument("--num-steps", type=int, default=64, help="steps per env per rollout")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--eval-battles", type=int, default=200)
    p.add_argument("--eval-seed", type=int, default=987_654_321,
                   help="the evaluation vector's seed (its battle seeds are checked against "
                        "every battle seed training played)")
    p.add_argument("--out", type=Path, default=None, help="write a JSON summary here")
    args = p.parse_args()
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_iterations = max(1, args.total_timesteps // args.batch_size)
    return args


def make_envs(args: argparse.Namespace, num_envs: int, seed: int) -> gym.vector.VectorEnv:
    return gym.make_vec(args.env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                        opponents={"red": args.opponent}, seed=seed)


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 128) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0))
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, mask: torch.Tensor,
                             action: torch.Tensor | None = None):
        logits = self.actor(x).masked_fill(~mask, -1e9)  # action masking
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion."""
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def evaluate(args: argparse.Namespace, agent: Agent, trained_seeds: set[int]) -> dict:
    """Greedy play over ``--eval-battles`` battles: each row's first battles, in row order."""
    rows = min(50, args.eval_battles)
    quota = [args.eval_battles // rows + (r < args.eval_battles % rows) for r in range(rows)]
    envs = make_envs(args, rows, args.eval_seed)
    obs, infos = envs.reset()
    results: list[int] = []  # the winner of each counted battle
    seeds: list[int] = []
    done_count = [0] * rows
    while len(results) < args.eval_battles:
        with torch.no_grad():
            logits = agent.actor(torch.as_tensor(obs))
            mask = torch.as_tensor(infos["action_mask"])
            action = logits.masked_fill(~mask, -1e9).argmax(dim=1).numpy()
        obs, _, term, trunc, infos = envs.step(action)
        for r in np.flatnonzero(term | trunc):
            if done_count[r] < quota[r]:
                results.append(int(infos["final_info"]["winner"][r]))
                seeds.append(int(infos["final_info"]["battle_seed"][r]))
            done_count[r] += 1
    envs.close()
    wins = sum(w == 0 for w in results)  # blue is side 0
    lo, hi = wilson(wins, len(results))
    return {"battles": len(results), "wins": wins, "draws": sum(w == -1 for w in results),
            "win_rate": wins / len(results), "wilson95": [lo, hi],
            "seeds_shared_with_training": len(trained_seeds.intersection(seeds))}


def main() -> None:
    args = parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    envs = make_envs(args, args.num_envs, args.seed)
    obs_dim = envs.single_observation_space.shape[0]
    n_actions = envs.single_action_space.n
    agent = Agent(obs_dim, n_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # Rollout storage.
    obs = torch.zeros((args.num_steps, args.num_envs, obs_dim))
    masks = torch.zeros((args.num_steps, args.num_envs, n_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    start = time.time()
    global_step = 0
    trained_seeds: set[int] = set()
    recent_wins: list[int] = []
    next_obs, infos = envs.reset()
    next_obs = torch.as_tensor(next_obs)
    next_mask = torch.as_tensor(infos["action_mask"])
    next_done = torch.zeros(args.num_envs)
    trained_seeds.update(int(s) for s in infos["battle_seed"])

    for iteration in range(1, args.num_iterations + 1):
        frac = 1.0 - (iteration - 1.0) / args.num_iterations  # learning-rate annealing
        optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob

            next_obs, reward, term, trunc, infos = envs.step(action.numpy())
            rewards[step] = torch.as_tensor(reward)
            next_done = torch.as_tensor(np.logical_or(term, trunc), dtype=torch.float32)
            next_obs = torch.as_tensor(next_obs)
            next_mask = torch.as_tensor(infos["action_mask"])
            trained_seeds.update(int(s) for s in infos["battle_seed"])
            if "final_info" in infos:
                ended = infos["_final_info"]
                recent_wins.extend((infos["final_info"]["winner"][ended] == 0).tolist())

        # Generalised advantage estimation (a done row's next value is that of a new battle,
        # so it is cut off; truncated battles are treated as ended, as in CleanRL).
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (
                    delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam)
            returns = advantages + values

        b_obs = obs.reshape(-1, obs_dim)
        b_masks = masks.reshape(-1, n_actions)
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)

        b_inds = np.arange(args.batch_size)
        for _ in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for begin in range(0, args.batch_size, args.minibatch_size):
                mb = b_inds[begin:begin + args.minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(
                    ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        if iteration % 10 == 0 or iteration == args.num_iterations:
            win = np.mean(recent_wins) if recent_wins else float("nan")
            print(f"iteration {iteration}/{args.num_iterations} step {global_step} "
                  f"battles {len(recent_wins)} train_win_rate {win:.3f} "
                  f"sps {int(global_step / (time.time() - start))}", flush=True)
            recent_wins.clear()
    envs.close()
    train_seconds = time.time() - start

    result = evaluate(args, agent, trained_seeds)
    lo, hi = result["wilson95"]
    print(f"trained {global_step} steps in {train_seconds:.0f}s")
    print(f"eval: {result['wins']}/{result['battles']} battles won vs {args.opponent} "
          f"(draws {result['draws']}), win rate {result['win_rate']:.3f}, "
          f"95% Wilson [{lo:.3f}, {hi:.3f}], seeds shared with training "
          f"{result['seeds_shared_with_training']}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        summary = {"env_id": args.env_id, "opponent": args.opponent, "seed": args.seed,
                   "total_timesteps": global_step, "train_seconds": train_seconds, **result}
        args.out.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
