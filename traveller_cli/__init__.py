"""The ``traveller`` command line: every command in one parser.

It sits on top of the layering (rules -> env -> bridges -> traveller_agents -> traveller_rl ->
this), so its commands may use the policies and the training layer ``traveller_rl``; the
environment's own commands (``simulate``, ``scenarios``, ``replay``) are in
``traveller_cli.env_commands``. Run it as
``traveller COMMAND ...`` or ``python -m traveller_cli COMMAND ...``. Adding a command is one entry:
``EXPERIMENTS`` for a module of ``traveller_rl`` (``"train aiming"`` is ``traveller train aiming``),
``COMMANDS`` for anything else (see ``traveller_cli.app``).
"""

from __future__ import annotations

from .app import COMMANDS, EXPERIMENTS, GROUPS, Experiment, build_parser, main

__all__ = ["COMMANDS", "EXPERIMENTS", "GROUPS", "Experiment", "build_parser", "main"]
