"""Side outputs: a second stream of an operator's results, named by an ``OutputTag`` (late
records of a window, ``ctx.output(tag, value)`` in a process function), taken with
``get_side_output(tag)``.

A side output record travels in the operator's output list wrapped as ``SideOutput(tag id,
value)``; the edge to a side output's consumer selects and unwraps the records of its tag, every
other edge of that operator drops them (``runtime/network/output.py``). An operator emits side
records only for tags someone consumes (``OperatorSpec.side_outputs``), so a job that takes no
side output carries none. Performs no I/O.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["DeadLetter", "OutputTag"]


class OutputTag:
    """PyFlink's ``OutputTag(tag_id, type_info=None)``: tags with the same id are the same."""

    # Whether this process ever made a tag. Until it has, no function's output can hold a
    # ``(tag, value)`` pair, and operators skip looking for them: the look costs about 35 ns
    # a record (``runtime/operators.py``). Unpickling makes a tag through ``__init__`` too.
    made = False

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError(f"an OutputTag needs a non-empty string id, got {tag_id!r}")
        self.tag_id = tag_id
        self.type_info = type_info
        OutputTag.made = True

    def __reduce__(self) -> tuple[Any, tuple[str, Any]]:
        return type(self), (self.tag_id, self.type_info)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"


class SideOutput(NamedTuple):
    tag: str
    value: Any


class DeadLetter(NamedTuple):
    """A record an operator's function failed on, sent to the operator's dead letters
    (``stream.map(f).with_dead_letters(tag)``) instead of failing the job: the record as the
    function got it, the operator (``uid (name)``) and the error (``ValueError: ...``)."""

    record: Any
    operator: str
    error: str
