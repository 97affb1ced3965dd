"""How to write a connector: PyFlink's ``pyflink.datastream.connectors.base`` (``Source``,
``Sink``, ``DeliveryGuarantee``, a sink's preprocessing) and, beside them, the rest of
barrierflow's connector interface, the one every connector of barrierflow is written on.

PyFlink's ``Source`` and ``Sink`` wrap a Java object, and PyFlink has no Python interface under
them; barrierflow's connectors are Python, so its ``Source`` and ``Sink`` are the interfaces
themselves, and what a subclass implements and is handed lives beside them, at this one path:
a source's split enumerator and reader and their contexts, a sink's writer, committer or global
committer and their contexts, committables, commit retries, the job settings a connector checks
itself against, and the versioned codecs of its splits, enumerator state and committables
(``StructCodec`` for those that are msgspec structs). Decisions:
docs/adr/0018-connector-framework.md. Performs no I/O and loads no connector.
"""

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.committables import Committable, Recovery
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.sink import (
    CommitRetryPolicy,
    Committer,
    CommitterContext,
    GlobalCommitter,
    Sink,
    SinkWriter,
    SinkWriterContext,
)
from barrierflow.connectors.interfaces.source import (
    Boundedness,
    Source,
    SourceReader,
    SourceReaderContext,
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
    SplitRun,
)
from barrierflow.connectors.interfaces.stream_transformer import (
    StreamTransformer,
    SupportsPreprocessing,
)
from barrierflow.connectors.interfaces.versioned_codec import UnknownVersion, VersionedCodec

__all__ = [
    "Boundedness",
    "CommitRetryPolicy",
    "Committable",
    "Committer",
    "CommitterContext",
    "DeliveryGuarantee",
    "GlobalCommitter",
    "JobSettings",
    "Recovery",
    "Sink",
    "SinkWriter",
    "SinkWriterContext",
    "Source",
    "SourceReader",
    "SourceReaderContext",
    "Split",
    "SplitEnumerator",
    "SplitEnumeratorContext",
    "SplitRun",
    "StreamTransformer",
    "StructCodec",
    "SupportsPreprocessing",
    "UnknownVersion",
    "VersionedCodec",
]
