"""A sink that ``SupportsPreprocessing`` writes the stream its transformer builds, as in
PyFlink's ``DataStream.sink_to``."""

from __future__ import annotations

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.base import StreamTransformer, SupportsPreprocessing
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.graph.transformation import TransformationKind


class Doubling(StreamTransformer):
    def apply(self, ds):
        return ds.map(lambda v: v * 2, output_type=Types.LONG()).name("doubling")


class PreprocessedSink(DiscardingSink, SupportsPreprocessing):
    def __init__(self, transformer):
        super().__init__()
        self.transformer = transformer
        self.input_type = None

    def get_transformer(self):
        return self.transformer

    def set_input_type(self, type_info):
        self.input_type = type_info


def sink_input(env, sink):
    ds = env.from_collection([1, 2], Types.INT())
    return ds.sink_to(sink)._transformation.inputs[0]


def test_sink_to_writes_the_stream_its_transformer_builds():
    env = StreamExecutionEnvironment.get_execution_environment()
    sink = PreprocessedSink(Doubling())
    written = sink_input(env, sink)
    assert written.kind is TransformationKind.MAP and written.name == "doubling"
    assert sink.input_type == Types.LONG()


def test_sink_to_without_a_transformer_writes_the_stream_itself():
    env = StreamExecutionEnvironment.get_execution_environment()
    sink = PreprocessedSink(None)
    written = sink_input(env, sink)
    assert written.kind is TransformationKind.SOURCE
    assert sink.input_type == Types.INT()
