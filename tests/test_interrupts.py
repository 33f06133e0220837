"""Ctrl-C, SystemExit and failing jobs while a thread waits for arrays.

A ``KeyboardInterrupt`` can land between any two bytecodes of the code that waits for a
value. The tests inject one in two ways:

* a trace function (``sys.settrace`` with opcode events) raises it at an event (call,
  opcode, return) of the waiting thread's frames in ``minijax/runtime.py``,
  ``minijax/array.py`` and the kernels of this file: at every bytecode boundary of the
  wait, one trial each. (A boundary reached again through the same calls, as in the next
  job, is the same boundary: it is tried once.)
* ``SIGALRM`` (``signal.setitimer``), whose handler raises it, at seeded random times, a
  few hundred times: where Python really delivers a Ctrl-C.

The waits run the queued jobs themselves, or find the worker running them, or run a job
of one device that waits for another device. After each trial the wait has either
finished or raised the injected exception, and then: the jobs left queued are finished
without anyone waiting (none was lost), waiting again gives every array its right value
(or the error of the job that really failed), new work runs, and every device is idle
(no job queued, no thread asleep on it, no thread inside its runner context, which is
its lock). The same for ``SystemExit``, and for kernels that raise either themselves.

No assertion is about time: timeouts are hang guards only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import minijax
from minijax import errors, runtime
from minijax.core import Primitive

HANG_GUARD = 30.0  # seconds; only ever reached if something hangs
INTERRUPTS = (KeyboardInterrupt, SystemExit)


def eventually(condition: Callable[[], bool]) -> bool:
    """Whether ``condition()`` becomes true (polled, nobody waits for an array) before the
    hang guard runs out."""
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0002)
    return True


def python_kernel(x: np.ndarray) -> np.ndarray:
    """A kernel written in Python, so that an interrupt can land inside a kernel too."""
    reversed_x = x[::-1]
    return reversed_x + 1.0


reverse_plus_one_p = Primitive("reverse_plus_one")
reverse_plus_one_p.def_impl(python_kernel)
reverse_plus_one_p.def_abstract_eval(lambda aval: aval)


def failing_kernel(x: np.ndarray) -> np.ndarray:
    raise ValueError("this kernel fails on purpose")


failing_p = Primitive("fails_on_purpose")
failing_p.def_impl(failing_kernel)
failing_p.def_abstract_eval(lambda aval: aval)


@minijax.jit
def plus_one_and_square(a):
    return a + 1.0, a * a


@dataclasses.dataclass
class Work:
    """Arrays whose jobs were queued, the values they must get, and those that fail."""

    x: minijax.Array
    expected: list[tuple[minijax.Array, np.ndarray]]
    failed: list[minijax.Array]

    @property
    def arrays(self) -> list[minijax.Array]:
        return [a for a, _ in self.expected] + self.failed


def queue_work(x: minijax.Array | None = None, host: np.ndarray | None = None,
               size: int = 4) -> Work:
    """Queue eager operations, a jitted program (two outputs, one job), a Python kernel,
    a failing job and one that depends on it, all computed from ``x`` (whose value will
    be ``host``; by default ``arange(size)``)."""
    if host is None:
        host = np.arange(size, dtype=np.float32)
    if x is None:
        x = minijax.device_put(host)
    a = x * 2.0
    b, c = plus_one_and_square(a)
    d = reverse_plus_one_p.bind(b)
    bad = failing_p.bind(c)
    e = bad + 1.0
    f = d + c
    ha = host * 2
    hb, hc = ha + 1, ha * ha
    hd = hb[::-1] + 1
    return Work(x, [(a, ha), (b, hb), (c, hc), (d, hd), (f, hd + hc)], [bad, e])


# How a trial waits: three ways of looking at the arrays.
WAITS: dict[str, Callable[[Work], object]] = {
    "np.asarray(last)": lambda w: np.asarray(w.expected[-1][0]),
    "block_until_ready(tree)": lambda w: minijax.block_until_ready(
        {"d": w.expected[3][0], "f": [w.expected[4][0]]}),
    "repr(failed)": lambda w: repr(w.failed[-1]),
}


def wait(work: Work, how: str) -> None:
    """Wait as ``how`` says; a wait on a failed array raises its JaxRuntimeError."""
    try:
        WAITS[how](work)
    except errors.JaxRuntimeError as e:
        assert how == "repr(failed)" and "fails on purpose" in str(e)


def device_is_idle(device: runtime.Device) -> bool:
    """No job queued, no thread asleep waiting, no thread inside the device's runner
    context (the lock: entering it raises RuntimeError while another thread is in)."""
    if device._jobs or device._sleepers:
        return False
    try:
        device._runner.run(lambda: None)
    except RuntimeError:
        return False
    return True


def check_recovered(work: Work) -> None:
    """Everything the module docstring promises after an interrupt."""
    assert eventually(lambda: all(a.is_ready() for a in work.arrays)), \
        "a queued job was never run (lost, or the device is stuck)"
    for array, value in work.expected:
        np.testing.assert_array_equal(np.asarray(array), value)
    for array in work.failed:
        with pytest.raises(errors.JaxRuntimeError, match="fails on purpose") as info:
            array.block_until_ready()
        assert type(info.value.__cause__) is ValueError
    new = work.x + 10.0  # new work, computed with nobody waiting for it
    assert eventually(new.is_ready), "the device no longer runs new work"
    np.testing.assert_array_equal(np.asarray(new), np.asarray(work.x) + 10.0)
    assert eventually(lambda: all(map(device_is_idle, minijax.devices()))), \
        "a device is not idle"


# ---------------------------------------------------------------------------------------
# An interrupt at every bytecode boundary of a wait
# ---------------------------------------------------------------------------------------

TRACED_FILES = {runtime.__file__, sys.modules["minijax.array"].__file__}
TRACED_KERNELS = {python_kernel.__code__, failing_kernel.__code__}


def traced(code) -> bool:
    return code.co_filename in TRACED_FILES or code in TRACED_KERNELS


Boundary = tuple  # (event, ((code, instruction offset), ...) from the innermost frame out)


class Injector:
    """A trace function that raises ``exception`` at the first event (call, opcode,
    return) of this thread's traced frames whose boundary is not in ``tried`` (and adds
    it). When a trace function raises, Python turns tracing off: one injection a trial.
    ``on_call`` maps code objects to functions called when a frame of theirs starts."""

    def __init__(self, tried: set[Boundary], exception: type[BaseException],
                 on_call: dict[object, Callable[[], None]] | None = None) -> None:
        self.tried = tried
        self.exception = exception
        self.on_call = on_call or {}
        self.fired = False

    def _event(self, frame, event: str) -> None:
        stack = []
        while frame is not None and traced(frame.f_code):
            stack.append((frame.f_code, frame.f_lasti))
            frame = frame.f_back
        boundary = (event, tuple(stack))
        if boundary not in self.tried:
            self.tried.add(boundary)
            self.fired = True
            raise self.exception()

    def global_trace(self, frame, event, arg):
        if not traced(frame.f_code):
            return None
        action = self.on_call.get(frame.f_code)
        if action is not None:
            action()
        frame.f_trace_opcodes = True
        self._event(frame, event)
        return self.local_trace

    def local_trace(self, frame, event, arg):
        if event in ("opcode", "return"):
            self._event(frame, event)
        return self.local_trace

    @contextlib.contextmanager
    def installed(self) -> Iterator[Injector]:
        sys.settrace(self.global_trace)
        try:
            yield self
        finally:
            sys.settrace(None)


@contextlib.contextmanager
def worker_kept_off_the_gil() -> Iterator[None]:
    """Let this thread keep the GIL until it blocks, so that the device's worker (which
    needs the GIL) does not start on the queued jobs first: then the waiting thread runs
    them, and every trial takes the same path."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def inject_everywhere(trial: Callable[[Injector], None], exception: type[BaseException],
                      ) -> int:
    """Run ``trial`` again and again, each time with an injection at a boundary not tried
    yet, until one finishes without an injection. Every injected exception must reach the
    caller. Returns the number of injections."""
    tried: set[Boundary] = set()
    while True:
        injector = Injector(tried, exception)
        raised = None
        try:
            trial(injector)
        except INTERRUPTS as e:
            raised = e
        if not injector.fired:
            assert raised is None
            return len(tried)
        assert type(raised) is exception, \
            f"the {exception.__name__} did not reach the caller ({raised!r})"


@pytest.mark.parametrize(("how", "exception"), [
    *((how, KeyboardInterrupt) for how in WAITS), ("np.asarray(last)", SystemExit)])
def test_an_interrupt_at_every_bytecode_of_a_wait_that_runs_the_jobs(how, exception):
    def trial(injector: Injector) -> None:
        with worker_kept_off_the_gil():
            work = queue_work()
            try:
                with injector.installed():
                    wait(work, how)
            finally:
                check_recovered(work)

    injections = inject_everywhere(trial, exception)
    assert injections > 200  # the wait ran jobs (and kernels) on this thread


def gated_work() -> tuple[Work, threading.Event]:
    """Work queued behind a job that the worker is running and that waits for a gate."""
    gate, running = threading.Event(), threading.Event()

    def kernel(x):
        running.set()
        if not gate.wait(HANG_GUARD):
            raise TimeoutError("the test never opened the gate")
        return x.copy()

    gated_p = Primitive("gated_copy")
    gated_p.def_impl(kernel)
    gated_p.def_abstract_eval(lambda aval: aval)
    x = minijax.device_put(np.arange(4, dtype=np.float32))
    held = gated_p.bind(x)
    assert running.wait(HANG_GUARD)  # the worker is inside the runner, at the gate
    work = queue_work(held)
    work.expected.insert(0, (held, np.arange(4, dtype=np.float32)))
    return work, gate


def test_an_interrupt_at_every_bytecode_of_a_wait_while_the_worker_runs_the_jobs():
    """The waiting thread finds the worker running a job: it sleeps, the gate opens as
    it starts to, the worker gives way, and the waiting thread runs the rest."""
    def trial(injector: Injector) -> None:
        work, gate = gated_work()
        injector.on_call = {runtime.Device._sleep.__code__: gate.set}
        try:
            with injector.installed():
                wait(work, "np.asarray(last)")
        finally:
            gate.set()
            check_recovered(work)

    assert inject_everywhere(trial, KeyboardInterrupt) > 200


TWO_DEVICES = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
import minijax
import test_interrupts as T

d0, d1 = minijax.devices()


def trial(injector):
    with T.worker_kept_off_the_gil():
        host = np.arange(4, dtype=np.float32)
        a = minijax.device_put(host, d0) * 2.0
        b = minijax.device_put(a, d1)  # a job on d1 that waits for a value from d0
        work = T.Work(b, [(a, host * 2), (b, host * 2), (b + 1.0, host * 2 + 1)], [])
        try:
            with injector.installed():
                T.wait(work, "np.asarray(last)")
        finally:
            T.check_recovered(work)


print(T.inject_everywhere(trial, KeyboardInterrupt))
"""


def test_an_interrupt_at_every_bytecode_of_a_wait_across_two_devices():
    """The waiting thread runs a job of one device that waits for a value of another
    (it runs that device's jobs too, from inside the first one's runner)."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    script = TWO_DEVICES.format(tests=os.path.dirname(__file__))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=10 * HANG_GUARD)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 100


# ---------------------------------------------------------------------------------------
# Signals at random times
# ---------------------------------------------------------------------------------------


class Alarm:
    """A one-shot SIGALRM whose handler raises ``exception`` (once, and only while
    armed), as Python's handler of Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, exception: type[BaseException]) -> None:
        self.exception = exception
        self.armed = False

    def handler(self, signum, frame) -> None:
        if self.armed:
            self.armed = False
            raise self.exception()

    def arm(self, delay: float) -> None:
        gc.disable()  # a signal during a gc callback (JAX has one) would be lost
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, delay)

    def disarm(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        gc.enable()

    @contextlib.contextmanager
    def installed(self) -> Iterator[Alarm]:
        previous = signal.signal(signal.SIGALRM, self.handler)
        try:
            yield self
        finally:
            self.disarm()
            signal.signal(signal.SIGALRM, previous)


SIGNAL_TRIALS = 200
SIZE = 20_000  # the arrays' size: a wait takes some time, but not much


def typical_wait_seconds() -> float:
    """How long waiting for ``queue_work``'s last array takes here, roughly: to spread
    the signals over the wait (nothing is asserted on it)."""
    times = []
    for _ in range(5):
        work = queue_work(size=SIZE)
        start = time.perf_counter()
        wait(work, "np.asarray(last)")
        times.append(time.perf_counter() - start)
    return float(np.median(times))


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
@pytest.mark.parametrize("exception", INTERRUPTS)
def test_signals_at_random_times_while_waiting(exception):
    rng = random.Random(19)
    typical = typical_wait_seconds()
    interrupted = 0
    with Alarm(exception).installed() as alarm:
        for _ in range(SIGNAL_TRIALS):
            work = queue_work(size=SIZE)
            how = rng.choice(list(WAITS))
            try:
                alarm.arm(rng.uniform(1e-6, 1.5 * typical))
                wait(work, how)
                alarm.disarm()
            except exception:
                interrupted += 1
            finally:
                alarm.disarm()
            check_recovered(work)
    assert interrupted > 0


# ---------------------------------------------------------------------------------------
# Kernels that raise KeyboardInterrupt or SystemExit themselves
# ---------------------------------------------------------------------------------------


def raising_primitive(exception: type[BaseException], times: int) -> Primitive:
    """A copy whose kernel raises ``exception`` the first ``times`` times it runs."""
    left = [times]

    def kernel(x):
        if left[0] > 0:
            left[0] -= 1
            raise exception()
        return x.copy()

    prim = Primitive(f"raises_{exception.__name__}")
    prim.def_impl(kernel)
    prim.def_abstract_eval(lambda aval: aval)
    return prim


@pytest.mark.parametrize("exception", INTERRUPTS)
def test_a_kernel_interrupted_on_the_waiting_thread_is_run_again(exception):
    """As if Ctrl-C landed inside the kernel: the waiting thread gets the interrupt, and
    the job, still queued, is run again by the worker, this time to the end."""
    with worker_kept_off_the_gil():
        x = minijax.device_put(np.arange(3, dtype=np.float32))
        y = raising_primitive(exception, times=1).bind(x)
        z = y * 2.0
        with pytest.raises(exception):
            np.asarray(z)
        assert eventually(z.is_ready)
    np.testing.assert_array_equal(np.asarray(z), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("exception", INTERRUPTS)
def test_a_kernel_that_always_raises_fails_its_job_on_the_worker(exception):
    """Nothing can interrupt the worker thread, so there a kernel's KeyboardInterrupt or
    SystemExit is the job's failure; the worker lives on."""
    x = minijax.device_put(np.arange(3, dtype=np.float32))
    y = raising_primitive(exception, times=10**9).bind(x)
    z = y + 1.0
    assert eventually(z.is_ready)  # nobody waited: the worker ran both jobs
    for array in (y, z):
        with pytest.raises(errors.JaxRuntimeError, match=exception.__name__) as info:
            array.block_until_ready()
        assert type(info.value.__cause__) is exception
    assert (x + 1.0).tolist() == [1.0, 2.0, 3.0]
    assert eventually(lambda: device_is_idle(x.device))


# ---------------------------------------------------------------------------------------
# Kernels that dispatch work to their own device and wait for it
# ---------------------------------------------------------------------------------------


def sin_twice_kernel(x: np.ndarray) -> minijax.Array:
    """An impl written with jnp, as JAX allows: its operations are dispatched to the device
    whose job is running this kernel, and converting the result waits for them."""
    return minijax.numpy.sin(x) * 2.0


sin_twice_p = Primitive("sin_twice")
sin_twice_p.def_impl(sin_twice_kernel)
sin_twice_p.def_abstract_eval(lambda aval: aval)


def nested_kernel(x: np.ndarray) -> np.ndarray:
    """Two levels deep: a kernel that binds sin_twice and calls a jitted program that
    prints (which waits for its device), then waits for both."""
    a = sin_twice_p.bind(x)
    b, _ = plus_one_and_print(x)
    return np.asarray(a) + np.asarray(b)


nested_p = Primitive("nested_dispatch")
nested_p.def_impl(nested_kernel)
nested_p.def_abstract_eval(lambda aval: aval)


@minijax.jit
def plus_one_and_print(a):
    minijax.debug.print("inside a kernel: {:.3f}", a[1])
    return a + 1.0, a


def queue_dispatching_work() -> Work:
    """Jobs whose kernels dispatch to their own device, and jobs queued behind them that
    use their results (they must not run before them)."""
    host = np.arange(4, dtype=np.float32)
    x = minijax.device_put(host)
    y = sin_twice_p.bind(x)
    z = nested_p.bind(y)
    last = z * 3.0
    hy = np.sin(host) * 2
    hz = np.sin(hy) * 2 + hy + 1
    return Work(x, [(y, hy), (z, hz), (last, hz * 3)], [])


def finishes(fun: Callable[[], object]) -> bool:
    """Whether ``fun()`` returns (or raises) before the hang guard runs out: it runs on a
    daemon thread, a thread that waits like any other."""
    thread = threading.Thread(target=fun, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    return not thread.is_alive()


def test_a_kernel_that_waits_for_its_own_device_on_the_waiting_thread(capfd):
    """The waiting thread runs the jobs, and so the kernels: what they dispatch runs at
    once (it used to be queued behind the kernel's own job, which waited for it for ever,
    re-checking every 5 ms)."""
    with worker_kept_off_the_gil():
        work = queue_dispatching_work()
        assert finishes(lambda: np.asarray(work.expected[-1][0])), "the wait hangs"
    check_recovered(work)
    assert capfd.readouterr().out == "inside a kernel: 1.683\n"


def test_a_kernel_that_waits_for_its_own_device_on_the_worker(capfd):
    work = queue_dispatching_work()  # nobody waits: the worker runs the kernels
    check_recovered(work)
    assert capfd.readouterr().out == "inside a kernel: 1.683\n"


def test_a_kernel_that_waits_for_an_array_queued_behind_its_job_fails():
    """That array can only be computed after the job: a deadlock, reported as the job's
    failure rather than a wait for ever."""
    later: list[minijax.Array] = []
    gate = threading.Event()

    def kernel(x):
        assert gate.wait(HANG_GUARD)
        return x + np.asarray(later[0])

    waits_p = Primitive("waits_for_a_later_job")
    waits_p.def_impl(kernel)
    waits_p.def_abstract_eval(lambda aval: aval)
    x = minijax.device_put(np.arange(3, dtype=np.float32))
    y = waits_p.bind(x)
    later.append(x + 1.0)
    gate.set()
    assert eventually(y.is_ready), "the worker hangs in the kernel"
    with pytest.raises(errors.JaxRuntimeError, match="deadlock: a kernel running on cpu:0 "
                       "waits for an array queued behind its own job"):
        y.block_until_ready()
    np.testing.assert_array_equal(np.asarray(later[0]), [1.0, 2.0, 3.0])
    assert eventually(lambda: device_is_idle(x.device))


TRACED_KERNELS |= {sin_twice_kernel.__code__, nested_kernel.__code__}


def test_an_interrupt_at_every_bytecode_of_a_wait_with_kernels_that_dispatch(capfd):
    """The jobs such a kernel runs at once stay queued until done, right behind its own:
    interrupted, they are run again (or their results are not needed any more)."""
    def trial(injector: Injector) -> None:
        with worker_kept_off_the_gil():
            work = queue_dispatching_work()
            try:
                with injector.installed():
                    wait(work, "np.asarray(last)")
            finally:
                check_recovered(work)

    assert inject_everywhere(trial, KeyboardInterrupt) > 200
    assert "inside a kernel: 1.683\n" in capfd.readouterr().out
