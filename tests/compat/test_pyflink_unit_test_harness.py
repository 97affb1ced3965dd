"""The harness that runs PyFlink's own unit tests (``tests/compat/pyflink_unit_tests``), on a
small tree shaped as Flink's ``flink-python``: imports rewritten, the tests that reach the JVM
gateway, a Java class or the Table API excluded with their reasons, a Java connector module
excluded whole, a module that does not import failed test by test, and passes and failures
of jobs that ran counted."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.compat.pyflink_unit_tests.rewrite import (
    JAVA_CLASS,
    JVM,
    TABLE_API,
    collected_tests,
    excluded_tests,
    module_exclusion,
    rewrite_source,
)

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
from pyflink.common import Row
from pyflink.common.typeinfo import Types
from pyflink.datastream.functions import SourceFunction
from pyflink.datastream.tests.test_util import DataStreamTestSinkFunction
from pyflink.java_gateway import get_gateway
from pyflink.table import StreamTableEnvironment
from pyflink.testing.test_case_utils import PyFlinkStreamingTestCase
from pyflink.util.java_utils import get_j_env_configuration


class JobTests(object):
    def setUp(self):
        super(JobTests, self).setUp()
        config = get_j_env_configuration(self.env._j_stream_execution_environment)
        config.setString("pekko.ask.timeout", "20 s")
        self.test_sink = DataStreamTestSinkFunction()

    def test_rows_reach_the_sink_as_java_prints_them(self):
        ds = self.env.from_collection([("a", 1), ("b", 2)],
                                      type_info=Types.ROW([Types.STRING(), Types.INT()]))
        ds.map(lambda r: (r[0], r[1] + 1),
               output_type=Types.TUPLE([Types.STRING(), Types.INT()])).add_sink(self.test_sink)
        self.env.execute("rows")
        self.assertEqual(sorted(self.test_sink.get_results()), ["(a,2)", "(b,3)"])

    def test_a_wrong_expectation_fails(self):
        ds = self.env.from_collection([1, 2])
        ds.add_sink(self.test_sink)
        self.env.execute("numbers")
        self.assertEqual(sorted(self.test_sink.get_results(True)), ["1", "3"])

    def test_the_gateway(self):
        get_gateway().jvm.org.apache.flink.Nothing()

    def test_a_java_function(self):
        self.env.add_source(SourceFunction("org.apache.flink.python.util.MySource"))

    def test_tables(self):
        StreamTableEnvironment.create(self.env)


class StreamingJobTests(JobTests, PyFlinkStreamingTestCase):
    pass
"""


def flink_python(tmp_path: Path) -> Path:
    root = tmp_path / "flink-python"
    for directory, name, text in [
        ("pyflink/datastream/tests", "test_jobs.py", TESTS),
        ("pyflink/datastream/tests", "test_util.py", "raise RuntimeError('never imported')\n"),
        ("pyflink/datastream/connectors/tests", "test_pulsar.py",
         "from pyflink.testing.test_case_utils import PyFlinkTestCase\n\n"
         "class PulsarTests(PyFlinkTestCase):\n    def test_read(self):\n        pass\n"),
        ("pyflink/common/tests", "test_gone.py",
         "from pyflink.common import NoSuchName\n"
         "from pyflink.testing.test_case_utils import PyFlinkTestCase\n\n"
         "class GoneTests(PyFlinkTestCase):\n    def test_a(self):\n        pass\n\n"
         "    def test_b(self):\n        pass\n"),
    ]:  # fmt: skip
        (root / directory).mkdir(parents=True, exist_ok=True)
        (root / directory / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_imports_are_rewritten_to_barrierflow_and_the_shims():
    rewritten = rewrite_source(TESTS)
    assert "from barrierflow.common import Row" in rewritten
    assert "shims.test_util import DataStreamTestSinkFunction" in rewritten
    assert "shims.jvm import get_gateway" in rewritten
    assert "shims.table import StreamTableEnvironment" in rewritten
    assert "get_j_env_configuration(self.env)" in rewritten
    assert "from pyflink" not in rewritten and "import pyflink" not in rewritten


def test_what_cannot_apply_is_found_with_its_reason():
    assert excluded_tests(TESTS) == {
        ("JobTests", "test_the_gateway"): JVM,
        ("JobTests", "test_a_java_function"): JAVA_CLASS,
        ("JobTests", "test_tables"): TABLE_API,
    }
    assert [t.name for t in collected_tests(TESTS)] == [
        "test_a_java_function", "test_a_wrong_expectation_fails",
        "test_rows_reach_the_sink_as_java_prints_them", "test_tables", "test_the_gateway",
    ]  # fmt: skip
    pulsar = module_exclusion("pyflink/datastream/connectors/tests/test_pulsar.py")
    assert "pulsar connector; barrierflow has none" in pulsar
    assert module_exclusion("pyflink/datastream/connectors/tests/test_file_system.py") is None
    assert module_exclusion("pyflink/datastream/tests/test_window.py") is None


@pytest.mark.spark
def test_the_run_counts_passes_failures_and_exclusions_with_their_reasons(tmp_path):
    source = flink_python(tmp_path / "src")
    done = subprocess.run(
        [sys.executable, "-m", "tests.compat.pyflink_unit_tests", "--flink-source",
         str(source), "--work-dir", str(tmp_path / "work")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, done.stderr[-3000:]
    summary = out[out.index("DataStream unit tests on barrierflow") :]
    assert "1 of 4 that apply passed; 3 failed; 4 excluded (8 in all)" in summary, summary
    assert "test_a_wrong_expectation_fails: AssertionError" in summary
    assert "pyflink/common/tests/test_gone.py (2 tests): module did not import" in summary
    assert "NoSuchName" in summary
    assert f"1  {JVM}" in summary and f"1  {JAVA_CLASS}" in summary
    assert "1  PyFlink's Java pulsar connector; barrierflow has none" in summary
