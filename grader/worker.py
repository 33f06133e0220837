"""The untrusted worker: ``python -m grader.worker REQUESTS REPLIES MEMORY_MB FILE_MB PROCESSES``.

The learner's notebook runs here and nowhere else. The worker does only what the grader
(:mod:`grader.runner`, the trusted process) asks, one request at a time, and answers each with
plain data (:mod:`grader.plain`) over the pipe (:mod:`grader.channel`). Requests:

* ``run`` -- execute one cell's source in the notebook namespace (plain Python: the grader keeps
  cells with IPython magic to itself);
* ``lookup`` -- is ``name`` defined, and callable?
* ``call`` -- call the learner's function ``name`` on decoded arguments (the check's functions
  among them evaluated from their source), and return the result, the arguments afterwards (so
  the grader can see an argument modified in place) and how often each function was called;
* ``probe`` -- run one of :mod:`grader.probes`' instruments (trace the learner's function, say)
  and return what it observed;
* ``check`` -- run a check that must see the learner's objects themselves (a chapter whose checks
  are not ``remote``) and return its verdict.

Each request runs under the time and output limits it carries (:func:`grader.limits.guard`), so
that an ordinary infinite loop costs no restart; the grader enforces the same limits from outside
and kills this process when they do not hold. Nothing this process prints or writes to disk is
read as a result, and the grader decides every score: an answer is only ever the learner's.
"""

from __future__ import annotations

import contextlib
import importlib
import linecache
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader import inline, reference, sandbox
from grader.channel import Channel, ChannelClosed
from grader.chapters import checks_from_source
from grader.checks import Check, forbidding
from grader.limits import Limits, TimeLimitExceeded, confine, guard
from grader.outcome import result_from_exception, run_check
from grader.plain import decode, encode, realize, safe_str, type_name
from grader.probes import PROBES

Reply = dict[str, Any]


def main(argv: list[str] | None = None) -> int:
    """``REQUESTS REPLIES MEMORY_MB FILE_MB PROCESSES``: the two pipes, then the limits."""
    read_fd, write_fd, memory_mb, file_mb, processes = (
        int(arg) for arg in (argv if argv is not None else sys.argv[1:]))
    confine(memory_mb, file_mb, processes)
    channel = Channel(read_fd, write_fd)
    inline.mute()
    worker = Worker()
    reference.guard_course_files(reference.course_roots())
    sandbox.restrict(Path.cwd())
    while True:
        try:
            request = channel.receive()
        except ChannelClosed:
            break
        if request.get("op") == "exit":
            break
        try:
            with reference.refusing(request.get("forbid", [])):
                reply = worker.handle(request)
        except Exception:  # a bug in the grader or a check module: tell the grader what it was
            reply = {"outcome": "crash", "message": traceback.format_exc(limit=-3)}
        refused = reference.take_refused()
        if refused:
            reply["refused"] = refused
        try:
            channel.send({"id": request.get("id"), **reply})
        except ChannelClosed:
            break
    sys.stdout.flush()
    os._exit(0)  # neither atexit handlers nor the learner's threads may outlive the last answer


class Worker:
    """The notebook namespace, and the check modules loaded so far (for ``check`` requests, by
    their source, which comes with the request)."""

    def __init__(self) -> None:
        from IPython.display import display

        self.ns: dict[str, Any] = {"__name__": "__main__", "display": display}
        self.checks: dict[str, dict[str, Check]] = {}

    def handle(self, request: dict[str, Any]) -> Reply:
        op = request["op"]
        if op == "lookup":
            return self.lookup(request["name"])
        limits = Limits(exercise_seconds=request["seconds"], output_chars=request["output"])
        if op == "run":
            return limited(limits, lambda: self.run(request["source"], request["number"]))
        if op == "call":
            return limited(limits, lambda: self.call(request["name"], decode(request["args"])),
                           request.get("forbidding", []))
        if op == "probe":
            return limited(limits, lambda: self.probe(request["name"], decode(request["args"])),
                           request.get("forbidding", []))
        if op == "check":
            check = self.load(request["chapter"], request["source"])[request["name"]]
            return limited(limits, lambda: self.check(check))
        raise ValueError(f"unknown request {op!r}")

    def lookup(self, name: str) -> Reply:
        if name not in self.ns:
            return {"defined": False}
        value = self.ns[name]
        return {"defined": True, "callable": callable(value), "type": type_name(value)}

    def run(self, source: str, number: int) -> Reply:
        # As IPython does, so that inspect.getsource finds a cell's functions (minijax.pieces
        # reads a piece's source to tell an exercise's stub from the learner's code).
        filename = f"<cell {number}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), self.ns)
        return {"outcome": "ok"}

    def call(self, name: str, args: list[Any]) -> Reply:
        made: list[Any] = []
        args = realize(args, self.ns, made)
        value = self.ns[name](*args)
        return {"outcome": "returned", "value": encode(value), "args": encode(args),
                "calls": _calls(made)}

    def probe(self, name: str, args: list[Any]) -> Reply:
        made: list[Any] = []
        args = realize(args, self.ns, made)
        value = PROBES[name](self.ns, *args)
        return {"outcome": "returned", "value": encode(value), "calls": _calls(made)}

    def load(self, chapter: str, source: str) -> dict[str, Check]:
        """The checks of a module's ``source`` (loaded once); a module that fails to load is a
        failure of the grader, not of the learner."""
        if source not in self.checks:
            self.checks[source] = checks_from_source(chapter, source)
        return self.checks[source]

    def check(self, check: Check) -> Reply:
        """The verdict of ``check``: its status, its message and the messages of the parts
        that failed (the grader takes the points from its own copy of the check)."""
        try:
            result = run_check(check, self.ns)
        except BaseException as exc:  # noqa: BLE001 -- KeyboardInterrupt too: it is the learner's
            result = result_from_exception(check, exc, context="the check stopped with")
        failed = {part.name: part.message for part in result.parts if part.message}
        return {"outcome": "verdict", "status": result.status.value, "message": result.message,
                "parts": failed}


def _calls(made: list[Any]) -> list[int]:
    """How often the learner's code called each of the check's functions (what the worker made
    of each :class:`~grader.plain.FunctionSource`, in order; values that are no function count
    0)."""
    return [getattr(value, "calls", 0) if type(getattr(value, "calls", 0)) is int else 0
            for value in made]


def limited(limits: Limits, work: Callable[[], Reply],
            forbidden: list[list[Any]] | None = None) -> Reply:
    """``work()``'s reply, or what it raised, or the limit it broke (even one it swallowed);
    ``forbidden`` are the grader's :func:`~grader.checks.forbidding` blocks to run it in."""
    reply: Reply | None = None
    with guard(limits) as breach:
        try:
            with _forbidding(forbidden or []):
                reply = work()
        except BaseException as exc:  # noqa: BLE001 -- learner code may raise anything
            reply = raised(exc)
    if breach.first is not None or reply is None:
        limit = "time" if isinstance(breach.first, TimeLimitExceeded) else "output"
        return {"outcome": "limit", "limit": limit}
    return reply


def _forbidding(blocks: list[list[Any]]) -> contextlib.ExitStack:
    """The grader's forbidding blocks (module name, names, ``instead``), entered here."""
    stack = contextlib.ExitStack()
    for module, names, instead in blocks:
        stack.enter_context(forbidding(importlib.import_module(module), *names, instead=instead))
    return stack


def raised(exc: BaseException) -> Reply:
    """What an exception was, as plain data: its type's name, its message, its kind."""
    kinds = {NotImplementedError: "not_implemented", SystemExit: "system_exit"}
    kind = next((name for cls, name in kinds.items() if isinstance(exc, cls)), "other")
    reply = {"outcome": "raised", "type": type_name(exc), "message": safe_str(exc), "kind": kind}
    if isinstance(exc, SystemExit):
        code = exc.code
        reply["code"] = code if code is None or type(code) is int else safe_str(code)
    return reply


if __name__ == "__main__":
    main()
