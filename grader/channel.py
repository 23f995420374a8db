"""A pipe the grader holds through which one process of student code (or a tool watching
it) hands over one document: a Catch2 report, a bench document, a tool's log. Results are
never read from what a process prints, nor from a file it could rewrite: the process writes
to /dev/fd/N, the write end only it inherits (grader/sandbox.py passes it on), while a thread
of the grader reads the other end as it runs."""

from __future__ import annotations

import os
import select
import threading

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # the most a Channel keeps of one document


class Channel:
    """A pipe the grader holds, through which one process hands over one document (a Catch2
    report, a bench document, a tool's log): the process is told to write to `path`
    (/dev/fd/N: the write end, which only that process inherits) while a thread of the
    grader reads the other end as it runs, so a full pipe never blocks the writer and,
    once the process has ended, what was read is the grader's: no file is left that code
    could rewrite later. At most `limit` bytes are kept (`oversized` then says so).

        with channel.Channel() as report:
            out = sandbox.run([..., "-o", report.path], ..., channels=[report])
        text = report.text()
    """

    def __init__(self, limit: int = MAX_DOCUMENT_BYTES) -> None:
        self.limit = limit
        self.data = b""
        self.oversized = False
        self.held_open = False  # something still held the write end when reading stopped
        self._chunks: list[bytes] = []
        self._kept = 0
        self._stop = threading.Event()
        self._read_fd, self.write_fd = os.pipe()  # both close-on-exec
        self._thread = threading.Thread(target=self._drain, daemon=True,
                                        name="cml-channel")
        self._thread.start()

    @property
    def path(self) -> str:
        return f"/dev/fd/{self.write_fd}"

    def _drain(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._read_fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(self._read_fd, 1 << 16)
            if not chunk:
                return
            room = self.limit - self._kept
            if len(chunk) > room:
                self.oversized = True
                chunk = chunk[:max(0, room)]
            if chunk:
                self._chunks.append(chunk)
                self._kept += len(chunk)
        self.held_open = True

    def close_write(self) -> None:
        """The grader's own copy of the write end (once the process has its copy)."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def finish(self, grace: float = 2.0) -> bytes:
        """Stops reading once every writer has closed the pipe, or `grace` seconds after
        this call; the document as read."""
        self.close_write()
        self._thread.join(grace)
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
        self.data = b"".join(self._chunks)
        return self.data

    def text(self) -> str:
        return self.data.decode(errors="replace")

    def close(self) -> None:
        if self._read_fd >= 0:
            self.finish()
            os.close(self._read_fd)
            self._read_fd = -1

    def __enter__(self) -> "Channel":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
