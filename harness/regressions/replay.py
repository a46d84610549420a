"""Replay a regression case: its pinned profile on its image and workload, judged by its oracle.

The outcome says what held:

* ``holds``: the oracle passed (the bug is not there);
* ``reproduces``: it failed with the case's signature (``[expect] match``): the bug, as recorded;
* ``fails-otherwise``: it failed, but not as recorded: another bug, never taken for this one;
* ``broken``: the run could not judge (an ERROR, a skipped oracle, a daemon that did not start,
  artifacts that failed to build, inputs that do not load);
* ``missing``: the image, the pinned binaries (by digest, in ``--bin-dir`` or on ``PATH``) or
  the inputs are not on this host (what is missing, how to get it);
* ``interrupted``: a Ctrl-C or SIGTERM stopped the run: nothing it made is a verdict, even a
  record it had made before.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.bisect.probe import suites_for
from proofdiff.artifacts.build_errors import BuildError
from proofdiff.core.differential import run_differential
from proofdiff.core.failure_signature import matches
from proofdiff.core.plan import pin_artifacts
from proofdiff.model.choices import Runtime
from proofdiff.model.image import ImageInfo
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Outcome, Verdict
from proofdiff.model.workload import POREP, Workload, WorkloadError, load_workload
from proofdiff.runtime.spec import ContainerError
from proofdiff.runtime.identity import file_sha256
from proofdiff.runtime.runner import Runner

from proofdiff.regressions.case import RegressionCase

__all__ = ["CaseOutcome", "build_for", "matches", "params_workload", "replay", "replay_run"]


class CaseOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """One replay: ``status`` (module docstring), the case id, whether it ran ``fixed`` (with
    ``[fix] overrides``), the judged record's check, outcome and message, the image it ran
    (with its id), the build of a case on host programs (its name in the case, '' otherwise),
    the run's report dir and wall time (s)."""

    case: str
    fixed: bool = False
    status: str
    message: str
    check: str = ""
    outcome: str = ""
    image: ImageInfo | None = None
    build: str = ""
    report: str = ""
    wall_s: float = 0.0


def params_workload(w: Workload) -> str:
    """The built workload whose params (its circuits' ``.params``/``.vk``) cover ``w``'s jobs.

    Raises:
        WorkloadError: no built workload has a vk for these jobs (2 KiB WindowPoSt and PoRep
            with 1 or 2 partitions only).
    """
    shapes = {(j.shape.proof_kind, j.shape.sector_size, j.shape.partitions) for j in w.jobs}
    names = set()
    for kind, size, parts in shapes:
        if size != 2048 or (kind == POREP and parts not in (1, 2)):
            raise WorkloadError(f"{w.source}: no vk for {kind} with {size}-byte sectors and "
                                f"{parts} partition(s) here: the reference params cover 2 KiB "
                                "WindowPoSt and 2 KiB PoRep with 1 or 2 partitions",
                                fix="record the case on one of those shapes (wpost-2k, porep-2k, "
                                    "porep-2k-2p)")
        names.add("wpost-2k" if kind != POREP else "porep-2k" if parts == 1 else "porep-2k-2p")
    if len(names) != 1:
        raise WorkloadError(f"{w.source}: jobs of several shapes {sorted(names)}",
                            fix="a case's workload has one shape: split it into one case per "
                                "shape")
    return names.pop()


def build_for(w: Workload, param_cache: str) -> str:
    """The built workload to make for replaying ``w``: :func:`params_workload`'s, or, when the
    user gives ``param_cache`` (the official params of ``w``'s size, a 32 GiB PoRep's say), the
    smallest one, for the tools alone (the proofs' params and vks come from that cache).

    Raises:
        WorkloadError: no built params cover ``w`` and no param cache was given.
    """
    try:
        return params_workload(w)
    except WorkloadError:
        if not param_cache:
            raise
        return "wpost-2k"


def _image(case: RegressionCase, reference: str) -> tuple[str, str] | str:
    """``(tag, digest)`` to run, or why it cannot be had."""
    if case.reference:
        return reference, ""
    try:
        img = Runner("replay").image(case.image.tag)
    except ContainerError:
        return (f"image {case.image.tag} is not on this host; load it (`docker load -i <file>`) or "
                f"build it from the incident's source; the case recorded digest "
                f"{case.image.digest or '(none)'}")
    if case.image.digest and str(img.id) != case.image.digest:
        return (f"image {case.image.tag} here is {img.id}, but the case recorded "
                f"{case.image.digest}: "
                "a different image; load the recorded one, or re-record the case")
    return case.image.tag, str(img.id)


def _binaries(case: RegressionCase, bin_dir: str) -> tuple[str, str]:
    """``(build, why)``: the name of the case's build (:attr:`RegressionCase.builds`) whose
    every program is found in ``bin_dir``, then on ``PATH``, with that build's digest, and
    ``''``; or ``''`` and why none can be run here, with how to build them."""
    path = os.pathsep.join([*([bin_dir] if bin_dir else []), os.environ.get("PATH", "")])
    how = f"; {case.binaries_build}" if case.binaries_build else ""
    got: dict[str, str] = {}
    for name in dict.fromkeys(n for b in case.builds for n in b.digests):
        found = shutil.which(name, path=path)
        if found is None:
            pins = ", ".join(b.digests[name] for b in case.builds if name in b.digests)
            return "", (f"{name} ({pins}) is not in --bin-dir {bin_dir or '(none given)'} or "
                        f"on PATH{how}")
        got[name] = f"{found} is {file_sha256(found)}"
    for b in case.builds:
        if all(got[n].endswith(f" is {d}") for n, d in b.digests.items()):
            return b.name, ""
    pinned = "; ".join(f"{b.name}: " + ", ".join(f"{n} {d}" for n, d in b.digests.items())
                       for b in case.builds)
    return "", (f"{', '.join(f'{n} at {v}' for n, v in got.items())}, but the case pins "
                f"{len(case.builds)} build(s) ({pinned}): a different build{how}")


def replay(case: RegressionCase, options: RunOptions | None = None, *, fixed: bool = False,
           log: Callable[[str], None] = lambda _l: None) -> CaseOutcome:
    """:func:`replay_run`, with the run's report written (under ``options.report_dir``).

    Raises:
        proofdiff.regressions.case.CaseError: the pinned profiles are not valid profiles.
    """
    got, result = replay_run(case, options, fixed=fixed, log=log)
    if result is not None:
        from proofdiff.report.writer import write_report

        write_report(result, (options or RunOptions()).report_root)
    return got


def replay_run(case: RegressionCase, options: RunOptions | None = None, *, fixed: bool = False,
               log: Callable[[str], None] = lambda _l: None,
               ) -> tuple[CaseOutcome, DifferentialResult | None]:
    """Replay ``case`` once (module docstring); ``fixed``: with its ``[fix] overrides``. The
    run's report is left to the caller (a case replayed on a Dask worker comes back whole):
    the second item is the run's result, ``None`` where nothing ran.

    ``options``: the report dir and the artifacts; what it gives wins over the build's (a case
    on a cuzk image proves with the official params: ``--param-cache``; its own verifier:
    ``--verifier-image``; its binaries: ``--bin-dir``), and its ``--set`` overrides apply over
    the pinned profiles (after the fix), as in a run.

    Returns:
        The :class:`CaseOutcome` (never raises on a missing image or input: ``missing``), and
        the run's result.

    Raises:
        proofdiff.regressions.case.CaseError: the pinned profiles are not valid profiles.
    """
    t0 = time.monotonic()
    opts = (options or RunOptions()).with_env()

    result: DifferentialResult | None = None

    def out(status: str, message: str,
            **kw: Any) -> tuple[CaseOutcome, DifferentialResult | None]:
        return CaseOutcome(case=case.id, status=status, message=message, fixed=fixed,
                           build=build, wall_s=round(time.monotonic() - t0, 1), **kw), result

    build = ""
    if case.binaries:
        build, why = _binaries(case, opts.bin_dir)
        if why:
            return out("missing", why)
        log(f"case {case.id}: its programs are the build {build!r}")
    files: dict[str, str] = {}
    wl_name = case.workload
    build_name = case.workload
    if case.workload_file:
        if not Path(case.workload_file).is_file():
            return out("missing", f"the case's inputs {case.workload_file} are missing; they "
                       f"ship in the case folder {case.dir}")
        try:
            w = load_workload(case.workload_file)
        except WorkloadError as exc:  # shipped, but broken: nothing to fetch
            return out("broken", f"the case's inputs do not load: {exc}")
        try:
            build_name = build_for(w, opts.param_cache)
        except WorkloadError as exc:  # no vk for this shape here, and no --param-cache
            return out("missing", str(exc))
        wl_name, files = w.name, {w.name: case.workload_file}
    profiles = case.resolved(fixed=fixed, overrides=opts.overrides)
    # replayed as processes (``--set '*.runtime=process'``, a fleet host without Docker): the
    # reference build is its binaries, and nothing of Docker is built or looked up
    as_processes = profiles[case.profile].runtime is Runtime.PROCESS
    if as_processes and not (case.reference or case.binaries):
        return out("missing", f"the case pins the image {case.image.tag} "
                   f"({case.image.digest or 'no digest'}), which a process runtime cannot "
                   "run: replay it where Docker is")
    try:
        opts, reference = pin_artifacts(
            msgspec.structs.replace(opts, workload_files={**opts.workload_files, **files}),
            [build_name], docker=not as_processes,
            reference=case.reference and not as_processes, log=log)
    except BuildError as exc:  # a build that fails is no absent input: the replay is broken
        return out("broken", f"the artifacts for {build_name} could not be built: {exc}")
    got = (("", "") if case.binaries or as_processes
           else _image(case, reference.tag if reference else ""))
    if isinstance(got, str):
        return out("missing", got)
    tag, digest = got
    p = msgspec.structs.replace(profiles[case.profile], image=tag or None, workload=wl_name)
    rid = f"case-{case.id}{'-fixed' if fixed else ''}-{int(time.time())}"
    result = run_differential(msgspec.structs.replace(
        opts, workloads=(wl_name,), suites=suites_for(case.oracle), run_id=rid, select=(),
        images=()), profiles={case.profile: p}, log=log, write_report=False)
    kw: dict[str, Any] = {"image": ImageInfo(tag=tag, digest=digest or (
        result.images[0].digest if result.images else "")), "report": str(opts.report_root / rid)}
    if result.verdict is Verdict.INTERRUPTED:  # a record made before the Ctrl-C is no verdict
        return out("interrupted", result.verdict_line, **kw)
    rec = next((r for r in result.records if r.check == case.oracle
                and r.profile == case.profile), None)
    if result.errors or rec is None:
        why = result.errors[0] if result.errors else f"no {case.oracle} record was made"
        return out("broken", why, **kw)
    kw.update(check=rec.check, outcome=rec.outcome.value)
    first = rec.message.splitlines()[0][:400] if rec.message else ""
    if rec.outcome is Outcome.PASS:
        return out("holds", f"{case.oracle} passes on {case.profile}", **kw)
    if rec.outcome is Outcome.FAIL:
        if matches(rec, case.match):
            return out("reproduces", f"{case.oracle} fails on {case.profile} as recorded: "
                       f"{first}", **kw)
        return out("fails-otherwise", f"{case.oracle} fails on {case.profile}, but not as the "
                   f"case records ({case.match}): {first}", **kw)
    return out("broken", f"{case.oracle} is {rec.outcome.value} on {case.profile}: {first}", **kw)

