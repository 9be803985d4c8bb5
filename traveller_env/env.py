"""The PettingZoo AEC environment: a thin adapter over a battle engine.

``TravellerEnv`` holds the PettingZoo bookkeeping (agents, rewards, terminations, dead steps,
infos) once, and plays its battles through an engine adapter (``Engine``): ``PythonEngine``
over the Python rules engine (``rules.battle.Battle``), or ``core.aec_engine.CoreEngine`` over
the compiled core (``CoreTravellerEnv``, ``raw_env(backend="core")``). Rewards are scored by
``traveller_env.rewards``. This module imports the core's adapter only when a core env is built;
the core's modules never import this one.
"""

from __future__ import annotations

import math
import secrets
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from .encoding import ActionCatalogue, RelativeActions
from .invariants import InvariantError, check_invariants, check_new_events
from .layout import Layout, resolve_layout
from .observations import VIEWS, ObservationBuilder, move_view
from .rewards import BattleCounters, RewardLedger, RewardScorer, outcome_reward
from .rules.battle import Battle, IllegalActionError
from .rules.dice import Dice
from .rules.snapshot import PHASES
from .scenario import Scenario, ScenarioError, build_battle, load_scenario, with_options
from .view import BattleView

__all__ = ["ILLEGAL_ACTION_MODES", "INFO_MODES", "INFO_PHASES", "CoreTravellerEnv", "Engine",
           "PythonEngine", "TravellerEnv", "classic_illegal_action", "env", "raw_env"]

ScenarioSource = str | Path | Mapping[str, Any] | Scenario
#: What ``infos[agent]`` holds (the ``infos`` constructor keyword): ``"numeric"`` (the default:
#: ints only, ``{"round", "phase", "new_events"}``, which every client can turn into tensors;
#: ``phase`` indexes ``INFO_PHASES``, ``new_events`` counts the events since the agent's
#: previous step), ``"events"`` (those events as a list of dicts, the phase name and the
#: round) or ``"none"`` (an empty dict). Whatever it holds, the events are one call away:
#: ``new_events(agent)`` (and the whole log in ``battle.events``).
INFO_MODES = ("numeric", "events", "none")
#: The phase names behind ``infos[agent]["phase"]`` under ``infos="numeric"``.
INFO_PHASES = PHASES
_PHASE_CODE = {name: i for i, name in enumerate(PHASES)}
#: How the env answers an illegal action (the ``illegal_action`` keyword): ``"raise"``
#: (``ValueError``, nothing changed: ``raw_env``'s default, for debugging rules and policies),
#: ``"penalize"`` (the scenario option: -1, the do-nothing default, the battle goes on) or
#: ``"terminate"`` (PettingZoo's classic convention, ``env``'s default: -1, a warning, and the
#: episode ends there, every agent terminated).
ILLEGAL_ACTION_MODES = ("raise", "penalize", "terminate")


# ============================================================================ engine adapters
class Engine(Protocol):
    """What ``TravellerEnv`` asks of one battle's engine. Seats are indices into
    ``possible_agents``; actions are indices into the catalogue (``action_labels``)."""

    #: What ``env.battle`` shows (the Python ``Battle``, or the core's ``CoreBattleState``).
    battle: Any
    #: The running counters: ``rewards.Counters`` (``round``, ``dropouts``, ``done``,
    #: ``winner``, ``out(seat)``, ``summary()``) plus ``phase``, ``truncated`` and ``decider``
    #: (the deciding seat, -1 once over).
    counters: Any

    @property
    def events(self) -> list[dict]:
        """The event log so far (the Python engine's dicts)."""

    @property
    def python(self) -> Battle:
        """The Python engine's ``Battle`` at this point (the view, rendering, the checks)."""

    def take(self, action: int) -> int:
        """Take ``action`` (in range) for the deciding seat; returns the next decider's seat
        (-1 once over). ``IllegalActionError`` when refused, with nothing changed."""

    def forfeit(self, label: str, reason: str) -> int:
        """Record an illegal choice and take the do-nothing default; returns the next
        decider's seat (-1 once over)."""

    def observe(self, seat: int, deciding: bool) -> dict[str, np.ndarray]:
        """``{"observation": float32 vector, "action_mask": int8 mask}`` of ``seat`` (new
        arrays); the mask is all zeros unless ``deciding`` (selected) and the seat decides."""

    def observation_vector(self, seat: int) -> np.ndarray:
        """Only the observation vector of ``seat``."""

    def mask(self, seat: int, deciding: bool) -> np.ndarray:
        """The int8 action mask of ``seat`` (as in ``observe``)."""

    def state(self) -> np.ndarray:
        """The global state vector."""

    def check_against_twin(self, builder: ObservationBuilder, agents: list[str]) -> None:
        """``check_invariants=True``: whatever the engine can cross-check against the Python
        engine (the core: its event log and observations; the Python engine: nothing)."""

    def saved(self) -> dict[str, Any]:
        """Plain data (bytes, lists, dicts) from which the env's engine factory's ``resume``
        continues this battle exactly: its snapshot (``rules.snapshot``) and its event log
        (for copy and pickle). ``TypeError`` when the battle's dice cannot be saved."""


class PythonEngine:
    """The engine adapter of ``TravellerEnv`` on the Python rules engine: a ``Battle`` with the
    scenario's catalogue and observation builder. The mask of a decision is computed once,
    however often asked, and answers the legality of the action taken from it."""

    __slots__ = ("_actions", "_builder", "_catalogue", "_ids", "_mask", "_mask_version",
                 "battle", "counters")

    def __init__(self, battle: Battle, catalogue: ActionCatalogue, builder: ObservationBuilder,
                 ids: list[str]) -> None:
        self.battle = battle
        self.counters = BattleCounters(battle, ids)
        self._catalogue = catalogue
        self._actions = catalogue.actions
        self._builder = builder
        self._ids = ids
        self._mask: np.ndarray | None = None
        self._mask_version = -1  # the battle's version the cached mask belongs to

    @property
    def events(self) -> list[dict]:
        """The battle's event log."""
        return self.battle.events

    @property
    def python(self) -> Battle:
        """The battle itself."""
        return self.battle

    def take(self, action: int) -> int:
        """Take catalogue action ``action``; the next decider's seat (see ``Engine.take``)."""
        b = self.battle
        act = self._actions[action]
        # The mask of this decision, when already computed, answers legality; otherwise the
        # engine checks (the same rules: tests compare the mask with why_illegal).
        if self._mask_version == b.version and self._mask[action]:
            b.apply(act, validated=True)
        else:
            b.apply(act)  # checks legality first and changes nothing when it refuses
        return self.counters.decider

    def forfeit(self, label: str, reason: str) -> int:
        """``Battle.forfeit``; the next decider's seat."""
        self.battle.forfeit(label, reason)
        return self.counters.decider

    def observe(self, seat: int, deciding: bool) -> dict[str, np.ndarray]:
        """The observation and mask of ``seat`` (see ``Engine.observe``)."""
        return {"observation": self._builder.observe(self.battle, self._ids[seat]),
                "action_mask": self.mask(seat, deciding)}

    def observation_vector(self, seat: int) -> np.ndarray:
        """The observation vector of ``seat``."""
        return self._builder.observe(self.battle, self._ids[seat])

    def mask(self, seat: int, deciding: bool) -> np.ndarray:
        """The int8 action mask of ``seat`` (a copy of the decision's cached mask)."""
        b = self.battle
        if not deciding or b.done or self._ids[seat] != b.current_agent:
            return np.zeros(self._catalogue.n, dtype=np.int8)
        # Every change to a battle moves its version on, so the version identifies the
        # decision, and its mask is computed once however often asked.
        if self._mask_version != b.version:
            self._mask = self._catalogue.mask(b)
            self._mask_version = b.version
        return self._mask.copy()

    def state(self) -> np.ndarray:
        """The global state vector."""
        return self._builder.state(self.battle)

    def check_against_twin(self, builder: ObservationBuilder, agents: list[str]) -> None:
        """Nothing to cross-check: this is the Python engine."""

    def saved(self) -> dict[str, Any]:
        """The battle's snapshot and event log (see ``Engine.saved``); ``TypeError`` for
        scripted dice, which a snapshot cannot hold."""
        b = self.battle
        try:
            snapshot = b.snapshot()
        except TypeError as exc:
            raise TypeError(f"cannot copy or pickle this env: {exc} (reset(options={{'dice': "
                            "...}) battles cannot be saved)") from None
        return {"snapshot": snapshot, "events": b.events}


class PythonEngineFactory:
    """Makes the ``PythonEngine`` of each ``reset`` of one env."""

    def __init__(self, scenario: Scenario, catalogue: ActionCatalogue,
                 builder: ObservationBuilder, ids: list[str]) -> None:
        self._scenario = scenario
        self._catalogue = catalogue
        self._builder = builder
        self._ids = ids

    def __call__(self, seed: int, dice: Dice | None) -> PythonEngine:
        """The engine of a new battle from ``seed`` (or from ``dice``, scripted)."""
        battle = build_battle(self._scenario, dice=dice or Dice(seed))
        return PythonEngine(battle, self._catalogue, self._builder, self._ids)

    def resume(self, seed: int, saved: Mapping[str, Any]) -> PythonEngine:
        """The engine of a battle of ``seed`` continued from ``PythonEngine.saved``'s data: the
        snapshot restored into a new battle, and the event log put back (it takes the list)."""
        battle = build_battle(self._scenario, dice=Dice(seed))
        battle.restore(saved["snapshot"])
        battle.events = saved["events"]
        return PythonEngine(battle, self._catalogue, self._builder, self._ids)


class TravellerEnv(AECEnv):
    """Mongoose Traveller (2e) personal combat, one combatant per agent.

    ## Description
    Agents are the scenario's combatants (``<side>_<index>``, ``possible_agents`` in scenario
    order). ``agent_selection`` follows the rules (docs/rules.md R2-R3): at the start of
    each round, when hastening is on, every able combatant declares haste in Initiative order;
    then turns run in dynamic Initiative order. The acting agent keeps the selection for
    consecutive steps until its budget (one Significant + one Minor, or three Minor; R2.1) is
    spent or it ends its turn (and, per R2.3, while it can still hand out a leadership bonus or
    impose a penalty). When a combatant is attacked and reactions are on, the selection passes
    to it for one step (its reaction), then back to the attacker.

    ## Action Space
    ``Discrete(N)``, the same for every agent and fixed for the scenario. ``action_labels[i]``
    names action ``i``: ``end_turn``, ``move:<N|NE|E|SE|S|SW|W|NW>:<squares>`` (north is -y;
    1 up to the scenario's best movement, 4 for humans), ``stance:<stand|crouch|prone>``,
    ``draw``, ``reload``, ``aim:<agent>``, ``attack:<agent>``, ``leadership``,
    ``direct:<agent>`` (hand a leadership bonus), ``hamper:<agent>`` (impose a penalty),
    ``react:<none|dodge|parry>``, ``haste:<yes|no>``. ``action_index(label)`` is the inverse.
    The ``action_mask`` is 1 exactly where the engine accepts the action for the selected agent;
    every other agent sees an all-zero mask. ``relative_actions`` translates to and from
    slot-relative indices (``attack:enemy0``) for policies that play more than one seat.

    ## Observation Space
    ``Dict({"observation": Box(float32, (D,)), "action_mask": Box(int8, (N,))})``. The vector
    is the agent's own block, then one block per slot: its allies (scenario order, itself
    excluded), then its enemies, padded to the largest side so every agent has the same ``D``.
    ``observation_labels[j]`` names entry ``j`` (``self.aim_dm``, ``enemy0.line_of_sight``, ...)
    and ``observation_slots(agent)`` says which combatant sits in each slot.

    * own block: position (/ map size), wounds as fractions of STR/DEX/END lost, stance
      (one-hot), weapon drawn, melee weapon, ammunition (/ magazine), spare magazines
      (/ starting spares), aim DM (/ 6; the aimed-at slot has ``aimed`` = 1), Minor and
      Significant actions used, what the budget still allows, haste, leadership bonus and
      penalty held, bonuses / penalties it may hand out (/ 10), current Initiative (/ 30),
      draw/reload progress, round (/ ``max_rounds``), the phase (haste declaration, turn,
      reaction; one-hot), whether a pending attack on it is a melee attack, its weapon
      skill's DM (/ 6) and its Leadership check's DM (/ 10);
    * per slot: present, in play, relative position, distance (/ 4x the observer's weapon
      range), its range band for the observer's weapon (R5.1, one-hot incl. "beyond"),
      adjacent, line of sight, in cover from the observer, stance, wounds, weapon drawn,
      melee weapon, aimed at by the observer, bonus / penalty held, has acted this round,
      haste, Initiative (/ 30), and whether it is the attacker awaiting the observer's reaction.
    * with ``move_view=True`` (off by default), the move view: for the observer's square and
      the end square of each move action (``move.here.*``, ``move.N:1.*``, ...), the shares of
      the enemies in play that have line of sight to it (``seen_by``), that it would be in cover
      from there when crouched or prone (``covered_from``), and that it would see out of cover
      from there (``clear_shots``): what the map offers a move, which the rest of the vector
      does not say (``observations.move_view``).
    * with ``aim_view=True`` (off by default; after the move view when both are on), the aim
      view: per slot (``aim.ally0.on_me``, ..., ``aim.enemy0.on_me``), the aim DM that
      combatant holds on the observer (R4.3, / 6; 0 when it aims elsewhere, not at all, or is
      out of play). An aim is visible at the table, and ``tactician`` weighs it; the rest of
      the vector only flags the observer's own aim.
    * with ``attack_view=True`` (off by default; after the move and aim views), the attack
      view: exact hit chances from the rules (``rules.attack.hit_probability``: 2D + every DM
      >= 8, before reactions, 0 out of reach). Per slot, ``attack.<slot>.hit`` (the
      observer's attack on it now, its aim and haste and held leadership DMs included) and
      ``attack.<slot>.hits_me`` (its attack on the observer now); then for the observer's
      square and each move's end square (as the move view), ``attack.<square>.best_hit`` (its
      best unaimed attack from there on an enemy in play) and ``attack.<square>.threat`` (the
      mean over the enemies in play of their chance to hit it there, in its stance now).
      The odds ``tactician`` plans with, which a network would otherwise learn from noisy
      outcomes (``observations.ATTACK_VIEW_FIELDS``).

    Every entry lies in [-1, 1] (clamped in the rare extremes of Initiative, leadership pools
    and skill DMs).
    ``state()`` returns the global state for centralised critics (``state_labels`` names it).
    Scripted policies read the battle through ``view``, a read-only ``BattleView``.

    ## Rewards
    Set in the scenario's ``rewards`` (defaults ``win: 1.0, loss: -1.0, draw: 0.0,
    damage_dealt: 0.0, damage_taken: 0.0, shared: true``). ``win``/``loss``/``draw`` go to every
    agent still in ``agents`` when the battle ends (a truncation or mutual elimination is a
    draw). ``damage_dealt`` and ``damage_taken`` are per point of damage after armour, added as
    given (use a negative ``damage_taken`` to penalise); with ``shared: true`` every agent of a
    side gets its side's sum, otherwise only the attacker / target. ``per_round`` (default 0)
    goes to every agent each time a new round begins (round 2 on). With ``illegal_action:
    penalize`` an illegal action earns its agent -1.

    ## Episode End
    The episode is the battle: no agent terminates before it ends. A combatant knocked out
    (R6.3, out of play R2.5) stays in ``agents`` and is never selected again; its rewards
    accumulate and reach it in its dead step (``step(None)``) at the battle's end. When at most
    one side is left every agent terminates (R8.2); after ``max_rounds`` every agent still in
    play is truncated (the knocked-out ones terminate). With ``terminate_on_knockout=True``
    (PettingZoo's per-agent termination) a knocked-out agent terminates at once instead and
    takes its dead step mid-battle. With ``illegal_action="terminate"`` an illegal action ends
    the episode (every agent terminates; the battle itself is left unfinished).
    ``infos[agent]`` (``infos``, below) holds numbers by default; ``new_events(agent)`` returns
    the battle events since that agent's previous step (JSON-serialisable dicts, see
    docs/environment.md) whatever ``infos`` holds.

    ## Arguments
    ``scenario``: built-in name, path or dict; ``render_mode``: ``None``, ``"ansi"``,
    ``"rgb_array"`` or ``"human"`` (a live pygame window, drawn after every ``reset`` and
    ``step`` and paced at ``metadata["render_fps"]``; the ``render`` extra); keyword options
    override the scenario's ``options`` (``hastening``,
    ``reactions``, ``comms_range_m``, ``illegal_action``: ``"raise"`` (the scenario's default)
    or ``"penalize"``, or the env's own ``"terminate"``; ``ILLEGAL_ACTION_MODES``;
    ``illegal_action`` says which applies), and ``max_rounds`` overrides the scenario's.
    ``terminate_on_knockout`` (default ``False``; a constructor keyword): see Episode End.
    ``check_invariants`` (default ``False``; a constructor keyword, not a scenario option)
    checks the battle's invariants after ``reset`` and every ``step``
    (``traveller_env.invariants``: state and new events, the selected agent's mask never all
    zero, every observation within [-1, 1], finite rewards) and raises
    ``InvariantError`` (an ``AssertionError``) naming the invariant and the combatant; off, it
    costs nothing. ``move_view`` (default ``False``; a constructor keyword) appends the move
    view to every observation vector, and ``aim_view`` (default ``False``; likewise) the aim
    view, and ``attack_view`` (likewise) the attack view (see Observation Space). ``infos``
    (default ``"numeric"``; a constructor keyword; ``INFO_MODES``): ``{"round", "phase",
    "new_events"}`` as ints (``phase`` indexes ``INFO_PHASES``), which clients that turn info
    values into tensors take (TorchRL, Tianshou); ``"events"`` the events since the agent's
    previous step (a list of dicts, ``"events"``), the phase name and the round; ``"none"``
    an empty dict. The event log stays in ``battle.events`` and ``new_events(agent)``.

    ## Misuse
    ``step``/``observe``/``last``/``state``/``action_mask`` before ``reset`` raise
    ``RuntimeError`` ("call reset() first"), as does ``step`` once every agent is done ("the
    episode is over: call reset()"). An action that is not an int or is out of range raises
    ``ValueError`` naming the agent; an illegal one too under ``illegal_action="raise"`` (with
    the label and reason); a dead agent's only action is ``None``. Unknown agent names raise
    ``ValueError`` listing the agents; a seed that is not an int raises ``TypeError``.

    ## Version History
    * v0: initial release.
    """

    metadata = {"name": "traveller_combat_v0",
                "render_modes": ["ansi", "rgb_array", "human"],
                "is_parallelizable": False, "render_fps": 4}
    #: The engine battles run on (``CoreTravellerEnv``: ``"core"``).
    backend = "python"

    def __init__(self, scenario: ScenarioSource = "duel", render_mode: str | None = None,
                 **options: Any) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; use None, "
                             + " or ".join(repr(m) for m in self.metadata["render_modes"]))
        check = options.pop("check_invariants", False)
        if not isinstance(check, bool):
            raise TypeError(f"check_invariants must be True or False, got {check!r}")
        self._check_invariants = check
        infos_mode = options.pop("infos", "numeric")
        if infos_mode not in INFO_MODES:
            raise ValueError(f"infos must be one of {', '.join(map(repr, INFO_MODES))}, got "
                             f"{infos_mode!r}")
        #: What ``infos[agent]`` holds: ``"numeric"``, ``"events"`` or ``"none"``
        #: (see ``INFO_MODES``).
        self.infos_mode: str = infos_mode
        self._info_events = infos_mode == "events"
        self._info_numbers = infos_mode == "numeric"
        knockout = options.pop("terminate_on_knockout", False)
        if not isinstance(knockout, bool):
            raise TypeError(f"terminate_on_knockout must be True or False, got {knockout!r}")
        #: ``True``: a knocked-out agent terminates at once (its dead step mid-battle);
        #: ``False`` (default): it stays in ``agents`` until the battle ends (Episode End).
        self.terminate_on_knockout: bool = knockout
        illegal = options.pop("illegal_action", None)
        if illegal is not None and illegal not in ILLEGAL_ACTION_MODES:
            raise ScenarioError("env options", "illegal_action", "Input should be "
                                f"{', '.join(map(repr, ILLEGAL_ACTION_MODES))} (got {illegal!r})")
        if illegal in ("raise", "penalize"):
            options["illegal_action"] = illegal  # the scenario option
        views: dict[str, bool] = {}
        for view in VIEWS:  # move_view, aim_view, attack_view
            on = options.pop(view, False)
            if not isinstance(on, bool):
                raise TypeError(f"{view} must be True or False, got {on!r}")
            views[view] = on
        self.move_view: bool = views["move_view"]
        self.aim_view: bool = views["aim_view"]
        self.attack_view: bool = views["attack_view"]
        #: The fixed observation and action layout (``traveller_env.layout``), or ``None``.
        self.layout: Layout | None = resolve_layout(options.pop("layout", None))
        sc = load_scenario(scenario)
        max_rounds = options.pop("max_rounds", None)
        if max_rounds is not None:
            if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
                raise ValueError(f"max_rounds must be a positive integer, got {max_rounds!r}")
            sc = sc.model_copy(update={"max_rounds": max_rounds})
        self.scenario: Scenario = with_options(sc, options, source="env options")
        self.render_mode = render_mode
        if render_mode == "human":  # draw after every reset and step (costs nothing otherwise)
            from traveller_env.replay.render import HumanWindow

            # (ImportError naming the extra now, without pygame; the window opens at reset)
            self._window = HumanWindow(f"{self.metadata['name']}: {self.scenario.name}",
                                       self.metadata["render_fps"])
            self.reset, self.step = self._reset_and_draw, self._step_and_draw
        template = build_battle(self.scenario, seed=0)
        self._catalogue = ActionCatalogue(template)
        if self.layout is not None:
            self.layout.check(template, self.scenario.name)
        self._obs_builder = ObservationBuilder(template, **views, layout=self.layout)
        self._views = views
        self._layout_tables: dict[tuple, tuple[ObservationBuilder, RelativeActions]] = {}
        self.possible_agents = [c.id for c in template.combatants]
        self.agents = []
        self._side_of = {c.id: c.side for c in template.combatants}
        n, d = self._catalogue.n, self._obs_builder.size
        self._action_space = spaces.Discrete(n)
        self._observation_space = spaces.Dict({
            "observation": spaces.Box(-1.0, 1.0, shape=(d,), dtype=np.float32),
            "action_mask": spaces.Box(0, 1, shape=(n,), dtype=np.int8),
        })
        self.observation_spaces = {a: self._observation_space for a in self.possible_agents}
        self.action_spaces = {a: self._action_space for a in self.possible_agents}
        self.state_space = spaces.Box(-1.0, 1.0, shape=(self._obs_builder.state_size,),
                                      dtype=np.float32)
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        self._n_actions = n
        self._side_names = [s.name for s in self.scenario.sides]
        #: How illegal actions are answered (``ILLEGAL_ACTION_MODES``): the keyword's, else the
        #: scenario's ``options.illegal_action``.
        self.illegal_action: str = illegal or self.scenario.options.illegal_action
        self._raise_illegal = self.illegal_action == "raise"
        self._end_on_illegal = self.illegal_action == "terminate"
        self._scorer = RewardScorer(self.scenario.rewards,
                                    [self._side_of[a] for a in self.possible_agents])
        self._new_engine = self._engine_factory()
        self._engine: Engine | None = None
        self._ledger: RewardLedger | None = None
        self.battle: Battle | None = None
        self._rewards_dirty = False
        self._seeds: np.random.Generator | None = None  # unseeded resets' seeds (see reset)

    def _engine_factory(self) -> Callable[[int, Dice | None], Engine]:
        """What makes each ``reset``'s engine from the seed (and scripted dice, if any)."""
        return PythonEngineFactory(self.scenario, self._catalogue, self._obs_builder,
                                   self.possible_agents)

    # ------------------------------------------------------------------ public metadata
    @property
    def catalogue(self) -> ActionCatalogue:
        """The scenario's action catalogue (``encoding.ActionCatalogue``: the actions behind
        the indices, and the reference mask ``mask_slow``); treat it as read-only."""
        return self._catalogue

    @property
    def action_labels(self) -> list[str]:
        """The label of each action index."""
        return list(self._catalogue.labels)

    @property
    def view(self) -> BattleView:
        """A read-only view of the current battle (for scripted policies; see ``view.py``; on
        the core, of the Python engine's twin of its battle)."""
        if self._engine is None:
            raise RuntimeError("call reset() before reading the battle view")
        return BattleView(self._engine.python)

    def action_index(self, label: str) -> int:
        """The index of an action label (``ValueError`` when it is not in the space)."""
        return self._catalogue.index(label)

    @property
    def observation_labels(self) -> list[str]:
        """The name of each entry of the observation vector."""
        return list(self._obs_builder.labels)

    @property
    def state_labels(self) -> list[str]:
        """The name of each entry of ``state()``."""
        return list(self._obs_builder.state_labels)

    def side_of(self, agent: str) -> int:
        """The side index (0 or 1, scenario order) of an agent."""
        self._check_agent(agent)
        return self._side_of[agent]

    def observation_slots(self, agent: str) -> list[str | None]:
        """Which combatant sits in each slot of ``agent``'s observation."""
        self._check_agent(agent)
        return self._obs_builder.slots(agent)

    @property
    def relative_actions(self) -> RelativeActions:
        """Seat-independent action indices (targets named by observation slot), for policies
        that play more than one seat; see ``encoding.RelativeActions``."""
        rel = getattr(self, "_relative", None)
        if rel is None:
            b = self._obs_builder
            names = ([f"ally{k}" for k in range(b.n_ally_slots)]
                     + [f"enemy{k}" for k in range(b.n_enemy_slots)])
            labels = None if self.layout is None else self.layout.action_labels()
            rel = RelativeActions(self._catalogue, {a: b.slots(a) for a in self.possible_agents},
                                  names, labels)
            self._relative = rel
        return rel

    def _layout_table(self, layout: Layout | str | Mapping,
                      views: Mapping[str, bool]) -> tuple[ObservationBuilder, RelativeActions]:
        """The observation builder and slot-relative actions of ``layout`` with ``views`` for
        this env's scenario (``LayoutError`` when it does not fit), built once."""
        resolved = resolve_layout(layout)
        key = (resolved, *(bool(views.get(v, False)) for v in VIEWS))
        table = self._layout_tables.get(key)
        if table is None:
            template = build_battle(self.scenario, seed=0)
            resolved.check(template, self.scenario.name)
            builder = ObservationBuilder(template, layout=resolved,
                                         **{v: bool(views.get(v, False)) for v in VIEWS})
            rel = RelativeActions(self._catalogue,
                                  {a: builder.slots(a) for a in self.possible_agents},
                                  resolved.slot_names(), resolved.action_labels())
            table = self._layout_tables[key] = (builder, rel)
        return table

    def layout_observation(self, agent: str, layout: Layout | str | Mapping,
                           **views: bool) -> np.ndarray:
        """``agent``'s observation laid out by ``layout`` with ``views`` (``move_view=True``,
        ...), whatever this env's own layout and views: for policies trained on a layout that play
        in any env whose scenario fits it (``traveller_agents.ppo_policy``). ``LayoutError`` names
        the limit a scenario breaks."""
        if self.battle is None or agent not in self._side_of:
            self._require_reset("layout_observation()")
            self._check_agent(agent)
        builder, _ = self._layout_table(layout, views)
        return builder.observe(self._python_battle(), agent)

    def layout_actions(self, layout: Layout | str | Mapping) -> RelativeActions:
        """The slot-relative actions of ``layout`` for this env's scenario (its labels are the
        layout's ``action_labels()``; ``to_absolute``/``mask`` translate for each agent)."""
        return self._layout_table(layout, {})[1]

    def observation_space(self, agent: str) -> spaces.Dict:
        """The (cached) observation space; the same object on every call."""
        self._check_agent(agent)
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """The (cached) action space; the same object on every call."""
        self._check_agent(agent)
        return self._action_space

    def _check_agent(self, agent: str) -> None:
        if agent not in self._side_of:
            raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(self.possible_agents)}")

    # ------------------------------------------------------------------ AEC API
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a new battle. ``seed`` (an int) fixes every roll; ``None`` draws the next
        battle seed from a generator seeded by the last seeded ``reset`` (fresh entropy if
        never seeded), so that a run seeded once is reproducible (Gymnasium's convention).

        ``options`` may hold ``{"dice": <Dice>}`` to replace the seeded dice (e.g.
        ``ScriptedDice`` in rules tests); other keys are ignored, since scenario options are
        fixed at construction (PettingZoo's ``api_test`` passes arbitrary reset options).
        """
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
        if seed is not None:  # later unseeded resets continue from it (Gymnasium's convention)
            self._seeds = np.random.default_rng(int(seed) & (2**64 - 1))
            battle_seed = int(seed)
        elif self._seeds is not None:
            battle_seed = int(self._seeds.integers(2**63))
        else:
            battle_seed = secrets.randbits(63)
        #: The seed of the battle now running (``reset(seed=battle_seed)`` replays it).
        self.battle_seed: int = battle_seed
        dice = (options or {}).get("dice")
        if dice is not None and not isinstance(dice, Dice):
            raise TypeError(f"reset options['dice'] must be a Dice, got {type(dice).__name__}")
        engine = self._new_engine(self.battle_seed, dice)
        self._engine = engine
        self.battle = engine.battle
        self._ledger = self._scorer.ledger(engine.counters)  # what rewards are scored from
        self._rewards_dirty = False  # True while some agent's last-step reward is not 0
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._cursor = dict.fromkeys(self.agents, 0)
        if self._info_numbers:
            counters = engine.counters
            start = {"round": counters.round, "phase": _PHASE_CODE[counters.phase],
                     "new_events": 0}
            self.infos = {a: dict(start) for a in self.agents}
        else:
            self.infos = {a: {"events": []} if self._info_events else {} for a in self.agents}
        self._skip_agent_selection = None
        self.agent_selection = self.battle.current_agent
        self._refresh_info(self.agent_selection)
        if self._check_invariants:
            self._run_invariant_checks(0)

    def _require_reset(self, what: str) -> None:
        if self.battle is None:
            raise RuntimeError(f"{what} called before reset(): call reset() first")

    def last(self, observe: bool = True) -> tuple:
        """``(observation, cumulative reward, terminated, truncated, info)`` of the selected
        agent (PettingZoo's ``last``)."""
        if self._engine is None:
            self._require_reset("last()")
        if not self.agents:
            raise RuntimeError("last() called after the episode is over (every agent is "
                               "done): call reset()")
        agent = self.agent_selection
        return (self.observe(agent) if observe else None, self._cumulative_rewards[agent],
                self.terminations[agent], self.truncations[agent], self.infos[agent])

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``{"observation": float32 vector, "action_mask": int8 mask}`` for ``agent`` (new
        arrays)."""
        engine = self._engine
        seat = self._seat.get(agent)
        if engine is None or seat is None:  # the checks, inlined (hot)
            self._require_reset("observe()")
            self._check_agent(agent)
        return engine.observe(seat, agent == self.agent_selection)

    def observation_vector(self, agent: str) -> np.ndarray:
        """Only the float32 observation vector of ``agent`` (``observe`` without the mask)."""
        engine = self._engine
        seat = self._seat.get(agent)
        if engine is None or seat is None:
            self._require_reset("observation_vector()")
            self._check_agent(agent)
        return engine.observation_vector(seat)

    def move_view_vector(self, agent: str) -> np.ndarray:
        """The move view of ``agent`` alone (float32; the entries ``move_view=True`` appends to
        its observation), whatever this env's own ``move_view``: for policies trained with it
        that play in an env without it (``traveller_agents.ppo_policy``)."""
        if self.battle is None or agent not in self._side_of:
            self._require_reset("move_view_vector()")
            self._check_agent(agent)
        return np.asarray(move_view(self._python_battle(), agent), dtype=np.float32)

    def aim_view_vector(self, agent: str) -> np.ndarray:
        """The aim view of ``agent`` alone (float32; the entries ``aim_view=True`` appends to
        its observation), whatever this env's own ``aim_view``: for policies trained with it
        that play in an env without it (``traveller_agents.ppo_policy``)."""
        if self.battle is None or agent not in self._side_of:
            self._require_reset("aim_view_vector()")
            self._check_agent(agent)
        return np.asarray(self._obs_builder.aim_view_entries(self._python_battle(), agent),
                          dtype=np.float32)

    def attack_view_vector(self, agent: str) -> np.ndarray:
        """The attack view of ``agent`` alone (float32; the entries ``attack_view=True``
        appends to its observation), whatever this env's own ``attack_view``: for policies
        trained with it that play in an env without it (``traveller_agents.ppo_policy``)."""
        if self.battle is None or agent not in self._side_of:
            self._require_reset("attack_view_vector()")
            self._check_agent(agent)
        return np.asarray(self._obs_builder.attack_view_entries(self._python_battle(), agent),
                          dtype=np.float32)

    def _python_battle(self) -> Battle:
        """The Python engine's battle (on the core, its Python twin)."""
        return self.battle if self._engine is None else self._engine.python

    def action_mask(self, agent: str | None = None) -> np.ndarray:
        """The action mask of ``agent`` (default: the selected agent)."""
        self._require_reset("action_mask()")
        if agent is not None:
            self._check_agent(agent)
        return self._mask_for(self.agent_selection if agent is None else agent)

    def _mask_for(self, agent: str) -> np.ndarray:
        """The mask of ``agent``: all zeros unless it is selected and decides."""
        return self._engine.mask(self._seat[agent], agent == self.agent_selection)

    def state(self) -> np.ndarray:
        """The global state vector (see ``state_labels``)."""
        self._require_reset("state()")
        return self._engine.state()

    def step(self, action: int | np.integer | None) -> None:
        """Take ``action`` (an index into ``action_labels``) for the selected agent."""
        engine = self._engine
        if engine is None or type(action) is not int or not self.agents:
            return self._step_checked(action)  # the checks and their errors, or a dead step
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent] or not (
                0 <= action < self._n_actions):
            return self._step_checked(action)
        first_event = len(engine.events)
        penalized = -1
        try:
            decider = engine.take(action)
        except IllegalActionError as exc:
            label = self._catalogue.actions[action].label
            if self._raise_illegal:
                # Refused before any state changes (the accumulated reward stays for a retry).
                raise ValueError(f"{agent}: illegal action {label!r} (index {action}): "
                                 f"{exc.reason}") from None
            decider = engine.forfeit(label, exc.reason)
            penalized = self._seat[agent]
            if self._end_on_illegal:
                warnings.warn(f"{agent}: illegal action {label!r} (index {action}): "
                              f"{exc.reason}; the episode ends with -1 for {agent} "
                              "(illegal_action='terminate'; the action_mask holds the legal "
                              "actions)", stacklevel=2)
        self._cumulative_rewards[agent] = 0.0
        self._cursor[agent] = first_event
        if self._rewards_dirty:
            self._clear_rewards()
        counters = engine.counters
        gains, dones_changed = self._ledger.score(counters, penalized)
        if gains is None:  # every agent's reward stays 0
            self._rewards_dirty = False
        else:
            self._rewards_dirty = True
            rewards, cumulative, seat = self.rewards, self._cumulative_rewards, self._seat
            for a in rewards:  # the live agents (the ledger gives the others nothing)
                gain = gains[seat[a]]
                rewards[a] = gain
                cumulative[a] += gain
        if decider >= 0:
            self.agent_selection = self.possible_agents[decider]
        if dones_changed:  # only then can an agent's part in the battle have ended
            self._update_dones()
            self._deads_step_first()
            for a in self.agents:
                if self.terminations[a] or self.truncations[a]:
                    self._refresh_info(a)
        if penalized >= 0 and self._end_on_illegal:
            self._end_after_illegal()
        sel = self.agent_selection
        infos = self.infos
        if sel in infos:  # _refresh_info(sel), inlined (hot)
            if self._info_numbers:
                infos[sel] = {"round": counters.round, "phase": _PHASE_CODE[counters.phase],
                              "new_events": len(engine.events) - self._cursor[sel]}
            elif self._info_events:
                infos[sel] = {"events": engine.events[self._cursor[sel]:],
                              "phase": counters.phase, "round": counters.round}
        if self._check_invariants:
            self._run_invariant_checks(first_event)
        return None

    def _step_checked(self, action: Any) -> None:
        """``step`` off the fast path: the errors before ``reset`` and after the end, a dead
        step, or an action that is not a plain int in range (checked, then taken)."""
        self._require_reset("step()")
        if not self.agents:
            raise RuntimeError("step() called after the episode is over (every agent is "
                               "terminated or truncated): call reset() to start a new one")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                state = "terminated" if self.terminations[agent] else "truncated"
                raise ValueError(f"{agent} is {state}: its only valid action is None (its "
                                 f"dead step), got {action!r}")
            first_event = len(self._engine.events)
            self._was_dead_step(action)
            if self.agents:  # the restored selection's info may predate the fatal step
                self._refresh_info(self.agent_selection)
            if self._check_invariants:
                self._run_invariant_checks(first_event)
            return
        if type(action) is not int:
            if action is None:
                raise ValueError(f"{agent}: action None is only for agents that are "
                                 "terminated or truncated; this agent must choose an action")
            if isinstance(action, bool) or not isinstance(action, int | np.integer):
                raise ValueError(f"{agent}: action {action!r} (a {type(action).__name__}, "
                                 "not an int) is out of range; expected an int in "
                                 f"[0, {self._catalogue.n}), an index into action_labels")
            action = int(action)
        if not 0 <= action < self._catalogue.n:
            raise ValueError(f"{agent}: action {action!r} is out of range; expected an int in "
                             f"[0, {self._catalogue.n}), an index into action_labels")
        self.step(action)  # a plain int in range now: the fast path

    def _run_invariant_checks(self, first_event: int) -> None:
        """``check_invariants=True``: the battle's invariants after a step, plus the
        environment's own: the selected live agent is the deciding one, with a non-zero mask,
        every agent's observation lies in [-1, 1], and every reward is finite. On the core,
        first the cross-check of the core against the Python twin (``check_against_twin``),
        then these checks on the twin."""
        engine = self._engine
        engine.check_against_twin(self._obs_builder, self.agents)
        b = engine.python
        check_new_events(b, first_event)
        mask = None
        sel = self.agent_selection
        if self.agents and not b.done and not (self.terminations[sel] or self.truncations[sel]):
            if sel != b.current_agent:
                raise InvariantError("decision", sel, f"selected, but {b.current_agent} "
                                     "must decide")
            mask = self._catalogue.mask(b)
        check_invariants(b, self._catalogue, mask)
        for a in self.agents:
            vec = self._obs_builder.observe(b, a)
            if not (vec.min() >= -1.0 and vec.max() <= 1.0):  # also refuses NaN
                j = int(np.flatnonzero(~((vec >= -1.0) & (vec <= 1.0)))[0])
                raise InvariantError("observation", a, f"{self._obs_builder.labels[j]} = "
                                     f"{vec[j]!r}, outside [-1, 1]")
        for a, r in self._cumulative_rewards.items():
            if not math.isfinite(r):
                raise InvariantError("reward", a, f"cumulative reward {r!r}")

    # ------------------------------------------------------------------ helpers
    def _refresh_info(self, agent: str) -> None:
        infos = self.infos
        if agent in infos and (self._info_numbers or self._info_events):
            engine = self._engine
            counters = engine.counters
            if self._info_numbers:
                infos[agent] = {"round": counters.round, "phase": _PHASE_CODE[counters.phase],
                                "new_events": len(engine.events) - self._cursor[agent]}
            else:
                infos[agent] = {"events": engine.events[self._cursor[agent]:],
                                "phase": counters.phase, "round": counters.round}

    def _end_after_illegal(self) -> None:
        """``illegal_action="terminate"``: the episode ends after the forfeited step, every
        agent still in it terminated (the offender's -1 was scored with the step)."""
        for a in self.agents:
            if not (self.terminations[a] or self.truncations[a]):
                self.terminations[a] = True
        self._deads_step_first()
        for a in self.agents:
            self._refresh_info(a)

    def new_events(self, agent: str) -> list[dict]:
        """The battle events since ``agent``'s previous step (since the start of the battle
        before its first): what ``infos[agent]["events"]`` holds when it is refreshed, but
        available whatever ``infos`` holds (``infos="none"``). A new list of the log's dicts."""
        engine = self._engine
        if engine is None:
            self._require_reset("new_events()")
        self._check_agent(agent)
        return engine.events[self._cursor.get(agent, 0):]

    def outcome_reward(self, side: int | str) -> float:
        """The terminal reward a side receives for the finished battle's outcome (0 while the
        battle goes on). Used by the SB3 bridge for a learner removed before the end."""
        engine = self._engine
        if engine is None or not engine.counters.done:
            return 0.0
        names = self._side_names
        name = side if isinstance(side, str) else names[side]
        index = names.index(name) if name in names else -2  # (an unknown side: never won)
        return outcome_reward(self.scenario.rewards, engine.counters.winner, index)

    def _update_dones(self) -> None:
        counters = self._engine.counters
        truncated, done, seat = counters.truncated, counters.done, self._seat
        if self.terminate_on_knockout:  # PettingZoo's per-agent termination
            for a in self.agents:
                if truncated:
                    self.truncations[a] = True
                elif done or counters.out(seat[a]):
                    self.terminations[a] = True
        elif done or truncated:  # the battle's end: every agent's
            for a in self.agents:
                if truncated and not counters.out(seat[a]):
                    self.truncations[a] = True
                else:
                    self.terminations[a] = True

    # ------------------------------------------------------------------ rendering
    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the map and the latest narrated events; ``"rgb_array"``: an image;
        ``"human"``: that image shown in a pygame window (``replay.render.HumanWindow``,
        opened at the first call), returning ``None``."""
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("render() called without a render_mode; pass render_mode="
                                  "'ansi', 'rgb_array' or 'human' to the constructor")
            return None
        from traveller_env.replay import render as _render

        battle = self._python_battle()  # (on the core, drawn from the Python twin)
        if self.render_mode == "ansi":
            return _render.render_ansi(battle)
        if self.render_mode == "human":
            self._draw_window(battle)
            return None
        return self._rgb_frame(battle)

    def _rgb_frame(self, battle: Battle) -> np.ndarray:
        """The ``rgb_array`` picture: the battle, with this turn's attacks."""
        from traveller_env.replay.render import render_rgb

        turn_attacks = [e for e in battle.events[self._last_turn_start(battle.events):]
                        if e["type"] == "attack"]
        return render_rgb(battle, attacks=turn_attacks)

    def _draw_window(self, battle: Battle) -> None:
        """``render_mode="human"``: the ``rgb_array`` picture blitted into the window (drawn
        again only when the battle or the selection has moved on since the last one)."""
        window = self._window
        key = (id(battle), len(battle.events), self.agent_selection, len(self.agents))
        if window.is_open and key == getattr(self, "_drawn", None):
            window.show_again()
            return
        self._drawn = key
        window.show(self._rgb_frame(battle))

    def _reset_and_draw(self, seed: int | None = None, options: dict | None = None) -> None:
        """``reset``, then the window drawn (``render_mode="human"``)."""
        type(self).reset(self, seed=seed, options=options)
        self.render()

    def _step_and_draw(self, action: int | np.integer | None) -> None:
        """``step``, then the window drawn (``render_mode="human"``)."""
        type(self).step(self, action)
        self.render()

    @staticmethod
    def _last_turn_start(events: list[dict]) -> int:
        for i in range(len(events) - 1, -1, -1):
            if events[i]["type"] in ("turn", "round"):
                return i
        return 0

    def close(self) -> None:
        """Close the ``render_mode="human"`` window, if one is open (nothing else to
        release)."""
        window = getattr(self, "_window", None)
        if window is not None:
            window.close()

    # ------------------------------------------------------------------ copy and pickle
    #: What ``__init__`` builds from the construction arguments (and the lazy caches and the
    #: ``render_mode="human"`` window): left out of a pickle and rebuilt when it is loaded.
    #: Every other attribute (the episode's bookkeeping) travels as it is, apart from the
    #: engine, which travels as its battle's snapshot (``Engine.saved``).
    _REBUILT_ON_LOAD = frozenset({
        "_action_space", "_catalogue", "_check_invariants", "_info_events", "_layout_tables",
        "_info_numbers", "_end_on_illegal", "illegal_action", "terminate_on_knockout",
        "_n_actions", "_new_engine", "_obs_builder", "_observation_space", "_raise_illegal",
        "_scorer", "_seat", "_side_names", "_side_of", "_views", "action_spaces", "aim_view",
        "attack_view", "infos_mode", "layout", "move_view", "observation_spaces",
        "possible_agents", "render_mode", "scenario", "state_space", "_relative", "_window",
        "_drawn", "reset", "step", "_engine", "battle"})

    def __getstate__(self) -> dict[str, Any]:
        """The env as plain data, for ``pickle`` and ``copy.deepcopy``: the construction
        arguments (the resolved scenario, views, layout, ``infos``, ``check_invariants``,
        ``render_mode``), the episode's bookkeeping (agents, rewards, terminations, infos,
        selection, reward ledger, seed) and the battle as its snapshot and event log. A copy
        continues exactly as the original; ``TypeError`` for a battle on scripted dice."""
        engine = self._engine
        episode = {k: v for k, v in vars(self).items() if k not in self._REBUILT_ON_LOAD}
        return {"format": 1,
                "init": {"scenario": self.scenario, "render_mode": self.render_mode,
                         "check_invariants": self._check_invariants, "infos": self.infos_mode,
                         "illegal_action": self.illegal_action,
                         "terminate_on_knockout": self.terminate_on_knockout,
                         **self._views, "layout": self.layout},
                "episode": episode,
                "engine": None if engine is None else engine.saved()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild the env from ``__getstate__``'s data: construct it again, put the episode's
        bookkeeping back and resume the battle from its snapshot."""
        if not isinstance(state, dict) or state.get("format") != 1:
            raise ValueError("not a pickled TravellerEnv of this version (format 1)")
        self.__init__(**state["init"])
        vars(self).update(state["episode"])
        saved = state["engine"]
        if saved is not None:
            engine = self._new_engine.resume(self.battle_seed, saved)
            self._engine = engine
            self.battle = engine.battle


class CoreTravellerEnv(TravellerEnv):
    """``TravellerEnv`` on the compiled core (``core.aec_engine.CoreEngine``): the same
    observations, masks, labels, rewards, event log and ``view``; build it with
    ``raw_env(scenario, backend="core")`` or ``env(scenario, backend="core")``.
    ``CoreUnavailableError`` when the core is not built; scripted dice (``reset(options=
    {"dice": ...})``) are refused (``ValueError``)."""

    backend = "core"

    def __init__(self, scenario: ScenarioSource = "duel", render_mode: str | None = None,
                 **options: Any) -> None:
        from .core import require
        from .core.engine import check_kinds

        require()  # CoreUnavailableError now, saying how to build it, not at the first reset
        check_kinds()
        super().__init__(scenario, render_mode=render_mode, **options)

    def _engine_factory(self) -> Callable[[int, Dice | None], Engine]:
        from .core.aec_engine import CoreEngineFactory

        return CoreEngineFactory(self.scenario, self._catalogue, self._obs_builder,
                                 move_view=self.move_view, aim_view=self.aim_view,
                                 attack_view=self.attack_view)


#: The engines an environment can run on: the Python reference and the compiled core.
ENV_BACKENDS = ("python", "core")
#: The engine ``raw_env``, ``env``, the SB3 bridge and ``vector.make`` use when none is named:
#: the compiled core (it plays the Python engine's battles exactly; see docs/core.md).
#: Without a built core they raise ``CoreUnavailableError``; pass ``backend="python"`` to run
#: the Python engine.
DEFAULT_BACKEND = "core"


def raw_env(scenario: ScenarioSource = "duel", render_mode: str | None = None,
            backend: str = DEFAULT_BACKEND, **options: Any) -> TravellerEnv:
    """The environment without wrappers (illegal actions raise ``ValueError`` unless
    ``illegal_action`` or the scenario's option says otherwise: for debugging rules and
    policies).

    ``backend``: ``"python"`` (the Python engine) or ``"core"`` (the compiled core,
    ``CoreTravellerEnv``: the same observations, masks, labels, rewards, event log and
    ``view``; ``CoreUnavailableError`` when the core is not built).
    """
    if backend == "core":
        return CoreTravellerEnv(scenario=scenario, render_mode=render_mode, **options)
    if backend != "python":
        raise ValueError(f"backend must be one of {', '.join(map(repr, ENV_BACKENDS))}, got "
                         f"{backend!r}")
    return TravellerEnv(scenario=scenario, render_mode=render_mode, **options)


def env(scenario: ScenarioSource = "duel", render_mode: str | None = None,
        backend: str = DEFAULT_BACKEND, **options: Any) -> AECEnv:
    """The environment with PettingZoo's order enforcement (``OrderEnforcingWrapper``).

    Illegal actions are answered in PettingZoo's classic way (``illegal_action="terminate"``:
    -1 for the offender, a warning, the episode's end) unless the call or the scenario names
    another ``illegal_action``. Out-of-bounds actions are refused by the environment itself
    with clear errors, so the assert-based wrappers are not needed. Unlike PettingZoo's
    wrapper, which only warns, ``step`` after the episode is over raises ``RuntimeError``.
    ``backend``: as for ``raw_env``.
    """
    scenario = classic_illegal_action(scenario, options)
    return _OrderEnforcing(raw_env(scenario, render_mode, backend=backend, **options))


def classic_illegal_action(scenario: ScenarioSource, options: dict[str, Any]) -> ScenarioSource:
    """Set ``options["illegal_action"] = "terminate"`` (PettingZoo's classic convention) unless
    ``options`` or the scenario itself names an ``illegal_action``; returns the scenario, loaded
    when it had to be read. The default of ``env`` and of the single-learner bridges."""
    if "illegal_action" in options:
        return scenario
    sc = load_scenario(scenario)
    if "illegal_action" not in sc.options.model_fields_set:
        options["illegal_action"] = "terminate"
    return sc


def _before_reset(name: str) -> AttributeError:
    return AttributeError(f"{name} cannot be accessed before reset")


def _forwarded(name: str) -> property:
    """PettingZoo attribute ``name``, read straight from the wrapped environment
    (``AttributeError`` before ``reset``, as with PettingZoo's wrapper)."""
    def get(self: _OrderEnforcing) -> Any:
        if self._has_reset:
            return getattr(self.env, name)
        raise _before_reset(name)

    return property(get, doc=f"PettingZoo's ``{name}``, read from the wrapped environment "
                             "(``AttributeError`` before ``reset``).")


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with the same guarantees (attributes before
    ``reset`` raise ``AttributeError``, calls before ``reset`` fail its assertions, ``agent_iter``
    checks that every iteration steps), plus ``step`` after the end as an error.

    The hot attributes (properties made by ``_forwarded``, below the class) and calls go
    straight to the environment instead of through ``__getattr__``, which costs about as much
    as a whole step of a trivial environment.
    """

    def _live(self, name: str) -> TravellerEnv:
        if not self._has_reset:
            raise _before_reset(name)
        return self.env

    @property
    def _cumulative_rewards(self) -> dict[str, float]:
        return self.env._cumulative_rewards

    def last(self, observe: bool = True) -> tuple:
        """As the environment's ``last`` (``AttributeError`` before ``reset``)."""
        if not self._has_reset:
            raise _before_reset("agent_selection")
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        """Refuse a step before ``reset`` (as PettingZoo's wrapper) and once every agent is
        done; otherwise the environment's ``step``."""
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        self._has_updated = True
        self.env.step(action)  # raises RuntimeError once every agent is done

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The environment's ``observe`` (refused before ``reset``)."""
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.observe(agent)


for _name in ("agents", "agent_selection", "rewards", "terminations", "truncations", "infos",
              "num_agents"):
    setattr(_OrderEnforcing, _name, _forwarded(_name))
