"""Step ``rootfs``: the base image ``proofdiff/base:<suite>-<key12>``, made without a registry.

``debootstrap --variant=minbase`` writes a Debian rootfs into a scratch directory, which is
trimmed (blank /etc/resolv.conf and /etc/hostname, no apt lists or caches) and streamed as a tar
(``tar --numeric-owner``) into the engine's image import (``POST /images/create?fromSrc=-``).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import docker.errors

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.cache_dir import locked, scratch_dir
from proofdiff.artifacts.engine import DOCKER_FIX, find_image
from proofdiff.artifacts.build_errors import BuildError, StepReport
from proofdiff.artifacts.content_keys import RootfsRecipe, rootfs_key

BASE_REPO = "proofdiff/base"
#: Deadline of debootstrap in seconds (about a minute with a reachable mirror).
DEBOOTSTRAP_TIMEOUT_S = 1200.0
#: Deadline of tar + import in seconds.
IMPORT_TIMEOUT_S = 600.0
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def host_recipe() -> RootfsRecipe:
    """The default recipe (bookworm, minbase, deb.debian.org) for this host's Debian arch."""
    arch = build_steps.capture(["dpkg", "--print-architecture"])
    if not arch:
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return RootfsRecipe(arch=arch)


def base_tag(recipe: RootfsRecipe, repo: str = BASE_REPO) -> str:
    """The base image tag for ``recipe``: ``<repo>:<suite>-<first 12 hex of its key>``."""
    return f"{repo}:{recipe.suite}-{rootfs_key(recipe)[:12]}"


def ensure_base_image(
    client: Any, root: Path, *, log: build_steps.Log, recipe: RootfsRecipe | None = None,
    repo: str = BASE_REPO,
) -> tuple[Any, StepReport]:
    """Return the base image (a docker SDK Image) for ``recipe`` (tagged in ``repo``), building
    it if the tag is missing.

    Raises:
        BuildError: not root (debootstrap needs root), debootstrap missing and not installable,
            debootstrap or the import failed or ran past its deadline (DEBOOTSTRAP_TIMEOUT_S,
            IMPORT_TIMEOUT_S seconds).
    """
    start = time.monotonic()
    recipe = recipe or host_recipe()
    tag = base_tag(recipe, repo)
    image = find_image(client, tag)
    if image is None:
        with locked(root, "rootfs", "rootfs", DEBOOTSTRAP_TIMEOUT_S + IMPORT_TIMEOUT_S):
            image = find_image(client, tag)
            if image is None:
                image = _build(client, root, recipe, tag, log)
                size = image.attrs.get("Size", 0)
                return image, StepReport(
                    "rootfs", "built", time.monotonic() - start, f"{tag} ({size / 1e6:.0f} MB)"
                )
    return image, StepReport("rootfs", "reused", time.monotonic() - start, tag)


def _build(client: Any, root: Path, recipe: RootfsRecipe, tag: str, log: build_steps.Log) -> Any:
    if os.geteuid() != 0:
        raise BuildError(
            "rootfs",
            f"building {tag} needs root (debootstrap creates device nodes and root-owned files)",
            "run the build once as root: `sudo -E proofdiff build`",
        )
    logs = root / "logs"
    debootstrap = build_steps.ensure_apt_tool(
        "rootfs", "debootstrap", "debootstrap", log=log, log_dir=logs
    )
    tmp = scratch_dir(root, "rootfs-")
    try:
        rootdir = tmp / "rootfs"
        argv = [
            debootstrap,
            f"--variant={recipe.variant}",
            f"--arch={recipe.arch}",
            *([f"--include={','.join(recipe.include)}"] if recipe.include else []),
            recipe.suite,
            str(rootdir),
            recipe.mirror,
        ]
        log(f"  rootfs: {' '.join(argv)}")
        elapsed = build_steps.run(
            "rootfs",
            argv,
            timeout_s=DEBOOTSTRAP_TIMEOUT_S,
            log=log,
            fix=f"check that {recipe.mirror} is reachable (`apt-get update` works) and read "
            f"{logs / 'debootstrap.log'} and {rootdir / 'debootstrap' / 'debootstrap.log'}",
            log_path=logs / "debootstrap.log",
        )
        log(f"  rootfs: debootstrap took {elapsed:.1f} s")
        _trim(rootdir)
        return _import(client, rootdir, tag, recipe, log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _trim(rootdir: Path) -> None:
    """Blank host-specific files and drop apt lists and caches."""
    for rel in ("etc/resolv.conf", "etc/hostname"):
        path = rootdir / rel
        if path.is_symlink():
            path.unlink()
        path.write_text("")
    for pattern in (
        "var/lib/apt/lists/*",
        "var/cache/apt/*.bin",
        "var/cache/apt/archives/*.deb",
        "var/log/*.log",
        "var/cache/debconf/*-old",
    ):
        for path in rootdir.glob(pattern):
            if path.is_file() or path.is_symlink():
                path.unlink()


def _import(client: Any, rootdir: Path, tag: str, recipe: RootfsRecipe, log: build_steps.Log) -> Any:
    """Stream ``tar --numeric-owner -C rootdir -c .`` into the engine's import as ``tag``."""
    repo, _, version = tag.partition(":")
    changes = [
        f"ENV PATH={_PATH}",
        'CMD ["/bin/bash"]',
        f'LABEL proofdiff.rootfs-key="{rootfs_key(recipe)}" '
        f'proofdiff.rootfs-recipe="debootstrap --variant={recipe.variant} {recipe.suite} '
        f'{recipe.mirror}"',
    ]
    start = time.monotonic()
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(rootdir), "-c", "."],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None
    try:
        answer = client.api.import_image_from_stream(
            tar.stdout, repository=repo, tag=version, changes=changes
        )
        tar_rc = tar.wait(timeout=IMPORT_TIMEOUT_S)
    except (docker.errors.DockerException, subprocess.TimeoutExpired, OSError) as exc:
        tar.kill()
        tar.wait()
        raise BuildError(
            "rootfs", f"importing {rootdir} as {tag} failed: {exc}", DOCKER_FIX
        ) from exc
    finally:
        tar.stdout.close()
    stderr = tar.stderr.read().decode("utf-8", "replace") if tar.stderr else ""
    if tar_rc != 0:
        raise BuildError(
            "rootfs",
            f"`tar -c` of {rootdir} exited {tar_rc}: {stderr[-2000:]}",
            "check free disk space under the cache root (`df -h`)",
        )
    image = find_image(client, tag)
    if image is None:
        raise BuildError(
            "rootfs",
            f"the engine answered the import of {tag} with {answer!r} but has no such image",
            DOCKER_FIX,
        )
    log(f"  rootfs: import took {time.monotonic() - start:.1f} s -> {tag} ({image.short_id})")
    return image
