"""Independent verification: refprover's ``verify`` tool, in a short-lived container of the
verifier image, or as a process on this host (process and attach runtimes).

The verifier sees only public inputs, the proof and the ``.vk`` files (params mounted read-only
at ``/params``, no network), never the daemon's state. Input and output formats:
targets/refprover/README.md, 'Verifier input and output'. Verifiers are pluggable behind
:class:`Verifier`; :class:`ToolVerifier` is the default.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.choices import Role, Runtime
from proofdiff.model.jobs import FlowRecord, JobRecord, ProofVerdict
from proofdiff.model.workload import POREP, Workload, WorkloadJob

from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError, LaunchSpec, Mount

__all__ = ["VERIFY_BIN", "ToolVerifier", "VerifyError", "Verifier", "attach_verdicts",
           "job_items", "read_verdicts", "verify_item"]

VERIFY_BIN = "/usr/local/bin/verify"


class VerifyError(ProofdiffError):
    """The verifier could not give verdicts (bad exit, unparsable output, deadline, image)."""


class Verifier(Protocol):
    """Gives a :class:`~proofdiff.model.jobs.ProofVerdict` per verifier input item."""

    def verify(self, items: Sequence[dict[str, Any]]) -> dict[str, ProofVerdict]:
        """Verdicts keyed by item ``id``; every input id appears in the result.

        Raises:
            VerifyError: no verdicts could be had.
        """
        ...


def verify_item(job: WorkloadJob, item_id: str, proof: bytes) -> dict[str, Any]:
    """One ``items[]`` entry of the verifier's input: the job's own public inputs and the proof,
    as hex."""
    s = job.shape
    if s.proof_kind == POREP:
        return {"id": item_id, "proof_kind": POREP, "sector_size": s.sector_size,
                "miner_id": job.miner_id, "sector_number": job.sectors[0].sector_id,
                "comm_r": job.sectors[0].comm_r, "comm_d": job.comm_d, "ticket": job.ticket,
                "seed": job.seed, "partitions": s.partitions,
                "registered_proof": s.registered_proof, "proof": proof.hex()}
    return {"id": item_id, "proof_kind": s.proof_kind, "sector_size": s.sector_size,
            "miner_id": job.miner_id, "randomness": job.randomness.hex(),
            "sectors": [{"sector_id": s.sector_id, "comm_r": s.comm_r} for s in job.sectors],
            "proof": proof.hex()}


class _Result(msgspec.Struct):
    id: str
    valid: bool
    partitions: list[bool] | None = None
    error: str | None = None


class _Output(msgspec.Struct):
    results: list[_Result]


def read_verdicts(output: str | bytes, items: Sequence[dict[str, Any]]) -> dict[str, ProofVerdict]:
    """The verdicts in the tool's output (``{"results": [...]}``), keyed by item id.

    Raises:
        VerifyError: the output is not that JSON, or an item has no verdict.
    """
    try:
        out = msgspec.json.decode(output, type=_Output)
    except msgspec.DecodeError as exc:
        shown = output if isinstance(output, str) else output.decode("utf-8", "replace")
        raise VerifyError(f"verify output is not the expected JSON ({exc}): "
                          f"{shown.strip()[:500]!r}") from None
    verdicts = {r.id: ProofVerdict(valid=r.valid, partitions=tuple(r.partitions or ()),
                                   error=r.error) for r in out.results}
    missing = [str(i["id"]) for i in items if str(i["id"]) not in verdicts]
    if missing:
        raise VerifyError(f"verify gave no verdict for {missing}; the tool and proofdiff "
                          "disagree on the input format",
                          fix="make the tool read the format of the refprover README "
                              "('Verifier input')")
    return verdicts


class ToolVerifier:
    """Runs ``verify --param-cache /params --input /in/batch.json``.

    Args:
        runner: the run's runner. program: a docker image with the tool at
            :data:`VERIFY_BIN` (``runtime=Runtime.DOCKER``), or the tool's path or bin-dir name
            (``runtime=Runtime.PROCESS``).
        param_cache: host dir with the ``.vk`` files. profile: whose proofs are checked (label).
        timeout_s: deadline of one verifier run, seconds (default 300).
    """

    def __init__(self, runner: Runner, program: str, param_cache: Path, *,
                 profile: str = "", timeout_s: float = 300.0,
                 runtime: Runtime = Runtime.DOCKER) -> None:
        self.runner, self.program, self.param_cache = runner, program, Path(param_cache)
        self.profile, self.timeout_s, self.runtime = profile, timeout_s, runtime

    def verify(self, items: Sequence[dict[str, Any]]) -> dict[str, ProofVerdict]:
        """See :class:`Verifier`. No items: no container, ``{}``."""
        if not items:
            return {}
        spec = LaunchSpec(
            image=self.program, role=Role.VERIFIER, profile=self.profile,
            entrypoint=(VERIFY_BIN if self.runtime is Runtime.DOCKER else self.program,),
            command=("--param-cache", "/params", "--input", "/in/batch.json"),
            mounts=(Mount(self.param_cache, "/params"),),
            files={"/in/batch.json": json.dumps({"items": list(items)}).encode("utf-8")},
            runtime=self.runtime)
        try:
            res = self.runner.run(spec, timeout_s=self.timeout_s)
        except ContainerError as exc:
            raise VerifyError(exc.cause, fix=exc.fix) from None
        if res.timed_out:
            raise VerifyError(f"verify ({len(items)} proofs, profile {self.profile!r}) did not "
                              f"finish within {self.timeout_s:.0f} s",
                              fix="raise the verifier timeout (--verify-timeout) or check the "
                                  "machine's load")
        if res.exit_code != 0:
            raise VerifyError(f"verify exited with code {res.exit_code} (2 = unreadable input) "
                              f"for profile {self.profile!r}: {res.stderr.strip()[-2000:]}")
        return read_verdicts(res.stdout, items)


def job_items(job: JobRecord, workload: Workload,
              names: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The verifier items of one answered ``job`` with a proof: the proof against its own
    job's inputs (id ``"<index>|<job>"``), then against each other job of ``names`` (a cross
    flow's inputs, :func:`attach_verdicts`)."""
    return [verify_item(workload.job(n), f"{job.index}|{n}", job.proof)
            for n in dict.fromkeys([job.job, *names])]


def attach_verdicts(flow: FlowRecord, workload: Workload, verifier: Verifier, *,
                    cross: bool = False) -> FlowRecord:
    """``flow`` with every COMPLETED proof's verdict attached (``JobRecord.verdict``).

    Each proof is checked against its OWN job's inputs. With ``cross``, also against every
    other input the flow sent, which tells whose proof it is (``ProofVerdict.owners``): what
    the isolation oracles need. A verifier that fails is recorded in ``flow.errors``.
    """
    done = [j for j in flow.jobs if j.completed and j.proof]
    names = list(dict.fromkeys(j.job for j in flow.jobs)) if cross else []
    items = [item for j in done for item in job_items(j, workload, names)]
    try:
        got = verifier.verify(items)
    except VerifyError as exc:
        return msgspec.structs.replace(flow, errors=(*flow.errors, f"verifier: {exc}"))
    jobs: list[JobRecord] = []
    for j in flow.jobs:
        own = got.get(f"{j.index}|{j.job}")
        if own is None:
            jobs.append(j)
            continue
        owners = tuple(n for n in names if got[f"{j.index}|{n}"].valid) if cross else ()
        jobs.append(msgspec.structs.replace(j, verdict=msgspec.structs.replace(own, owners=owners)))
    return msgspec.structs.replace(flow, jobs=tuple(jobs))
