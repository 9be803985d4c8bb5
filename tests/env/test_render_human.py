"""``render_mode="human"``: a live pygame window of the battle (``replay.render.HumanWindow``
showing ``render_rgb``'s frames), run under SDL's dummy video driver."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
from pettingzoo.test import render_test

from traveller_env import core
from traveller_env.env import env as make_env
from traveller_env.env import raw_env
from traveller_env.scenario import builtin_scenarios

pygame = pytest.importorskip("pygame")


@pytest.fixture(autouse=True)
def _dummy_display(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.setenv("SDL_AUDIODRIVER", "dummy")
    yield
    pygame.display.quit()


def _shown() -> np.ndarray:
    """The display's pixels as an (H, W, 3) array (``render_rgb``'s layout)."""
    return pygame.surfarray.array3d(pygame.display.get_surface()).swapaxes(0, 1)


def test_metadata_lists_human() -> None:
    e = raw_env("duel", backend="python")
    assert e.metadata["render_modes"] == ["ansi", "rgb_array", "human"]
    assert e.metadata["render_fps"] > 0


@pytest.mark.parametrize("name", [*builtin_scenarios(), "gen:squad@3"])
def test_render_test_passes(name: str) -> None:
    render_test(lambda render_mode=None: make_env(name, render_mode=render_mode,
                                                  backend="python"))


@pytest.mark.skipif(not core.available(), reason="the compiled core is not built here")
def test_render_test_passes_on_the_core() -> None:
    render_test(lambda render_mode=None: make_env("squad", render_mode=render_mode,
                                                  backend="core"))


@pytest.mark.parametrize("backend", ["python", pytest.param("core", marks=pytest.mark.skipif(
    not core.available(), reason="the compiled core is not built here"))])
def test_every_step_blits_the_rgb_frame(backend: str) -> None:
    """The window shows exactly the ``rgb_array`` picture after reset and after every step,
    without ``render()`` being called, and the picture changes as the battle goes on."""
    human = make_env("melee", render_mode="human", backend=backend)
    rgb = make_env("melee", render_mode="rgb_array", backend=backend)
    human.reset(seed=5)
    rgb.reset(seed=5)
    assert pygame.display.get_surface() is not None
    assert np.array_equal(_shown(), rgb.render())
    rng = np.random.default_rng(0)
    changes = 0
    before = _shown()
    for _ in range(25):
        if not human.agents:
            break
        sel = human.agent_selection
        if human.terminations[sel] or human.truncations[sel]:
            action = None
        else:
            action = int(rng.choice(np.flatnonzero(human.observe(sel)["action_mask"])))
        human.step(action)
        rgb.step(action)
        now = _shown()
        assert np.array_equal(now, rgb.render())
        changes += not np.array_equal(now, before)
        before = now
    assert changes >= 3
    human.close()
    assert pygame.display.get_surface() is None


def test_pickled_human_env_opens_its_own_window() -> None:
    e = raw_env("duel", render_mode="human", backend="python")
    e.reset(seed=1)
    twin = pickle.loads(pickle.dumps(e))
    assert twin.render_mode == "human" and twin._window is not e._window
    assert not twin._window.is_open
    twin.step(int(np.flatnonzero(twin.observe(twin.agent_selection)["action_mask"])[0]))
    assert twin._window.is_open
    twin.close()
    e.close()


def test_missing_pygame_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)
    with pytest.raises(ImportError, match=r"traveller-tactics\[render\]"):
        raw_env("duel", render_mode="human", backend="python")
