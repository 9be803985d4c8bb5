"""Masked PPO on batched battles (``traveller_env.vector``): one shared policy for every seat it
plays, GAE per seat, scripted opponents, self-play or a pool of its own past checkpoints.

    traveller train ppo --scenario duel --opponents red=rush --total-timesteps 300000 \\
        --seed 1 --out DIR
    python -m traveller_rl.ppo.trainer --scenario squad --pool --pool-scripted rush,marksman

**The loop** (CleanRL's PPO, adapted to many seats). Every call steps ``--num-envs`` battles
(rows) of ``vector.make(..., relative_actions=True)``: targets are named by observation slot,
so the same network plays any seat. Each step, the rows' observations and masks go through the
network in one batch; the action is drawn from the masked softmax (an illegal action has
probability exactly 0: ``ppo_common.sample_masked``). After ``--num-steps`` steps, GAE is
computed per seat and the policy is updated for ``--epochs`` epochs of ``--minibatches``
minibatches (clipped surrogate, clipped value loss, entropy bonus, gradient-norm clipping,
learning rate annealed to 0 over ``--total-timesteps``).

**GAE per seat** (``ppo_common.SeatRollout``). A decision is a transition of the seat that made
it; its reward is everything the vector credits to that seat (``rewards[row, seat]``, at every
step, whoever acted) until the same seat's next decision in that battle, or the battle's end;
its successor is that next decision. Each row keeps one pending transition per seat. A
transition whose successor has not come by the end of a rollout bootstraps its predecessor and
is carried into the next rollout. ``--total-timesteps`` counts learner decisions (the seats
being trained; frozen and scripted seats are not counted). A battle cut at ``max_rounds``
(``truncated``) ends like a decided one: the draw is part of the game.

**Opponent modes.**

* ``--opponents red=rush`` (``SEAT=POLICY``, comma-separated; a side or an agent id): those
  seats are played inside the vector (in the compiled core with ``--backend core``, which runs
  ``random``, ``passive``, ``rush``, ``marksman``, ``leader`` and ``tactician``), so every
  decision the trainer sees is a learner's.
* self-play (no ``--opponents``, no ``--pool``): every seat learns, one policy for all.
* ``--pool``: the policy plays against frozen copies of itself, saved every ``--pool-every``
  updates (the first before any update) into ``DIR/pool/`` (each a checkpoint that loads as an
  NPC like the final one), optionally mixed with scripted policies (``--pool-scripted
  rush,marksman``). Design: the rows are split. ``--pool-scripted-share`` of them are scripted
  battles: one vector per (scripted policy, learner side) with that policy inside the vector
  (``opponents={other sides: name}``), rows shared out evenly (or by ``--side-shares``), so the
  scripted mix is exact rather than sampled and the scripted seats run at the vector's own
  speed. The other rows form one vector with no opponents; at the start of each battle, each of
  these rows draws the side the learner plays (uniformly, or by ``--side-shares``) and one of
  the ``--pool-size`` latest frozen checkpoints for the other sides. The trainer runs the
  frozen seats itself (the learner's own past copies stacked into one batched forward pass,
  ``traveller_rl.ppo.stacked``; any other checkpoint in a pass of its own; sampling from its
  masked distribution, not trained on; in ``--pool-greedy-share`` of the battles, drawn per
  battle, it plays its most probable legal action instead, as an evaluated checkpoint does).
* ``--pool-watch OTHER_RUN``: two learners at once, each in its own process, each with the
  other's pool checkpoints in its pool as they appear (a league's main learner and its
  exploiter: ``--pool-watch-share 1`` makes a run play only the watched checkpoints). Which
  checkpoint a battle meets then depends on the other process's timing: such runs are not
  reproducible byte for byte, and their ``evaluation.json`` lists what was met.

**Evaluation.** Every ``--eval-every`` updates (and before the first), the greedy policy (the
checkpoint's default NPC behaviour) plays ``--eval-battles`` battles against each
``--eval-vs`` policy, half from each side, on fixed held-out battle seeds (the same battles
every time), through vectors with the opponent inside; win rates with Wilson 95% intervals go
to TensorBoard, ``progress.jsonl`` and the learning curve. At the end, the saved checkpoint is
loaded back as an NPC policy (``agents.trained.load_policy``) and played through the AEC env
(``agents.evaluation.evaluate_matchup``, seeds from 20,000, sides alternating) against each
``--eval-vs`` policy for ``--final-eval-battles`` battles.

**Outputs** (``--out DIR``, default ``runs/ppo__<scenario>__<seed>__<unix time>``):
``ppo.pt`` (the checkpoint, ``agents.ppo_policy``'s format, written atomically every
evaluation and at the end: ``traveller eval DIR/ppo.pt``, ``--policies DIR/ppo.pt`` in the
tournament), ``config.json`` (every argument, the resolved layout, package versions), ``tb/``
(TensorBoard), ``progress.jsonl`` (one line per evaluation), ``training.jsonl`` (one line
per update: decisions, seconds, the training battles' win rate, per group when there are
several), ``learning_curve.png`` (evaluations with intervals, training win rates dotted) and
``evaluation.json``. The same seed and flags on one thread (``--threads 1``) give the same
``ppo.pt``, byte for byte, on either backend (the backends play the same battles).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traveller_rl.common import (
    add_dataclass_args,
    atomic_write_bytes,
    check_minimums,
    hidden_sizes,
    versions,
    write_json,
)

__all__ = ["Args", "build_parser", "main", "prepare", "run", "train"]

#: The files a run writes in its folder (besides the folders tb/ and pool/).
OUTPUTS = ("config.json", "ppo.pt", "progress.jsonl", "training.jsonl", "evaluation.json",
           "learning_curve.png")
#: Seed of the held-out evaluation battles (vector seed ``derive_seed(EVAL_SEED, side)``).
EVAL_SEED = 20_000


def default_backend() -> str:
    """``"core"`` when the compiled core can run battles here, else ``"python"``."""
    from traveller_env import vector

    return "core" if vector.BACKENDS.get("core") == "available" else "python"


@dataclass
class Args:
    """Arguments of the PPO trainer (each is also a ``--flag``)."""

    scenario: str = "duel"
    """built-in scenario name or path to a scenario YAML; several, comma-separated, train one
    policy on all of them (the rows are shared out evenly; they must have the same seats,
    observation size and action labels)"""
    opponents: str = ""
    """scripted seats played inside the vector, e.g. 'red=rush' ('' and no --pool: self-play)"""
    pool: bool = False
    """play against a pool of the policy's own past checkpoints (and --pool-scripted)"""
    pool_every: int = 10
    """pool: save a frozen checkpoint into the pool every this many updates"""
    pool_size: int = 20
    """pool: opponents are drawn from the latest this many checkpoints (0: all)"""
    pool_scripted: str = ""
    """pool: scripted policies mixed in, comma-separated (e.g. 'rush,marksman')"""
    pool_scripted_share: float = 0.25
    """pool: share of the rows that play --pool-scripted opponents"""
    pool_opponents: str = ""
    """pool: other policies' train_ppo checkpoints (.pt), comma-separated, kept in the pool for
    the whole run beside the learner's own (a league's other members)"""
    pool_watch: str = ""
    """pool: other runs' folders (comma-separated) whose pool/ checkpoints join this run's pool
    as those runs save them, checked every --pool-every updates (the latest --pool-size of
    them): two learners that train at once, each against the other's past (a main learner and
    an exploiter, as in a league). Which checkpoints a battle meets then depends on the other
    process's timing, so such a run is not reproducible byte for byte"""
    pool_watch_share: float = 0.5
    """pool: share of the pool's battles drawn from the --pool-watch checkpoints once there are
    any (1: an exploiter that plays only the watched runs; the rest: its own past and
    --pool-opponents)"""
    pool_greedy_share: float = 0.0
    """pool: share of the pool's battles (drawn per battle) in which the frozen checkpoint plays
    greedily, its most probable legal action, as checkpoints play when evaluated or loaded as
    NPCs; in the others it samples from its policy, as the learner does (0: always samples)"""
    side_shares: str = ""
    """pool: the share of battles the learner plays on each side, SIDE=SHARE comma-separated,
    every side named, summing to 1 (e.g. 'blue=0.65,red=0.35': more practice on the side it
    plays worse); for the pool's battles (drawn per battle) and the --pool-scripted rows
    (shared out by it). Default: every side alike"""
    pool_stack: bool = True
    """pool: run the frozen copies of the learner in one batched forward pass
    (``traveller_rl.ppo.stacked.StackedActors``) instead of one pass per copy: the same
    policies, faster, but other draws for a seed (float rounding, one sampling call), so
    --no-pool-stack (one pass each) is how a run from before the stack is reproduced"""
    pool_sampling: str = "uniform"
    """pool: how a battle draws its frozen opponent: 'uniform', or 'pfsp' (prioritised
    fictitious self-play: weight (1 - p)^2 where p is the learner's win rate so far against
    that opponent in training, so the opponents it beats least are played most)"""
    init: str = ""
    """start from this train_ppo checkpoint's weights (same observation size and labels; its
    layer sizes replace --hidden) instead of a fresh network"""
    style: str = ""
    """style shaping, TERM=WEIGHT comma-separated, added to the deciding seat's reward at each
    of its decisions: distance (to the nearest enemy in play, the observation's 0-1 scale:
    metres over 4x the seat's weapon Range, so small for rifles), distance_m (the same in
    metres), exposure (share of enemies in play with line of sight to it), low_stance (crouched or
    prone), shots (the decision is an attack), lead (a Leadership check or a bonus handed),
    shots_into_cover (an attack on an enemy in cover from it, R5.3), reactions (a dodge or a
    parry, R3.6: it also breaks the seat's own aim, R4.3)"""
    knockouts: str = ""
    """knock-out rewards, TERM=WEIGHT comma-separated, read from the deciding seat's observation
    (its slots' ``present`` and ``in_play``): each decision of a seat gains the weighted change
    of its terms up to that seat's next decision. Unlike --potential nothing is paid back at the
    battle's end, so it changes what a battle is worth: enemies_out (enemies out of play, e.g.
    0.25 pays each seat of the side a quarter for every knock-out its side makes), allies_out
    (allies out of play, the seat itself excluded; a negative weight). Knock-outs after a seat's
    last decision of a battle are not counted (the battle's win or loss is)"""
    potential: str = ""
    """potential-based shaping (Ng, Harada & Russell 1999), TERM=WEIGHT comma-separated: the
    potential of a decision's observation is the weighted sum of its terms, and each decision
    of a seat gains gamma x the potential at that seat's next decision (0 at the battle's end)
    minus the potential at its own. Over a battle the gains sum to minus the first potential,
    so every policy's shaped return differs from its true one by a constant (gamma 1) and the
    best policies stay the best; what changes is how soon a good square pays. Terms read from
    the move view of the seat's own square (need --move-view): clear_shots (share of enemies in
    play it sees out of their cover), exposed (share of enemies in play that see it and whose
    line passes no cover next to it, or all that see it when it stands, R5.3). Terms read from
    the attack view (need --attack-view): hit (its best chance to hit an enemy now, its held
    aim counted: an aim pays when it is taken, a reaction that breaks it costs at once),
    threat (the enemies' mean chance to hit it where it stands, attack.here.threat)"""
    move_view: bool = False
    """observe the move view too (traveller_env.observations.move_view: line of sight and
    cover at each square a move could end on); the checkpoint records it, and plays in any env"""
    aim_view: bool = False
    """observe the aim view too (per slot, the aim DM that combatant holds on the seat, R4.3;
    after the move view); the checkpoint records it, and plays in any env"""
    attack_view: bool = False
    """observe the attack view too (exact hit chances from the rules: each attack now, per
    slot, and the best shot and the enemies' threat at each square a move could end on; after
    the aim view); the checkpoint records it, and plays in any env"""
    total_timesteps: int = 300_000
    """learner decisions to train for (rounded up to whole rollouts)"""
    stop_after_updates: int = 0
    """stop after this many updates (0: at --total-timesteps), keeping the learning-rate
    schedule of --total-timesteps: reproduces a checkpoint saved mid-run"""
    max_train_seconds: float = 0.0
    """stop after the first update at which the run has trained this many seconds
    (evaluations, checkpoints and curves not counted; 0: no limit), keeping the learning-rate
    schedule of --total-timesteps: a budget of wall-clock time ("an hour of training" is 3590).
    Where it stops depends on the machine's speed; --stop-after-updates reproduces it"""
    seed: int = 1
    """seed of everything: battles, network initialisation, sampling"""
    out: str = ""
    """run folder (default: runs/ppo__<scenario>__<seed>__<unix time>)"""
    overwrite: bool = False
    """replace the run already in --out (its config, checkpoints, logs) instead of refusing"""
    backend: str = field(default_factory=default_backend)
    """vector backend, 'core' or 'python' (default: core when it is built)"""
    num_envs: int = 64
    """battles stepped per call (rows of the vector)"""
    num_steps: int = 64
    """steps per rollout (a rollout holds about num_envs * num_steps decisions)"""
    lr: float = 2.5e-4
    """Adam learning rate (annealed linearly to 0 unless --no-anneal-lr)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over --total-timesteps"""
    epochs: int = 4
    """PPO epochs per rollout"""
    minibatches: int = 4
    """minibatches per epoch"""
    gamma: float = 1.0
    """discount per decision of a seat"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    clip_coef: float = 0.2
    """PPO clip range (policy ratio and value)"""
    ent_coef: float = 0.01
    """entropy bonus"""
    vf_coef: float = 0.5
    """value loss weight"""
    max_grad_norm: float = 0.5
    """gradient norm clip"""
    hidden: str = "64,64"
    """hidden layer sizes of the actor and of the critic"""
    arch: str = "mlp"
    """actor architecture: 'mlp' (a tanh MLP over the observation vector) or 'entity' (one
    shared encoder for every slot and one for every square of the move view, pointer heads
    that score each slot's and each square's actions with the same weights; see
    agents/entity_net.py). The critic is an MLP unless --critic entity"""
    embed: int = 64
    """--arch entity: width of the slot and square tokens"""
    critic: str = "mlp"
    """critic architecture: 'mlp' (a tanh MLP over the observation vector) or 'entity' (the
    entity actor's token encoders and trunk, its own weights, and a value head; needs --arch
    entity)"""
    attention: int = 0
    """--arch entity: transformer blocks mixing the actor's slot tokens before pooling (0:
    none; an entity critic has none). --embed must be a multiple of their 4 heads"""
    threads: int = 1
    """torch CPU threads (1: reproducible to the byte, and fastest for small networks)"""
    eval_every: int = 10
    """evaluate every this many updates (0: only before training and at the end)"""
    eval_vs: str = "rush,marksman"
    """scripted opponents of the evaluations, comma-separated ('' for none)"""
    eval_battles: int = 100
    """battles per opponent in each periodic evaluation (half from each side)"""
    eval_envs: int = 50
    """rows of each periodic evaluation vector"""
    final_eval_battles: int = 200
    """battles per opponent of the final AEC evaluation of the saved checkpoint (0: none)"""
    progress: bool = True
    """show a progress bar"""

    def check(self) -> None:
        """``ValueError`` naming the flag for any value out of range."""
        from traveller_env import vector

        check_minimums((("--total-timesteps", self.total_timesteps, 1),
                        ("--num-envs", self.num_envs, 1),
                        ("--num-steps", self.num_steps, 1),
                        ("--epochs", self.epochs, 1),
                        ("--minibatches", self.minibatches, 1),
                        ("--threads", self.threads, 1),
                        ("--embed", self.embed, 1),
                        ("--attention", self.attention, 0),
                        ("--pool-every", self.pool_every, 1),
                        ("--pool-size", self.pool_size, 0),
                        ("--eval-every", self.eval_every, 0),
                        ("--eval-battles", self.eval_battles, 0),
                        ("--eval-envs", self.eval_envs, 1),
                        ("--final-eval-battles", self.final_eval_battles, 0),
                        ("--seed", self.seed, 0),
                        ("--stop-after-updates", self.stop_after_updates, 0)))
        if not (np.isfinite(self.max_train_seconds) and self.max_train_seconds >= 0):
            raise ValueError("--max-train-seconds must be a number of seconds >= 0 (0: no "
                             f"limit), got {self.max_train_seconds}")
        for flag, value in (("--lr", self.lr), ("--clip-coef", self.clip_coef)):
            if not value > 0:
                raise ValueError(f"{flag} must be positive, got {value}")
        for flag, value in (("--gamma", self.gamma), ("--gae-lambda", self.gae_lambda),
                            ("--pool-scripted-share", self.pool_scripted_share)):
            if not 0 <= value <= 1:
                raise ValueError(f"{flag} must lie in [0, 1], got {value}")
        for flag, value in (("--ent-coef", self.ent_coef), ("--vf-coef", self.vf_coef),
                            ("--max-grad-norm", self.max_grad_norm)):
            if not value >= 0:
                raise ValueError(f"{flag} must be at least 0, got {value}")
        if self.backend not in vector.BACKENDS:
            raise ValueError(f"--backend must be one of {', '.join(vector.BACKENDS)}, got "
                             f"{self.backend!r}")
        if vector.BACKENDS[self.backend] != "available":
            raise ValueError(f"--backend {self.backend}: {vector.BACKENDS[self.backend]} here; "
                             "use --backend python")
        from agents.entity_net import ATTENTION_HEADS
        from agents.ppo_policy import ARCHS, CRITICS

        if self.arch not in ARCHS:
            raise ValueError(f"--arch must be one of {', '.join(ARCHS)}, got {self.arch!r}")
        if self.critic not in CRITICS:
            raise ValueError(f"--critic must be one of {', '.join(CRITICS)}, got "
                             f"{self.critic!r}")
        if self.arch != "entity" and (self.critic != "mlp" or self.attention):
            raise ValueError("--critic entity and --attention need --arch entity")
        if self.attention and self.embed % ATTENTION_HEADS:
            raise ValueError(f"--attention: --embed must be a multiple of the "
                             f"{ATTENTION_HEADS} attention heads, got {self.embed}")
        if self.init and (self.critic != "mlp" or self.attention):
            raise ValueError("--critic and --attention shape a new network; with --init the "
                             "network is the checkpoint's")
        if self.pool and self.opponents:
            raise ValueError("--pool and --opponents exclude each other: with --pool the "
                             "opponents are the pool's (add scripted ones with --pool-scripted)")
        if self.pool_scripted and not self.pool:
            raise ValueError("--pool-scripted needs --pool")
        if self.pool_opponents and not self.pool:
            raise ValueError("--pool-opponents needs --pool")
        if self.side_shares and not self.pool:
            raise ValueError("--side-shares needs --pool (without it the sides the learner "
                             "plays are --opponents')")
        if self.pool_watch and not self.pool:
            raise ValueError("--pool-watch needs --pool")
        if not 0.0 <= self.pool_watch_share <= 1.0:
            raise ValueError(f"--pool-watch-share must be in [0, 1], got {self.pool_watch_share}")
        if not 0.0 <= self.pool_greedy_share <= 1.0:
            raise ValueError(f"--pool-greedy-share must be in [0, 1], got "
                             f"{self.pool_greedy_share}")
        if self.pool_greedy_share and not self.pool:
            raise ValueError("--pool-greedy-share needs --pool")
        for folder in names_list(self.pool_watch):
            if not Path(folder).is_dir():
                raise ValueError(f"--pool-watch: {folder!r} is not a folder (a train_ppo run's "
                                 "--out, whose pool/ it reads)")
        if self.pool_sampling not in POOL_SAMPLING:
            raise ValueError(f"--pool-sampling must be one of {', '.join(POOL_SAMPLING)}, got "
                             f"{self.pool_sampling!r}")
        for path in [*names_list(self.pool_opponents), *([self.init] if self.init else [])]:
            flag = "--init" if path == self.init else "--pool-opponents"
            if not path.endswith(".pt") or not Path(path).is_file():
                raise ValueError(f"{flag}: {path!r} is not a train_ppo checkpoint file (.pt)")
        parse_style(self.style)
        parse_knockouts(self.knockouts)
        terms = parse_potential(self.potential)
        if any(t in terms for t in _MOVE_VIEW_TERMS) and not self.move_view:
            raise ValueError("--potential reads the move view of the seat's own square "
                             f"({', '.join(t for t in _MOVE_VIEW_TERMS if t in terms)}): it "
                             "needs --move-view")
        if any(t not in _MOVE_VIEW_TERMS for t in terms) and not self.attack_view:
            raise ValueError("--potential reads the attack view ("
                             f"{', '.join(t for t in terms if t not in _MOVE_VIEW_TERMS)}): "
                             "it needs --attack-view")
        if self.out and (Path(self.out) / "config.json").exists() and not self.overwrite:
            raise ValueError(f"--out {self.out}: holds a run already (config.json); choose "
                             "another folder, or pass --overwrite to replace it")
        hidden_sizes(self.hidden)


#: ``--pool-sampling`` choices.
POOL_SAMPLING = ("uniform", "pfsp")
#: ``--style`` terms (see ``StyleShaping``).
STYLE_TERMS = ("distance", "distance_m", "exposure", "low_stance", "shots", "lead",
               "shots_into_cover", "reactions")


#: ``--knockouts`` terms (see ``KnockoutReward``).
KNOCKOUT_TERMS = ("enemies_out", "allies_out")
#: ``--potential`` terms (see ``PositionPotential``).
POTENTIAL_TERMS = ("clear_shots", "exposed", "hit", "threat")
#: The terms read from the move view (the rest read the attack view).
_MOVE_VIEW_TERMS = ("clear_shots", "exposed")


def parse_terms(text: str, flag: str, allowed: tuple[str, ...]) -> dict[str, float]:
    """``"a=0.02,b=-0.01"`` -> ``{"a": 0.02, "b": -0.01}`` (``ValueError`` naming ``flag`` for
    a term not in ``allowed`` or a bad weight)."""
    out: dict[str, float] = {}
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        term, sep, weight = item.partition("=")
        term = term.strip()
        if term not in allowed:
            raise ValueError(f"{flag}: unknown term {term!r}; allowed: {', '.join(allowed)}")
        try:
            out[term] = float(weight) if sep else float("nan")
        except ValueError:
            out[term] = float("nan")
        if not np.isfinite(out[term]):
            raise ValueError(f"{flag}: {item!r} is not TERM=WEIGHT with a finite number")
    return out


def parse_style(text: str) -> dict[str, float]:
    """``"distance=0.02,shots=-0.01"`` -> ``{"distance": 0.02, "shots": -0.01}``
    (``ValueError`` naming ``--style`` for an unknown term or a bad weight)."""
    return parse_terms(text, "--style", STYLE_TERMS)


def parse_potential(text: str) -> dict[str, float]:
    """``"clear_shots=0.5,exposed=-0.5"`` -> a dict (``ValueError`` naming ``--potential``)."""
    return parse_terms(text, "--potential", POTENTIAL_TERMS)


def parse_knockouts(text: str) -> dict[str, float]:
    """``"enemies_out=0.25,allies_out=-0.25"`` -> a dict (``ValueError`` naming
    ``--knockouts``)."""
    return parse_terms(text, "--knockouts", KNOCKOUT_TERMS)


class KnockoutReward:
    """The ``--knockouts`` value of each decision's observation: the weighted counts of enemy and
    ally slots whose combatant is present but out of play (the seat's own slot is not among
    its allies). ``SeatRollout.add(progress=...)`` pays each seat the change between its
    decisions."""

    def __init__(self, weights: dict[str, float], observation_labels: list[str]) -> None:
        self.weights = weights
        col = {label: j for j, label in enumerate(observation_labels)}

        def columns(prefix: str, field: str) -> np.ndarray:
            return np.array([j for label, j in col.items()
                             if label.startswith(prefix) and label.endswith("." + field)
                             and label.count(".") == 1])

        self.terms = {
            term: (columns(prefix, "present"), columns(prefix, "in_play"))
            for term, prefix in (("enemies_out", "enemy"), ("allies_out", "ally"))
            if term in weights}
        for term, (present, in_play) in self.terms.items():
            if len(present) != len(in_play):
                raise ValueError(f"--knockouts {term}: the observation's slots do not pair "
                                 "present with in_play")

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The progress value of each row's observation (float32)."""
        out = np.zeros(len(obs), dtype=np.float32)
        for term, (present, in_play) in self.terms.items():
            out_of_play = (obs[:, present] - obs[:, in_play]).sum(axis=1)
            out += np.float32(self.weights[term]) * out_of_play.astype(np.float32)
        return out


class PositionPotential:
    """The ``--potential`` of each decision's observation: from the move view of the seat's own
    square (``move.here.*``, shares of the enemies in play) and its stance, and from the attack
    view (``attack.enemyK.hit``, ``attack.here.threat``)."""

    def __init__(self, weights: dict[str, float], observation_labels: list[str]) -> None:
        self.weights = weights
        col = {label: j for j, label in enumerate(observation_labels)}
        if any(t in weights for t in _MOVE_VIEW_TERMS):
            self.seen = col["move.here.seen_by"]
            self.covered = col["move.here.covered_from"]
            self.clear = col["move.here.clear_shots"]
            self.low = np.array([col["self.stance_crouch"], col["self.stance_prone"]])
        if "hit" in weights:
            self.hits = np.array([j for label, j in col.items()
                                  if label.startswith("attack.enemy") and label.endswith(".hit")])
        if "threat" in weights:
            self.threat = col["attack.here.threat"]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The potential of each row's observation (float32)."""
        w, out = self.weights, np.zeros(len(obs), dtype=np.float32)
        if "clear_shots" in w:
            out += w["clear_shots"] * obs[:, self.clear]
        if "exposed" in w:
            # cover counts only when crouched or prone (R5.3)
            low = obs[:, self.low].sum(axis=1) > 0.5
            out += w["exposed"] * (obs[:, self.seen] - np.where(low, obs[:, self.covered], 0.0))
        if "hit" in w:
            out += w["hit"] * obs[:, self.hits].max(axis=1)
        if "threat" in w:
            out += w["threat"] * obs[:, self.threat]
        return out


class StyleShaping:
    """The ``--style`` reward terms, read from the deciding seat's own observation (the labels
    of ``vector.observation_labels``) and its chosen (slot-relative) action."""

    def __init__(self, weights: dict[str, float], observation_labels: list[str],
                 action_labels: list[str], map_size: tuple[int, int] = (1, 1)) -> None:
        self.weights = weights
        col = {label: j for j, label in enumerate(observation_labels)}
        enemies = sorted({label.split(".")[0] for label in observation_labels
                          if label.startswith("enemy")}, key=lambda e: int(e[5:]))
        self.in_play = np.array([col[f"{e}.in_play"] for e in enemies])
        self.distance = np.array([col[f"{e}.distance"] for e in enemies])
        # dx, dy are offsets over the map's width and height: back to squares, then metres
        # from the rule itself (R8.1), tabulated once per offset
        self.dx = np.array([col[f"{e}.dx"] for e in enemies])
        self.dy = np.array([col[f"{e}.dy"] for e in enemies])
        self.map_size = map_size
        if "distance_m" in weights:
            from traveller_env.rules.grid import GridMap

            w, h = map_size
            self.metres = np.array([[GridMap.distance_m((0, 0), (dx, dy))
                                     for dy in range(-h, h + 1)] for dx in range(-w, w + 1)])
        self.sight = np.array([col[f"{e}.line_of_sight"] for e in enemies])
        self.low = np.array([col["self.stance_crouch"], col["self.stance_prone"]])
        self.shot = np.array([lab.startswith("attack:") for lab in action_labels])
        # per action: the observation column of the attacked enemy's "in cover from me" flag
        # (-1: not an attack on an enemy slot)
        self.target_cover = np.array([col[f"{lab[7:]}.in_cover"]
                                      if lab.startswith("attack:enemy") else -1
                                      for lab in action_labels])
        self.lead = np.array([lab == "leadership" or lab.startswith("direct:")
                              for lab in action_labels])
        self.react = np.array([lab in ("react:dodge", "react:parry") for lab in action_labels])

    def __call__(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The shaping reward of each row's decision (``obs``: the rows' observations)."""
        w, out = self.weights, np.zeros(len(obs), dtype=np.float32)
        live = obs[:, self.in_play] > 0.5
        count = np.maximum(live.sum(axis=1), 1)
        if "distance" in w:
            near = np.where(live, obs[:, self.distance], np.inf).min(axis=1)
            out += w["distance"] * np.where(np.isfinite(near), near, 0.0)
        if "distance_m" in w:
            width, height = self.map_size
            dx = np.rint(obs[:, self.dx] * width).astype(np.int64)
            dy = np.rint(obs[:, self.dy] * height).astype(np.int64)
            metres = self.metres[np.clip(dx, -width, width) + width,
                                 np.clip(dy, -height, height) + height]
            near = np.where(live, metres, np.inf).min(axis=1)
            out += w["distance_m"] * np.where(np.isfinite(near), near, 0.0)
        if "exposure" in w:
            out += w["exposure"] * ((obs[:, self.sight] > 0.5) & live).sum(axis=1) / count
        if "low_stance" in w:
            out += w["low_stance"] * obs[:, self.low].sum(axis=1)
        if "shots" in w:
            out += w["shots"] * self.shot[actions]
        if "lead" in w:
            out += w["lead"] * self.lead[actions]
        if "reactions" in w:
            out += w["reactions"] * self.react[actions]
        if "shots_into_cover" in w:
            cols = self.target_cover[actions]
            covered = (cols >= 0) & (obs[np.arange(len(obs)), np.maximum(cols, 0)] > 0.5)
            out += w["shots_into_cover"] * covered
        return out


def parse_side_shares(text: str, sides: list[str]) -> np.ndarray | None:
    """``"blue=0.65,red=0.35"`` -> the share per side in ``sides`` order, or ``None`` for
    ``""`` (every side alike). ``ValueError`` naming ``--side-shares`` for an unknown or
    missing side, a negative share, or shares that do not sum to 1."""
    if not text.strip():
        return None
    terms = parse_terms(text, "--side-shares", tuple(sides))
    missing = [side for side in sides if side not in terms]
    if missing:
        raise ValueError(f"--side-shares: no share for {', '.join(missing)}; name every side "
                         f"({', '.join(sides)})")
    shares = np.array([terms[side] for side in sides], dtype=np.float64)
    if (shares < 0).any():
        raise ValueError(f"--side-shares: {text!r}: a share must be at least 0")
    if abs(shares.sum() - 1.0) > 1e-6:
        raise ValueError(f"--side-shares: {text!r}: the shares must sum to 1 (they sum to "
                         f"{shares.sum():g})")
    return shares


def draw_sides(rng: np.random.Generator, count: int, n_sides: int,
               shares: np.ndarray | None) -> np.ndarray:
    """The learner's side in ``count`` new pool battles: uniform, or by ``--side-shares``."""
    if shares is None:  # kept as it was, so runs without the flag replay byte for byte
        return rng.integers(n_sides, size=count)
    return rng.choice(n_sides, size=count, p=shares)


def apportion(total: int, weights: list[float]) -> list[int]:
    """``total`` rows shared out in proportion to ``weights`` (largest remainders; ties to the
    first)."""
    exact = np.asarray(weights, dtype=np.float64) / sum(weights) * total
    rows = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - rows), kind="stable")[:total - rows.sum()]:
        rows[i] += 1
    return [int(r) for r in rows]


def parse_opponents(text: str) -> dict[str, str]:
    """``"red=rush,blue_1=marksman"`` -> ``{"red": "rush", "blue_1": "marksman"}``
    (``ValueError`` naming ``--opponents`` for a malformed item)."""
    out: dict[str, str] = {}
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        seat, sep, name = item.partition("=")
        if not sep or not seat.strip() or not name.strip():
            raise ValueError(f"--opponents: {item!r} is not SEAT=POLICY (e.g. red=rush)")
        if seat.strip() in out:
            raise ValueError(f"--opponents: seat {seat.strip()!r} given twice")
        out[seat.strip()] = name.strip()
    return out


def names_list(text: str) -> list[str]:
    """``"rush,marksman"`` -> ``["rush", "marksman"]``."""
    return [n.strip() for n in text.split(",") if n.strip()]


# ============================================================================ the battles
@dataclass
class Group:
    """One vector and the rows it fills in the trainer's batch (``start:stop``)."""

    venv: Any
    start: int
    stop: int
    kind: str  # "learn" (every returned decision is a learner's), "pool", "scripted"
    learner_side: int  # the side the learner plays, -1: every side (self-play) or per row
    label: str
    backend: str


def scenario_list(args: Args) -> list[str]:
    """The ``--scenario`` names (``ValueError`` naming the flag when none is given or one is
    repeated)."""
    names = names_list(args.scenario)
    if not names:
        raise ValueError("--scenario: no scenario given")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"--scenario: listed twice: {', '.join(dupes)}")
    return names


def split_rows(total: int, parts: int) -> list[int]:
    """``total`` rows shared out as evenly as possible over ``parts`` (the first get more)."""
    return [total // parts + (i < total % parts) for i in range(parts)]


@functools.lru_cache(maxsize=64)
def _trained_views(path: str) -> tuple[tuple[str, bool], ...]:
    """The views (``agents.views.VIEWS``) the checkpoint at ``path`` was trained with (none
    when unreadable: ``check_checkpoints`` reports that file)."""
    from agents.ppo_policy import read_checkpoint
    from agents.views import VIEWS, views_of

    try:
        return tuple(views_of(read_checkpoint(path)).items())
    except (OSError, ValueError):
        return tuple((v, False) for v in VIEWS)


def learner_views(args: Args) -> dict[str, bool]:
    """The views the learner reads (``--move-view``, ``--aim-view``, ``--attack-view``)."""
    from agents.views import VIEWS

    return {view: getattr(args, view) for view in VIEWS}


def vector_views(args: Args) -> dict[str, bool]:
    """The views the vectors observe: the learner's, and any ``--pool-opponents``
    checkpoint's. Each network reads its own columns of the observation
    (``observation_columns``), so a pool may mix checkpoints with and without a view."""
    out = learner_views(args)
    for path in names_list(args.pool_opponents):
        for view, on in _trained_views(path):
            out[view] = out[view] or on
    return out


def observation_columns(venv: Any, views: dict[str, bool]) -> slice | np.ndarray:
    """The columns of the vector's observations a network trained with ``views`` reads: a
    slice when they are a prefix (no copy), else an index array."""
    from agents.views import view_sizes

    sizes = view_sizes(venv.observation_labels)
    start = venv.obs_dim - sum(sizes.values())
    cols = [np.arange(start)]
    for view, size in sizes.items():
        if views.get(view, False):
            cols.append(np.arange(start, start + size))
        start += size
    idx = np.concatenate(cols)
    return slice(0, len(idx)) if np.array_equal(idx, np.arange(len(idx))) else idx


def learner_obs_dim(args: Args, venv: Any) -> int:
    """The learner's observation size: the vector's, less the views it does not read."""
    cols = observation_columns(venv, learner_views(args))
    return cols.stop if isinstance(cols, slice) else len(cols)


def make_vector(args: Args, seed: int, num_envs: int, opponents: dict[str, str] | None,
                flag: str, fallback: bool = False,
                scenario: str | None = None) -> tuple[Any, str]:
    """``vector.make`` with the trainer's scenario and backend; a bad opponent is reported
    under ``flag``. With ``fallback``, an opponent the core cannot run is played on the
    python backend instead, and said so on stderr (returns the backend used)."""
    from traveller_env import vector

    scenario = scenario or scenario_list(args)[0]
    try:
        return vector.make(scenario, num_envs=num_envs, seed=seed, backend=args.backend,
                           opponents=opponents, relative_actions=True,
                           **vector_views(args)), args.backend
    except (ValueError, TypeError) as exc:
        if not (fallback and args.backend != "python"):
            raise ValueError(f"{flag}: {exc}") from None
        try:
            venv = vector.make(scenario, num_envs=num_envs, seed=seed, backend="python",
                               opponents=opponents, relative_actions=True,
                               **vector_views(args))
        except (ValueError, TypeError):
            raise ValueError(f"{flag}: {exc}") from None
        print(f"train_ppo: note: {flag} {opponents}: not on backend {args.backend!r} ({exc}); "
              "these battles run on the python backend", file=sys.stderr)
        return venv, "python"


def build_groups(args: Args) -> list[Group]:
    """The training vectors, by opponent mode (see the module docstring)."""
    from traveller_env.rules.rng import derive_seed

    n = args.num_envs
    scenarios = scenario_list(args)
    probe = make_vector(args, 0, 1, None, "--scenario")[0]
    check_compatible(args, probe, scenarios)
    if len(scenarios) > 1 and args.pool:
        raise ValueError("--pool trains on one --scenario; several scenarios train against "
                         "--opponents or by self-play")
    if len(scenarios) > n:
        raise ValueError(f"--num-envs {n} is fewer than the {len(scenarios)} scenarios of "
                         "--scenario: each needs a row")
    if not args.pool:
        opponents = parse_opponents(args.opponents)
        groups, start = [], 0
        for k, (name, rows) in enumerate(zip(scenarios, split_rows(n, len(scenarios)),
                                             strict=True)):
            venv, backend = make_vector(args, derive_seed(args.seed, 0 if k == 0 else 100 + k),
                                        rows, opponents or None, "--opponents", scenario=name)
            sides = {int(venv.agent_sides[venv.possible_agents.index(a)])
                     for a in venv.learners}
            side = sides.pop() if len(sides) == 1 else -1
            label = f"vs {args.opponents}" if opponents else "self-play"
            if len(scenarios) > 1:
                label += f" on {venv.scenario.name}"
            groups.append(Group(venv, start, start + rows, "learn", side, label, backend))
            start += rows
        return groups
    scripted = names_list(args.pool_scripted)
    sides = probe.sides
    shares = parse_side_shares(args.side_shares, sides)
    cells = [(name, s) for name in scripted for s in range(len(sides))
             if shares is None or shares[s] > 0]
    n_scripted = round(args.pool_scripted_share * n) if scripted else 0
    if cells and n_scripted < len(cells):
        raise ValueError(f"--pool-scripted: {len(cells)} (policy, learner side) pairs need "
                         f"at least {len(cells)} rows, but --num-envs {n} x "
                         f"--pool-scripted-share {args.pool_scripted_share} gives {n_scripted}")
    if n - n_scripted < 1:
        raise ValueError(f"--pool-scripted-share {args.pool_scripted_share} leaves no row for "
                         "the pool of past checkpoints: lower it")
    groups = []
    venv, backend = make_vector(args, derive_seed(args.seed, 0), n - n_scripted, None,
                                "--scenario")
    groups.append(Group(venv, 0, n - n_scripted, "pool", -1, "vs pool", backend))
    start = n - n_scripted
    cell_rows = (split_rows(n_scripted, len(cells)) if shares is None
                 else apportion(n_scripted, [shares[side] for _, side in cells]))
    if min(cell_rows, default=1) < 1:
        raise ValueError(f"--side-shares {args.side_shares}: too few --pool-scripted rows "
                         f"({n_scripted}) to give every policy a row on each side with a "
                         "share: raise --num-envs or --pool-scripted-share")
    for i, ((name, side), rows) in enumerate(zip(cells, cell_rows, strict=True)):
        opponents = {other: name for j, other in enumerate(sides) if j != side}
        venv, backend = make_vector(args, derive_seed(args.seed, 1 + i), rows, opponents,
                                    "--pool-scripted", fallback=True)
        groups.append(Group(venv, start, start + rows, "scripted", side,
                            f"vs {name} as {sides[side]}", backend))
        start += rows
    return groups


def check_compatible(args: Args, probe: Any, scenarios: list[str]) -> None:
    """Several ``--scenario``s must give one policy the same inputs and outputs: the same
    seats, observation size and (slot-relative) action labels (``ValueError`` naming the
    first that differs)."""
    for name in scenarios[1:]:
        other = make_vector(args, 0, 1, None, "--scenario", scenario=name)[0]
        for what, a, b in (("seats", probe.possible_agents, other.possible_agents),
                           ("observation size", probe.obs_dim, other.obs_dim),
                           ("action labels", probe.action_labels, other.action_labels)):
            if a != b:
                raise ValueError(f"--scenario: {name!r} has other {what} than "
                                 f"{scenarios[0]!r} ({b if what != 'action labels' else len(b)}"
                                 f" against {a if what != 'action labels' else len(a)}); one "
                                 "policy trains only on scenarios with the same seats, "
                                 "observation size and action labels")


def check_checkpoints(args: Args, venv: Any) -> None:
    """``--init``, ``--pool-opponents`` and ``--pool-watch`` checkpoints (the newest one a
    watched run holds already; later ones are checked as they are loaded) must fit the
    battles: the same observation size and action labels (``ValueError`` naming the flag and
    both layouts);
    ``--init`` must also have been trained with each view exactly when its flag is given
    (``--move-view``, ``--aim-view``, ``--attack-view``; a pool opponent may differ:
    it reads its own columns of the observation). The learner reads a prefix of the
    vector's observation: a learner's view beside a pool opponent that reads an earlier view
    the learner does not (``--aim-view`` without ``--move-view`` beside one with the move
    view) is refused."""
    from agents.ppo_policy import arch_of, read_checkpoint
    from agents.views import VIEWS, views_of

    if not isinstance(observation_columns(venv, learner_views(args)), slice):
        mine, observed = learner_views(args), vector_views(args)
        last = max(i for i, v in enumerate(VIEWS) if mine[v])
        before = [v for v in VIEWS[:last] if observed[v] and not mine[v]]
        flags = " ".join("--" + v.replace("_", "-") for v in before)
        raise ValueError(f"--{VIEWS[last].replace('_', '-')}: a --pool-opponents checkpoint "
                         f"reads {', '.join(v.replace('_', ' ') for v in before)}, which "
                         f"comes before it in the observation; pass {flags} too")
    paths = [("--init", args.init)] if args.init else []
    paths += [("--pool-opponents", p) for p in names_list(args.pool_opponents)]
    for folder in names_list(args.pool_watch):  # the newest checkpoint there already, if any
        paths += [("--pool-watch", str(p))
                  for p in sorted((Path(folder) / "pool").glob("ppo_u*.pt"))[-1:]]
    for flag, path in paths:
        try:
            data = read_checkpoint(path)
        except Exception as exc:  # a corrupt file: say which flag and file
            raise ValueError(f"{flag}: {path}: not a readable train_ppo checkpoint "
                             f"({exc})") from None
        if flag == "--init" and arch_of(data) == "ensemble":
            raise ValueError(f"--init: {path} is an ensemble of checkpoints "
                             "(ensemble_checkpoints); training starts from one network: pass "
                             "one of its members")
        if flag == "--init" and arch_of(data) == "by_side":
            raise ValueError(f"--init: {path} is a by-side checkpoint (side_checkpoint: one "
                             "network per side); training starts from one network: pass one "
                             "of its sides' checkpoints")
        views = views_of(data)
        for view, mine in learner_views(args).items():
            if flag == "--init" and views[view] != mine:
                said = "with" if views[view] else "without"
                option = "--" + view.replace("_", "-")
                raise ValueError(f"{flag}: {path} was trained {said} the "
                                 f"{view.replace('_', ' ')}; pass "
                                 f"{option if views[view] else 'no ' + option} "
                                 "to train beside it")
        checkpoint_columns(flag, path, data, venv)


def checkpoint_columns(flag: str, path: str, data: dict, venv: Any) -> slice | np.ndarray:
    """The columns of ``venv``'s observations the checkpoint ``data`` (read from ``path``)
    reads, after checking that it fits the battles: the same observation size over its own
    views and the same action labels (``ValueError`` naming ``flag`` and both layouts)."""
    from agents.views import views_of

    cols = observation_columns(venv, views_of(data))
    want = cols.stop if isinstance(cols, slice) else len(cols)
    if int(data["obs_dim"]) != want or list(data["action_labels"]) != list(venv.action_labels):
        raise ValueError(f"{flag}: {path} was trained on {data.get('scenario')!r} "
                         f"(observation size {data['obs_dim']}, "
                         f"{len(data['action_labels'])} actions), which does not fit "
                         f"{venv.scenario.name!r} (observation size {want}, "
                         f"{venv.n_actions} actions)")
    return cols


def make_eval_vectors(args: Args, sides: list[str]) -> dict[str, list[tuple[Any, int]]]:
    """Per ``--eval-vs`` policy (and scenario, when there are several: keyed
    ``policy@scenario``), one vector per side the learner plays (held-out seeds)."""
    out: dict[str, list[tuple[Any, int]]] = {}
    scenarios = scenario_list(args)
    for scenario in scenarios:
        for name in names_list(args.eval_vs):
            key = name if len(scenarios) == 1 else f"{name}@{Path(scenario).stem}"
            out[key] = []
            for side in range(len(sides)):
                opponents = {other: name for j, other in enumerate(sides) if j != side}
                venv, _ = make_vector(args, 0, args.eval_envs, opponents, "--eval-vs",
                                      fallback=True, scenario=scenario)
                out[key].append((venv, side))
    return out


def prepare(args: Args) -> tuple[list[Group], dict[str, list[tuple[Any, int]]]]:
    """Check the arguments and build the training and evaluation vectors (``ValueError``
    naming the flag on bad input)."""
    args.check()
    groups = build_groups(args)
    check_checkpoints(args, groups[0].venv)
    eval_vectors = make_eval_vectors(args, groups[0].venv.sides) if args.eval_battles else {}
    return groups, eval_vectors


# ============================================================================ training
def train(args: Args, prepared: tuple[list[Group], dict] | None = None) -> Path:
    """Train, checkpoint, evaluate; return the run folder."""
    import torch

    from agents.evaluation import wilson_interval
    from agents.ppo_policy import (
        ActorCritic,
        SideNet,
        actor_logits,
        checkpoint_bytes,
        imitation_of,
        network_from_checkpoint,
        read_checkpoint,
    )
    from traveller_rl.ppo.stacked import StackedActors
    from traveller_rl.ppo.rollout import (
        SeatRollout,
        opponent_actions,
        plot_curve,
        sample_masked,
        vector_winrate,
    )
    from traveller_env.rules.rng import derive_seed

    groups, eval_vectors = prepared or prepare(args)
    first = groups[0].venv
    scenario = ",".join(dict.fromkeys(g.venv.scenario.name for g in groups))
    out = Path(args.out) if args.out else (
        Path("runs") / f"ppo__{'+'.join(Path(s).stem for s in scenario_list(args))}__"
                       f"{args.seed}__{int(time.time())}")
    if args.overwrite:  # only what a run writes; anything else in the folder stays
        for name in ("tb", "pool"):
            shutil.rmtree(out / name, ignore_errors=True)
        for name in OUTPUTS:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    n, s_count = args.num_envs, first.num_agents
    # the learner's inputs: the vector's observation, or its prefix without the move view
    obs_dim, n_actions = learner_obs_dim(args, first), first.n_actions
    agent_sides = first.agent_sides
    side_names = np.asarray(first.sides)  # side index -> name (a by-side checkpoint asks it)
    write_json(out / "config.json", {
        "args": dataclasses.asdict(args), "scenario": scenario,
        "possible_agents": first.possible_agents, "sides": first.sides,
        "obs_dim": obs_dim, "n_actions": n_actions, "action_labels": first.action_labels,
        "groups": [{"label": g.label, "rows": g.stop - g.start, "kind": g.kind,
                    "backend": g.backend, "learners": g.venv.learners,
                    "opponents": g.venv.opponents} for g in groups],
        "versions": {**versions(), "backend": args.backend}})

    # ---- seeding: one block (torch's initialisation, the sampler, NumPy's shuffles)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(derive_seed(args.seed, 1) & (2**63 - 1))
    rng = np.random.default_rng(derive_seed(args.seed, 2))
    def load_fitting(path: str) -> ActorCritic:
        """A checkpoint's network (``prepare``'s ``check_checkpoints`` checked that it fits)."""
        return network_from_checkpoint(read_checkpoint(path))

    # An imitation start stays on record in every checkpoint that descends from it.
    inherited: dict[str, str] = {}
    if args.init:
        init_data = read_checkpoint(args.init)
        inherited = imitation_of(init_data)
        net = network_from_checkpoint(init_data)
        net.train()
    else:
        net = ActorCritic(obs_dim, n_actions, hidden_sizes(args.hidden), arch=args.arch,
                          observation_labels=first.observation_labels,
                          action_labels=first.action_labels, embed=args.embed,
                          critic=args.critic, attention=args.attention)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr, eps=1e-5)

    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(out / "tb"))
    writer.add_text("config", "```\n" + json.dumps(dataclasses.asdict(args), indent=1) + "\n```")

    def save(path: Path, update: int, decisions: int) -> None:
        atomic_write_bytes(path, checkpoint_bytes(net, scenario, first.action_labels,
                                                  decisions=int(decisions), update=int(update),
                                                  seed=int(args.seed), **inherited,
                                                  **{v: True for v, on
                                                     in learner_views(args).items() if on}))

    # ---- the pool of frozen past selves (pool mode)
    pool_rows = next((g for g in groups if g.kind == "pool"), None)
    frozen: list[Any] = [load_fitting(p)
                         for p in names_list(args.pool_opponents)] if args.pool else []
    # the observation columns each frozen network reads (its own views)
    frozen_cols: list[Any] = [observation_columns(first, dict(_trained_views(p)))
                              for p in names_list(args.pool_opponents)] if args.pool else []
    n_external = len(frozen)
    # the frozen networks of each kind, by index, oldest first: --pool-opponents ("external"),
    # the learner's own past, the --pool-watch runs' checkpoints
    frozen_of: dict[str, list[int]] = {"external": list(range(n_external)), "own": [],
                                       "watched": []}
    frozen_name: list[str] = list(names_list(args.pool_opponents)) if args.pool else []
    pool_games: list[int] = [0] * n_external  # training battles against each frozen policy
    pool_wins: list[int] = [0] * n_external
    row_side = np.full(n, -1, dtype=np.int64)  # the learner's side per row (-1: all sides)
    side_shares = parse_side_shares(args.side_shares, first.sides)
    row_frozen = np.full(n, -1, dtype=np.int64)  # pool rows: the frozen checkpoint playing
    row_greedy = np.zeros(n, dtype=bool)  # pool rows whose frozen checkpoint plays greedily
    row_group = np.zeros(n, dtype=np.int64)  # the group (vector) of each row
    for i, g in enumerate(groups):
        row_side[g.start:g.stop] = g.learner_side
        row_group[g.start:g.stop] = i

    def freeze(update: int, decisions: int) -> None:
        copy = net.twin()
        copy.eval()
        add_frozen(copy, slice(0, obs_dim), "own", f"pool/ppo_u{update:06d}.pt")
        save(out / "pool" / f"ppo_u{update:06d}.pt", update, decisions)

    def add_frozen(network: Any, cols: Any, kind: str, name: str) -> None:
        frozen_of[kind].append(len(frozen))
        frozen.append(network)
        frozen_cols.append(cols)
        frozen_name.append(name)
        pool_games.append(0)
        pool_wins.append(0)

    watch_seen: set[str] = set()  # --pool-watch files looked at (loaded or too old)

    def watch() -> None:
        """Load the --pool-watch runs' pool checkpoints saved since the last look (only the
        newest --pool-size of each: older ones would never be drawn)."""
        for folder in names_list(args.pool_watch):
            found = sorted(str(p) for p in (Path(folder) / "pool").glob("ppo_u*.pt"))
            new = [p for p in found if p not in watch_seen]
            watch_seen.update(new)
            for path in new[-args.pool_size:] if args.pool_size else new:
                data = read_checkpoint(path)
                cols = checkpoint_columns("--pool-watch", path, data, first)
                add_frozen(network_from_checkpoint(data), cols, "watched", path)

    def latest(kind: str) -> list[int]:
        idx = frozen_of[kind]
        return idx[-args.pool_size:] if args.pool_size else idx

    def draw_from(rows: np.ndarray, candidates: np.ndarray) -> None:
        if args.pool_sampling == "pfsp":
            games, wins = np.array(pool_games)[candidates], np.array(pool_wins)[candidates]
            weight = (1.0 - (wins + 1.0) / (games + 2.0)) ** 2
            row_frozen[rows] = rng.choice(candidates, size=len(rows), p=weight / weight.sum())
        else:
            row_frozen[rows] = candidates[rng.integers(len(candidates), size=len(rows))]

    def draw_pool(rows: np.ndarray) -> None:
        """New battles in pool rows: the learner's side and its frozen opponent (the
        --pool-opponents and the latest --pool-size own checkpoints, or on --pool-watch-share
        of them the latest --pool-size watched ones; uniformly or by PFSP)."""
        row_side[rows] = draw_sides(rng, len(rows), len(first.sides), side_shares)
        watched = latest("watched")
        on_watched = rng.random(len(rows)) < args.pool_watch_share if watched else \
            np.zeros(len(rows), dtype=bool)
        if on_watched.any():
            draw_from(rows[on_watched], np.array(watched))
        if (~on_watched).any():
            draw_from(rows[~on_watched], np.array([*frozen_of["external"], *latest("own")]))
        if args.pool_greedy_share:  # drawn only when asked: runs without it keep their draws
            row_greedy[rows] = rng.random(len(rows)) < args.pool_greedy_share

    stacked: dict[str, Any] = {"members": (), "actors": None, "at": np.full(0, -1)}

    def frozen_actions(rows: np.ndarray, full_t: torch.Tensor, mask_t: torch.Tensor
                       ) -> np.ndarray:
        """The frozen opponents' actions for ``rows`` (each row's ``row_frozen`` network on
        its own observation columns, sampled or greedy as ``row_greedy`` says): the learner's
        own past copies that can still be drawn in one stacked pass (--pool-stack), then every
        other network in a pass of its own, drawing from ``gen`` in that order."""
        out = np.zeros(len(rows), dtype=np.int64)
        ks = row_frozen[rows]
        at = np.full(len(rows), -1)
        if args.pool_stack:
            members = tuple(latest("own"))
            if members != stacked["members"]:  # the pool moved on: restack
                stacked["members"] = members
                stacked["actors"] = StackedActors([frozen[k].actor for k in members])
                stacked["at"] = np.full(len(frozen), -1)
                stacked["at"][list(members)] = np.arange(len(members))
            known = ks < len(stacked["at"])
            at[known] = stacked["at"][ks[known]]
            batch = np.flatnonzero(at >= 0)
            if len(batch):
                sel = rows[batch]
                logits = stacked["actors"].logits(full_t[sel, :obs_dim],
                                                  torch.from_numpy(at[batch]))
                out[batch] = opponent_actions(logits, mask_t[sel], row_greedy[sel], gen).numpy()
        alone = np.flatnonzero(at < 0)
        for k in np.unique(ks[alone]):
            part = alone[ks[alone] == k]
            sel = rows[part]
            cols = frozen_cols[k]
            o_k = full_t[sel, cols] if isinstance(cols, slice) else \
                full_t[sel][:, torch.from_numpy(cols)]
            # a by-side frozen checkpoint plays each seat's side's network
            seat_sides = side_names[agent_sides[agent_all[sel]]] \
                if isinstance(frozen[k], SideNet) else None
            out[part] = opponent_actions(actor_logits(frozen[k], o_k, seat_sides), mask_t[sel],
                                         row_greedy[sel], gen).numpy()
        return out

    if pool_rows is not None:
        freeze(0, 0)
        watch()
        draw_pool(np.arange(pool_rows.start, pool_rows.stop))

    # ---- evaluation
    history: list[dict] = []
    training_curve: list[dict] = []  # one point per update: the training battles' win rate
    t_start = time.perf_counter()
    timers = {"env": 0.0, "inference": 0.0, "update": 0.0, "eval": 0.0}

    def evaluate(update: int, decisions: int, train_win: float | None) -> dict:
        t = time.perf_counter()
        record: dict[str, Any] = {"update": update, "decisions": decisions,
                                  "train_win_rate": train_win, "eval": {}}
        for name, vecs in eval_vectors.items():
            w = d = lo_ = 0
            for i, (venv, side) in enumerate(vecs):
                share = args.eval_battles // len(vecs) + (i < args.eval_battles % len(vecs))
                a, b, c = vector_winrate(net, venv, side, share, derive_seed(EVAL_SEED, side))
                w, d, lo_ = w + a, d + b, lo_ + c
            total = w + d + lo_
            lo, hi = wilson_interval(w, total)
            record["eval"][name] = {"battles": total, "wins": w, "draws": d, "losses": lo_,
                                    "win_rate": w / total, "win_ci95": [lo, hi]}
            writer.add_scalar(f"eval/win_rate_vs_{name}", w / total, decisions)
        timers["eval"] += time.perf_counter() - t
        record["seconds"] = round(time.perf_counter() - t_start - timers["eval"], 2)
        record["wall_seconds"] = round(time.perf_counter() - t_start, 2)
        history.append(record)
        with (out / "progress.jsonl").open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        return record

    (out / "progress.jsonl").unlink(missing_ok=True)
    (out / "training.jsonl").unlink(missing_ok=True)

    # ---- the batch: every group's rows side by side
    curve_label = (groups[0].label if len(groups) == 1
                   else "pool" if pool_rows is not None else "all scenarios")
    obs_all = np.zeros((n, first.obs_dim), dtype=np.float32)
    obs_learner = obs_all[:, :obs_dim]  # a view: the learner's prefix
    mask_all = np.zeros((n, n_actions), dtype=bool)
    agent_all = np.zeros(n, dtype=np.int64)
    rewards_all = np.zeros((n, s_count), dtype=np.float32)
    ended_all = np.zeros(n, dtype=bool)
    winner_all = np.full(n, -1, dtype=np.int64)

    def gather(results: list[tuple]) -> None:
        for g, res in zip(groups, results, strict=True):
            sl = slice(g.start, g.stop)
            obs_all[sl], mask_all[sl] = res[0], res[1]
            agent_all[sl] = res[-1]["agent"]
            if len(res) == 6:
                rewards_all[sl] = res[2]
                ended_all[sl] = res[3] | res[4]
                winner_all[sl] = res[5]["winner"]

    t = time.perf_counter()
    gather([g.venv.reset() for g in groups])
    timers["env"] += time.perf_counter() - t

    rollout = SeatRollout(n, s_count, obs_dim, n_actions, args.num_steps)
    style = parse_style(args.style)
    shaping = StyleShaping(style, first.observation_labels, first.action_labels,
                           (first.scenario.map.width, first.scenario.map.height)) \
        if style else None
    potential_terms = parse_potential(args.potential)
    potential = PositionPotential(potential_terms, first.observation_labels) \
        if potential_terms else None
    knockout_terms = parse_knockouts(args.knockouts)
    knockout = KnockoutReward(knockout_terms, first.observation_labels) \
        if knockout_terms else None
    ep_len = np.zeros(n, dtype=np.int64)
    side_weight = np.zeros((len(first.sides), s_count), dtype=np.float32)
    for side in range(len(first.sides)):
        on = agent_sides == side
        side_weight[side, on] = 1.0 / on.sum()
    ep_ret = np.zeros(n, dtype=np.float64)

    def new_stats() -> dict[str, Any]:
        """Training battles ended since the last update: count, and per group the battles with
        a learner side and their wins; learner decisions per battle; the learner side's
        return."""
        return {"battles": 0, "decided": np.zeros(len(groups), dtype=np.int64),
                "wins": np.zeros(len(groups), dtype=np.int64), "lengths": [], "returns": []}

    stats = new_stats()
    decisions, update = 0, 0
    evaluate(0, 0, None)
    bar = None
    if args.progress:
        from tqdm import tqdm

        bar = tqdm(total=args.total_timesteps, unit="dec", smoothing=0.1, dynamic_ncols=True)
    log = bar.write if bar is not None else print
    base = history[-1]["eval"]
    if base:
        log("before training: " + ", ".join(f"vs {k} {v['win_rate']:.3f}"
                                            for k, v in base.items()))

    all_learn = all(g.kind != "pool" for g in groups)
    out_of_time = False  # --max-train-seconds reached
    while decisions < args.total_timesteps and not out_of_time and not (
            args.stop_after_updates and update >= args.stop_after_updates):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.lr * max(
                0.0, 1.0 - decisions / args.total_timesteps)
        rollout_start = decisions
        for _ in range(args.num_steps):
            t = time.perf_counter()
            full_t = torch.from_numpy(obs_all)
            obs_t = torch.from_numpy(obs_learner)
            mask_t = torch.from_numpy(mask_all)
            if all_learn:
                learner = None
                rows = np.arange(n)
            else:
                learner = (row_frozen < 0) | (agent_sides[agent_all] == row_side)
                rows = np.flatnonzero(learner)
            actions = np.zeros(n, dtype=np.int64)
            with torch.no_grad():
                o, m = (obs_t, mask_t) if learner is None else (obs_t[rows], mask_t[rows])
                a, logp = sample_masked(net.actor(o), m, gen)
                value = net.value(o)
                actions[rows] = a.numpy()
                if learner is not None and not learner.all():
                    others = np.flatnonzero(~learner)
                    actions[others] = frozen_actions(others, full_t, mask_t)
            phi = None if potential is None else \
                potential(obs_all if learner is None else obs_all[rows])
            prog = None if knockout is None else \
                knockout(obs_all if learner is None else obs_all[rows])
            if learner is None:  # every row: no gathering copy
                rollout.add(rows, agent_all, obs_learner, mask_all, a.numpy(), logp.numpy(),
                            value.numpy(), phi, args.gamma, prog)
            else:
                rollout.add(rows, agent_all[rows], obs_learner[rows], mask_all[rows], a.numpy(),
                            logp.numpy(), value.numpy(), phi, args.gamma, prog)
            decisions += len(rows)
            ep_len[rows] += 1
            if shaping is not None:  # read before the step overwrites the observations
                style_seat = agent_all[rows].copy()
                style_reward = shaping(obs_all[rows], actions[rows])
            t2 = time.perf_counter()
            timers["inference"] += t2 - t
            gather([g.venv.step(actions[g.start:g.stop]) for g in groups])
            timers["env"] += time.perf_counter() - t2
            if shaping is not None:
                rewards_all[rows, style_seat] += style_reward
            rollout.credit(rewards_all, ended_all)
            has_side = row_side >= 0
            ep_ret[has_side] += (rewards_all[has_side]
                                 * side_weight[row_side[has_side]]).sum(axis=1)
            if ended_all.any():
                done_rows = np.flatnonzero(ended_all)
                sided = done_rows[row_side[done_rows] >= 0]
                stats["battles"] += len(done_rows)
                np.add.at(stats["decided"], row_group[sided], 1)
                np.add.at(stats["wins"], row_group[sided],
                          winner_all[sided] == row_side[sided])
                stats["lengths"].extend(ep_len[done_rows].tolist())
                stats["returns"].extend(ep_ret[sided].tolist())
                ep_len[done_rows] = 0
                ep_ret[done_rows] = 0.0
                if pool_rows is not None:
                    pool_done = done_rows[(done_rows >= pool_rows.start)
                                          & (done_rows < pool_rows.stop)]
                    for r in pool_done:
                        pool_games[row_frozen[r]] += 1
                        pool_wins[row_frozen[r]] += int(winner_all[r] == row_side[r])
                    if len(pool_done):
                        draw_pool(pool_done)

        # ---- GAE per seat, then the PPO update (CleanRL's)
        t = time.perf_counter()
        idx, adv, ret = rollout.advantages(args.gamma, args.gae_lambda)
        b_obs = torch.from_numpy(rollout.obs[idx])
        b_mask = torch.from_numpy(rollout.mask[idx])
        b_act = torch.from_numpy(rollout.action[idx])
        b_logp = torch.from_numpy(rollout.logp[idx])
        b_val = torch.from_numpy(rollout.value[idx])
        b_adv, b_ret = torch.from_numpy(adv), torch.from_numpy(ret)
        batch = len(idx)
        mb_size = max(1, -(-batch // args.minibatches))
        clipfracs, approx_kl = [], torch.zeros(())
        pg_loss = v_loss = entropy = torch.zeros(())
        for _ in range(args.epochs):
            perm = torch.from_numpy(rng.permutation(batch))
            for start in range(0, batch, mb_size):
                mb = perm[start:start + mb_size]
                mb_obs = b_obs[mb]
                logits = net.logits(mb_obs, b_mask[mb])
                logp_all = torch.log_softmax(logits, -1)
                new_logp = logp_all.gather(1, b_act[mb][:, None]).squeeze(1)
                # softmax, not logp_all.exp(): exp() of the masked logits' huge negative
                # log-probabilities takes a slow path (10x here); softmax gives the same 0s.
                entropy = -(torch.softmax(logits, -1) * logp_all).sum(-1).mean()
                log_ratio = new_logp - b_logp[mb]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    clipfracs.append(((ratio - 1).abs() > args.clip_coef).float().mean().item())
                mb_adv = b_adv[mb]
                if len(mb) > 1:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(
                    ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                new_v = net.value(mb_obs)
                v_clipped = b_val[mb] + torch.clamp(new_v - b_val[mb], -args.clip_coef,
                                                    args.clip_coef)
                v_loss = 0.5 * torch.max((new_v - b_ret[mb]) ** 2,
                                         (v_clipped - b_ret[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
                optimizer.step()
        carried = rollout.carry()
        update += 1
        timers["update"] += time.perf_counter() - t

        # ---- logging, pool, evaluation, checkpoint
        elapsed = time.perf_counter() - t_start - timers["eval"]
        out_of_time = bool(args.max_train_seconds and elapsed >= args.max_train_seconds)
        decided = int(stats["decided"].sum())
        train_win = int(stats["wins"].sum()) / decided if decided else None
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], decisions)
        writer.add_scalar("charts/decisions_per_second", decisions / elapsed, decisions)
        writer.add_scalar("charts/env_share", timers["env"] / elapsed, decisions)
        writer.add_scalar("charts/batch", batch, decisions)
        writer.add_scalar("charts/carried", carried, decisions)
        if stats["lengths"]:
            writer.add_scalar("charts/battle_decisions", float(np.mean(stats["lengths"])),
                              decisions)
        if stats["returns"]:
            writer.add_scalar("charts/side_return", float(np.mean(stats["returns"])),
                              decisions)
        if train_win is not None:
            writer.add_scalar("charts/train_win_rate", train_win, decisions)
        point = {"update": update, "decisions": decisions, "seconds": round(elapsed, 2),
                 "train_win_rate": train_win, "groups": {}}
        if len(groups) > 1:
            for g, won, of in zip(groups, stats["wins"], stats["decided"], strict=True):
                if of:
                    writer.add_scalar(f"train_win_rate/{g.label.replace(' ', '_')}",
                                      won / of, decisions)
                    point["groups"][g.label] = won / of
        training_curve.append(point)
        with (out / "training.jsonl").open("a") as fh:
            fh.write(json.dumps(point) + "\n")
        writer.add_scalar("charts/battles", stats["battles"], decisions)
        writer.add_scalar("losses/policy", pg_loss.item(), decisions)
        writer.add_scalar("losses/value", v_loss.item(), decisions)
        writer.add_scalar("losses/entropy", entropy.item(), decisions)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), decisions)
        writer.add_scalar("losses/clipfrac", float(np.mean(clipfracs)), decisions)
        if bar is not None:
            bar.total = max(bar.total, decisions)  # the last rollout may overshoot
            bar.update(decisions - rollout_start)
            bar.set_postfix_str(f"upd {update} {decisions / elapsed:,.0f} dec/s"
                                + (f" train win {train_win:.2f}" if train_win is not None
                                   else ""))
        stats = new_stats()
        if pool_rows is not None and update % args.pool_every == 0:
            freeze(update, decisions)
            watch()
        last = (decisions >= args.total_timesteps or update == args.stop_after_updates
                or out_of_time)
        if (args.eval_every and update % args.eval_every == 0) or last:
            rec = evaluate(update, decisions, train_win)
            t = time.perf_counter()
            save(out / "ppo.pt", update, decisions)
            if rec["eval"]:
                log(f"update {update:>4}  {decisions:>9,} decisions  {rec['seconds']:>7.1f} s  "
                    + "  ".join(f"vs {k} {v['win_rate']:.3f}" for k, v in rec["eval"].items()))
            plot_curve(history, out / "learning_curve.png",
                       f"PPO {scenario} ({curve_label}, "
                       f"seed {args.seed})", training_curve)
            timers["eval"] += time.perf_counter() - t  # checkpoint and curve: not training
    if bar is not None:
        bar.close()
    train_seconds = time.perf_counter() - t_start - timers["eval"]
    writer.close()
    results: dict[str, Any] = {
        "scenario": scenario, "decisions": decisions, "updates": update,
        "train_seconds": train_seconds, "decisions_per_second": decisions / train_seconds,
        "time_shares": {k: timers[k] / train_seconds for k in ("env", "inference", "update")},
        "eval_seconds": timers["eval"], "backend": args.backend,
        "battles_skipped": sum(g.venv.battles_skipped for g in groups),
        "eval_before": history[0]["eval"], "eval_after": history[-1]["eval"]}
    if pool_rows is not None:
        results["pool"] = {
            "opponents": frozen_name,
            "training_battles": pool_games, "learner_wins": pool_wins}
    print(f"\ntrained {decisions:,} decisions in {train_seconds:.0f} s "
          f"({results['decisions_per_second']:,.0f} decisions/s, {args.backend} backend; "
          f"environment {results['time_shares']['env']:.0%}, inference "
          f"{results['time_shares']['inference']:.0%}, updates "
          f"{results['time_shares']['update']:.0%}); checkpoint: {out / 'ppo.pt'}")
    if args.final_eval_battles and names_list(args.eval_vs):
        results["final_evaluation"] = final_evaluation(out / "ppo.pt", args)
    write_json(out / "evaluation.json", results)
    return out


def final_evaluation(checkpoint: Path, args: Args) -> list[dict]:
    """The checkpoint loaded back as an NPC policy and played through the AEC env against each
    ``--eval-vs`` policy (``agents.evaluation.evaluate_matchup``: sides alternate)."""
    from agents.evaluation import evaluate_matchup, format_matchups
    from agents.registry import make_policy
    from agents.trained import load_policy

    rows = []
    for scenario in scenario_list(args):
        learned = load_policy(checkpoint, scenario)
        rows += [evaluate_matchup(learned, make_policy(name, scenario=scenario),
                                  scenario, battles=args.final_eval_battles)
                 for name in names_list(args.eval_vs)]
    print(format_matchups(rows))
    return rows


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The trainer's arguments, one ``--flag`` per field of ``Args`` (added to ``parser`` when
    given, e.g. the ``traveller train ppo`` subcommand's)."""
    if parser is None:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_dataclass_args(parser, Args)
    return parser


def run(parsed: argparse.Namespace) -> int:
    """Train with the parsed arguments (exit status 2 on a bad argument)."""
    args = Args(**vars(parsed))
    try:
        prepared = prepare(args)
    except (ValueError, TypeError, FileNotFoundError, NotImplementedError) as exc:
        print(f"train_ppo: error: {exc}", file=sys.stderr)
        return 2
    train(args, prepared)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``Args`` from the command line and train."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
