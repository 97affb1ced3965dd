"""``moto_server`` whose recorder also keeps the bodies of chunked uploads (moto records only
bodies with a ``Content-Length``; pyarrow's S3 client streams its uploads chunked), so that a
restarted server can be given every object again (``s3.py``). Run as
``python -m tests.servers.moto_recording_server -H HOST -p PORT``.

The server answers requests on several threads, and moto's recorder appends each entry to the
file in more than one write: two large entries recorded at once interleaved, and the replay of a
restarted server failed on the line they made ("Extra data"). Entries are recorded one at a time.
"""

from __future__ import annotations

import io
import threading
from typing import Any

from moto.moto_api._internal.recorder.models import Recorder
from moto.server import main

_record = Recorder._record_request
_one_at_a_time = threading.Lock()


def _record_request(self: Recorder, request: Any, body: bytes | None = None) -> None:
    chunked = request.headers.get("Transfer-Encoding", "").lower() == "chunked"
    if body is None and chunked and "Content-Length" not in request.headers:
        body = request.environ["wsgi.input"].read()
        request.environ["wsgi.input"] = io.BytesIO(body)
    with _one_at_a_time:
        _record(self, request, body)


Recorder._record_request = _record_request

if __name__ == "__main__":
    main()
