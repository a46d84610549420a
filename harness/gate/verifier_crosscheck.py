"""The baseline's own verifier against the pinned one, on the same proofs.

The gate judges every proof with the pinned verifier (harness/artifacts/pinned_verifier.py). A baseline
image that ships its own ``verify`` tool (refprover images do, at ``/usr/local/bin/verify``) is
asked too, on the baseline daemon's first proofs and on one copy of a proof with a byte flipped
(which any correct verifier rejects). The two must agree on every verdict, partition by
partition; where they do not, one of them is wrong and no proof verdict of the gate can be
trusted: the gate stops with an error that names the proofs. A baseline without a verify tool
(a cuzk image) is not cross-checked, and the evidence says so.

Whatever the baseline ships, the pinned verifier itself is shown to reject a proof of each
profile with a byte flipped (:func:`tamper_checks`): a verifier that accepted it would make
every validity check of the gate a pass from nothing, so the gate stops with an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from proofdiff.model.choices import Runtime
from proofdiff.model.jobs import FlowRecord, ProofVerdict
from proofdiff.model.runs import RunRecord
from proofdiff.model.workload import Workload
from proofdiff.runtime.runner import Runner
from proofdiff.verify.tool_verifier import ToolVerifier, Verifier, VerifyError, verify_item

from proofdiff.gate.gate_result import TamperCheck, VerifierCheck

__all__ = ["TamperCheck", "VerifierCheck", "cross_check", "tamper_checks"]


def _tampered(proof: bytes) -> bytes:
    mid = len(proof) // 2
    return proof[:mid] + bytes([proof[mid] ^ 0x01]) + proof[mid + 1:]


def _show(v: ProofVerdict) -> str:
    parts = "".join("1" if p else "0" for p in v.partitions)
    return f"{'valid' if v.valid else 'invalid'} [{parts}]"


def cross_check(flows: Sequence[FlowRecord], workload: Workload, pinned: Verifier,
                runner: Runner, baseline_image: str, param_cache: str,
                *, timeout_s: float = 300.0, runtime: Runtime = Runtime.DOCKER) -> VerifierCheck:
    """Ask the pinned verifier and ``baseline_image``'s ``verify`` (``runtime`` PROCESS: the
    baseline build's ``verify`` program, a path) about the completed proofs of ``flows`` (the
    baseline daemon's) and one tampered copy; compare (module docstring).

    Returns:
        The :class:`VerifierCheck` (never raises: a baseline without the tool is a note).
    """
    items = [verify_item(workload.job(j.job), f"{f.name}#{j.index}|{j.job}", j.proof)
             for f in flows for j in f.jobs if j.completed and j.proof]
    if not items:
        return VerifierCheck(baseline_image=baseline_image,
                             note="not cross-checked: the baseline gave no proof to check")
    first = next(j for f in flows for j in f.jobs if j.completed and j.proof)
    items.append(verify_item(workload.job(first.job), f"tampered|{first.job}",
                             _tampered(first.proof)))
    theirs = ToolVerifier(runner, baseline_image, Path(param_cache), profile="baseline-verifier",
                          timeout_s=timeout_s, runtime=runtime)
    try:
        ours = pinned.verify(items)
    except VerifyError as exc:
        return VerifierCheck(baseline_image=baseline_image, proofs=len(items), agreed=False,
                             disagreements=(f"the pinned verifier failed: {exc}",))
    try:
        got = theirs.verify(items)
    except VerifyError as exc:
        return VerifierCheck(baseline_image=baseline_image,
                             note=f"not cross-checked: the baseline image has no usable verify "
                                  f"tool ({str(exc).splitlines()[0][:200]})")
    bad = []
    for it in items:
        a, b = ours[it["id"]], got[it["id"]]
        if (a.valid, a.partitions) != (b.valid, b.partitions):
            bad.append(f"proof {it['id']}: pinned verifier says {_show(a)}, the baseline's "
                       f"says {_show(b)}")
    return VerifierCheck(baseline_image=baseline_image, proofs=len(items), agreed=not bad,
                         disagreements=tuple(bad))


def tamper_checks(runs: Sequence[RunRecord], workloads: Mapping[str, Workload],
                  pinned: Verifier) -> list[TamperCheck]:
    """For each profile and workload of ``runs`` (the candidate's differential), one proof the
    pinned verifier found valid, with a byte flipped, asked of ``pinned`` in one batch: each
    must come back invalid (module docstring). A run with no valid proof is a check with its
    note (the gate's findings already block on a workload with no proof verified).

    Raises:
        VerifyError: the pinned verifier gave no verdicts.
    """
    out: list[TamperCheck] = []
    items: list[tuple[TamperCheck, dict[str, object]]] = []
    for r in sorted(runs, key=lambda r: (r.profile, r.workload)):
        flow = r.workload_flow
        job = next((j for j in (flow.jobs if flow else ()) if j.completed and j.proof
                    and j.verdict is not None and j.verdict.valid), None)
        wl = workloads.get(r.workload)
        if job is None or wl is None:
            out.append(TamperCheck(profile=r.profile, workload=r.workload,
                                   note="no proof verified valid to tamper with"))
            continue
        check = TamperCheck(profile=r.profile, workload=r.workload, job=job.job)
        items.append((check, verify_item(wl.job(job.job),
                                         f"tampered|{r.profile}|{r.workload}|{job.job}",
                                         _tampered(job.proof))))
    got = pinned.verify([it for _c, it in items]) if items else {}
    for check, it in items:
        v = got[str(it["id"])]
        out.append(msgspec.structs.replace(check, verdict=_show(v), rejected=not v.valid))
    return sorted(out, key=lambda c: (c.profile, c.workload))
