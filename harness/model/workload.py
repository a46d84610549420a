"""Workload files (refprover README, 'Workload file'): load and validate.

A workload is JSON written by the image's ``seal`` tool. WindowPoSt (``seal wpost``)::

    {"schema": 1, "workload": "wpost-2k", "proof_kind": "WINDOW_POST_PARTITION",
     "sector_size": 2048, "registered_proof": 10, "api_version": "1.2.0", "partitions": 2,
     "jobs": [{"name": "wpost-0", "miner_id": 1000, "randomness": "<hex 32 bytes>",
               "sectors": [{"sector_id": 1, "comm_r": "<hex 32 bytes>"}],
               "vanilla_proofs": ["<base64 bincode>"]}]}

PoRep C2 (``seal porep``; one job per sealed sector; ``c1`` is the cuzk C1 envelope as JSON
text, docs/design/cuzk-interface.md)::

    {"schema": 1, "workload": "porep-2k", "proof_kind": "POREP_SEAL_COMMIT",
     "sector_size": 2048, "registered_proof": 5, "partitions": 1,
     "jobs": [{"name": "porep-s1", "miner_id": 1000, "sector_number": 1,
               "comm_r": "<hex 32>", "comm_d": "<hex 32>", "ticket": "<hex 32>",
               "seed": "<hex 32>",
               "c1": "{\"SectorNum\": 1, \"Phase1Out\": \"<base64>\", \"SectorSize\": 2048}"}]}
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from proofdiff.model.errors import ProofdiffError

__all__ = [
    "MIXED",
    "POREP",
    "PRIORITY_NAMES",
    "PROOF_BYTES_PER_PARTITION",
    "Shape",
    "SUPPORTED_KINDS",
    "Sector",
    "Workload",
    "WorkloadError",
    "WINDOW_POST",
    "WorkloadJob",
    "is_slow_workload",
    "load_workload",
    "sector_ids",
    "select_jobs",
]

#: A Groth16 proof on BLS12-381, compressed: 192 bytes per partition.
PROOF_BYTES_PER_PARTITION = 192
#: Proof kinds this harness can submit and verify today.
SUPPORTED_KINDS = ("WINDOW_POST_PARTITION", "POREP_SEAL_COMMIT")
POREP = "POREP_SEAL_COMMIT"
WINDOW_POST = "WINDOW_POST_PARTITION"
#: The ``proof_kind`` of a workload whose jobs are of several kinds.
MIXED = "MIXED"
#: cuzk's ``Priority`` names a workload may give a job.
PRIORITY_NAMES = ("LOW", "NORMAL", "HIGH", "CRITICAL")
SCHEMA_VERSION = 1
#: Name prefixes of the slow tier's workloads (pytest marker ``slow``): PoRep C2 takes about a
#: minute or more per proof on a 2-core CPU, and its params are 0.5-1.1 GB.
SLOW_WORKLOAD_PREFIXES = ("porep",)


class WorkloadError(ProofdiffError):
    """A workload file is unreadable, not JSON, or not the expected schema (message says where)."""


#: The fix of a sealed workload file that is not what the harness reads.
_REGENERATE = "regenerate the workload with the image's `seal` tool (proofdiff build)"
#: The fix of a mix file (written by hand) that is not what the harness reads.
_MIX_FIX = 'write the mix as {"mix": [{"file": PATH, "jobs": N, "priority": NAME}, ...]}'


@dataclass(frozen=True)
class Sector:
    """One sector's public inputs: ``sector_id`` and ``comm_r`` (hex, 32 bytes)."""

    sector_id: int
    comm_r: str


@dataclass(frozen=True)
class Shape:
    """What a proof request is: its ``proof_kind`` (a ``ProofKind`` name), ``sector_size``
    (bytes), ``registered_proof`` id, ``api_version`` and ``partitions`` per proof."""

    proof_kind: str
    sector_size: int
    registered_proof: int
    api_version: str
    partitions: int

    @property
    def proof_bytes(self) -> int:
        """``partitions x 192``."""
        return self.partitions * PROOF_BYTES_PER_PARTITION


@dataclass(frozen=True)
class WorkloadJob:
    """One proof request.

    WindowPoSt: ``randomness`` is 32 bytes; ``sectors`` the job's sectors; ``vanilla_proofs``
    one bincode blob per sector, decoded from base64.

    PoRep C2: ``sectors`` is the one sealed sector (``sector_number``, ``comm_r``); ``c1`` the
    cuzk C1 envelope bytes sent as ``vanilla_proof``; ``comm_d``, ``ticket`` and ``seed`` (hex,
    32 bytes each) are public inputs for the verifier only.

    ``shape``: the request's kind, sizes and partitions (a mix workload holds several).
    ``priority``: the cuzk ``Priority`` name the workload gives the job ('' = UNSPECIFIED:
    the daemon's default for the kind, which cuzk makes CRITICAL for WinningPoSt, HIGH for
    WindowPoSt, NORMAL for PoRep and SnapDeals).
    """

    name: str
    miner_id: int
    shape: Shape
    priority: str = ""
    randomness: bytes = b""
    sectors: tuple[Sector, ...] = ()
    vanilla_proofs: tuple[bytes, ...] = ()
    c1: bytes = b""
    comm_d: str = ""
    ticket: str = ""
    seed: str = ""

    def partition_inputs(self) -> list[tuple[tuple[Sector, ...], tuple[bytes, ...]]]:
        """A WindowPoSt job's sectors and vanilla proofs per partition, in partition order:
        consecutive runs of ``ceil(sectors / partitions)`` (2 for 2 KiB: filecoin-proofs'
        ``WINDOW_POST_SECTOR_COUNT``), as curio sends one request per partition.

        Raises:
            ValueError: not a WindowPoSt job, or fewer sectors than partitions.
        """
        if self.shape.proof_kind != WINDOW_POST:
            raise ValueError(f"job {self.name!r} is {self.shape.proof_kind}, not WindowPoSt")
        n, parts = len(self.sectors), max(1, self.shape.partitions)
        if n < parts:
            raise ValueError(f"job {self.name!r}: {n} sector(s) for {parts} partitions")
        per = -(-n // parts)
        return [(self.sectors[k * per:(k + 1) * per], self.vanilla_proofs[k * per:(k + 1) * per])
                for k in range(parts)]


@dataclass(frozen=True)
class Workload:
    """A loaded workload: its jobs (each with its :class:`Shape`) and where it came from.
    ``proof_kind`` and ``partitions`` are the jobs' when they all agree (a mix workload says
    ``MIXED`` and its largest partition count)."""

    name: str
    jobs: tuple[WorkloadJob, ...]
    source: str

    @property
    def proof_kind(self) -> str:
        """The jobs' proof kind, or ``MIXED``."""
        kinds = {j.shape.proof_kind for j in self.jobs}
        return kinds.pop() if len(kinds) == 1 else MIXED

    @property
    def partitions(self) -> int:
        """Partitions per proof (the largest, for a mix)."""
        return max(j.shape.partitions for j in self.jobs)

    @property
    def sector_size(self) -> int:
        """The first job's sector size, bytes."""
        return self.jobs[0].shape.sector_size

    def job(self, name: str) -> WorkloadJob:
        """The job called ``name``.

        Raises:
            KeyError: no such job (names the workload and its jobs).
        """
        for j in self.jobs:
            if j.name == name:
                return j
        raise KeyError(f"workload {self.name} has no job {name!r}; its jobs: "
                       f"{', '.join(j.name for j in self.jobs)}")


def _need(d: Any, key: str, kind: type | tuple[type, ...], where: str,
          fix: str = _REGENERATE) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise WorkloadError(f"{where}: missing field {key!r}", fix=fix)
    val = d[key]
    if not isinstance(val, kind) or (kind is int and isinstance(val, bool)):
        raise WorkloadError(f"{where}: field {key!r} has the wrong type: {val!r}", fix=fix)
    return val


def _hex(val: str, where: str, nbytes: int | None = None) -> bytes:
    try:
        raw = bytes.fromhex(val)
    except ValueError:
        raise WorkloadError(f"{where}: not hex: {val[:40]!r}", fix=_REGENERATE) from None
    if nbytes is not None and len(raw) != nbytes:
        raise WorkloadError(f"{where}: expected {nbytes} bytes, got {len(raw)}",
                            fix=_REGENERATE)
    return raw


def _priority(d: Any, where: str) -> str:
    prio = d.get("priority", "") if isinstance(d, dict) else ""
    if prio not in ("", *PRIORITY_NAMES):
        raise WorkloadError(f"{where}: priority {prio!r} is not one of {', '.join(PRIORITY_NAMES)}",
                            fix="write one of those, or leave priority out (the daemon's default)")
    return str(prio)


def _porep_job(d: Any, where: str, shape: Shape) -> WorkloadJob:
    """A PoRep job; the C1 envelope is checked for shape (JSON with SectorNum, Phase1Out,
    SectorSize that agree with the job) but its Phase1Out stays opaque to the harness."""
    name = _need(d, "name", str, where)
    where = f"{where} ({name!r})"
    sector = _need(d, "sector_number", int, where)
    hexes = {}
    for key in ("comm_r", "comm_d", "ticket", "seed"):
        hexes[key] = _need(d, key, str, where)
        _hex(hexes[key], f"{where}.{key}", 32)
    c1 = _need(d, "c1", str, where)
    try:
        env = json.loads(c1)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{where}.c1: the C1 envelope is not JSON ({exc.msg})",
                            fix="regenerate the workload with `seal porep`") from None
    for key in ("SectorNum", "Phase1Out", "SectorSize"):
        _need(env, key, str if key == "Phase1Out" else int, f"{where}.c1 (C1 envelope)")
    if env["SectorNum"] != sector or env["SectorSize"] != shape.sector_size:
        raise WorkloadError(
            f"{where}.c1: the C1 envelope says SectorNum={env['SectorNum']}, SectorSize="
            f"{env['SectorSize']} but the job says sector_number={sector}, sector_size="
            f"{shape.sector_size}; the envelope belongs to another sector",
            fix="regenerate the workload")
    return WorkloadJob(
        name=name, miner_id=_need(d, "miner_id", int, where), shape=shape,
        priority=_priority(d, where),
        sectors=(Sector(sector_id=sector, comm_r=hexes["comm_r"]),), c1=c1.encode("utf-8"),
        comm_d=hexes["comm_d"], ticket=hexes["ticket"], seed=hexes["seed"])


def _job(d: Any, where: str, shape: Shape) -> WorkloadJob:
    name = _need(d, "name", str, where)
    where = f"{where} ({name!r})"
    sectors = []
    for i, s in enumerate(_need(d, "sectors", list, where)):
        sw = f"{where}.sectors[{i}]"
        comm_r = _need(s, "comm_r", str, sw)
        _hex(comm_r, f"{sw}.comm_r", 32)
        sectors.append(Sector(sector_id=_need(s, "sector_id", int, sw), comm_r=comm_r))
    if not sectors:
        raise WorkloadError(f"{where}: 'sectors' is empty", fix=_REGENERATE)
    proofs = []
    for i, b in enumerate(_need(d, "vanilla_proofs", list, where)):
        if not isinstance(b, str):
            raise WorkloadError(f"{where}.vanilla_proofs[{i}]: expected a base64 string",
                                fix=_REGENERATE)
        try:
            proofs.append(base64.b64decode(b, validate=True))
        except (binascii.Error, ValueError):
            raise WorkloadError(f"{where}.vanilla_proofs[{i}]: not base64",
                                fix=_REGENERATE) from None
    if len(proofs) != len(sectors):
        raise WorkloadError(f"{where}: {len(proofs)} vanilla proofs for {len(sectors)} sectors; "
                            "expected one per sector", fix=_REGENERATE)
    n, parts = len(sectors), shape.partitions
    if (parts - 1) * -(-n // parts) >= n:  # a partition without a sector: no request for it
        raise WorkloadError(
            f"{where}: {n} sector(s) for {parts} partitions: "
            + ("fewer sectors than partitions" if n < parts else
               f"in runs of {-(-n // parts)} (WorkloadJob.partition_inputs) the last "
               "partition gets none"),
            fix="give every partition its sectors (a 2 KiB WindowPoSt partition holds 2), or "
                "set the workload's partitions to what its sectors fill; regenerate it with "
                "`proofdiff build` / the image's seal tool")
    return WorkloadJob(
        name=name, miner_id=_need(d, "miner_id", int, where), shape=shape,
        priority=_priority(d, where), randomness=_hex(_need(d, "randomness", str, where), f"{where}.randomness", 32),
        sectors=tuple(sectors), vanilla_proofs=tuple(proofs),
    )


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"workload file {str(path)!r} cannot be read ({exc.strerror})",
                            fix="build it with `proofdiff build` / `make workloads`, or fix the "
                                "path") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{path}:{exc.lineno}:{exc.colno}: bad JSON: {exc.msg}",
                            fix="regenerate the workload (proofdiff build)") from None


def _jobs_of(doc: Any, where: str) -> tuple[WorkloadJob, ...]:
    kind = _need(doc, "proof_kind", str, where)
    if kind not in SUPPORTED_KINDS:
        raise WorkloadError(f"{where}: proof_kind {kind!r} not supported yet",
                            fix=f"use a workload of a supported kind: {', '.join(SUPPORTED_KINDS)}")
    partitions = _need(doc, "partitions", int, where)
    if partitions < 1:
        raise WorkloadError(f"{where}: partitions must be >= 1, got {partitions}",
                            fix=_REGENERATE)
    shape = Shape(proof_kind=kind, sector_size=_need(doc, "sector_size", int, where),
                  registered_proof=_need(doc, "registered_proof", int, where),
                  api_version=str(doc.get("api_version", "")), partitions=partitions)
    raw_jobs = _need(doc, "jobs", list, where)
    if kind == POREP:
        jobs = tuple(_porep_job(j, f"{where}: jobs[{i}]", shape) for i, j in enumerate(raw_jobs))
    else:
        jobs = tuple(_job(j, f"{where}: jobs[{i}]", shape) for i, j in enumerate(raw_jobs))
    if not jobs:
        raise WorkloadError(f"{where}: 'jobs' is empty", fix=_REGENERATE)
    return jobs


def _mix(doc: Any, path: Path) -> tuple[WorkloadJob, ...]:
    """A mix: ``{"mix": [{"file": PATH, "jobs": N, "priority": NAME}, ...]}``, each member a
    workload file (relative paths are relative to the mix file); ``jobs`` (default all) and
    ``priority`` (default: each job's own) per member."""
    members = _need(doc, "mix", list, str(path), _MIX_FIX)
    jobs: list[WorkloadJob] = []
    for i, m in enumerate(members):
        where = f"{path}: mix[{i}]"
        member = Path(_need(m, "file", str, where, _MIX_FIX))
        member = member if member.is_absolute() else path.parent / member
        got = load_workload(member).jobs
        count = _need(m, "jobs", int, where, _MIX_FIX) if "jobs" in m else len(got)
        if not 1 <= count <= len(got):
            raise WorkloadError(f"{where}: jobs = {count}, but {member} has {len(got)} job(s)",
                                fix=f"give \"jobs\" from 1 to {len(got)}, or leave it out to take "
                                    "every job of the member")
        prio = _priority(m, where)
        jobs += [replace(j, priority=prio or j.priority) for j in got[:count]]
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise WorkloadError(f"{path}: the members' job names collide ({sorted(names)})",
                            fix="a mix needs distinct job names: list each workload file once")
    if not jobs:
        raise WorkloadError(f"{path}: the mix has no job",
                            fix="list at least one member file, with \"jobs\" >= 1")
    return tuple(jobs)


def load_workload(path: str | Path) -> Workload:
    """Load and validate a workload file (a sealed workload, or a mix of workload files).

    Raises:
        WorkloadError: missing file, bad JSON (with line:column), unknown schema version,
            unsupported proof kind, an unknown priority, a missing/mistyped field (named with
            its JSON path; a mix member's ``jobs`` that is no whole number from 1 to the
            member's jobs included), or a WindowPoSt job whose sectors leave a partition
            without one (fewer sectors than partitions).
    """
    path = Path(path)
    doc = _read(path)
    where = str(path)
    schema = _need(doc, "schema", int, where)
    if schema != SCHEMA_VERSION:
        raise WorkloadError(f"{where}: schema {schema} not supported (this harness reads schema "
                            f"{SCHEMA_VERSION})", fix="rebuild the workload with the current image")
    jobs = _mix(doc, path) if "mix" in doc else _jobs_of(doc, where)
    return Workload(name=_need(doc, "workload", str, where), jobs=jobs, source=where)


def select_jobs(workload: Workload, count: int | None) -> list[WorkloadJob]:
    """The first ``count`` jobs (all when ``None``); more than the workload has cycles through
    its jobs again (``wpost-0``, ``wpost-1``, ..., ``wpost-0`` ...)."""
    if count is None:
        return list(workload.jobs)
    return [workload.jobs[i % len(workload.jobs)] for i in range(count)]


def sector_ids(job: WorkloadJob) -> Sequence[int]:
    """The job's sector numbers in order."""
    return [s.sector_id for s in job.sectors]


def is_slow_workload(name: str) -> bool:
    """True for the slow tier's workloads (``porep-2k``, ``porep-2k-2p``, ...)."""
    return name.startswith(SLOW_WORKLOAD_PREFIXES)
