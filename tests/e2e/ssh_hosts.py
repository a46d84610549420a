"""Three "GPU hosts" on this machine, as the fleet meets them when rented: containers of the SSH
host image (:mod:`proofdiff.artifacts.ssh_host_image`: Debian's Python with this checkout's
proofdiff, an sshd, no Docker, nothing of refprover), each reached over SSH only.

Each container shares this machine's network namespace (``network_mode="host"``) with its own
sshd port on 127.0.0.1, so the Dask scheduler and workers started in them over SSH, and the
daemons those run as processes, listen on the loopback alone. They run as uid 1000 with every
capability dropped, are labelled with a watchdog's owner (removed if pytest dies), and are
removed after the module.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker

from proofdiff.artifacts.ssh_host_image import (AUTHORIZED_KEYS, HOST_KEY, SSHD_CONFIG, VENV,
                                                ensure_ssh_host_image)
from proofdiff.runtime.ports import free_port
from proofdiff.runtime.spec import LABEL_OWNER, LABEL_ROLE, LABEL_RUN
from proofdiff.runtime.watchdog import Watchdog

from tests.e2e.conftest import REPO, unique

#: How long a host's sshd has to greet, s.
SSH_READY_S = 30.0


@dataclass(frozen=True)
class SshHosts:
    """Started hosts: their names, sshd ports, containers, the hosts file and the run label."""

    names: tuple[str, ...]
    ports: tuple[int, ...]
    containers: tuple[str, ...]
    hosts_file: Path
    run_label: str

    def exec(self, name: str, cmd: str) -> str:
        """``cmd`` in host ``name``'s container as its login user (a look from outside, as
        an operator's console: never what a unit does)."""
        c = docker.from_env().containers.get(self.containers[self.names.index(name)])
        code, out = c.exec_run(["bash", "-lc", cmd], user="1000:1000")
        assert code == 0, (cmd, out.decode(errors="replace"))
        return str(out.decode(errors="replace"))


def _host_key(client: docker.DockerClient, container: str) -> str:
    """The public line of the host key sshd serves in ``container`` (``ssh-ed25519 AAAA...``)."""
    code, out = client.containers.get(container).exec_run(
        ["cat", HOST_KEY + ".pub"], user="1000:1000")
    assert code == 0, out.decode(errors="replace")
    return " ".join(out.decode().split()[:2])


def _greets(port: int, deadline: float) -> None:
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                if s.recv(64).startswith(b"SSH-2.0"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"sshd on 127.0.0.1:{port} did not greet in {SSH_READY_S} s")
        time.sleep(0.2)


def start_ssh_hosts(tmp: Path, names: tuple[str, ...] = ("host-a", "host-b", "host-c"),
                    *, gpu_uuids: dict[str, list[str]] | None = None,
                    cpus: float | None = None) -> Iterator[SshHosts]:
    """Start one container per name, write the hosts file (the scheduler on the first host),
    yield, then remove them (a generator for a fixture). ``cpus``: each host's CPU quota in
    cores (CFS, Docker's ``--cpus``), so that hosts sharing this machine each get a share of
    their own; None: no quota, every host competes for all of them."""
    client = docker.from_env()
    tag = ensure_ssh_host_image(client, Path.home() / ".cache" / "proofdiff", REPO)
    key = tmp / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    key.with_suffix(".pub").chmod(0o644)
    wd = Watchdog()
    wd.start()
    rid = unique("ssh-hosts")
    ports = tuple(free_port() for _ in names)
    started: list[str] = []
    try:
        for name, port in zip(names, ports, strict=True):
            c = client.containers.run(
                tag, ["/usr/sbin/sshd", "-D", "-e", "-f", SSHD_CONFIG, "-p", str(port),
                      "-o", "ListenAddress=127.0.0.1"],
                name=f"proofdiff-{rid}-{name}", detach=True, network_mode="host",
                user="1000:1000", cap_drop=["ALL"], security_opt=["no-new-privileges"],
                labels={LABEL_RUN: rid, LABEL_OWNER: wd.owner, LABEL_ROLE: "ssh-host"},
                nano_cpus=int(cpus * 1e9) if cpus else None,
                volumes={str(key.with_suffix(".pub")): {"bind": AUTHORIZED_KEYS, "mode": "ro"}})
            started.append(c.id)
        deadline = time.monotonic() + SSH_READY_S
        for port in ports:
            _greets(port, deadline)
        # every host key checked, as on a real fleet: each host's public key read from the
        # host itself (out of band, as an operator copies it from a console), not scanned
        known = tmp / "known_hosts"
        known.write_text("".join(f"[127.0.0.1]:{p} {_host_key(client, cid)}\n"
                                 for p, cid in zip(ports, started, strict=True)))
        lines = [f'scheduler = "prover@127.0.0.1:{ports[0]}"',
                 f"scheduler_port = {free_port()}", f'known_hosts = "{known}"']
        for name, port in zip(names, ports, strict=True):
            uuids = (gpu_uuids or {}).get(name)
            lines += ["", "[[host]]", f'name = "{name}"', f'ssh = "prover@127.0.0.1:{port}"',
                      f'python = "{VENV}/bin/python"', 'runtime = "process"',
                      f'ssh_key = "{key}"', "slots = 2" if uuids else "slots = 1"]
            if uuids:
                lines.append("gpu_uuids = [" + ", ".join(f'"{u}"' for u in uuids) + "]")
        hosts_file = tmp / "hosts.toml"
        hosts_file.write_text("\n".join(lines) + "\n")
        yield SshHosts(names=names, ports=ports, containers=tuple(started),
                       hosts_file=hosts_file, run_label=rid)
    finally:
        for cid in started:
            try:
                client.containers.get(cid).remove(force=True)
            except docker.errors.NotFound:
                pass
        wd.close()
