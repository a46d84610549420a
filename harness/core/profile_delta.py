"""The effective difference between two profiles (or two containers), with deepdiff.

:func:`profile_delta` diffs the effective settings of two profiles and gives one item per
difference (``config.pipeline.enabled: False -> True``); :func:`inspect_delta` does the same for
two ``docker inspect`` snapshots (env, command, mounts, limits).

deepdiff's import (numpy with it: about a second) is taken off a run's critical
path by :mod:`proofdiff.core.preload`, which loads it while the daemons prove.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deepdiff import DeepDiff
from deepdiff.helper import NotPresent

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
        "stall_s": profile.stall_s,
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
    return ABSENT if isinstance(tree, NotPresent) else tree


def diff_views(left: Mapping[str, Any], right: Mapping[str, Any], left_label: str = "left",
               right_label: str = "right") -> ConfigDelta:
    """Diff two plain-data views; lists are compared whole (``command: [...] -> [...]``), a
    table on one side only is one item (``config.pipline: <absent> -> {...}``)."""
    dd = DeepDiff(dict(left), dict(right), view="tree", threshold_to_diff_deeper=0)
    paths: set[tuple[Any, ...]] = set()
    for levels in dd.values():
        for level in levels:
            parts = level.path(output_format="list")
            for i, p in enumerate(parts):  # a list element stands for the whole list
                if isinstance(p, int):
                    parts = parts[:i]
                    break
            paths.add(tuple(parts))
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
