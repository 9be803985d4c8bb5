"""The PPO trainer's arguments: ``Args`` (one ``--flag`` per field, its docstring the flag's
help, as CleanRL's ``ppo.py``) and ``Args.check``, which refuses any value out of range
naming the flag."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from traveller_rl.commandline import check_output_folder
from traveller_rl.common import check_minimums, hidden_sizes
from traveller_rl.pool import SAMPLING
from traveller_rl.ppo.shaping import (
    MOVE_VIEW_TERMS,
    parse_knockouts,
    parse_potential,
    parse_style,
)

__all__ = ["EXAMPLES", "HELP_GROUPS", "POOL_SAMPLING", "Args", "default_backend", "names_list",
           "parse_seed_range"]

#: ``--pool-sampling`` choices (``traveller_rl.pool.OpponentPool``'s).
POOL_SAMPLING = SAMPLING


def names_list(text: str) -> list[str]:
    """``"rush,marksman"`` -> ``["rush", "marksman"]``."""
    return [n.strip() for n in text.split(",") if n.strip()]


def parse_seed_range(text: str, flag: str) -> tuple[int, int]:
    """``"0-999"`` -> ``(0, 999)`` (both included); ``ValueError`` naming ``flag`` otherwise."""
    lo, sep, hi = text.partition("-")
    if not (sep and lo.strip().isdigit() and hi.strip().isdigit()
            and int(lo) <= int(hi)):
        raise ValueError(f"{flag} {text!r}: expected LO-HI, whole numbers with LO <= HI "
                         "(both included), e.g. 0-999")
    return int(lo), int(hi)


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
    layout: str = ""
    """a fixed observation and action layout (traveller_env.layout, e.g. '6v6'): the policy
    then plays every scenario that fits it; needed (default 6v6) for a distribution"""
    scenario_seeds: str = ""
    """LO-HI: the generator seeds a distribution --scenario (gen:<name>) trains on, both
    included (default 0-999; the benchmark holds 1000 and up out)"""
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
    resume: str = ""
    """continue the run in this folder from its resume checkpoint (resume.ckpt, written every
    --checkpoint-every), with the same flags (budgets and verbosity may change): --backend
    python, without --pool"""
    checkpoint_every: str = ""
    """write the resume checkpoint every N updates (10) or every span of time (90s, 5m, 2h);
    empty or 0: never. --backend python, without --pool"""
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
    traveller_agents/entity_net.py). The critic is an MLP unless --critic entity"""
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
    """torch CPU threads while the policy chooses actions (rollouts, evaluations; 1 is fastest
    beside the battle threads)"""
    update_threads: int = 0
    """torch CPU threads during the PPO update, when the battles wait (0: one per available
    core, at most 8). The count is part of the run: the same count gives the same ppo.pt byte
    for byte; pass 1 for the same bytes on every machine"""
    env_threads: int = 0
    """threads stepping the battles (--backend core; the results are identical for any count):
    0 picks one per available core, at most 8; 1 steps every row on the calling thread"""
    overlap: bool = False
    """step the rows in two halves that take turns (--backend core, --threads 1): while the
    core steps one half in a background thread, the policy chooses the other half's actions,
    so battles and inference overlap. Reproducible for a seed, but not the run without it: the
    second half's battles are a vector of their own, with other battle seeds (see
    docs/performance.md for what it gains)"""
    device: str = "cpu"
    """where the network runs (rollout buffers, inference, updates): 'cpu', 'cuda' or 'auto'
    (cuda when torch sees a GPU). Checkpoints load on either; only cpu is byte-reproducible"""
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
        from traveller_env.layout import LayoutError, resolve_layout

        if self.layout:
            try:
                resolve_layout(self.layout)
            except LayoutError as exc:
                raise ValueError(f"--layout: {exc}") from None
        if self.scenario_seeds:
            parse_seed_range(self.scenario_seeds, "--scenario-seeds")

        check_minimums((("--total-timesteps", self.total_timesteps, 1),
                        ("--num-envs", self.num_envs, 1),
                        ("--num-steps", self.num_steps, 1),
                        ("--epochs", self.epochs, 1),
                        ("--minibatches", self.minibatches, 1),
                        ("--threads", self.threads, 1),
                        ("--update-threads", self.update_threads, 0),
                        ("--env-threads", self.env_threads, 0),
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
        from traveller_agents.entity_net import ATTENTION_HEADS
        from traveller_agents.nets import ARCHS, CRITICS

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
        self.check_overlap()
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
        if any(t in terms for t in MOVE_VIEW_TERMS) and not self.move_view:
            raise ValueError("--potential reads the move view of the seat's own square "
                             f"({', '.join(t for t in MOVE_VIEW_TERMS if t in terms)}): it "
                             "needs --move-view")
        if any(t not in MOVE_VIEW_TERMS for t in terms) and not self.attack_view:
            raise ValueError("--potential reads the attack view ("
                             f"{', '.join(t for t in terms if t not in MOVE_VIEW_TERMS)}): "
                             "it needs --attack-view")
        self.check_resume()
        if self.out and not self.overwrite and not getattr(self, "resume", None):
            # the one rule of every command's output folder (traveller_rl.commandline)
            out = Path(self.out)
            if (out / "config.json").exists():
                raise ValueError(f"--out {self.out}: holds a run already (config.json); choose "
                                 "another folder, or pass --overwrite to replace it")
            check_output_folder("--out", out, overwrite=False)
        hidden_sizes(self.hidden)


    def check_overlap(self) -> None:
        """``--overlap``: with the core, one torch thread and at least two rows (``ValueError``
        naming the flag otherwise)."""
        if not self.overlap:
            return
        if self.backend != "core":
            raise ValueError(f"--overlap needs --backend core (got {self.backend!r}): the "
                             "python backend holds the interpreter while it steps, so nothing "
                             "would overlap")
        if self.threads != 1:
            raise ValueError(f"--overlap needs --threads 1 (got {self.threads}): torch threads "
                             "beside the battle threads contend for the same cores")
        if self.num_envs < 2:
            raise ValueError(f"--overlap splits the rows in two halves: --num-envs must be at "
                             f"least 2, got {self.num_envs}")

    def check_resume(self) -> None:
        """``--resume`` and ``--checkpoint-every`` (either backend, with or without ``--pool``):
        their values and how they combine with ``--out`` and ``--overwrite`` (``ValueError``
        naming the flag otherwise)."""
        from traveller_rl.ppo.resume import parse_checkpoint_every

        parse_checkpoint_every(self.checkpoint_every)
        if self.resume:
            if self.overwrite:
                raise ValueError("--resume and --overwrite: choose one (--resume continues the "
                                 "run in its folder, --overwrite starts it again)")
            if self.out and Path(self.out) != Path(self.resume):
                raise ValueError(f"--resume {self.resume} and --out {self.out}: a resumed run "
                                 "writes in its own folder; leave --out out")
            if not Path(self.resume).is_dir():
                raise ValueError(f"--resume {self.resume}: no such run folder")


#: ``traveller train ppo --help``'s groups of flags (title -> ``Args`` fields, in order); a
#: field in none of them is listed under "other options".
HELP_GROUPS: dict[str, tuple[str, ...]] = {
    "scenario and opponents": ("scenario", "layout", "scenario_seeds", "opponents",
                               "side_shares"),
    "pool of past selves (--pool)": (
        "pool", "pool_every", "pool_size", "pool_scripted", "pool_scripted_share",
        "pool_opponents", "pool_watch", "pool_watch_share", "pool_greedy_share", "pool_stack",
        "pool_sampling"),
    "reward shaping": ("style", "knockouts", "potential"),
    "observation views": ("move_view", "aim_view", "attack_view"),
    "budget": ("total_timesteps", "stop_after_updates", "max_train_seconds", "seed",
               "backend", "num_envs", "num_steps", "threads", "update_threads", "env_threads",
               "overlap", "device"),
    "PPO hyperparameters": ("lr", "anneal_lr", "epochs", "minibatches", "gamma", "gae_lambda",
                            "clip_coef", "ent_coef", "vf_coef", "max_grad_norm"),
    "network": ("init", "hidden", "arch", "embed", "critic", "attention"),
    "evaluation": ("eval_every", "eval_vs", "eval_battles", "eval_envs", "final_eval_battles"),
    "output": ("out", "overwrite", "resume", "checkpoint_every", "progress"),
}

#: Example command lines shown at the end of ``traveller train ppo --help``.
EXAMPLES = """
traveller train ppo --scenario duel --opponents red=rush --total-timesteps 300000 --out runs/duel
traveller train ppo --scenario squad --pool --pool-scripted rush,marksman --max-train-seconds 600
traveller train ppo --scenario squad --init runs/duel/ppo.pt --move-view --out runs/squad"""
