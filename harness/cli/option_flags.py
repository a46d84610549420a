"""The run options of every command, declared from the one table
(:data:`proofdiff.model.run_options.OPTIONS`) and read back into a
:class:`~proofdiff.model.run_options.RunOptions`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from proofdiff.model.run_options import OPTIONS, RunOptions, default_of, options_from

__all__ = ["EVERY_GROUP", "add_run_options", "run_options"]

#: Every group of the table, for a command that takes them all (``proofdiff run``).
EVERY_GROUP = ("select", "select-profile", "suites", "images", "artifacts", "report",
               "history", "outcome", "deadlines", "bisect")


def add_run_options(p: argparse.ArgumentParser, groups: Sequence[str], *,
                    choices: Mapping[str, Sequence[str]] | None = None,
                    only: Sequence[str] = ()) -> None:
    """Add the table's options of ``groups`` to ``p``, in one argument group.

    Args:
        groups: the table's groups this command takes (``select``, ``select-profile``,
            ``suites``, ``images``, ``artifacts``, ``report``, ``history``, ``outcome``,
            ``deadlines``, ``bisect``).
        choices: valid values by flag (``{"suite": [...]}``), checked by argparse.
        only: of those, only these flags (``proofdiff build`` takes ``bin-dir``, ``crate``,
            ``cache-dir``); none = all.
    """
    g = p.add_argument_group("run options (the same on every command)")
    for spec in OPTIONS:
        if spec.group not in groups or (only and spec.flag not in only):
            continue
        if spec.switch:
            g.add_argument(f"--{spec.flag}", dest=spec.dest, action="store_true",
                           help=spec.help)
            continue
        kw: dict[str, Any] = {"dest": spec.dest, "metavar": spec.metavar, "help": spec.help,
                              "default": default_of(spec)}
        if spec.parse is not None:
            kw["type"] = spec.parse
        if choices and spec.flag in choices:
            kw["choices"] = list(choices[spec.flag])
        if spec.repeat:
            kw["action"] = "append"
        if spec.bare is not None:
            kw.update(nargs="?", const=spec.bare)
        g.add_argument(f"--{spec.flag}", **kw)
        for alias in spec.aliases:  # the same option under another spelling, not listed apart
            g.add_argument(f"--{alias}", **{**kw, "help": argparse.SUPPRESS})


def run_options(args: argparse.Namespace, **fixed: Any) -> RunOptions:
    """The :class:`RunOptions` of a parsed command line; ``fixed`` fields win (the command's
    own choices, e.g. ``suites=("validity",)``)."""
    return options_from(vars(args), **fixed)
