"""A real SSH server on 127.0.0.1 for the unit tier: asyncssh's, on its own event loop thread,
with a host key made here, public-key logins for one client key, and every command answered
with this proofdiff's version (what the fleet's host check asks a host's Python for).

It checks what the SSH protocol checks (the host key the client verifies, the client's key);
only the command's answer is canned, since a fleet host's Python is not what is tested here.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

with warnings.catch_warnings():  # cryptography's notice about DSA keys, at import
    warnings.simplefilter("ignore")
    import asyncssh

from proofdiff.fleet.version import proofdiff_version

#: How long the server has to start listening, s.
START_S = 10.0


@dataclass(frozen=True)
class SshServer:
    """A started server: its port, its host key's public line (``ssh-ed25519 AAAA...``) and
    the client's private key file that may log in."""

    port: int
    host_key_line: str
    client_key: Path

    def known_hosts_line(self) -> str:
        """This server's line for a known_hosts file (OpenSSH's ``[HOST]:PORT KEY``)."""
        return f"[127.0.0.1]:{self.port} {self.host_key_line}\n"


def _answer(process: Any) -> None:
    process.stdout.write(proofdiff_version() + "\n")
    process.exit(0)


@contextmanager
def ssh_server(tmp: Path) -> Iterator[SshServer]:
    """Start the server (module docstring) with its keys under ``tmp``; stop it on exit."""
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client = asyncssh.generate_private_key("ssh-ed25519")
    client_file = tmp / "client_ed25519"
    client.write_private_key(str(client_file))
    client_file.chmod(0o600)
    loop = asyncio.new_event_loop()
    started: list[Any] = []
    ready = threading.Event()

    async def serve() -> None:
        server = await asyncssh.create_server(
            asyncssh.SSHServer, "127.0.0.1", 0, server_host_keys=[host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(
                client.export_public_key().decode()),
            process_factory=_answer)
        started.append(server)
        ready.set()

    thread = threading.Thread(target=loop.run_forever, name="ssh-server", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop)
    try:
        assert ready.wait(START_S), f"the SSH server did not listen within {START_S} s"
        port = started[0].sockets[0].getsockname()[1]
        yield SshServer(port=port, client_key=client_file,
                        host_key_line=host_key.export_public_key().decode().strip())
    finally:
        if started:
            loop.call_soon_threadsafe(started[0].close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=START_S)
        loop.close()
