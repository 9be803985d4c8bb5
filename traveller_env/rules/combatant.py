"""A combatant's mutable state during a battle. Only the engine mutates it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .checks import characteristic_dm
from .equipment import Armour, Weapon

__all__ = ["Combatant"]

Square = tuple[int, int]


@dataclass(slots=True)
class Combatant:
    """State of one combatant. ``id`` is ``<side name>_<index in side>``."""

    id: str
    name: str
    side: int
    order: int  # scenario order (R2.5)
    chars: dict[str, int]
    skills: dict[str, int]
    weapon: Weapon
    armour: Armour
    pos: Square
    stance: str = "stand"
    drawn: bool = False
    ammo: int = 0
    spares: int = 0
    radio: bool = False
    prepared: bool = False
    movement_m: float = 6.0
    max_chars: dict[str, int] = field(default_factory=dict)
    # Initiative (R3): base score kept round to round, plus this round's / next round's changes.
    initiative: int = 0
    init_mod_now: int = 0
    init_mod_next: int = 0
    hasty: bool = False
    turn_begun: bool = False  # has begun its turn this round (R3.4)
    # Turn budget (R2.1).
    minors: int = 0
    significant: bool = False
    # Aim (R4.3) and multi-action draw/reload progress (R4.5).
    aim_target: str | None = None
    aim_dm: int = 0
    ready_kind: str | None = None
    ready_count: int = 0
    # Leadership bonus / penalty held (R7.3).
    bonus: bool = False
    penalty: bool = False
    # Incapacitation (R6.3): ``down`` once knocked out; ``out`` once removed from play (R2.5).
    down: bool = False
    dead: bool = False
    out: bool = False
    # The battle's ``version`` at this combatant's last change (caches key on it).
    version: int = 0

    @property
    def current_initiative(self) -> int:
        """Initiative for the current round (R3.4)."""
        return self.initiative + self.init_mod_now

    def dm(self, characteristic: str) -> int:
        """Characteristic DM from the current value (R1.3)."""
        return characteristic_dm(self.chars[characteristic])

    def copy(self) -> Combatant:
        """A copy with its own mutable dicts."""
        twin = Combatant.__new__(Combatant)
        for name in Combatant.__slots__:
            setattr(twin, name, getattr(self, name))
        twin.chars = dict(self.chars)
        return twin
