"""The effective difference between two profiles, as data (computed in :mod:`proofdiff.core.profile_delta`)."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["ABSENT", "ConfigDelta", "DeltaItem", "show"]

#: The value of a key one side does not have.
ABSENT = "<absent>"


def show(value: Any) -> str:
    """A value as a delta line shows it: its repr, or ``<absent>`` bare."""
    return ABSENT if value == ABSENT else repr(value)


class DeltaItem(msgspec.Struct, frozen=True, kw_only=True):
    """One difference: a dotted ``path`` (``config.pipeline.enabled``) and both sides' values
    (:data:`ABSENT` when a side lacks the key)."""

    path: str
    left: Any
    right: Any

    def render(self) -> str:
        """``path: left -> right`` (Python reprs; ``<absent>`` bare)."""
        return f"{self.path}: {show(self.left)} -> {show(self.right)}"

    def under(self, prefix: str) -> bool:
        """The path is ``prefix`` or lies below it (``config.pipeline`` covers
        ``config.pipeline.enabled``)."""
        return self.path == prefix or self.path.startswith(prefix + ".")


class ConfigDelta(msgspec.Struct, frozen=True, kw_only=True):
    """Differences from the ``left`` profile to the ``right`` one, in path order."""

    left: str
    right: str
    items: tuple[DeltaItem, ...] = ()

    def render(self, indent: str = "  ") -> str:
        """``config delta bench -> prod:`` and one line per item (or ``(none)``)."""
        body = "\n".join(indent + i.render() for i in self.items) or f"{indent}(none)"
        return f"config delta {self.left} -> {self.right}:\n{body}"
