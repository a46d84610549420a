"""Step ``image``: ``proofdiff/refprover:<version>-<key12>`` = base image + host-built binaries.

Built with the engine's classic builder through the API (the docker SDK's ``images.build`` does
not ask for BuildKit), from a generated Dockerfile whose ``FROM`` is the local base image, so
nothing is pulled. No ``# syntax=`` line, no ``RUN``: only COPY and metadata. Only the content tag
is set: a build never re-points a shared tag such as ``:latest``, so a build of a candidate
tree cannot change what another run means by a name.
"""

from __future__ import annotations

import shutil
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import docker.errors

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.cache_dir import locked, scratch_dir
from proofdiff.artifacts.engine import DOCKER_FIX, find_image
from proofdiff.artifacts.build_errors import BuildError, StepReport
from proofdiff.artifacts.content_keys import image_key
from proofdiff.runtime.hardening import LABEL_READ_ONLY_ROOT

IMAGE_REPO = "proofdiff/refprover"
#: gRPC port of the daemon (cuzk deployments: 0.0.0.0:9820).
GRPC_PORT = 9820
#: Deadline of the image build in seconds (it only copies files).
BUILD_TIMEOUT_S = 600.0


def crate_version(crate_dir: Path) -> str:
    """The ``[package] version`` of the crate's Cargo.toml.

    Raises:
        BuildError: Cargo.toml is missing or has no version.
    """
    try:
        version = tomllib.loads((crate_dir / "Cargo.toml").read_text())["package"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise BuildError(
            "image",
            f"cannot read [package] version from {crate_dir / 'Cargo.toml'}: {exc!r}",
            "fix Cargo.toml",
        ) from exc
    return str(version)


def dockerfile_body(base_tag: str, binaries: Mapping[str, Path]) -> str:
    """The Dockerfile without labels (its text is part of the content key)."""
    entry = "/usr/local/bin/refprover" if "refprover" in binaries else ""
    lines = [
        f"FROM {base_tag}",
        "COPY bin/ /usr/local/bin/",
        # /data/zk: the daemon's default config dir; params are mounted read-only at
        # /data/zk/params. /var/tmp is already 1777 in the debootstrap rootfs.
        "COPY --chown=65534:65534 data/ /data/",
        "WORKDIR /data/zk",
        f"EXPOSE {GRPC_PORT}",
        "USER 65534:65534",
        # its containers run with a read-only root: refprover writes only temporary files
        # (proofdiff.runtime.hardening gives these paths a tmpfs each)
        f'LABEL {LABEL_READ_ONLY_ROOT}="/tmp /var/tmp"',
    ]
    if entry:
        lines.append(f'ENTRYPOINT ["{entry}"]')
    return "\n".join(lines) + "\n"


def ensure_refprover_image(
    client: Any,
    root: Path,
    base: Any,
    binaries: Mapping[str, Path],
    *,
    log: build_steps.Log,
    crate_dir: Path,
    repo: str = IMAGE_REPO,
) -> tuple[str, Any, StepReport]:
    """Return ``(tag, image, report)`` for the image holding ``binaries`` on top of ``base``.

    The tag is ``<repo>:<crate version>-<key12>``; the key covers the base image id, the
    Dockerfile and the binaries' bytes (keys.image_key). An existing tag is reused.

    Raises:
        BuildError: the engine's build failed, or ran past BUILD_TIMEOUT_S seconds.
    """
    start = time.monotonic()
    base_tag = next((t for t in base.tags), base.id)
    body = dockerfile_body(base_tag, binaries)
    key = image_key(base.id, body, binaries)
    version = f"{crate_version(crate_dir)}-{key[:12]}"
    tag = f"{repo}:{version}"
    image = find_image(client, tag)
    action: Literal["built", "reused"] = "reused"
    if image is None:
        with locked(root, "image", "image", BUILD_TIMEOUT_S):
            image = find_image(client, tag)
            if image is None:
                labels = {
                    "org.opencontainers.image.title": repo.rsplit("/", 1)[-1],
                    "org.opencontainers.image.version": version,
                    "proofdiff.content-key": key,
                    "proofdiff.base-image": base_tag,
                }
                label_line = "LABEL " + " ".join(f'{k}="{v}"' for k, v in labels.items())
                image = _build(client, root, body + label_line + "\n", binaries, tag, log)
                action = "built"
    size = image.attrs.get("Size", 0)
    return (
        tag,
        image,
        StepReport(
            "image", action, time.monotonic() - start, f"{tag} ({size / 1e6:.0f} MB)"
        ),
    )


def _build(
    client: Any, root: Path, dockerfile: str, binaries: Mapping[str, Path], tag: str, log: build_steps.Log
) -> Any:
    ctx = scratch_dir(root, "image-")
    try:
        (ctx / "bin").mkdir()
        (ctx / "data" / "zk").mkdir(parents=True)
        for name, path in binaries.items():
            shutil.copy2(path, ctx / "bin" / name)
            (ctx / "bin" / name).chmod(0o755)
        (ctx / "Dockerfile").write_text(dockerfile)
        log(f"  image: building {tag} (classic builder, FROM a local image)")
        t0 = time.monotonic()
        try:
            image, _ = client.images.build(
                path=str(ctx),
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                timeout=int(BUILD_TIMEOUT_S),
            )
        except docker.errors.BuildError as exc:
            lines = [str(c.get("stream") or c.get("error") or "").rstrip() for c in exc.build_log]
            output = "\n".join(line for line in lines if line)[-3000:]
            raise BuildError(
                "image",
                f"docker build of {tag} failed: {exc.msg}\n{output}",
                f"read the Dockerfile in the error above; {DOCKER_FIX}",
            ) from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise BuildError("image", f"docker build of {tag} failed: {exc}", DOCKER_FIX) from exc
        log(f"  image: build took {time.monotonic() - t0:.1f} s")
        return image
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
