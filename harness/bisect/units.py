"""The items a bisection moves: the config delta from the good profile to the bad one, with
coupled items joined into one unit, and the intermediate profile of any set of units.

An item is one :class:`~proofdiff.model.config_delta.DeltaItem` of the effective difference (config
keys, env vars, command, mounts, ports, concurrency, job-id scheme, driver, resources). Items
move together when one is meaningless without the other:

* a mount and every key that names its container path (``mounts.params`` with
  ``config.srs.param_cache`` and ``env.FIL_PROOFS_PARAMETER_CACHE`` when they hold the same
  path): params mounted where the daemon does not read them test the profile, not the daemon;
* a published port and every key that listens on it (``ports.status = 9821`` with
  ``config.daemon.status_listen = "0.0.0.0:9821"``).

Both sides' values count: a coupling that holds on either profile joins the items.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from proofdiff.model.config_delta import ABSENT, ConfigDelta, DeltaItem
from proofdiff.model.profile import Profile

__all__ = ["Unit", "apply_units", "units_of"]


class Unit(msgspec.Struct, frozen=True, kw_only=True):
    """One or more delta items that move together; ``label`` is their paths joined by ``+``."""

    items: tuple[DeltaItem, ...]

    @property
    def label(self) -> str:
        """The items' paths, ``a + b``."""
        return " + ".join(i.path for i in self.items)

    @property
    def paths(self) -> tuple[str, ...]:
        """The items' delta paths."""
        return tuple(i.path for i in self.items)


def _values(item: DeltaItem) -> list[Any]:
    return [v for v in (item.left, item.right) if v != ABSENT]


def _coupled(a: DeltaItem, b: DeltaItem) -> bool:
    for mount, other in ((a, b), (b, a)):
        if mount.path.startswith("mounts."):
            paths = [v for v in _values(mount) if isinstance(v, str) and v.startswith("/")]
            if any(isinstance(v, str) and v.rstrip("/") in (p.rstrip("/") for p in paths)
                   for v in _values(other)):
                return True
        if mount.path.startswith("ports."):
            ports = [v for v in _values(mount) if isinstance(v, int)]
            if any(isinstance(v, str) and any(v.endswith(f":{p}") for p in ports)
                   for v in _values(other)):
                return True
    return False


def units_of(delta: ConfigDelta) -> list[Unit]:
    """The delta's items grouped into units (module docstring), in delta order."""
    items = list(delta.items)
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(items):
        for j in range(i + 1, len(items)):
            if _coupled(a, items[j]):
                parent[find(j)] = find(i)
    groups: dict[int, list[DeltaItem]] = {}
    for i, item in enumerate(items):
        groups.setdefault(find(i), []).append(item)
    return [Unit(items=tuple(g)) for g in groups.values()]


def _set(raw: dict[str, Any], parts: Sequence[str], value: Any) -> None:
    node = raw
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            if value == ABSENT:
                return
            nxt = node[p] = {}
        node = nxt
    if value == ABSENT:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = copy.deepcopy(value)


def _default(field: str) -> Any:
    """The :class:`Profile` default of a top-level setting."""
    f = next(f for f in msgspec.structs.fields(Profile) if f.name == field)
    if f.default is not msgspec.NODEFAULT:
        return f.default
    return f.default_factory() if f.default_factory is not msgspec.NODEFAULT else None


def apply_units(good: Profile, units: Iterable[Unit], *, name: str = "") -> Profile:
    """``good`` with every item of ``units`` set to its bad-side value (``ABSENT``: removed).

    Config items are set in the profile's own ``config`` (the effective value, so the merge
    over the daemon's defaults gives the bad side's value). ``overrides`` lists the items
    applied, as evidence of what the probe ran.

    Raises:
        ValueError: an item's path is not a profile setting (a delta of another shape).
    """
    raw = msgspec.to_builtins(good)
    applied = []
    for unit in units:
        for item in unit.items:
            head, *rest = item.path.split(".")
            if head not in raw:
                raise ValueError(f"delta item {item.path!r} is not a profile setting")
            if rest:
                if not isinstance(raw[head], dict):
                    raw[head] = {}
                _set(raw[head], rest, item.right)
            elif item.right == ABSENT:
                # a setting the bad side's view leaves out has no effect there (the bench
                # client's with driver 'grpc'): it takes the profile's default
                raw[head] = msgspec.to_builtins(_default(head))
            else:
                raw[head] = copy.deepcopy(item.right)
            applied.append(item.render())
    raw["name"] = name or good.name
    raw["overrides"] = applied
    return msgspec.convert(raw, Profile)
