"""``barrierflow --help`` lists each command with the first paragraph of its docstring on one
line, wrapped to the terminal, not broken where the source breaks its lines; the command's own
``-h`` shows the whole docstring."""

from __future__ import annotations

import inspect

from typer.testing import CliRunner

from barrierflow.cli import app
from barrierflow.cli.checkpoint_commands import checkpoints_app


def summaries(group) -> dict[str, str]:
    return {
        info.name or info.callback.__name__: info.short_help for info in group.registered_commands
    }


def test_every_command_lists_its_first_paragraph_as_one_line():
    listed = {**summaries(app), **summaries(checkpoints_app)}
    assert listed and all(listed.values()), listed
    for summary in listed.values():
        assert "\n" not in summary and "  " not in summary, summary
    savepoint = next(i for i in app.registered_commands if i.callback.__name__ == "savepoint")
    first = inspect.getdoc(savepoint.callback).split("\n\n")[0]
    assert listed["savepoint"] == " ".join(first.split())


def test_the_list_wraps_to_the_terminal_and_a_commands_help_keeps_its_docstring():
    wide = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "300"}, terminal_width=300)
    assert wide.exit_code == 0
    assert "`savepoint info PATH` prints what a savepoint (or checkpoint) holds" in wide.output
    own = CliRunner().invoke(app, ["savepoint", "-h"], env={"COLUMNS": "300"})
    assert own.exit_code == 0 and "savepoint info PATH" in own.output
