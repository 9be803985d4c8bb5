"""Statistics for tournaments: Wilson intervals, Elo (Bradley-Terry) ratings with bootstrap
intervals, and OpenSkill ratings. Pure functions over plain numbers; no randomness except the
seeded generator passed in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["bootstrap_elo", "elo_ratings", "openskill_ratings"]

def elo_ratings(names: Sequence[str], games: Iterable[tuple[int, int, float]],
                iterations: int = 2000, tol: float = 1e-10) -> np.ndarray:
    """Bradley-Terry maximum-likelihood ratings on the Elo scale (mean 1500).

    ``games`` are ``(i, j, score_i)`` with ``score_i`` 1 (i won), 0.5 (draw) or 0 (j won);
    a draw counts as half a win each. Solved with the MM algorithm (Hunter 2004) on the
    aggregated win matrix, with a tiny prior (one half-draw against a virtual average
    player) so that an unbeaten or winless policy keeps a finite rating.
    """
    k = len(names)
    wins = np.zeros((k, k))
    for i, j, s in games:
        wins[i, j] += s
        wins[j, i] += 1 - s
    return _bt_from_matrix(wins, iterations, tol)


def _bt_from_matrix(wins: np.ndarray, iterations: int = 2000, tol: float = 1e-10) -> np.ndarray:
    k = wins.shape[0]
    w = wins + 0.5 * (1 - np.eye(k)) / max(1, k - 1)  # the prior, spread over opponents
    n = w + w.T
    total_wins = w.sum(axis=1)
    gamma = np.ones(k)
    for _ in range(iterations):
        denom = (n / (gamma[:, None] + gamma[None, :])).sum(axis=1)
        new = total_wins / np.maximum(denom, 1e-300)
        new /= np.exp(np.mean(np.log(np.maximum(new, 1e-300))))
        if np.max(np.abs(np.log(new) - np.log(gamma))) < tol:
            gamma = new
            break
        gamma = new
    return 1500 + 400 * np.log10(gamma)


def bootstrap_elo(names: Sequence[str], games: Sequence[tuple[int, int, float]],
                  resamples: int = 200, seed: int = 0,
                  level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Elo ratings with percentile bootstrap intervals (games resampled with replacement).

    Returns ``(ratings, low, high)``, each of length ``len(names)``.
    """
    k = len(names)
    arr = np.asarray(games, dtype=float).reshape(-1, 3)
    point = elo_ratings(names, games)
    if len(arr) == 0:
        return point, point.copy(), point.copy()
    rng = np.random.default_rng(seed)
    samples = np.empty((resamples, k))
    i_idx, j_idx, score = arr[:, 0].astype(int), arr[:, 1].astype(int), arr[:, 2]
    for r in range(resamples):
        pick = rng.integers(0, len(arr), len(arr))
        wins = np.zeros((k, k))
        np.add.at(wins, (i_idx[pick], j_idx[pick]), score[pick])
        np.add.at(wins, (j_idx[pick], i_idx[pick]), 1 - score[pick])
        samples[r] = _bt_from_matrix(wins)
    alpha = (1 - level) / 2
    low, high = np.quantile(samples, [alpha, 1 - alpha], axis=0)
    return point, np.minimum(low, point), np.maximum(high, point)


def openskill_ratings(names: Sequence[str], games: Iterable[tuple[int, int, float]],
                      permutations: int = 0, seed: int = 0) -> list[dict[str, float]]:
    """OpenSkill (Plackett-Luce) ratings; draws are ties.

    OpenSkill updates sequentially, so its result depends on the order of the games. With
    ``permutations == 0`` the games are processed in the given order; otherwise ``mu`` and
    ``sigma`` are averaged over that many orders shuffled by a generator seeded with ``seed``
    (deterministic, and far less sensitive to which games happen to come last). Returns one
    ``{"mu", "sigma", "ordinal"}`` per name (``ordinal`` = mu − 3 sigma, a conservative skill
    estimate).
    """
    from openskill.models import PlackettLuce

    games = list(games)
    orders: list[Sequence[tuple[int, int, float]]] = [games]
    if permutations > 0:
        rng = np.random.default_rng(seed)
        orders = [[games[k] for k in rng.permutation(len(games))] for _ in range(permutations)]
    model = PlackettLuce()
    mus = np.zeros(len(names))
    sigmas = np.zeros(len(names))
    for order in orders:
        ratings = [model.rating(name=n) for n in names]
        for i, j, s in order:
            ranks = [0, 1] if s == 1 else [1, 0] if s == 0 else [0, 0]
            (a,), (b,) = model.rate([[ratings[i]], [ratings[j]]], ranks=ranks)
            ratings[i], ratings[j] = a, b
        mus += [r.mu for r in ratings]
        sigmas += [r.sigma for r in ratings]
    mus /= len(orders)
    sigmas /= len(orders)
    return [{"mu": float(m), "sigma": float(sd), "ordinal": float(m - 3 * sd)}
            for m, sd in zip(mus, sigmas, strict=True)]
