"""Aggregate scores over a benchmark's tasks as rliable recommends (Agarwal et al., 2021).

The ``rliable`` package itself pulls ``arch``, ``seaborn``, ``pandas`` and ``absl``; these are
its estimators, written out on NumPy. Scores come as one 1-D array of *runs* per *task*
(here: a battle's outcome, 1 for a win and 0 otherwise, per cell); tasks may hold different
numbers of runs.

- ``iqm(values)``: the interquartile mean, rliable's ``aggregate_iqm``: the 25% trimmed mean,
  ``int(0.25 * n)`` values cut from each end of the sorted values (``scipy.stats.trim_mean``).
  Over a benchmark it is taken of the task scores (each cell's mean over its runs).
- ``stratified_bootstrap(tasks, statistic)``: rliable's ``StratifiedBootstrap``: each replicate
  resamples the runs *within* each task, with replacement, and recomputes the statistic of the
  task means; the interval is the percentile one (2.5% and 97.5% of the replicates).
- ``performance_profile(tasks, taus)``: the fraction of tasks whose score exceeds each
  threshold ``tau`` (rliable's average-score distribution, ``use_score_distribution=False``:
  a run here is one battle, 0 or 1), with a stratified bootstrap band.
- ``probability_of_improvement(x, y)``: over tasks, the mean of ``P(X > Y) + 0.5 P(X = Y)``
  for a run ``X`` of the first algorithm and ``Y`` of the second on that task (the
  Mann-Whitney ``U`` over ``n_x n_y``; rliable's ``probability_of_improvement``), with the
  interval of rliable's ``StratifiedIndependentBootstrap``: both algorithms' runs resampled
  independently within each task.

Every bootstrap is seeded (``seed``): the same scores give the same interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["BOOTSTRAP_REPS", "iqm", "iqm_interval", "performance_profile",
           "probability_of_improvement", "probability_of_improvement_interval",
           "stratified_bootstrap"]

#: Bootstrap replicates of every interval (rliable uses 2,000 for profiles).
BOOTSTRAP_REPS = 2000

Tasks = Sequence[Sequence[float] | np.ndarray]


def _tasks(tasks: Tasks, what: str = "tasks") -> list[np.ndarray]:
    out = [np.asarray(t, dtype=float).reshape(-1) for t in tasks]
    if not out or any(len(t) == 0 for t in out):
        raise ValueError(f"{what}: at least one task, and at least one run in each")
    return out


def iqm(values: Sequence[float] | np.ndarray, axis: int = -1) -> np.ndarray | float:
    """The interquartile mean along ``axis``: ``int(0.25 * n)`` values cut from each end of the
    sorted values, the mean of the rest (``scipy.stats.trim_mean(values, 0.25)``)."""
    a = np.sort(np.asarray(values, dtype=float), axis=axis)
    n = a.shape[axis]
    if n == 0:
        raise ValueError("iqm: no values")
    cut = int(0.25 * n)
    middle = np.take(a, np.arange(cut, n - cut), axis=axis)
    result = middle.mean(axis=axis)
    return float(result) if np.ndim(result) == 0 else result


def _resampled_means(tasks: list[np.ndarray], reps: int,
                     rng: np.random.Generator) -> np.ndarray:
    """``[reps, tasks]``: each task's mean over its runs resampled with replacement."""
    out = np.empty((reps, len(tasks)))
    for j, runs in enumerate(tasks):
        picks = rng.integers(0, len(runs), size=(reps, len(runs)))
        out[:, j] = runs[picks].mean(axis=1)
    return out


def stratified_bootstrap(tasks: Tasks, statistic: Callable[[np.ndarray], np.ndarray],
                         reps: int = BOOTSTRAP_REPS, seed: int = 0,
                         size: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The point estimate and the percentile interval ``[2, ...]`` (lower row, upper row) of
    ``statistic`` of the task means, runs resampled within each task. ``statistic`` maps a
    ``[..., tasks]`` array of task means to ``[...]`` or ``[..., k]`` values."""
    runs = _tasks(tasks)
    means = np.array([r.mean() for r in runs])
    point = np.asarray(statistic(means[None, :]))[0]
    boot = np.asarray(statistic(_resampled_means(runs, reps, np.random.default_rng(seed))))
    tail = (1.0 - size) / 2 * 100
    return point, np.percentile(boot, [tail, 100 - tail], axis=0)


def iqm_interval(tasks: Tasks, reps: int = BOOTSTRAP_REPS,
                 seed: int = 0) -> tuple[float, tuple[float, float]]:
    """The IQM of the task means and its stratified bootstrap 95% interval."""
    point, ci = stratified_bootstrap(tasks, lambda m: iqm(m, axis=-1), reps, seed)
    return float(point), (float(ci[0]), float(ci[1]))


def performance_profile(tasks: Tasks, taus: Sequence[float] | np.ndarray,
                        reps: int = BOOTSTRAP_REPS, seed: int = 0
                        ) -> tuple[np.ndarray, np.ndarray]:
    """For each ``tau``: the fraction of tasks whose mean score exceeds it, and its
    stratified bootstrap 95% band ``[2, len(taus)]``."""
    t = np.asarray(taus, dtype=float)

    def profile(means: np.ndarray) -> np.ndarray:
        return (means[..., None, :] > t[:, None]).mean(axis=-1)

    point, band = stratified_bootstrap(tasks, profile, reps, seed)
    return point, band


def _improvement(x_counts: np.ndarray, y_counts: np.ndarray) -> np.ndarray:
    """``P(X > Y) + 0.5 P(X = Y)`` from counts ``[..., k]`` over the same sorted values."""
    nx = x_counts.sum(axis=-1)
    ny = y_counts.sum(axis=-1)
    below = np.cumsum(y_counts, axis=-1) - y_counts  # y values strictly below each value
    greater = (x_counts * below).sum(axis=-1)
    ties = (x_counts * y_counts).sum(axis=-1)
    return (greater + 0.5 * ties) / (nx * ny)


def probability_of_improvement(x: Tasks, y: Tasks) -> float:
    """The mean over tasks of ``P(X > Y) + 0.5 P(X = Y)``: ``x[j]`` and ``y[j]`` are the two
    algorithms' runs on task ``j`` (rliable's ``probability_of_improvement``)."""
    xs, ys = _tasks(x, "x"), _tasks(y, "y")
    if len(xs) != len(ys):
        raise ValueError(f"probability_of_improvement: {len(xs)} tasks for x, {len(ys)} for y")
    per_task = []
    for a, b in zip(xs, ys, strict=True):
        values = np.unique(np.concatenate([a, b]))
        per_task.append(float(_improvement(_bincount(a[None], values),
                                           _bincount(b[None], values))[0]))
    return float(np.mean(per_task))


def probability_of_improvement_interval(x: Tasks, y: Tasks, reps: int = BOOTSTRAP_REPS,
                                        seed: int = 0, size: float = 0.95
                                        ) -> tuple[float, tuple[float, float]]:
    """``probability_of_improvement(x, y)`` and its 95% interval: each replicate resamples
    ``x``'s and ``y``'s runs independently within each task (rliable's
    ``StratifiedIndependentBootstrap``), percentile interval."""
    xs, ys = _tasks(x, "x"), _tasks(y, "y")
    point = probability_of_improvement(xs, ys)
    rng = np.random.default_rng(seed)
    boot = np.zeros(reps)
    for a, b in zip(xs, ys, strict=True):
        values = np.unique(np.concatenate([a, b]))
        ra = a[rng.integers(0, len(a), size=(reps, len(a)))]
        rb = b[rng.integers(0, len(b), size=(reps, len(b)))]
        boot += _improvement(_bincount(ra, values), _bincount(rb, values))
    boot /= len(xs)
    tail = (1.0 - size) / 2 * 100
    lo, hi = np.percentile(boot, [tail, 100 - tail])
    return point, (float(lo), float(hi))


def _bincount(runs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Counts ``[reps, k]`` of each of the sorted ``values`` in each row of ``runs``."""
    index = np.searchsorted(values, runs)
    out = np.zeros((runs.shape[0], len(values)))
    np.add.at(out, (np.arange(runs.shape[0])[:, None], index), 1)
    return out
