"""``warmup/first-run-artifacts``: what a daemon's first run must leave behind is there after
the warmup: every declared artifact matches at least one file where the daemon sees its files,
non-empty and modified after the daemon started (a file from an earlier run is no evidence that
this one wrote it). When the warmup proof did not complete, nothing could be extracted, and the
record says so with the warmup's error at once, instead of waiting for the files. A profile
whose blocking preflight failed, or whose daemon did not start or died, is skipped with that
reason (:meth:`~proofdiff.oracles.evidence.Evidence.blocked`).

Source: the seed incident of a cuzk benchmark whose warmup proof was to extract the
pre-compiled constraint evaluator (PCE; 2-5 minutes on a first run). The warmup failed in 1 s
(params missing), no PCE was written, and the script went on, hoping the daemon kept it
somewhere else.

What each daemon kind leaves (:data:`KIND_ARTIFACTS`; a profile's ``first_run_artifacts``
overrides it):

* cuzk: ``pce-<circuit>.bin`` in its param cache, written after extracting a circuit's PCE
  (``pce_disk_path``, ``circuit_id_pce_name`` in extern/cuzk/cuzk-core/src/pipeline.rs and
  ``pce_filename`` in extern/cuzk/cuzk-pce/src/disk.rs of filecoin-project/curio). cuzk has
  PCE circuits for 32 and 64 GiB sectors only (its ``CircuitId``), and saves them only in
  its CUDA (``cuda-supraseal``) build: a 2 KiB workload declares none.
* refprover: ``{tmp}/refprover/circuits.json``, the circuits whose SRS its first COMPLETED
  proof loaded (targets/refprover/src/first_run.rs).
"""

from __future__ import annotations

import math
from fnmatch import fnmatch

from proofdiff.core.artifact_probe import TMP, ArtifactFile
from proofdiff.model.choices import Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.profile import Profile
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles.evidence import Evidence, Recorder

__all__ = ["KIND_ARTIFACTS", "declared", "judge", "problems"]

#: daemon kind -> (workload name glob, the artifacts a first run on it leaves), first match
#: wins. Names are relative to the param cache the daemon reads; ``{tmp}/`` = its temp dir.
KIND_ARTIFACTS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "cuzk": (("porep-32g*", ("pce-porep-32g.bin",)), ("porep-64g*", ("pce-porep-64g.bin",)),
             ("wpost-32g*", ("pce-window-post.bin",)),
             ("winning-32g*", ("pce-winning-post.bin",)),
             ("snap-32g*", ("pce-snap-deals-32g.bin",)),
             ("snap-64g*", ("pce-snap-deals-64g.bin",))),
    "refprover": (("*", (f"{TMP}/refprover/circuits.json",)),),
}


def declared(profile: Profile, workload: str) -> tuple[tuple[str, ...], str]:
    """The artifacts ``profile``'s first run on ``workload`` must leave, and where the list
    comes from (the profile's ``first_run_artifacts``, else its daemon kind's)."""
    if profile.first_run_artifacts is not None:
        return profile.first_run_artifacts, f"profile {profile.name!r} first_run_artifacts"
    for pattern, names in KIND_ARTIFACTS.get(profile.daemon, ()):
        if fnmatch(workload, pattern):
            return names, f"daemon kind {profile.daemon!r} on workloads {pattern!r}"
    return (), f"daemon kind {profile.daemon!r}"


def problems(found: dict[str, tuple[str, list[ArtifactFile]]], started_unix_s: float
             ) -> list[str]:
    """One sentence per declared artifact that is missing, empty, or older than the daemon's
    start (``started_unix_s``; modification times are whole seconds)."""
    floor = math.floor(started_unix_s)
    out = []
    for declared_as, (resolved, files) in found.items():
        if not files:
            out.append(f"{declared_as}: no file matches {resolved}")
            continue
        fresh = [f for f in files if f.mtime_unix_s >= floor]
        if not fresh:
            out.append(f"{declared_as}: {', '.join(f.path for f in files)} older than the "
                       "daemon's start: an earlier run's, not this one's")
        elif not any(f.size_bytes > 0 for f in fresh):
            out.append(f"{declared_as}: {', '.join(f.path for f in fresh)} empty (0 bytes)")
    return out


def judge(ev: Evidence, rec: Recorder, run: RunRecord) -> None:
    """The ``first-run-artifacts`` record of one run (module docstring)."""
    name, p = run.profile, ev.profiles[run.profile]
    names, source = declared(p, rec.workload)
    if p.runtime is Runtime.ATTACH:
        rec("first-run-artifacts", name, Outcome.SKIPPED, f"profile {name!r} is attached: "
            "proofdiff did not start the daemon, so its first run is not this run's")
        return
    if not names:
        why = (" (cuzk extracts a PCE for 32 and 64 GiB circuits only)"
               if p.daemon == "cuzk" else "")
        rec("first-run-artifacts", name, Outcome.SKIPPED, f"{source} declares no first-run "
            f"artifact for workload {rec.workload}{why}; declare them with the profile's "
            "first_run_artifacts")
        return
    blocked = ev.blocked(name, rec.workload)
    if blocked:
        rec("first-run-artifacts", name, Outcome.SKIPPED, blocked)
        return
    flow = run.workload_flow
    first = next((j for j in flow.jobs if j.index == 0), None) if flow else None
    if first is None or first.status is not JobStatus.COMPLETED:
        why = (f"the warmup proof came back {first.status.value}: "
               f"{first.error or '(no error text)'}" if first is not None
               else "; ".join(run.errors) or "the run sent no warmup proof")
        rec("first-run-artifacts", name, Outcome.FAIL, f"profile {name!r}: nothing could be "
            f"extracted, {why}; the first run leaves none of {', '.join(names)} ({source}), "
            "and later runs pay the first-run cost again\n  fix: make the warmup proof "
            "complete (see warmup/first-proof), then run again",
            evidence={"declared": list(names), "warmup": first.status.value if first else None})
        return
    try:
        look = ev.first_run_artifacts(name, names)
    except ProofdiffError as exc:
        rec("first-run-artifacts", name, Outcome.ERROR, f"profile {name!r}: the daemon's "
            f"files could not be looked at: {exc}")
        return
    found = look.found
    bad = problems(found, look.started_unix_s)
    files = {k: [{"path": f.path, "size_bytes": f.size_bytes, "mtime_unix_s": f.mtime_unix_s}
                 for f in v[1]] for k, v in found.items()}
    ev_ = {"declared": list(names), "source": source, "files": files,
           "daemon_started_unix_s": round(look.started_unix_s, 3)}
    if bad:
        rec("first-run-artifacts", name, Outcome.FAIL, f"profile {name!r} ({look.what}): "
            f"the warmup proof completed but {len(bad)} of {len(names)} first-run "
            f"artifact(s) ({source}) are not there:\n  " + "\n  ".join(bad) + "\n  fix: read "
            "the daemon log for the write (a read-only or full directory, a write that "
            "failed quietly); a daemon that keeps the artifact elsewhere needs its profile's "
            "first_run_artifacts", evidence=ev_, names=("first_run_artifacts",))
        return
    rec("first-run-artifacts", name, Outcome.PASS, f"{len(names)} first-run artifact(s) "
        f"({source}) written since the daemon started: " + ", ".join(
            f"{f.path} ({f.size_bytes} bytes)" for _, fs in found.values() for f in fs),
        evidence=ev_)
