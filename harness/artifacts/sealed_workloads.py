"""Step ``workloads``: workload files made by really sealing sectors with the host-built ``seal``.

``<cache>/workloads/<key16>/<name>.json`` (format: targets/refprover/README.md, "Workload
file"), with ``<cache>/workloads/<key16>.json`` beside it (seal time in s, size in bytes). Written
under a scratch name and renamed into place under a file lock.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.cache_dir import locked, publish_dir, scratch_dir, write_json
from proofdiff.artifacts.build_errors import BuildError
from proofdiff.artifacts.content_keys import workload_key
from proofdiff.artifacts.params import tool_env

#: Deadline of one seal run in seconds.
SEAL_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class WorkloadSpec:
    """A named workload: the circuits whose params it needs and how ``seal`` makes it.

    ``seal_args`` is the subcommand then its options; ``--out`` is added, and ``--param-cache``
    when ``takes_param_cache`` (``seal wpost`` accepts it, ``seal porep`` rejects it).
    """

    name: str
    circuits: tuple[str, ...]
    seal_args: tuple[str, ...]
    takes_param_cache: bool = True


#: The known workloads (docs/guide/profiles.md, "Workloads").
WORKLOADS: dict[str, WorkloadSpec] = {
    "wpost-2k": WorkloadSpec(
        "wpost-2k",
        ("wpost-2k",),
        ("wpost", "--sectors", "4", "--jobs", "4", "--miner-id", "1000", "--seed", "1"),
    ),
    # PoRep C2 from real C1 outputs: the standard 1-partition 2 KiB config, and a 2-partition
    # variant that exercises partition assembly. Slow tier: params ~1.1 GB / ~13 min cold.
    "porep-2k": WorkloadSpec(
        "porep-2k",
        ("porep-2k",),
        ("porep", "--sectors", "2", "--partitions", "1", "--miner-id", "1000", "--seed", "1"),
        takes_param_cache=False,
    ),
    "porep-2k-2p": WorkloadSpec(
        "porep-2k-2p",
        ("porep-2k-2p",),
        ("porep", "--sectors", "2", "--partitions", "2", "--miner-id", "1000", "--seed", "1"),
        takes_param_cache=False,
    ),
}


def resolve(names: Sequence[str]) -> list[WorkloadSpec]:
    """The specs of ``names`` in order, duplicates dropped.

    Raises:
        BuildError: a name is not in WORKLOADS (the message lists the known ones).
    """
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise BuildError(
            "workloads",
            f"unknown workload(s) {unknown}",
            f"use one of {sorted(WORKLOADS)} (e.g. `--workload wpost-2k`)",
        )
    if not names:
        raise BuildError("workloads", "no workload requested", f"name one of {sorted(WORKLOADS)}")
    return [WORKLOADS[n] for n in dict.fromkeys(names)]


def ensure_workload(
    root: Path,
    seal: Path,
    spec: WorkloadSpec,
    param_cache: Path,
    params_key: str,
    *,
    log: build_steps.Log,
    crate_dir: Path,
) -> tuple[Path, float | None]:
    """Return ``(workload file, seal time in s or None when reused)`` for ``spec``.

    Raises:
        BuildError: seal failed, ran past SEAL_TIMEOUT_S seconds, or wrote no valid workload file
            (JSON with a non-empty ``jobs`` list and ``workload`` equal to the name).
    """
    key = workload_key(crate_dir, spec.name, spec.seal_args, params_key)
    final = root / "workloads" / key[:16]
    out = final / f"{spec.name}.json"
    if out.is_file():
        return out, None
    with locked(root, f"workload-{key[:16]}", "workloads", SEAL_TIMEOUT_S + 60.0):
        if out.is_file():
            return out, None
        tmp = scratch_dir(root, f"workload-{spec.name}-")
        try:
            sub, *opts = spec.seal_args
            argv = [
                str(seal),
                sub,
                *(("--param-cache", str(param_cache)) if spec.takes_param_cache else ()),
                "--out",
                str(tmp / out.name),
                *opts,
            ]
            log(f"  workloads: {' '.join(argv)}")
            logp = root / "logs" / f"seal-{spec.name}.log"
            elapsed_s = build_steps.run(
                "workloads",
                argv,
                timeout_s=SEAL_TIMEOUT_S,
                log=log,
                fix=f"read {logp}; reproduce the command above by hand",
                log_path=logp,
                env=tool_env(param_cache, root),
            )
            jobs = _check(tmp / out.name, spec.name, logp)
            size = (tmp / out.name).stat().st_size
            publish_dir(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        write_json(
            final.with_name(final.name + ".json"),
            {
                "workload": spec.name,
                "key": key,
                "seal_s": round(elapsed_s, 3),
                "size_bytes": size,
                "jobs": jobs,
                "seal_args": list(spec.seal_args),
                "param_cache": str(param_cache),
                "created_unix_s": round(time.time(), 3),
            },
        )
    log(f"  workloads: {spec.name} sealed in {elapsed_s:.1f} s ({jobs} jobs, {size} bytes)")
    return out, elapsed_s


def _check(path: Path, name: str, logp: Path) -> int:
    """Validate a freshly written workload file; return its number of jobs."""
    fix = f"check seal's --out handling and the workload format in targets/refprover; read {logp}"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BuildError(
            "workloads", f"seal exited 0 but {path} is not readable JSON: {exc}", fix
        ) from exc
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list) or not jobs:
        raise BuildError("workloads", f"{path} has no non-empty 'jobs' list", fix)
    if data.get("workload", name) != name:
        raise BuildError(
            "workloads", f"{path} says workload={data.get('workload')!r}, expected {name!r}", fix
        )
    return len(jobs)
