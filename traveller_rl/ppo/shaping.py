"""Reward shaping of the PPO trainer: the ``--style``, ``--knockouts`` and ``--potential``
terms, their parsers, and the classes that compute them from the rows' observations.

* ``StyleShaping`` (``--style``): a reward added to the deciding seat at each of its decisions.
* ``KnockoutReward`` (``--knockouts``): a progress value whose change between a seat's
  decisions is paid to it (``SeatRollout.add(progress=...)``).
* ``PositionPotential`` (``--potential``): potential-based shaping (Ng, Harada & Russell 1999).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["KNOCKOUT_TERMS", "MOVE_VIEW_TERMS", "POTENTIAL_TERMS", "STYLE_TERMS",
           "KnockoutReward", "PositionPotential", "RewardShaping", "StyleShaping",
           "parse_knockouts", "parse_potential", "parse_style", "parse_terms"]

#: ``--style`` terms (see ``StyleShaping``).
STYLE_TERMS = ("distance", "distance_m", "exposure", "low_stance", "shots", "lead",
               "shots_into_cover", "reactions")
#: ``--knockouts`` terms (see ``KnockoutReward``).
KNOCKOUT_TERMS = ("enemies_out", "allies_out")
#: ``--potential`` terms (see ``PositionPotential``).
POTENTIAL_TERMS = ("clear_shots", "exposed", "hit", "threat")
#: The terms read from the move view (the rest read the attack view).
MOVE_VIEW_TERMS = ("clear_shots", "exposed")


def parse_terms(text: str, flag: str, allowed: tuple[str, ...]) -> dict[str, float]:
    """``"a=0.02,b=-0.01"`` -> ``{"a": 0.02, "b": -0.01}`` (``ValueError`` naming ``flag`` for
    a term not in ``allowed`` or a bad weight)."""
    out: dict[str, float] = {}
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        term, sep, weight = item.partition("=")
        term = term.strip()
        if term not in allowed:
            raise ValueError(f"{flag}: unknown term {term!r}; allowed: {', '.join(allowed)}")
        try:
            out[term] = float(weight) if sep else float("nan")
        except ValueError:
            out[term] = float("nan")
        if not np.isfinite(out[term]):
            raise ValueError(f"{flag}: {item!r} is not TERM=WEIGHT with a finite number")
    return out


def parse_style(text: str) -> dict[str, float]:
    """``"distance=0.02,shots=-0.01"`` -> ``{"distance": 0.02, "shots": -0.01}``
    (``ValueError`` naming ``--style`` for an unknown term or a bad weight)."""
    return parse_terms(text, "--style", STYLE_TERMS)


def parse_potential(text: str) -> dict[str, float]:
    """``"clear_shots=0.5,exposed=-0.5"`` -> a dict (``ValueError`` naming ``--potential``)."""
    return parse_terms(text, "--potential", POTENTIAL_TERMS)


def parse_knockouts(text: str) -> dict[str, float]:
    """``"enemies_out=0.25,allies_out=-0.25"`` -> a dict (``ValueError`` naming
    ``--knockouts``)."""
    return parse_terms(text, "--knockouts", KNOCKOUT_TERMS)


class KnockoutReward:
    """The ``--knockouts`` value of each decision's observation: the weighted counts of enemy and
    ally slots whose combatant is present but out of play (the seat's own slot is not among
    its allies). ``SeatRollout.add(progress=...)`` pays each seat the change between its
    decisions."""

    def __init__(self, weights: dict[str, float], observation_labels: list[str]) -> None:
        self.weights = weights
        col = {label: j for j, label in enumerate(observation_labels)}

        def columns(prefix: str, field: str) -> np.ndarray:
            return np.array([j for label, j in col.items()
                             if label.startswith(prefix) and label.endswith("." + field)
                             and label.count(".") == 1])

        self.terms = {
            term: (columns(prefix, "present"), columns(prefix, "in_play"))
            for term, prefix in (("enemies_out", "enemy"), ("allies_out", "ally"))
            if term in weights}
        for term, (present, in_play) in self.terms.items():
            if len(present) != len(in_play):
                raise ValueError(f"--knockouts {term}: the observation's slots do not pair "
                                 "present with in_play")

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The progress value of each row's observation (float32)."""
        out = np.zeros(len(obs), dtype=np.float32)
        for term, (present, in_play) in self.terms.items():
            out_of_play = (obs[:, present] - obs[:, in_play]).sum(axis=1)
            out += np.float32(self.weights[term]) * out_of_play.astype(np.float32)
        return out


class PositionPotential:
    """The ``--potential`` of each decision's observation: from the move view of the seat's own
    square (``move.here.*``, shares of the enemies in play) and its stance, and from the attack
    view (``attack.enemyK.hit``, ``attack.here.threat``)."""

    def __init__(self, weights: dict[str, float], observation_labels: list[str]) -> None:
        self.weights = weights
        col = {label: j for j, label in enumerate(observation_labels)}
        if any(t in weights for t in MOVE_VIEW_TERMS):
            self.seen = col["move.here.seen_by"]
            self.covered = col["move.here.covered_from"]
            self.clear = col["move.here.clear_shots"]
            self.low = np.array([col["self.stance_crouch"], col["self.stance_prone"]])
        if "hit" in weights:
            self.hits = np.array([j for label, j in col.items()
                                  if label.startswith("attack.enemy") and label.endswith(".hit")])
        if "threat" in weights:
            self.threat = col["attack.here.threat"]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The potential of each row's observation (float32)."""
        w, out = self.weights, np.zeros(len(obs), dtype=np.float32)
        if "clear_shots" in w:
            out += w["clear_shots"] * obs[:, self.clear]
        if "exposed" in w:
            # cover counts only when crouched or prone (R5.3)
            low = obs[:, self.low].sum(axis=1) > 0.5
            out += w["exposed"] * (obs[:, self.seen] - np.where(low, obs[:, self.covered], 0.0))
        if "hit" in w:
            out += w["hit"] * obs[:, self.hits].max(axis=1)
        if "threat" in w:
            out += w["threat"] * obs[:, self.threat]
        return out


class StyleShaping:
    """The ``--style`` reward terms, read from the deciding seat's own observation (the labels
    of ``vector.observation_labels``) and its chosen (slot-relative) action."""

    def __init__(self, weights: dict[str, float], observation_labels: list[str],
                 action_labels: list[str], map_size: tuple[int, int] = (1, 1)) -> None:
        self.weights = weights
        col = {label: j for j, label in enumerate(observation_labels)}
        enemies = sorted({label.split(".")[0] for label in observation_labels
                          if label.startswith("enemy")}, key=lambda e: int(e[5:]))
        self.in_play = np.array([col[f"{e}.in_play"] for e in enemies])
        self.distance = np.array([col[f"{e}.distance"] for e in enemies])
        # dx, dy are offsets over the map's width and height: back to squares, then metres
        # from the rule itself (R8.1), tabulated once per offset
        self.dx = np.array([col[f"{e}.dx"] for e in enemies])
        self.dy = np.array([col[f"{e}.dy"] for e in enemies])
        self.map_size = map_size
        if "distance_m" in weights:
            from traveller_env.rules.grid import GridMap

            w, h = map_size
            self.metres = np.array([[GridMap.distance_m((0, 0), (dx, dy))
                                     for dy in range(-h, h + 1)] for dx in range(-w, w + 1)])
        self.sight = np.array([col[f"{e}.line_of_sight"] for e in enemies])
        self.low = np.array([col["self.stance_crouch"], col["self.stance_prone"]])
        self.shot = np.array([lab.startswith("attack:") for lab in action_labels])
        # per action: the observation column of the attacked enemy's "in cover from me" flag
        # (-1: not an attack on an enemy slot)
        self.target_cover = np.array([col[f"{lab[7:]}.in_cover"]
                                      if lab.startswith("attack:enemy") else -1
                                      for lab in action_labels])
        self.lead = np.array([lab == "leadership" or lab.startswith("direct:")
                              for lab in action_labels])
        self.react = np.array([lab in ("react:dodge", "react:parry") for lab in action_labels])

    def __call__(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The shaping reward of each row's decision (``obs``: the rows' observations)."""
        w, out = self.weights, np.zeros(len(obs), dtype=np.float32)
        live = obs[:, self.in_play] > 0.5
        count = np.maximum(live.sum(axis=1), 1)
        if "distance" in w:
            near = np.where(live, obs[:, self.distance], np.inf).min(axis=1)
            out += w["distance"] * np.where(np.isfinite(near), near, 0.0)
        if "distance_m" in w:
            width, height = self.map_size
            dx = np.rint(obs[:, self.dx] * width).astype(np.int64)
            dy = np.rint(obs[:, self.dy] * height).astype(np.int64)
            metres = self.metres[np.clip(dx, -width, width) + width,
                                 np.clip(dy, -height, height) + height]
            near = np.where(live, metres, np.inf).min(axis=1)
            out += w["distance_m"] * np.where(np.isfinite(near), near, 0.0)
        if "exposure" in w:
            out += w["exposure"] * ((obs[:, self.sight] > 0.5) & live).sum(axis=1) / count
        if "low_stance" in w:
            out += w["low_stance"] * obs[:, self.low].sum(axis=1)
        if "shots" in w:
            out += w["shots"] * self.shot[actions]
        if "lead" in w:
            out += w["lead"] * self.lead[actions]
        if "reactions" in w:
            out += w["reactions"] * self.react[actions]
        if "shots_into_cover" in w:
            cols = self.target_cover[actions]
            covered = (cols >= 0) & (obs[np.arange(len(obs)), np.maximum(cols, 0)] > 0.5)
            out += w["shots_into_cover"] * covered
        return out



@dataclass
class RewardShaping:
    """A run's shaping terms (each ``None`` when its flag is not given), built from the
    trainer's ``Args`` for the battles of ``venv``."""

    style: StyleShaping | None = None
    potential: PositionPotential | None = None
    knockout: KnockoutReward | None = None

    @classmethod
    def of(cls, args: Any, venv: Any) -> RewardShaping:
        """The ``--style``, ``--potential`` and ``--knockouts`` of ``args``."""
        style = parse_style(args.shaping.style)
        potential = parse_potential(args.shaping.potential)
        knockouts = parse_knockouts(args.shaping.knockouts)
        labels = venv.observation_labels
        return cls(
            StyleShaping(style, labels, venv.action_labels,
                         (venv.scenario.map.width, venv.scenario.map.height)) if style else None,
            PositionPotential(potential, labels) if potential else None,
            KnockoutReward(knockouts, labels) if knockouts else None)
