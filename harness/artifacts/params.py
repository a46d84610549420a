"""Step ``params``: Groth16 params + vk generated on the host by ``paramgen``, cached by content.

Layout under the cache root:

- ``params/circuits/<circuit>-<key16>/``: one circuit's ``.params``/``.vk``/``.meta`` files, and
  ``params/circuits/<circuit>-<key16>.json`` beside it (generation time in s, size in bytes).
- ``params/<key16>/``: the param cache handed to daemons and tools: hard links to the files of
  every circuit the requested workloads need (so a new circuit never regenerates an old one).

Each directory is written under a scratch name and renamed into place, under a file lock, so
concurrent builds (pytest-xdist workers) neither race nor see half-written files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.cache_dir import dir_size_bytes, locked, publish_dir, scratch_dir, write_json
from proofdiff.artifacts.build_errors import BuildError, StepReport
from proofdiff.artifacts.content_keys import circuit_params_key, params_set_key
from proofdiff.artifacts.param_manifest import MANIFEST, DigestCache, write_manifest

#: Circuits paramgen knows (targets/refprover/README.md).
KNOWN_CIRCUITS: tuple[str, ...] = ("wpost-2k", "porep-2k", "porep-2k-2p")
#: Deadline of one paramgen run in seconds.
PARAMGEN_TIMEOUT_S = 1800.0


def tool_env(param_cache: Path, root: Path) -> dict[str, str]:
    """Environment for the host-run tools: params in ``param_cache``, parents under the cache root.

    FIL_PROOFS_VERIFY_PRODUCTION_PARAMS is removed (locally generated params are not production
    params).
    """
    env = {k: v for k, v in os.environ.items() if k != "FIL_PROOFS_VERIFY_PRODUCTION_PARAMS"}
    env["FIL_PROOFS_PARAMETER_CACHE"] = str(param_cache)
    env["FIL_PROOFS_PARENT_CACHE"] = str(root / "parent-cache")
    return env


def ensure_params(
    root: Path, paramgen: Path, circuits: Sequence[str], *, log: build_steps.Log, crate_dir: Path
) -> tuple[Path, str, StepReport]:
    """Return ``(param cache dir, its key, report)`` holding the params of every circuit.

    Raises:
        BuildError: an unknown circuit; paramgen failed, ran past PARAMGEN_TIMEOUT_S seconds, or
            wrote no ``.params``/``.vk`` file.
    """
    start = time.monotonic()
    unknown = sorted(set(circuits) - set(KNOWN_CIRCUITS))
    if unknown:
        raise BuildError("params", f"unknown circuit(s) {unknown}", f"use one of {KNOWN_CIRCUITS}")
    keys = {
        c: circuit_params_key(crate_dir, c, _cache_id(paramgen, c, root))
        for c in sorted(set(circuits))
    }
    built: list[str] = []
    for circuit, key in keys.items():
        if _ensure_circuit(root, paramgen, circuit, key, log):
            built.append(circuit)
    set_key = params_set_key(keys)
    final = root / "params" / set_key[:16]
    if not final.is_dir():
        with locked(root, f"params-{set_key[:16]}", "params", 60.0):
            if not final.is_dir():
                tmp = scratch_dir(root, "params-set-")
                try:
                    for circuit, key in keys.items():
                        _link_tree(_circuit_dir(root, circuit, key), tmp)
                    publish_dir(tmp, final)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
    if not (final / MANIFEST).is_file():  # the digests preflight checks the daemon's files by
        with locked(root, f"params-{set_key[:16]}", "params", 600.0):
            if not (final / MANIFEST).is_file():
                write_manifest(final, cache=DigestCache(root / "param-digests.json"))
    size = dir_size_bytes(final)
    detail = f"{final} ({size / 1e6:.1f} MB; {', '.join(keys)})"
    if built:
        detail += f"; generated {', '.join(built)}"
    return (
        final,
        set_key,
        StepReport("params", "built" if built else "reused", time.monotonic() - start, detail),
    )


def _cache_id(paramgen: Path, circuit: str, root: Path) -> str:
    """The circuit's cache identifier, from ``paramgen --print-cache-id`` (no generation).

    Raises:
        BuildError: paramgen failed or printed no ``cache_id``.
    """
    argv = [str(paramgen), "--param-cache", str(root / "params"), "--print-cache-id", circuit]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
        return str(json.loads(out.strip().splitlines()[-1])["cache_id"])
    except (subprocess.SubprocessError, OSError, ValueError, KeyError, IndexError) as exc:
        raise BuildError(
            "params",
            f"`{' '.join(argv)}` did not print a cache id: {exc}",
            "rebuild refprover (`proofdiff build`) and run the command by hand",
        ) from exc


def _circuit_dir(root: Path, circuit: str, key: str) -> Path:
    return root / "params" / "circuits" / f"{circuit}-{key[:16]}"


def _ensure_circuit(root: Path, paramgen: Path, circuit: str, key: str, log: build_steps.Log) -> bool:
    """Generate one circuit's params unless cached; True when they were generated now."""
    final = _circuit_dir(root, circuit, key)
    if final.is_dir():
        return False
    with locked(root, final.name, "params", PARAMGEN_TIMEOUT_S + 60.0):
        if final.is_dir():
            return False
        tmp = scratch_dir(root, f"params-{circuit}-")
        try:
            argv = [str(paramgen), "--param-cache", str(tmp), circuit]
            log(f"  params: {' '.join(argv)}")
            elapsed_s = build_steps.run(
                "params",
                argv,
                timeout_s=PARAMGEN_TIMEOUT_S,
                log=log,
                fix=f"read {root / 'logs' / f'paramgen-{circuit}.log'}; reproduce with "
                f"`{paramgen} --param-cache /tmp/p {circuit}`",
                log_path=root / "logs" / f"paramgen-{circuit}.log",
                env=tool_env(tmp, root),
            )
            files = sorted(p.name for p in tmp.iterdir() if p.is_file())
            if not {".params", ".vk"} <= {Path(f).suffix for f in files}:
                raise BuildError(
                    "params",
                    f"`{paramgen} {circuit}` exited 0 but wrote no .params/.vk file in {tmp} "
                    f"(found {files})",
                    "check paramgen's --param-cache handling in targets/refprover",
                )
            size = dir_size_bytes(tmp)
            publish_dir(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        write_json(
            final.with_name(final.name + ".json"),
            {
                "circuit": circuit,
                "key": key,
                "generation_s": round(elapsed_s, 3),
                "size_bytes": size,
                "files": files,
                "paramgen": str(paramgen),
                "created_unix_s": round(time.time(), 3),
            },
        )
    log(f"  params: {circuit} generated in {elapsed_s:.1f} s, {size / 1e6:.1f} MB")
    return True


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link every regular file of ``src`` into ``dst`` (copy where linking fails)."""
    for path in src.iterdir():
        if not path.is_file():
            continue
        target = dst / path.name
        if target.exists():
            continue
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)
