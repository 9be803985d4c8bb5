"""The PPO trainer's arguments: ``Args``, nested by concern (``BattleArgs``, ``PoolArgs``,
``ShapingArgs``, ``ViewArgs``, ``BudgetArgs``, ``PPOSettings``, ``NetArgs``, ``EvalArgs``,
``OutputArgs``). Every field of a group is one ``--flag`` (its docstring the flag's help, as
CleanRL's ``ppo.py``; ``traveller_rl.common.flag_field`` where the flag has another name than
the field), each group is one group of ``--help`` and checks its own values
(``check``, a ``ValueError`` naming the flag); ``Args.check`` checks them all and how they
combine. ``Args(**flags)`` builds the arguments from flag names (``_`` for ``-``), as the
parser gives them, and ``Args.flags()`` gives them back by flag name (``config.json`` and the
resume checkpoint record them so)."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from traveller_rl.commandline import check_output_folder
from traveller_rl.common import (
    _field_docs,
    add_field_argument,
    check_minimums,
    field_flag,
    flag_field,
    hidden_sizes,
)
from traveller_rl.pool import SAMPLING
from traveller_rl.ppo.shaping import (
    MOVE_VIEW_TERMS,
    parse_knockouts,
    parse_potential,
    parse_style,
)

__all__ = ["EXAMPLES", "GROUPS", "POOL_SAMPLING", "Args", "BattleArgs", "BudgetArgs", "EvalArgs",
           "NetArgs", "OutputArgs", "PPOSettings", "PoolArgs", "ShapingArgs", "ViewArgs",
           "add_flags", "check_checkpoint_file", "default_backend", "names_list",
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


def check_checkpoint_file(flag: str, path: str) -> None:
    """``ValueError`` naming ``flag`` unless ``path`` is a train_ppo checkpoint file (.pt)."""
    if not path.endswith(".pt") or not Path(path).is_file():
        raise ValueError(f"{flag}: {path!r} is not a train_ppo checkpoint file (.pt)")


def default_backend() -> str:
    """``"core"`` when the compiled core can run battles here, else ``"python"``."""
    from traveller_env import vector

    return "core" if vector.BACKENDS.get("core") == "available" else "python"


@dataclass
class BattleArgs:
    """The battles the learner trains in: the scenarios, their layout and the opponents."""

    TITLE: ClassVar[str] = 'scenario and opponents'

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
    side_shares: str = ""
    """pool: the share of battles the learner plays on each side, SIDE=SHARE comma-separated,
    every side named, summing to 1 (e.g. 'blue=0.65,red=0.35': more practice on the side it
    plays worse); for the pool's battles (drawn per battle) and the --pool-scripted rows
    (shared out by it). Default: every side alike"""

    def check(self) -> None:
        """``ValueError`` naming ``--layout`` or ``--scenario-seeds`` for a value out of range."""
        from traveller_env.layout import LayoutError, resolve_layout

        if self.layout:
            try:
                resolve_layout(self.layout)
            except LayoutError as exc:
                raise ValueError(f"--layout: {exc}") from None
        if self.scenario_seeds:
            parse_seed_range(self.scenario_seeds, "--scenario-seeds")


@dataclass
class PoolArgs:
    """``--pool``: the learner plays frozen copies of itself (``traveller_rl.ppo.pool``)."""

    TITLE: ClassVar[str] = 'pool of past selves (--pool)'

    enabled: bool = flag_field(False, flag="pool")
    """play against a pool of the policy's own past checkpoints (and --pool-scripted)"""
    every: int = flag_field(10, flag="pool_every")
    """pool: save a frozen checkpoint into the pool every this many updates"""
    size: int = flag_field(20, flag="pool_size")
    """pool: opponents are drawn from the latest this many checkpoints (0: all)"""
    scripted: str = flag_field("", flag="pool_scripted")
    """pool: scripted policies mixed in, comma-separated (e.g. 'rush,marksman')"""
    scripted_share: float = flag_field(0.25, flag="pool_scripted_share")
    """pool: share of the rows that play --pool-scripted opponents"""
    opponents: str = flag_field("", flag="pool_opponents")
    """pool: other policies' train_ppo checkpoints (.pt), comma-separated, kept in the pool for
    the whole run beside the learner's own (a league's other members)"""
    watch: str = flag_field("", flag="pool_watch")
    """pool: other runs' folders (comma-separated) whose pool/ checkpoints join this run's pool
    as those runs save them, checked every --pool-every updates (the latest --pool-size of
    them): two learners that train at once, each against the other's past (a main learner and
    an exploiter, as in a league). Which checkpoints a battle meets then depends on the other
    process's timing, so such a run is not reproducible byte for byte"""
    watch_share: float = flag_field(0.5, flag="pool_watch_share")
    """pool: share of the pool's battles drawn from the --pool-watch checkpoints once there are
    any (1: an exploiter that plays only the watched runs; the rest: its own past and
    --pool-opponents)"""
    greedy_share: float = flag_field(0.0, flag="pool_greedy_share")
    """pool: share of the pool's battles (drawn per battle) in which the frozen checkpoint plays
    greedily, its most probable legal action, as checkpoints play when evaluated or loaded as
    NPCs; in the others it samples from its policy, as the learner does (0: always samples)"""
    stack: bool = flag_field(True, flag="pool_stack")
    """pool: run the frozen copies of the learner in one batched forward pass
    (``traveller_rl.ppo.stacked.StackedActors``) instead of one pass per copy: the same
    policies, faster, but other draws for a seed (float rounding, one sampling call), so
    --no-pool-stack (one pass each) is how a run from before the stack is reproduced"""
    sampling: str = flag_field("uniform", flag="pool_sampling")
    """pool: how a battle draws its frozen opponent: 'uniform', or 'pfsp' (prioritised
    fictitious self-play: weight (1 - p)^2 where p is the learner's win rate so far against
    that opponent in training, so the opponents it beats least are played most)"""

    def check(self) -> None:
        """``ValueError`` naming the ``--pool-*`` flag for a value out of range, or one given
        without ``--pool``."""
        check_minimums((("--pool-every", self.every, 1), ("--pool-size", self.size, 0)))
        if not 0 <= self.scripted_share <= 1:
            raise ValueError(f"--pool-scripted-share must lie in [0, 1], got "
                             f"{self.scripted_share}")
        for flag, given in (("--pool-scripted", self.scripted),
                            ("--pool-opponents", self.opponents)):
            if given and not self.enabled:
                raise ValueError(f"{flag} needs --pool")
        if self.watch and not self.enabled:
            raise ValueError("--pool-watch needs --pool")
        if not 0.0 <= self.watch_share <= 1.0:
            raise ValueError(f"--pool-watch-share must be in [0, 1], got {self.watch_share}")
        if not 0.0 <= self.greedy_share <= 1.0:
            raise ValueError(f"--pool-greedy-share must be in [0, 1], got {self.greedy_share}")
        if self.greedy_share and not self.enabled:
            raise ValueError("--pool-greedy-share needs --pool")
        for folder in names_list(self.watch):
            if not Path(folder).is_dir():
                raise ValueError(f"--pool-watch: {folder!r} is not a folder (a train_ppo run's "
                                 "--out, whose pool/ it reads)")
        if self.sampling not in POOL_SAMPLING:
            raise ValueError(f"--pool-sampling must be one of {', '.join(POOL_SAMPLING)}, got "
                             f"{self.sampling!r}")
        for path in names_list(self.opponents):
            check_checkpoint_file("--pool-opponents", path)


@dataclass
class ShapingArgs:
    """Rewards added to the battles' own (``traveller_rl.ppo.shaping``)."""

    TITLE: ClassVar[str] = 'reward shaping'

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

    def check(self, views: ViewArgs) -> None:
        """``ValueError`` naming the flag for a term or weight it does not take, or a
        ``--potential`` term whose view ``views`` lacks."""
        parse_style(self.style)
        parse_knockouts(self.knockouts)
        terms = parse_potential(self.potential)
        if any(t in terms for t in MOVE_VIEW_TERMS) and not views.move_view:
            raise ValueError("--potential reads the move view of the seat's own square "
                             f"({', '.join(t for t in MOVE_VIEW_TERMS if t in terms)}): it "
                             "needs --move-view")
        if any(t not in MOVE_VIEW_TERMS for t in terms) and not views.attack_view:
            raise ValueError("--potential reads the attack view ("
                             f"{', '.join(t for t in terms if t not in MOVE_VIEW_TERMS)}): "
                             "it needs --attack-view")


@dataclass
class ViewArgs:
    """The observation views the learner sees beside the base observation."""

    TITLE: ClassVar[str] = 'observation views'

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


@dataclass
class BudgetArgs:
    """How long the run trains, its seed, and the machinery it runs on (rows, threads, device)."""

    TITLE: ClassVar[str] = 'budget'

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
    backend: str = field(default_factory=default_backend)
    """vector backend, 'core' or 'python' (default: core when it is built)"""
    num_envs: int = 64
    """battles stepped per call (rows of the vector)"""
    num_steps: int = 64
    """steps per rollout (a rollout holds about num_envs * num_steps decisions)"""
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
    compile: bool = False
    """run the actor and critic through torch.compile (on the CPU it needs a C++ compiler):
    the first rollouts and updates wait while it compiles (tens of seconds), then inference and
    updates run faster (the research recipe's network: 1.4-1.6x and 1.2-1.4x). Checkpoints are
    the same format; the run is reproducible, but not byte-equal to the run without it"""

    def check(self) -> None:
        """``ValueError`` naming the flag for a value out of range, a backend not built here,
        or an ``--overlap`` its backend, threads or rows cannot run."""
        from traveller_env import vector

        check_minimums((("--total-timesteps", self.total_timesteps, 1),
                        ("--num-envs", self.num_envs, 1),
                        ("--num-steps", self.num_steps, 1),
                        ("--threads", self.threads, 1),
                        ("--update-threads", self.update_threads, 0),
                        ("--env-threads", self.env_threads, 0),
                        ("--seed", self.seed, 0),
                        ("--stop-after-updates", self.stop_after_updates, 0)))
        if not (np.isfinite(self.max_train_seconds) and self.max_train_seconds >= 0):
            raise ValueError("--max-train-seconds must be a number of seconds >= 0 (0: no "
                             f"limit), got {self.max_train_seconds}")
        if self.backend not in vector.BACKENDS:
            raise ValueError(f"--backend must be one of {', '.join(vector.BACKENDS)}, got "
                             f"{self.backend!r}")
        if self.compile and self.device == "cpu" and not any(
                shutil.which(c) for c in ("c++", "g++", "clang++")):
            raise ValueError("--compile on the CPU needs a C++ compiler (torch.compile's CPU "
                             "backend builds its kernels with it): none of c++, g++, clang++ "
                             "is on PATH")
        if vector.BACKENDS[self.backend] != "available":
            raise ValueError(f"--backend {self.backend}: {vector.BACKENDS[self.backend]} here; "
                             "use --backend python")
        self.check_overlap()

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


@dataclass
class PPOSettings:
    """The PPO update's hyperparameters, named as in ``traveller_rl.common.PPOArgs`` (the one
    vocabulary of every trainer: ``learning_rate``, ``n_epochs``, ``ent_coef``, ...); the
    flags keep their short names (``--lr``, ``--epochs``)."""

    TITLE: ClassVar[str] = 'PPO hyperparameters'

    learning_rate: float = flag_field(2.5e-4, flag="lr")
    """Adam learning rate (annealed linearly to 0 unless --no-anneal-lr)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over --total-timesteps"""
    n_epochs: int = flag_field(4, flag="epochs")
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

    def check(self) -> None:
        """``ValueError`` naming the flag for a value out of range."""
        check_minimums((("--epochs", self.n_epochs, 1), ("--minibatches", self.minibatches, 1)))
        for flag, value in (("--lr", self.learning_rate), ("--clip-coef", self.clip_coef)):
            if not value > 0:
                raise ValueError(f"{flag} must be positive, got {value}")
        for flag, value in (("--gamma", self.gamma), ("--gae-lambda", self.gae_lambda)):
            if not 0 <= value <= 1:
                raise ValueError(f"{flag} must lie in [0, 1], got {value}")
        for flag, value in (("--ent-coef", self.ent_coef), ("--vf-coef", self.vf_coef),
                            ("--max-grad-norm", self.max_grad_norm)):
            if not value >= 0:
                raise ValueError(f"{flag} must be at least 0, got {value}")


@dataclass
class NetArgs:
    """The network trained: a checkpoint's (``--init``) or a fresh one of this shape."""

    TITLE: ClassVar[str] = 'network'

    init: str = ""
    """start from this train_ppo checkpoint's weights (same observation size and labels; its
    layer sizes replace --hidden) instead of a fresh network"""
    net_arch: str = flag_field("64,64", flag="hidden")
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

    def check(self) -> None:
        """``ValueError`` naming the flag for an architecture it does not know, a shape it
        cannot build, or a shape given beside ``--init``."""
        from traveller_agents.entity_net import ATTENTION_HEADS
        from traveller_agents.nets import ARCHS, CRITICS

        check_minimums((("--embed", self.embed, 1), ("--attention", self.attention, 0)))
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
        if self.init:
            check_checkpoint_file("--init", self.init)
        hidden_sizes(self.net_arch)


@dataclass
class EvalArgs:
    """The periodic greedy evaluations and the final one of the saved checkpoint."""

    TITLE: ClassVar[str] = 'evaluation'

    every: int = flag_field(10, flag="eval_every")
    """evaluate every this many updates (0: only before training and at the end)"""
    vs: str = flag_field("rush,marksman", flag="eval_vs")
    """scripted opponents of the evaluations, comma-separated ('' for none)"""
    battles: int = flag_field(100, flag="eval_battles")
    """battles per opponent in each periodic evaluation (half from each side)"""
    envs: int = flag_field(50, flag="eval_envs")
    """rows of each periodic evaluation vector"""
    final_battles: int = flag_field(200, flag="final_eval_battles")
    """battles per opponent of the final AEC evaluation of the saved checkpoint (0: none)"""

    def check(self) -> None:
        """``ValueError`` naming the flag for a count out of range."""
        check_minimums((("--eval-every", self.every, 0), ("--eval-battles", self.battles, 0),
                        ("--eval-envs", self.envs, 1),
                        ("--final-eval-battles", self.final_battles, 0)))


@dataclass
class OutputArgs:
    """The run folder, resuming, and what the run shows while it trains."""

    TITLE: ClassVar[str] = 'output'

    out: str = ""
    """run folder (default: runs/ppo__<scenario>__<seed>__<unix time>)"""
    overwrite: bool = False
    """replace the run already in --out (its config, checkpoints, logs) instead of refusing"""
    resume: str = ""
    """continue the run in this folder from its resume checkpoint (resume.ckpt, written every
    --checkpoint-every), with the same flags (budgets and verbosity may change); a run stopped
    before its first checkpoint starts again from its config.json"""
    checkpoint_every: str = "1m"
    """write the resume checkpoint every N updates (10) or every span of time (90s, 5m, 2h);
    0: never. The default, a minute, costs well under 1% of a run (docs/training.md)"""
    progress: bool = True
    """show a progress bar"""


    def check(self) -> None:
        """``--out``, ``--resume`` and ``--checkpoint-every``: their values and how they
        combine with ``--overwrite`` (``ValueError`` naming the flag otherwise)."""
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
        elif self.out and not self.overwrite:
            # the one rule of every command's output folder (traveller_rl.commandline)
            out = Path(self.out)
            if (out / "config.json").exists():
                raise ValueError(f"--out {self.out}: holds a run already (config.json); choose "
                                 "another folder, or pass --overwrite to replace it")
            check_output_folder("--out", out, overwrite=False)


#: The groups of ``Args``, in ``--help``'s order: attribute name -> its dataclass.
GROUPS: dict[str, type] = {"battles": BattleArgs, "pool": PoolArgs, "shaping": ShapingArgs,
                           "views": ViewArgs, "budget": BudgetArgs, "ppo": PPOSettings,
                           "net": NetArgs, "eval": EvalArgs, "output": OutputArgs}


def _flag_fields() -> dict[str, tuple[str, str]]:
    """Every flag's name (``_`` for ``-``) -> (its group's attribute, its field's name)."""
    return {field_flag(f): (attr, f.name)
            for attr, cls in GROUPS.items() for f in dataclasses.fields(cls)}


@dataclass(init=False)
class Args:
    """Arguments of the PPO trainer: one group per concern (``GROUPS``), each field a
    ``--flag``. ``Args(**flags)`` takes the flags by name (``_`` for ``-``: ``Args(lr=1e-3,
    pool=True, pool_every=5)``), every flag not given at its default; a name that is no flag
    is a ``TypeError``."""

    battles: BattleArgs
    pool: PoolArgs
    shaping: ShapingArgs
    views: ViewArgs
    budget: BudgetArgs
    ppo: PPOSettings
    net: NetArgs
    eval: EvalArgs
    output: OutputArgs

    def __init__(self, **flags: Any) -> None:
        where = _flag_fields()
        unknown = sorted(set(flags) - set(where))
        if unknown:
            raise TypeError(f"Args: no such flag {', '.join(unknown)}")
        given: dict[str, dict[str, Any]] = {attr: {} for attr in GROUPS}
        for flag, value in flags.items():
            attr, name = where[flag]
            given[attr][name] = value
        for attr, cls in GROUPS.items():
            setattr(self, attr, cls(**given[attr]))

    @staticmethod
    def flag_names() -> tuple[str, ...]:
        """Every flag's name (``_`` for ``-``), in ``--help``'s order."""
        return tuple(_flag_fields())

    def flags(self) -> dict[str, Any]:
        """The arguments by flag name (``_`` for ``-``), as ``Args(**flags)`` takes them."""
        return {field_flag(f): getattr(getattr(self, attr), f.name)
                for attr, cls in GROUPS.items() for f in dataclasses.fields(cls)}

    def check(self) -> None:
        """``ValueError`` naming the flag for any value out of range: each group's checks, then
        the flags of different groups that exclude or need each other."""
        self.battles.check()
        self.budget.check()
        self.ppo.check()
        self.net.check()
        self.pool.check()
        if self.pool.enabled and self.battles.opponents:
            raise ValueError("--pool and --opponents exclude each other: with --pool the "
                             "opponents are the pool's (add scripted ones with --pool-scripted)")
        if self.battles.side_shares and not self.pool.enabled:
            raise ValueError("--side-shares needs --pool (without it the sides the learner "
                             "plays are --opponents')")
        if self.budget.compile and self.net.init:
            from traveller_agents.checkpoint import arch_of, read_checkpoint

            arch = arch_of(read_checkpoint(Path(self.net.init)))
            if arch in ("ensemble", "by_side"):
                raise ValueError(f"--compile: the --init checkpoint {self.net.init} is an "
                                 f"{arch.replace('_', '-')} network, not one actor and critic; "
                                 "train it without --compile")
        self.shaping.check(self.views)
        self.eval.check()
        self.output.check()


def add_flags(parser: argparse.ArgumentParser, short: bool = True) -> None:
    """Add every flag of ``Args`` to ``parser``, one argument group per group of ``GROUPS``
    (its ``TITLE``), each flag's help its field's docstring (``short``: its first clause)."""
    for cls in GROUPS.values():
        group = parser.add_argument_group(cls.TITLE)
        docs = _field_docs(cls)
        for f in dataclasses.fields(cls):
            add_field_argument(group, f, docs.get(f.name, ""), field_flag(f), short)


#: Example command lines shown at the end of ``traveller train ppo --help``.
EXAMPLES = """
traveller train ppo --scenario duel --opponents red=rush --total-timesteps 300000 --out runs/duel
traveller train ppo --scenario squad --pool --pool-scripted rush,marksman --max-train-seconds 600
traveller train ppo --scenario squad --init runs/duel/ppo.pt --move-view --out runs/squad"""
