"""env.get_execution_plan() as Flink's plan JSON, DataStream.get_name(), and project() on a
tuple stream, as PyFlink has them."""

from __future__ import annotations

import json

import pytest

from barrierflow.api.function_adapters import Projection
from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.errors import ConfigurationError


def test_the_execution_plan_lists_operators_with_their_predecessors_and_partitioners():
    env = StreamExecutionEnvironment().set_parallelism(2)
    numbers = env.from_collection([1, 2, 3])
    numbers.map(lambda x: (x % 2, x)).name("pair").key_by(lambda p: p[0]).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    ).sink_to(DiscardingSink()).name("out")
    plan = json.loads(env.get_execution_plan())["nodes"]
    by_type = {n["type"]: n for n in plan}
    assert list(by_type) == ["Source: Collection Source", "pair", "Reduce", "Sink: out"]
    source, pair, reduce, sink = plan
    assert (source["pact"], source["parallelism"]) == ("Data Source", 1)
    assert pair["predecessors"] == [{"id": source["id"], "ship_strategy": "REBALANCE",
                                     "side": "second"}]  # fmt: skip
    assert reduce["predecessors"][0]["ship_strategy"] == "HASH"
    assert sink["pact"] == "Data Sink" and sink["predecessors"][0]["id"] == reduce["id"]
    assert "predecessors" not in source


def test_the_plan_is_that_of_the_next_job_only():
    env = StreamExecutionEnvironment()
    numbers = env.from_collection([1])
    numbers.sink_to(DiscardingSink()).name("first")
    env._end_job()
    numbers.map(str).sink_to(DiscardingSink()).name("second")
    types = [n["type"] for n in json.loads(env.get_execution_plan())["nodes"]]
    assert types == ["Source: Collection Source", "Map", "Sink: second"]


def test_a_stream_is_named_by_its_operator():
    env = StreamExecutionEnvironment()
    assert env.from_collection([1]).map(str).name("to text").get_name() == "to text"
    assert env.from_collection([1]).get_name() == "Collection Source"


def test_project_keeps_the_chosen_fields_of_a_tuple_stream_and_their_types():
    env = StreamExecutionEnvironment()
    typed = Types.TUPLE([Types.STRING(), Types.INT(), Types.DOUBLE()])
    stream = env.from_collection([("a", 1, 0.5)], type_info=typed).project(2, 0)
    assert stream.get_type() == Types.TUPLE([Types.DOUBLE(), Types.STRING()])
    assert stream.get_transformation().function(("a", 1, 0.5)) == (0.5, "a")
    assert Projection((1,))(("a", 1)) == (1,)


@pytest.mark.parametrize(
    ("type_info", "indexes", "message"),
    [
        (None, (0,), "declared type Types.TUPLE"),
        (Types.ROW([Types.INT()]), (0,), "declared type Types.TUPLE"),
        (Types.TUPLE([Types.INT()]), (1,), "field positions of the tuple"),
        (Types.TUPLE([Types.INT()]), (), "field positions of the tuple"),
    ],
)
def test_project_is_refused_where_pyflink_refuses_it(type_info, indexes, message):
    env = StreamExecutionEnvironment()
    stream = env.from_collection([(1,)], type_info=type_info)
    with pytest.raises(ConfigurationError, match=message):
        stream.project(*indexes)


def test_a_union_of_keyed_streams_reads_the_values_of_each_as_pyflinks_plan_shows():
    env = StreamExecutionEnvironment().set_parallelism(2)
    small, large = env.from_collection([1, 2, 3]), env.from_collection([4, 5, 6])
    small.key_by(lambda x: x).union(large.key_by(lambda x: x)).sink_to(DiscardingSink())
    plan = json.loads(env.get_execution_plan())["nodes"]
    values = [n for n in plan if n["type"] == "_keyed_stream_values_operator"]
    (sink,) = [n for n in plan if n["pact"] == "Data Sink"]
    assert len(values) == 2
    assert sorted(p["id"] for p in sink["predecessors"]) == sorted(n["id"] for n in values)
    assert {v["predecessors"][0]["ship_strategy"] for v in values} == {"HASH"}


def test_execute_and_collect_gathers_in_one_subtask_as_flinks_collect_sink():
    env = StreamExecutionEnvironment().set_parallelism(2)
    words = ["pyflink", "datastream", "execute", "collect"]
    stream = env.from_collection(words)
    stream.sink_to(DiscardingSink())
    env._end_job()
    collect_sinks = []
    original = env.execute_async

    def planned(job_name="barrierflow job"):
        collect_sinks.extend(
            n for n in json.loads(env.get_execution_plan())["nodes"] if n["type"] == "Sink: Collect"
        )
        raise RuntimeError("planned only")

    env.execute_async = planned
    with pytest.raises(RuntimeError, match="planned only"):
        stream.execute_and_collect()
    env.execute_async = original
    assert [n["parallelism"] for n in collect_sinks] == [1]
    assert collect_sinks[0]["predecessors"][0]["ship_strategy"] == "FORWARD"
