"""One public surface (docs/public-api.md): each public name has one documented path, the README,
``examples/`` and ``tests/jobs/`` import each name from it, and every other package says in its
docstring that it is internal, and where the public names are.

The documented modules are those of the document's table, in its order; a name's documented
path is the first of them that holds it (in its ``__all__``, a deprecated name left out), so
that a package comes before its modules, as PyFlink's layout asks.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "public-api.md"
# The packages whose names are public; every other package of barrierflow is internal.
PUBLIC_PACKAGES = {
    "barrierflow",
    "barrierflow.common",
    "barrierflow.datastream",
    "barrierflow.datastream.connectors",
    "barrierflow.datastream.formats",
    "barrierflow.datastream.functions",
    "barrierflow.state_processor",
}


@functools.cache
def documented_modules() -> tuple[str, ...]:
    """The modules of the document's table, in its order."""
    text = DOC.read_text().split("## Modules", 1)[1].split("\n## ", 1)[0]
    return tuple(re.findall(r"^\| `(barrierflow[\w.]*)` \|", text, re.MULTILINE))


def public_names(module: str) -> list[str]:
    face = importlib.import_module(module)
    moved = getattr(face, "_MOVED", ())
    return [n for n in face.__all__ if n not in moved]


@functools.cache
def documented_paths() -> dict[str, str]:
    """Public name -> the module that is its documented path."""
    paths: dict[str, str] = {}
    for module in documented_modules():
        for name in public_names(module):
            paths.setdefault(name, module)
    return paths


def test_the_document_lists_modules_that_exist_and_declare_their_names():
    assert len(documented_modules()) > 20, f"no table of modules found in {DOC.name}"
    for module in documented_modules():
        face = importlib.import_module(module)
        assert isinstance(getattr(face, "__all__", None), list), f"{module} has no __all__"
        missing = [n for n in public_names(module) if not hasattr(face, n)]
        assert not missing, f"{module} lists names it does not have: {missing}"


def test_every_module_of_the_table_documents_some_name():
    """A module whose names its package holds is PyFlink's second path, not a documented one."""
    paths = documented_paths()
    empty = [m for m in documented_modules() if m not in paths.values()]
    assert not empty, f"{DOC.name} lists modules whose names an earlier module holds: {empty}"


def _packages() -> list[str]:
    return sorted(
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "barrierflow").rglob("*.py")
        if p.name == "__init__.py"
    )  # fmt: skip


@pytest.mark.parametrize("package", [p for p in _packages() if p not in PUBLIC_PACKAGES])
def test_an_internal_package_says_first_that_it_is_internal_and_where_the_public_names_are(
    package,
):
    path = ROOT.joinpath(*package.split("."), "__init__.py")
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = docstring.split("\n\n", 1)[0]
    assert first.startswith("Internal"), (
        f"{path.relative_to(ROOT)}: its docstring must open with 'Internal: ...' and say where "
        f"the public names are; it opens with {first[:80]!r}"
    )
    pointers = ("docs/public-api.md", "``barrierflow`` command", *documented_modules())
    assert any(p in first for p in pointers), (
        f"{path.relative_to(ROOT)}: the first paragraph of its docstring must name where the "
        f"public names are (a module of {DOC.name}, or the document itself)"
    )


def _readme_blocks() -> list[tuple[str, int, str]]:
    """(where, first line, code) of each python block of the README."""
    text = (ROOT / "README.md").read_text()
    return [
        ("README.md", text[: m.start(1)].count("\n") + 1, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    ]


def _sources() -> list[tuple[str, int, str]]:
    files = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tests/jobs").glob("*.py"))
    return _readme_blocks() + [(str(p.relative_to(ROOT)), 1, p.read_text()) for p in files]


def _path_to_use(module: str, name: str) -> str:
    moved = getattr(importlib.import_module(module), "_MOVED", ())
    if name in moved:
        return f"use {moved.new_path(name)}"
    use = documented_paths().get(name)
    return f"use {use}.{name}" if use else "no public path: it is internal"


def wrong_imports(where: str, first_line: int, code: str) -> list[str]:
    """Each import of barrierflow in ``code`` that is not a name's documented path, with the
    path to use."""
    paths, modules = documented_paths(), set(documented_modules())
    wrong = []
    for node in ast.walk(ast.parse(code, where)):
        line = f"{where}:{first_line + node.lineno - 1}" if hasattr(node, "lineno") else where
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("barrierflow") and alias.name not in modules:
                    wrong.append(f"{line}: import {alias.name}: not a documented module")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("barrierflow"):
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules or paths.get(alias.name) == node.module:
                    continue
                hint = _path_to_use(node.module, alias.name)
                wrong.append(f"{line}: from {node.module} import {alias.name}: {hint}")
    return wrong


def test_the_readme_examples_and_test_jobs_import_each_name_from_its_documented_path():
    wrong = [w for source in _sources() for w in wrong_imports(*source)]
    assert not wrong, "\n".join(wrong)


def test_a_wrong_import_is_named_with_the_path_to_use():
    code = (
        "from barrierflow import StreamExecutionEnvironment\n"
        "from barrierflow.datastream.window import TimeWindow\n"
        "from barrierflow.runtime.task import StreamTask\n"
        "from barrierflow.datastream.window import TumblingEventTimeWindows\n"
        "from barrierflow.connectors import SequenceSource\n"
    )
    assert wrong_imports("job.py", 10, code) == [
        "job.py:10: from barrierflow import StreamExecutionEnvironment: use "
        "barrierflow.datastream.StreamExecutionEnvironment",
        "job.py:11: from barrierflow.datastream.window import TimeWindow: use "
        "barrierflow.datastream.TimeWindow",
        "job.py:12: from barrierflow.runtime.task import StreamTask: no public path: it is "
        "internal",
        "job.py:14: from barrierflow.connectors import SequenceSource: use "
        "barrierflow.datastream.connectors.number_seq.NumberSequenceSource",
    ]
