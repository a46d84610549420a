"""The one display of progress events (:mod:`proofdiff.model.progress`).

In a terminal (``console.is_terminal``), a rich progress panel below the log: one row per task
running (what, done/total, for how long, the latest note), gone when it ends. Elsewhere (a CI
log, a pipe), plain lines at a bounded rate: a task's start and its end (not for a ``quiet``
task, whose caller logs both), and between them at most one line per ``every_s`` seconds per
task, from a ticker thread so that a task with nothing new still says it is alive.

    with progress_display(console):   # the CLI, around a command
        run_differential(opts)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID,
                           TextColumn, TimeElapsedColumn)

from proofdiff.model.progress import ProgressEvent, reporting

__all__ = ["EVERY_S", "PlainLines", "RichPanel", "progress_display"]

#: Plain mode: the shortest gap between two periodic lines of one task, seconds.
EVERY_S = 30.0


def _count(ev: ProgressEvent) -> str:
    return f"{ev.done}/{ev.total}" if ev.total is not None else str(ev.done)


class PlainLines:
    """Plain lines for a log that is not a terminal (module docstring).

    Args:
        console: where the lines go (printed literally, no markup).
        every_s: the shortest gap between two periodic lines of one task, seconds (> 0).
        tick_s: how often the ticker looks for tasks that are due, seconds (default: a
            quarter of ``every_s``, at most 1).

    Raises:
        ValueError: ``every_s`` or ``tick_s`` is not positive.
    """

    def __init__(self, console: Console, *, every_s: float = EVERY_S,
                 tick_s: float | None = None) -> None:
        tick_s = min(1.0, every_s / 4) if tick_s is None else tick_s
        if every_s <= 0 or tick_s <= 0:
            raise ValueError(f"every_s={every_s}, tick_s={tick_s}: both must be > 0 seconds")
        self.console, self.every_s, self.tick_s = console, every_s, tick_s
        self._lock = threading.Lock()
        self._latest: dict[int, ProgressEvent] = {}
        self._said: dict[int, float] = {}  # task -> time.monotonic() of its last line
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def _say(self, line: str) -> None:
        self.console.print(f"progress: {line}", markup=False, highlight=False, soft_wrap=True)

    def __call__(self, ev: ProgressEvent) -> None:
        """Take one event (from any thread)."""
        with self._lock:
            head = f"{ev.topic} {ev.name}"
            if ev.kind == "start":
                self._latest[ev.task] = ev
                self._said[ev.task] = ev.at_s
                if not ev.quiet:
                    self._say(f"{head}: started")
            elif ev.kind == "advance":
                if ev.task in self._latest:
                    self._latest[ev.task] = ev
            else:
                self._latest.pop(ev.task, None)
                self._said.pop(ev.task, None)
                if not ev.quiet:
                    took = ev.at_s - ev.started_s
                    self._say(f"{head}: {'done' if ev.ok else 'stopped'}, {_count(ev)} in "
                              f"{took:.1f} s")

    def tick(self, now: float | None = None) -> None:
        """Print the periodic line of every task due (``now``: ``time.monotonic()``)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            for tid, ev in self._latest.items():
                if now - self._said[tid] < self.every_s:
                    continue
                self._said[tid] = now
                note = f": {ev.note[:160]}" if ev.note else ""
                self._say(f"{ev.topic} {ev.name}: {_count(ev)} after {now - ev.started_s:.0f} s"
                          f"{note}")

    def _follow(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.tick()

    def __enter__(self) -> PlainLines:
        self._ticker = threading.Thread(target=self._follow, name="proofdiff-progress",
                                        daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5.0)


class RichPanel:
    """A rich progress panel in a terminal: a row per running task (module docstring).

    Args:
        console: the terminal's console; log lines printed on it appear above the panel.
    """

    def __init__(self, console: Console) -> None:
        # names and notes are shown as they are: ``[prod] workload`` is no rich markup
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False),
                                 BarColumn(bar_width=24), MofNCompleteColumn(),
                                 TimeElapsedColumn(),
                                 TextColumn("{task.fields[note]}", markup=False),
                                 console=console, refresh_per_second=4, transient=True)
        self._lock = threading.Lock()
        self._rows: dict[int, TaskID] = {}

    def __call__(self, ev: ProgressEvent) -> None:
        """Take one event (from any thread)."""
        note = ev.note[:80]
        with self._lock:
            if ev.kind == "start":
                self._rows[ev.task] = self.progress.add_task(
                    f"{ev.topic} {ev.name}", total=ev.total, completed=ev.done, note=note)
                return
            row = self._rows.get(ev.task)
            if row is None:
                return
            self.progress.update(row, completed=ev.done, total=ev.total, note=note)
            if ev.kind == "end":  # its last figures on screen once, then the row goes
                self.progress.refresh()
                self.progress.remove_task(self._rows.pop(ev.task))

    def __enter__(self) -> RichPanel:
        self.progress.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.progress.stop()


@contextmanager
def progress_display(console: Console, *, every_s: float = EVERY_S,
                     terminal: bool | None = None) -> Iterator[Callable[[ProgressEvent], None]]:
    """Show the progress of the tasks opened in this block on ``console``.

    Args:
        every_s: plain mode's shortest gap between two periodic lines of one task, seconds.
        terminal: rich panel (True) or plain lines (False); default ``console.is_terminal``.

    Yields:
        The sink installed (a :class:`RichPanel` or a :class:`PlainLines`).
    """
    rich_mode = console.is_terminal if terminal is None else terminal
    display: RichPanel | PlainLines = (RichPanel(console) if rich_mode
                                       else PlainLines(console, every_s=every_s))
    with display, reporting(display):
        yield display
