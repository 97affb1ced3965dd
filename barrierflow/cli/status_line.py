"""The live status line of ``barrierflow run`` on a terminal: one line under the log, refreshed
twice a second, with the job's records/s in and out, its last checkpoint, its back pressure and
its restarts.

``status_text`` builds the line from a ``JobStatusSnapshot`` and performs no I/O.
``StatusLine`` shows it with ``rich.live.Live`` on the console the log handler prints to, so
that log lines print above the line instead of through it.

**Threading:** ``StatusLine.show`` (``follow``) and ``close`` on the command's thread; rich's
refresh thread calls the snapshot function (``JobStatusView.snapshot``, safe from any thread).
**Lifecycle:** ``follow`` when the job's environment has built a JobMaster (its
``on_job_master`` hook); the line draws nothing once the job ended (the job file may go on), and
``close`` (the end of the ``with`` block) erases it when the job file returns or raises, Ctrl-C
included, before the command prints the outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from barrierflow.cluster.job_status import JobStatusSnapshot
from barrierflow.human_units import human_bytes

if TYPE_CHECKING:
    from barrierflow.cluster.job_master import JobMaster

REFRESH_PER_S = 2
ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})
_SEPARATOR = " · "


def status_text(job: JobStatusSnapshot) -> str:
    """``RUNNING 0:42 · in 1,234 records/s · out 1,200 records/s · checkpoint 12 3 s ago
    (240 ms, 21.8 MiB) · backpressure ok · 0 restarts``."""
    return _SEPARATOR.join(
        [
            f"{job.state} {_clock(job.duration_ms)}",
            f"in {_rate(job.records_in_per_s)} records/s",
            f"out {_rate(job.records_out_per_s)} records/s",
            _checkpoint(job),
            f"backpressure {job.backpressure.value}",
            f"{job.num_restarts} restart{'' if job.num_restarts == 1 else 's'}",
        ]
    )


def _checkpoint(job: JobStatusSnapshot) -> str:
    if not job.settings.enabled:
        return "checkpointing off"
    last = job.last_checkpoint
    if last is None:
        return "no checkpoint yet"
    age_ms = max(0, job.now_ms - last.end_timestamp_ms)
    return (
        f"checkpoint {last.checkpoint_id} {_age(age_ms)} ago "
        f"({_duration(last.duration_ms)}, {human_bytes(last.state_size)})"
    )


def _rate(per_s: float) -> str:
    """Compact, so the line keeps its length: 950, 9,500, 95.0k, 9.5M."""
    if per_s < 10_000:
        return f"{per_s:,.0f}"
    if per_s < 1_000_000:
        return f"{per_s / 1000:.1f}k"
    return f"{per_s / 1_000_000:.1f}M"


def _clock(ms: float) -> str:
    """0:42, 12:03, 1:02:03."""
    minutes, seconds = divmod(int(ms // 1000), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def _age(ms: float) -> str:
    seconds = int(ms // 1000)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


class StatusLine:
    """The status line of one job at a time on ``console``; a context manager that erases it
    on leaving.

    Standard output is redirected through ``console`` only when it is a terminal too (so a
    job's ``print`` shows above the line); a redirected standard output is left alone.
    """

    def __init__(self, console: Console, redirect_stdout: bool) -> None:
        self._console = console
        self._redirect_stdout = redirect_stdout
        self._live: Live | None = None
        self._snapshot: Callable[[], JobStatusSnapshot] | None = None
        self._last: RenderableType = Group()

    def show(self, snapshot: Callable[[], JobStatusSnapshot]) -> None:
        """Shows the status of the job ``snapshot`` describes, in place of any before (a job
        file may execute several jobs one after the other)."""
        self.close()
        self._snapshot = snapshot
        self._live = Live(
            console=self._console,
            get_renderable=self._render,
            refresh_per_second=REFRESH_PER_S,
            transient=True,
            redirect_stdout=self._redirect_stdout,
            redirect_stderr=True,
        )
        self._live.start(refresh=True)

    def follow(self, job_master: JobMaster) -> None:
        """``show`` the job of ``job_master``: the environment's ``on_job_master`` hook."""
        self.show(job_master.status_view.snapshot)

    def close(self) -> None:
        """Erases the line; does nothing when none is shown."""
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    def _render(self) -> RenderableType:
        """The line, or nothing once the job ended (the job file may go on after
        ``execute()``). Never raises: a status display must not end the job it shows."""
        assert self._snapshot is not None
        try:
            job = self._snapshot()
            if job.state in ENDED:
                self._last = Group()
            else:
                self._last = Text(status_text(job), style="dim", no_wrap=True, overflow="ellipsis")
        except Exception:  # noqa: BLE001 - keep showing the last line
            pass
        return self._last

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
