"""The shared dice generator: the same integer arithmetic as the compiled core's ``rng.hpp``.

Both engines draw their dice from this generator (once the engine is switched to it: see
``Dice(seed, generator="pcg")`` in :mod:`traveller_env.rules.dice`), so a seed gives the same
rolls in Python and in C++. ``tests/data/rng_vectors.json`` pins the outputs and the tests check
both languages against it.

- :func:`mix64` is the SplitMix64 finaliser (Steele, Lea & Flood 2014; Stafford's mix 13), a
  bijection of the 64-bit words.
- :class:`Pcg32` is PCG-XSH-RR 64/32 (O'Neill 2014; ``pcg32_random_r`` of pcg-c-basic): a 64-bit
  LCG state, an odd increment choosing the stream, 32-bit outputs.
- **Seeds.** A seed is an int in ``[0, 2**64 - 1]`` (a NumPy integer is fine; a bool, a float, a
  negative or a larger int is refused: :func:`check_u64`). It seeds a SplitMix64 whose first two
  outputs are ``pcg32_srandom_r``'s ``(initstate, initseq)``, so nearby seeds get unrelated
  states on different streams.
- **Dice.** :meth:`Pcg32.d6` is ``pcg32_boundedrand_r(6) + 1``: a 32-bit draw below
  ``(2**32 - 6) % 6 == 4`` is rejected and drawn again, the rest taken modulo 6, so each face
  has probability exactly 1/6.
- **Bounded draws.** :meth:`Pcg32.below` is ``pcg32_boundedrand_r(n)``: a uniform int in
  ``[0, n)`` (a draw below ``(2**32 - n) % n`` is rejected and drawn again, the rest taken modulo
  ``n``); the random policy and the scripted policies' fallbacks draw from it.
- **Streams for a batch.** :func:`derive_seed` gives sub-stream ``i`` of a seed,
  ``sm1(sm1(seed) ^ i)`` with ``sm1(x) = mix64(x + GOLDEN)``, injective in ``i``;
  :func:`battle_seed` gives the seed of battle ``episode`` (0, 1, ... as the row auto-resets) of
  row ``row`` of a vector of battles seeded with one seed:
  ``derive_seed(derive_seed(vector_seed, row), episode)``.
"""

from __future__ import annotations

import operator

__all__ = ["GOLDEN", "PCG_MULT", "Pcg32", "battle_seed", "check_u64", "derive_seed", "mix64"]

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1
GOLDEN = 0x9E3779B97F4A7C15
PCG_MULT = 6364136223846793005
#: ``pcg32_boundedrand_r``'s rejection threshold for a bound of 6: ``(2**32 - 6) % 6``.
D6_THRESHOLD = (2**32 - 6) % 6


def check_u64(value: object, name: str = "seed") -> int:
    """``value`` as an int in ``[0, 2**64 - 1]``; ``TypeError`` / ``ValueError`` naming ``name``.

    Accepts ints and anything with ``__index__`` (NumPy integers), never a bool. The messages are
    the compiled core's, word for word.
    """
    allowed = f"{name} must be an int in [0, 2**64 - 1], got "
    if isinstance(value, bool):
        raise TypeError(f"{allowed}{type(value).__name__} {value!r}")
    try:
        as_int = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{allowed}{type(value).__name__} {value!r}") from None
    if not 0 <= as_int <= M64:
        raise ValueError(f"{allowed}{as_int!r}")
    return as_int


def mix64(x: int) -> int:
    """The SplitMix64 finaliser of the 64-bit word ``x``."""
    z = check_u64(x, "x")
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _splitmix_first(x: int) -> int:
    return mix64((x + GOLDEN) & M64)


def derive_seed(seed: int, index: int) -> int:
    """The seed of sub-stream ``index`` of ``seed`` (both ints in ``[0, 2**64 - 1]``)."""
    seed = check_u64(seed, "seed")
    index = check_u64(index, "index")
    return _splitmix_first(_splitmix_first(seed) ^ index)


def battle_seed(vector_seed: int, row: int, episode: int) -> int:
    """The seed of battle ``episode`` (0, 1, ...) of row ``row`` of a vector seeded
    ``vector_seed``."""
    vector_seed = check_u64(vector_seed, "vector_seed")
    row = check_u64(row, "row")
    episode = check_u64(episode, "episode")
    return derive_seed(derive_seed(vector_seed, row), episode)


class Pcg32:
    """The shared dice generator (PCG-XSH-RR 64/32), seeded as the module docstring says.

    ``getstate()`` / ``setstate()`` / ``clone()`` save and restore it exactly; the state is the
    ``(state, inc)`` pair, the same pair the compiled core's ``Pcg32`` reports.
    """

    __slots__ = ("_inc", "_state")

    def __init__(self, seed: int) -> None:
        seed = check_u64(seed, "seed")
        initstate = _splitmix_first(seed)
        initseq = _splitmix_first((seed + GOLDEN) & M64)  # SplitMix64's second output
        self._srandom(initstate, initseq)

    def _srandom(self, initstate: int, initseq: int) -> None:
        # pcg32_srandom_r(initstate, initseq)
        self._inc = ((initseq << 1) | 1) & M64
        self._state = 0
        self.next_u32()
        self._state = (self._state + initstate) & M64
        self.next_u32()

    @classmethod
    def from_init(cls, initstate: int, initseq: int) -> Pcg32:
        """The generator of pcg-c-basic's ``pcg32_srandom_r(initstate, initseq)``.

        This bypasses the SplitMix64 seeding; it exists to check the generator against PCG's
        published outputs.
        """
        rng = cls.__new__(cls)
        rng._srandom(check_u64(initstate, "initstate"), check_u64(initseq, "initseq"))
        return rng

    @classmethod
    def from_state(cls, state: int, inc: int) -> Pcg32:
        """The generator with this exact ``(state, inc)``; ``inc`` must be odd."""
        rng = cls.__new__(cls)
        rng.setstate((state, inc))
        return rng

    def getstate(self) -> tuple[int, int]:
        """The ``(state, inc)`` pair; ``Pcg32.from_state(*getstate())`` continues identically."""
        return self._state, self._inc

    def setstate(self, state: tuple[int, int]) -> None:
        """Restore a ``(state, inc)`` pair from :meth:`getstate`."""
        if not isinstance(state, tuple) or len(state) != 2:
            raise TypeError(f"state must be a (state, inc) tuple of two ints, got {state!r}")
        s = check_u64(state[0], "state")
        inc = check_u64(state[1], "inc")
        if not inc & 1:
            raise ValueError(f"inc must be odd (PCG32 increments are odd), got {inc}")
        self._state, self._inc = s, inc

    def clone(self) -> Pcg32:
        """An independent copy that will produce the same future outputs."""
        twin = Pcg32.__new__(Pcg32)
        twin._state, twin._inc = self._state, self._inc
        return twin

    def next_u32(self) -> int:
        """The next 32-bit output."""
        old = self._state
        self._state = (old * PCG_MULT + self._inc) & M64
        x = (((old >> 18) ^ old) >> 27) & M32
        rot = old >> 59
        return ((x >> rot) | (x << (32 - rot))) & M32

    def d6(self) -> int:
        """One six-sided die, 1..6 (``pcg32_boundedrand_r(6) + 1``)."""
        x = self.next_u32()
        while x < D6_THRESHOLD:  # rejected, draw again
            x = self.next_u32()
        return x % 6 + 1

    def below(self, n: int) -> int:
        """A uniform int in ``[0, n)`` (``pcg32_boundedrand_r(n)``), ``n`` in ``[1, 2**32 - 1]``.

        A 32-bit draw below ``(2**32 - n) % n`` is rejected and drawn again; the rest is taken
        modulo ``n``, so every value has probability exactly ``1/n``.
        """
        if isinstance(n, bool):
            raise TypeError(f"n must be an int in [1, 2**32 - 1], got bool {n!r}")
        try:
            bound = operator.index(n)
        except TypeError:
            raise TypeError(f"n must be an int in [1, 2**32 - 1], got {type(n).__name__} "
                            f"{n!r}") from None
        if not 1 <= bound <= M32:
            raise ValueError(f"n must be an int in [1, 2**32 - 1], got {bound!r}")
        threshold = (M32 + 1 - bound) % bound
        x = self.next_u32()
        while x < threshold:  # rejected, draw again
            x = self.next_u32()
        return x % bound

    def roll_d6(self, n: int) -> list[int]:
        """``n`` six-sided dice.

        The hot path of the Python engine: :meth:`next_u32` and :meth:`d6` inlined, constants
        written out, the rotation done as ``(x * (2**32 + 1)) >> rot`` (the same 32-bit result
        as ``rotr32``), and the rejection (probability 2**-30) in its own rarely-taken loop.
        """
        if n < 0:
            raise ValueError(f"n must be an int in [0, ...], got {n!r}")
        s, inc = self._state, self._inc
        out = []
        append = out.append
        for _ in range(n):
            old = s
            s = (old * 6364136223846793005 + inc) & 0xFFFFFFFFFFFFFFFF
            x = (((((old >> 18) ^ old) >> 27) & 0xFFFFFFFF) * 0x100000001 >> (old >> 59)
                 ) & 0xFFFFFFFF
            while x < 4:  # D6_THRESHOLD: rejected, draw again
                old = s
                s = (old * 6364136223846793005 + inc) & 0xFFFFFFFFFFFFFFFF
                x = (((((old >> 18) ^ old) >> 27) & 0xFFFFFFFF) * 0x100000001 >> (old >> 59)
                     ) & 0xFFFFFFFF
            append(x % 6 + 1)
        self._state = s
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pcg32):
            return NotImplemented
        return self.getstate() == other.getstate()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Pcg32.from_state({self._state}, {self._inc})"
