"""Devices, asynchronous dispatch, and the trace that evaluates primitives eagerly.

Each device owns a FIFO queue and a worker thread. When Python applies a primitive
outside any transformation, :class:`EvalTrace` checks shapes and dtypes at once (so
those errors are raised immediately, where the user wrote the bad line), creates the
output ``Array`` with no value yet, puts the job on the device's queue and returns.
The worker computes jobs in order with NumPy and fills in the values. Python keeps
running ahead of the device, exactly as with JAX on a GPU: that is asynchronous
dispatch (非同步派遣).

Waiting for a value does not mean sleeping until the worker has computed it: the
waiting thread runs the queued jobs itself, in order, up to the one it needs (handing
work between threads costs far more than a small job). Either way, a device runs one job
at a time, in the order they were queued.

Devices are CPU devices; their number comes from
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` as in JAX (default 1).
"""

from __future__ import annotations

import collections
import contextvars
import copyreg
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes, errors, flags
from minijax.array import Array, is_jax_value
from minijax.core import Primitive, ShapedArray, Trace, Tracer
from minijax.dtypes import ExtendedDType
from minijax.tree_util import tree_leaves, tree_map

# ---------------------------------------------------------------------------------------
# Devices and their queues
# ---------------------------------------------------------------------------------------


class Device:
    """A CPU device: a first-in, first-out queue of jobs, run one at a time and in order.

    The device's worker thread runs the jobs nobody is waiting for. A thread that needs a
    value now (``Array._wait``) does not sleep until the worker gets there: it runs the
    queued jobs itself, in order, up to the one it waits for -- waking another thread
    costs tens of microseconds, far more than a small job. Whichever thread runs jobs
    does so inside the context ``_runner``, which only one thread at a time can be in: it
    is the device's lock, so jobs never overlap and never change order.
    """

    platform = "cpu"
    device_kind = "cpu"
    process_index = 0

    def __init__(self, id: int) -> None:
        self.id = id
        # Queued jobs, in order. A job leaves the queue only once it is done: the one at
        # the head may be running.
        self._jobs: collections.deque[tuple] = collections.deque()
        # Jobs run inside this context (see ``run_jobs`` for why a context and not a
        # lock). It is empty, so jobs see none of the caller's context variables, and
        # NumPy's warnings are off in it: JAX computes ``1/0`` or ``log(-1)`` without a
        # word. (Entering it costs far less than ``np.errstate``.)
        self._runner = contextvars.Context()
        self._runner.run(np.seterr, all="ignore")
        # Threads waiting for a value while another thread runs the jobs, each asleep on
        # its own locked lock. That any are here asks the worker to give way to them.
        self._sleepers: set[threading.Lock] = set()
        self._wakeup: queue.SimpleQueue = queue.SimpleQueue()  # the idle worker waits here
        self._worker_called = False  # a wake-up call is pending: no need for another
        threading.Thread(target=_work, args=(self,), name=f"minijax-{self}", daemon=True).start()

    def enqueue(self, job: tuple, wake_worker: bool = True) -> None:
        """Queue ``job``, a tuple (primitive, input Arrays, params, output Arrays). A job
        that a kernel of this device dispatches is run at once instead (``_run_inline``).
        A caller about to wait for the job runs it itself: no need to call the worker
        (``wake_worker=False``), which would take the job over while the caller sleeps."""
        inside = _inside.get()
        if self in inside:
            self._run_inline(job, inside.count(self))
            return
        self._jobs.append(job)
        if wake_worker and len(self._jobs) > 1 and not self._worker_called:
            self._worker_called = True
            self._wakeup.put(None)

    def run_jobs(self, until: Array | None = None) -> None:
        """Run queued jobs on this thread, in order, until the array ``until`` is computed
        (without ``until``: until the queue is empty). While another thread runs them,
        sleep until it gives way or stops.

        A Ctrl-C (``KeyboardInterrupt``) can land between any two bytecodes of this, so
        nothing here takes a lock that a ``finally`` must release: an interrupt just after
        ``acquire`` returns, before the ``try``, would leave the device locked for ever.
        Jobs run inside the context ``_runner`` instead: Python lets only one thread at a
        time into a context (``run`` raises ``RuntimeError`` for the others) and takes the
        thread out again however the function ends. An interrupted job stays at the head
        of the queue, and the worker runs it again.

        A kernel may wait too (a primitive's impl written with ``jnp``, as JAX allows):
        then this thread is in ``_runner`` already, running a job, and what it waits for
        ran at once when it was dispatched (see ``enqueue``). An array queued behind the
        job can never be computed before it: that is an error, not a wait for ever.
        """
        try:
            while not self._done(until):
                inside = _inside.get()
                try:
                    self._runner.run(self._run_jobs_until, until, inside)
                except RuntimeError:  # a thread is in there, running the jobs
                    if self not in inside:  # another thread
                        self._sleep(until)
                    elif until is None:  # synchronize in a kernel: its own jobs are done
                        return
                    else:
                        raise _waits_behind_itself(self) from None
        finally:
            self._wake_sleepers()  # they may want to run the jobs now
            if self._jobs:  # hand the rest to the worker (also if this was interrupted)
                self._wakeup.put(None)

    def _done(self, until: Array | None) -> bool:
        return until.is_ready() if until is not None else not self._jobs

    def _run_jobs_until(self, until: Array | None, inside: tuple[Device, ...]) -> None:
        """A waiting thread's turn (inside ``_runner``): run jobs until ``until`` is
        computed. A job leaves the queue once it is done, not before: if this thread is
        interrupted while running it, it stays at the head, to be run again. ``inside``:
        the devices whose jobs this thread was running already (see ``_inside``)."""
        _inside.set((*inside, self))
        jobs = self._jobs
        while jobs and (until is None or not until.is_ready()):
            _run(*jobs[0])
            jobs.popleft()

    def _run_jobs_as_worker(self) -> None:
        """The worker's turn (inside ``_runner``): run jobs until the queue is empty, but
        give way as soon as a thread is waiting for a value: it runs the jobs itself,
        which costs less than two threads taking turns. Nothing interrupts this thread
        (Python handles signals on the main thread), so whatever a kernel raises, even
        ``SystemExit``, is the job's failure."""
        _inside.set((self,))
        jobs = self._jobs
        while jobs and not self._sleepers:
            _run(*jobs[0], failures=BaseException)
            jobs.popleft()

    def _run_inline(self, job: tuple, running: int) -> None:
        """Run ``job``, dispatched by a kernel of this device, now, on this thread: the
        kernel needs it done before its own job is (as the impl would in JAX, where it runs
        at once), and queued it would wait behind that job. It goes in the queue right
        behind the ``running`` jobs this thread has started and not finished (the first
        ones), so that if it is interrupted it is still run, in order; and it runs in a
        copy of the context, in which ``_inside`` counts it, however it ends."""
        self._jobs.insert(running, job)
        contextvars.copy_context().run(self._run_job_at, running)

    def _run_job_at(self, position: int) -> None:
        _inside.set((*_inside.get(), self))
        _run(*self._jobs[position])
        del self._jobs[position]

    def _sleep(self, until: Array | None) -> None:
        """Sleep until the thread running the jobs gives way or stops (either wakes the
        sleepers), for at most ``_RECHECK_SECONDS``: this thread may be running another
        device's job that needs a value from here, while this device's job waits for that
        device (a deadlock), but then the value it needs is done meanwhile."""
        wake = threading.Lock()
        wake.acquire()
        self._sleepers.add(wake)
        if not self._done(until):
            wake.acquire(True, _RECHECK_SECONDS)
        self._sleepers.discard(wake)

    def _wake_sleepers(self) -> None:
        """Wake the threads asleep in ``_sleep``. A thread that left without taking its
        lock out of ``_sleepers`` (interrupted) is taken out here."""
        while self._sleepers:
            try:
                wake = self._sleepers.pop()
            except KeyError:  # another thread took the last one meanwhile
                return
            wake.release()

    def synchronize(self) -> None:
        """Return once every job queued so far on this device has finished."""
        self.run_jobs()

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"cpu:{self.id}"


# The devices whose jobs the current thread is running, outermost first, one entry per job
# started and not finished. Set on entering a device's ``_runner`` (or a copy of the
# context, for a job run inline), so it is exact for whichever thread is in there.
_inside: contextvars.ContextVar[tuple[Device, ...]] = contextvars.ContextVar(
    "minijax_inside_device", default=())

_RECHECK_SECONDS = 0.005
_WORKER_CHECK_SECONDS = 0.1
_WORKER_GRACE_SECONDS = 0.001


def _work(device: Device) -> None:
    """A device's worker thread: sleep until called, then run the queued jobs, unless
    another thread is running them (that thread calls the worker again if it leaves
    any). It also looks every ``_WORKER_CHECK_SECONDS`` without being called: a thread
    interrupted at the wrong moment may have left jobs queued without calling it.

    Called, it first lets ``_WORKER_GRACE_SECONDS`` pass, asleep: a program usually waits
    for what it dispatched soon after, and then runs the job itself, on its own thread,
    with nobody to compete with for Python's lock (two threads taking turns at it cost
    tens of microseconds a job, as much as a small job's whole run). Jobs nobody waits
    for start that much later; Python still runs ahead of them, as with JAX."""
    while True:
        try:
            device._wakeup.get(timeout=_WORKER_CHECK_SECONDS)
            time.sleep(_WORKER_GRACE_SECONDS)
        except queue.Empty:
            pass
        device._worker_called = False
        if not device._jobs:
            continue
        try:
            device._runner.run(device._run_jobs_as_worker)
        except RuntimeError:  # a waiting thread is running the jobs
            pass
        if device._sleepers:  # the worker gave way to them: wake them, and let them in
            device._wake_sleepers()  # before it looks again (they call it when they leave)
            time.sleep(_RECHECK_SECONDS)


def _waits_behind_itself(device: Device) -> RuntimeError:
    return RuntimeError(f"deadlock: a kernel running on {device} waits for an array queued "
                        "behind its own job")


def _input_values(args: Sequence[Array]) -> list[np.ndarray]:
    """The inputs' NumPy values. An input may still be missing: it failed (raise its
    error, which then belongs to this job's outputs too), or it is being computed on
    another device's queue (wait for it)."""
    values = []
    for a in args:
        value = a._value
        if value is None:
            if a._error is not None:
                raise a._error
            value = a._wait()
        values.append(value)
    return values


def _run(primitive: Primitive, args: Sequence[Array], params: dict, outs: list[Array],
         failures: type[BaseException] = Exception) -> None:
    """Compute one job's primitive with its NumPy kernel and fill in the output arrays.

    A kernel's exception is the job's failure: it is kept in the outputs and raised to
    whoever waits for them. ``KeyboardInterrupt`` and ``SystemExit`` are not failures
    (not ``Exception``s) but interrupt the thread running the job; they go through, and
    the job stays queued (see ``Device.run_jobs``). This runs once per eager operation,
    so it is kept lean: the kernel's result is checked against the promised type with
    cheap identity tests first.
    """
    try:
        result = primitive.impl(*_input_values(args), **params)
        if not primitive.multiple_results:
            outs[0]._value = _as_promised(primitive, result, outs[0].aval)
            return
        if len(result) != len(outs):
            raise ValueError(f"the kernel of {primitive.name} returned {len(result)} "
                             f"results for {len(outs)} outputs")
        for out, value in zip(outs, result):
            out._value = _as_promised(primitive, value, out.aval)
    except failures as e:
        for out in outs:
            out._error = e


def _as_promised(primitive: Primitive, value: Any, aval: ShapedArray) -> np.ndarray:
    """A kernel's result as an ndarray, which must be what the shape rule promised."""
    if type(value) is not np.ndarray:
        value = np.asarray(value)
    if (value.dtype is not aval.dtype and value.dtype != aval.dtype) \
            or value.shape != aval.shape:
        physical = core.physical_aval(aval)  # a key is stored as its uint32 words
        if physical is aval or (value.dtype, value.shape) != (physical.dtype, physical.shape):
            raise _broken_promise(primitive, value, aval)
    return value


def _broken_promise(primitive: Primitive, value: np.ndarray, aval: ShapedArray) -> Exception:
    """Kernels must produce exactly what the shape rule promised; say so loudly if not."""
    return AssertionError(
        f"internal error: the kernel of {primitive.name} returned "
        f"{value.dtype.name}{list(value.shape)} but its shape rule promised {aval.str_long()}"
    )


_devices: list[Device] | None = None


def devices(backend: str | None = None) -> list[Device]:
    """The CPU devices, as many as ``--xla_force_host_platform_device_count`` asks for."""
    global _devices
    if backend not in (None, "cpu"):
        raise _unknown_backend(backend)
    if _devices is None:
        match = re.search(r"--xla_force_host_platform_device_count=(\d+)",
                          os.environ.get("XLA_FLAGS", ""))
        _devices = [Device(i) for i in range(int(match.group(1)) if match else 1)]
    return list(_devices)


def _unknown_backend(backend: Any) -> RuntimeError:
    """JAX's error for a backend other than the CPU (it words the GPU's apart)."""
    if backend == "gpu":
        return RuntimeError("Unknown backend: 'gpu' requested, but no platforms that are "
                            "instances of gpu are present. Platforms present are: cpu")
    return RuntimeError(f"Unknown backend {backend}. Available backends are ['cpu']")


def local_devices(backend: str | None = None) -> list[Device]:
    return devices(backend)


def device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` (only ``"cpu"`` here; ``None``: the default) has."""
    return len(devices(backend))


local_device_count = device_count


def default_backend() -> str:
    return "cpu"


_default_device: Device | None = None


def default_device() -> Device:
    global _default_device
    _default_device = devices()[0]
    return _default_device


# ---------------------------------------------------------------------------------------
# Making arrays from host values, moving them, waiting for them
# ---------------------------------------------------------------------------------------


def put_numpy(value: np.ndarray, weak_type: bool = False, device: Device | None = None,
              committed: bool = False) -> Array:
    """A ready ``Array`` holding a private, read-only copy of ``value`` (dtype as given)."""
    value = np.array(value, copy=True)
    value.flags.writeable = False
    aval = ShapedArray(value.shape, value.dtype, weak_type)
    return Array(aval, value, device or default_device(), committed)


def _reduce_array(x: Array) -> tuple:
    """Pickling and ``copy.deepcopy`` move the value, not the device or the pending work.
    (Registered with ``copyreg`` here, because ``Array`` sits below the runtime.)"""
    return (put_numpy, (np.array(x._wait()), x.weak_type))


copyreg.pickle(Array, _reduce_array)


_copy_p = Primitive("device_put")
_copy_p.def_impl(lambda x: x)
_copy_p.def_abstract_eval(lambda aval: aval)


def host_to_array(x: Any) -> Array:
    """A Python scalar or a NumPy array/scalar as an ``Array``.

    The dtype is canonicalised (64-bit becomes 32-bit unless x64 is on), and Python
    scalars give *weakly typed* arrays, which is what lets ``x + 1.0`` keep ``x``'s dtype.
    """
    if isinstance(x, Array):
        return x
    if type(x) is np.ndarray:
        array = _host_array_constant(x)
    else:
        dtype = dtypes.dtype(x)
        try:
            value = np.asarray(x, dtype=dtype)
        except OverflowError:
            if type(x) is not int:
                raise
            raise OverflowError(f"Python int {x} too large to convert to {dtype}") from None
        array = put_numpy(value, weak_type=dtypes.is_weakly_typed(x))
    if not array.ndim:  # a host scalar: a literal in jaxprs (a Python number as written)
        core.note_host_scalar(array, x if type(x) in (bool, int, float, complex) else None)
    return array


def as_jax_value(x: Any) -> Any:
    """An array for an argument of a transformation (``grad``, ``vmap``, ...): arrays and
    tracers as they are, Python and NumPy values converted, anything else (a string in a
    pytree) JAX's TypeError."""
    if isinstance(x, (Array, Tracer)):
        return x
    if not is_jax_value(x):
        raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")
    return host_to_array(x)


def _host_array_constant(x: np.ndarray) -> Array:
    """A NumPy array as an Array. While a function is being traced, the same NumPy array
    must become the same constant every time it is used (one constvar, as in JAX), so the
    trace remembers what it converted (``Trace.host_constants``)."""
    cache = core.current_trace().host_constants
    if cache is not None:
        hit = cache.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
    array = put_numpy(np.asarray(x, dtype=dtypes.dtype(x)))
    if cache is not None:
        cache[id(x)] = (x, array)  # holding x keeps its id from being reused meanwhile
    return array


def _put_one(x: Any, device: Device | None) -> Any:
    if isinstance(x, Tracer):
        return x
    x = host_to_array(x)
    if device is None:
        return x
    out = Array(x.aval, None, device, committed=True)
    device.enqueue((_copy_p, (x,), {}, [out]))
    return out


def device_put(x: Any, device: Device | None = None) -> Any:
    """Put ``x`` (a pytree) on ``device``; with a device, the result is *committed* to it."""
    if device is not None and not isinstance(device, Device):
        raise _not_a_device(device)
    return tree_map(lambda leaf: _put_one(leaf, device), x)


def _not_a_device(value: Any) -> ValueError:
    """JAX's error for a ``device_put`` target that is not a device (a name such as
    ``"cpu"``, say), followed by the devices there are."""
    return ValueError(
        "`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device`, "
        "`Format`, `jax.memory.Space` or a pytree of these values. Received invalid value: "
        f"{value}. The devices are: {devices()}"
    )


def block_until_ready(x: Any) -> Any:
    """Wait until every array in the pytree ``x`` is computed; return ``x``."""
    for leaf in tree_leaves(x):
        if type(leaf) is Array:  # most leaves: the cheapest test first
            leaf._wait()
        elif isinstance(leaf, Array) and not isinstance(leaf, Tracer):
            leaf.block_until_ready()
    return x


# ---------------------------------------------------------------------------------------
# The evaluation trace
# ---------------------------------------------------------------------------------------


def _placement(primitive: Primitive, args: Sequence[Array]) -> tuple[Device, bool]:
    """Where an operation runs: on its committed inputs' device, all of which must agree."""
    first = None
    for a in args:
        if a._committed:
            if first is None:
                first = a
            elif a._device is not first._device:
                raise ValueError(
                    "Received incompatible devices for jitted computation. Got "
                    f"{_describe(primitive, args, first)} and {_describe(primitive, args, a)}"
                )
    if first is None:
        return _default_device or default_device(), False
    return first._device, True


def _describe(primitive: Primitive, args: Sequence[Array], a: Array) -> str:
    i = next(i for i, arg in enumerate(args) if arg is a)
    name = "xyzw"[i] if i < 4 else f"arg{i}"
    return (f"argument {name} of {primitive.name} with shape {a.aval.str_long()} and with "
            f"device ids [{a._device.id}] on platform CPU")


def _as_array(x: Any) -> Array:
    if type(x) is Array:
        return x
    if isinstance(x, Tracer):
        core.check_valid_tracer(x)
        raise errors.UnexpectedTracerError(x.aval.str_long(), x.kind_name)
    return host_to_array(x)


_shape_rules_seen: dict[tuple, Any] = {}
flags.on_pieces_change(_shape_rules_seen.clear)  # a piece may change what a rule answers


def _shape_rule(primitive: Primitive, avals: tuple[ShapedArray, ...], params: dict) -> Any:
    """``primitive.abstract_eval(*avals, **params)``, remembered: eager dispatch runs a
    shape rule for every operation, and a dictionary lookup costs far less than checking
    dtypes and broadcasting again. (A fast path of the runtime; traces call the rule.)
    Errors are never remembered: a bad call raises every time."""
    try:
        key = (primitive, avals, tuple(params.items()))
        return _shape_rules_seen[key]
    except KeyError:
        out = _shape_rules_seen[key] = primitive.abstract_eval(*avals, **params)
        if len(_shape_rules_seen) > 50_000:
            _shape_rules_seen.clear()
        return out
    except TypeError:  # an unhashable parameter: just compute
        return primitive.abstract_eval(*avals, **params)


# How an operation on extended dtypes (keys) runs eagerly; ``minijax.prng`` installs it
# (it compiles the operation: the kernels know only the keys' uint32 words).
_extended_eval: Callable[[Primitive, tuple, dict], Any] | None = None


def install_extended_eval(rule: Callable[[Primitive, tuple, dict], Any]) -> None:
    global _extended_eval
    _extended_eval = rule


class EvalTrace(Trace):
    """Applies primitives to concrete arrays by dispatching them to a device."""

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        if primitive.eager_rule is not None:
            return primitive.eager_rule(*args, **params)
        avals = []
        committed = False
        for a in args:  # one pass over the inputs: this runs for every eager operation
            if type(a) is not Array:
                if getattr(a, "dtype", None) == dtypes.float0:  # no values: stays in NumPy
                    return primitive.impl(*args, **params)
                return self.process_primitive(primitive, tuple(map(_as_array, args)), params)
            if isinstance(a.aval.dtype, ExtendedDType):
                return _extended_eval(primitive, args, params)
            avals.append(a.aval)
            committed = committed or a._committed
        if committed:
            device, committed = _placement(primitive, args)
        else:
            device = _default_device or default_device()
        out_avals = _shape_rule(primitive, tuple(avals), params)
        if not primitive.multiple_results:
            out = Array(out_avals, None, device, committed)
            device.enqueue((primitive, args, params, [out]))
            return out
        outs = [Array(aval, None, device, committed) for aval in out_avals]
        device.enqueue((primitive, args, params, outs))
        return float0_as_numpy(outs)


def float0_as_numpy(outs: list[Array]) -> list[Any]:
    """``outs``, NumPy's float0 zeros in place of each float0 one (an integer's cotangent,
    computed as booleans by a compiled program, as JAX does): it holds no values, so
    nothing is waited for, and eager ``grad`` gives the same."""
    return [np.zeros(out.shape, dtypes.float0) if out.dtype == dtypes.float0 else out
            for out in outs]


eval_trace = EvalTrace()
core.install_eval_trace(eval_trace)
