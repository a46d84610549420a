"""Each fleet run's own TLS credentials for its Dask cluster: every connection between the
caller, the scheduler and the workers is mutual TLS with a certificate made for this run alone,
so nobody who merely reaches a port can submit a task or forge a unit's result.

:func:`new_credentials` makes a key (ECDSA P-256) and a self-signed certificate
(:data:`VALID_S`) with ``cryptography``, which distributed depends on. The certificate is its own
CA: distributed's ``Security`` trusts the CA file's certificates and requires the peer's
(``ssl.CERT_REQUIRED``; it checks no host name: Dask's own design for a cluster's private CA),
so only a holder of this run's key is let in, in any role.

* The caller holds them in memory (:meth:`RunCredentials.security`).
* Each host of a ``--hosts`` run gets them over SSH (:func:`install_credentials`): a folder of
  its own under the login's home, :data:`TLS_DIR` ``/<token>`` (mode 0700, files 0600), read by
  the scheduler and workers that SSH starts there (their Dask configuration names the files by
  paths relative to that home: :meth:`RunCredentials.remote_config`). Nothing of the key is
  ever on a command line or in an environment variable, which other users of a host can read.
* The folder is removed from every host when the run ends (:func:`remove_credentials`); a host
  that keeps a copy (a run killed with SIGKILL) holds a key that no later run trusts.
"""

from __future__ import annotations

import asyncio
import datetime
import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from proofdiff.fleet.hosts import Host

__all__ = ["TLS_DIR", "VALID_S", "RunCredentials", "install_credentials", "install_script",
           "new_credentials", "remove_credentials"]

#: Where a host keeps a run's credentials, relative to the SSH login's home.
TLS_DIR = ".cache/proofdiff/tls"
#: How long a run's certificate is valid, s: longer than any run (a night with its
#: bisections), short enough that a copy left behind soon opens nothing.
VALID_S = 7 * 24 * 3600.0
#: Seconds of clock skew between hosts that the certificate's start tolerates.
SKEW_S = 600.0


@dataclass(frozen=True)
class RunCredentials:
    """A run's certificate and key (PEM text) and the token that names its folder on hosts."""

    cert_pem: str
    key_pem: str
    token: str

    @property
    def remote_dir(self) -> str:
        """The run's folder on a host, relative to the login's home."""
        return f"{TLS_DIR}/{self.token}"

    def security(self) -> Any:
        """A ``distributed.Security`` for every role, from memory, TLS required."""
        from distributed.security import Security

        new_security: Any = Security  # distributed is only partly typed
        return new_security(require_encryption=True, tls_ca_file=self.cert_pem,
                            tls_client_cert=self.cert_pem, tls_client_key=self.key_pem,
                            tls_scheduler_cert=self.cert_pem, tls_scheduler_key=self.key_pem,
                            tls_worker_cert=self.cert_pem, tls_worker_key=self.key_pem)

    def remote_config(self) -> dict[str, Any]:
        """The Dask configuration that the processes started over SSH read (distributed's
        SSHCluster carries the caller's configuration to them): TLS required, the run's files
        by their path on the host (relative to the login's home, where SSH starts them), and
        no HTTP routes on the scheduler or the workers (no dashboard, no metrics, no proxy:
        nothing a host needs, and none of it authenticated)."""
        ca, both = f"{self.remote_dir}/ca.pem", f"{self.remote_dir}/run.pem"
        roles = ("scheduler", "worker", "client")
        return {"distributed.comm.require-encryption": True,
                "distributed.comm.tls.ca-file": ca,
                # the key is in the certificate's file: a key file of the caller's own
                # configuration (for --cluster) must not be read in its place
                **{f"distributed.comm.tls.{r}.cert": both for r in roles},
                **{f"distributed.comm.tls.{r}.key": None for r in roles},
                "distributed.scheduler.http.routes": [],
                "distributed.worker.http.routes": []}


def new_credentials(valid_s: float = VALID_S) -> RunCredentials:
    """A fresh key and self-signed certificate (module docstring), valid from
    :data:`SKEW_S` ago for ``valid_s`` seconds."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    token = secrets.token_hex(8)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"proofdiff-fleet-{token}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(seconds=SKEW_S))
            .not_valid_after(now + datetime.timedelta(seconds=valid_s))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256()))
    return RunCredentials(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM).decode(),
        key_pem=key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()).decode(),
        token=token)


def _distinct(hosts: Sequence[Host]) -> list[Host]:
    """One host per SSH login (the scheduler's host is often a worker's too)."""
    return list({h.ssh: h for h in hosts}.values())


def install_script(creds: RunCredentials) -> str:
    """The shell line a host runs, in the login's home, to keep ``creds`` (their PEM text,
    certificate then key, on its standard input): ``run.pem`` (both) and ``ca.pem`` (the
    certificate), mode 0600 in a folder of mode 0700; it prints ``written``."""
    folder = shlex.quote(creds.remote_dir)
    return (f"umask 077 && mkdir -p {folder} && cat > {folder}/run.pem && "
            f"sed -n '/BEGIN CERTIFICATE/,/END CERTIFICATE/p' {folder}/run.pem "
            f"> {folder}/ca.pem && echo written")


def install_credentials(hosts: Sequence[Host], creds: RunCredentials, *,
                        timeout_s: float) -> None:
    """Write ``creds`` to every host at once over SSH (module docstring): ``ca.pem`` (the
    certificate) and ``run.pem`` (certificate and key), sent on the SSH channel's input.

    Raises:
        proofdiff.fleet.executor.FleetError: a host did not take them within ``timeout_s``
            (each such host named with the cause).
    """
    from proofdiff.fleet.executor import FleetError
    from proofdiff.fleet.ssh import ssh_run

    script, pem = install_script(creds), creds.cert_pem + creds.key_pem

    async def one(host: Host) -> str:
        try:
            got = await ssh_run(host, script, timeout_s, stdin=pem)
        except Exception as exc:  # noqa: BLE001 - any failure: that host is named below
            return f"{host.name}: {type(exc).__name__}: {exc}"
        return "" if got.strip() == "written" else f"{host.name}: answered {got.strip()!r}"

    async def every() -> list[str]:
        return list(await asyncio.gather(*(one(h) for h in _distinct(hosts))))

    bad = [b for b in asyncio.run(every()) if b]
    if bad:
        raise FleetError(f"the run's TLS credentials could not be written to {len(bad)} "
                         f"host(s): " + "; ".join(bad),
                         fix=f"check that each host's login can write ~/{TLS_DIR} (its disk, "
                             "its home's permissions), then run again")


def remove_credentials(hosts: Sequence[Host], creds: RunCredentials, *, timeout_s: float = 30.0,
                       log: Callable[[str], None] = lambda _l: None) -> dict[str, str]:
    """Remove the run's folder from every host at once; never raises (a host not reached is
    logged: its copy opens nothing once the run's cluster is gone).

    Returns:
        host name -> '' (removed) or why it was not reached.
    """
    from proofdiff.fleet.ssh import ssh_run

    script = (f"rm -rf {shlex.quote(creds.remote_dir)} && "
              f"{{ rmdir {shlex.quote(TLS_DIR)} 2>/dev/null; echo removed; }}")

    async def one(host: Host) -> tuple[str, str]:
        try:
            got = await ssh_run(host, script, timeout_s)
        except Exception as exc:  # noqa: BLE001 - a host gone is reported, the others done
            return host.name, f"not reached ({type(exc).__name__}: {exc})"
        return host.name, "" if got.strip() == "removed" else f"answered {got.strip()!r}"

    async def every() -> list[tuple[str, str]]:
        return list(await asyncio.gather(*(one(h) for h in _distinct(hosts))))

    got = dict(asyncio.run(every()))
    for name, why in got.items():
        if why:
            log(f"host {name}: the run's TLS credentials in ~/{creds.remote_dir} were not "
                f"removed: {why}")
    return got
