"""What each setting of a profile controls: its subsystem, and which subsystems each check
exercises. The suspect ranking (:mod:`proofdiff.core.suspects`) reads this map after the
evidence; it is documented in docs/design/cuzk-interface.md ("What each key controls").

Sources: cuzk's config structs, one table per subsystem (curio ``extern/cuzk/cuzk-core/src/
config.rs``, as docs/design/cuzk-interface.md "Daemon configuration" lists them: ``[daemon]``,
``[srs]``, ``[memory]``, ``[gpus]``, ``[scheduler]``, ``[synthesis]``, ``[pipeline]``,
``[logging]``); the daemon sets ``FIL_PROOFS_PARAMETER_CACHE`` from ``srs.param_cache``
(the same source); the profile's client and container keys (harness/model/profile.py
``PROFILE_KEYS``). A key that no source documents (an environment variable the daemon does not
read, such as a test double's own switches) has no subsystem: it ranks after every documented
one, in delta order. Nothing here names a fault switch.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CHECK_SUBSYSTEMS", "SUBSYSTEMS", "subsystems_for"]

#: Subsystem -> (what it controls, in a few words; the delta paths under it, most specific
#: first).
SUBSYSTEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    # monolithic, or cuzk's partitioned pipeline (look-ahead, synthesis concurrency, workers)
    # whose per-partition proofs are assembled per job
    "proof-assembly": ("how one proof is put together, [pipeline] and [synthesis]",
                       ("config.pipeline.enabled", "config.synthesis.partition_workers",
                        "config.pipeline", "config.synthesis")),
    # cuzk does not deduplicate ids (docs/design/cuzk-interface.md, "Semantics")
    "client-load": ("how many requests meet in the daemon, with which ids",
                    ("concurrency", "job_ids", "miner_id", "jobs")),
    "scheduler": ("which requests share a GPU batch and in what order, [scheduler]",
                  ("config.scheduler",)),
    "gpu": ("the devices and GPU workers that prove, [gpus]", ("config.gpus", "gpus")),
    # the daemon sets FIL_PROOFS_PARAMETER_CACHE from srs.param_cache
    "params": ("where the Groth16 parameters are read, [srs] and the params mount",
               ("config.srs", "mounts.params", "env.FIL_PROOFS_PARAMETER_CACHE")),
    "memory": ("the memory budgeted and allowed, [memory] and the container limit",
               ("config.memory", "mem_limit")),
    "cpu": ("the CPU allowed, the container limit", ("cpus",)),
    "bench-client": ("the bench tool's command line", ("bench_args", "bench_tool", "driver")),
    "build": ("the daemon's build and how it starts", ("image", "binary", "command",
                                                       "runtime")),
    "listen": ("where the daemon listens, [daemon] and the ports",
               ("config.daemon", "ports", "network")),
    "logging": ("what the daemon logs, [logging] and RUST_LOG", ("config.logging",
                                                               "env.RUST_LOG")),
}

#: Check (``suite/oracle``) or suite -> the subsystems its failures come from, most likely
#: first. What each check exercises: docs/design/oracles.md, docs/design/fault-catalog.md and
#: the oracle modules' docstrings (harness/oracles/).
CHECK_SUBSYSTEMS: dict[str, tuple[str, ...]] = {
    # a proof that does not verify is put together wrongly, mixed with another request's, or
    # proved with other params
    "validity": ("proof-assembly", "client-load", "scheduler", "gpu", "params", "memory",
                 "build"),
    "preflight": ("params", "build", "bench-client", "listen"),
    "preflight/config-keys": ("proof-assembly", "scheduler", "gpu", "params", "memory",
                              "listen", "logging"),
    "preflight/bench-cli": ("bench-client", "build"),
    # the first proof loads the params and warms the prover; the daemon must survive
    "warmup": ("params", "memory", "proof-assembly", "gpu", "build"),
    "warmup/liveness": ("memory", "cpu", "proof-assembly", "build"),
    # requests that meet in the daemon: how many and with which ids, and where they are joined
    "isolation": ("client-load", "scheduler", "proof-assembly", "gpu"),
    "behaviour": ("scheduler", "proof-assembly", "client-load", "memory", "cpu"),
    "behaviour/resources": ("memory", "cpu", "proof-assembly"),
    "timing": ("proof-assembly", "scheduler", "client-load", "gpu", "cpu", "memory"),
}


def subsystems_for(check: str, suite: str) -> Sequence[str]:
    """The subsystems ``check`` exercises (its own entry, else its suite's; none unknown)."""
    return CHECK_SUBSYSTEMS.get(check) or CHECK_SUBSYSTEMS.get(suite, ())
