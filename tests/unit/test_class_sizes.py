"""No class in ``barrierflow/`` grows past 400 lines: the JobMaster and the checkpoint
coordinator were each one class doing everything once; their parts stay apart. Measured with
``ast``, decorators and docstring included. The failure names every class over the limit."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "barrierflow"
MAX_CLASS_LINES = 400


def class_sizes(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    sizes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            sizes.append((node.name, node.end_lineno - first + 1))
    return sizes


def too_long() -> dict[str, int]:
    """Every class over the limit, as ``path::Class``, with its size."""
    return {
        f"{path.relative_to(ROOT)}::{name}": lines
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, lines in class_sizes(path)
        if lines > MAX_CLASS_LINES
    }


def test_no_class_is_over_400_lines():
    offenders = too_long()
    assert not offenders, (
        "\n".join(f"{c} has {n} lines" for c, n in offenders.items())
        + f"\nsplit each class by what its parts do (at most {MAX_CLASS_LINES} lines)"
    )


def test_the_measure_counts_every_line_of_a_class(tmp_path):
    source = tmp_path / "big.py"
    source.write_text("@decorated\nclass Big:\n" + "    x = 1\n" * 401)
    assert class_sizes(source) == [("Big", 403)]
