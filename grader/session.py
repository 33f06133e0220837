"""The worker process, seen from the grader: starting it confined, asking it, killing it.

The worker (:mod:`grader.worker`) is started

* in a temporary folder of its own, holding a copy of the notebook's data files (no other
  notebooks, no check modules, no solutions), which is also its ``HOME``;
* with a minimal environment (the grader's own variables, which may hold secrets, stay here);
* in a session of its own, with resource limits: address space, file size, no core dumps, and a
  process count when it runs unprivileged;
* as the unprivileged user ``nobody`` when the grader runs as root (as on Gradescope), so that it
  can neither read the grader's memory nor write into the grader's files; otherwise the grader
  makes itself non-dumpable, which keeps at least its memory and ``/proc`` files from the worker;

and every process it started is killed when it is stopped: its process group, and any process
that carries this worker's token in its environment (a child that left the group).

:meth:`Session.ask` enforces the time limits from outside: a reply that does not come by the
deadline (because the learner's code blocked the timer signal, sleeps in C, or the process died)
kills the worker and raises :class:`WorkerLost`; the grader then starts a new one.
"""

from __future__ import annotations

import ctypes
import functools
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from grader.channel import Channel, ChannelClosed, Deadline
from grader.limits import Limits
from grader.plain import ProtocolError
from grader.remote import WorkerLost

#: The folder ``grader`` is imported from; the worker must import the same package.
IMPORT_ROOT = Path(__file__).resolve().parents[1]
#: How long after its own time limit the worker has to answer before it is killed.
GRACE_SECONDS = 1.0
#: Data files beside a notebook larger than this are not copied for it.
_MAX_DATA_FILE = 20 * 2**20
#: The user the worker runs as when the grader is root; ``GRADER_WORKER_USER=`` disables this.
_WORKER_USER = os.environ.get("GRADER_WORKER_USER", "nobody")
_TOKEN_VARIABLE = "MINIJAX_GRADER_WORKER"
_PR_SET_DUMPABLE = 4
_KILL_ROUNDS = 20


class Session:
    """One worker at a time for one notebook; ``start()`` again after a :class:`WorkerLost`."""

    def __init__(self, notebook: Path, limits: Limits, deadline: float) -> None:
        self.limits, self.deadline = limits, deadline
        self.folder = Path(tempfile.mkdtemp(prefix="grader-worker-"))
        self.user = _unprivileged_user()
        if self.user is None:
            _protect_memory()
        _copy_data_files(notebook.parent, self.folder)
        if self.user is not None:
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
            for path in self.folder.iterdir():
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self.process: subprocess.Popen[bytes] | None = None
        self.channel: Channel | None = None
        self.token = ""
        self._next_id = 0

    def start(self) -> None:
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        self.token = secrets.token_hex(8)
        try:
            self.process = self._spawn(requests_read, replies_write)
        except (OSError, subprocess.SubprocessError):
            if self.user is None:
                raise
            self.user = None  # this system does not let root become another user: do without
            _protect_memory()
            self.process = self._spawn(requests_read, replies_write)
        os.close(requests_read)
        os.close(replies_write)
        self.channel = Channel(replies_read, requests_write)

    def _spawn(self, requests_read: int, replies_write: int) -> subprocess.Popen[bytes]:
        """Start the worker, as ``self.user`` if there is one. The switch of user is done by
        ``Popen`` itself, between fork and exec in C: no Python runs in the forked child,
        which could deadlock on a lock held by another thread of this (multithreaded)
        process. The worker sets its resource limits itself, before any learner code."""
        limits = self.limits
        processes = limits.processes if self.user is not None else 0  # 0: no process limit
        identity: dict[str, Any] = {}
        if self.user is not None:
            identity = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.Popen(
            [sys.executable, "-m", "grader.worker", str(requests_read), str(replies_write),
             str(limits.memory_mb), str(limits.file_mb), str(processes)],
            cwd=self.folder,
            env=self._environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(requests_read, replies_write),
            start_new_session=True,
            **identity,
        )

    def ask(self, request: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Send ``request`` (with the limits the worker applies itself) and return the reply that
        answers it. Raises :class:`WorkerLost` (the worker is then stopped) if there is none
        within ``seconds`` plus a grace, before the notebook's deadline, or if it is malformed."""
        assert self.channel is not None, "start() the session first"
        self._next_id += 1
        ident = self._next_id
        message = {"id": ident, "seconds": max(seconds, 0.001), "output": self.limits.output_chars,
                   **request}
        deadline = min(time.monotonic() + seconds + GRACE_SECONDS, self.deadline)
        try:
            self.channel.send(message)
            while True:
                reply = self.channel.receive(deadline)
                if reply.get("id") == ident:  # anything else was written by learner code
                    return reply
        except Deadline:
            self.stop()
            if deadline >= self.deadline:
                raise WorkerLost(self.limits.notebook_time_is_up()) from None
            raise WorkerLost(f"timed out after {self.limits.exercise_seconds:g} s") from None
        except ChannelClosed:
            raise WorkerLost(self._death()) from None
        except ProtocolError as exc:
            self.stop()
            raise WorkerLost(f"the notebook process sent something that is not plain data "
                             f"({exc})") from None

    def notebook_time_left(self) -> float:
        return self.deadline - time.monotonic()

    def stop(self) -> None:
        """Kill the worker and everything it started; close the pipes."""
        if self.process is not None:
            _kill_group(self.process.pid)
            self.process.wait()
            _kill_tokened(self.token)
        if self.channel is not None:
            os.close(self.channel.read_fd)
            os.close(self.channel.write_fd)
        self.process = self.channel = None

    def close(self) -> None:
        """Stop the worker for good and remove its folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _death(self) -> str:
        assert self.process is not None
        try:
            code = self.process.wait(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        self.stop()
        if code is None:
            return "the notebook process closed its channel to the grader"
        if code < 0:
            return f"the notebook process died (killed by {signal.Signals(-code).name})"
        return f"the notebook process died (exit code {code})"

    def _environment(self) -> dict[str, str]:
        """Only what the worker needs: no variable of the grader's own leaks into it."""
        kept = {name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL", "TZ")
                if name in os.environ}
        home = str(self.folder)
        return {
            **kept,
            "HOME": home,
            "TMPDIR": home,
            "MPLCONFIGDIR": home,
            "MPLBACKEND": "Agg",  # no plot window opens
            "PYTHONPATH": str(IMPORT_ROOT),  # the worker imports this very package
            "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            _TOKEN_VARIABLE: self.token,
        }

def worker_has_a_user_of_its_own() -> bool:
    """Whether workers run as an unprivileged user of their own (the grader runs as root)."""
    return _unprivileged_user() is not None


@functools.cache
def _unprivileged_user() -> pwd.struct_passwd | None:
    """The user workers run as: ``nobody`` when the grader runs as root and that user can
    start a worker here (it cannot when the course lies in a folder only root may enter,
    such as one made by ``mktemp -d``); otherwise none, and workers run as the grader's user."""
    if os.geteuid() != 0 or not _WORKER_USER:
        return None
    try:
        user = pwd.getpwnam(_WORKER_USER)
    except KeyError:
        return None
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import grader.worker"], cwd="/", timeout=60,
            env={"PATH": os.defpath, "PYTHONPATH": str(IMPORT_ROOT)},
            user=user.pw_uid, group=user.pw_gid, extra_groups=[],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return user if probe.returncode == 0 else None


def _protect_memory() -> None:
    """Make this process non-dumpable (Linux): processes of the same user, the worker among
    them, can then no longer read its memory, environment or other ``/proc`` files."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _copy_data_files(source: Path, target: Path) -> None:
    """The files beside the notebook that it may read by a relative path: not notebooks (in a
    folder of submissions, those are other students'), not folders, nothing huge."""
    for path in source.iterdir():
        try:
            if path.is_file() and not path.is_symlink() and path.suffix != ".ipynb" \
                    and path.stat().st_size <= _MAX_DATA_FILE:
                shutil.copy2(path, target / path.name)
        except OSError:  # unreadable, or gone meanwhile: the notebook will not find it either
            continue


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_tokened(token: str) -> None:
    """Kill every process whose environment holds ``token``: children of the worker that left
    its process group (``setsid``, double forks) but kept the environment they inherited.
    A process may start one more while it is being found, so look again until none is left."""
    marker = f"{_TOKEN_VARIABLE}={token}".encode()
    for _ in range(_KILL_ROUNDS):
        found = False
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)
                    found = True
            except (OSError, ValueError):
                continue
        if not found:
            return
        time.sleep(0.01)
