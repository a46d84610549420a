"""``run_differential``: the one way in, for the CLI, the pytest plugin and every workflow.

    from proofdiff import RunOptions, run_differential
    result = run_differential(RunOptions(overrides=("prod.env.REFPROVER_FAULTS=partition-race",)))
    result.verdict, result.exit_code, result.divergences[0].suspects[0].path

It loads and plans the profiles, evaluates every selected suite on every selected workload (and
image), derives divergences and the verdict once (:mod:`proofdiff.core.verdict`), writes the report
(even when the run failed or was interrupted) and returns the typed
:class:`~proofdiff.model.result.DifferentialResult`. Nothing here needs pytest.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from proofdiff.core.plan import Plan, load_selected, new_run_id
from proofdiff.core.verdict import divergences, missing_cells, verdict
from proofdiff.model.allowlist import (Acceptance, AllowEntry, StaleEntry, acceptable,
                                       load_allowlist, match_allowlist)
from proofdiff.model import interrupt
from proofdiff.model.choices import Runtime
from proofdiff.model.config_delta import ConfigDelta
from proofdiff.model.errors import ProofdiffError, unexpected
from proofdiff.model.image import ImageInfo
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import select_profiles
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import Verdict
from proofdiff.runtime.host import machine_facts
from proofdiff.runtime.spec import ContainerError

if TYPE_CHECKING:  # the session pulls in the suites, scipy, docker and grpc: imported when a
    # run has profiles to start, so a bad profile file is reported at once
    from proofdiff.core.session import Session

__all__ = ["assemble", "interrupted_result", "run_differential"]


def _images(plans: Sequence[Plan], runs: Sequence[RunRecord]) -> tuple[ImageInfo, ...]:
    seen: dict[str, str] = {}
    for r in runs:
        seen.setdefault(r.image.tag, r.image.digest)
    for plan in plans:
        for p in plan.profiles.values():
            seen.setdefault((p.image or "") if p.runtime is Runtime.DOCKER else p.program, "")
    ref = next((p.reference for p in plans if p.reference), None)
    if ref is not None and ref.tag in seen and not seen[ref.tag]:
        seen[ref.tag] = ref.digest
    return tuple(ImageInfo(tag=t, digest=d) for t, d in seen.items() if t)


def _verifier(sessions: Sequence[Session]) -> ImageInfo | None:
    tag = sessions[0].plan.verifier_image if sessions else ""
    if not tag:
        return None
    try:
        return ImageInfo(tag=tag, digest=str(sessions[0].runner.image(tag).id))
    except ContainerError as exc:
        return ImageInfo(tag=tag, digest=f"unknown: {exc}")


def assemble(*, run_id: str, profiles: Mapping[str, Profile], records: Sequence[OracleRecord],
             runs: Sequence[RunRecord], plans: Sequence[Plan] = (), errors: Sequence[str] = (),
             interrupted: bool = False, extra: Mapping[str, Any] | None = None,
             created_unix_s: float | None = None, wall_s: float = 0.0,
             machine: Mapping[str, Any] | None = None,
             verifier: ImageInfo | None = None, allowlist: Sequence[AllowEntry] = (),
             allowlist_file: str = "") -> DifferentialResult:
    """The result of a run from what its sessions computed: divergences from the baseline (the
    first profile), suspects, the allowlist's acceptances (``allowlist``: the entries of
    ``allowlist_file``, read against the result's date), the verdict and the exit code,
    computed here and only here."""
    created = time.time() if created_unix_s is None else created_unix_s
    accepted, stale = _accept(records, allowlist, dt.date.fromtimestamp(created))
    names = list(profiles)
    deltas: dict[str, ConfigDelta] = {}
    views: dict[str, dict[str, Any]] = {}
    if names:  # not for a run whose profiles did not load
        from proofdiff.core.profile_delta import profile_delta, profile_view

        deltas = {n: profile_delta(profiles[names[0]], profiles[n]) for n in names[1:]}
        views = {n: {**profile_view(p), "source": p.source, "overrides": list(p.overrides)}
                 for n, p in profiles.items()}
    divs = divergences(records, names[0], deltas) if names else []
    workloads = tuple(dict.fromkeys(w for p in plans for w in p.workloads))
    suites = tuple(dict.fromkeys(s for p in plans for s in p.suites))
    slots = [p.image_slot for p in plans] or [""]
    missing = missing_cells(records, names, workloads, suites, slots) if not errors else []
    v, line = verdict(records, divs, errors, missing, runs, interrupted=interrupted,
                      accepted=accepted)
    return DifferentialResult(
        run_id=run_id, created_unix_s=created,
        verdict=v, verdict_line=line, exit_code=v.exit_code, images=_images(plans, runs),
        profiles=views,
        workloads=workloads, suites=suites, runs=tuple(runs), records=tuple(records),
        divergences=tuple(divs), deltas=tuple(deltas.values()), errors=tuple(errors),
        extra=dict(extra or {}), wall_s=round(wall_s, 3), machine=dict(machine or {}),
        verifier=verifier, allowlist=allowlist_file, accepted=tuple(accepted),
        stale=tuple(stale))


def interrupted_result(result: DifferentialResult) -> DifferentialResult:
    """``result`` as INTERRUPTED (exit 130): a unit that came back whole after the caller's
    Ctrl-C, or one already INTERRUPTED (unchanged). The verdict's first rule
    (:func:`proofdiff.core.verdict.verdict`), applied here as :func:`assemble` applies it."""
    if result.verdict is Verdict.INTERRUPTED:
        return result
    v, line = verdict(result.records, result.divergences, result.errors, [], result.runs,
                      interrupted=True)
    return msgspec.structs.replace(result, verdict=v, verdict_line=line, exit_code=v.exit_code)


def _accept(records: Sequence[OracleRecord], entries: Sequence[AllowEntry],
            today: dt.date) -> tuple[list[Acceptance], list[StaleEntry]]:
    """The FAIL records an unexpired entry accepts (an ERROR record never: nothing was
    judged, :func:`proofdiff.model.allowlist.acceptable`), and the entries that matched
    nothing or expired."""
    if not entries:
        return [], []
    bad = [r for r in records if acceptable(r.outcome)]
    hits, stale = match_allowlist(bad, entries, today)
    return [Acceptance(check=r.check, profile=r.profile, workload=r.workload, image=r.image,
                       entry=e.where, reason=e.reason, link=e.link,
                       expires=e.expires.isoformat())
            for r, e in zip(bad, hits) if e is not None], stale


def _plots_ahead(plan: Plan, profiles: Mapping[str, Profile]) -> Callable[[list[RunRecord]],
                                                                         None]:
    """The report's run plots drawn from the workload runs once all are made, while the later
    suites prove (:mod:`proofdiff.report.plots_ahead`; the report uses the drawing only when
    its own inputs are the same)."""
    from proofdiff.report import plots_ahead  # here, on the main thread: never on a worker's

    def draw(runs: list[RunRecord]) -> None:
        plots_ahead.draw(list(profiles), plan.workloads, runs)
    return draw


def run_differential(options: RunOptions | None = None, *,
                     profiles: Mapping[str, Profile] | None = None,
                     log: Callable[[str], None] = lambda _line: None,
                     write_report: bool = True) -> DifferentialResult:
    """Run a differential and return its result (see the module docstring).

    Args:
        options: what to run (:class:`~proofdiff.model.run_options.RunOptions`: the profile set
            and overrides, the selection, workloads, suites, images, artifacts, the report dir
            and run id, the allowlist of accepted differences); default ``RunOptions()`` (the shipped ``refprover`` set, bench vs
            prod, the default suites, everything built or found).
        profiles: resolved profiles to run instead of loading ``options.profiles`` (the first
            is the baseline): what bisect probes and regression cases pass.
        log: progress lines. write_report: write summary.json, index.html, junit.xml and
            allure-results (default true).

    Returns:
        The :class:`~proofdiff.model.result.DifferentialResult`. Bad input (a profile file or
        an allowlist that does not load, an unknown key or suite, a build that fails, no Docker engine: every
        :class:`~proofdiff.model.errors.ProofdiffError`) comes back as verdict ERROR with the
        cause and the fix, never as an exception; an interrupt (Ctrl-C, SIGTERM) comes back as
        INTERRUPTED after the containers are removed. Any other exception (a bug of
        proofdiff's) comes back as verdict ERROR too, with its traceback
        (:func:`~proofdiff.model.errors.unexpected`), the report written.
    """
    t0 = time.monotonic()
    opts = (options or RunOptions()).with_env()
    rid = opts.run_id or new_run_id()
    opts = msgspec.structs.replace(opts, run_id=rid)
    errors: list[str] = []
    resolved: Mapping[str, Profile] = {}
    plans: list[Plan] = []
    sessions: list[Session] = []
    interrupted = False
    entries: list[AllowEntry] = []
    try:
        entries = load_allowlist(opts.allowlist) if opts.allowlist else []
        resolved = (select_profiles(profiles, opts.select) if profiles is not None
                    else load_selected(opts))
        from proofdiff.core.plan import plan_runs
        from proofdiff.core.session import Session

        plans = plan_runs(resolved, opts, log=log)
        resolved = plans[0].profiles
        for plan in plans:
            session = Session(plan, log=log)
            sessions.append(session)
            if write_report and len(plans) == 1:
                session.on_runs_made = _plots_ahead(plan, resolved)
            session.evaluate()
    except KeyboardInterrupt:
        interrupted = True
    except ProofdiffError as exc:
        errors.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug of ours: ERROR, its traceback, the report
        errors.append(unexpected(exc, "the differential"))
    finally:
        for s in sessions:
            try:
                s.close()
            except KeyboardInterrupt:
                interrupted = True
    # an interrupt that reached a thread of the run but was turned into something else on
    # its way (a flow given up, a daemon start cut) still makes the run INTERRUPTED
    interrupted = interrupted or interrupt.requested()
    result = assemble(run_id=rid, profiles=resolved, plans=plans, errors=errors,
                      records=[r for s in sessions for r in s.records()],
                      runs=[r for s in sessions for r in s.runs()], interrupted=interrupted,
                      wall_s=time.monotonic() - t0, machine=machine_facts(),
                      verifier=_verifier(sessions), allowlist=entries,
                      allowlist_file=opts.allowlist)
    if write_report:
        from proofdiff.report.writer import write_report as write

        write(result, opts.report_root)
    return result
