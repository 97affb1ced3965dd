"""The dependency rule of ARCHITECTURE.md ("Layers"), read from the code's imports with ``ast``.

Imports point down only; the two halves of the checkpoint protocol (driver-side coordination and
the task-side runtime) do not import each other; the pure modules import no I/O; and neither
modules nor packages import each other in a circle.

What counts as an import: every ``import`` and ``from ... import`` (inside functions too: they
run); the modules a module names to ``importlib.import_module`` (lazy re-exports); and imports
under ``if TYPE_CHECKING:``, which never run but are dependencies a reader sees: the rules of
direction and the package circle count them, the purity and module circle rules (about what
runs) do not. A package's ``__init__.py`` is a module of its own, its face (``pkg.__init__``):
``from pkg import name`` imports the face, ``from pkg import module`` the module.
"""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "barrierflow"

# Lowest layer first; within a layer, its packages (and top-level modules) in order, lowest
# first. A module may import modules of a lower layer, of its own package, and of a package
# listed before its own in its layer: so packages of one layer form no circle either. Every
# package and top-level module is named here, and a module of one that is not fails the test.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "barrierflow.lazy_names",
            "barrierflow.errors",
            "barrierflow.human_units",
            "barrierflow.config_option",
            "barrierflow.common.typeinfo",
            "barrierflow.common.types",
            "barrierflow.row",
            "barrierflow.declared_types",
            "barrierflow.metrics",
            "barrierflow.datastream.output_tag",
            "barrierflow.eventtime",
            "barrierflow.datastream.functions",
            "barrierflow.graph",
            "barrierflow.protocol",
        ),
    ),
    (
        "checkpoint formats and storage, state, windows, control messages",
        (
            "barrierflow.checkpoint",
            "barrierflow.state",
            "barrierflow.windowing",
            "barrierflow.control",
        ),
    ),
    ("connectors", ("barrierflow.connectors",)),
    (
        "task runtime and driver-side coordination",
        ("barrierflow.runtime", "barrierflow.coordination"),
    ),
    ("cluster", ("barrierflow.cluster",)),
    ("submission", ("barrierflow.client",)),
    (
        "user surface",
        (
            "barrierflow.datastream.state_backend",
            "barrierflow.api",
            "barrierflow.state_processor",
            "barrierflow.testing",
            "barrierflow.common",
            "barrierflow.datastream",
        ),
    ),
    ("entry points", ("barrierflow.cli", "barrierflow")),
)

# Packages of one layer that must not import each other, whatever their order.
SEPARATE = (("barrierflow.runtime", "barrierflow.coordination"),)

# Modules that perform no I/O: they take events and facts and return decisions. They import
# only each other and no library that reaches outside the process (or reads its clock).
PURE = (
    "barrierflow.lazy_names",
    "barrierflow.errors",
    "barrierflow.config_option",
    "barrierflow.eventtime",
    "barrierflow.human_units",
    "barrierflow.declared_types",
    "barrierflow.common.types",
    "barrierflow.row",
    "barrierflow.datastream.output_tag",
    "barrierflow.common.typeinfo",
    "barrierflow.graph",
    "barrierflow.protocol",
    "barrierflow.state.descriptors",
    "barrierflow.state.state_ttl_config",
    "barrierflow.state.key_groups",
    "barrierflow.state.timer_queue",
    "barrierflow.state.ttl_state",
    "barrierflow.state.state_schema",
    "barrierflow.state.schema_evolution",
    "barrierflow.state.typed_state",
    "barrierflow.state.user_state",
    "barrierflow.state.value_codec",
    "barrierflow.state.backends.predefined_options",
    "barrierflow.windowing",
    "barrierflow.checkpoint.barrier_handler",
    "barrierflow.checkpoint.fsck",
    "barrierflow.checkpoint.history",
    "barrierflow.checkpoint.key_group_format",
    "barrierflow.checkpoint.key_group_tables",
    "barrierflow.checkpoint.metadata",
    "barrierflow.checkpoint.restore",
    "barrierflow.checkpoint.storage_layout",
    "barrierflow.control.operator_coordinator",
    "barrierflow.coordination.checkpoint_completion",
    "barrierflow.coordination.checkpoint_failure_manager",
    "barrierflow.coordination.checkpoint_request_decider",
    "barrierflow.coordination.completed_checkpoint_store",
    "barrierflow.coordination.coordinator_storage",
    "barrierflow.coordination.pending_checkpoint",
    "barrierflow.coordination.shared_state_registry",
    "barrierflow.coordination.state_assignment",
    "barrierflow.coordination.state_mapping",
    "barrierflow.coordination.operator_coordinator_checkpoints",
    "barrierflow.cluster.attempt",
    "barrierflow.cluster.python_dependencies",
    "barrierflow.client.pipeline",
    "barrierflow.client.dry_run",
    "barrierflow.state_processor.read_plan",
    "barrierflow.runtime.async_element_queue",
    "barrierflow.runtime.network.buffer_debloater",
    "barrierflow.connectors.interfaces",
    "barrierflow.connectors.source",
    "barrierflow.connectors.sink",
    "barrierflow.connectors.source_reader",
    "barrierflow.connectors.split_enumerator",
    "barrierflow.connectors.job_settings",
    "barrierflow.connectors.base.split_reader",
    "barrierflow.connectors.base.sequential_split_reader",
    "barrierflow.connectors.base.static_split_enumerator",
    "barrierflow.connectors.base.static_split_source",
    "barrierflow.connectors.base.struct_codec",
    "barrierflow.connectors.base.batch_map",
    "barrierflow.connectors.builtin.range_reader",
    "barrierflow.connectors.builtin.number_sequence_source",
    "barrierflow.connectors.builtin.collection_source",
    "barrierflow.connectors.builtin.discarding_sink",
    "barrierflow.connectors.files.file_enumerator",
    "barrierflow.connectors.files.file_split",
    "barrierflow.connectors.files.file_committable",
    "barrierflow.connectors.tables.table_file_split",
    "barrierflow.connectors.kafka.partition_split",
    "barrierflow.connectors.kafka.sink_committable",
    "barrierflow.connectors.postgres.committable",
    "barrierflow.connectors.delta.delta_committable",
    "barrierflow.connectors.iceberg.iceberg_committable",
    "barrierflow.connectors.spark_table.spark_table_committable",
    "barrierflow.connectors.delta.delta_paths",
    "barrierflow.connectors.spark_table.catalog_table",
    "barrierflow.connectors.spark_table.table_commit",
    "barrierflow.connectors.formats.row_fields",
    "barrierflow.connectors.formats.csv_line",
    "barrierflow.connectors.formats.csv_fields",
    "barrierflow.connectors.formats.csv_row",
    "barrierflow.connectors.formats.csv_schema",
    "barrierflow.connectors.formats.json_row",
)
IMPURE_LIBRARIES = frozenset(
    {
        "fsspec",
        "os",
        "pathlib",
        "pyarrow",
        "pyspark",
        "rocksdict",
        "shutil",
        "socket",
        "subprocess",
        "tempfile",
        "threading",
        "time",
        "zmq",
    }
)


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (a barrierflow module or a top-level library)
    path: Path
    line: int
    type_checking: bool = False  # under ``if TYPE_CHECKING:``

    def where(self) -> str:
        where = f"{self.path.relative_to(ROOT)}:{self.line}"
        return f"{where} (under TYPE_CHECKING)" if self.type_checking else where


def module_name(path: Path) -> str:
    """A package's ``__init__.py`` is named ``package.__init__``: its face, a module of its own."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _face(name: str) -> str:
    """The module an import of ``name`` runs: the face of a package, or the module itself."""
    is_package = (ROOT.joinpath(*name.split(".")) / "__init__.py").is_file()
    return f"{name}.__init__" if is_package else name


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def _imports_by_name(tree: ast.Module) -> bool:
    """Whether the module imports modules by name (``importlib.import_module``): then every
    string in it that names a barrierflow module is an import (a lazy re-export)."""
    return any(
        isinstance(node, ast.Call)
        and "import_module" in (getattr(node.func, "attr", None), getattr(node.func, "id", None))
        for node in ast.walk(tree)
    )


def _imported_names(node: ast.AST, by_name: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        # ``from package import module`` imports the module; ``from package import name``,
        # the package's face
        return [
            f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module
            for a in node.names
        ]
    if by_name and isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (
            [node.value] if node.value.startswith("barrierflow.") and is_module(node.value) else []
        )
    return []


def imports_in(source: str, path: Path, text: str) -> list[Import]:
    tree = ast.parse(text, str(path))
    typing_only = _type_checking_lines(tree)
    by_name = _imports_by_name(tree)
    found: list[Import] = []
    for node in ast.walk(tree):
        for name in _imported_names(node, by_name):
            target = _face(name) if name.startswith("barrierflow") else name.split(".")[0]
            line = node.lineno
            found.append(Import(source, target, path, line, line in typing_only))
    return sorted(found, key=lambda i: i.line)


def imports_of(path: Path) -> list[Import]:
    return imports_in(module_name(path), path, path.read_text())


ALL_IMPORTS = [i for p in sorted(PACKAGE.rglob("*.py")) for i in imports_of(p)]
INTERNAL = [i for i in ALL_IMPORTS if i.target.startswith("barrierflow")]
RUNNING = [i for i in ALL_IMPORTS if not i.type_checking]


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def place_of(module: str) -> tuple[int, int]:
    """(layer, position in the layer) of the package or top-level module ``module`` is in; a
    package's face is in the package. The root package ``barrierflow`` matches only itself
    (and its face): no catch-all."""
    name = module.removesuffix(".__init__")
    for index, (_, packages) in enumerate(LAYERS):
        for position, package in enumerate(packages):
            if name == package or (package != "barrierflow" and _matches(name, package)):
                return index, position
    raise LookupError(
        f"{module} is in no package that tests/unit/test_layers.py knows: add its package to "
        "LAYERS, in its layer and in order"
    )


def layer_of(module: str) -> int:
    return place_of(module)[0]


def _package_name(module: str) -> str:
    index, position = place_of(module)
    return LAYERS[index][1][position]


def test_every_module_of_the_package_has_a_layer():
    unknown = []
    for path in PACKAGE.rglob("*.py"):
        try:
            place_of(module_name(path))
        except LookupError as e:
            unknown.append(str(e))
    assert not unknown, "\n".join(unknown)


def test_a_package_nobody_listed_is_refused():
    with pytest.raises(LookupError, match=r"barrierflow\.newcomer\.module is in no package"):
        place_of("barrierflow.newcomer.module")


def test_every_listed_package_exists():
    assert all(is_module(p) for _, packages in LAYERS for p in packages)


def _upward(imports: list[Import]) -> list[str]:
    return [
        f"{i.where()}: {i.source} ({LAYERS[layer_of(i.source)][0]}) imports {i.target} "
        f"({LAYERS[layer_of(i.target)][0]}), a higher layer"
        for i in imports
        if i.target.startswith("barrierflow") and layer_of(i.target) > layer_of(i.source)
    ]


def test_imports_point_down_only():
    wrong = _upward(INTERNAL)
    assert not wrong, "\n".join(wrong)


def _out_of_order(imports: list[Import]) -> list[str]:
    return [
        f"{i.where()}: {i.source} imports {i.target}, but {_package_name(i.target)} comes "
        f"after {_package_name(i.source)} in their layer"
        for i in imports
        if i.target.startswith("barrierflow")
        and layer_of(i.target) == layer_of(i.source)
        and place_of(i.target)[1] > place_of(i.source)[1]
        and not _separate(i.source, i.target)  # reported by the test of separate packages
    ]


def test_packages_of_a_layer_import_only_those_before_them():
    wrong = _out_of_order(INTERNAL)
    assert not wrong, "\n".join(wrong)


def _separate(a: str, b: str) -> bool:
    return any(
        (_matches(a, x) and _matches(b, y)) or (_matches(a, y) and _matches(b, x))
        for x, y in SEPARATE
    )


def test_runtime_and_coordination_do_not_import_each_other():
    wrong = [
        f"{i.where()}: {i.source} imports {i.target}"
        for i in INTERNAL
        if _separate(i.source, i.target)
    ]
    assert not wrong, "\n".join(wrong)


def _is_pure(module: str) -> bool:
    return any(_matches(module, p) for p in PURE)


def _impure(imports: list[Import]) -> list[str]:
    """What pure modules import that is not pure: a library that reaches outside the process,
    or a barrierflow module (or package face) that is not itself pure."""
    wrong = []
    for i in imports:
        if not _is_pure(i.source) or i.type_checking:  # an import that never runs does no I/O
            continue
        if i.target in IMPURE_LIBRARIES:
            wrong.append(f"{i.where()}: pure {i.source} imports {i.target}")
        elif i.target.startswith("barrierflow") and not _is_pure(i.target):
            wrong.append(f"{i.where()}: pure {i.source} imports {i.target}, which is not pure")
    return wrong


def test_pure_modules_import_no_io_and_only_pure_modules():
    assert all(is_module(p) for p in PURE), [p for p in PURE if not is_module(p)]
    wrong = _impure(ALL_IMPORTS)
    assert not wrong, "\n".join(wrong)


def _packages_of_pure() -> set[str]:
    return {p.rsplit(".", 1)[0] for p in PURE}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph``, as a path that returns to its start, if any."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_there_is_no_import_circle():
    """Between modules, counting what runs: a circle through ``if TYPE_CHECKING:`` inside one
    package is how two classes that name each other in annotations are written."""
    graph: dict[str, set[str]] = {}
    for i in RUNNING:
        if i.target.startswith("barrierflow") and i.target != i.source:
            graph.setdefault(i.source, set()).add(i.target)
    circle = _cycle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle)


def _package_circle(imports: list[Import]) -> str | None:
    """A circle of the packages of ``LAYERS``, each step named by one import that makes it."""
    graph: dict[str, set[str]] = {}
    witness: dict[tuple[str, str], Import] = {}
    for i in imports:
        if not i.target.startswith("barrierflow"):
            continue
        edge = (_package_name(i.source), _package_name(i.target))
        if edge[0] != edge[1]:
            graph.setdefault(edge[0], set()).add(edge[1])
            witness.setdefault(edge, i)
    circle = _cycle(graph)
    if circle is None:
        return None
    steps = [witness[edge] for edge in itertools.pairwise(circle)]
    return (
        "package circle: "
        + " -> ".join(circle)
        + "".join(f"\n  {i.where()}: {i.source} imports {i.target}" for i in steps)
    )


def test_there_is_no_package_circle_even_through_type_checking_imports():
    circle = _package_circle(INTERNAL)
    assert circle is None, circle


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


def _imports_of_text(module: str, text: str) -> list[Import]:
    path = ROOT.joinpath(*module.removesuffix(".__init__").split("."))
    path = path / "__init__.py" if module.endswith(".__init__") else path.with_suffix(".py")
    return imports_in(module, path, text)


def test_from_a_package_a_name_imports_its_face_and_a_module_that_module():
    imports = _imports_of_text(
        "barrierflow.runtime.task",
        "from barrierflow.state import ValueStateDescriptor, key_groups\n"
        "import barrierflow.protocol\n"
        "import barrierflow.errors\n",
    )
    assert [i.target for i in imports] == [
        "barrierflow.state.__init__",
        "barrierflow.state.key_groups",
        "barrierflow.protocol.__init__",
        "barrierflow.errors",
    ]


def test_an_init_that_re_exports_from_a_higher_layer_breaks_the_rule():
    imports = _imports_of_text(
        "barrierflow.windowing.__init__",
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "from barrierflow.windowing.windows import TimeWindow\n"
        "_LAZY = {'StreamExecutionEnvironment': 'barrierflow.api.environment'}\n"
        "def __getattr__(name):\n"
        "    return getattr(importlib.import_module(_LAZY[name]), name)\n"
        "if TYPE_CHECKING:\n"
        "    from barrierflow.cluster.job_outcome import JobStatus\n",
    )
    wrong = _upward(imports)
    assert len(wrong) == 2, wrong
    assert wrong[0].startswith(
        "barrierflow/windowing/__init__.py:4: barrierflow.windowing.__init__"
    )
    assert "imports barrierflow.api.environment" in wrong[0]
    assert wrong[1].startswith("barrierflow/windowing/__init__.py:8 (under TYPE_CHECKING): ")
    assert "imports barrierflow.cluster.job_outcome" in wrong[1]


def test_a_pure_module_may_not_import_the_face_of_a_package_that_is_not_pure():
    imports = _imports_of_text(
        "barrierflow.state.key_groups",
        "from barrierflow.state import ValueStateDescriptor\n"
        "from barrierflow.windowing import windows\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from barrierflow.state.backend import KeyedStateBackend\n",
    )
    assert _impure(imports) == [
        "barrierflow/state/key_groups.py:1: pure barrierflow.state.key_groups imports "
        "barrierflow.state.__init__, which is not pure"
    ]


def test_a_type_checking_import_makes_a_package_circle():
    imports = _imports_of_text(
        "barrierflow.checkpoint.key_group_format",
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from barrierflow.state.backend import KeyedStateBackend\n",
    ) + _imports_of_text(
        "barrierflow.state.backend", "from barrierflow.checkpoint.metadata import StreamHandle\n"
    )
    circle = _package_circle(imports)
    assert circle is not None
    assert circle.startswith("package circle: barrierflow.checkpoint -> barrierflow.state -> ")
    assert "key_group_format.py:3 (under TYPE_CHECKING)" in circle


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(m for m in sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return set(out.split())


@pytest.mark.parametrize(
    "statement",
    ["import barrierflow.runtime.task_executor", "import barrierflow.runtime.task"],
)
def test_an_executor_importing_the_runtime_loads_neither_the_api_nor_the_job_master(statement):
    loaded = _loaded_after(statement)
    unwanted = {
        m
        for m in loaded
        if _matches(m, "barrierflow.api")
        or _matches(m, "barrierflow.cluster")
        or _matches(m, "barrierflow.coordination")
        or m.split(".")[0] in ("yaml", "pyspark", "typer", "rich", "py4j")
    }
    assert not unwanted, sorted(unwanted)


def test_importing_the_barrier_handler_loads_only_the_pure_protocol():
    loaded = _loaded_after("import barrierflow.checkpoint.barrier_handler")
    ours = {m for m in loaded if m.startswith("barrierflow")}
    assert all(_is_pure(m) or m in ("barrierflow", *_packages_of_pure()) for m in ours), ours
    assert not {"zmq", "pyarrow", "yaml", "pyspark"} & {m.split(".")[0] for m in loaded}


def test_import_barrierflow_is_lazy_and_its_old_names_still_load():
    loaded = _loaded_after("import barrierflow")
    assert {m for m in loaded if m.startswith("barrierflow")} == {
        "barrierflow",
        "barrierflow.lazy_names",
    }
    import barrierflow

    for name in barrierflow.__all__:  # deprecated, each: tests/compat/test_deprecated_paths.py
        with pytest.warns(DeprecationWarning):
            assert getattr(barrierflow, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        barrierflow.Nope  # noqa: B018


@pytest.mark.parametrize(
    "statement",
    [
        "import barrierflow.state_processor",
        "from barrierflow.state_processor import SavepointReader, SavepointWriter",
    ],
)
def test_the_state_processor_loads_spark_only_when_it_reads_or_writes(statement):
    loaded = _loaded_after(statement)
    assert not {"pyspark", "py4j"} & {m.split(".")[0] for m in loaded}
