"""The one serializer: msgspec JSON for every record (summary.json, the xdist hand-over).

Bytes (proofs) are base64 in JSON; enums are their values; structs are objects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import msgspec
from proofdiff.model.errors import ProofdiffError

__all__ = ["SerdeError", "decode", "encode", "read", "to_builtins", "write"]

T = TypeVar("T")

_ENCODER = msgspec.json.Encoder()


class SerdeError(ProofdiffError):
    """A file or text is not a valid encoding of the expected record (names the file)."""


def encode(obj: Any) -> bytes:
    """JSON bytes of a record (or anything msgspec encodes)."""
    return _ENCODER.encode(obj)


def decode(data: bytes | str, type_: type[T], *, where: str = "") -> T:
    """Decode JSON into ``type_``.

    Raises:
        SerdeError: not JSON, or not the shape of ``type_`` (msgspec names the field).
    """
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.DecodeError as exc:
        raise SerdeError(f"{where or 'input'}: {exc}") from None


def to_builtins(obj: Any) -> Any:
    """Plain dicts/lists/str of a record (for templates and evidence)."""
    return msgspec.to_builtins(obj)


def write(path: Path, obj: Any, *, indent: int = 0) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (a temp file renamed into place)."""
    data = encode(obj)
    if indent:
        data = msgspec.json.format(data, indent=indent)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data + b"\n")
    tmp.replace(path)
    return path


def read(path: Path, type_: type[T]) -> T:
    """Read one record of ``type_`` from ``path``.

    Raises:
        SerdeError: the file is missing, not JSON, or not that record.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SerdeError(f"{path}: cannot be read ({exc.strerror})") from None
    return decode(data, type_, where=str(path))
