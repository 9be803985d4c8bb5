"""Shared pieces of the trainers and recipes: arguments, run folders, safe saving, plots.

The trainers (``traveller_rl.ppo``, ``traveller_rl.rllib``) and the recipes
(``traveller_rl.recipes``) import it, so that each stays one readable file (CleanRL style)
with the boilerplate here. ``PPOArgs`` names the PPO hyperparameters the way every trainer's
arguments name them.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PPOArgs", "PoolCheckpointCallback", "add_dataclass_args", "add_field_argument",
           "atomic_save_model", "atomic_write_bytes", "checkpoint_provenance", "dataclass_flags",
           "field_flag",
           "flag_field", "learning_curve", "make_model", "make_run_dir", "parse_opponents",
           "run_chunks", "seed_everything", "write_json"]


def flag_field(default: Any = dataclasses.MISSING, *, flag: str,
               default_factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field whose ``--flag`` is not its name: ``flag`` (with ``_`` for ``-``),
    e.g. ``learning_rate: float = flag_field(2.5e-4, flag="lr")`` is ``--lr``."""
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={"flag": flag})


def dataclass_flags(args: Any) -> dict[str, Any]:
    """A dataclass's values by ``--flag`` name (``_`` for ``-``; ``field_flag``), as a run's
    ``config.json`` records its arguments."""
    return {field_flag(f): getattr(args, f.name) for f in dataclasses.fields(args)}


def field_flag(f: dataclasses.Field) -> str:
    """The name of a dataclass field's ``--flag`` (``_`` for ``-``): ``flag_field``'s, else
    the field's own."""
    return f.metadata.get("flag", f.name)


@dataclasses.dataclass
class PPOArgs:
    """MaskablePPO settings and run bookkeeping shared by the SB3 recipes (each recipe's
    ``Args`` extends it and may override defaults).

    Its names are the PPO hyperparameters' names in every trainer's arguments (the batched
    trainer's ``traveller_rl.ppo.args.PPOSettings`` and ``NetArgs``, ``traveller_rl.rllib.Args``,
    the recipes' options): ``learning_rate``, ``n_epochs``, ``gamma``, ``gae_lambda``,
    ``ent_coef``, ``net_arch`` (hidden layer sizes, ``"64,64"``), and beside them
    ``clip_coef``, ``vf_coef``, ``max_grad_norm``. A trainer whose ``--flag`` has another name
    keeps it (``--lr``, ``--epochs``, ``--hidden``, ``--num-epochs``, ``--entropy-coeff``)
    through ``flag_field``."""

    seed: int = 1
    """seed of everything: Python, NumPy, torch, the environments"""
    total_timesteps: int = 300_000
    """learner decisions to train for"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    n_steps: int = 512
    """rollout length per environment"""
    batch_size: int = 256
    """minibatch size"""
    n_epochs: int = 10
    """PPO epochs per rollout"""
    gamma: float = 1.0
    """discount"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    ent_coef: float = 0.01
    """entropy bonus"""
    net_arch: str = "64,64"
    """hidden layer sizes of policy and value networks"""
    torch_threads: int = 1
    """torch CPU threads (1 is fastest for these small networks on 2 cores)"""
    runs_dir: str = "runs"
    """where run folders go"""
    tags: list[str] = dataclasses.field(default_factory=list)
    """free-form tags stored in config.json"""


def seed_everything(seed: int, torch_threads: int = 1) -> None:
    """The one seeding block: Python, NumPy and torch (and torch's thread count)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)


def make_model(args: PPOArgs, venv: Any, run_dir: Path) -> Any:
    """A MaskablePPO model for ``venv`` from ``args``, logging to TensorBoard in the run."""
    from sb3_contrib import MaskablePPO

    return MaskablePPO(
        "MlpPolicy", venv, learning_rate=args.learning_rate, n_steps=args.n_steps,
        batch_size=args.batch_size, n_epochs=args.n_epochs, gamma=args.gamma,
        gae_lambda=args.gae_lambda, ent_coef=args.ent_coef, seed=args.seed, verbose=0,
        policy_kwargs={"net_arch": [int(x) for x in args.net_arch.split(",") if x]},
        tensorboard_log=str(Path(run_dir) / "tb"))


def _field_docs(cls: type) -> dict[str, str]:
    """The string literal under each dataclass field (CleanRL's per-field docstrings)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # subclasses override their bases' docs
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(inspect.getsource(klass)).body[0].body
        for node, nxt in itertools.pairwise(body):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                docs[node.target.id] = nxt.value.value.strip()
    return docs


def short_help(doc: str, limit: int = 120) -> str:
    """The first clause of a field's docstring, for ``--help``: up to its first sentence end
    (". " before a capital), semicolon or (past the first 30 characters) colon outside
    parentheses, at most ``limit`` characters."""
    text = " ".join(doc.split())
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        rest = text[i + 1:i + 3]
        if depth == 0 and (ch == ";" or (ch == "." and rest[:1] == " " and rest[1:].isupper())
                           or (ch == ":" and i >= 30 and rest[:1] == " ")):
            text = text[:i]
            break
    return text if len(text) <= limit else text[:limit - 4].rsplit(" ", 1)[0] + " ..."


def _default_text(default: Any) -> str:
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, list):
        return " ".join(map(str, default)) or "none"
    return repr(default) if isinstance(default, str) else str(default)


def add_field_argument(target: Any, f: dataclasses.Field, doc: str, dest: str,
                       short: bool = False) -> None:
    """Add the ``--flag`` of the dataclass field ``f`` (``field_flag``) to ``target`` (a
    parser or an argument group), stored in ``dest``, with ``doc`` as help and its default
    shown once (a docstring that already names its default keeps its own words). ``short``
    keeps only the first clause of ``doc`` (``short_help``). A flag named ``seed`` takes a seed
    in [0, 2**64 - 1] (``traveller_rl.commandline.seed_type``)."""
    from traveller_rl.commandline import seed_type

    flag = "--" + field_flag(f).replace("_", "-")
    default = (f.default if f.default is not dataclasses.MISSING
               else f.default_factory())  # type: ignore[misc]
    doc = short_help(doc) if short else doc
    help_text = (doc if "default" in doc.lower()
                 else f"{doc} (default: {_default_text(default)})").replace("%", "%%")
    if isinstance(default, bool):
        target.add_argument(flag, dest=dest, default=default,
                            action=argparse.BooleanOptionalAction, help=help_text)
    elif isinstance(default, list):
        target.add_argument(flag, dest=dest, default=default, nargs="*", help=help_text)
    else:
        kind = seed_type if field_flag(f) == "seed" and isinstance(default, int) else type(default)
        metavar = {int: "N", float: "X"}.get(type(default))
        target.add_argument(flag, dest=dest, default=default, type=kind, help=help_text,
                            metavar=metavar)


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type,
                       groups: dict[str, tuple[str, ...]] | None = None,
                       short: bool = False) -> None:
    """Add one ``--flag`` per field of the ``Args`` dataclass (``add_field_argument``: its
    docstring as help, the parsed value under the field's name).

    ``groups`` (title -> field names) puts the flags in argparse argument groups, in that
    order; fields in no group go under "other options"."""
    docs = _field_docs(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    where: dict[str, Any] = {}
    for title, names in (groups or {}).items():
        group = parser.add_argument_group(title)
        for name in names:
            if name in fields:
                where.setdefault(name, group)
    rest = [name for name in fields if name not in where]
    if groups and rest:
        other = parser.add_argument_group("other options")
        where.update(dict.fromkeys(rest, other))
    for name, f in fields.items():
        add_field_argument(where.get(name, parser), f, docs.get(name, ""), name, short)


def make_run_dir(runs_dir: str | Path, exp_name: str, seed: int) -> Path:
    """``runs/<exp>__<seed>__<unix time>``, created (the run name carries the seed)."""
    run = Path(runs_dir) / f"{exp_name}__{seed}__{int(time.time())}"
    run.mkdir(parents=True, exist_ok=False)
    return run


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash never leaves a truncated file in its place:
    write a temporary file in the same folder, flush it to disk, then rename over."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual mode (0644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def versions() -> dict[str, str]:
    """Versions of the packages a run depends on."""
    import importlib.metadata as md

    out = {}
    for pkg in ("traveller-tactics", "gymnasium", "pettingzoo", "stable-baselines3",
                "sb3-contrib", "torch", "numpy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def hidden_sizes(text: str) -> list[int]:
    """``"64,64"`` -> ``[64, 64]`` (``ValueError`` naming ``--hidden`` otherwise)."""
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--hidden must be positive layer sizes separated by commas, got "
                         f"{text!r}")
    return sizes


def hidden_sizes_arg(text: str) -> list[int]:
    """argparse ``type`` of a ``--hidden`` flag: ``hidden_sizes`` with argparse's message."""
    try:
        return hidden_sizes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--hidden ")) from None


def check_minimums(values: tuple[tuple[str, float, float], ...]) -> None:
    """``ValueError`` naming the first ``(flag, value, lowest allowed)`` whose value is below
    its lowest allowed one."""
    for flag, value, low in values:
        if value < low:
            raise ValueError(f"{flag} must be at least {low}, got {value}")


def result_command(module: str, checkpoint: Path | None, training: str, evaluation: str) -> str:
    """The command that reruns a result script's evaluation: ``--checkpoint`` when it
    evaluated one, else its ``training`` flags, then its ``evaluation`` flags."""
    import shlex

    head = f"--checkpoint {shlex.quote(str(checkpoint))}" if checkpoint else training
    return f"python -m {module} {head} {evaluation}"


def checkpoint_provenance(checkpoint: Path) -> dict[str, Any]:
    """Where a ``train_ppo`` checkpoint came from, for a result file that evaluates it: its
    own bookkeeping (scenario, update, decisions, seed, hidden sizes, move view) and, when it
    still sits in its run folder (``DIR/ppo.pt`` or ``DIR/pool/ppo_uNNNNNN.pt``), the run's
    flags (``config.json``) and training seconds at that update (``training.jsonl``). A copied
    checkpoint gets only its own bookkeeping (``run`` is then None). A run started with
    ``--init`` counts only its own seconds: follow ``run.args.init`` for the rest."""
    from traveller_agents.checkpoint import arch_of, imitation_of, read_checkpoint

    checkpoint = Path(checkpoint)
    data = read_checkpoint(checkpoint)
    info: dict[str, Any] = {k: data.get(k) for k in ("scenario", "update", "decisions", "seed",
                                                      "hidden")}
    info["move_view"] = bool(data.get("move_view", False))
    arch = arch_of(data)
    if arch == "ensemble":  # several checkpoints played as one: each one's record
        info["arch"], info["members"] = "ensemble", data["members"]
    elif arch == "by_side":  # one checkpoint per side: each side's record
        info["arch"], info["sides"] = "by_side", data["sides"]
    elif arch != "mlp":  # the actor architecture, when not the MLP
        info["arch"], info["embed"] = data["arch"], data.get("embed")
        for key in ("critic_arch", "attention"):  # recorded only when not the default
            if data.get(key):
                info[key] = data[key]
    for view in ("aim_view", "attack_view"):
        if data.get(view):
            info[view] = True
    info.update(imitation_of(data))  # it descends from a behaviour-cloning start, if so
    folder = checkpoint.parent.parent if checkpoint.parent.name == "pool" else checkpoint.parent
    config = folder / "config.json"
    run: dict[str, Any] | None = None
    if config.is_file():
        run = {"folder": str(folder), "args": json.loads(config.read_text()).get("args")}
        log = folder / "training.jsonl"
        if log.is_file() and info["update"] is not None:
            rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            done = [r for r in rows if r.get("update", 0) <= info["update"]]
            run["seconds"] = done[-1].get("seconds") if done else None
    info["run"] = run
    return info


def write_json(path: Path, payload: dict, with_versions: bool = False) -> None:
    """Write JSON atomically (with package versions when asked)."""
    if with_versions:
        payload = {**payload, "versions": versions()}
    atomic_write_bytes(Path(path), (json.dumps(payload, indent=2, default=str) + "\n").encode())


def atomic_save_model(model: Any, path: Path, scenario: str, **extra: Any) -> None:
    """Save an SB3 model atomically, with the scenario it was trained for recorded beside it
    (``<model>.meta.json``: scenario, spaces, and ``extra`` such as ``assist``/``focus``) so
    the loader can rebuild it and explain a mismatch."""
    import io

    buf = io.BytesIO()
    model.save(buf)
    atomic_write_bytes(Path(path), buf.getvalue())
    meta = {"scenario": scenario, "observation_shape": list(model.observation_space.shape),
            "n_actions": int(model.action_space.n), **extra}
    write_json(Path(path).with_suffix(".meta.json"), meta)


def learning_curve(monitor_csv: Path, png: Path, title: str, window: int = 200) -> None:
    """Plot episode return against timesteps from a ``VecMonitor`` CSV (rolling mean)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = []
    with open(monitor_csv) as fh:
        for line in fh:
            if line.startswith("#") or line.startswith("r,"):
                continue
            r, length, _t = line.strip().split(",")[:3]
            rows.append((float(r), int(length)))
    if not rows:
        return
    returns = np.array([r for r, _ in rows])
    steps = np.cumsum([n for _, n in rows])
    w = max(1, min(window, len(returns) // 5 or 1))
    smooth = np.convolve(returns, np.ones(w) / w, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, returns, ".", alpha=0.08, ms=2, label="episode return")
    ax.plot(steps[w - 1:], smooth, lw=2, label=f"rolling mean ({w} episodes)")
    ax.set_xlabel("environment steps (all training envs)")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    tmp = Path(png).with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, png)


class PoolCheckpointCallback:
    """Self-play pool: save the learning policy every ``every`` steps into ``pool_dir``."""

    def __new__(cls, pool_dir: Path, every: int, targets: str = "relative"):
        from stable_baselines3.common.callbacks import BaseCallback

        class _Callback(BaseCallback):
            def __init__(self) -> None:
                super().__init__()
                self.next_save = every

            def _on_step(self) -> bool:
                if self.num_timesteps >= self.next_save:
                    self.next_save += every
                    atomic_save_model(self.model, Path(pool_dir) /
                                      f"ckpt_{self.num_timesteps:09d}.zip", scenario="duel",
                                      action_targets=targets)
                return True

        return _Callback()


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


def _one_torch_thread() -> None:
    """A worker process's start: trained policies get one torch thread each."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass


def run_chunks(worker: Callable[[Any], list], chunks: Sequence[Any], workers: int = 1, *,
               progress: bool = False, total: int | None = None, initial: int = 0,
               ordered: bool = False) -> Iterator[list]:
    """``worker(chunk)`` for each chunk: in this process (``workers <= 1``, in order) or in
    ``workers`` spawned processes (each with one torch thread; ``worker`` must be importable by
    its qualified name), yielded in chunk order when ``ordered``, else as each finishes. With
    ``progress``, a bar counts the items of the parts returned, out of ``total``, starting at
    ``initial`` (items already done elsewhere). Tournaments and the benchmark play here."""
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=initial, unit="battle", smoothing=0.05)
    try:
        if workers <= 1:
            parts: Iterator[list] = (worker(chunk) for chunk in chunks)
            for part in parts:
                if bar is not None:
                    bar.update(len(part))
                yield part
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                 initializer=_one_torch_thread) as pool:
            if ordered:
                finished: Iterator[list] = pool.map(worker, chunks)
            else:
                futures = [pool.submit(worker, chunk) for chunk in chunks]
                finished = (fut.result() for fut in as_completed(futures))
            for part in finished:
                if bar is not None:
                    bar.update(len(part))
                yield part
    finally:
        if bar is not None:
            bar.close()
