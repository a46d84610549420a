"""Divergences and the verdict, computed once from the oracle records (docs/design/architecture.md).

A divergence: an oracle is FAIL or ERROR on a profile but PASS (or INCONCLUSIVE) on the
baseline (the first profile) for the same workload and image; a comparison oracle the baseline
has no record of (timing throughput, prod vs bench) diverges when it fails. Both failing is a
failure of the image, not a divergence; a skipped baseline cannot be compared.

The verdict, first match wins: INTERRUPTED; DIVERGED (any divergence); ERROR (run-level errors
or an ERROR record); FAILED (a FAIL record); INCOMPLETE (a skipped record, a statistical check
left INCONCLUSIVE, named with its undecided metric, or a selected profile x workload x suite
with no record at all); SAME (every record PASS: nothing undecided, nothing unjudged).

An *unverifiable* profile (``validity/proofs`` SKIPPED because its client hands out no proof
bytes, e.g. real cuzk-bench) is covered when another profile's proofs on the same workload and
image were verified (:func:`unverifiable`): it does not make the run INCOMPLETE, and the SAME
line names it with its reason. Uncovered (no profile's proofs verified), it is INCOMPLETE.

A record an allowlist entry accepts (:mod:`proofdiff.model.allowlist`: a FAIL, never an
ERROR), and the divergence made of it, set no verdict: the verdict is what it would be without
them, and its line counts them as accepted differences. SAME still needs at least one check
that passed, and one on every profile that has an accepted record: a run (or a profile) whose
every judged record was accepted is INCOMPLETE, never SAME on waivers alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from proofdiff.model.allowlist import Acceptance
from proofdiff.model.config_delta import ConfigDelta
from proofdiff.model.oracle_records import Divergence, OracleRecord
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import Outcome, Verdict

from proofdiff.core.suspects import rank

__all__ = ["divergences", "missing_cells", "uncompared", "unverifiable", "verdict"]

_COMPARABLE = (Outcome.PASS, Outcome.INCONCLUSIVE)


def _head(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def divergences(records: Sequence[OracleRecord], baseline: str,
                deltas: Mapping[str, ConfigDelta]) -> list[Divergence]:
    """Every divergence from ``baseline``, with suspects ranked from ``deltas`` (baseline ->
    each profile, by profile name)."""
    by = {(r.suite, r.oracle, r.workload, r.image, r.profile): r for r in records}
    out = []
    for r in records:
        if r.profile == baseline or not r.outcome.bad:
            continue
        base = by.get((r.suite, r.oracle, r.workload, r.image, baseline))
        if base is not None and base.outcome not in _COMPARABLE:
            continue
        delta = deltas.get(r.profile)
        out.append(Divergence(
            suite=r.suite, oracle=r.oracle, workload=r.workload, image=r.image,
            baseline=baseline, profile=r.profile, outcome=r.outcome,
            baseline_outcome=base.outcome if base else None, message=r.message,
            suspects=rank(delta, r) if delta is not None else ()))
    return out


def uncompared(records: Sequence[OracleRecord], baseline: str) -> list[str]:
    """Why some of ``records`` could not be compared with the baseline, one line each: a
    SKIPPED record (on any profile), or a baseline record that is not comparable (a profile's
    record against a failing or skipped baseline says nothing about agreement). No divergence
    among these is no agreement."""
    by = {(r.suite, r.oracle, r.workload, r.image, r.profile): r for r in records}
    out = []
    for r in records:
        base = by.get((r.suite, r.oracle, r.workload, r.image, baseline))
        if r.outcome is Outcome.SKIPPED:
            out.append(f"{r.check} skipped on {r.profile}/{r.workload}: {_head(r.message)}")
        elif r.profile != baseline and base is not None and base.outcome is Outcome.SKIPPED:
            out.append(f"{r.check} on {r.profile}/{r.workload}: the baseline {baseline!r} was "
                       "skipped")
    return out


def missing_cells(records: Sequence[OracleRecord], profiles: Sequence[str],
                  workloads: Sequence[str], suites: Sequence[str],
                  images: Sequence[str] = ("",)) -> list[str]:
    """``suite on profile/workload[@image]`` for each selected cell without any record."""
    have = {(r.suite, r.profile, r.workload, r.image) for r in records}
    return [f"{s} on {p}/{w}" + (f"@{i}" if i else "") for i in images for w in workloads
            for p in profiles for s in suites if (s, p, w, i) not in have]


def unverifiable(records: Sequence[OracleRecord]) -> tuple[list[OracleRecord],
                                                          list[OracleRecord]]:
    """The ``validity/proofs`` records of unverifiable profiles (SKIPPED with
    ``evidence["unverifiable"]``, :mod:`proofdiff.oracles.validity`), split into ``(covered,
    uncovered)``: covered when a record of another profile on the same workload and image
    PASSed with at least one proof verified valid. The one rule for the run's verdict and the
    gate's (at least one profile's proofs verified, and which could not be)."""
    def key(r: OracleRecord) -> tuple[str, str]:
        return r.workload, r.image
    verified = {key(r) for r in records if (r.suite, r.oracle) == ("validity", "proofs")
                and r.outcome is Outcome.PASS and r.counts is not None and r.counts.valid > 0}
    unv = [r for r in records if (r.suite, r.oracle) == ("validity", "proofs")
           and r.outcome is Outcome.SKIPPED and r.evidence.get("unverifiable")]
    return ([r for r in unv if key(r) in verified], [r for r in unv if key(r) not in verified])


def _proofs(runs: Sequence[RunRecord]) -> int:
    return sum(1 for r in runs if r.workload_flow for j in r.workload_flow.jobs
               if j.verdict is not None and j.verdict.valid)


def verdict(records: Sequence[OracleRecord], divs: Sequence[Divergence], errors: Sequence[str],
            missing: Sequence[str], runs: Sequence[RunRecord], *,
            interrupted: bool = False,
            accepted: Sequence[Acceptance] = ()) -> tuple[Verdict, str]:
    """The verdict and its one line (the line does not repeat the verdict's name); records and
    divergences that ``accepted`` names set no verdict (module docstring)."""
    keys = {a.key for a in accepted}

    def open_(x: OracleRecord | Divergence) -> bool:
        return (f"{x.suite}/{x.oracle}", x.profile, x.workload, x.image) not in keys

    divs = [d for d in divs if open_(d)]
    bad = [r for r in records if r.outcome.bad and open_(r)]
    waived = [r for r in records if r.outcome.bad and not open_(r)]
    if interrupted:
        return Verdict.INTERRUPTED, (f"interrupted after {len(records)} check(s); the report "
                                     "holds what was done")
    if divs:
        return Verdict.DIVERGED, "; ".join(d.headline for d in divs)
    errs = [r for r in bad if r.outcome is Outcome.ERROR]
    if errors:
        return Verdict.ERROR, _head(errors[0])
    if errs:
        return Verdict.ERROR, f"{errs[0].check} on {errs[0].profile}: {_head(errs[0].message)}"
    if bad:
        return Verdict.FAILED, "no divergence, but " + "; ".join(
            f"{r.check} failed on {r.profile}/{r.workload}" for r in bad[:6]) + (
            f" and {len(bad) - 6} more" if len(bad) > 6 else "")
    covered = unverifiable(records)[0]
    skipped = [r for r in records if r.outcome is Outcome.SKIPPED and r not in covered]
    undecided = [r for r in records if r.outcome is Outcome.INCONCLUSIVE]
    if skipped or undecided or missing or not records:
        why = ([f"{r.check} skipped on {r.profile}/{r.workload}: {_head(r.message)}"
                for r in skipped[:3]]
               + [f"{r.check} on {r.profile}/{r.workload} undecided: {_undecided(r)}"
                  for r in undecided[:3]]
               + [f"no outcome for {m}" for m in missing[:3]])
        return Verdict.INCOMPLETE, "; ".join(why) or "no check ran"
    passed = len(records) - len(covered) - len(waived)
    waived_only = sorted({r.profile for r in waived} - {r.profile for r in records
                                                        if r.outcome is Outcome.PASS})
    if not passed or waived_only:
        return Verdict.INCOMPLETE, (
            f"no check passed on {', '.join(waived_only)}: each of its failures was accepted "
            "by the allowlist" if waived_only else
            f"no check passed: all {len(records)} were accepted by the allowlist or could not "
            "be verified")
    warned = [r for r in records if r.evidence.get("warning")]
    profiles = sorted({r.profile for r in records})
    line = (f"{passed} check(s) passed on "
            f"{', '.join(profiles)}; {_proofs(runs)} proof(s) verified independently")
    if waived:
        line += (f"; {len(waived)} accepted difference(s) (allowlist): "
                 + "; ".join(f"{r.check} {r.outcome.value} on {r.profile}/{r.workload}"
                             for r in waived[:3]) + (" ..." if len(waived) > 3 else ""))
    if covered:
        line += "; UNVERIFIABLE: " + "; ".join(
            f"validity/proofs on {r.profile}/{r.workload}: {r.evidence['unverifiable']}"
            for r in covered)
    if warned:
        line += "; WARNING: " + "; ".join(f"{r.check} on {r.profile}: {r.evidence['warning']}"
                                          for r in warned)
    return Verdict.SAME, line


def _undecided(r: OracleRecord) -> str:
    """The metric an INCONCLUSIVE record left undecided, with its figures where it has them."""
    v = r.timing
    if v is None:
        return f"INCONCLUSIVE: {_head(r.message)}"
    return f"{v.metric} ({v.arm}) {v.line()}"
