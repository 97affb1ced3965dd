"""The registry of state backends: a backend registered here alone (a trivial one wrapping the
heap backend) is chosen by its configuration key, configured by options of its own, made by the
runtime for every keyed operator, restored from its checkpoints, and shown by the REST API;
and no module outside the registry branches on a backend's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from barrierflow.client.planning import plan_job
from barrierflow.cluster.rest.flink_json import checkpoint_config
from barrierflow.config_option import Option
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.datastream.state_backend import EmbeddedRocksDBStateBackend, NamedStateBackend
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.state.backends import registry
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.backends.registry import (
    ROCKSDB,
    StateBackendConfig,
    StateBackendKind,
    backend_kind,
    register,
)
from barrierflow.testing.harness import StreamTaskHarness, operator

PACKAGE = Path(__file__).resolve().parents[3] / "barrierflow"


class LabelledHeap(HeapKeyedStateBackend):
    """The heap backend, carrying the label its kind's option gave it."""

    made: list[LabelledHeap] = []

    def __init__(self, max_parallelism, key_group_range, label: str) -> None:
        super().__init__(max_parallelism, key_group_range)
        self.label = label
        LabelledHeap.made.append(self)


def _labelled(config, max_parallelism, key_group_range, local_dir, recovery_dir):
    return LabelledHeap(max_parallelism, key_group_range, LABELLED.option(config, LABEL))


LABEL = "state.backend.labelled-heap.label"
LABELLED = StateBackendKind(
    "labelled-heap",
    "LabelledHeapStateBackend",
    _labelled,
    options=(Option(LABEL, str, "plain", "what the backend is labelled"),),
)


@pytest.fixture
def labelled():
    register(LABELLED)
    LabelledHeap.made.clear()
    yield LABELLED
    registry.unregister(LABELLED.name)


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield (value, count)


def planned_backend(conf: dict) -> tuple[StreamExecutionEnvironment, StateBackendConfig, dict]:
    """The backend a job of ``conf`` runs with, and its REST API's checkpoint configuration."""
    env = StreamExecutionEnvironment()
    env.configure(conf)
    env.from_source(NumberSequenceSource(1, 10), "s").sink_to(DiscardingSink())
    plan = plan_job(env._pipeline("registry"))
    return env, plan.task_config.state_backend, checkpoint_config(plan.checkpoint_settings())


def test_a_registered_backend_is_usable_end_to_end_through_the_registry_alone(labelled):
    env, config, rest = planned_backend({"state.backend.type": "Labelled-Heap", LABEL: "blue"})
    assert env.get_state_backend() == NamedStateBackend("labelled-heap")
    assert config == StateBackendConfig(kind="labelled-heap", options=((LABEL, "blue"),))
    assert not config.keeps_local_state and not config.incremental
    assert rest["state_backend"] == "LabelledHeapStateBackend"

    keyed = operator(TransformationKind.PROCESS, Count(), uid="count", key_selector=lambda v: v)
    h = StreamTaskHarness([keyed], state_backend=config).open()
    h.records(0, ["a", "b", "a"])
    h.barrier(0, 1)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    restored = h.restored(ack).open()
    restored.records(0, ["a"])
    restored.run_until_idle()
    assert restored.output_records() == [("a", 3)]
    assert [b.label for b in LabelledHeap.made] == ["blue", "blue"]  # made, then restored
    restored.close()
    h.close()


def test_the_kinds_options_are_parsed_once_into_what_subtasks_get():
    _, config, rest = planned_backend(
        {"state.backend.type": "rocksdb", "state.backend.rocksdb.block.cache-size": "1 mb"}
    )
    assert ROCKSDB.option(config, "state.backend.rocksdb.block.cache-size") == 1024**2
    assert ROCKSDB.option(config, "state.backend.rocksdb.writebuffer.size") == 64 * 1024**2
    assert config.keeps_local_state
    assert rest["state_backend"] == "EmbeddedRocksDBStateBackend"


def test_a_backend_set_in_code_keeps_its_settings_when_the_configuration_names_its_kind():
    env = StreamExecutionEnvironment()
    env.set_state_backend(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True))
    env.configure({"state.backend.type": "rocksdb"})
    assert env.get_state_backend() == EmbeddedRocksDBStateBackend(True)


def test_an_unknown_kind_is_refused_naming_the_registered_ones(labelled):
    with pytest.raises(ConfigurationError, match=r"state\.backend\.type.*'heap'.*one of hashmap, "
                       r"rocksdb, labelled-heap"):  # fmt: skip
        StreamExecutionEnvironment().configure({"state.backend.type": "heap"})
    with pytest.raises(ConfigurationError, match="unknown state backend 'heap'"):
        backend_kind("heap")


def test_a_kind_is_registered_once_with_options_of_its_own(labelled):
    with pytest.raises(ConfigurationError, match="registered already"):
        register(StateBackendKind("LABELLED-HEAP", "X", LABELLED.factory))
    stray = Option("state.backend.rocksdb.label", str, "", "x")
    with pytest.raises(ConfigurationError, match=r"under 'state\.backend\.mine\.'"):
        register(StateBackendKind("mine", "X", LABELLED.factory, options=(stray,)))
    assert "mine" not in [k.name for k in registry.registered()]


def _names_compared(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every comparison with a built-in backend's name, match cases included."""
    names = {"hashmap", "rocksdb"}

    def constants(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [c for e in node.elts for c in constants(e)]
        return []

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            operands = [node.value]
        else:
            continue
        found += [(node.lineno, c) for o in operands for c in constants(o) if c.lower() in names]
    return found


def test_no_module_outside_the_registry_compares_a_string_to_a_backends_name():
    registry_path = Path(registry.__file__).resolve()
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: compares with {name!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.resolve() != registry_path
        for line, name in _names_compared(ast.parse(path.read_text()))
    ]
    assert not offenders, f"{offenders}: ask state/backends/registry.py's kind instead"


def test_the_check_finds_comparisons_and_not_mentions():
    source = (
        '"""rocksdb in a docstring"""\n'
        'if kind == "rocksdb": pass\n'
        'if kind in ("hashmap", "x"): pass\n'
        'match kind:\n    case "RocksDB": pass\n'
        'label = "rocksdb"  # a mention, not a branch\n'
    )
    assert _names_compared(ast.parse(source)) == [(2, "rocksdb"), (3, "hashmap"), (5, "RocksDB")]
