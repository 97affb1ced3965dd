"""PyFlink DataStream programs, changed only in their imports, print what PyFlink prints.

Each program in ``programs/`` runs on barrierflow (local Spark) and its printed lines are
compared, as a multiset, with ``<program>.out`` beside it. Where a Python with PyFlink is
named by ``PYFLINK_PYTHON`` (``pip install apache-flink`` in an environment of its own), the
same program, with ``barrierflow`` put back to ``pyflink`` in its imports, runs on PyFlink and
its lines are compared with the same file: the expected output is PyFlink's.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
from collections import Counter
from pathlib import Path

import pytest

PROGRAMS = sorted(Path(__file__).parent.joinpath("programs").glob("*.py"))


def expected(program: Path) -> Counter[str]:
    return Counter(program.with_suffix(".out").read_text().splitlines())


@pytest.mark.spark
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_on_barrierflow(program, spark, capfd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a program's relative paths land in a fresh directory
    capfd.readouterr()
    runpy.run_path(str(program), run_name="__main__")
    printed = Counter(capfd.readouterr().out.splitlines())
    assert printed == expected(program)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_on_pyflink(program, tmp_path):
    python = os.environ.get("PYFLINK_PYTHON")
    if not python:
        pytest.skip("PYFLINK_PYTHON names no Python with PyFlink (pip install apache-flink)")
    if "\n# pyflink: skip\n" in program.read_text():
        pytest.skip("the program says why PyFlink does not run it (its docstring)")
    source = re.sub(r"\bbarrierflow\b", "pyflink", program.read_text())
    (tmp_path / program.name).write_text(source)
    # PyFlink starts its Python workers as ``python`` from the PATH: this environment's.
    path = f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [python, program.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PATH": path},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert Counter(done.stdout.splitlines()) == expected(program)
