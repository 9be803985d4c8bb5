"""Policies by name (``traveller_env.policy``): the registry, the built-ins, and the entry points
through which installed packages (``agents``, here) declare theirs without ``traveller_env``
importing them."""

from __future__ import annotations

import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from traveller_agents.scripted import POLICIES
from traveller_env import policy as policy_module
from traveller_env.policy import (
    ENTRY_POINT_GROUP,
    PassivePolicy,
    RandomPolicy,
    make_policy,
    policy_names,
    register_policy,
)

ROOT = Path(__file__).resolve().parents[2]
BUILT_IN = {"random": RandomPolicy, "passive": PassivePolicy}

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test sees the built-ins only, and its registrations are undone afterwards."""
    monkeypatch.setattr(policy_module, "_REGISTERED", dict(BUILT_IN))
    monkeypatch.setattr(policy_module, "_LOADED", {})


def declared_entry_points() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return data["project"]["entry-points"][ENTRY_POINT_GROUP]


def test_builtins():
    assert {"random", "passive"} <= set(policy_names())
    p = make_policy("random", seed=3)
    assert isinstance(p, RandomPolicy)
    assert p.rng.next_u32() == RandomPolicy(seed=3).rng.next_u32()
    assert isinstance(make_policy("passive"), PassivePolicy)


def test_register_make_and_list():
    class Mine(RandomPolicy):
        name = "mine"

        def __init__(self, seed=None, bias=0):
            super().__init__(seed)
            self.bias = bias

    register_policy("mine", Mine)
    register_policy("mine", Mine)  # the same factory again: a no-op
    p = make_policy("mine", seed=1, bias=2)
    assert isinstance(p, Mine) and p.bias == 2
    assert "mine" in policy_names()
    with pytest.raises(ValueError, match="already registered"):
        register_policy("mine", RandomPolicy)
    register_policy("mine", RandomPolicy, replace=True)
    assert type(make_policy("mine")) is RandomPolicy


@pytest.mark.parametrize(("name", "factory", "error", "match"), [
    ("a,b", RandomPolicy, ValueError, "must be a string of letters"),
    ("", RandomPolicy, ValueError, "must be a string of letters"),
    (3, RandomPolicy, ValueError, "must be a string of letters"),
    ("fine", "not callable", TypeError, "the factory must be callable"),
])
def test_register_refuses_bad_input(name, factory, error, match):
    with pytest.raises(error, match=match):
        register_policy(name, factory)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown policy 'nobody'; known: .*passive, random"):
        make_policy("nobody")
    with pytest.raises(TypeError, match="policy name must be a string"):
        make_policy(None)


def test_a_factory_that_returns_no_policy_is_refused():
    register_policy("broken", lambda seed=None: object())
    with pytest.raises(TypeError, match="'broken': its factory returned object, which is not a "
                                        "Policy"):
        make_policy("broken")


def test_pyproject_declares_every_scripted_policy_as_an_entry_point():
    """Every name of agents' table is built in or declared, and each declaration resolves to
    the table's class (what ``EntryPoint.load`` will import once the package is installed)."""
    declared = declared_entry_points()
    missing = sorted(set(POLICIES) - set(declared) - set(BUILT_IN))
    assert not missing, f"pyproject.toml does not declare {missing} under {ENTRY_POINT_GROUP}"
    for name, cls in BUILT_IN.items():
        assert POLICIES[name] is cls
    for name, target in declared.items():
        module, _, attr = target.partition(":")
        imported = __import__(module, fromlist=[attr])
        assert getattr(imported, attr) is POLICIES[name], name


def _fake_distribution(tmp_path: Path, entries: str) -> Path:
    """A distribution's metadata on ``sys.path`` (``*.dist-info`` with ``entry_points.txt``),
    as ``pip install`` writes it."""
    info = tmp_path / "fake_tactics-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-tactics\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + textwrap.dedent(entries))
    return tmp_path


def test_entry_points_are_found_by_name_and_loaded_lazily(tmp_path, monkeypatch):
    lines = "".join(f"ep_{n} = {t}\n" for n, t in declared_entry_points().items())
    monkeypatch.syspath_prepend(str(_fake_distribution(tmp_path, lines)))
    names = policy_names()
    assert {f"ep_{n}" for n in declared_entry_points()} <= set(names)
    assert policy_module._LOADED == {}  # listed without loading anything
    p = make_policy("ep_rush", seed=0)
    assert type(p) is POLICIES["rush"]
    assert set(policy_module._LOADED) == {"ep_rush"}  # only the one asked for
    # A registered name wins over an entry point of the same name.
    register_policy("ep_marksman", RandomPolicy)
    assert type(make_policy("ep_marksman")) is RandomPolicy


def test_a_broken_entry_point_says_which_and_why(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_fake_distribution(
        tmp_path, "ghost = no_such_module_xyz:Ghost\n")))
    assert "ghost" in policy_names()
    with pytest.raises(ImportError, match=r"policy 'ghost': its entry point "
                                          r"'no_such_module_xyz:Ghost' .* failed to load: "
                                          "ModuleNotFoundError"):
        make_policy("ghost")



def test_resolve_policy_finds_names_and_installed_loaders(tmp_path):
    """``resolve_policy``: registered names first, then the installed loaders of trained
    checkpoints (``traveller_agents.registry.load_trained`` through the entry-point group)."""
    from traveller_env.policy import LOADER_GROUP, resolve_policy

    assert resolve_policy("random").name == "random"
    loaders = [ep.value for ep in metadata.entry_points(group=LOADER_GROUP)]
    assert loaders == ["traveller_agents.registry:load_trained"]
    with pytest.raises(ValueError, match="needs the scenario"):
        resolve_policy(str(tmp_path / "model.zip"))
    with pytest.raises(ValueError, match="unknown policy 'nobody'"):
        resolve_policy("nobody", scenario="duel")
