"""Page views from a Kafka topic of JSON events, counted per page and upserted into PostgreSQL
exactly once.

Each event is ``{"page": "/home", "user": "u1"}``. The job keeps a running count per page and
writes ``(page, views)`` with an upsert, in transactions prepared at each checkpoint and
committed when it completes (``max_prepared_transactions`` must be above 0 on the server).

Run against a broker and a server of your own::

    pip install 'barrierflow[kafka,postgres]'
    export KAFKA_BOOTSTRAP=localhost:9092 POSTGRES_CONNINFO="host=localhost dbname=app user=app"
    barrierflow run examples/kafka_to_postgres.py

It creates the table ``page_views`` if missing, reads the topic ``page-views`` from the start
(``KAFKA_TOPIC`` to change it) and ends when it has read what the topic held when it started.
"""

import os

from barrierflow.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource
from barrierflow.datastream.connectors.postgres import PostgresSink
from barrierflow.datastream.formats.json import JsonRowDeserializationSchema
from barrierflow.datastream.state import ValueStateDescriptor

UPSERT = (
    "INSERT INTO page_views (page, views) VALUES (%s, %s) "
    "ON CONFLICT (page) DO UPDATE SET views = EXCLUDED.views"
)


class CountViews(KeyedProcessFunction):
    def open(self, runtime_context):
        self.views = runtime_context.get_state(ValueStateDescriptor("views"))

    def process_element(self, event, ctx):
        views = (self.views.value() or 0) + 1
        self.views.update(views)
        yield (event["page"], views)


def build(
    env: StreamExecutionEnvironment, bootstrap: str, topic: str, conninfo: str, checkpoints: str
) -> StreamExecutionEnvironment:
    env.enable_checkpointing(1000)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoints)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_group_id("page-views")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(JsonRowDeserializationSchema.builder().build())
        .build()
    )
    (
        env.from_source(source, "page-view events")
        .key_by(lambda event: event["page"])
        .process(CountViews())
        .uid("count-views")
        .sink_to(PostgresSink(conninfo, UPSERT))
        .uid("page-views-table")
    )
    return env


def create_table(conninfo: str) -> None:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS page_views (page text PRIMARY KEY, views bigint)")


def main() -> None:
    conninfo = os.environ["POSTGRES_CONNINFO"]
    create_table(conninfo)
    env = StreamExecutionEnvironment().set_parallelism(2)
    build(
        env,
        os.environ["KAFKA_BOOTSTRAP"],
        os.environ.get("KAFKA_TOPIC", "page-views"),
        conninfo,
        "file:///tmp/barrierflow-page-views/ckpt",
    )
    result = env.execute("page-views")
    print(f"job {result.job_id} finished; last checkpoint: {result.final_checkpoint}")


if __name__ == "__main__":
    main()
