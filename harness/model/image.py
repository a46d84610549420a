"""One identity for whatever runs a daemon, wherever it travels: an image (tag and id), or the
program of a process runtime (its path and the sha256 of its file)."""

from __future__ import annotations

import msgspec

__all__ = ["ImageInfo"]


class ImageInfo(msgspec.Struct, frozen=True, kw_only=True):
    """An image or a program and its digest.

    Attributes:
        tag: the image tag (``proofdiff/refprover:0.1.0-04b17d1183bf``), or a process
            runtime's program path, or ``attached HOST:PORT``.
        digest: the image id (``sha256:...``, the content digest of its config), or
            ``sha256:`` of the program file; '' when unknown (not present, attached).
        repo_digests: registry digests of an image pulled from one (none for a local build).
        detail: where the digest came from (``local build, no registry digest``, ``the
            program file, N bytes``), or why it is unknown.
    """

    tag: str
    digest: str = ""
    repo_digests: tuple[str, ...] = ()
    detail: str = ""
