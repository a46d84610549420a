"""What proofdiff adds to a daemon's start: its ``start_daemon`` against a raw container start.

    python benchmarks/start_to_ready.py [--pairs N] [--profile bench]

Alternates, N times, two ways of starting the same refprover daemon (the ``refprover`` set's
profile, the built image, the param cache) and timing it to its first ``GetStatus`` answer:

* raw: the Docker SDK's ``containers.run`` with the very arguments proofdiff would pass (same
  image, command, mounts, ports, user, limits, labels), then one read of the published port and
  ``GetStatus`` every 20 ms: what a hand-written script does at best;
* proofdiff: ``start_daemon`` (the image check, the container, readiness with exit detection).

Each container is removed between starts, outside the timed span. Prints both medians, their
ratio (the goal is <= 1.05) and every pair. The build must be warm (``make image``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from msgspec.structs import replace

from proofdiff.artifacts import ensure_artifacts
from proofdiff.core.plan import new_run_id
from proofdiff.drivers.cuzk_client import status_probe
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.run_options import RunOptions
from proofdiff.runtime.daemon import daemon_spec, start_daemon
from proofdiff.runtime.docker import reap
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.watchdog import Watchdog
from record import write_record

HERE = Path(__file__).resolve().parents[1]


def raw_start(runner: Runner, spec: object) -> tuple[float, object]:
    """Start the container with proofdiff's own arguments through the SDK; ms to the first
    GetStatus answer, and the SDK container (to remove)."""
    backend = runner.docker
    workdir, kwargs = backend._kwargs(spec)
    t0 = time.monotonic()
    sdk = backend.client.containers.create(**kwargs)
    sdk.start()
    sdk.reload()
    port = int(sdk.attrs["NetworkSettings"]["Ports"]["9820/tcp"][0]["HostPort"])
    probe = status_probe(f"127.0.0.1:{port}")
    try:
        while probe.ask(0.5) is not None:
            if time.monotonic() - t0 > 60:
                raise TimeoutError("the raw start did not answer GetStatus in 60 s")
            time.sleep(0.02)
        return (time.monotonic() - t0) * 1000.0, (sdk, workdir)
    finally:
        probe.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=9, help="interleaved pairs. Default: 9")
    p.add_argument("--profile", default="bench", help="refprover profile. Default: bench")
    a = p.parse_args()
    art = ensure_artifacts(["wpost-2k"], lambda _line: None,
                           cache_root=Path(RunOptions.from_env().cache_root),
                           crate_dir=HERE / "targets" / "refprover")
    profile = replace(load_profiles("refprover")[a.profile], image=art.image_tag)
    dog = Watchdog().start()
    runner = Runner(f"bench-{new_run_id()}", tracker=dog)
    raw, ours = [], []
    try:
        for i in range(a.pairs):
            for side in (("raw", "proofdiff") if i % 2 == 0 else ("proofdiff", "raw")):
                if side == "raw":
                    spec = daemon_spec(profile, Path(art.param_cache),
                                       runner.unique_name("raw"))
                    ms, (sdk, workdir) = raw_start(runner, spec)  # type: ignore[misc]
                    raw.append(ms)
                    sdk.remove(force=True, v=True)
                    runner.docker._drop_dir(workdir)
                else:
                    d = start_daemon(runner, profile, Path(art.param_cache), probe=status_probe,
                                     name=runner.unique_name("pd"))
                    ours.append(d.start_to_ready_ms or float("nan"))
                    d.remove()
    finally:
        dog.close()
        reap(run_id=runner.run_id)
    table = Table(title=f"start to first GetStatus, ms ({a.pairs} interleaved pairs, "
                        f"profile {a.profile})")
    for col in ("pair", "raw SDK start", "proofdiff start_daemon"):
        table.add_column(col, justify="right")
    for i, (r, o) in enumerate(zip(raw, ours)):
        table.add_row(str(i), f"{r:.0f}", f"{o:.0f}")
    mr, mo = statistics.median(raw), statistics.median(ours)
    con = Console()
    con.print(table)
    con.print(f"median raw {mr:.0f} ms, proofdiff {mo:.0f} ms: ratio {mo / mr:.3f} (goal <= 1.05)")
    write_record("start-to-ready", f"start to first GetStatus: proofdiff's start_daemon against "
                 f"a raw SDK start, {a.pairs} interleaved pairs, profile {a.profile}",
                 {"raw SDK start median": (round(mr), "ms"),
                  "proofdiff start_daemon median": (round(mo), "ms"),
                  "ratio": (round(mo / mr, 3), "")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
