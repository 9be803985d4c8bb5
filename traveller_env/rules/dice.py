"""Dice (R1.1): every random number of a battle comes from one dice object.

`Dice` is seeded and reproducible; `ScriptedDice` is fed exact rolls for rules tests and fails
loudly when a test scripts too few or too many rolls.

`Dice(seed)` draws from the generator shared with the compiled core
(`traveller_env.rules.rng.Pcg32`, ``generator="pcg"``, the default), so a seed gives the same
battle on both engines. ``generator="mt"`` (Python's Mersenne Twister) replays battles seeded
before the switch; changing `DEFAULT_GENERATOR` changes every seeded figure.
"""

from __future__ import annotations

import random
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .rng import Pcg32

__all__ = ["DEFAULT_GENERATOR", "GENERATORS", "Dice", "DiceExpr", "DiceScriptError",
           "ScriptedDice", "parse_dice"]

#: The dice generators: "mt" (Python's Mersenne Twister) and "pcg" (the shared `Pcg32`).
GENERATORS = ("mt", "pcg")
#: The generator `Dice(seed)` uses when none is named.
DEFAULT_GENERATOR = "pcg"

_DICE_RE = re.compile(r"^\s*(\d+)\s*D\s*(?:([+-])\s*(\d+))?\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class DiceExpr:
    """A dice expression such as ``3D`` or ``2D+2``: ``count`` six-sided dice plus ``modifier``."""

    count: int
    modifier: int = 0

    def __str__(self) -> str:
        if self.modifier == 0:
            return f"{self.count}D"
        return f"{self.count}D{self.modifier:+d}"

    @property
    def mean(self) -> float:
        """Expected value of the expression (before any floor at 0)."""
        return 3.5 * self.count + self.modifier


def parse_dice(text: str) -> DiceExpr:
    """Parse dice notation (``3D``, ``2D+2``, ``1D-1``); raise ``ValueError`` on anything else."""
    match = _DICE_RE.match(str(text))
    if not match:
        raise ValueError(f"{text!r} is not dice notation; expected e.g. '3D', '2D+2' or '1D-1'")
    count = int(match.group(1))
    if count < 1:
        raise ValueError(f"{text!r}: at least one die is needed")
    modifier = int(match.group(3) or 0)
    if match.group(2) == "-":
        modifier = -modifier
    return DiceExpr(count, modifier)


class Dice:
    """The battle's seeded source of six-sided dice (R1.1).

    ``generator="mt"`` uses Python's Mersenne Twister so that a seed gives the same rolls on
    every platform and NumPy version; ``generator="pcg"`` uses the generator shared with the
    compiled core (a seed is then an int in ``[0, 2**64 - 1]``; ``None`` draws a fresh one).
    ``None`` means `DEFAULT_GENERATOR`.
    """

    def __init__(self, seed: int | None = None, generator: str | None = None) -> None:
        generator = DEFAULT_GENERATOR if generator is None else generator
        self.seed = seed
        self.generator = generator
        self._pcg: Pcg32 | None = None
        if generator == "mt":
            self._rng = random.Random(seed)
        elif generator == "pcg":
            self._pcg = Pcg32(secrets.randbits(64) if seed is None else seed)
        else:
            raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")

    @classmethod
    def from_rng(cls, rng: Pcg32, seed: int | None = None) -> Dice:
        """Dice drawing from ``rng`` itself (not a copy), recording ``seed`` as their seed."""
        if not isinstance(rng, Pcg32):
            raise TypeError(f"rng must be a traveller_env.rules.rng.Pcg32, got "
                            f"{type(rng).__name__}")
        dice = cls.__new__(cls)
        dice.seed, dice.generator, dice._pcg = seed, "pcg", rng
        return dice

    def roll(self, n: int) -> list[int]:
        """Roll ``n`` six-sided dice and return the individual results."""
        if self._pcg is not None:
            return self._pcg.roll_d6(n)
        rnd = self._rng.random
        return [int(rnd() * 6) + 1 for _ in range(n)]

    def getstate(self) -> tuple[str, object]:
        """``(generator, state)``: what `setstate` needs to replay the same future rolls."""
        if self._pcg is not None:
            return "pcg", self._pcg.getstate()
        return "mt", self._rng.getstate()

    def setstate(self, state: tuple[str, object]) -> None:
        """Restore a state from `getstate` of dice with the same generator."""
        generator, inner = state
        if generator != self.generator:
            raise ValueError(f"state is of generator {generator!r}, these dice use "
                             f"{self.generator!r}")
        if self._pcg is not None:
            self._pcg.setstate(inner)  # type: ignore[arg-type]
        else:
            self._rng.setstate(inner)  # type: ignore[arg-type]

    def clone(self) -> Dice:
        """An independent copy that will produce the same future rolls."""
        twin = Dice.__new__(Dice)
        twin.seed = self.seed
        twin.generator = self.generator
        twin._pcg = None
        if self._pcg is not None:
            twin._pcg = self._pcg.clone()
        else:
            twin._rng = random.Random()
            twin._rng.setstate(self._rng.getstate())
        return twin


class DiceScriptError(AssertionError):
    """A scripted-dice test asked for a roll it did not script, or left one unused."""


class ScriptedDice(Dice):
    """Dice fed exact rolls, for rules tests.

    ``ScriptedDice([(3, 5), (6,), (2, 2, 2)])`` answers the first ``roll(2)`` with ``[3, 5]``, the
    next ``roll(1)`` with ``[6]`` and so on. Asking for a roll that was not scripted, or for a
    different number of dice than scripted, raises ``DiceScriptError``; so does
    ``assert_used_up()`` while scripted rolls remain.
    """

    def __init__(self, rolls: Iterable[Sequence[int]]) -> None:
        super().__init__(None)
        self._script = [tuple(r) for r in rolls]
        for r in self._script:
            if not r or any(not 1 <= d <= 6 for d in r):
                raise DiceScriptError(f"scripted roll {r} is not a list of d6 results (1-6)")
        self._next = 0

    def roll(self, n: int) -> list[int]:
        if self._next >= len(self._script):
            raise DiceScriptError(f"roll of {n}D asked for, but all {len(self._script)} "
                                  "scripted rolls were used")
        r = self._script[self._next]
        if len(r) != n:
            raise DiceScriptError(f"roll #{self._next} asked for {n}D but the script has {r}")
        self._next += 1
        return list(r)

    @property
    def remaining(self) -> int:
        """How many scripted rolls are still unused."""
        return len(self._script) - self._next

    def assert_used_up(self) -> None:
        """Fail when scripted rolls remain unused."""
        if self.remaining:
            raise DiceScriptError(f"{self.remaining} scripted roll(s) unused: "
                                  f"{self._script[self._next:]}")

    def clone(self) -> ScriptedDice:
        twin = ScriptedDice(self._script)
        twin._next = self._next
        return twin
