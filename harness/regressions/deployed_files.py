"""Production's deployed files as ``proofdiff repro`` reads them: the daemon's env file
(docker's ``--env-file`` form) and its TOML config, each refused with the file, the line and
the fix when it does not parse."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.profile_file import toml_error_where

__all__ = ["ReproError", "read_config", "read_env_file"]


class ReproError(ProofdiffError):
    """Bad input to repro (names the file, the line and the fix), or a case that does not
    reproduce."""


def read_env_file(path: str | Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (``export`` and quotes allowed, ``#`` comments, blank lines).

    Raises:
        ReproError: unreadable, or a line that is not ``KEY=VALUE`` (file:line).
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ReproError(f"env file {p}: cannot be read ({exc.strerror})",
                         fix="pass an existing file with --env-file") from None
    env: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = re.fullmatch(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)", s)
        if not m:
            raise ReproError(f"{p}:{n}: not KEY=VALUE: {line!r}",
                             fix="an env file has one variable per line, as docker's "
                                 "--env-file: write it as KEY=VALUE")
        value = m.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[m.group(1)] = value
    return env


def read_config(path: str) -> dict[str, Any]:
    """The deployed daemon config at ``path`` (TOML).

    Raises:
        ReproError: unreadable, or not TOML (file:line).
    """
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReproError(f"daemon config {path}: cannot be read ({exc.strerror})",
                         fix="pass an existing file with --config") from None
    except tomllib.TOMLDecodeError as exc:
        raise ReproError(f"{toml_error_where(path, exc)}: the deployed daemon config is not "
                         f"TOML: {exc}", fix="pass the daemon's TOML config file with "
                         "--config") from None
