"""PyFlink's own example programs, changed only in their imports, print on barrierflow what
they print on PyFlink, in the same run.

Every program under ``pyflink/examples/datastream/`` of the PyFlink that ``PYFLINK_PYTHON``
names is read from that installation (nothing of PyFlink's is copied here). Its import lines
are rewritten (``pyflink`` -> ``barrierflow``) and it runs on barrierflow, on the test
session's Spark; the unchanged program runs on PyFlink in a subprocess. Their printed lines
must be equal as multisets (the order of lines from parallel subtasks is not PyFlink's to
promise either). Two things are normalised, because they are not the program's output:

- log records: PyFlink's examples send the root logger to standard output, where PyFlink's
  and Beam's INFO lines would mix with the program's prints. Both runs configure the root
  logger first (to standard error), which makes the example's ``basicConfig`` a no-op.
- the ``N> `` before a printed record: it names the subtask of ``print()``, which depends on
  the default parallelism (PyFlink's local default is the number of cores, barrierflow's 1)
  and on where round-robin starts.

An example that cannot be compared is listed in ``docs/pyflink-compatibility.md`` with the
reason, and skipped with it; one whose missing pieces are still to come is an expected
failure, naming them, until it passes.
"""

from __future__ import annotations

import functools
import os
import re
import runpy
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "pyflink-compatibility.md"
NOT_COMPARED = "## PyFlink's examples that are not compared"
TO_COME = "## PyFlink's examples still to come"
IMPORT = re.compile(r"^(\s*(?:from|import)\s+)pyflink\b", re.MULTILINE)
SUBTASK = re.compile(r"^\d+> ")
# Run by PyFlink's Python: logging to standard error first, then the example as __main__.
RUN_EXAMPLE = (
    "import logging, runpy, sys; logging.basicConfig(stream=sys.stderr, level=logging.WARNING); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


@functools.cache
def examples_root() -> Path | None:
    python = os.environ.get("PYFLINK_PYTHON")
    if not python:
        return None
    done = subprocess.run(
        [python, "-c", "import os, pyflink; print(os.path.dirname(pyflink.__file__))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Path(done.stdout.strip()) / "examples" / "datastream"


def examples() -> list[str]:
    root = examples_root()
    if root is None:
        return ["(PyFlink not installed)"]
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))


@functools.cache
def listed(section: str) -> dict[str, str]:
    """example -> reason, from a table of the document's ``section``."""
    found: dict[str, str] = {}
    current = False
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            current = line.strip() == section
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current and len(cells) == 2 and cells[0].startswith("`"):
            found[cells[0].strip("`")] = cells[1]
    return found


def printed_lines(text: str) -> Counter[str]:
    return Counter(SUBTASK.sub("", line) for line in text.splitlines())


def on_pyflink(program: Path, cwd: Path) -> str:
    python = os.environ["PYFLINK_PYTHON"]
    # PyFlink starts its Python workers as ``python`` from the PATH: this environment's.
    path = f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [python, "-c", RUN_EXAMPLE, str(program)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": path},
    )
    assert done.returncode == 0, f"{program.name} failed on PyFlink:\n{done.stderr[-3000:]}"
    return done.stdout


def on_barrierflow(program: Path, cwd: Path, capfd, monkeypatch) -> str:
    source = IMPORT.sub(r"\1barrierflow", program.read_text())
    rewritten = cwd / program.name
    rewritten.write_text(source)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [str(rewritten)])
    capfd.readouterr()
    runpy.run_path(str(rewritten), run_name="__main__")
    return capfd.readouterr().out


@pytest.mark.spark
@pytest.mark.parametrize("example", examples())
def test_example_prints_on_barrierflow_what_it_prints_on_pyflink(
    example, tmp_path, capfd, monkeypatch, request
):
    root = examples_root()
    if root is None:
        pytest.skip("PYFLINK_PYTHON names no Python with PyFlink (pip install apache-flink)")
    if example in listed(NOT_COMPARED):
        pytest.skip(listed(NOT_COMPARED)[example])
    if example in listed(TO_COME):  # run: once it passes, the document must say so
        request.applymarker(pytest.mark.xfail(reason=listed(TO_COME)[example], strict=True))
    request.getfixturevalue("spark")  # the session's, started only for an example that runs
    program = root / example
    expected = printed_lines(on_pyflink(program, tmp_path))
    assert expected, f"{example} printed nothing on PyFlink: nothing to compare"
    (tmp_path / "barrierflow").mkdir()
    printed = printed_lines(on_barrierflow(program, tmp_path / "barrierflow", capfd, monkeypatch))
    assert printed == expected, (
        f"only on barrierflow: {printed - expected}; only on PyFlink: {expected - printed}"
    )


def test_the_document_lists_only_pyflinks_examples():
    if examples_root() is None:
        pytest.skip("PYFLINK_PYTHON names no Python with PyFlink (pip install apache-flink)")
    unknown = (set(listed(NOT_COMPARED)) | set(listed(TO_COME))) - set(examples())
    assert not unknown, f"{DOC.name} lists examples PyFlink does not ship: {sorted(unknown)}"
