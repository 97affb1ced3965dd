"""``api/environment.py`` stays PyFlink's surface over a pipeline: it was once the hub of the
package (776 lines, 39 of our modules imported, the whole submission in one class). Its size
and the modules it imports are measured with ``ast``, every import counted (inside functions
and under ``TYPE_CHECKING`` too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ENVIRONMENT = ROOT / "barrierflow" / "api" / "environment.py"
MAX_LINES = 400
MAX_IMPORTED_MODULES = 15


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported_modules(source: str) -> set[str]:
    """The barrierflow modules ``source`` imports; ``from package import module`` imports
    the module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                name = f"{node.module}.{a.name}"
                found.add(name if _is_module(name) else node.module)
    return {m for m in found if m == "barrierflow" or m.startswith("barrierflow.")}


def test_the_environment_module_is_at_most_400_lines_and_imports_at_most_15_of_ours():
    source = ENVIRONMENT.read_text()
    lines = len(source.splitlines())
    assert lines <= MAX_LINES, f"api/environment.py has {lines} lines: move work to client/"
    modules = imported_modules(source)
    assert len(modules) <= MAX_IMPORTED_MODULES, sorted(modules)


def test_the_environment_class_is_at_most_400_lines():
    tree = ast.parse(ENVIRONMENT.read_text())
    [environment] = [
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef) and n.name == "StreamExecutionEnvironment"
    ]
    assert environment.end_lineno - environment.lineno + 1 <= MAX_LINES


def test_every_import_counts_in_functions_and_for_type_checking_too():
    source = """
from typing import TYPE_CHECKING
from barrierflow.errors import ConfigurationError
from barrierflow.api import configuration
if TYPE_CHECKING:
    from barrierflow.graph.transformation import Transformation
def f():
    import barrierflow.client.pipeline
"""
    assert imported_modules(source) == {
        "barrierflow.errors",
        "barrierflow.api.configuration",
        "barrierflow.graph.transformation",
        "barrierflow.client.pipeline",
    }
