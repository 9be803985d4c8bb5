"""Decisions per second of an exported policy (``traveller_agents.onnx_policy.OnnxPolicy``,
onnxruntime on one thread) against the PyTorch policies of the same network, in the same run.

The policy: a squad actor, a tanh MLP 64x64 as ``traveller_rl/ppo/trainer.py`` builds by default
(random weights, seeded: the speed does not depend on what was learned; ``--policy`` takes a
real ``train_ppo`` ``.pt`` instead, an entity actor too, played in the scenario laid out by
its layout and with its views when it has them), written as a ``.pt``, exported with
``traveller export``'s code, and, when sb3-contrib is installed, the same-sized
``MaskablePPO`` ``.zip`` (untrained) as the SB3 training scripts save it. The decisions:
``--decisions`` (observation, mask, seat) recorded from random legal squad battles, replayed
to each policy in turn.

Figures (median over ``--repeats`` passes; onnxruntime with ``intra_op_num_threads=1``, torch
with ``torch.set_num_threads(1)``, so every figure is one core's):

* one decision at a time, as an NPC plays: the whole ``act()`` call (slot-relative mask
  translation, the forward pass, the action back to the seat's index) of ``OnnxPolicy``, of
  ``PPOPolicy`` (how a ``.pt`` plays: a NumPy float64 forward pass for an MLP actor, its
  PyTorch network for an entity actor or an ensemble) and of ``TrainedPolicy``
  (how a ``.zip`` plays: ``MaskablePPO.predict`` in PyTorch); plus the ONNX graph alone
  (``session.run`` on one prepared row) and the PyTorch network alone (``ActorCritic.logits``
  on one row);
* batched: ``OnnxPolicy.run`` and the PyTorch network on ``--batch`` rows at once.

The issue's target: at least 5,000 decisions/s per core for a squad policy with onnxruntime.

    python -m experiments.bench_onnx [--decisions 2000] [--repeats 5] [--json PATH]

Prints a Markdown table; writes JSON only with ``--json`` (the figures of docs/performance.md:
``--json results/bench_onnx.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TARGET", "build_parser", "main", "record_decisions", "run"]

#: Decisions per second per core the issue asks of an ONNX squad policy.
TARGET = 5_000


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m experiments.bench_onnx",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", default="squad", help="scenario (default: squad)")
    p.add_argument("--policy", type=Path, default=None, metavar="PT",
                   help="a train_ppo .pt to time (default: a 64x64 actor, random weights)")
    p.add_argument("--decisions", type=int, default=2000,
                   help="recorded decisions replayed per pass (default: 2000)")
    p.add_argument("--repeats", type=int, default=5, help="passes per figure (default: 5)")
    p.add_argument("--batch", type=int, nargs="+", default=[64, 1024],
                   help="batch sizes of the batched figures (default: 64 1024)")
    p.add_argument("--seed", type=int, default=0, help="battle and weight seed (default: 0)")
    p.add_argument("--no-sb3", action="store_true",
                   help="skip the MaskablePPO reference even when sb3-contrib is installed")
    p.add_argument("--json", type=Path, default=None, metavar="PATH",
                   help="also write the figures here (default: print only)")
    return p


def record_decisions(scenario: str, n: int, seed: int,
                     **env_kwargs: Any) -> tuple[Any, list[tuple]]:
    """``n`` decisions ``(observation, action mask, agent)`` of random legal battles of
    ``scenario`` (seeds ``seed``, ``seed + 1``, ...), and the environment that played them
    (policies translate masks with its ``relative_actions``, which depend on the seat only);
    ``env_kwargs``: the env's ``layout`` and views."""
    from traveller_env.env import TravellerEnv
    from traveller_rl.evaluation import random_decisions

    env = TravellerEnv(scenario, **env_kwargs)
    rows = [(o.copy(), m.copy(), agent) for agent, o, m in random_decisions(env, n, seed)]
    return env, rows


def _env_kwargs(policy: Path | None) -> dict[str, Any]:
    """The env a given checkpoint reads: its ``layout`` and views (none for the default
    policy)."""
    if policy is None:
        return {}
    from traveller_agents.checkpoint import read_checkpoint
    from traveller_agents.views import views_of

    data = read_checkpoint(policy)
    layout = {"layout": dict(data["layout"])} if data.get("layout") is not None else {}
    return {**layout, **{v: True for v, on in views_of(data).items() if on}}


def _rate(n: int, once: Callable[[], Any], repeats: int) -> dict[str, float]:
    """Decisions per second of ``once`` (which makes ``n`` decisions): the median pass, and
    the spread of passes."""
    once()  # warm-up
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        once()
        rates.append(n / (time.perf_counter() - t0))
    return {"decisions_per_s": round(statistics.median(rates)),
            "min": round(min(rates)), "max": round(max(rates))}


def _policies(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The checkpoint (given or made), its export, and the SB3 twin when available."""
    import torch

    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic
    from traveller_env.env import TravellerEnv
    from traveller_rl.onnx_export import export_onnx

    env = TravellerEnv(args.scenario)
    pt = args.policy
    if pt is None:
        torch.manual_seed(args.seed)
        net = ActorCritic(len(env.observation_labels), env.relative_actions.n, [64, 64])
        pt = folder / "policy.pt"
        pt.write_bytes(checkpoint_bytes(net, args.scenario, env.relative_actions.labels,
                                        seed=args.seed))
    out = folder / "policy.onnx"
    meta = export_onnx(pt, out, scenario=args.scenario)
    paths = {"pt": pt, "onnx": out, "hidden": json.loads(meta["hidden"])}
    if not args.no_sb3:
        try:
            from sb3_contrib import MaskablePPO
        except ImportError:
            return paths
        from traveller_env.integrations.sb3 import TravellerSB3Env

        bridge = TravellerSB3Env(args.scenario, learner="blue", relative_actions=True)
        model = MaskablePPO("MlpPolicy", bridge, seed=args.seed, device="cpu",
                            policy_kwargs={"net_arch": paths["hidden"]})
        zpath = folder / "policy.zip"
        model.save(zpath)
        zpath.with_suffix(".meta.json").write_text(json.dumps(
            {"scenario": args.scenario, "action_targets": "relative"}))
        paths["zip"] = zpath
    return paths


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure (see the module docstring)."""
    import torch

    from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
    from traveller_agents.onnx_policy import ACTION, ACTION_MASK, OBSERVATION, OnnxPolicy
    from traveller_agents.ppo_policy import load_ppo_policy
    from traveller_agents.trained import load_policy

    torch.set_num_threads(1)
    env, rows = record_decisions(args.scenario, args.decisions, args.seed,
                                 **_env_kwargs(args.policy))
    n = len(rows)
    rel = env.relative_actions
    obs = np.stack([o for o, _, _ in rows]).astype(np.float32)
    masks = np.stack([rel.mask(a, m) for _, m, a in rows]).astype(np.float32)
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = _policies(Path(tmp), args)
        pt = load_ppo_policy(paths["pt"], args.scenario)
        # an MLP .pt plays a NumPy float64 forward pass, any other actor its torch network
        pt_label = ("PPOPolicy.act (.pt: NumPy float64)" if pt.network is None
                    else "PPOPolicy.act (.pt: PyTorch)")
        players = {"OnnxPolicy.act (onnxruntime)": OnnxPolicy(paths["onnx"], args.scenario),
                   pt_label: pt}
        if "zip" in paths:
            players["TrainedPolicy.act (.zip: SB3 + PyTorch)"] = load_policy(paths["zip"],
                                                                            args.scenario)
        onnx_policy = players["OnnxPolicy.act (onnxruntime)"]
        for label, policy in players.items():
            def once(policy: Any = policy) -> None:
                for o, m, a in rows:
                    policy.act(o, m, a, env)

            figures[label] = {"mode": "act, one at a time", **_rate(n, once, args.repeats)}

        session = onnx_policy.session
        feeds = [{OBSERVATION: obs[i:i + 1], ACTION_MASK: masks[i:i + 1]} for i in range(n)]

        def graph_once() -> None:
            for feed in feeds:
                session.run([ACTION], feed)

        figures["ONNX graph alone (InferenceSession.run)"] = {"mode": "graph, one at a time",
                                                     **_rate(n, graph_once, args.repeats)}
        net = network_from_checkpoint(read_checkpoint(paths["pt"]))
        tobs, tmask = torch.as_tensor(obs), torch.as_tensor(masks > 0)

        def torch_once() -> None:
            with torch.no_grad():
                for i in range(n):
                    net.logits(tobs[i:i + 1], tmask[i:i + 1]).argmax(dim=-1)

        figures["PyTorch network alone (ActorCritic.logits)"] = {
            "mode": "graph, one at a time", **_rate(n, torch_once, args.repeats)}
        with torch.no_grad():
            want = net.logits(tobs, tmask).argmax(dim=-1).numpy()
        agree = int((onnx_policy.run(obs, masks)[1] == want).sum())
        for batch in args.batch:
            chunks = [(obs[i:i + batch], masks[i:i + batch]) for i in range(0, n, batch)]

            def onnx_batched(chunks: list = chunks) -> None:
                for o, m in chunks:
                    onnx_policy.run(o, m)

            def torch_batched(chunks: list = chunks) -> None:
                with torch.no_grad():
                    for o, m in chunks:
                        net.logits(torch.as_tensor(o), torch.as_tensor(m > 0)).argmax(dim=-1)

            figures[f"OnnxPolicy.run, batch {batch}"] = {
                "mode": f"batched ({batch})", **_rate(n, onnx_batched, args.repeats)}
            figures[f"PyTorch network, batch {batch}"] = {
                "mode": f"batched ({batch})", **_rate(n, torch_batched, args.repeats)}
    import onnxruntime

    npc = figures["OnnxPolicy.act (onnxruntime)"]["decisions_per_s"]
    return {
        "scenario": args.scenario, "policy": str(args.policy or "random 64x64 tanh MLP"),
        "hidden": paths["hidden"], "obs_dim": int(obs.shape[1]),
        "n_actions": int(masks.shape[1]), "decisions": n, "repeats": args.repeats,
        "seed": args.seed, "threads": 1, "onnx_agrees_with_pytorch": f"{agree}/{n}",
        "target_decisions_per_s": TARGET, "target_met": npc >= TARGET,
        "figures": figures,
        "machine": {"cpu_count": os.cpu_count(), "load_average": [round(x, 2) for x in
                                                                   os.getloadavg()],
                    "python": platform.python_version(), "onnxruntime": onnxruntime.__version__,
                    "torch": torch.__version__}}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run, print the table, and write the JSON when asked."""
    args = build_parser().parse_args(argv)
    if args.decisions < 1 or args.repeats < 1 or min(args.batch) < 1:
        raise SystemExit("bench_onnx: error: --decisions, --repeats and --batch must be >= 1")
    result = run(args)
    print(f"{result['scenario']}: {result['policy']} {result['hidden']}, observation "
          f"{result['obs_dim']}, {result['n_actions']} actions; {result['decisions']} "
          f"decisions x {result['repeats']} passes, one thread; load average "
          f"{result['machine']['load_average']}")
    print("| what | how | decisions/s (median) | min | max |")
    print("|---|---|---:|---:|---:|")
    for label, f in result["figures"].items():
        print(f"| {label} | {f['mode']} | {f['decisions_per_s']:,} | {f['min']:,} | "
              f"{f['max']:,} |")
    met = "met" if result["target_met"] else "MISSED"
    print(f"target {TARGET:,} decisions/s per core for OnnxPolicy.act: {met}; ONNX and PyTorch "
          f"argmax agree on {result['onnx_agrees_with_pytorch']} decisions")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
