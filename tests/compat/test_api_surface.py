"""Every public name of PyFlink's DataStream side exists at the same path in barrierflow
(``pyflink.X.Y`` -> ``barrierflow.X.Y``), or ``docs/pyflink-compatibility.md`` says why not.

The names are those ``list_public_names.py`` prints in PyFlink's environment, checked in as
``pyflink_api_names.json`` so that the test runs without PyFlink; where ``PYFLINK_PYTHON``
names a Python with PyFlink, the snapshot must equal what that PyFlink says (an upgrade shows
up here: refresh the snapshot with the command in the failure message).

The compatibility document lists, in tables, the names barrierflow does not offer, each with a
reason a PyFlink user can act on, and the names still to come with what builds them. A name
that is neither present nor listed fails the test; so does a listed name that is present now
(the document must stay true). Names still to come are reported as an expected failure of
their module, naming them, until they exist.

A PyFlink path loads without a warning; the paths barrierflow had before its names took
PyFlink's warn, naming the new one (``test_deprecated_paths.py``).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import subprocess
import warnings
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).parent
SNAPSHOT = HERE / "pyflink_api_names.json"
LISTER = HERE / "list_public_names.py"
DOC = HERE.parents[1] / "docs" / "pyflink-compatibility.md"
NOT_OFFERED = "## Names barrierflow does not offer"
TO_COME = "## Names still to come"
# What a reason must not be: the absence of one.
NOT_A_REASON = re.compile(r"\b(not (done|implemented) yet|todo|tbd|later)\b", re.IGNORECASE)


def snapshot() -> dict:
    return json.loads(SNAPSHOT.read_text())


@functools.cache
def documented() -> tuple[dict[str, str], dict[str, str]]:
    """(name -> why it is not offered, name -> what builds it) from the document's tables; a
    name is ``module.Name``, or a whole module."""
    sections: dict[str, dict[str, str]] = {NOT_OFFERED: {}, TO_COME: {}}
    current = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            current = sections.get(line.strip())
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None or len(cells) != 2 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([\w.]+)`", cells[0]):
            current[name] = cells[1]
    return sections[NOT_OFFERED], sections[TO_COME]


def barrierflow_module(pyflink_module: str) -> ModuleType | None:
    name = "barrierflow" + pyflink_module.removeprefix("pyflink")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and name.startswith(e.name):
            return None  # the module (or a package above it) does not exist
        raise


def missing_names(module: str, names: list[str]) -> list[str]:
    """The ``module.Name`` paths barrierflow lacks (the module itself, where it has no names
    and does not exist)."""
    found = barrierflow_module(module)
    if found is None and not names:
        return [module]
    return [f"{module}.{n}" for n in names if found is None or not hasattr(found, n)]


def listed(path: str, table: dict[str, str]) -> bool:
    module = path.rpartition(".")[0]
    return path in table or module in table


@pytest.mark.parametrize("module", sorted(snapshot()["modules"]))
def test_every_pyflink_name_is_offered_or_explained(module):
    not_offered, to_come = documented()
    names = snapshot()["modules"][module]
    missing = missing_names(module, names)
    unexplained = [p for p in missing if not listed(p, not_offered) and not listed(p, to_come)]
    assert not unexplained, (
        f"barrierflow lacks these PyFlink names, and {DOC.name} does not say why: "
        f"{unexplained}; offer them at the same path under barrierflow, or list them in the "
        "document with a reason a PyFlink user would accept"
    )
    present = [
        f"{module}.{n}"
        for n in names
        if f"{module}.{n}" not in missing
        and (f"{module}.{n}" in not_offered or f"{module}.{n}" in to_come)
    ]
    assert not present, f"{DOC.name} lists names that barrierflow offers now: {present}"
    waiting = [p for p in missing if listed(p, to_come)]
    if waiting:
        pytest.xfail(f"{len(waiting)} names still to come: {', '.join(waiting)}")


@pytest.mark.parametrize("module", sorted(snapshot()["modules"]))
def test_a_pyflink_path_loads_without_a_warning(module):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a PyFlink path is never a deprecated one
        found = barrierflow_module(module)
        for name in snapshot()["modules"][module]:
            getattr(found, name, None)


def test_the_document_lists_only_names_pyflink_has():
    modules = snapshot()["modules"]
    known = set(modules) | {f"{m}.{n}" for m, names in modules.items() for n in names}
    not_offered, to_come = documented()
    unknown = sorted((set(not_offered) | set(to_come)) - known)
    assert not unknown, f"{DOC.name} lists names PyFlink does not export: {unknown}"
    assert not set(not_offered) & set(to_come), "a name is both not offered and to come"


def test_every_name_not_offered_has_a_reason():
    not_offered, to_come = documented()
    assert not_offered, f"no table found under {NOT_OFFERED!r} in {DOC.name}"
    for name, reason in {**not_offered, **to_come}.items():
        assert len(reason) > 20 and not NOT_A_REASON.search(reason), (
            f"{name}: {reason!r} is not a reason a PyFlink user can act on"
        )


def test_no_module_was_left_out_for_needing_a_jvm():
    """PyFlink 2.3's DataStream modules all import without a JVM; one that stops doing so
    would drop out of the comparison silently."""
    assert snapshot()["not_importable"] == {}


def test_the_snapshot_is_what_pyflink_exports():
    python = os.environ.get("PYFLINK_PYTHON")
    if not python:
        pytest.skip("PYFLINK_PYTHON names no Python with PyFlink (pip install apache-flink)")
    done = subprocess.run(
        [python, str(LISTER)], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == snapshot(), (
        "PyFlink's public names changed; refresh the snapshot with "
        f"`$PYFLINK_PYTHON {LISTER.relative_to(HERE.parents[1])} > "
        f"{SNAPSHOT.relative_to(HERE.parents[1])}` and compare the document with it"
    )
