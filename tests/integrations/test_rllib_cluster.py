"""RLlib on a real two-node Ray cluster: a head node and a worker node started as separate
``ray start`` processes on this machine (each its own ports and temp dir, token
authentication), the env runner placed on the worker node by a custom resource, a short
training run on the core path that learns (duel against ``random``: the mean episode return
rises), and both nodes torn down whatever happens.

Starting two nodes takes minutes on a busy machine, so ``make test`` skips this file;
``make test-cluster`` runs it (``TRAVELLER_TEST_CLUSTER=1``). The nodes are stopped by
killing the process groups this test started, never with ``ray stop`` (which stops every
Ray instance on the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import traveller_env

pytest.importorskip("ray.rllib")
if os.environ.get("TRAVELLER_TEST_CLUSTER") != "1":
    pytest.skip("the two-node Ray cluster test runs with make test-cluster "
                "(TRAVELLER_TEST_CLUSTER=1)", allow_module_level=True)
if not traveller_env.core.available():  # pragma: no cover - the core is built by `make`
    pytest.skip("the compiled core is not built (make build)", allow_module_level=True)

RAY = str(Path(sys.executable).parent / "ray")
START_TIMEOUT_S = 300


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free at this moment."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


#: The ports a node opens (its ``ray start`` flags), besides the head's own.
NODE_PORTS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
              "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port")
HEAD_PORTS = ("--port", "--ray-client-server-port")


def port_flags(ports: list[int]) -> tuple[list[str], list[str], int]:
    """The head's and the worker's port flags from distinct free ``ports``, and the head's
    port."""
    it = iter(ports)
    head = [f"{flag}={next(it)}" for flag in HEAD_PORTS + NODE_PORTS]
    worker = [f"{flag}={next(it)}" for flag in NODE_PORTS]
    return head, worker, int(head[0].split("=")[1])


def start_node(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    """``ray start --block ...`` in a new process group (its raylet and workers with it)."""
    with log.open("w") as fh:
        return subprocess.Popen([RAY, "start", "--block", "--disable-usage-stats",
                                 "--object-store-memory", str(80 * 2**20), *args],
                                env=env, stdout=fh, stderr=subprocess.STDOUT,
                                process_group=0)


def stop_node(proc: subprocess.Popen) -> None:
    """SIGTERM to the node's process group, SIGKILL after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            time.sleep(1)  # let the group's other processes go
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # what outlived its ray start
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def two_nodes(monkeypatch) -> Iterator[str]:
    """A head (``head_node`` resource) and a worker (``worker_node``) node, 1 CPU each, token
    authentication with a fresh token; yields the head's address."""
    from ray._raylet import AuthenticationTokenLoader, Config

    token = secrets.token_hex(32)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token,
           "RAY_USAGE_STATS_ENABLED": "0", "OMP_NUM_THREADS": "1"}
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_USAGE_STATS_ENABLED"):
        monkeypatch.setenv(key, env[key])
    Config.initialize("")  # this process (the driver) reads the mode and token again
    AuthenticationTokenLoader.instance().reset_cache()
    dirs = [Path(tempfile.mkdtemp(prefix="rayc", dir="/tmp")) for _ in range(2)]
    head_ports, worker_ports, port = port_flags(
        free_ports(len(HEAD_PORTS) + 2 * len(NODE_PORTS)))
    address = f"127.0.0.1:{port}"
    nodes: list[subprocess.Popen] = []
    try:
        nodes.append(start_node(["--head", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                                 "--resources", json.dumps({"head_node": 1}),
                                 "--include-dashboard=false", f"--temp-dir={dirs[0]}",
                                 *head_ports], env, dirs[0] / "head.log"))
        wait_for_nodes(address, 1, nodes)
        nodes.append(start_node([f"--address={address}", "--node-ip-address=127.0.0.1",
                                 "--num-cpus=1", "--resources", json.dumps({"worker_node": 1}),
                                 f"--temp-dir={dirs[1]}", *worker_ports],
                                env, dirs[1] / "worker.log"))
        wait_for_nodes(address, 2, nodes)
        yield address
    finally:
        import ray

        ray.shutdown()
        for proc in reversed(nodes):
            stop_node(proc)
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        monkeypatch.undo()
        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()


def wait_for_nodes(address: str, count: int, procs: list[subprocess.Popen]) -> None:
    """Poll the cluster (from a short-lived driver) until ``count`` nodes are alive."""
    import ray

    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        dead = [p for p in procs if p.poll() is not None]
        assert not dead, f"ray start exited with status {dead[0].returncode}"
        host, port = address.split(":")
        with socket.socket() as s:
            s.settimeout(2)
            if s.connect_ex((host, int(port))):  # the head's GCS is not listening yet
                time.sleep(2)
                continue
        try:
            ray.init(address=address, log_to_driver=False)
            alive = sum(n["Alive"] for n in ray.nodes())
        except (ConnectionError, RuntimeError):
            alive = 0
        finally:
            ray.shutdown()
        if alive >= count:
            return
        time.sleep(2)
    raise TimeoutError(f"{count} Ray node(s) not up at {address} after {START_TIMEOUT_S} s")


def test_training_on_a_two_node_cluster_places_runners_and_learns(two_nodes, tmp_path):
    import ray

    from traveller_rl.rllib import Args, build_config, prepare, start_ray, summary

    args = Args(scenario="duel", opponents="red=random", env="core", address=two_nodes,
                num_env_runners=1, env_runner_resources="worker_node=1", seed=5,
                train_batch_size=2000, eval_battles=0, out=str(tmp_path / "run"))
    env_config, plan, probe = prepare(args)
    config = build_config(args, env_config, plan, probe.single_observation_space,
                          probe.single_action_space)
    assert not start_ray(args.address, args.num_env_runners)  # joined, not started
    nodes = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
    assert len(nodes) == 2
    worker = next(i for i, r in nodes.items() if "worker_node" in r)
    algo = config.build_algo()
    try:
        placed = algo.env_runner_group.foreach_env_runner(
            lambda runner: ray.get_runtime_context().get_node_id(), local_env_runner=False)
        assert placed == [worker]
        returns = [summary(algo.train(), plan)["episode_return_mean"] for _ in range(6)]
    finally:
        algo.stop()
    assert returns[-1] > returns[0] + 0.2, returns
