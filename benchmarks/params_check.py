"""How long the params integrity check takes, cold and cached.

    python benchmarks/params_check.py [--workload NAME]... [--param-cache DIR]

For each workload's param files (its circuits' ``.params`` and ``.vk``, found in the build's
param cache), runs the same code as preflight's ``params-integrity`` (the digest cache, then
the comparison with a parameters.json manifest) twice with a fresh digest cache:

* cold: no cached digest; every byte is read and hashed (BLAKE2b-512). The page cache is
  dropped first where this process may (``/proc/sys/vm/drop_caches``); the table says whether
  it was, because a warm page cache takes the disk out of the figure;
* cached: the second check, where each digest comes back by (path, size, mtime).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from proofdiff.artifacts.param_manifest import DigestCache, read_manifest, write_manifest
from proofdiff.core.plan import run_artifacts
from proofdiff.model.run_options import RunOptions
from proofdiff.oracles.preflight import integrity_problems
from record import Value, write_record

#: Workload -> the param file stem its circuit uses (filecoin-proofs v28 cache ids).
STEMS = {"wpost-2k": "proof-of-spacetime-fallback", "porep-2k": "032d3138d22506ec"}


def drop_page_cache() -> str:
    """Try to drop the page cache; say what happened."""
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return "dropped"
    except OSError as exc:
        return f"warm (could not drop: {exc.strerror})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", action="append", default=[], help="Default: wpost-2k, porep-2k")
    p.add_argument("--param-cache", type=Path, default=None,
                   help="dir with the param files. Default: the build's full param set")
    a = p.parse_args()
    workloads = a.workload or ["wpost-2k", "porep-2k"]
    table = Table(title="params integrity check (preflight params-integrity)")
    for col in ("workload", "files", "MB", "page cache", "cold s", "cached s", "cold MB/s"):
        table.add_column(col, justify="right")
    figures: dict[str, tuple[Value, str]] = {}
    for w in workloads:
        cache_dir = a.param_cache or Path(run_artifacts(RunOptions.from_env(), [w], docker=True,
                                                        log=lambda _l: None).param_cache)
        files = sorted(f for f in cache_dir.iterdir() if f.suffix in (".params", ".vk")
                       and STEMS[w] in f.name)
        size_mb = sum(f.stat().st_size for f in files) / 1e6
        with tempfile.TemporaryDirectory() as tmp:
            manifest_dir = Path(tmp) / "manifest"
            manifest_dir.mkdir()
            for f in files:
                (manifest_dir / f.name).symlink_to(f)
            manifest = read_manifest(write_manifest(manifest_dir, cache=DigestCache(
                Path(tmp) / "for-manifest.json")))
            page = drop_page_cache()
            times = []
            cache = DigestCache(Path(tmp) / "digests.json")
            for _ in range(2):
                t0 = time.monotonic()
                got = {f.name: d for f, d in cache.digests(files).items()}
                bad = integrity_problems([f.name for f in files], manifest, got, got,
                                         read_path=str(cache_dir), verifier_dir=str(cache_dir),
                                         manifest_path="manifest")
                times.append(time.monotonic() - t0)
                assert not bad, bad
        table.add_row(w, str(len(files)), f"{size_mb:.1f}", page, f"{times[0]:.3f}",
                      f"{times[1]:.4f}", f"{size_mb / times[0]:.0f}")
        figures.update({f"{w} files": (len(files), ""), f"{w} size": (round(size_mb, 1), "MB"),
                        f"{w} page cache": (page, ""), f"{w} cold": (round(times[0], 4), "s"),
                        f"{w} cached": (round(times[1], 5), "s"),
                        f"{w} cold throughput": (round(size_mb / times[0]), "MB/s")})
    Console().print(table)
    write_record("params-check", f"params integrity check (preflight params-integrity) of "
                 f"{', '.join(workloads)}, cold and cached", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
