"""The choices a profile, a launch and a gate make, each an enum stated once.

They are ``StrEnum``: a profile file, ``--set`` and summary.json write their values
(``runtime = "process"``); code compares members (``p.runtime is Runtime.PROCESS``).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DriverKind", "ImageRole", "JobIdScheme", "Role", "Runtime", "SideBySide"]


class Runtime(StrEnum):
    """How a daemon runs (profile key ``runtime``).

    * ``DOCKER``: a container of the profile's image (hardened, labelled, read-only mounts).
    * ``PROCESS``: the profile's ``binary`` as a process on this host (paths and ports mapped).
    * ``ATTACH``: a daemon someone else started, at the profile's ``address``; never started,
      stopped or signalled by proofdiff.
    """

    DOCKER = "docker"
    PROCESS = "process"
    ATTACH = "attach"


class DriverKind(StrEnum):
    """How proofs are requested (profile key ``driver``).

    * ``GRPC``: the cuzk API (``cuzk.v1.ProvingEngine``), proofdiff's own client.
    * ``BENCH_CLI``: the image's cuzk-bench-style client, its output parsed.
    """

    GRPC = "grpc"
    BENCH_CLI = "bench-cli"


class JobIdScheme(StrEnum):
    """The request ids a profile sends (profile key ``job_ids``).

    * ``UUID``: a fresh UUID per job (what a benchmark does).
    * ``CURIO``: curio's deterministic ids (``porep-<miner>-<sector>``,
      ``wdpost-<miner>-<partition>-<randomness[:8]>``): a retried job reuses its id.
    * ``FIXED``: one id for every job (the worst case of colliding ids).
    """

    UUID = "uuid"
    CURIO = "curio"
    FIXED = "fixed"


class Role(StrEnum):
    """What a launched container or process is for (its ``proofdiff.role`` label)."""

    DAEMON = "daemon"
    VERIFIER = "verifier"
    BENCH = "bench"
    PREFLIGHT = "preflight"
    GPU_PROBE = "gpu-probe"


class ImageRole(StrEnum):
    """The part an image plays in a gate: the one to push, the one it replaces, or the pinned
    verifier that judges both."""

    CANDIDATE = "candidate"
    BASELINE = "baseline"
    VERIFIER = "verifier"


class SideBySide(StrEnum):
    """Whether a run's profiles prove at the same time on disjoint CPU sets
    (:mod:`proofdiff.core.side_by_side`): ``auto`` where the host has the cores for it,
    ``on`` whenever each profile gets at least one core, ``off`` never."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"
