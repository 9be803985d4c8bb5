"""Action encoding: ``Discrete(N)`` index <-> engine action, and the action mask.

The catalogue is fixed for a scenario (it depends only on the combatant ids and the best
movement), so every agent shares one ``Discrete(N)`` space. The mask is built from the
engine's own legality rules, so ``mask[i] == 1`` exactly when the engine accepts action ``i``:
``mask_slow`` asks ``Battle.why_illegal`` about every action; ``mask`` gives the same answer
faster from ``Battle.legal_options`` (each kind's legal arguments, grouped; each move
direction walked once); tests check that the two agree.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from traveller_env.rules.kinds import parse_action
from traveller_env.rules.vocabulary import Action

from .rules.battle import Battle
from .rules.grid import DIRECTIONS
from .rules.kinds import KINDS, ActionKind

__all__ = ["ActionCatalogue", "RelativeActions"]


class ActionCatalogue:
    """The scenario's action list, its labels and index lookup, derived from the action kinds
    table (``rules.kinds.KINDS``)."""

    def __init__(self, battle: Battle) -> None:
        self.actions: list[Action] = battle.candidate_actions()
        self.labels: list[str] = [a.label for a in self.actions]
        self._index = {label: i for i, label in enumerate(self.labels)}
        self.n = len(self.actions)
        # Per kind: the index of each legal-argument key (``ActionKind.key``).
        self._by_key: dict[str, dict] = defaultdict(dict)
        for i, a in enumerate(self.actions):
            self._by_key[a.kind][ActionKind.key(a)] = i
        self._by_key = dict(self._by_key)
        # Move actions form one contiguous block; its mask is cached per reach pattern.
        moves = [i for i, a in enumerate(self.actions) if a.kind == "move"]
        self._move_lo, self._move_hi = min(moves), max(moves) + 1
        assert self._move_hi - self._move_lo == len(moves)
        self._move_templates: dict[tuple[int, ...], bytes] = {}

    def index(self, label: str) -> int:
        """Index of an action label; ``ValueError`` listing the pattern when unknown."""
        try:
            return self._index[label]
        except KeyError:
            parse_action(label)  # raises a clear error for malformed labels
            raise ValueError(f"action label {label!r} is not in this scenario's action "
                             f"space ({self.n} actions; see action_labels)") from None

    def mask(self, battle: Battle, out: np.ndarray | None = None) -> np.ndarray:
        """``int8`` mask of the actions legal for the deciding combatant, from each kind's
        grouped legal arguments (``Battle.legal_options``).

        Built in a ``bytearray`` (item assignment there is several times cheaper than on a
        NumPy array) and wrapped without a copy; the move block comes from a cached template
        per reach pattern.
        """
        buf = bytearray(self.n)
        if not battle.done:
            by_key = self._by_key
            for name, legal in battle.legal_options().items():
                if not legal:
                    continue
                if name == "move":
                    template = self._move_templates.get(legal)
                    if template is None:
                        template = self._move_templates[legal] = self._move_template(legal)
                    buf[self._move_lo:self._move_hi] = template
                    continue
                index = by_key[name]
                for key in legal:
                    buf[index[key]] = 1
        mask = np.frombuffer(buf, dtype=np.int8)
        if out is None:
            return mask
        out[:] = mask
        return out

    def _move_template(self, reach: tuple[int, ...]) -> bytes:
        block = bytearray(self._move_hi - self._move_lo)
        index = self._by_key["move"]
        for d, k in zip(DIRECTIONS, reach, strict=True):
            for n in range(1, k + 1):
                block[index[(d, n)] - self._move_lo] = 1
        return bytes(block)

    def mask_slow(self, battle: Battle) -> np.ndarray:
        """The reference mask: ``why_illegal`` asked about every action."""
        out = np.zeros(self.n, dtype=np.int8)
        if not battle.done:
            for i, action in enumerate(self.actions):
                out[i] = battle.why_illegal(action) is None
        return out


class RelativeActions:
    """Seat-independent action indices: targets named by observation slot, not by agent id.

    The absolute labels (``attack:red_0``) mean different things to different seats, so one
    policy cannot play both sides with them. Here every targeted action (``aim``, ``attack``,
    ``direct``, ``hamper``) names a slot of the observer's observation instead
    (``attack:enemy0``, ``direct:ally1``; see ``ObservationBuilder.slots``), so that the same
    index means the same thing from every seat. ``labels`` are the relative labels;
    ``to_absolute(agent, i)`` and ``mask(agent, absolute_mask)`` translate.

    ``labels`` (a ``Layout``'s ``action_labels()``) fixes the relative labels instead of
    deriving them from the catalogue: a label the scenario lacks (a move beyond its best, a
    kind it has no candidate of) translates to nothing and is never allowed by the mask.
    """

    def __init__(self, catalogue: ActionCatalogue, slots: dict[str, list[str | None]],
                 slot_names: list[str], labels: list[str] | None = None) -> None:
        self.labels: list[str] = []
        rows: list[tuple[str, int] | tuple[str, str, int]] = []
        if labels is None:
            seen: set[str] = set()
            for i, action in enumerate(catalogue.actions):
                if KINDS[action.kind].args == "combatant":
                    if action.kind in seen:
                        continue
                    seen.add(action.kind)
                    for k, name in enumerate(slot_names):
                        self.labels.append(f"{action.kind}:{name}")
                        rows.append((action.kind, "slot", k))
                else:
                    self.labels.append(action.label)
                    rows.append(("fixed", i))
        else:
            slot_index = {name: k for k, name in enumerate(slot_names)}
            for label in labels:
                kind, _, arg = label.partition(":")
                self.labels.append(label)
                if kind in KINDS and KINDS[kind].args == "combatant":
                    rows.append((kind, "slot", slot_index[arg]))
                else:
                    rows.append(("fixed", catalogue._index.get(label, catalogue.n)))
        self.n = len(self.labels)
        self._perm: dict[str, np.ndarray] = {}
        for agent, occupants in slots.items():
            perm = np.full(self.n, catalogue.n, dtype=np.int64)  # n: an always-0 sentinel
            for j, row in enumerate(rows):
                if row[0] == "fixed":
                    perm[j] = row[1]
                else:
                    occupant = occupants[row[2]]
                    if occupant is not None:
                        perm[j] = catalogue.index(f"{row[0]}:{occupant}")
            self._perm[agent] = perm
        self._n_abs = catalogue.n

    def to_absolute(self, agent: str, index: int) -> int:
        """The absolute action index of relative action ``index`` for ``agent``."""
        absolute = int(self._perm[agent][index])
        if absolute == self._n_abs:
            raise ValueError(f"{agent}: relative action {self.labels[index]!r} names an empty "
                             "slot")
        return absolute

    def to_relative(self, agent: str, absolute: int) -> int:
        """The relative index of ``agent``'s absolute action ``absolute`` (the inverse of
        ``to_absolute``). ``ValueError`` when no relative action names it (an action on a
        combatant outside the agent's slots)."""
        hits = np.flatnonzero(self._perm[agent] == int(absolute))
        if hits.size == 0:
            raise ValueError(f"{agent}: absolute action {int(absolute)} has no slot-relative "
                             "action")
        return int(hits[0])

    def mask(self, agent: str, absolute_mask: np.ndarray) -> np.ndarray:
        """The relative mask of ``agent`` from its absolute mask."""
        return np.append(absolute_mask, 0).astype(absolute_mask.dtype)[self._perm[agent]]

    def rows(self, agent: str, absolute_rows: np.ndarray) -> np.ndarray:
        """Per-action rows (``[n_absolute, ...]``: an output layer's weights or biases, a value
        per action) of ``agent``'s absolute actions, reordered as its relative actions; a
        relative action with no absolute counterpart (an empty slot, never legal) gets zeros."""
        rows = np.asarray(absolute_rows)
        pad = np.zeros((1, *rows.shape[1:]), dtype=rows.dtype)
        return np.concatenate([rows, pad])[self._perm[agent]]
