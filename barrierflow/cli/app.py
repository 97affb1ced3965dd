"""The ``barrierflow`` command's application object and what its commands share: the consoles,
and how a time is shown. Output meant for scripts goes to standard output; errors and
progress to standard error."""

from __future__ import annotations

import inspect
from datetime import datetime

import typer
from rich.console import Console, ConsoleDimensions

# -h as well as --help, on every command, as Flink's command line takes it
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(
    help="Stateful stream processing on Spark with Flink's checkpointing.",
    no_args_is_help=True,
    add_completion=False,
    context_settings=HELP_OPTIONS,
)
checkpoints_app = typer.Typer(
    help="Inspect the checkpoints under a checkpoint directory.",
    no_args_is_help=True,
    context_settings=HELP_OPTIONS,
)
app.add_typer(checkpoints_app, name="checkpoints")


class _Console(Console):
    """A console that is as wide as the terminal it writes to, and wide enough for any line
    or table when it writes to a pipe or a file: a script or a log reading the output must get
    it whole, not cut or wrapped at 80 columns."""

    _UNBOUNDED = 100_000  # columns: tables take their natural width, never this

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or self._width is not None:
            return size
        return ConsoleDimensions(self._UNBOUNDED, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console = _Console()
errors = _Console(stderr=True)


def one_line_summaries(group: typer.Typer) -> None:
    """Each command's line in a list of commands (``barrierflow --help``): the first paragraph
    of its docstring as one line, which the list wraps to the terminal, not broken where the
    source breaks it. The command's own ``--help`` keeps the whole docstring."""
    for info in group.registered_commands:
        doc = inspect.getdoc(info.callback) if info.callback is not None else None
        if info.short_help is None and info.help is None and doc:
            info.short_help = " ".join(doc.split("\n\n")[0].split())
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            one_line_summaries(sub.typer_instance)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Prints ``message`` as an error; raise what it returns."""
    errors.print(message, style="red", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def time_of(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000).isoformat(timespec="milliseconds")
