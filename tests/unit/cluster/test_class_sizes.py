"""No class in ``barrierflow/cluster/`` grows past 400 lines: the JobMaster was one class doing
everything once; its parts stay apart. Measured with ``ast``, decorators and docstring
included."""

from __future__ import annotations

import ast
from pathlib import Path

CLUSTER = Path(__file__).resolve().parents[3] / "barrierflow" / "cluster"
MAX_CLASS_LINES = 400


def class_sizes(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    sizes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            sizes.append((node.name, node.end_lineno - first + 1))
    return sizes


def test_no_class_in_cluster_is_over_400_lines():
    too_long = [
        f"{path.relative_to(CLUSTER.parent.parent)}: class {name} has {lines} lines"
        for path in sorted(CLUSTER.rglob("*.py"))
        for name, lines in class_sizes(path)
        if lines > MAX_CLASS_LINES
    ]
    assert not too_long, (
        f"{too_long}: split the class by what its parts do (at most {MAX_CLASS_LINES} lines)"
    )


def test_the_measure_counts_every_line_of_a_class(tmp_path):
    source = tmp_path / "big.py"
    source.write_text("@decorated\nclass Big:\n" + "    x = 1\n" * 401)
    assert class_sizes(source) == [("Big", 403)]
