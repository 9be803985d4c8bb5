"""``traveller_rl.aggregates``: rliable's estimators (IQM, stratified bootstrap, performance
profile, probability of improvement) against hand-computed values and rliable's definitions
(``scipy.stats.trim_mean`` for the IQM, the Mann-Whitney ``U`` for the improvement)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from traveller_rl.aggregates import (
    iqm,
    iqm_interval,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_interval,
    stratified_bootstrap,
)


def test_iqm_is_the_mean_of_the_middle_half():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == pytest.approx(4.5)  # (3 + 4 + 5 + 6) / 4
    assert iqm([100, 0, 3, 1, 2]) == pytest.approx(2.0)  # int(1.25) = 1 cut each end
    assert iqm([0.25, 0.75]) == pytest.approx(0.5)  # nothing cut from two values
    values = np.random.default_rng(4).random(25)
    assert iqm(values) == pytest.approx(scipy.stats.trim_mean(values, 0.25))
    rows = np.random.default_rng(5).random((3, 12))
    assert np.allclose(iqm(rows, axis=-1), scipy.stats.trim_mean(rows, 0.25, axis=1))


def test_probability_of_improvement_by_hand():
    # Task 1: x in {1, 0}, y in {0, 0}: P(X > Y) = 1/2, ties 1/2 -> 1/2 + 1/4 = 0.75.
    # Task 2: x = 0, y = 1: 0. The mean over tasks: 0.375.
    assert probability_of_improvement([[1, 0], [0]], [[0, 0], [1]]) == pytest.approx(0.375)
    assert probability_of_improvement([[1, 0, 1]], [[1, 0, 1]]) == pytest.approx(0.5)
    # Win/loss outcomes: 0.5 + (p_x - p_y) / 2.
    x, y = [1] * 30 + [0] * 10, [1] * 10 + [0] * 30
    assert probability_of_improvement([x], [y]) == pytest.approx(0.5 + (0.75 - 0.25) / 2)


def test_probability_of_improvement_is_rliables_mann_whitney():
    rng = np.random.default_rng(0)
    xs = [rng.integers(0, 3, size=n) / 2 for n in (7, 9, 4)]
    ys = [rng.integers(0, 3, size=n) / 2 for n in (5, 9, 6)]
    want = np.mean([scipy.stats.mannwhitneyu(a, b, alternative="greater")[0] / (len(a) * len(b))
                    for a, b in zip(xs, ys, strict=True)])
    assert probability_of_improvement(xs, ys) == pytest.approx(want)
    point, (lo, hi) = probability_of_improvement_interval(xs, ys, reps=500, seed=1)
    assert point == pytest.approx(want) and lo <= point <= hi
    assert (lo, hi) == probability_of_improvement_interval(xs, ys, reps=500, seed=1)[1]


def test_the_stratified_bootstrap_resamples_within_tasks():
    # A task whose runs are all equal keeps its mean in every replicate.
    point, ci = stratified_bootstrap([[1, 1, 1], [0, 0]], lambda m: m.mean(axis=-1), reps=200)
    assert point == pytest.approx(0.5) and np.allclose(ci, 0.5)
    tasks = [[1, 0] * 50, [1] * 75 + [0] * 25, [0] * 100, [1] * 100]
    score, (lo, hi) = iqm_interval(tasks, reps=1000, seed=0)
    assert score == pytest.approx((0.5 + 0.75) / 2)  # the middle two of 0, 0.5, 0.75, 1
    assert lo < score < hi and hi - lo < 0.2
    assert iqm_interval(tasks, reps=1000, seed=0) == (score, (lo, hi))


def test_the_performance_profile_counts_tasks_above_each_threshold():
    fraction, band = performance_profile([[1, 1], [0, 0], [1, 0]], [0.0, 0.4, 0.9], reps=300)
    assert fraction.tolist() == pytest.approx([2 / 3, 2 / 3, 1 / 3])  # means 1, 0, 0.5
    assert band.shape == (2, 3) and np.all(band[0] <= fraction) and np.all(fraction <= band[1])


def test_bad_scores_are_refused():
    with pytest.raises(ValueError, match="at least one task"):
        iqm_interval([])
    with pytest.raises(ValueError, match="2 tasks for x, 1 for y"):
        probability_of_improvement([[1], [0]], [[1]])
