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
  (``--overlap``), on the CPU and, where torch sees one, on the GPU (``--device cuda``);
* **data-parallel training**: ``duel`` against ``rush`` as one plain process and under
  ``torchrun`` with 2 and 4 processes sharing the cores (``bench_distributed.timed_run``);
* **RLlib on the core**: ``squad`` against ``rush``, sampling and training decisions per second
  with 1, half the cores' and all but one core's env runners, beside the AEC path's on one
  runner (``bench_rllib.measure``; skipped without Ray RLlib).

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

#: What the script measures, in order (``--parts``).
PARTS = ("vector", "train", "distributed", "rllib")

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
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="what to measure, comma-separated (default: %(default)s)")
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
                 "train_envs": 32, "train_steps": 8, "train_decisions": 256,
                 "distributed_decisions": 1024, "distributed_envs": 8,
                 "rllib_batch": 256, "rllib_sample_steps": 256}
        cores = min(cores, 2)
    else:
        sizes = {"vector_envs": 4096, "vector_decisions": 40_960, "repeats": args.repeats,
                 "train_envs": 1024, "train_steps": 32, "train_decisions": 196_608,
                 "distributed_decisions": 262_144, "distributed_envs": 256,
                 "rllib_batch": 4000, "rllib_sample_steps": 8000}
    devices = (["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
               if args.devices == "auto" else [d.strip() for d in args.devices.split(",")])
    if not set(devices) <= {"cpu", "cuda"}:
        build_parser().error(f"--devices {args.devices}: 'auto' or a comma-separated list of "
                             "cpu and cuda")
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if not parts or set(parts) - set(PARTS):
        build_parser().error(f"--parts {args.parts}: a comma-separated list of "
                             f"{', '.join(PARTS)}")
    counts = thread_counts(cores)
    result: dict[str, Any] = {"machine": machine(), "sizes": sizes, "thread_counts": counts,
                              "vector": {}, "train": [], "complete": False}
    write_json(args.json, result)
    for scenario, opponent in VECTOR_CASES.items() if "vector" in parts else ():
        s = thread_scaling(scenario, opponent, sizes["vector_envs"], sizes["vector_decisions"],
                           counts, sizes["repeats"])
        result["vector"][scenario] = s
        write_json(args.json, result)
        print(f"vector {scenario} vs {opponent} N={sizes['vector_envs']}: " + ", ".join(
            f"{k}: {s['decisions_per_s'][str(k)]:,.0f}/s "
            f"({s['fraction_of_linear'][str(k)]:.0%})" for k in counts)
            + f"; Python outside the core {s['python_share']:.1%} of a one-thread step",
            flush=True)
    for device in devices if "train" in parts else ():
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
    if "distributed" in parts:
        result["distributed"] = distributed_figures(cores, sizes, args.json, result)
    if "rllib" in parts:
        result["rllib"] = rllib_figures(cores, sizes, args.json, result)
    result["complete"] = True
    write_json(args.json, result)
    print(f"wrote {args.json}")
    return 0


def distributed_figures(cores: int, sizes: dict, out: Path, result: dict) -> list[dict]:
    """``train ppo`` duel against ``rush``: one plain process, then ``torchrun`` with 2 and 4
    processes (as many as the cores allow), the cores split between them."""
    from experiments.bench_distributed import timed_run
    from traveller_rl.common import write_json

    rows: list[dict] = result.setdefault("distributed", [])
    for procs in [0, *[p for p in (2, 4) if p <= cores]]:
        try:
            row = timed_run(procs, sizes["distributed_decisions"], sizes["distributed_envs"],
                            seed=1, cores=cores)
        except Exception as exc:  # one run on borrowed hardware: record, go on
            row = {"processes": procs or 1, "torchrun": procs > 0,
                   "error": f"{type(exc).__name__}: {exc}"}
            print(f"train ppo on {procs or 1} process(es): failed: {row['error']}", flush=True)
        else:
            print(f"train ppo duel vs rush, {'torchrun x' + str(procs) if procs else 'plain'}"
                  f": {row['decisions_per_second']:,} decisions/s", flush=True)
        rows.append(row)
        write_json(out, result)
    return rows


def rllib_runner_counts(cores: int) -> list[int]:
    """1, half the cores and all but one core (the driver's), without repeats."""
    return sorted({1, max(1, cores // 2), max(1, cores - 1)})


def rllib_figures(cores: int, sizes: dict, out: Path, result: dict) -> list[dict]:
    """RLlib PPO on squad against ``rush``: the core path with several env-runner counts,
    the AEC path with one runner as the reference (``bench_rllib.measure``)."""
    from traveller_rl.common import write_json

    rows: list[dict] = result.setdefault("rllib", [])
    try:
        import ray

        from experiments.bench_rllib import measure
        from traveller_rl.rllib import start_ray
    except ImportError as exc:
        rows.append({"error": f"not measured: {exc}"})
        write_json(out, result)
        return rows
    counts = rllib_runner_counts(cores)
    plan = [("aec", 1), *[("core", n) for n in counts]]
    try:
        start_ray("", max(counts))
    except Exception as exc:  # one run on borrowed hardware: record, go on
        rows.append({"error": f"Ray did not start: {type(exc).__name__}: {exc}"})
        write_json(out, result)
        return rows
    try:
        for env, runners in plan:
            bench = argparse.Namespace(scenario="squad", num_envs_per_env_runner=0, seed=1,
                                       rounds=1, train_batch_size=sizes["rllib_batch"],
                                       sample_steps=sizes["rllib_sample_steps"] * runners)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    row = measure(env, runners, bench)
            except Exception as exc:  # one run on borrowed hardware: record, go on
                row = {"env": env, "env_runners": runners,
                       "error": f"{type(exc).__name__}: {exc}"}
                print(f"rllib {env} x{runners}: failed: {row['error']}", flush=True)
            else:
                aec = next((r for r in rows if r.get("env") == "aec" and "error" not in r),
                           None)
                if aec is not None:
                    row["sample_x_aec_one_runner"] = (row["sample_steps_per_s"]
                                                      / aec["sample_steps_per_s"])
                print(f"rllib {env} squad vs rush, {runners} env runner(s): "
                      f"{row['sample_steps_per_s']:,.0f} sampled, "
                      f"{row['train_steps_per_s']:,.0f} trained decisions/s", flush=True)
            rows.append(row)
            write_json(out, result)
    finally:
        ray.shutdown()
    return rows


def train_configs(cores: int) -> list[tuple[int, int, int, bool]]:
    """(battle threads, torch threads choosing actions, torch threads in the update,
    ``--overlap``): one thread; every core for the battles and the update; every core for
    the inference too; and the second with battles and inference overlapped."""
    return list(dict.fromkeys([(1, 1, 1, False), (cores, 1, cores, False),
                               (cores, cores, cores, False), (cores, 1, cores, True)]))


if __name__ == "__main__":
    raise SystemExit(main())
