"""The effective difference between two profiles (or two containers), and who to blame.

:func:`profile_delta` diffs the effective settings of two profiles with deepdiff and renders one
line per difference (``config.pipeline.enabled: False -> True``); :func:`rank_suspects` orders
those items by how likely each is to cause a given oracle's failure; :func:`inspect_delta` does
the same for two ``docker inspect`` snapshots (env, command, mounts, limits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deepdiff import DeepDiff
from deepdiff.helper import NotPresent

from .profiles import Profile

__all__ = [
    "ABSENT",
    "ConfigDelta",
    "DeltaItem",
    "SUSPECT_ORDER",
    "inspect_delta",
    "inspect_view",
    "profile_delta",
    "profile_view",
    "rank_suspects",
]


class _Absent:
    """Marks a key present on one side only (rendered ``<absent>``)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()

#: Delta paths (prefixes) in suspect order, per oracle; the first match ranks highest. For
#: validity: an injected fault first (it is the switch a self-test flips), then the settings that
#: change how a proof is put together (partitioned pipeline, worker count), then what changes
#: how jobs meet in the daemon (concurrency, colliding ids), then the param path.
SUSPECT_ORDER: dict[str, tuple[str, ...]] = {
    "validity": (
        "env.REFPROVER_FAULTS",
        "config.pipeline.enabled",
        "config.synthesis.partition_workers",
        "concurrency",
        "job_ids",
        "config.pipeline",
        "config.scheduler",
        "config.srs.param_cache",
        "mounts.params",
        "env.FIL_PROOFS_PARAMETER_CACHE",
        "image",
        "command",
        "env",
        "config",
    ),
}


@dataclass(frozen=True)
class DeltaItem:
    """One difference: ``path`` (dotted, e.g. ``config.pipeline.enabled``), both sides' values
    (:data:`ABSENT` when a side lacks the key)."""

    path: str
    left: Any
    right: Any

    def render(self) -> str:
        """``path: left -> right`` with Python reprs (``<absent>`` for a missing key)."""
        return f"{self.path}: {self.left!r} -> {self.right!r}"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: path, left, right (absent sides as the string ``"<absent>"``)."""
        def conv(v: Any) -> Any:
            return "<absent>" if v is ABSENT else v
        return {"path": self.path, "left": conv(self.left), "right": conv(self.right),
                "line": self.render()}


@dataclass(frozen=True)
class ConfigDelta:
    """Differences between a ``left`` and a ``right`` side (labels, e.g. profile names)."""

    left: str
    right: str
    items: tuple[DeltaItem, ...]

    def lines(self) -> list[str]:
        """One rendered line per item, in path order."""
        return [i.render() for i in self.items]

    def render(self, indent: str = "  ") -> str:
        """A labelled block: ``config delta bench -> prod:`` then the lines (or ``(none)``)."""
        body = "\n".join(indent + line for line in self.lines()) or f"{indent}(none)"
        return f"config delta {self.left} -> {self.right}:\n{body}"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: left, right, items."""
        return {"left": self.left, "right": self.right,
                "items": [i.to_json() for i in self.items]}


def profile_view(profile: Profile) -> dict[str, Any]:
    """The effective settings of a profile as plain data (what gets diffed and reported).

    ``config`` is the merged daemon config (defaults included), so a key set on one side only
    to its default value does not show up as a difference.
    """
    return {
        "image": profile.image,
        "workload": profile.workload,
        "driver": profile.driver,
        "concurrency": profile.concurrency,
        "job_ids": profile.job_ids,
        "miner_id": profile.miner_id,
        "jobs": profile.jobs,
        "env": dict(profile.env),
        "config": profile.effective_config(),
        "command": list(profile.command),
        "mounts": {"params": profile.param_mount_path(), **profile.mounts},
        "ports": dict(profile.ports),
        "gpus": list(profile.gpus) if isinstance(profile.gpus, tuple) else profile.gpus,
        "network": profile.network,
        "cpus": profile.cpus,
        "mem_limit": profile.mem_limit,
        "timeout_s": profile.timeout_s,
        "ready_timeout_s": profile.ready_timeout_s,
        # the bench client's settings matter only where it runs (driver bench-cli)
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


def diff_views(left: Mapping[str, Any], right: Mapping[str, Any],
               left_label: str = "left", right_label: str = "right") -> ConfigDelta:
    """Diff two plain-data views. Lists are compared whole (``command: [...] -> [...]``)."""
    dd = DeepDiff(dict(left), dict(right), view="tree", threshold_to_diff_deeper=0)
    paths: set[tuple[Any, ...]] = set()
    for levels in dd.values():
        for level in levels:
            parts = level.path(output_format="list")
            # Collapse list elements to the list itself: a command line reads better whole.
            for i, p in enumerate(parts):
                if isinstance(p, int):
                    parts = parts[:i]
                    break
            paths.add(tuple(parts))
    items = []
    for parts in sorted(paths, key=lambda ps: _dotted(ps)):
        lv, rv = _get(left, parts), _get(right, parts)
        lv = ABSENT if isinstance(lv, NotPresent) else lv
        rv = ABSENT if isinstance(rv, NotPresent) else rv
        items.append(DeltaItem(path=_dotted(parts), left=lv, right=rv))
    return ConfigDelta(left=left_label, right=right_label, items=tuple(items))


def profile_delta(left: Profile, right: Profile) -> ConfigDelta:
    """Effective difference ``left -> right`` between two profiles (see :func:`profile_view`)."""
    return diff_views(profile_view(left), profile_view(right), left.name, right.name)


def rank_suspects(delta: ConfigDelta, oracle: str = "validity") -> list[DeltaItem]:
    """Delta items ordered by suspicion for ``oracle``'s failure (most suspect first).

    Items matching an entry of :data:`SUSPECT_ORDER` (exact path or a path below it) rank by
    that entry; the rest keep their order after them. Unknown oracle: the delta order.
    """
    order = SUSPECT_ORDER.get(oracle, ())

    def rank(item: DeltaItem) -> int:
        for i, prefix in enumerate(order):
            if item.path == prefix or item.path.startswith(prefix + "."):
                return i
        return len(order)

    return sorted(delta.items, key=rank)  # sorted() is stable: ties keep delta order


def inspect_view(inspect: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a ``docker inspect`` result (``container.attrs``) that a profile controls.

    Returns ``{image, entrypoint, cmd, user, env: {K: V}, mounts: {dest: "src (ro|rw)"},
    limits: {...}, security: {...}, network_mode, ports}``.
    """
    cfg = inspect.get("Config") or {}
    host = inspect.get("HostConfig") or {}
    env = {}
    for kv in cfg.get("Env") or []:
        k, _, v = kv.partition("=")
        env[k] = v
    mounts = {m.get("Destination"): f"{m.get('Source')} ({'rw' if m.get('RW') else 'ro'})"
              for m in inspect.get("Mounts") or []}
    return {
        "image": cfg.get("Image"),
        "entrypoint": cfg.get("Entrypoint"),
        "cmd": cfg.get("Cmd"),
        "user": cfg.get("User"),
        "env": env,
        "mounts": mounts,
        "limits": {
            "nano_cpus": host.get("NanoCpus"),
            "memory_bytes": host.get("Memory"),
            "pids_limit": host.get("PidsLimit"),
            "shm_size_bytes": host.get("ShmSize"),
            "device_requests": host.get("DeviceRequests"),
        },
        "security": {
            "privileged": host.get("Privileged"),
            "cap_drop": host.get("CapDrop"),
            "cap_add": host.get("CapAdd"),
            "security_opt": host.get("SecurityOpt"),
            "readonly_rootfs": host.get("ReadonlyRootfs"),
        },
        "network_mode": host.get("NetworkMode"),
        "ports": sorted((host.get("PortBindings") or {}).keys()),
    }


def inspect_delta(left: Mapping[str, Any], right: Mapping[str, Any],
                  left_label: str = "left", right_label: str = "right") -> ConfigDelta:
    """Difference between two ``docker inspect`` snapshots (see :func:`inspect_view`)."""
    return diff_views(inspect_view(left), inspect_view(right), left_label, right_label)
