"""The effective difference between two profiles (or two containers).

:func:`profile_delta` diffs the effective settings of two profiles and gives one item per
difference (``config.pipeline.enabled: False -> True``); :func:`inspect_delta` does the same for
two ``docker inspect`` snapshots (env, command, mounts, limits).

The views are plain data that proofdiff builds itself (dicts, lists, scalars), so the diff is a
short walk of the two trees here. It was deepdiff's, whose import (numpy with it) cost 0.6 s on
the H200 and 1.3 s here per run, for two dicts of a few dozen keys (issue 18).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from proofdiff.model.config_delta import ABSENT, ConfigDelta, DeltaItem
from proofdiff.model.profile import Profile

__all__ = ["diff_views", "inspect_delta", "profile_delta", "profile_view"]


def profile_view(profile: Profile) -> dict[str, Any]:
    """The effective settings of a profile as plain data (what gets diffed and reported).

    ``config`` is the merged daemon config (defaults included), so a key set on one side only to
    its default value is not a difference; the bench client's settings appear only where it runs
    (driver ``bench-cli``).
    """
    return {
        "image": profile.image, "workload": profile.workload, "driver": profile.driver.value,
        "concurrency": profile.concurrency, "job_ids": profile.job_ids.value,
        "miner_id": profile.miner_id, "jobs": profile.jobs, "env": dict(profile.env),
        "config": profile.effective_config(), "command": list(profile.command),
        "mounts": {"params": profile.param_mount_path(), **profile.mounts},
        "ports": dict(profile.ports),
        "gpus": list(profile.gpus) if isinstance(profile.gpus, tuple) else profile.gpus,
        "network": profile.network, "cpus": profile.cpus, "mem_limit": profile.mem_limit,
        "timeout_s": profile.timeout_s, "ready_timeout_s": profile.ready_timeout_s,
        **({"bench_tool": profile.bench_tool, "bench_args": list(profile.bench_args)}
           if profile.driver == "bench-cli" else {}),
    }


def _dotted(parts: Sequence[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _get(tree: Any, parts: Sequence[Any]) -> Any:
    for p in parts:
        try:
            tree = tree[p]
        except (KeyError, IndexError, TypeError):
            return ABSENT
    return tree


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type all the way down (``1`` is not ``1.0``, nor ``True``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _paths(left: Any, right: Any, at: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Where two plain-data trees differ: a key on one side only, or a value (a list is one
    value: ``command: [...] -> [...]``) of another type or content; dicts are walked into."""
    if not (isinstance(left, Mapping) and isinstance(right, Mapping)):
        return [] if _same(left, right) else [at]
    out: list[tuple[Any, ...]] = []
    for k in {*left, *right}:
        if k in left and k in right:
            out += _paths(left[k], right[k], (*at, k))
        else:
            out.append((*at, k))
    return out


def diff_views(left: Mapping[str, Any], right: Mapping[str, Any], left_label: str = "left",
               right_label: str = "right") -> ConfigDelta:
    """Diff two plain-data views; lists are compared whole (``command: [...] -> [...]``), a
    table on one side only is one item (``config.pipline: <absent> -> {...}``)."""
    paths = _paths(dict(left), dict(right), ())
    items = tuple(DeltaItem(path=_dotted(ps), left=_get(left, ps), right=_get(right, ps))
                  for ps in sorted(paths, key=_dotted))
    return ConfigDelta(left=left_label, right=right_label, items=items)


def profile_delta(left: Profile, right: Profile) -> ConfigDelta:
    """Effective difference ``left -> right`` between two profiles (see :func:`profile_view`)."""
    return diff_views(profile_view(left), profile_view(right), left.name, right.name)


def inspect_delta(left: Mapping[str, Any], right: Mapping[str, Any], left_label: str = "left",
                  right_label: str = "right") -> ConfigDelta:
    """Difference between two ``docker inspect`` snapshots (the settings a profile controls)."""
    from proofdiff.runtime.docker import inspect_view  # the docker SDK: not for profile deltas

    return diff_views(inspect_view(left), inspect_view(right), left_label, right_label)
