"""Records real flows for the unit tests of the behaviour suite's checks of repeated work
(tests/unit/test_recorded_issue43.py):
the isolation and behaviour suites (the default run's repeated work) on the refprover set's
bench and prod, and one copy of prod per fault of :data:`FAULTS` (``prod-<fault>``), on the
build's wpost-2k, each daemon's every flow and the lines of its log the checks read.

    .venv/bin/python tests/data/issue43/record_flows.py [--image TAG] [--out FILE]

Writes ``flows.json`` beside this script: ``{profile: {"flows": [FlowRecord...], "log": str,
"end": {rss_bytes, fds, threads, cpu_s}}}``, proofs left out (the checks do not read them).
Run it under the heavy lock (it proves: about a quarter of an hour on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import tomllib
from pathlib import Path

import msgspec
import tomli_w

FAULTS = ("retain-witness", "serialize-partitions", "compute-micros", "status-waits",
          "early-release")
#: The suites run: isolation's flows are repeated work behaviour/growth judges.
SUITES = ("isolation", "behaviour")
#: The log lines the checks read (tests keep only these: a daemon logs ~10 lines a partition).
KEEP = ("partition start", "partition done", "job completed", "max_concurrent=",
        "refprover starting")


def main() -> int:
    from proofdiff.core.plan import load_selected, plan_runs
    from proofdiff.core.session import Session
    from proofdiff.model.profile_file import profile_file
    from proofdiff.model.run_options import RunOptions

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--image", default="", help="the refprover image. Default: the build's")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("flows.json"))
    a = p.parse_args()
    shipped = tomllib.loads(profile_file("refprover").read_text(encoding="utf-8"))
    prod = shipped["profiles"]["prod"]
    for fault in FAULTS:
        shipped["profiles"][f"prod-{fault}"] = {
            **prod, "env": {**prod.get("env", {}), "REFPROVER_FAULTS": fault}}
    if a.image:
        shipped["defaults"]["image"] = a.image
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "faults.toml"
        path.write_text(tomli_w.dumps(shipped), encoding="utf-8")
        opts = RunOptions(profiles=str(path), suites=SUITES, report_dir=tmp)
        [plan] = plan_runs(load_selected(opts), opts, log=print)
        session = Session(plan, log=print)
        try:
            out = {}
            for w in plan.workloads:
                for suite in SUITES:
                    session.suite(suite, w)
                for name in plan.profiles:
                    reading = session.look(name)
                    log = session.daemon(name).logs()
                    out[name] = {
                        "flows": [msgspec.to_builtins(msgspec.structs.replace(
                            f, jobs=tuple(msgspec.structs.replace(j, proof=b"")
                                          for j in f.jobs))) for f in session.flows(name, w)],
                        "log": "\n".join(line for line in log.splitlines()
                                         if any(k in line for k in KEEP)),
                        "end": msgspec.to_builtins(reading) if reading else None}
        finally:
            session.close()
    a.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
