"""Runs PyFlink's own DataStream unit tests on barrierflow and prints the figure.

    python -m tests.compat.pyflink_unit_tests --flink-source ~/src/flink
    python -m tests.compat.pyflink_unit_tests --fetch            # needs git and network

Steps: find the test modules in Flink's source (``pyflink/datastream/tests``,
``pyflink/common/tests``, and the connectors' and formats' test modules, which are excluded);
rewrite each (``rewrite.py``) into a work directory, recording the tests that cannot apply
with their reasons; run pytest there, in a process of its own (each test at most ``--timeout``
seconds), with the shims in place of PyFlink's Java test harness; read its JUnit report and
print passed / failed / excluded, each failure's first line and each exclusion's reason.

**I/O:** reads Flink's source, writes the work directory, may run git, runs pytest.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from tests.compat.pyflink_unit_tests.plugin import EXCLUDED
from tests.compat.pyflink_unit_tests.rewrite import (
    collected_tests,
    excluded_tests,
    module_exclusion,
    rewrite_source,
)

ROOT = Path(__file__).resolve().parents[3]
FLINK_GIT = "https://github.com/apache/flink.git"
TEST_DIRS = (
    "pyflink/datastream/tests",
    "pyflink/datastream/connectors/tests",
    "pyflink/datastream/formats/tests",
    "pyflink/common/tests",
)
SHIMMED = {"pyflink/datastream/tests/test_util.py"}  # replaced by shims/test_util.py


@dataclass
class Outcome:
    test: str  # module::Class::method
    status: str  # passed, failed, excluded
    detail: str = ""


@dataclass
class Prepared:
    modules: dict[str, list[str]] = field(default_factory=dict)  # module -> its test ids
    excluded: dict[str, str] = field(default_factory=dict)  # test id -> why it cannot apply
    outcomes: list[Outcome] = field(default_factory=list)  # decided without running


def pyflink_root(source: Path) -> Path:
    """The directory holding ``pyflink/`` in ``source`` (Flink's checkout or flink-python)."""
    for candidate in (source, source / "flink-python"):
        if (candidate / "pyflink" / "datastream" / "tests").is_dir():
            return candidate
    raise SystemExit(
        f"{source}: no pyflink/datastream/tests under it or its flink-python directory; give "
        "a checkout of Apache Flink's source (the apache-flink source distribution on the "
        "package index ships no tests), or --fetch"
    )


def fetch(version: str, into: Path) -> Path:
    """A shallow, sparse clone of Flink's ``release-VERSION`` tag: flink-python/pyflink."""
    if not (into / ".git").is_dir():
        subprocess.run(
            ["git", "clone", "--depth", "1", "--branch", f"release-{version}",
             "--filter=blob:none", "--sparse", FLINK_GIT, str(into)],
            check=True,
        )  # fmt: skip
        subprocess.run(
            ["git", "-C", str(into), "sparse-checkout", "set", "flink-python/pyflink"], check=True
        )
    return into


def prepare(root: Path, work: Path) -> Prepared:
    """The rewritten modules under ``work`` and ``work/exclusions.json``."""
    prepared = Prepared()
    exclusions: dict[str, dict[str, str]] = {}
    for test_dir in TEST_DIRS:
        for path in sorted((root / test_dir).glob("test_*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in SHIMMED:
                continue
            module = relative[: -len(".py")].replace("/", ".")
            source = path.read_text()
            tests = collected_tests(source)
            ids = [f"{relative}::{t.cls}::{t.name}" for t in tests]
            reason = module_exclusion(relative)
            if reason is not None:
                prepared.outcomes += [Outcome(i, "excluded", reason) for i in ids]
                continue
            target = work / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(rewrite_source(source))
            prepared.modules[module] = ids
            excluded = excluded_tests(source)
            exclusions[module] = {f"{c}.{m}": r for (c, m), r in excluded.items()}
            for test in tests:
                if (test.defined_in, test.name) in excluded:
                    key = f"{relative}::{test.cls}::{test.name}"
                    prepared.excluded[key] = excluded[(test.defined_in, test.name)]
    for package in {p.parent for p in work.rglob("test_*.py")}:
        for directory in (package, *package.parents):
            if directory == work:
                break
            (directory / "__init__.py").touch()
    (work / "exclusions.json").write_text(json.dumps(exclusions, indent=1))
    return prepared


def run_pytest(work: Path, timeout_s: int, selection: str | None) -> Path:
    report = work / "report.xml"
    command = [sys.executable, "-m", "pytest", str(work / "pyflink"), "-q", "-p",
               "no:cacheprovider", "-p", "tests.compat.pyflink_unit_tests.plugin",
               f"--junitxml={report}", f"--timeout={timeout_s}", f"--rootdir={work}",
               "--tb=short", "--continue-on-collection-errors", "-o", "python_files=test_*.py",
               "-o", "addopts="]  # fmt: skip
    if selection:
        command += ["-k", selection]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(work), os.environ.get("PYTHONPATH", "")]),
        "PYFLINK_UNIT_TESTS_EXCLUSIONS": str(work / "exclusions.json"),
    }
    subprocess.run(command, cwd=ROOT, env=env, check=False)
    return report


def read_report(report: Path, prepared: Prepared) -> list[Outcome]:
    """Each test's outcome from pytest's JUnit report; a module that did not import fails
    each of its tests with the import's error."""
    outcomes = list(prepared.outcomes)
    seen: set[str] = set()
    broken: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        module, _, cls = classname.rpartition(".")
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        if not cls or module not in prepared.modules:  # a module that did not import
            broken[classname or name] = _first_line(problem)
            continue
        test = f"{module.replace('.', '/')}.py::{cls}::{name}"
        seen.add(test)
        if problem is not None:
            outcomes.append(Outcome(test, "failed", _first_line(problem)))
        elif skipped is not None:
            message = skipped.get("message", "")
            if EXCLUDED in message:
                outcomes.append(Outcome(test, "excluded", message.split(EXCLUDED, 1)[1]))
            else:
                outcomes.append(Outcome(test, "excluded", f"skipped by PyFlink's test: {message}"))
        else:
            outcomes.append(Outcome(test, "passed"))
    for module, ids in prepared.modules.items():
        why = next((e for m, e in broken.items() if module in m), None)
        if why is None:
            continue  # not selected (-k), or not a test pytest collects
        for test in ids:
            if test in seen:
                continue
            if test in prepared.excluded:  # it could not apply, imported or not
                outcomes.append(Outcome(test, "excluded", prepared.excluded[test]))
            else:
                outcomes.append(Outcome(test, "failed", f"module did not import: {why}"))
    return outcomes


def _first_line(problem: ET.Element | None) -> str:
    """The line that says what went wrong: the message, or for a module that did not
    import, the last line of its traceback (the ImportError)."""
    if problem is None:
        return ""
    message = problem.get("message") or ""
    if message and message != "collection failure":
        return message.strip().splitlines()[0][:200]
    lines = [line.strip() for line in (problem.text or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ")]
    return (errors or lines or [message])[-1][:200]


def summary(outcomes: list[Outcome], version: str) -> str:
    counts = collections.Counter(o.status for o in outcomes)
    applicable = counts["passed"] + counts["failed"]
    lines = [
        f"PyFlink {version}'s DataStream unit tests on barrierflow: {counts['passed']} of "
        f"{applicable} that apply passed; {counts['failed']} failed; {counts['excluded']} "
        f"excluded ({len(outcomes)} in all)",
    ]
    failed = [o for o in outcomes if o.status == "failed"]
    unimported = collections.Counter(
        (o.test.split("::")[0], o.detail) for o in failed if o.detail.startswith("module did")
    )
    if failed:
        lines.append("failed:")
        lines += [
            f"  {m} ({n} test{'' if n == 1 else 's'}): {why}"
            for (m, why), n in sorted(unimported.items())
        ]
        lines += [
            f"  {o.test}: {o.detail}"
            for o in sorted(failed, key=lambda o: o.test)
            if not o.detail.startswith("module did")
        ]
    reasons = collections.Counter(o.detail for o in outcomes if o.status == "excluded")
    if reasons:
        lines.append("excluded, by reason:")
        lines += [f"  {n:4d}  {reason}" for reason, n in reasons.most_common()]
    lines.append(f"{counts['passed']} passed, {counts['failed']} failed")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--flink-source", type=Path, help="Apache Flink's source (or flink-python)")
    source.add_argument("--fetch", action="store_true", help="clone Flink's release tag (git)")
    parser.add_argument("--version", default="2.3.0", help="Flink release of --fetch (2.3.0)")
    parser.add_argument("--work-dir", type=Path, help="where the rewritten tests go")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
    parser.add_argument("-k", dest="selection", help="pytest -k expression: a part only")
    args = parser.parse_args(argv)
    if args.fetch:
        checkout = Path(tempfile.gettempdir()) / f"flink-{args.version}-source"
        root = pyflink_root(fetch(args.version, checkout))
    else:
        root = pyflink_root(args.flink_source)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="pyflink-unit-tests-"))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    prepared = prepare(root, work)
    outcomes = read_report(run_pytest(work, args.timeout, args.selection), prepared)
    print(summary(outcomes, args.version))
    return 0
