"""PyFlink's ``pyflink.datastream.connectors.kafka`` (confluent-kafka is needed only when a
job reads or writes Kafka: ``pip install 'barrierflow[kafka]'``)."""

from barrierflow.connectors.kafka import *  # noqa: F403 - every Kafka name
from barrierflow.connectors.kafka import __all__  # noqa: F401
