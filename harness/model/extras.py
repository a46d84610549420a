"""The optional parts of the install, as pyproject.toml's extras name them, and the one error a
command gives when it needs a part that is not installed.

* ``fleet``: ``distributed``, ``dask`` and ``asyncssh``: ``--cluster`` and ``--hosts``
  (:mod:`proofdiff.fleet`);
* ``postgres``: ``psycopg``: ``--history postgresql://...`` (:mod:`proofdiff.history`).

``pip install proofdiff`` installs neither; ``make setup`` installs both (requirements.lock).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from proofdiff.model.errors import ProofdiffError

__all__ = ["EXTRAS", "require"]

#: The modules of each extra, by the extra's name.
EXTRAS: dict[str, tuple[str, ...]] = {"fleet": ("distributed", "dask", "asyncssh"),
                                      "postgres": ("psycopg",)}


def require(extra: str, module: str, *, needed_by: str,
            error: type[ProofdiffError] = ProofdiffError) -> ModuleType:
    """``module`` of ``extra``, imported.

    Args:
        needed_by: what needs it, as the user wrote it (``--cluster/--hosts``).
        error: the error type to raise (the caller's own, e.g. ``FleetError``), a
            :class:`ProofdiffError`.

    Raises:
        ProofdiffError: (``error``) ``module`` does not import: the cause names the extra and
            the import's own words; the fix is ``pip install 'proofdiff[EXTRA]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise error(f"{needed_by} needs the {extra} extra, and {module} does not import "
                    f"({exc})", fix=f"pip install 'proofdiff[{extra}]' (or `make setup` in a "
                                    "checkout)") from None
