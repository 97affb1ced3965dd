"""The type checker, as CI runs it: mypy checks the packages that ``[tool.mypy]`` in
pyproject.toml lists, in its default mode, and the pure modules (``PURE`` in test_layers.py)
with ``--strict``.

Strict on the pure modules because they are where the decisions are (what to checkpoint, which
split goes where, what a window holds): their signatures are the contract the runtime and the
coordination code are written against, so every one is annotated and nothing in them is
``Any`` by accident. ``PURE`` is read from test_layers.py, not copied, so a module made pure is
checked strictly from then on. The packages of the configuration are checked in the default
mode: annotated functions are checked, and a package passing today stays passing.

Imported modules outside what is checked are read for their types, not reported on
(``follow_imports = "silent"``). mypy's cache lives under the system temp dir, one per checkout
and mode (the two modes would otherwise invalidate each other's entries): a cold run takes about
15 s on two cores, a warm one under a second.
"""

from __future__ import annotations

import ast
import hashlib
import tempfile
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"


def pure_modules() -> tuple[str, ...]:
    """``PURE`` of test_layers.py, read from its source (importing the test module would scan
    the whole package's imports, which this test does not need)."""
    tree = ast.parse((ROOT / "tests" / "unit" / "test_layers.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            "PURE"
        ]:
            return tuple(ast.literal_eval(node.value))
    raise LookupError("tests/unit/test_layers.py defines no PURE")


def mypy_errors(mode: str, *args: str) -> list[str]:
    """mypy's error lines for ``args``, with the configuration and a cache of ``mode``'s own;
    a crash or a usage error is an error too."""
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / "barrierflow-mypy" / checkout / mode
    stdout, stderr, status = api.run(
        ["--config-file", str(CONFIG), "--cache-dir", str(cache), "--no-error-summary", *args]
    )
    errors = [line for line in stdout.splitlines() if ": error: " in line]
    if status != 0 and not errors:  # not a type error: mypy could not run
        errors = [f"mypy exited with {status}: {stdout}{stderr}"]
    return errors


@pytest.fixture(autouse=True)
def _in_the_checkout(monkeypatch):
    """mypy finds ``barrierflow`` (``-p``) and the configured packages from the checkout."""
    monkeypatch.chdir(ROOT)


def test_the_configured_packages_pass_mypy():
    errors = mypy_errors("default")
    assert not errors, f"{len(errors)} mypy errors:\n" + "\n".join(errors)


def test_the_pure_modules_pass_mypy_strict():
    packages = [arg for module in pure_modules() for arg in ("-p", module)]
    errors = mypy_errors("strict", "--strict", *packages)
    assert not errors, f"{len(errors)} mypy --strict errors:\n" + "\n".join(errors)


def test_a_type_error_is_reported(tmp_path, monkeypatch):
    """The checks above would pass if mypy checked nothing: this one sees an error reported,
    in a module checked as the pure ones are."""
    (tmp_path / "wrong_types.py").write_text("def f(x: int) -> str:\n    return x\n")
    monkeypatch.setenv("MYPYPATH", str(tmp_path))
    errors = mypy_errors("strict", "--strict", "-p", "wrong_types")
    assert len(errors) == 1, errors
    assert 'Incompatible return value type (got "int", expected "str")' in errors[0]
