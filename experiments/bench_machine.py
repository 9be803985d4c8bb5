"""The trainer on the whole machine, measured in one call: one JSON with

* **vector scaling**: the core vector (``backend="core"``) with its opponents inside (``duel``
  against ``rush``, ``squad`` against ``tactician``), random legal actions, stepped with 1, 2,
  4, ... threads up to every available core (wall-clock, thread counts alternating, the median
  of ``--repeats`` rounds), in decisions per second and as a fraction of linear scaling from
  one thread (``bench_vector.thread_scaling``);
* **training end to end**: ``traveller train ppo --scenario squad --opponents red=tactician``
  (``bench_train.train_ppo_figures``: the trainer's own decisions per second and its shares of
  battles, inference and updates) on one thread (``--env-threads 1 --threads 1
  --update-threads 1``), with every core for the battles and the update (``--env-threads N
  --threads 1 --update-threads N``, the trainer's default on N cores up to 8) and with every
  core for inference too (``--threads N``), and with battles and inference overlapped
  (``--overlap``), on the CPU and, where torch sees one, on the GPU (``--device cuda``).

The JSON is rewritten (atomically) after every figure (``complete`` is false until the end),
and a training configuration that fails is recorded with its error and the rest still run:
the script is meant to run once on borrowed hardware.

::

    python -m experiments.bench_machine --json runs/bench_machine.json
    python -m experiments.bench_machine --small --json /tmp/machine.json   # a quick pass

``--small`` runs tiny sizes (a smoke test of the script, not figures). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
from pathlib import Path
from typing import Any

#: The two vector cases: scenario -> the opponent playing red inside the core.
VECTOR_CASES = {"duel": "rush", "squad": "tactician"}


def thread_counts(cores: int) -> list[int]:
    """1, 2, 4, ... below ``cores``, then ``cores`` itself."""
    counts, k = [], 1
    while k < cores:
        counts.append(k)
        k *= 2
    return [*counts, cores]


def machine() -> dict[str, Any]:
    """What the figures were taken on."""
    import torch

    from traveller_rl.ppo.rows import available_cores

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"python": platform.python_version(), "torch": torch.__version__,
            "processor": platform.processor() or platform.machine(),
            "cores_available": available_cores(), "gpu": gpu}


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("runs/bench_machine.json"),
                        help="where to write the results (default: %(default)s)")
    parser.add_argument("--small", action="store_true",
                        help="tiny sizes: a quick pass that checks the script runs")
    parser.add_argument("--max-threads", type=int, default=0,
                        help="the most threads measured (0: every available core)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="alternating rounds of the vector scaling (default: %(default)s)")
    parser.add_argument("--devices", default="auto",
                        help="learner devices of the training runs, comma-separated ('auto': "
                        "cpu, and cuda where torch sees a GPU)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Measure everything, print a line per figure, write the JSON."""
    import torch

    from experiments.bench_train import train_ppo_figures
    from experiments.bench_vector import thread_scaling
    from traveller_rl.common import write_json
    from traveller_rl.ppo.rows import available_cores

    args = build_parser().parse_args(argv)
    cores = args.max_threads or available_cores()
    if args.small:
        sizes = {"vector_envs": 64, "vector_decisions": 640, "repeats": 1,
                 "train_envs": 32, "train_steps": 8, "train_decisions": 256}
        cores = min(cores, 2)
    else:
        sizes = {"vector_envs": 4096, "vector_decisions": 40_960, "repeats": args.repeats,
                 "train_envs": 1024, "train_steps": 32, "train_decisions": 196_608}
    devices = (["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
               if args.devices == "auto" else [d.strip() for d in args.devices.split(",")])
    if not set(devices) <= {"cpu", "cuda"}:
        build_parser().error(f"--devices {args.devices}: 'auto' or a comma-separated list of "
                             "cpu and cuda")
    counts = thread_counts(cores)
    result: dict[str, Any] = {"machine": machine(), "sizes": sizes, "thread_counts": counts,
                              "vector": {}, "train": [], "complete": False}
    write_json(args.json, result)
    for scenario, opponent in VECTOR_CASES.items():
        s = thread_scaling(scenario, opponent, sizes["vector_envs"], sizes["vector_decisions"],
                           counts, sizes["repeats"])
        result["vector"][scenario] = s
        write_json(args.json, result)
        print(f"vector {scenario} vs {opponent} N={sizes['vector_envs']}: " + ", ".join(
            f"{k}: {s['decisions_per_s'][str(k)]:,.0f}/s "
            f"({s['fraction_of_linear'][str(k)]:.0%})" for k in counts)
            + f"; Python outside the core {s['python_share']:.1%} of a one-thread step",
            flush=True)
    for device in devices:
        for k, choose, learn, overlap in train_configs(cores):
            config = {"env_threads": k, "threads": choose, "update_threads": learn,
                      "device": device, "overlap": overlap}
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    row = train_ppo_figures("squad", "core", sizes["train_decisions"],
                                            sizes["train_envs"], sizes["train_steps"],
                                            threads=choose, env_threads=k, device=device,
                                            opponents="red=tactician", update_threads=learn,
                                            overlap=overlap)
            except Exception as exc:  # one run on borrowed hardware: record, go on
                result["train"].append({**config, "error": f"{type(exc).__name__}: {exc}"})
                write_json(args.json, result)
                print(f"train ppo {config}: failed: {type(exc).__name__}: {exc}", flush=True)
                continue
            result["train"].append({**row, "overlap": overlap})
            write_json(args.json, result)
            print(f"train ppo squad vs tactician, {k} battle thread(s), torch {choose} "
                  f"choosing / {learn} updating{', overlapped' if overlap else ''}, "
                  f"{row['device']}: {row['decisions_per_second']:,.0f} decisions/s (battles "
                  f"{row['env_share']:.0%}, inference {row['inference_share']:.0%}, updates "
                  f"{row['update_share']:.0%})", flush=True)
    result["complete"] = True
    write_json(args.json, result)
    print(f"wrote {args.json}")
    return 0


def train_configs(cores: int) -> list[tuple[int, int, int, bool]]:
    """(battle threads, torch threads choosing actions, torch threads in the update,
    ``--overlap``): one thread; every core for the battles and the update; every core for
    the inference too; and the second with battles and inference overlapped."""
    return list(dict.fromkeys([(1, 1, 1, False), (cores, 1, cores, False),
                               (cores, cores, cores, False), (cores, 1, cores, True)]))


if __name__ == "__main__":
    raise SystemExit(main())
