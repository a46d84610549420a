"""``run_gate``: candidate vs baseline image, the decision that blocks a push.

1. Both images must be present; their ids are the evidence's subject (the same id twice is an
   A/A gate, said so).
2. The candidate's own differential (:func:`proofdiff.core.differential.run_differential`, every
   profile on the candidate, the default suites) must be SAME and nothing less: every
   preflight, validity, warmup, isolation and behaviour check must pass on every profile (a
   check failing on every profile alike is a failure of the candidate too), and no profile may
   diverge from the baseline profile (bench vs prod on the candidate). A skipped check or a
   profile without records is not a pass (INCONCLUSIVE, exit 2, the reason named); an
   interrupted differential ends the gate (INTERRUPTED, exit 130) before any timing round.
3. Timing, per profile: the profile on both images side by side, interleaved rounds, a paired
   sequential verdict per metric (:mod:`proofdiff.gate.timing_rounds`) within ``budget_s``,
   the family-wise false-DIFFERENT level :data:`GATE_ALPHA` held over every metric x profile x
   workload by Holm's step-down. A job of the candidate that fails, is lost or gives an
   invalid proof in a timing batch is a blocking finding. A PASS needs every timing metric
   SAME, unless the user asked for no timing (``no_timing``), which the decision line states.
4. The allowlist turns matching findings into accepted differences; an expired entry fails.

Every proof is checked by the pinned verifier (harness/artifacts/pinned_verifier.py): built from the git
tree that ``verifier.lock`` names, tagged by its content, never the candidate's own tool. Before
the timing arm, the baseline's own verifier is asked about the baseline's first proofs and a
tampered copy (harness/gate/verifier_crosscheck.py); a disagreement with the pinned one is an ERROR.
"""

from __future__ import annotations

import time
from pathlib import Path
from collections.abc import Callable, Sequence

import msgspec
from pytest_benchmark.utils import get_commit_info

from proofdiff.model.status import Verdict
from proofdiff.core.differential import run_differential
from proofdiff.core.plan import load_selected, new_run_id, pin_artifacts, plan_runs
from proofdiff.core.profile_delta import profile_view
from proofdiff.core.session import Session
from proofdiff.gate.allowlist import AllowEntry, apply_allowlist, load_allowlist
from proofdiff.gate.decision import decide, timing_findings, timing_undecided
from proofdiff.gate.findings import CHECKED_SUITES, findings_of, unjudged, unverified_of
from proofdiff.gate.host_builds import host_side, on_side, verifier_in
from proofdiff.gate.gate_result import (Decision, Finding, GateResult, ProfileTiming, StaleEntry,
                                        VerifierCheck)
from proofdiff.gate.timing_rounds import Family, bad_jobs, measure_profile, metrics_of
from proofdiff.gate.verifier_crosscheck import cross_check
from proofdiff.model.choices import Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.image import ImageInfo
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.profile import DEFAULT_VERIFIER, Profile
from proofdiff.model.result import DifferentialResult
from proofdiff.model.runs import RunRecord
from proofdiff.model.run_options import RunOptions
from proofdiff.runtime.host import machine_facts
from proofdiff.runtime.identity import image_info
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError

__all__ = ["CHECKED_SUITES", "GATE_ALPHA", "GateError", "decide", "findings_of", "run_gate",
           "timing_findings", "timing_undecided", "unjudged", "unverified_of"]

#: The family-wise false-DIFFERENT level of one gate's timing verdicts, over every metric x
#: profile x workload (Holm: :class:`proofdiff.gate.timing_rounds.Family`).
GATE_ALPHA = 0.05


class GateError(ProofdiffError):
    """The gate cannot run (an image missing, no Docker): names the cause and the fix."""


def _side(runner: Runner, role: str, tag: str) -> ImageInfo:
    try:
        return image_info(runner, tag)
    except ContainerError as exc:
        raise GateError(f"the {role} image: {exc.headline}", fix=exc.fix) from None


def _cross_check(session: Session, side: str, workload: str, baseline: ImageInfo,
                 checks: list[VerifierCheck], log: Callable[[str], None],
                 runtime: Runtime = Runtime.DOCKER) -> None:
    t0 = time.time()
    session.run(side, workload)
    theirs = (baseline.tag if runtime is Runtime.DOCKER
              else str(Path(baseline.tag) / DEFAULT_VERIFIER))
    check = cross_check(session.flows(side, workload), session.workload(workload),
                        session.verifier(side), session.runner, theirs,
                        session.plan.param_cache, timeout_s=session.plan.verify_timeout_s,
                        runtime=runtime)
    check = msgspec.structs.replace(check, started_unix_s=t0, stopped_unix_s=time.time())
    log(f"gate: verifier cross-check on {check.proofs} proof(s): "
        f"{check.note or ('agree' if check.agreed else 'DISAGREE')}")
    checks.append(check)
    if check.agreed is False:
        raise GateError("the baseline's verifier and the pinned verifier disagree, so no proof "
                        "verdict can be trusted: " + "; ".join(check.disagreements[:3]),
                        fix="find which of the two is wrong on the named proofs, and fix it (or "
                            "re-pin harness/artifacts/pinned_verifier.py)")


def _pair_session(name: str, p: Profile, wl: str, sides: tuple[ImageInfo, ImageInfo],
                  opts: RunOptions, verifier: str, log: Callable[[str], None],
                  ) -> tuple[Session, tuple[str, str]]:
    """A session holding profile ``p`` on both sides (``<name>-baseline``, ``<name>-candidate``;
    host builds when ``verifier`` is set), for ``wl`` alone; the caller closes it."""
    pair = {f"{name}-{role}": on_side(p, s.tag, verifier, f"{name}-{role}") if verifier
            else msgspec.structs.replace(p, name=f"{name}-{role}", image=s.tag)
            for role, s in zip(("baseline", "candidate"), sides)}
    timing_opts = msgspec.structs.replace(opts, workloads=(wl,), suites=("validity",),
                                          run_id=f"{opts.run_id}-timing", images=())
    plan = plan_runs(pair, timing_opts, log=log)[0]
    b_side, c_side = pair
    return Session(plan, log=log), (b_side, c_side)


def _cross_check_alone(profiles: dict[str, Profile], workloads: Sequence[str],
                       sides: tuple[ImageInfo, ImageInfo], opts: RunOptions,
                       checks: list[VerifierCheck], log: Callable[[str], None],
                       verifier: str = "") -> None:
    """The verifier cross-check with no timing arm (``--no-timing``): the baseline's proofs of
    the first profile and workload, judged by both verifiers (raises GateError when they
    disagree). Without it a PASS with no timing would rest on a verifier nobody checked."""
    name, p = next(iter(profiles.items()))
    wl = (list(workloads) or [p.workload])[0]
    session, (b_side, _) = _pair_session(name, p, wl, sides, opts, verifier, log)
    try:
        _cross_check(session, b_side, wl, sides[0], checks, log,
                     Runtime.PROCESS if verifier else Runtime.DOCKER)
    finally:
        session.close()


def _timing(profiles: dict[str, Profile], workloads: Sequence[str],
            sides: tuple[ImageInfo, ImageInfo], *, budget_s: float, opts: RunOptions,
            broken: set[str], checks: list[VerifierCheck], family: Family,
            log: Callable[[str], None], verifier: str = "",
            runs: list[RunRecord] | None = None) -> list[ProfileTiming]:
    """The timing arm of every profile; the first profile with a baseline daemon also runs
    the verifier cross-check into ``checks`` (raises GateError when they disagree). The
    candidate's warm-up run in the arm's session is evidence too: its bad jobs are faults.
    ``verifier``: set for host builds (the sides are folders, :mod:`proofdiff.gate.host_builds`),
    the ``verify`` program that judges both sides' proofs. ``runs``: where each side's run goes,
    with every flow sent to its daemon (the history's samples), also when the arm stops."""
    out: list[ProfileTiming] = []
    deadline = time.monotonic() + budget_s
    for name, p in profiles.items():
        for wl in workloads or [p.workload]:
            t0 = time.time()
            if name in broken:
                out.append(ProfileTiming(profile=name, workload=wl, concurrency=p.concurrency,
                                         stopped="not timed: the candidate fails its checks "
                                         "on this profile", started_unix_s=t0,
                                         stopped_unix_s=t0))
                continue
            session, (b_side, c_side) = _pair_session(name, p, wl, sides, opts, verifier, log)
            try:
                jobs = [j.name for j in session.workload(wl).jobs]
                if not checks:
                    _cross_check(session, b_side, wl, sides[0], checks, log,
                                 Runtime.PROCESS if verifier else Runtime.DOCKER)
                warm = [f"warm-up run: {b}" for f in session.run(c_side, wl).flows
                        for b in bad_jobs(f)]
                if warm:
                    out.append(ProfileTiming(profile=name, workload=wl,
                                             concurrency=p.concurrency, faults=tuple(warm),
                                             stopped="not timed: the candidate's warm-up run "
                                                     "failed", started_unix_s=t0,
                                             stopped_unix_s=time.time()))
                    continue

                def send(side: str, specs: list[JobSpec], label: str) -> FlowRecord:
                    return session.send(side, wl, specs, name="gate", label=label,
                                        concurrency=len(specs))
                arm = measure_profile(send, profile=name, workload=wl, jobs=jobs,
                                      sides=(b_side, c_side), concurrency=p.concurrency,
                                      deadline=deadline, floors=p.timing_floor, family=family,
                                      log=log)
                out.append(msgspec.structs.replace(arm, started_unix_s=t0,
                                                   stopped_unix_s=time.time()))
            finally:
                if runs is not None:
                    runs.extend(msgspec.structs.replace(r, flows=tuple(
                        session.flows(r.profile, r.workload))) for r in session.runs())
                session.close()
    return out


def run_gate(candidate: str, baseline: str, options: RunOptions | None = None, *,
             budget_s: float = 900.0,
             no_timing: bool = False, log: Callable[[str], None] = lambda _l: None,
             write_report: bool = True, runtime: Runtime = Runtime.DOCKER) -> GateResult:
    """Gate ``candidate`` against ``baseline`` (module docstring).

    Args:
        candidate, baseline: local image tags; with ``runtime`` PROCESS, the folders of two
            builds' host binaries (:mod:`proofdiff.gate.host_builds`: every profile runs as a
            process from each side's folder, judged by ``verify`` from ``options.bin_dir``,
            no Docker needed). options: the profiles, overrides, selection,
            workloads and artifacts (as for a differential; default the shipped ``refprover``
            set); ``<report_dir>/<run id>/`` holds the gate's report and ``differential/``,
            the candidate's own.
        budget_s: the timing arm's budget over all profiles, seconds (rounds stop there and
            undecided metrics are INCONCLUSIVE). ``options.allowlist``: a TOML allowlist
            (:mod:`proofdiff.model.allowlist`). no_timing: the user's ``--no-timing``: no
            timing arm; a PASS then rests on the checks alone and its line says so (default:
            time every profile; a PASS needs every timing metric SAME).
            ``options.history``: the gate is appended to that history
            (:mod:`proofdiff.gate.gate_history`), whatever its decision; a history that fails
            is ``history_error`` in the result, never an exception.

    Returns:
        The :class:`~proofdiff.gate.gate_result.GateResult`; bad input (a missing image, a
        malformed or unknown allowlist, profile or key) comes back as decision ERROR with the
        cause, an interrupt (Ctrl-C, SIGTERM; also one that stopped the candidate's
        differential) as INTERRUPTED (exit 130) with no timing round started, and the report
        is written in every case.
    """
    t0, started = time.monotonic(), time.time()
    opts = (options or RunOptions()).with_env()
    rid = opts.run_id or new_run_id()
    opts = msgspec.structs.replace(opts, run_id=rid)
    run_dir = opts.report_root / rid
    cand, base = ImageInfo(tag=candidate), ImageInfo(tag=baseline)
    verifier: ImageInfo | None = None
    resolved: dict[str, Profile] = {}
    findings: list[Finding] = []
    stale: list[StaleEntry] = []
    timing: list[ProfileTiming] = []
    checks: list[VerifierCheck] = []
    errors: list[str] = []
    not_judged: list[str] = []
    unverified: dict[str, str] = {}
    timing_started = False
    diff_id = ""
    diff: DifferentialResult | None = None
    timing_runs: list[RunRecord] = []
    interrupted = False
    wls: list[str] = list(opts.workloads)
    try:
        entries: list[AllowEntry] = load_allowlist(opts.allowlist) if opts.allowlist else []
        resolved = load_selected(opts)
        runner = Runner(rid)
        host = runtime is Runtime.PROCESS
        cand, base = ((host_side("candidate", candidate, resolved),
                       host_side("baseline", baseline, resolved)) if host else
                      (_side(runner, "candidate", candidate), _side(runner, "baseline", baseline)))
        wls = list(dict.fromkeys(opts.workloads or [p.workload for p in resolved.values()]))
        opts, _ = pin_artifacts(msgspec.structs.replace(opts, workloads=tuple(wls)), wls,
                                docker=not host, log=log)
        if host:
            verifier = verifier_in(opts.bin_dir)
        elif not opts.verifier_image:
            raise GateError("no pinned verifier was built (harness/artifacts/pinned_verifier.py)",
                            fix="run `make image` (or `proofdiff build`) in a proofdiff git "
                                "checkout, or pass --verifier-image")
        else:
            verifier = _side(runner, "verifier", opts.verifier_image)
        log(f"gate {rid}: candidate {candidate} ({cand.digest[:19]}) vs baseline {baseline} "
            f"({base.digest[:19]}); verifier {verifier.tag}")
        diff = run_differential(msgspec.structs.replace(
            opts, images=() if host else (candidate,), report_dir=str(run_dir),
            run_id="differential", suites=(), allowlist=""),
            profiles={n: on_side(p, candidate, verifier.tag) for n, p in resolved.items()}
            if host else resolved, log=log)
        diff_id = diff.run_id
        if diff.verdict is Verdict.INTERRUPTED:
            raise KeyboardInterrupt  # run_differential reports an interrupt; the gate stops
        if diff.errors:
            raise GateError("the candidate's differential could not run: " + diff.errors[0])
        findings, unverified = findings_of(diff), unverified_of(diff)
        not_judged = unjudged(diff)
        broken = {f.profile for f in findings if f.kind == "check"}
        timed = {n: p for n, p in resolved.items() if n not in broken}
        family = Family(alpha=GATE_ALPHA, size=max(1, len(wls) * sum(
            len(metrics_of(p.concurrency)) for p in timed.values())))
        if not no_timing:
            timing_started = True
            timing = _timing(resolved, opts.workloads, (base, cand), budget_s=budget_s,
                             opts=msgspec.structs.replace(opts, report_dir=str(run_dir)),
                             broken=broken, checks=checks, family=family, log=log,
                             verifier=verifier.tag if host else "", runs=timing_runs)
        else:
            _cross_check_alone(resolved, opts.workloads, (base, cand),
                               msgspec.structs.replace(opts, report_dir=str(run_dir)), checks,
                               log, verifier=verifier.tag if host else "")
        findings += timing_findings(timing)
        findings, stale = apply_allowlist(findings, entries)
    except KeyboardInterrupt:
        interrupted = True
    except ProofdiffError as exc:
        errors.append(str(exc))
    aa = bool(cand.digest) and cand.digest == base.digest
    undecided: list[str] = []
    if interrupted:
        decision, line = Decision.INTERRUPTED, (
            "INTERRUPTED: the report holds what was done" + (
                "" if timing_started else "; no timing round was started"))
    elif errors:
        decision, line = Decision.ERROR, f"ERROR: the gate could not run: {errors[0]}"
    else:
        decision, line, undecided = decide(findings, stale, timing, aa, unverified,
                                           unjudged=not_judged, no_timing=no_timing)
    result = GateResult(
        run_id=rid, created_unix_s=time.time(), decision=decision, decision_line=line,
        exit_code=decision.exit_code, candidate=cand, baseline=base, aa=aa, verifier=verifier,
        verifier_check=checks[0] if checks else None,
        profiles={n: profile_view(p) for n, p in resolved.items()},
        workloads=tuple(wls), findings=tuple(findings), timing=tuple(timing),
        unverified=unverified, allowlist=opts.allowlist, stale=tuple(stale),
        differential=diff_id,
        errors=tuple(errors),
        commit=dict(get_commit_info("proofdiff")),  # type: ignore[no-untyped-call]
        machine=machine_facts(), budget_s=budget_s, wall_s=round(time.monotonic() - t0, 3),
        alpha=GATE_ALPHA, no_timing=no_timing, undecided=tuple(undecided),
        started_unix_s=started)
    if opts.history:
        from proofdiff.gate.gate_history import store_gate

        stored = store_gate(opts.history, opts.report_root, result, diff, timing_runs)
        result = msgspec.structs.replace(result, history=stored.line, history_error=str(
            stored.error or ""))
    if write_report:
        from proofdiff.gate.gate_view import write_gate_report

        write_gate_report(result, run_dir)
    return result
