"""The connectors' public modules, their deprecated package faces and the interfaces are lazy:
importing them loads no connector and no client library, so that an executor that runs a job of
sequences never loads pyarrow, and the interfaces (pure) stand alone. Each check runs in a fresh
interpreter."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLIENT_LIBRARIES = {"pyarrow", "confluent_kafka", "psycopg", "deltalake", "pyiceberg", "pyspark"}
CONNECTORS = ("files", "kafka", "postgres", "delta", "iceberg", "spark_table", "tables")


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(m for m in sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return set(out.split())


def _unwanted(loaded: set[str]) -> set[str]:
    return {
        m
        for m in loaded
        if m.split(".")[0] in CLIENT_LIBRARIES
        or any(m.startswith(f"barrierflow.connectors.{c}.") for c in CONNECTORS)
    }


@pytest.mark.parametrize(
    "statement",
    [
        *(
            f"import barrierflow.datastream.connectors.{module}"
            for module in (
                "base",
                "file_system",
                "kafka",
                "postgres",
                "delta",
                "iceberg",
                "spark_table",
                "discarding",
                "number_seq",
            )
        ),
        "import barrierflow.datastream.connectors",
        "from barrierflow.datastream.connectors import DeliveryGuarantee, Sink, Source",
        "from barrierflow.datastream.connectors.discarding import DiscardingSink",
        "import barrierflow.connectors",
        "import barrierflow.connectors.files",
        "import barrierflow.connectors.kafka",
        "import barrierflow.connectors.postgres",
        "import barrierflow.connectors.delta",
        "import barrierflow.connectors.iceberg",
        "import barrierflow.connectors.spark_table",
        "import barrierflow.connectors.source",
        "import barrierflow.connectors.sink",
        "import barrierflow.connectors.source_reader",
        "import barrierflow.connectors.split_enumerator",
        "import barrierflow.connectors.interfaces.committables",
        "import barrierflow.connectors.interfaces.versioned_codec",
        "from barrierflow.connectors import SequenceSource, DiscardingSink, DeliveryGuarantee",
    ],
)
def test_a_face_or_interface_loads_no_connector_and_no_client_library(statement):
    assert _unwanted(_loaded_after(statement)) == set()


@pytest.mark.parametrize(
    "module", ["files.file_enumerator", "files.file_split", "kafka.partition_split"]
)
def test_a_pure_module_of_a_connector_loads_no_client_library(module):
    loaded = _loaded_after(f"import barrierflow.connectors.{module}")
    assert {m.split(".")[0] for m in loaded} & CLIENT_LIBRARIES == set()


def test_pyflinks_jdbc_module_loads_no_client_library():
    """Its classes are defined there, on PostgreSQL's sink, whose psycopg loads when it runs."""
    loaded = _loaded_after("import barrierflow.datastream.connectors.jdbc")
    assert {m.split(".")[0] for m in loaded} & CLIENT_LIBRARIES == set()


def test_the_interfaces_load_only_pure_modules_of_barrierflow():
    every = "; ".join(
        f"import barrierflow.connectors.interfaces.{p.stem}"
        for p in (ROOT / "barrierflow/connectors/interfaces").glob("*.py")
    )
    ours = {m for m in _loaded_after(every) if m.startswith("barrierflow.connectors.")}
    assert all(m.startswith("barrierflow.connectors.interfaces") for m in ours), ours


@pytest.mark.parametrize(
    "module",
    ["file_system", "kafka", "postgres", "delta", "iceberg", "spark_table", "discarding"],
)
def test_a_public_module_gives_each_name_when_asked_and_refuses_others(module):
    face = importlib.import_module(f"barrierflow.datastream.connectors.{module}")
    assert {getattr(face, n).__name__ for n in face.__all__} == set(face.__all__)
    assert set(face.__all__) <= set(dir(face))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        face.Nope  # noqa: B018
