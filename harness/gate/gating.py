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
3. Timing, per profile: the profile on both images side by side, interleaved rounds, a paired,
   one-sided, sequential verdict per metric (:mod:`proofdiff.gate.timing_rounds`,
   :mod:`proofdiff.stats.paired`) within ``budget_s``: WITHIN when the candidate is shown less
   than ``max_slowdown`` worse, WORSE when shown worse than the practical margin. The
   family-wise false-WORSE level :data:`GATE_ALPHA` is held over every metric x profile x
   workload (each at its Bonferroni share); the false-WITHIN level of a candidate
   ``max_slowdown`` worse is :data:`~proofdiff.stats.paired.DEFAULT_BETA` per metric, and a
   PASS needs every metric WITHIN (an intersection-union test: no split). A job of the
   candidate that fails, is lost or gives an invalid proof in a timing batch is a blocking
   finding. A PASS needs every timing metric WITHIN, unless the user asked for no timing
   (``no_timing``), which the decision line states.
4. The allowlist turns matching findings into accepted differences (a FAIL only, never an
   ERROR: :mod:`proofdiff.model.allowlist`); an expired entry fails, and a profile whose every
   finding was accepted with no check passing on it is not a PASS (INCONCLUSIVE).

Every proof is checked by the pinned verifier (harness/artifacts/pinned_verifier.py): built from the git
tree that ``verifier.lock`` names, tagged by its content, never the candidate's own tool. Before
the timing arm, the baseline's own verifier is asked about the baseline's first proofs and a
tampered copy (harness/gate/verifier_crosscheck.py); a disagreement with the pinned one is an ERROR.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
from pytest_benchmark.utils import get_commit_info

from proofdiff.model.status import Verdict
from proofdiff.core.plan import load_selected, new_run_id, pin_artifacts
from proofdiff.core.profile_delta import profile_view
from proofdiff.fleet.executor import open_executor
from proofdiff.gate.allowlist import AllowEntry, apply_allowlist, load_allowlist
from proofdiff.gate.decision import decide, timing_findings, timing_undecided
from proofdiff.gate.findings import (CHECKED_SUITES, findings_of, unjudged, unverified_of,
                                    waived_only)
from proofdiff.gate.gate_error import GateError
from proofdiff.gate.host_builds import host_side, verifier_in
from proofdiff.gate.gate_result import (Decision, Finding, GateResult, ProfileTiming, StaleEntry,
                                        TamperCheck, VerifierCheck)
from proofdiff.gate.timing_arms import Where, cross_check_alone, timing_arms
from proofdiff.gate.arm_judge import Family
from proofdiff.gate.timing_rounds import BUDGET_PAIRS, metrics_of
from proofdiff.model.choices import Runtime
from proofdiff.model.errors import ProofdiffError, unexpected
from proofdiff.model.image import ImageInfo
from proofdiff.model.profile import Profile
from proofdiff.model.result import DifferentialResult
from proofdiff.model.runs import RunRecord
from proofdiff.model.run_options import RunOptions
from proofdiff.runtime.host import machine_facts
from proofdiff.runtime.identity import image_info
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError
from proofdiff.stats.paired import DEFAULT_BETA, DEFAULT_MAX_SLOWDOWN, MARGIN_SHARE

__all__ = ["CHECKED_SUITES", "GATE_ALPHA", "GateError", "decide", "findings_of", "run_gate",
           "tamper_control", "timing_findings", "timing_undecided", "unjudged",
           "untimed_profiles", "unverified_of"]

#: The family-wise false-WORSE level of one gate's timing verdicts, over every metric x
#: profile x workload (:class:`proofdiff.gate.arm_judge.Family`).
GATE_ALPHA = 0.05


def _side(runner: Runner, role: str, tag: str) -> ImageInfo:
    try:
        return image_info(runner, tag)
    except ContainerError as exc:
        raise GateError(f"the {role} image: {exc.headline}", fix=exc.fix) from None


def tamper_control(diff: DifferentialResult, opts: RunOptions, verifier: ImageInfo | None,
                   host: bool, rid: str) -> list[TamperCheck]:
    """The pinned verifier on a tampered proof of each profile of the candidate's differential
    (:func:`~proofdiff.gate.verifier_crosscheck.tamper_checks`), here, where the verifier was
    pinned: the program of a host gate, else the image.

    Raises:
        GateError: it accepted a tampered proof, or gave no verdicts: no verdict of the gate
            could be trusted.
    """
    from proofdiff.gate.verifier_crosscheck import tamper_checks
    from proofdiff.model.workload import load_workload
    from proofdiff.verify.tool_verifier import ToolVerifier, VerifyError

    if verifier is None:
        return []
    loaded = {w: load_workload(path) for w, path in opts.workload_files.items()
              if w in {r.workload for r in diff.runs}}
    runner = Runner(f"{rid}-tamper")
    try:
        got = tamper_checks(diff.runs, loaded, ToolVerifier(
            runner, verifier.tag, Path(opts.param_cache), profile="tamper-check",
            runtime=Runtime.PROCESS if host else Runtime.DOCKER))
    except VerifyError as exc:
        raise GateError(f"the pinned verifier {verifier.tag} could not judge a tampered proof: "
                        f"{exc.cause}", fix=exc.fix or "run `make image` again") from None
    finally:
        runner.close()
    accepted = [t for t in got if t.job and not t.rejected]
    if accepted:
        raise GateError(f"the pinned verifier {verifier.tag} accepted a proof with a byte "
                        "flipped (" + "; ".join(f"{t.profile}/{t.workload} {t.job}: {t.verdict}"
                                                for t in accepted) + "), so none of its "
                        "verdicts can be trusted", fix="rebuild the pinned verifier (make "
                        "image) or fix verifier.lock; never gate on this one")
    return got


def untimed_profiles(findings: Sequence[Finding], entries: Sequence[AllowEntry]) -> set[str]:
    """The profiles the timing arm leaves out: those with a check finding that blocks the push
    (no unexpired allowlist entry accepts it), and those whose proofs are no timing evidence
    (a validity finding, accepted or not: a round of invalid proofs is no sample). An accepted
    isolation finding, a known bug of the daemon such as real cuzk's colliding ids on prod,
    leaves its profile timed: the gate still asks whether the candidate is slower there."""
    return {f.profile for f in apply_allowlist(findings, entries)[0] if f.kind == "check"
            and (not f.accepted or f.check.startswith("validity/"))}


def run_gate(candidate: str, baseline: str, options: RunOptions | None = None, *,
             budget_s: float = 900.0, rounds: int = BUDGET_PAIRS,
             max_slowdown: float = DEFAULT_MAX_SLOWDOWN, no_timing: bool = False,
             log: Callable[[str], None] = lambda _l: None,
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
            undecided metrics are INCONCLUSIVE). rounds: the most rounds of each timing arm,
            the warm-up included (default :data:`~proofdiff.gate.timing_rounds.BUDGET_PAIRS`):
            the sequential test spends its whole error rates by then, and each metric stops
            earlier at the cap its noise calls for
            (:func:`proofdiff.gate.timing_rounds.measure_profile`). max_slowdown: the
            tolerated slowdown per timing metric, a fraction (default 0.05).
            ``options.allowlist``: a TOML allowlist
            (:mod:`proofdiff.model.allowlist`). no_timing: the user's ``--no-timing``: no
            timing arm; a PASS then rests on the checks alone and its line says so (default:
            time every profile; a PASS needs every timing metric SAME).
            ``options.history``: the gate is appended to that history
            (:mod:`proofdiff.gate.gate_history`), whatever its decision; a history that fails
            is ``history_error`` in the result, never an exception.

    Returns:
        The :class:`~proofdiff.gate.gate_result.GateResult`; bad input (a missing image, a
        malformed or unknown allowlist, profile or key) comes back as decision ERROR with the
        cause, an unexpected exception (a bug of proofdiff's) as ERROR with its traceback, an
        interrupt (Ctrl-C, SIGTERM; also one that stopped the candidate's differential) as
        INTERRUPTED (exit 130) with no timing round started, and the report is written in
        every case.
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
    tamper: list[TamperCheck] = []
    interrupted = False
    wls: list[str] = list(opts.workloads)
    with contextlib.ExitStack() as stack:
        try:
            entries: list[AllowEntry] = load_allowlist(opts.allowlist) if opts.allowlist else []
            resolved = load_selected(opts)
            host = runtime is Runtime.PROCESS
            if host:
                cand, base = (host_side("candidate", candidate, resolved),
                              host_side("baseline", baseline, resolved))
            else:  # images are found here, their ids the evidence's subject, fleet or not
                runner = Runner(rid)
                cand, base = (_side(runner, "candidate", candidate),
                              _side(runner, "baseline", baseline))
            wls = list(dict.fromkeys(opts.workloads or [p.workload for p in resolved.values()]))
            ex = stack.enter_context(open_executor(opts, log=log))
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
            where = Where(ex, opts, (base, cand), verifier, host)
            diff = where.differential(dict(images=() if host else (candidate,),
                                           report_dir=str(run_dir), run_id="differential",
                                           suites=(), allowlist=""), resolved, log)
            diff_id = diff.run_id
            if diff.verdict is Verdict.INTERRUPTED:
                raise KeyboardInterrupt  # run_differential reports an interrupt; the gate stops
            if diff.errors:
                raise GateError("the candidate's differential could not run: " + diff.errors[0])
            findings, unverified = findings_of(diff), unverified_of(diff)
            not_judged = unjudged(diff)
            tamper = tamper_control(diff, opts, verifier, host, rid)
            log("gate: the pinned verifier on a tampered proof of each profile: " + "; ".join(
                f"{t.profile}/{t.workload} {t.verdict or t.note}" for t in tamper))
            broken = untimed_profiles(findings, entries)
            timed = {n: p for n, p in resolved.items() if n not in broken}
            family = Family(alpha=GATE_ALPHA, size=max(1, len(wls) * sum(
                len(metrics_of(p.concurrency)) for p in timed.values())))
            log(f"gate: timing tolerates {max_slowdown:.1%} per metric; each of "
                f"{family.size} metric(s) is WORSE by chance at most {family.share():.4f}")
            arm_opts = msgspec.structs.replace(where.options, report_dir=str(run_dir))
            if not no_timing:
                timing_started = True
                timing = timing_arms(resolved, opts.workloads, where.sides, budget_s=budget_s,
                                 rounds=rounds, opts=arm_opts, broken=broken, checks=checks,
                                 family=family, log=log, verifier=where.verifier,
                                 runs=timing_runs, ex=ex, max_slowdown=max_slowdown)
            else:
                cross_check_alone(resolved, opts.workloads, where.sides, arm_opts, checks,
                                   log, verifier=where.verifier)
            findings += timing_findings(timing)
            findings, stale = apply_allowlist(findings, entries)
            not_judged += waived_only(diff, findings)
        except KeyboardInterrupt:
            interrupted = True
        except ProofdiffError as exc:
            errors.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug of ours: ERROR with its traceback
            errors.append(unexpected(exc, "the gate"))
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
        verifier_check=checks[0] if checks else None, tamper=tuple(tamper),
        profiles={n: profile_view(p) for n, p in resolved.items()},
        workloads=tuple(wls), findings=tuple(findings), timing=tuple(timing),
        unverified=unverified, allowlist=opts.allowlist, stale=tuple(stale),
        differential=diff_id,
        errors=tuple(errors),
        commit=dict(get_commit_info("proofdiff")),  # type: ignore[no-untyped-call]
        machine=machine_facts(), budget_s=budget_s, max_rounds=rounds,
        wall_s=round(time.monotonic() - t0, 3),
        alpha=GATE_ALPHA, beta=DEFAULT_BETA, max_slowdown=max_slowdown,
        margin=math.expm1(MARGIN_SHARE * math.log1p(max_slowdown)), no_timing=no_timing,
        undecided=tuple(undecided),
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
