"""The pieces of resumable runs (``traveller_rl.ppo.resume``): the checkpoint schedule, every
random generator saved and restored exactly, the configuration check, the atomic checkpoint file
(a full disk leaves the last good one intact; another format version is refused), the logs cut
back to a checkpoint's line counts, an unwritable ``--out`` refused early."""

from __future__ import annotations

import errno
import os
import random
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from traveller_rl.ppo import resume

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("text", "expected"), [
    ("10", (10, None)), ("90s", (None, 90.0)), ("5m", (None, 300.0)), ("2h", (None, 7200.0)),
    ("1.5m", (None, 90.0)), ("0", (None, None)), ("", (None, None))])
def test_checkpoint_every_reads_updates_or_time(text, expected):
    assert resume.parse_checkpoint_every(text) == expected


@pytest.mark.parametrize("text", ["ten", "5x", "-3", "0s", "m"])
def test_checkpoint_every_refuses_nonsense_naming_the_flag(text):
    with pytest.raises(ValueError, match="--checkpoint-every"):
        resume.parse_checkpoint_every(text)


def test_the_schedule_is_due_by_updates_or_by_time():
    by_updates = resume.CheckpointSchedule.parse("3", now=0.0)
    assert [by_updates.due(u, 0.0) for u in (1, 2, 3)] == [False, False, True]
    by_updates.written(3, 0.0)
    assert not by_updates.due(5, 1e9) and by_updates.due(6, 0.0)
    by_time = resume.CheckpointSchedule.parse("5m", now=100.0)
    assert not by_time.due(50, 399.0) and by_time.due(1, 400.0)
    assert not resume.CheckpointSchedule.parse("0", now=0.0).due(10**6, 1e9)


def _draws(rng, gen):
    return (rng.integers(0, 2**62, 4).tolist(), torch.rand(3).tolist(),
            torch.rand(3, generator=gen).tolist(), [random.random() for _ in range(3)])


def test_every_generator_continues_exactly_after_a_restore():
    rng = np.random.default_rng(5)
    gen = torch.Generator().manual_seed(9)
    torch.manual_seed(3)
    random.seed(4)
    _draws(rng, gen)
    states = resume.generator_states(rng, [gen])
    expected = _draws(rng, gen)
    rng2 = np.random.default_rng(999)
    gen2 = torch.Generator().manual_seed(1)
    torch.manual_seed(77)
    random.seed(78)
    resume.restore_generators(states, rng2, [gen2])
    assert _draws(rng2, gen2) == expected
    with pytest.raises(ValueError, match="torch generators"):
        resume.restore_generators(states, rng2, [])


def test_a_changed_flag_is_refused_naming_it_and_budgets_may_change():
    saved = {"lr": 3e-4, "seed": 1, "total_timesteps": 1000, "progress": True}
    resume.check_resumable_config(saved, {**saved, "total_timesteps": 5000, "progress": False})
    with pytest.raises(ValueError, match=r"--lr \(checkpoint: 0.0003, now: 0.001\)"):
        resume.check_resumable_config(saved, {**saved, "lr": 1e-3})
    with pytest.raises(ValueError, match="--seed"):
        resume.check_resumable_config(saved, {**saved, "seed": 2})


def test_a_checkpoint_from_before_update_threads_updated_on_threads():
    """Runs saved before --update-threads existed updated on --threads: they resume with
    --update-threads equal to it, and a different count is refused naming the flag."""
    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.trainer import check_resume

    old = Args(threads=1).flags()
    del old["update_threads"]
    check_resume(Args(threads=1, update_threads=1), {"args": old})
    with pytest.raises(ValueError, match=r"--update-threads \(checkpoint: 1, now: 0\)"):
        check_resume(Args(threads=1), {"args": old})


def test_checkpoints_round_trip_and_other_versions_are_refused(tmp_path):
    state = {"args": {"seed": 1}, "update": 7, "decisions": 9, "net": {}, "optimizer": {},
             "weights": torch.arange(5.0), "rows": b"\x00\x01",
             "array": np.arange(6, dtype=np.int16).reshape(2, 3), "scalar": np.float64(0.5),
             "random": random.getstate()}
    path = resume.write_checkpoint(tmp_path, state)
    back = resume.read_checkpoint(tmp_path)
    assert back["update"] == 7 and back["rows"] == b"\x00\x01"
    assert torch.equal(back["weights"], state["weights"])
    assert back["array"].dtype == np.int16 and back["array"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["scalar"] == 0.5 and back["random"] == state["random"]
    data = path.read_bytes()
    version = resume.CHECKPOINT_FORMAT
    path.write_bytes(data[:4] + (version + 1).to_bytes(2, "little") + data[6:])
    with pytest.raises(ValueError, match=f"format version {version + 1}; this version of "
                                         f"traveller reads version {version}"):
        resume.read_checkpoint(tmp_path)
    path.write_bytes(b"PK\x03\x04whatever")
    with pytest.raises(ValueError, match="not a resume checkpoint"):
        resume.read_checkpoint(tmp_path)
    with pytest.raises(ValueError, match="no resume checkpoint"):
        resume.read_checkpoint(tmp_path / "elsewhere")


class _Payload:
    """Unpickling this runs code: it writes the file ``target``."""

    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


def _crafted(folder, target):
    """A resume.ckpt with the right header whose payload, fully unpickled, writes ``target``."""
    import io
    import pickle

    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save({"args": {}, "payload": _Payload(target)}, buffer, pickle_module=pickle)
    (folder / resume.RESUME_FILE).write_bytes(
        resume.MAGIC + resume.CHECKPOINT_FORMAT.to_bytes(2, "little") + buffer.getvalue())


def test_a_crafted_checkpoint_is_refused_and_runs_no_code(tmp_path):
    target = tmp_path / "pwned"
    _crafted(tmp_path / "run", target)
    with pytest.raises(ValueError, match="does not verify"):
        resume.read_checkpoint(tmp_path / "run")
    assert not target.exists()


def test_a_damaged_checkpoint_is_refused_naming_the_file(tmp_path):
    state = {"args": {"seed": 1}, "update": 1, "decisions": 2, "net": {}, "optimizer": {}}
    path = resume.write_checkpoint(tmp_path, state)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ValueError, match=r"resume\.ckpt does not verify"):
        resume.read_checkpoint(tmp_path)
    resume.write_checkpoint(tmp_path, {"update": 1})
    with pytest.raises(ValueError, match="it lacks args, decisions, net, optimizer"):
        resume.read_checkpoint(tmp_path, resume.REQUIRED)


def test_a_full_disk_keeps_the_last_good_checkpoint_and_says_so(tmp_path, monkeypatch):
    resume.write_checkpoint(tmp_path, {"update": 1})
    good = (tmp_path / resume.RESUME_FILE).read_bytes()

    real_fdopen = os.fdopen

    class FullDisk:
        """A file that writes half of what it is given, then finds the disk full."""

        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            self.fh.write(data[:len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: FullDisk(real_fdopen(fd, mode)))
    with pytest.raises(resume.CheckpointWriteError,
                       match=r"ENOSPC.*the last good checkpoint, .* is intact"):
        resume.write_checkpoint(tmp_path, {"update": 2})
    monkeypatch.undo()
    assert (tmp_path / resume.RESUME_FILE).read_bytes() == good
    assert resume.read_checkpoint(tmp_path)["update"] == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no leftovers


def test_a_kill_during_a_checkpoint_write_leaves_the_previous_one(tmp_path):
    resume.write_checkpoint(tmp_path, {"update": 1, "blob": b"x" * 1000})
    script = textwrap.dedent(f"""
        import os, signal
        def killed(fd):
            os.kill(os.getpid(), signal.SIGKILL)  # mid-write: the temporary file is written
        os.fsync = killed
        from traveller_rl.ppo import resume
        resume.write_checkpoint({str(tmp_path)!r}, {{"update": 2, "blob": b"y" * 10**6}})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    assert resume.read_checkpoint(tmp_path)["update"] == 1


def test_logs_are_cut_back_to_the_checkpoints_line_counts(tmp_path):
    log = tmp_path / "training.jsonl"
    log.write_text('{"update": 1}\n{"update": 2}\n{"update": 3}\n{"upd')  # killed mid-line
    assert resume.count_lines(log) == 3
    resume.truncate_lines(log, 2)
    assert log.read_text() == '{"update": 1}\n{"update": 2}\n'
    resume.truncate_lines(log, 0)
    assert log.read_text() == ""
    with pytest.raises(ValueError, match="recorded 4 lines, the file holds 0"):
        resume.truncate_lines(log, 4)
    assert resume.count_lines(tmp_path / "missing.jsonl") == 0


def test_an_unwritable_out_is_refused_naming_the_flag(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ValueError, match=r"--out .*cannot be written"):
        resume.check_writable(blocker / "run")
    resume.check_writable(tmp_path / "fine")
    assert (tmp_path / "fine").is_dir() and not list((tmp_path / "fine").iterdir())


# ============================================================================ traveller train ppo
# A tiny run: 16 battles x 32 steps = 512 learner decisions per update, 6 updates.
RUN = ["--scenario", "duel", "--opponents", "red=rush", "--total-timesteps", "3072",
       "--seed", "3", "--num-envs", "16", "--num-steps", "32", "--eval-every", "2",
       "--eval-vs", "rush", "--eval-battles", "4", "--eval-envs", "4",
       "--final-eval-battles", "0", "--backend", "python", "--threads", "1", "--no-progress"]


def _train(flags):
    from traveller_rl.ppo.trainer import build_parser, run

    return run(build_parser().parse_args(flags))


def _updates(path):
    import json

    return [json.loads(line)["update"] for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("resume") / "whole"
    assert _train([*RUN, "--out", str(out)]) == 0
    return out


def _kill_at_a_random_moment(flags, out):
    """Start a run of ``flags`` in ``out`` in another process (a resume checkpoint every
    update) and SIGKILL it at a random moment after its first resume checkpoint: mid-rollout,
    mid-update or mid-write (or let it end, if it gets there first)."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "traveller_rl.ppo.trainer", *flags,
                             "--out", str(out), "--checkpoint-every", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while (time.monotonic() < deadline and proc.poll() is None
           and not (out / resume.RESUME_FILE).exists()):
        time.sleep(0.01)
    time.sleep(random.Random().uniform(0.0, 1.5))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr.read().decode()
    assert (out / resume.RESUME_FILE).exists()


def test_a_run_killed_at_a_random_moment_resumes_to_the_same_bytes(uninterrupted, tmp_path):
    """SIGKILL a run at a random moment after its first resume checkpoint; ``--resume``
    finishes it with the uninterrupted run's ``ppo.pt``, byte for byte, and its logs with no
    line lost or doubled."""
    out = tmp_path / "killed"
    _kill_at_a_random_moment(RUN, out)
    assert _train([*RUN, "--resume", str(out), "--checkpoint-every", "1"]) == 0
    assert (out / "ppo.pt").read_bytes() == (uninterrupted / "ppo.pt").read_bytes()
    assert _updates(out / "training.jsonl") == [1, 2, 3, 4, 5, 6]
    assert _updates(out / "progress.jsonl") == [0, 2, 4, 6]


def test_a_resumed_run_continues_a_stopped_one_exactly(uninterrupted, tmp_path):
    """A run stopped by ``--stop-after-updates`` (a budget: it may change on resume) resumes
    from its last checkpoint; the evaluations match the uninterrupted run's."""
    import json

    out = tmp_path / "stopped"
    assert _train([*RUN, "--out", str(out), "--checkpoint-every", "2",
                   "--stop-after-updates", "3"]) == 0
    assert _updates(out / "training.jsonl") == [1, 2, 3]
    assert _train([*RUN, "--resume", str(out)]) == 0
    assert (out / "ppo.pt").read_bytes() == (uninterrupted / "ppo.pt").read_bytes()

    def evals(folder):
        return [json.loads(line)["eval"] for line in
                (folder / "progress.jsonl").read_text().splitlines()]

    assert evals(out) == evals(uninterrupted)


@pytest.mark.parametrize(("flags", "message"), [
    (["--lr", "0.001"], r"--lr \(checkpoint: 0.00025, now: 0.001\)"),
    (["--overwrite"], "--resume and --overwrite"),
    (["--backend", "core"], r"--backend \(checkpoint: 'python', now: 'core'\)"),
    (["--update-threads", "2"], r"--update-threads \(checkpoint: 0, now: 2\)"),
])
def test_resume_refuses_what_it_cannot_continue_naming_the_flag(uninterrupted, tmp_path,
                                                                 flags, message, capsys):
    from traveller_env import vector
    from traveller_rl.ppo.trainer import main

    if "core" in flags and vector.BACKENDS["core"] != "available":
        pytest.skip("no compiled core here")
    out = tmp_path / "run"
    assert _train([*RUN, "--out", str(out), "--checkpoint-every", "2",
                   "--stop-after-updates", "3", "--eval-every", "0"]) == 0
    capsys.readouterr()
    assert main([*RUN, "--resume", str(out), *flags]) == 2
    assert re.search(message, capsys.readouterr().err)


# The same tiny run against a pool: own copies every update (PFSP draws), scripted rows and
# greedy draws.
POOL_RUN = [*[f for f in RUN if f not in ("--opponents", "red=rush")], "--pool",
            "--pool-every", "1", "--pool-sampling", "pfsp", "--pool-size", "3",
            "--pool-scripted", "rush", "--pool-scripted-share", "0.25",
            "--pool-greedy-share", "0.3"]


def _kill_resume_and_compare(flags, tmp_path):
    """Run ``flags`` whole, and again killed at a random moment after its first resume
    checkpoint and resumed: the same ``ppo.pt`` byte for byte, the same training log; returns
    both folders."""
    whole = tmp_path / "whole"
    assert _train([*flags, "--out", str(whole)]) == 0
    out = tmp_path / "killed"
    _kill_at_a_random_moment(flags, out)
    assert _train([*flags, "--resume", str(out), "--checkpoint-every", "1"]) == 0
    assert (out / "ppo.pt").read_bytes() == (whole / "ppo.pt").read_bytes()
    assert _updates(out / "training.jsonl") == _updates(whole / "training.jsonl")
    return whole, out


def test_a_pool_run_killed_at_a_random_moment_resumes_to_the_same_bytes(tmp_path):
    """The pool's members (their checkpoints in pool/), statistics, rows' draws and the draws'
    generators are in the resume checkpoint: a ``--pool`` run killed at a random moment and
    resumed ends with the uninterrupted run's ``ppo.pt`` and pool record."""
    import json

    whole, out = _kill_resume_and_compare(POOL_RUN, tmp_path)

    def pool_record(folder):
        return json.loads((folder / "evaluation.json").read_text())["pool"]

    assert pool_record(out) == pool_record(whole)


def test_a_missing_checkpoint_is_named(tmp_path, capsys):
    from traveller_rl.ppo.trainer import main

    (tmp_path / "empty").mkdir()
    assert main([*RUN, "--resume", str(tmp_path / "empty")]) == 2
    assert "no resume checkpoint" in capsys.readouterr().err


def test_a_core_backend_run_killed_at_a_random_moment_resumes_to_the_same_bytes(tmp_path):
    """The core backend's vectors snapshot too (``VecBattles.snapshot``): a run on the
    default backend against an in-core tactician, killed and resumed, ends with the
    uninterrupted run's ``ppo.pt``, byte for byte."""
    from traveller_env import vector

    if vector.BACKENDS["core"] != "available":
        pytest.skip("no compiled core here")
    flags = [f for f in RUN if f not in ("--backend", "python")]
    flags[flags.index("red=rush")] = "red=tactician"
    whole, _ = _kill_resume_and_compare([*flags, "--env-threads", "2"], tmp_path)
    # the battle threads may change on resume (a machine with other cores): the same bytes
    moved = tmp_path / "moved"
    assert _train([*flags, "--env-threads", "1", "--out", str(moved), "--checkpoint-every",
                   "2", "--stop-after-updates", "3"]) == 0
    assert _train([*flags, "--env-threads", "2", "--resume", str(moved)]) == 0
    assert (moved / "ppo.pt").read_bytes() == (whole / "ppo.pt").read_bytes()


# A tiny run on a distribution: every battle's scenario drawn from gen:squad seeds 0-9.
SET_RUN = ["--scenario", "gen:squad", "--layout", "6v6", "--scenario-seeds", "0-9",
           "--total-timesteps", "1536", "--seed", "3", "--num-envs", "8", "--num-steps", "32",
           "--eval-every", "3", "--eval-vs", "rush", "--eval-battles", "2", "--eval-envs", "2",
           "--final-eval-battles", "0", "--threads", "1", "--no-progress"]


@pytest.mark.parametrize(("backend", "opponent"), [("python", "rush"), ("core", "tactician")])
def test_a_run_on_a_distribution_killed_at_a_random_moment_resumes_to_the_same_bytes(
        tmp_path, backend, opponent):
    """Vectors over a scenario set snapshot too (each row's scenario with its battle): a
    ``--scenario gen:squad`` run killed at a random moment and resumed ends with the
    uninterrupted run's ``ppo.pt``, byte for byte, on either backend; so does one stopped
    after its third update and resumed from its second (the restore always runs)."""
    from traveller_env import vector

    if vector.BACKENDS[backend] != "available":
        pytest.skip("no compiled core here")
    flags = [*SET_RUN, "--backend", backend, "--opponents", f"red={opponent}"]
    whole, _ = _kill_resume_and_compare(flags, tmp_path)
    stopped = tmp_path / "stopped"
    assert _train([*flags, "--out", str(stopped), "--checkpoint-every", "2",
                   "--stop-after-updates", "3"]) == 0
    assert _train([*flags, "--resume", str(stopped)]) == 0
    assert (stopped / "ppo.pt").read_bytes() == (whole / "ppo.pt").read_bytes()
    assert _updates(stopped / "training.jsonl") == _updates(whole / "training.jsonl")


def test_a_run_killed_before_its_first_checkpoint_starts_again_from_its_config(uninterrupted,
                                                                              tmp_path):
    """At the default ``--checkpoint-every`` (a minute) a tiny run writes no resume checkpoint;
    SIGKILLed at a random moment, ``--resume`` trains it again from its config.json, to the
    uninterrupted run's ``ppo.pt``, byte for byte."""
    import signal
    import time

    out = tmp_path / "early"
    proc = subprocess.Popen([sys.executable, "-m", "traveller_rl.ppo.trainer", *RUN,
                             "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while (time.monotonic() < deadline and proc.poll() is None
           and not (out / "config.json").exists()):
        time.sleep(0.01)
    time.sleep(random.Random().uniform(0.0, 1.0))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / resume.RESUME_FILE).exists()
    assert _train([*RUN, "--resume", str(out)]) == 0
    assert (out / "ppo.pt").read_bytes() == (uninterrupted / "ppo.pt").read_bytes()
    assert _updates(out / "training.jsonl") == [1, 2, 3, 4, 5, 6]


def test_resume_of_a_crafted_checkpoint_exits_2_in_one_line_and_runs_no_code(tmp_path):
    """A resume.ckpt whose pickle would write a file: exit 2, one line naming the file, and
    the file is not written."""
    target = tmp_path / "written-by-the-checkpoint"
    _crafted(tmp_path / "run", target)
    proc = subprocess.run([sys.executable, "-m", "traveller_rl.ppo.trainer", *RUN,
                           "--resume", str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "resume.ckpt does not verify" in proc.stderr
    assert "Traceback" not in proc.stderr and not target.exists()
