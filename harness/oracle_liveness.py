"""Liveness: the daemon container is still up after a run, or its death is explained.

A daemon that crashes mid-run (a panic, the kernel's OOM killer under ``mem_limit``) shows up
to the client only as transport errors (``UNAVAILABLE``). This oracle reads the container's
``docker inspect`` ``State`` (status, exit code, OOMKilled, error) and names the jobs that were
lost with it, so the report says *why* instead of a wall of connection errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .records import JobStatus, RunResult

__all__ = ["LivenessOutcome", "liveness"]


@dataclass(frozen=True)
class LivenessOutcome:
    """``alive`` (state running), the ``State`` fields that matter, the lost job ids and the
    explanation (empty when alive)."""

    profile: str
    alive: bool
    state: dict[str, Any]
    lost: tuple[str, ...]
    message: str

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"profile": self.profile, "alive": self.alive, "state": self.state,
                "lost": list(self.lost), "message": self.message}


def liveness(run: RunResult, state: Mapping[str, Any] | None = None,
             log_tail: str = "") -> LivenessOutcome:
    """Judge the daemon of ``run``: ``state`` is a fresh ``docker inspect`` ``State`` (default:
    the snapshot the run took at its end); an empty state with no container means the container
    is gone entirely."""
    st = dict(state if state is not None else (run.inspect.get("State") or {}))
    keep = {k: st.get(k) for k in ("Status", "ExitCode", "OOMKilled", "Error", "StartedAt",
                                   "FinishedAt") if k in st}
    lost = tuple(f"{j.name} (id={j.request_id}, {j.status.value})" for j in run.jobs
                 if j.status in (JobStatus.ERROR, JobStatus.LOST))
    status = st.get("Status")
    if status in ("running", None) and (st or not run.container_id):
        return LivenessOutcome(run.profile, True, keep, lost, "")
    code, oom = st.get("ExitCode"), bool(st.get("OOMKilled"))
    if not st:
        why = f"daemon container {run.container_id} is gone (removed while the run was going on)"
    else:
        why = (f"daemon container {run.container_id} of profile {run.profile!r} is {status} "
               f"with exit code {code}" + (" and OOMKilled=true" if oom else "")
               + (f" ({st.get('Error')})" if st.get("Error") else ""))
    fix = ("the kernel killed it for memory: raise the profile's mem_limit (a 2 KiB WindowPoSt "
           "proof needs about 2 GB on refprover)" if oom else
           "read the log tail below for a panic or fatal error" if code not in (0, None) else
           "it stopped cleanly: something sent it SIGTERM or the entrypoint returned")
    msg = (f"{why}: {fix}" + (f"; jobs lost with it: {', '.join(lost)}" if lost else "")
           + (f"\n--- last log lines ---\n{log_tail.rstrip()[-3000:]}" if log_tail else ""))
    return LivenessOutcome(run.profile, False, keep, lost, msg)
