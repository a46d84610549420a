"""The fleet's SSH host image, ``proofdiff/ssh-host:<key12>``: what a rented GPU host without
Docker offers (Debian's Python 3.11 with proofdiff installed, an SSH server, no Docker), built
here without a registry. The fleet's tests start three of them as "hosts" (docs/design/fleet.md,
"How it is tested"); a user can try ``--hosts`` on one machine the same way.

Three images, each found by its content key before anything is built:

1. ``proofdiff/ssh-rootfs``: ``debootstrap --variant=minbase --include=`` :data:`PACKAGES`
   (:func:`~proofdiff.artifacts.base_image.ensure_base_image`), about a minute cold.
2. ``proofdiff/ssh-host-deps``: a venv at :data:`VENV` with proofdiff's runtime dependencies at
   the lock's versions, installed from wheels that ``pip download`` fetched on this machine (the
   build itself reaches no network); the login user ``prover`` (uid 1000), an SSH host key and
   :data:`SSHD_CONFIG` (an sshd that runs as that user: no root, no PAM). Key: the rootfs id,
   the Dockerfile, the wheels' names.
3. ``proofdiff/ssh-host``: this checkout's proofdiff wheel installed into that venv. Key: the
   source digest (:func:`~proofdiff.fleet.version.proofdiff_version`), so a worker there runs
   exactly the caller's proofdiff, as the fleet demands.

Refprover's binaries, params and workloads are not in the image: the fleet ships them to each
host (:mod:`proofdiff.fleet.shipping`).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import docker.errors

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.base_image import ensure_base_image, host_recipe
from proofdiff.artifacts.build_errors import BuildError
from proofdiff.artifacts.cache_dir import locked, scratch_dir
from proofdiff.artifacts.content_keys import digest
from proofdiff.artifacts.engine import DOCKER_FIX, find_image

__all__ = ["HOST_KEY", "HOST_USER", "PACKAGES", "SSHD_CONFIG", "VENV", "ensure_ssh_host_image"]

#: Debian packages of the host's rootfs beside minbase.
PACKAGES = ("python3", "python3-venv", "openssh-server", "procps")
#: The host's Python environment (its ``bin/python`` is a hosts file's ``python``).
VENV = "/opt/proofdiff"
#: The login user (uid 1000) that sshd runs as, and whose home holds the shipped artifacts.
HOST_USER = "prover"
#: sshd's config in the image; the port is given on the command line (``-p``).
SSHD_CONFIG = "/etc/ssh/proofdiff_sshd_config"
#: sshd's host key (its public half beside it, ``.pub``: what a known_hosts line holds).
HOST_KEY = "/etc/ssh/proofdiff_host_ed25519_key"
#: Where a container mounts the public keys allowed to log in.
AUTHORIZED_KEYS = "/etc/proofdiff/authorized_keys"
#: Deadlines, s: fetching the wheels; one image build.
DOWNLOAD_TIMEOUT_S = 900.0
BUILD_TIMEOUT_S = 900.0

_SSHD_LINES = (
    f"HostKey {HOST_KEY}",
    "PidFile none",
    "UsePAM no",
    "StrictModes no",  # the mounted key file belongs to the caller's uid
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    f"AuthorizedKeysFile {AUTHORIZED_KEYS}",
    "AllowTcpForwarding no",
    "X11Forwarding no",
    "PrintMotd no",
)


def _deps_dockerfile(rootfs_tag: str) -> str:
    sshd = "\\n".join(_SSHD_LINES)
    return "\n".join([
        f"FROM {rootfs_tag}",
        "COPY wheels/ /tmp/wheels/",
        f"RUN python3 -m venv {VENV} && {VENV}/bin/pip install -q --no-index --no-cache-dir "
        "--find-links /tmp/wheels -r /tmp/wheels/requirements.txt && rm -rf /tmp/wheels "
        f"&& useradd -m -u 1000 -s /bin/bash {HOST_USER} && mkdir -p /run/sshd /etc/proofdiff "
        f"&& ssh-keygen -q -t ed25519 -N '' -f {HOST_KEY} "
        f"&& chown {HOST_USER} {HOST_KEY} "
        f"&& printf '{sshd}\\n' > {SSHD_CONFIG}",
        f"WORKDIR /home/{HOST_USER}",
        "USER 1000:1000",
        f'CMD ["/usr/sbin/sshd", "-D", "-e", "-f", "{SSHD_CONFIG}"]',
    ]) + "\n"


#: The extras a fleet worker needs beside proofdiff's own dependencies (a worker joins Dask).
HOST_EXTRAS = ("fleet",)


def _runtime_requirements() -> list[str]:
    """proofdiff's own dependencies and those of :data:`HOST_EXTRAS` (its installed metadata),
    each without its environment marker."""
    out = []
    for req in metadata.requires("proofdiff") or []:
        name, _, marker = req.partition(";")
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", marker)
        if extra is None or extra.group(1) in HOST_EXTRAS:
            out.append(name.strip())
    return out


def _wheels(root: Path, lock: Path, log: build_steps.Log) -> Path:
    """A folder of wheels for :func:`_runtime_requirements` at ``lock``'s versions (cached under
    ``root/host-wheels/<key>``), with its ``requirements.txt``.

    Raises:
        BuildError: pip could not fetch them (PyPI unreachable, a package without a wheel).
    """
    reqs = _runtime_requirements()
    key = digest("host-wheels", lock.read_text(encoding="utf-8"), *reqs)[:16]
    out = root / "host-wheels" / key
    if (out / "requirements.txt").is_file():
        return out
    with locked(root, "host-wheels", "ssh-host", DOWNLOAD_TIMEOUT_S):
        if (out / "requirements.txt").is_file():
            return out
        tmp = scratch_dir(root, "host-wheels-")
        try:
            (tmp / "requirements.txt").write_text("\n".join(reqs) + "\n")
            log(f"  ssh-host: pip download of {len(reqs)} requirement(s) at the lock's "
                "versions")
            build_steps.run("ssh-host", [sys.executable, "-m", "pip", "download", "-q",
                                         "--only-binary=:all:", "-d", str(tmp), "-c",
                                         str(lock), "-r", str(tmp / "requirements.txt")],
                            timeout_s=DOWNLOAD_TIMEOUT_S, log=log,
                            fix="check that PyPI is reachable (pip download works here)",
                            log_path=root / "logs" / "host-wheels.log")
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp.rename(out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already when it was kept
    return out


def _build(client: Any, ctx: Path, tag: str, labels: dict[str, str],
           log: build_steps.Log) -> Any:
    log(f"  ssh-host: building {tag}")
    t0 = time.monotonic()
    try:
        image, _ = client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True, pull=False,
                                       labels=labels, timeout=int(BUILD_TIMEOUT_S))
    except docker.errors.BuildError as exc:
        lines = [str(c.get("stream") or c.get("error") or "").rstrip() for c in exc.build_log]
        raise BuildError("ssh-host", f"docker build of {tag} failed: {exc.msg}\n"
                         + "\n".join(x for x in lines if x)[-3000:],
                         f"read the build output above; {DOCKER_FIX}") from exc
    except (docker.errors.DockerException, OSError) as exc:
        raise BuildError("ssh-host", f"docker build of {tag} failed: {exc}", DOCKER_FIX) from exc
    log(f"  ssh-host: {tag} built in {time.monotonic() - t0:.1f} s")
    return image


def _deps_image(client: Any, root: Path, lock: Path, log: build_steps.Log) -> Any:
    rootfs, _report = ensure_base_image(
        client, root, log=log, repo="proofdiff/ssh-rootfs",
        recipe=dataclasses.replace(host_recipe(), include=PACKAGES))
    rootfs_tag = next(iter(rootfs.tags), rootfs.id)
    wheels = _wheels(root, lock, log)
    body = _deps_dockerfile(rootfs_tag)
    key = digest("ssh-host-deps", rootfs.id, body, *sorted(p.name for p in wheels.iterdir()))
    tag = f"proofdiff/ssh-host-deps:{key[:12]}"
    image = find_image(client, tag)
    if image is not None:
        return image
    with locked(root, "ssh-host-deps", "ssh-host", BUILD_TIMEOUT_S):
        image = find_image(client, tag)
        if image is None:
            ctx = scratch_dir(root, "ssh-host-")
            try:
                shutil.copytree(wheels, ctx / "wheels")
                (ctx / "Dockerfile").write_text(body)
                image = _build(client, ctx, tag, {"proofdiff.content-key": key}, log)
            finally:
                shutil.rmtree(ctx, ignore_errors=True)
    return image


def _source_key(checkout: Path) -> str:
    """Over what the wheel holds: pyproject.toml and every .py/.toml/.json/.mako/.ini file of
    the packages' folders (``harness``, ``fixtures``, ``suites``)."""
    parts: list[str | bytes] = ["ssh-host", (checkout / "pyproject.toml").read_bytes()]
    for folder in ("harness", "fixtures", "suites"):
        for f in sorted((checkout / folder).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".toml", ".json", ".mako", ".ini", ".j2",
                                            ".html", ".css") and "__pycache__" not in f.parts:
                parts += [f.relative_to(checkout).as_posix(), f.read_bytes()]
    return digest(*parts)


def ensure_ssh_host_image(client: Any, root: Path, checkout: Path, *,
                          log: build_steps.Log = lambda _l: None) -> str:
    """The tag of the SSH host image of ``checkout`` (module docstring), built where missing.

    Args:
        client: a docker SDK client. root: the build cache (``~/.cache/proofdiff``).
        checkout: the proofdiff tree whose wheel goes in (its ``requirements.lock`` pins the
            dependencies).

    Raises:
        BuildError: debootstrap, pip download, the wheel or an image build failed (the step
            named, with its log and the fix).
    """
    from proofdiff.fleet.version import proofdiff_version

    version = proofdiff_version()
    tag = f"proofdiff/ssh-host:{_source_key(checkout)[:12]}"
    if find_image(client, tag) is not None:
        return tag
    deps = _deps_image(client, root, checkout / "requirements.lock", log)
    ctx = scratch_dir(root, "ssh-host-pd-")
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                               "--no-build-isolation", "-w", str(ctx), str(checkout)],
                              capture_output=True, text=True, timeout=300)
        wheels = list(ctx.glob("proofdiff-*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            raise BuildError("ssh-host", f"pip wheel {checkout} failed:\n{proc.stderr[-2000:]}",
                             "run `pip wheel --no-deps --no-build-isolation .` in the checkout "
                             "and fix what it says")
        deps_tag = next(iter(deps.tags), deps.id)
        (ctx / "Dockerfile").write_text("\n".join([
            f"FROM {deps_tag}",
            f"COPY {wheels[0].name} /tmp/",
            "USER root",
            f"RUN {VENV}/bin/pip install -q --no-index --no-deps --no-cache-dir "
            f"/tmp/{wheels[0].name} && rm /tmp/{wheels[0].name}",
            "USER 1000:1000",
        ]) + "\n")
        _build(client, ctx, tag, {"proofdiff.version": version}, log)
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    return tag
