"""What a container would see, given to a plain process: container paths and published ports
rewritten to their host counterparts.

A :class:`~proofdiff.runtime.spec.LaunchSpec` names container paths (mount targets, files it
is given, ``/out``) and container ports (``0.0.0.0:9820``). A process runtime has no mount or
port namespace, so :class:`HostView` rewrites every occurrence in the command line, the env
values and the text files it writes:

* a path is rewritten when it is a mapped container path or lies under one, and stands as a
  whole path (``/data/zk/params`` and ``/data/zk/params/x.vk``, not ``/data/zk/params2``);
  the longest mapped prefix wins (a base64 run such as ``x+/params`` is not a path);
* a listen address ``HOST:PORT`` (``0.0.0.0``, ``127.0.0.1``, ``[::]``, ``localhost``) whose
  PORT is a published container port becomes ``127.0.0.1:<free host port>``, as docker's
  ``-p 127.0.0.1::PORT`` would publish it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["HostView"]

_ADDR = re.compile(r"(?<![\w.\[\]:-])(0\.0\.0\.0|127\.0\.0\.1|\[::\]|\[::1\]|localhost):(\d{1,5})"
                   r"(?!\d)")


@dataclass(frozen=True)
class HostView:
    """Container path -> host path, and container port -> host port.

    Attributes:
        paths: container path (absolute, no trailing slash) -> host path.
        ports: container port -> host port on 127.0.0.1.
    """

    paths: Mapping[str, str] = field(default_factory=dict)
    ports: Mapping[int, int] = field(default_factory=dict)

    def _path_pattern(self) -> re.Pattern[str] | None:
        if not self.paths:
            return None
        alts = "|".join(re.escape(p.rstrip("/")) for p in sorted(self.paths, key=len,
                                                                   reverse=True))
        return re.compile(rf"(?<![\w./+-])({alts})(?=$|[/\s\"',;:=)\]}}])")

    def text(self, s: str) -> str:
        """``s`` with every mapped container path and published listen address rewritten."""
        pattern = self._path_pattern()
        if pattern is not None:
            s = pattern.sub(lambda m: self.paths[m.group(1)], s)
        if self.ports:
            s = _ADDR.sub(self._port, s)
        return s

    def _port(self, m: re.Match[str]) -> str:
        port = int(m.group(2))
        return f"127.0.0.1:{self.ports[port]}" if port in self.ports else m.group(0)

    def argv(self, args: tuple[str, ...]) -> list[str]:
        """Each argument rewritten (:meth:`text`)."""
        return [self.text(a) for a in args]

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Each value rewritten (:meth:`text`); names stay."""
        return {k: self.text(v) for k, v in env.items()}

    def data(self, raw: bytes) -> bytes:
        """A file's bytes: UTF-8 text is rewritten, anything else is left alone."""
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
        return self.text(decoded).encode("utf-8")
