"""The dependency rule of ARCHITECTURE.md ("Layers"), read from the code's imports with ``ast``.

Imports point down only; the two halves of the checkpoint protocol (driver-side coordination and
the task-side runtime) do not import each other; the pure modules import no I/O; and there is no
import circle. Imports under ``if TYPE_CHECKING:`` do not run and are not counted; imports inside
functions run and are.
"""

from __future__ import annotations

import ast
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
            "barrierflow.type_conversion",
            "barrierflow.java_strings",
            "barrierflow.msgpack_types",
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
    "barrierflow.java_strings",
    "barrierflow.msgpack_types",
    "barrierflow.common.types",
    "barrierflow.row",
    "barrierflow.datastream.output_tag",
    "barrierflow.type_conversion",
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
    "barrierflow.client.pipeline",
    "barrierflow.client.dry_run",
    "barrierflow.state_processor.read_plan",
    "barrierflow.runtime.async_element_queue",
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

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports_of(path: Path) -> list[Import]:
    source = module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    skipped = _type_checking_lines(tree)
    found: list[Import] = []
    for node in ast.walk(tree):
        if node.lineno in skipped if hasattr(node, "lineno") else False:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from package import module`` imports the module itself.
            names = [
                f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module
                for a in node.names
            ]
        else:
            continue
        for name in names:
            target = name if name.startswith("barrierflow") else name.split(".")[0]
            found.append(Import(source, target, path, node.lineno))
    return found


ALL_IMPORTS = [i for p in sorted(PACKAGE.rglob("*.py")) for i in imports_of(p)]
INTERNAL = [i for i in ALL_IMPORTS if i.target.startswith("barrierflow")]


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def place_of(module: str) -> tuple[int, int]:
    """(layer, position in the layer) of the package or top-level module ``module`` is in. The
    root package ``barrierflow`` matches only itself: no catch-all."""
    for index, (_, packages) in enumerate(LAYERS):
        for position, package in enumerate(packages):
            if module == package or (package != "barrierflow" and _matches(module, package)):
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


def test_imports_point_down_only():
    wrong = [
        f"{i.where()}: {i.source} ({LAYERS[layer_of(i.source)][0]}) imports {i.target} "
        f"({LAYERS[layer_of(i.target)][0]}), a higher layer"
        for i in INTERNAL
        if layer_of(i.target) > layer_of(i.source)
    ]
    assert not wrong, "\n".join(wrong)


def test_packages_of_a_layer_import_only_those_before_them():
    wrong = [
        f"{i.where()}: {i.source} imports {i.target}, but {_package_name(i.target)} comes "
        f"after {_package_name(i.source)} in their layer"
        for i in INTERNAL
        if layer_of(i.target) == layer_of(i.source)
        and place_of(i.target)[1] > place_of(i.source)[1]
        and not _separate(i.source, i.target)  # reported by the test of separate packages
    ]
    assert not wrong, "\n".join(wrong)


def _separate(a: str, b: str) -> bool:
    return any(
        (_matches(a, x) and _matches(b, y)) or (_matches(a, y) and _matches(b, x))
        for x, y in SEPARATE
    )


def test_runtime_and_coordination_do_not_import_each_other():
    wrong = [
        f"{i.where()}: {i.source} imports {i.target}"
        for a, b in SEPARATE
        for i in INTERNAL
        if (_matches(i.source, a) and _matches(i.target, b))
        or (_matches(i.source, b) and _matches(i.target, a))
    ]
    assert not wrong, "\n".join(wrong)


def _is_pure(module: str) -> bool:
    return any(_matches(module, p) for p in PURE)


def test_pure_modules_import_no_io_and_only_pure_modules():
    assert all(is_module(p) for p in PURE), [p for p in PURE if not is_module(p)]
    wrong = []
    for i in ALL_IMPORTS:
        if not _is_pure(i.source):
            continue
        if i.target in IMPURE_LIBRARIES:
            wrong.append(f"{i.where()}: pure {i.source} imports {i.target}")
        elif i.target.startswith("barrierflow") and not (
            _is_pure(i.target) or i.target in ("barrierflow", *_packages_of_pure())
        ):
            wrong.append(f"{i.where()}: pure {i.source} imports {i.target}, which is not pure")
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
    graph: dict[str, set[str]] = {}
    for i in INTERNAL:
        if i.target != i.source:
            graph.setdefault(i.source, set()).add(i.target)
    circle = _cycle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


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
