"""The current table at the top of docs/benchmarks.md, rewritten from one run of compare.py.

The table sits between two marker comments. A row belongs to the run whose name, in backticks,
opens its first cell. A record replaces the command, the figure, the ratios and the date of the
rows of the runs it measured, keeping their description and their link as written; it appends
a row for a run the table does not have yet and leaves every other row alone. A ratio holds
only between two figures of one run: a row's ratios to runs this record did not measure stay,
marked as from an earlier run, so that nobody reads them against the new figure.

Performs no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

START = "<!-- current-table:start -->"
END = "<!-- current-table:end -->"
COLUMNS = ("what is measured", "command", "figure", "ratios", "date", "details")
EARLIER = "(earlier run)"
_PIPE = re.compile(r"(?<!\\)\|")
_NAME = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Measured:
    """What one run's row says after a record."""

    run: str
    what: str  # the first cell, for a row new to the table
    command: str
    figure: str
    ratios: tuple[tuple[str, str], ...]  # (the other run, the ratio as written), in this record
    date: str


def rewrite(document: str, measured: list[Measured], details: str) -> str:
    """The document with the rows of ``measured`` rewritten or appended; ``details`` is the last
    cell of an appended row."""
    lines = document.split("\n")
    start, end = _markers(lines)
    block = lines[start + 1 : end]
    table = [i for i, line in enumerate(block) if line.lstrip().startswith("|")]
    if len(table) < 2 or len(_cells(block[table[0]])) != len(COLUMNS):
        raise ValueError(
            f"the current table between {START} and {END} needs a header of "
            f"{len(COLUMNS)} columns ({', '.join(COLUMNS)}) and its separator line"
        )
    todo = {m.run: m for m in measured}
    for i in table[2:]:
        cells = _cells(block[i])
        if len(cells) != len(COLUMNS):
            raise ValueError(f"a row of the current table has {len(cells)} cells: {block[i]}")
        found = run_of(cells[0])
        if found in todo:
            block[i] = _row(_updated(cells, todo.pop(found)))
    appended = [
        _row([m.what, m.command, m.figure, _ratios(m, ""), m.date, details])
        for m in measured
        if m.run in todo
    ]
    block[table[-1] + 1 : table[-1] + 1] = appended
    return "\n".join([*lines[: start + 1], *block, *lines[end:]])


def run_of(first_cell: str) -> str | None:
    """The run a row belongs to: the name in backticks that opens its first cell."""
    match = _NAME.match(first_cell.strip())
    return match.group(1) if match else None


def _markers(lines: list[str]) -> tuple[int, int]:
    starts = [i for i, line in enumerate(lines) if line.strip() == START]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(
            f"the document needs one {START} line, then one {END} line, around its current "
            f"table (found {len(starts)} and {len(ends)})"
        )
    return starts[0], ends[0]


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip() for c in _PIPE.split(inner)]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_PIPE.sub(r"\\|", c) for c in cells) + " |"


def _updated(cells: list[str], m: Measured) -> list[str]:
    return [cells[0], m.command, m.figure, _ratios(m, cells[3]), m.date, cells[5]]


def _ratios(m: Measured, before: str) -> str:
    """This record's ratios, then those of the row before to runs this record did not
    measure, marked as from an earlier run."""
    others = {other for other, _ in m.ratios}
    kept = []
    for item in (i.strip() for i in before.split(";")):
        names = _NAME.findall(item)
        if names and names[0] not in others:
            kept.append(item if EARLIER in item else f"{item} {EARLIER}")
    return "; ".join([text for _, text in m.ratios] + kept) or "-"
