"""Time and output limits for learner code, as the worker process applies them to itself.

A learner's cell can loop forever or print without end. Either must cost that one exercise, not the
whole notebook, so each exercise cell (and its check) runs inside :func:`guard`, which

* arms a POSIX interval timer: when it fires, :class:`TimeLimitExceeded` is raised in the running
  Python code (it fires again every half second, so code that swallows the first one is hit
  again), and
* replaces ``sys.stdout`` and ``sys.stderr`` by a stream that only counts characters and raises
  :class:`OutputLimitExceeded` past the limit, so megabytes of prints cost no memory.

Both exceptions derive from ``BaseException`` so that a learner's ``except Exception`` cannot hide
them, and the guard remembers the first breach so that even a bare ``except:`` cannot turn it into
a pass. This guard is a courtesy that saves a restart in the common case (a loop that never ends);
it is not what the grader relies on. Code can block the signal, disarm the timer, or sleep in C:
the grader (:mod:`grader.session`) enforces the same limits from outside by killing the worker.
"""

from __future__ import annotations

import io
import resource
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: After the first timer signal, how often to raise again if learner code swallowed it.
_REPEAT_SECONDS = 0.5


@dataclass(frozen=True)
class Limits:
    """How much time and output learner code may use.

    ``exercise_seconds`` bounds one exercise (its cell plus its check) and any other single cell;
    ``notebook_seconds`` bounds the whole notebook; ``output_chars`` bounds what one cell, or one
    call of a learner's function by a check, may print to stdout and stderr together. The
    worker process gets ``memory_mb`` of address space, may write files of up to ``file_mb``,
    and, when it runs as an unprivileged user of its own, may have ``processes`` processes and
    threads.
    """

    exercise_seconds: float = 30.0
    notebook_seconds: float = 600.0
    output_chars: int = 100_000
    memory_mb: int = 4096
    file_mb: int = 256
    processes: int = 256

    def notebook_time_is_up(self) -> str:
        """The message for exercises that the notebook's time limit left ungraded."""
        return f"notebook time limit exceeded ({self.notebook_seconds:g} s)"


def confine(memory_mb: int, file_mb: int, processes: int) -> None:
    """The worker's resource limits, set by the worker itself before it runs learner code:
    ``memory_mb`` of address space, files of at most ``file_mb``, no core dumps, and (when
    ``processes`` is not 0, for a worker that runs as a user of its own) at most
    ``processes`` processes and threads. Soft and hard limits alike, so that learner code
    cannot raise them again."""
    _limit(resource.RLIMIT_AS, memory_mb * 2**20)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_FSIZE, file_mb * 2**20)
    if processes:
        _limit(resource.RLIMIT_NPROC, processes)


def _limit(kind: int, value: int) -> None:
    """Set a resource limit where the system supports it (macOS refuses an address-space
    limit, for one); never raise it above the current hard limit."""
    hard = resource.getrlimit(kind)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        pass


class GradingLimit(BaseException):
    """A limit was exceeded; ``str()`` is the message the learner sees."""


class TimeLimitExceeded(GradingLimit):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")


class OutputLimitExceeded(GradingLimit):
    def __init__(self, chars: int) -> None:
        super().__init__(
            f"printed more than {chars:,} characters of output; print less (the limit protects "
            "the grader's memory)"
        )


class Breach:
    """Remembers the first limit exceeded inside one :func:`guard` block."""

    def __init__(self) -> None:
        self.first: GradingLimit | None = None

    def trip(self, exc: GradingLimit) -> None:
        """Record ``exc`` (if it is the first) and raise it into the running code."""
        if self.first is None:
            self.first = exc
        raise exc


class CountingOutput(io.TextIOBase):
    """A text stream that discards what is written, but not more than ``limit`` characters."""

    encoding = "utf-8"

    def __init__(self, limit: int, breach: Breach) -> None:
        self.limit = limit
        self.breach = breach
        self.written = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.written += len(text)
        if self.written > self.limit:
            self.breach.trip(OutputLimitExceeded(self.limit))
        return len(text)


@contextmanager
def guard(limits: Limits) -> Iterator[Breach]:
    """Run the ``with`` body under the time and output limits.

    A limit exception that escapes the body is swallowed here: the caller reads ``breach.first``
    instead, which also catches breaches that the learner's code swallowed itself.
    """
    breach = Breach()
    armed = True

    def on_alarm(signum: int, frame: object) -> None:
        if armed:
            breach.trip(TimeLimitExceeded(limits.exercise_seconds))

    saved_streams = sys.stdout, sys.stderr
    saved_handler = signal.signal(signal.SIGALRM, on_alarm)
    sys.stdout = sys.stderr = CountingOutput(limits.output_chars, breach)
    signal.setitimer(signal.ITIMER_REAL, limits.exercise_seconds, _REPEAT_SECONDS)
    try:
        yield breach
    except GradingLimit:
        pass
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved_handler)
        sys.stdout, sys.stderr = saved_streams
