"""The policy interface shared by scripted, random and trained policies.

A policy picks one action index for the selected agent of a ``TravellerEnv``::

    class MyPolicy:
        name = "mine"
        def reset(self, seed: int | None = None) -> None: ...
        def act(self, observation, action_mask, agent, env) -> int: ...

``observation`` is the agent's float32 vector, ``action_mask`` its int8 mask (the chosen
index must be legal), ``agent`` its id and ``env`` the (unwrapped) environment, whose public
API (labels, ``observation_slots``, and the read-only battle view) a scripted policy may read
but never mutate. Each policy draws randomness only from its own generator, seeded by
``reset(seed)``. The built-in ``random`` policy and the scripted policies' fallbacks use the
shared PCG32 (``policy_rng``; the compiled core's in-core policies draw from the same stream).

A policy that never reads ``observation`` (it decides from the mask and the view) may say so
with a class attribute ``needs_observation = False``; callers that honour it
(``policy_action``, the SB3 bridge, the evaluation and tournament loops) then pass ``None``
instead of building the vector, which is a large share of an environment step.

**Policies by name.** ``make_policy("rush", seed=0)`` builds a policy from the registry:
``random`` and ``passive`` are built in; ``register_policy(name, factory)`` adds one; and any
installed distribution may declare more as entry points of the group
``traveller_tactics.policies`` (this package declares the scripted NPCs of ``agents``, so
``traveller_env`` finds them without importing ``agents``: the entry point is loaded only when
its name is asked for). ``policy_names()`` lists every name. ``search`` is the compiled core's
look-ahead NPC, whose name carries its parameters: ``search-64``, ``search-64-model=marksman``
(``is_search_name``; ``traveller_env.core.search``, docs/search.md). A factory is called as
``factory(seed=seed, **kwargs)`` and must return a ``Policy`` (a policy class whose
constructor takes ``seed=`` is a factory).

**Your own policy, without registering it.** Wherever a policy is named (``make_policy``,
``vector.make(opponents=...)``, ``traveller tournament --policies``, ``--vs``,
``--opponents``), a name may also be ``module:Class`` (an importable module, or a ``.py``
file of that dotted path under the current directory) or a Python file,
``path/to/file.py:Class`` (or just ``path/to/file.py`` when the file defines exactly one
policy class). ``Class`` may be any factory; one whose signature takes no ``seed`` is called
without it (the policy is re-seeded by ``reset(seed)`` before each battle anyway). Trained
checkpoints are files too: ``resolve_policy`` hands them to the loaders of the entry-point
group ``traveller_tactics.policy_loaders``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import re
import secrets
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .rules.rng import Pcg32

__all__ = [
    "ENTRY_POINT_GROUP",
    "LOADER_GROUP",
    "PassivePolicy",
    "Policy",
    "PolicyFactory",
    "RandomPolicy",
    "is_search_name",
    "is_user_spec",
    "legal_indices",
    "make_policy",
    "policy_action",
    "policy_names",
    "policy_rng",
    "register_policy",
    "resolve_policy",
    "unknown_policy_error",
    "user_policy_factory",
]

#: The entry-point group in which installed distributions declare policies by name.
ENTRY_POINT_GROUP = "traveller_tactics.policies"


@runtime_checkable
class Policy(Protocol):
    """What every policy implements (see the module docstring)."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new battle; re-seed the policy's own generator."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """Return a legal action index for ``agent``."""


def policy_action(policy: Policy, env: Any, agent: str) -> int:
    """``policy``'s action for ``agent``, the selected agent of ``env`` (a ``TravellerEnv``):
    the observation is built only for a policy that reads it (``needs_observation``)."""
    if getattr(policy, "needs_observation", True):
        obs = env.observe(agent)
        return int(policy.act(obs["observation"], obs["action_mask"], agent, env))
    return int(policy.act(None, env.action_mask(agent), agent, env))


def legal_indices(action_mask: np.ndarray) -> np.ndarray:
    """Indices where the mask is 1; ``ValueError`` if none (never for a selected agent)."""
    legal = np.flatnonzero(action_mask)
    if legal.size == 0:
        raise ValueError("the action mask allows no action: is this agent the selected one?")
    return legal


def policy_rng(seed: int | None = None) -> Pcg32:
    """A policy's own generator: the shared PCG32 (``traveller_env.rules.rng.Pcg32``) seeded
    with ``seed`` (an int in ``[0, 2**64 - 1]``), or from OS entropy when ``seed`` is ``None``.
    Policies draw uniform choices with ``rng.below(n)``, exactly as the compiled core's in-core
    policies do, so a seed gives the same choices on both."""
    return Pcg32(secrets.randbits(64) if seed is None else seed)


class RandomPolicy:
    """``random``: uniform over the legal actions (the floor every behaviour must beat).

    It draws ``legal[rng.below(len(legal))]`` from the shared PCG32 (``policy_rng``), the same
    stream as the compiled core's in-core ``random`` policy.
    """

    name = "random"
    needs_observation = False

    def __init__(self, seed: int | None = None) -> None:
        self.rng = policy_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the generator (``None`` keeps the current stream)."""
        if seed is not None:
            self.rng = policy_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """A uniformly random legal action."""
        legal = legal_indices(action_mask)
        return int(legal[self.rng.below(len(legal))])


class PassivePolicy:
    """``passive``: never acts (``haste:no``, ``react:none``, ``end_turn``); the target of the
    ``range_*`` scenarios."""

    name = "passive"
    needs_observation = False

    def __init__(self, seed: int | None = None) -> None:
        pass

    def reset(self, seed: int | None = None) -> None:
        """Nothing random to reseed."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The first legal of end_turn, haste:no, react:none (else any legal action)."""
        env = getattr(env, "unwrapped", env)
        for label in ("end_turn", "haste:no", "react:none"):
            i = env.action_index(label)
            if action_mask[i]:
                return i
        return int(legal_indices(action_mask)[0])


# ---------------------------------------------------------------------------- the registry
#: ``factory(seed=seed, **kwargs) -> Policy``.
PolicyFactory = Callable[..., Policy]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_REGISTERED: dict[str, PolicyFactory] = {}  # register_policy (and the built-ins)
_LOADED: dict[str, PolicyFactory] = {}  # entry points loaded so far, by name


def register_policy(name: str, factory: PolicyFactory, *, replace: bool = False) -> None:
    """Make ``factory`` available as ``make_policy(name)``.

    ``name``: letters, digits, ``_``, ``.`` and ``-``, starting with a letter or ``_`` (no
    commas: policy lists are comma-separated). Registering the same factory again is a no-op;
    another factory under a registered name raises ``ValueError`` unless ``replace=True``. A
    registered name takes precedence over an entry point of the same name.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"policy name {name!r} must be a string of letters, digits, '_', '.' "
                         "and '-', starting with a letter or '_'")
    if not callable(factory):
        raise TypeError(f"policy {name!r}: the factory must be callable (a policy class or a "
                        f"function taking seed=), got {type(factory).__name__} {factory!r}")
    current = _REGISTERED.get(name)
    if current is not None and current is not factory and not replace:
        raise ValueError(f"policy {name!r} is already registered (to {current!r}); pass "
                         "replace=True to replace it")
    _REGISTERED[name] = factory


def _entry_points(name: str | None = None) -> list[metadata.EntryPoint]:
    eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    return list(eps if name is None else eps.select(name=name))


def policy_names() -> list[str]:
    """Every policy name ``make_policy`` knows: registered ones and installed entry points
    (listed without loading them), sorted."""
    return sorted(set(_REGISTERED) | {ep.name for ep in _entry_points()})


def _entry_point_factory(name: str) -> PolicyFactory | None:
    """The factory an installed entry point declares for ``name`` (loaded once), or ``None``."""
    factory = _LOADED.get(name)
    if factory is not None:
        return factory
    eps = _entry_points(name)
    if not eps:
        return None
    if len({ep.value for ep in eps}) > 1:
        raise ValueError(f"policy {name!r} is declared by several entry points of group "
                         f"{ENTRY_POINT_GROUP!r} with different targets: "
                         + ", ".join(sorted({ep.value for ep in eps})))
    ep = eps[0]
    try:
        factory = ep.load()
    except Exception as exc:  # an ImportError, AttributeError... in the declaring package
        raise ImportError(f"policy {name!r}: its entry point {ep.value!r} (group "
                          f"{ENTRY_POINT_GROUP!r}) failed to load: {type(exc).__name__}: "
                          f"{exc}") from exc
    if not callable(factory):
        raise TypeError(f"policy {name!r}: entry point {ep.value!r} is not callable")
    _LOADED[name] = factory
    return factory


def is_user_spec(name: str) -> bool:
    """Whether ``name`` names user code: ``module:Class``, ``file.py`` or ``file.py:Class``."""
    return ":" in name or name.endswith(".py")


def _load_file(path: Path, spec_text: str) -> Any:
    """Import the Python file ``path`` once (under a name derived from its resolved path)."""
    if not path.is_file():
        raise ValueError(f"policy {spec_text!r}: no Python file {str(path)!r}")
    resolved = path.resolve()
    module_name = "traveller_user_policy_" + hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, resolved)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise ImportError(f"policy {spec_text!r}: {str(path)!r} failed to import: "
                              f"{type(exc).__name__}: {exc}") from exc
    return module


def _import_module(dotted: str, spec_text: str) -> Any:
    """``dotted`` imported normally, or, when no such module is importable, the file of that
    dotted path under the current directory (a console script does not put it on sys.path)."""
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (dotted == exc.name or dotted.startswith(exc.name + ".")):
            raise ImportError(f"policy {spec_text!r}: importing {dotted!r} failed: {exc}") from exc
        local = Path(*dotted.split(".")).with_suffix(".py")
        if local.is_file():
            return _load_file(local, spec_text)
        raise ValueError(f"policy {spec_text!r}: no module {dotted!r} (neither importable nor a "
                         f"file {str(local)!r} here)") from None


def _policy_classes(module: Any) -> list[str]:
    """The classes defined in ``module`` (not imported into it) that have act() and reset()."""
    return sorted(n for n, v in vars(module).items()
                  if inspect.isclass(v) and v.__module__ == module.__name__
                  and callable(getattr(v, "act", None)) and callable(getattr(v, "reset", None)))


def user_policy_factory(spec_text: str) -> PolicyFactory:
    """The factory a user spec names: ``module:Class``, ``path/file.py:Class`` or
    ``path/file.py`` (one policy class in the file). ``ValueError`` on a spec that names
    nothing, ``ImportError`` when the code fails to import, ``TypeError`` when the target is
    not callable."""
    where, _, attr = spec_text.rpartition(":") if ":" in spec_text else (spec_text, "", "")
    if where.endswith(".py"):
        module = _load_file(Path(where), spec_text)
    elif where and re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", where):
        module = _import_module(where, spec_text)
    else:
        raise ValueError(f"policy {spec_text!r}: expected module:Class, path/to/file.py:Class "
                         "or path/to/file.py")
    if not attr:
        found = _policy_classes(module)
        if len(found) != 1:
            raise ValueError(f"policy {spec_text!r}: the file defines {len(found)} policy "
                             f"classes ({', '.join(found) or 'none'}); name one as "
                             f"{spec_text}:Class")
        attr = found[0]
    target = getattr(module, attr, None)
    if target is None:
        raise ValueError(f"policy {spec_text!r}: {where} has no attribute {attr!r}")
    if not callable(target):
        raise TypeError(f"policy {spec_text!r}: {attr} is not a class or factory")
    try:
        takes_seed = any(p.name == "seed" or p.kind is p.VAR_KEYWORD
                         for p in inspect.signature(target).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: pass seed as to any factory
        takes_seed = True
    if takes_seed:
        return target

    def factory(seed: int | None = None, **kwargs: Any) -> Policy:
        del seed  # reset(seed) seeds it before each battle
        return target(**kwargs)

    return factory


def is_search_name(name: str) -> bool:
    """Whether ``name`` names the core's search NPC (``search`` or ``search-<params>``); whether
    its parameters are valid is for ``make_policy(name)`` to say (``ValueError`` naming one)."""
    return name == "search" or name.startswith("search-")


def _search_policy(name: str = "search", seed: int | None = None, **kwargs: Any) -> Policy:
    """``search[-<budget>][-<key>=<value>...]``: ``traveller_env.core.search.SearchPolicy``."""
    from .core.search import SearchPolicy

    return SearchPolicy(name, seed=seed, **kwargs)


def _factory(name: str) -> PolicyFactory | None:
    """The factory of a registered name, an installed entry point, a search name or a user
    spec."""
    factory = _REGISTERED.get(name) or _entry_point_factory(name)
    if factory is None and is_search_name(name):
        return functools.partial(_search_policy, name)
    if factory is None and is_user_spec(name):
        factory = user_policy_factory(name)
    return factory


def unknown_policy_error(name: str, extra: str = "") -> ValueError:
    """The error for a name nothing resolves: the known names (then ``extra``) and how to name
    your own policy."""
    return ValueError(f"unknown policy {name!r}; known: {', '.join(policy_names())}{extra}; or "
                      "your own as module:Class or path/to/file.py[:Class]")


def make_policy(name: str, seed: int | None = None, **kwargs: Any) -> Policy:
    """A new policy by name (see the module docstring): ``factory(seed=seed, **kwargs)``.

    ``ValueError`` listing the known names when ``name`` is unknown; ``ImportError`` when its
    entry point or module cannot be loaded; ``TypeError`` when the factory does not return a
    ``Policy``.
    """
    if not isinstance(name, str):
        raise TypeError(f"a policy name must be a string, got {type(name).__name__} {name!r}")
    factory = _factory(name)
    if factory is None:
        raise unknown_policy_error(name)
    policy = factory(seed=seed, **kwargs)
    if not (callable(getattr(policy, "act", None)) and callable(getattr(policy, "reset", None))):
        raise TypeError(f"policy {name!r}: its factory returned {type(policy).__name__}, which "
                        "is not a Policy (it needs act() and reset())")
    return policy


#: The entry-point group of loaders for policies stored in files (trained checkpoints): each
#: is ``loader(path, scenario, seed) -> Policy | None`` (``None``: not a file it knows).
LOADER_GROUP = "traveller_tactics.policy_loaders"


def resolve_policy(name: str, scenario: Any = None, seed: int | None = None,
                   **kwargs: Any) -> Policy:
    """A policy by name (``make_policy``: registered, entry point, ``module:Class``, a ``.py``
    file), or a policy stored in a file (a trained checkpoint) that an installed loader
    (entry-point group ``LOADER_GROUP``) accepts for ``scenario``; ``kwargs`` go to the
    factory or the loader."""
    if not isinstance(name, str):
        raise TypeError(f"a policy name must be a string, got {type(name).__name__} {name!r}")
    if name in _REGISTERED or _entry_points(name) or is_user_spec(name):
        return make_policy(name, seed=seed, **kwargs)
    for ep in metadata.entry_points(group=LOADER_GROUP):
        policy = ep.load()(name, scenario, seed, **kwargs)
        if policy is not None:
            return policy
    raise unknown_policy_error(name, ", a trained checkpoint an installed loader accepts "
                               "(.zip, .pt, .onnx, RLlib folder)")


register_policy("random", RandomPolicy)
register_policy("passive", PassivePolicy)
register_policy("search", _search_policy)
