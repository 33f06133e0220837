"""The pipe between the grader and its worker: length-prefixed JSON messages.

Each message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON holding one
object. The grader reads with a deadline (:meth:`Channel.receive`), so a worker that hangs, dies
or floods the pipe costs time it was given and nothing more; a message that is too long or not
JSON is a :class:`~grader.plain.ProtocolError`. Learner code in the worker could write to the pipe
too: that is why the grader only accepts a reply that carries the id of its request, and decodes
every value with :func:`grader.plain.decode`.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

from grader.plain import MAX_BYTES, ProtocolError

_HEADER = struct.Struct(">I")
#: The largest message accepted: an array of MAX_BYTES in base64, plus room for the rest.
MAX_MESSAGE = MAX_BYTES * 4 // 3 + 2**20


class ChannelClosed(Exception):
    """The other end closed the pipe (the worker died, or the grader went away)."""


class Deadline(Exception):
    """No complete message arrived in time."""


class Channel:
    """One end of the pipe pair: ``read_fd`` receives, ``write_fd`` sends."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self._buffer = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode("utf-8")
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            try:
                written = os.write(self.write_fd, view)
            except (BrokenPipeError, OSError) as exc:
                raise ChannelClosed(str(exc)) from None
            view = view[written:]

    def receive(self, deadline: float | None = None) -> dict[str, Any]:
        """The next message; waits until ``deadline`` (a ``time.monotonic()``) or forever."""
        length = _HEADER.unpack(self._read(_HEADER.size, deadline))[0]
        if length > MAX_MESSAGE:
            raise ProtocolError(f"a message of {length} bytes is too long")
        try:
            message = json.loads(self._read(length, deadline).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"a message is not JSON ({exc})") from None
        if type(message) is not dict:
            raise ProtocolError("a message must be a JSON object")
        return message

    def _read(self, size: int, deadline: float | None) -> bytes:
        while len(self._buffer) < size:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
                    raise Deadline
            chunk = os.read(self.read_fd, max(size - len(self._buffer), 65536))
            if not chunk:
                raise ChannelClosed("end of file")
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data
