"""Independent verification: the image's ``verify`` tool in a short-lived container.

The verifier sees only public inputs, the proof and the ``.vk`` files (params mounted read-only
at ``/params``, network disabled), never the daemon's state. Verifiers are pluggable behind
:class:`Verifier`; :class:`DockerVerifier` is the default.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import docker
import docker.errors
import requests

from .launcher import LABEL_IMAGE, LABEL_PROFILE, LABEL_ROLE, LABEL_RUN, hardening, require_image
from .records import JobResult, JobStatus, Verdict
from .workload import Workload, verify_item

__all__ = ["DockerVerifier", "VerifyError", "Verifier", "verify_run_items"]

VERIFY_BIN = "/usr/local/bin/verify"


class VerifyError(RuntimeError):
    """The verifier could not give verdicts (bad exit, unparsable output, deadline)."""


class Verifier(Protocol):
    """Gives a :class:`Verdict` per verifier input item (README 'Verifier input')."""

    def verify(self, items: Sequence[dict[str, Any]]) -> dict[str, Verdict]:
        """Verdicts keyed by item ``id``; every input id appears in the result."""
        ...


def verify_run_items(workload: Workload, results: Sequence[JobResult]) -> list[dict[str, Any]]:
    """Verifier items for every COMPLETED job that returned bytes, id = ``<index>:<name>``
    (unique even when request ids collide); each is checked against its OWN job's inputs."""
    by_name = {j.name: j for j in workload.jobs}
    return [verify_item(workload, by_name[r.name], r.key, r.proof)
            for r in results if r.status is JobStatus.COMPLETED and r.proof]


class DockerVerifier:
    """Runs ``verify --param-cache /params --input /in/batch.json`` in the image.

    Args:
        client: docker client. image: tag with the ``verify`` tool.
        param_cache: host dir with the ``.vk`` files.
        run_id, profile: label values (the profile whose proofs are checked).
        timeout_s: deadline for the container to finish, seconds (default 300).
    """

    def __init__(self, client: docker.DockerClient, image: str, param_cache: Path, *,
                 run_id: str, profile: str = "", timeout_s: float = 300.0) -> None:
        self.client, self.image, self.param_cache = client, image, Path(param_cache)
        self.run_id, self.profile, self.timeout_s = run_id, profile, timeout_s

    def verify(self, items: Sequence[dict[str, Any]]) -> dict[str, Verdict]:
        """See :class:`Verifier`.

        Raises:
            VerifyError: image missing, non-zero exit (with stderr), output not the expected
                JSON, a missing id, or no exit within ``timeout_s``. The container is removed.
        """
        if not items:
            return {}
        try:
            require_image(self.client, self.image)
        except Exception as exc:
            raise VerifyError(str(exc)) from None
        tmp = Path(tempfile.mkdtemp(prefix="proofdiff-verify-"))
        container = None
        try:
            os.chmod(tmp, 0o755)
            batch = tmp / "batch.json"
            batch.write_text(json.dumps({"items": list(items)}), encoding="utf-8")
            os.chmod(batch, 0o644)
            container = self.client.containers.create(
                image=self.image, entrypoint=[VERIFY_BIN],
                command=["--param-cache", "/params", "--input", "/in/batch.json"],
                volumes={str(self.param_cache.resolve()): {"bind": "/params", "mode": "ro"},
                         str(tmp): {"bind": "/in", "mode": "ro"}},
                network_disabled=True, detach=True,
                labels={LABEL_RUN: self.run_id, LABEL_PROFILE: self.profile,
                        LABEL_IMAGE: self.image, LABEL_ROLE: "verifier"},
                **hardening())
            container.start()
            try:
                code = int(container.wait(timeout=self.timeout_s).get("StatusCode", -1))
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                raise VerifyError(f"verify ({len(items)} proofs, profile {self.profile!r}) did "
                                  f"not finish within {self.timeout_s:.0f} s; raise the verifier "
                                  "timeout or check the container log") from None
            out = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            err = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            if code != 0:
                raise VerifyError(f"verify exited with code {code} (2 = unreadable input) for "
                                  f"profile {self.profile!r}: {err.strip()[-2000:]}")
            return self._parse(out, [str(i["id"]) for i in items])
        except docker.errors.DockerException as exc:
            raise VerifyError(f"verify container failed: {exc}") from None
        finally:
            if container is not None:
                try:
                    container.remove(force=True, v=True)
                except docker.errors.NotFound:
                    pass
            shutil.rmtree(tmp, ignore_errors=True)

    def _parse(self, out: str, ids: list[str]) -> dict[str, Verdict]:
        try:
            doc = json.loads(out)
            verdicts = {str(r["id"]): Verdict.from_json(r) for r in doc["results"]}
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise VerifyError(f"verify output is not the expected JSON ({exc}): "
                              f"{out.strip()[:500]!r}") from None
        missing = [i for i in ids if i not in verdicts]
        if missing:
            raise VerifyError(f"verify gave no verdict for {missing}; the tool and the harness "
                              "disagree on the input format (refprover README 'Verifier input')")
        return verdicts
