"""One long-running verifier per run: ``verify --serve`` as a process, asked once per flow.

Starting ``verify`` for every flow would cost a process start (the launcher included) and the
``.vk`` loads each time, for every flow of the run. Here one
``verify --param-cache DIR --serve`` lives as long as the run's runner; each flow's batch is one
stdin line, its verdicts one stdout line (refprover README, 'Verifier input and output').
Verdicts stay per proof and per partition, an unreadable proof gets its own error, exactly as
from ``verify --input``.

A ``verify`` that has no ``--serve`` (an older build given with ``--bin-dir``) exits at once
with a usage error: then every batch goes to :class:`~proofdiff.verify.tool_verifier.ToolVerifier`
as before, one process per flow. A server that dies, misses a deadline or gives an answer that
is not the batch's verdicts (a line it could not read, one that does not parse, verdicts of
other ids) is removed and the batch fails; the next batch starts a fresh one. A server kept
after such an answer could hold the rest of it in its pipe and answer every later batch with
the one before's verdicts, so each batch's item ids carry the batch's own number
(``B<n>:<id>``, never repeated across flows): an answer to another batch is refused, never
read as this one's.
"""

from __future__ import annotations

import os
import selectors
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.model.choices import Role, Runtime
from proofdiff.model.jobs import ProofVerdict
from proofdiff.runtime.process import ProcessHandle
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError, LaunchSpec, Mount
from proofdiff.verify.tool_verifier import ToolVerifier, VerifyError, read_verdicts

__all__ = ["ServedVerifier"]

#: The usage error of a ``verify`` without ``--serve`` (clap's wording).
_NO_SERVE = "--serve"


class ServedVerifier:
    """A :class:`~proofdiff.verify.tool_verifier.Verifier` over one ``verify --serve`` process.

    Args:
        runner: the run's runner (its process backend owns the server: the watchdog and
            ``runner.close()`` remove it). program: the tool's path or bin-dir name.
        param_cache: host dir with the ``.vk`` files. profile: label of the first user.
        timeout_s: deadline of one batch, seconds (default 300).

    Thread-safe: concurrent flows take turns (one batch at a time).
    """

    def __init__(self, runner: Runner, program: str, param_cache: Path, *,
                 profile: str = "", timeout_s: float = 300.0) -> None:
        self.runner, self.program, self.param_cache = runner, program, Path(param_cache)
        self.profile, self.timeout_s = profile, timeout_s
        self._handle: ProcessHandle | None = None
        self._lock = threading.Lock()
        #: set when the tool has no ``--serve``: one process per batch from then on
        self.fallback: ToolVerifier | None = None
        #: servers started (1 in a healthy run)
        self.starts = 0
        #: batches asked of the servers so far: each batch's number tags its item ids
        self.batches = 0

    def verify(self, items: Sequence[dict[str, Any]]) -> dict[str, ProofVerdict]:
        """Verdicts keyed by item ``id`` (see :class:`~proofdiff.verify.tool_verifier.Verifier`);
        no items: ``{}``, nothing started.

        Raises:
            VerifyError: the tool could not be started, died, answered something else than the
                batch's verdicts, or missed the deadline (the server is then removed, and the
                next batch starts a fresh one).
        """
        if not items:
            return {}
        with self._lock:
            if self.fallback is None:
                self.batches += 1
                tag = f"B{self.batches}:"
                sent = [{**item, "id": f"{tag}{item['id']}"} for item in items]
                line = msgspec.json.encode({"items": sent}) + b"\n"
                answer = self._ask(line, len(items))
                if answer is not None:
                    try:
                        got = read_verdicts(answer, sent)
                    except VerifyError as exc:  # not this batch's verdicts: never kept
                        self._drop()
                        raise VerifyError(f"verify --serve of profile {self.profile!r} gave an "
                                          f"answer that is not batch {self.batches}'s verdicts, "
                                          f"so it was stopped: {exc.cause}",
                                          fix=exc.fix) from None
                    return {str(item["id"]): got[f"{tag}{item['id']}"] for item in items}
        assert self.fallback is not None
        return self.fallback.verify(items)

    def close(self) -> None:
        """Remove the server (idempotent; it would end with the runner anyway)."""
        with self._lock:
            self._drop()

    def _start(self) -> ProcessHandle:
        spec = LaunchSpec(image=self.program, role=Role.VERIFIER, profile=self.profile,
                          entrypoint=(self.program,),
                          command=("--param-cache", "/params", "--serve"),
                          mounts=(Mount(self.param_cache, "/params"),), runtime=Runtime.PROCESS)
        try:
            handle = self.runner.processes.start(spec, pipes=True)
        except ContainerError as exc:
            raise VerifyError(exc.cause, fix=exc.fix) from None
        self.starts += 1
        return handle

    def _drop(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _ask(self, line: bytes, n: int) -> bytes | None:
        """One batch line in, one answer line out; ``None`` when the tool has no ``--serve``
        (``self.fallback`` is set)."""
        fresh = self._handle is None
        if self._handle is None:
            self._handle = self._start()
        handle = self._handle
        try:
            answer = _exchange(handle, line, time.monotonic() + self.timeout_s)
        except TimeoutError:
            self._drop()
            raise VerifyError(f"verify --serve ({n} proofs, profile {self.profile!r}) did not "
                              f"answer within {self.timeout_s:.0f} s",
                              fix="raise the verifier timeout (--verify-timeout) or check the "
                                  "machine's load") from None
        if answer is None:  # it ended: no --serve in this build, or it died
            code = handle.proc.wait(timeout=10)
            log = handle.logs(40).strip()
            self._drop()
            if fresh and _NO_SERVE in log:
                self.fallback = ToolVerifier(self.runner, self.program, self.param_cache,
                                             profile=self.profile, timeout_s=self.timeout_s,
                                             runtime=Runtime.PROCESS)
                return None
            raise VerifyError(f"verify --serve exited with code {code} for profile "
                              f"{self.profile!r}: {log[-2000:]}")
        if answer.startswith(b'{"error"'):  # the tool could not read the batch
            self._drop()  # what else it says is no later batch's answer
            raise VerifyError(f"verify could not read the batch of profile {self.profile!r}: "
                              f"{answer.decode('utf-8', 'replace')[:2000]}")
        return answer


def _exchange(handle: ProcessHandle, line: bytes, deadline: float) -> bytes | None:
    """Write ``line`` to the process's stdin and read one line from its stdout, both by
    ``deadline`` (``time.monotonic()``); ``None`` when it closed its end first.

    Raises:
        TimeoutError: the deadline passed.
    """
    stdin, stdout = handle.proc.stdin, handle.proc.stdout
    assert stdin is not None and stdout is not None
    win, rout = stdin.fileno(), stdout.fileno()
    os.set_blocking(win, False)
    os.set_blocking(rout, False)
    got, view = bytearray(), memoryview(line)
    with selectors.DefaultSelector() as sel:
        sel.register(win, selectors.EVENT_WRITE)
        sel.register(rout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            for key, _ in sel.select(left):
                if key.fd == win:
                    try:
                        view = view[os.write(win, view):]
                    except BrokenPipeError:
                        return None
                    if not view:
                        sel.unregister(win)
                    continue
                chunk = os.read(rout, 1 << 20)
                if not chunk:
                    return None
                got += chunk
                if got.endswith(b"\n"):
                    return bytes(got)
