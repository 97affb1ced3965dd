"""PyFlink's test modules changed for barrierflow: their imports only (``pyflink`` becomes
``barrierflow``; PyFlink's Java test harness, JVM gateway and Table API become the shims), and
the one expression that hands the environment's Java object to the harness. Which tests cannot
apply, each with its reason, is read from the source (``ast``): the modules of Java connectors,
and the tests that reach the JVM gateway, a Java class by name or the Table API.

Performs no I/O.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

SHIMS = "tests.compat.pyflink_unit_tests.shims"

# module prefix -> what replaces it (the longest prefix that matches wins)
_MODULES = {
    "pyflink.testing.test_case_utils": f"{SHIMS}.test_case_utils",
    "pyflink.datastream.tests.test_util": f"{SHIMS}.test_util",
    "pyflink.java_gateway": f"{SHIMS}.jvm",
    "pyflink.util.java_utils": f"{SHIMS}.jvm",
    "pyflink.find_flink_home": f"{SHIMS}.jvm",
    "pyflink.util.api_stability_decorators": f"{SHIMS}.jvm",
    "py4j.protocol": f"{SHIMS}.jvm",
    "py4j.java_gateway": f"{SHIMS}.jvm",
    "pyflink.table": f"{SHIMS}.table",
    "pyflink": "barrierflow",
}

JVM = "reaches PyFlink's JVM gateway or a Java object (get_gateway, _j_* handles, get_java_*)"
JAVA_CLASS = "names a Java class (org.apache.flink...) that runs in Flink's JVM"
TABLE_API = "uses the Table API (pyflink.table), which barrierflow does not have"
COMPLETENESS = "compares a Python class with its Java class through the JVM gateway"

# Modules none of whose tests can apply: PyFlink's Java connectors that barrierflow has no
# Python counterpart of (docs/pyflink-compatibility.md lists them). The tests of the connectors
# and formats it has (files, number sequences, Kafka, JDBC, CSV, JSON, Avro, Parquet, ORC) run,
# save those that inspect the Java objects (found test by test).
_NO_COUNTERPART = ("cassandra", "elasticsearch", "kinesis", "pulsar", "rabbitmq", "pubsub",
                   "dynamic_kafka", "hybrid_source")  # fmt: skip
_MODULE_REASONS = (
    *(
        (f"pyflink/datastream/connectors/tests/test_{name}.py",
         f"PyFlink's Java {name} connector; barrierflow has none")
        for name in _NO_COUNTERPART
    ),
    ("pyflink/datastream/tests/test_connectors.py", "PyFlink's Java connectors (Flink's JVM)"),
    ("pyflink/datastream/connectors/tests/test_connectors.py",
     "PyFlink's Java connectors (Flink's JVM)"),
)  # fmt: skip

_JVM_NAMES = frozenset(
    {"get_gateway", "invoke_java_object_method", "JavaObject", "load_java_class", "to_jarray"}
)

_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)([A-Za-z_][\w.]*)", re.MULTILINE)
_J_ENV = re.compile(r"get_j_env_configuration\(\s*([\w.]+?)\._j_stream_execution_environment\s*\)")
_J_CONFIGURATION = re.compile(r"\bConfiguration\(\s*j_configuration\s*=\s*")


def _replacement(module: str) -> str:
    for prefix in sorted(_MODULES, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            target = _MODULES[prefix]
            return target if target != "barrierflow" else "barrierflow" + module[len(prefix) :]
    return module


def rewrite_source(source: str) -> str:
    """``source`` with its imports pointing at barrierflow and the shims, and the environment
    given to the Java-configuration shim as the environment itself."""
    source = _IMPORT.sub(lambda m: m[1] + m[2] + m[3] + _replacement(m[4]), source)
    source = _J_ENV.sub(r"get_j_env_configuration(\1)", source)
    return _J_CONFIGURATION.sub("(", source)


def module_exclusion(path: str) -> str | None:
    """Why no test of the module at ``path`` (relative, ``pyflink/...``) applies, or None."""
    for start, reason in _MODULE_REASONS:
        if path.startswith(start):
            return reason
    if "completeness" in path.rsplit("/", 1)[-1]:
        return COMPLETENESS
    return None


@dataclass(frozen=True)
class CollectedTest:
    cls: str  # the test class that runs it
    defined_in: str  # the class whose body defines it
    name: str


def _table_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyflink.table"):
            names.update(a.asname or a.name for a in node.names)
    return names


def _reason_in(node: ast.AST, table: set[str], tainted: dict[str, str]) -> str | None:
    """Why the code of ``node`` cannot run on barrierflow, or None. The environment's Java
    handle may be given to ``get_j_env_configuration`` (the shim takes the environment)."""
    handed_over = {
        id(arg)
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "get_j_env_configuration"
        for arg in call.args
    }
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            if sub.id in _JVM_NAMES:
                return JVM
            if sub.id in table:
                return TABLE_API
            if sub.id in tainted:
                return tainted[sub.id]
        elif isinstance(sub, ast.Attribute):
            attr = sub.attr
            if (attr.startswith("_j_") or attr.startswith("j_")) and id(sub) not in handed_over:
                return JVM
            if attr.startswith("get_java_"):  # get_java_function(), get_java_object()...
                return JVM
        elif (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and sub.value.startswith("org.apache.flink.")
        ):
            return JAVA_CLASS
    return None


def _bases(cls: ast.ClassDef) -> list[str]:
    return [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases]


def collected_tests(source: str) -> list[CollectedTest]:
    """The tests unittest would collect: each ``test_*`` method of each class deriving, in
    the module, from a ``...TestCase`` base, inherited methods included (a subclass's
    override wins)."""
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def is_test_case(name: str, seen: frozenset = frozenset()) -> bool:
        if name.endswith("TestCase") and name not in classes:
            return True
        cls = classes.get(name)
        return (
            cls is not None
            and name not in seen
            and any(is_test_case(b, seen | {name}) for b in _bases(cls))
        )

    def methods(name: str) -> dict[str, str]:
        cls = classes.get(name)
        if cls is None:
            return {}
        found: dict[str, str] = {}
        for base in reversed(_bases(cls)):  # the first base wins, as in the MRO
            found.update(methods(base))
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                found[node.name] = name
        return found

    tests = []
    for name, cls in classes.items():
        if name.endswith("TestCase") or not any(is_test_case(b) for b in _bases(cls)):
            continue
        tests += [CollectedTest(name, where, m) for m, where in sorted(methods(name).items())]
    return tests


def _holds_tests(cls: ast.ClassDef) -> bool:
    """A test class or a mixin of tests, not a helper of the tests."""
    return "TestCase" in "".join(_bases(cls)) or any(
        isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in cls.body
    )


def excluded_tests(source: str) -> dict[tuple[str, str], str]:
    """(defining class, method) -> why the test cannot apply, for the tests that cannot: they
    reach the JVM gateway, a Java class or the Table API, themselves, through a helper of the
    module, or through their class's ``setUp``."""
    tree = ast.parse(source)
    table = _table_names(tree)
    tainted: dict[str, str] = {}
    for _ in range(2):  # helpers that use helpers
        for node in tree.body:
            helper = isinstance(node, ast.FunctionDef) or (
                isinstance(node, ast.ClassDef) and not _holds_tests(node)
            )
            if helper and node.name not in tainted:
                reason = _reason_in(node, table, tainted)
                if reason is not None:
                    tainted[node.name] = reason
    excluded: dict[tuple[str, str], str] = {}
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for cls in classes:
        set_up_reason = None
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name in ("setUp", "setUpClass"):
                set_up_reason = set_up_reason or _reason_in(node, table, tainted)
        if "PythonAPICompletenessTestCase" in _bases(cls):
            set_up_reason = COMPLETENESS
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                reason = set_up_reason or _reason_in(node, table, tainted)
                if reason is not None:
                    excluded[(cls.name, node.name)] = reason
    return excluded
