"""Docker engine access for the build: connect with a clear error, look images up."""

from __future__ import annotations

from typing import Any

import docker
import docker.errors

from proofdiff.artifacts.build_errors import BuildError

#: Client timeout in seconds for one engine API call (an import or a build of ~100 MB).
API_TIMEOUT_S = 600

DOCKER_FIX = (
    "is the Docker engine running and reachable? `docker info` must work for this user "
    "(start it with `sudo systemctl start docker`; set DOCKER_HOST for a remote engine)"
)


def connect(timeout_s: int = API_TIMEOUT_S) -> Any:
    """Return a ``docker.DockerClient`` from the environment that answered a ping.

    Raises:
        BuildError: the engine cannot be reached.
    """
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BuildError("docker", f"cannot reach the Docker engine: {exc}", DOCKER_FIX) from exc
    return client


def find_image(client: Any, ref: str) -> Any | None:
    """Return the local image ``ref`` (tag or id), or None when the engine does not have it.

    Raises:
        BuildError: the engine failed to answer.
    """
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:
        raise BuildError("docker", f"looking up image {ref!r} failed: {exc}", DOCKER_FIX) from exc
