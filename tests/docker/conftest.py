"""The docker tier: the one container runner, its watchdog and the tools in the reference image,
on the real engine (skipped, with the reason, where none answers)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from proofdiff.core.plan import new_run_id
from proofdiff.runtime.docker import reap
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.watchdog import Watchdog


@pytest.fixture
def runner(artifacts: Any) -> Iterator[Runner]:
    """A runner with its own run id and watchdog; everything of its run is gone afterwards."""
    dog = Watchdog().start()
    r = Runner(f"t-{new_run_id()}", tracker=dog)
    yield r
    dog.close()
    left = reap(run_id=r.run_id)
    assert not left, f"containers left behind: {left}"
