"""PyFlink's test bases (``pyflink.testing.test_case_utils``) on barrierflow: where PyFlink's
run their jobs on a Java mini cluster (``MiniClusterWithClientResource``), these run them on
barrierflow's embedded Spark master; a class's environment is made once, at parallelism 2, as
PyFlink's ``TestStreamEnvironment`` is."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from typing import Any

from barrierflow.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from tests.compat.pyflink_unit_tests.shims.jvm import (  # noqa: F401 - PyFlink's names
    _unavailable as exec_insert_table,
)


class PyFlinkTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tempdir = tempfile.mkdtemp()
        os.environ["FLINK_TESTING"] = "1"

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tempdir, ignore_errors=True)

    @classmethod
    def assert_equals(cls, actual: Any, expected: Any) -> None:
        actual_list = list(actual)
        actual_list.sort()
        expected.sort()
        assert len(actual_list) == len(expected)
        assert all(x == y for x, y in zip(actual_list, expected, strict=True))

    @classmethod
    def to_py_list(cls, actual: Any) -> list[Any]:
        return list(actual)


class PyFlinkITTestCase(PyFlinkTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.env = StreamExecutionEnvironment.get_execution_environment()
        cls.env.set_parallelism(2)


class PyFlinkStreamingTestCase(PyFlinkITTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.env.set_parallelism(2)
        cls.env.set_runtime_mode(RuntimeExecutionMode.STREAMING)


class PyFlinkBatchTestCase(PyFlinkITTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.env.set_parallelism(2)
        cls.env.set_runtime_mode(RuntimeExecutionMode.BATCH)


class _TableTestCase(PyFlinkITTestCase):
    """PyFlink's Table API test bases: their tests are excluded (no Table API here)."""


PyFlinkUTTestCase = PyFlinkStreamTableTestCase = PyFlinkBatchTableTestCase = _TableTestCase


class PythonAPICompletenessTestCase:
    """Compares a Python class with its Java class through the JVM gateway: excluded."""


def replace_uuid(input_obj: Any) -> Any:
    import re

    if isinstance(input_obj, str):
        return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "{uuid}",
                      input_obj)  # fmt: skip
    if isinstance(input_obj, dict):
        return {replace_uuid(k): replace_uuid(v) for k, v in input_obj.items()}
    return input_obj
