"""``jit``: trace a function once per argument signature, compile it, run it as one job.

``jit(f)(x)`` does not run ``f`` on ``x``. It looks up the *signature* of the call -- the
pytree structure of the arguments, each leaf's shape, dtype and weak type, the values
of the static arguments -- in a cache. On a miss, it traces ``f`` to a jaxpr (running
the Python code once, on tracers) and compiles that jaxpr; on a hit, it skips Python
entirely and puts the compiled program on the device's queue as a single job. A new
signature (another shape, a Python int instead of a float, a different static value)
means a new trace: that is *retracing*.

Everywhere else a jitted call is the primitive ``jit``, recorded as one equation whose
body is the cached jaxpr: the primitive, its rules and compiling a jaxpr through the
installed backend are ``jit_primitive.py``; running a cached signature as one job on the
device's queue is ``dispatch.py``. This module is the cache in front of them.

Two ways to jit a method (``self`` is the first argument):

* ``jit(Model.apply, static_argnums=0)``, or ``@partial(jit, static_argnums=0)`` on the
  method: ``self`` is static, so it must be hashable, and its fields become constants of
  the trace. Changing a field is *not* seen unless ``__hash__``/``__eq__`` reflect it.
* register the class as a pytree (``tree_util.register_pytree_node_class``): ``self``
  is then an ordinary argument whose array fields are traced, and a new value of a
  field is just a new input.

``donate_argnums``/``donate_argnames`` are accepted and recorded in the equation (as
``donated_invars``, like JAX) but ignored: minijax never reuses an input's memory.
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from minijax import core, tracing
from minijax.array import Array
from minijax.compiler import stages
from minijax.compiler.dispatch import CacheEntry, dispatch
from minijax.compiler.jit_primitive import jit_p, tracer_consts_as_inputs
from minijax.core import ShapedArray, Tracer
from minijax.errors import check_callable
from minijax.flags import config, on_pieces_change
from minijax.interpreters import batching
from minijax.jaxpr import eval_closed_jaxpr
from minijax.shape_dtype import abstractify
from minijax.tracing import DebugInfo, argument_names, trace_function
from minijax.tree_util import PyTreeDef, tree_flatten

# ---------------------------------------------------------------------------------------
# Static arguments
# ---------------------------------------------------------------------------------------


def _as_tuple(x: int | str | Sequence | None) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, (int, str)) else tuple(x)


def _positional_names(signature: inspect.Signature | None) -> list[str] | None:
    """The names of the parameters that can be passed by position, or None when there is
    no limit (``*args``) or no signature."""
    if signature is None:
        return None
    names = []
    for name, param in signature.parameters.items():
        if param.kind is param.VAR_POSITIONAL:
            return None
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(name)
    return names


def _resolve_static(signature: inspect.Signature | None, argnums: tuple, argnames: tuple,
                    what: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Check ``static_argnums``/``static_argnames`` (or the donate_ pair) against the
    signature, and complete each from the other, as JAX does: a static argument is static
    whether it is passed by position or by keyword."""
    positional = _positional_names(signature)
    if positional is not None and argnums:
        if any(not -len(positional) <= i < len(positional) for i in argnums):
            raise ValueError(f"Jitted function has {what}_argnums={argnums}, but only "
                             f"accepts {len(positional)} positional arguments.")
        argnums = tuple(sorted({i % len(positional) for i in argnums}))
    if signature is not None and argnames:
        params = signature.parameters
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        invalid = {n for n in argnames if n not in params} if not takes_kwargs else set()
        if invalid:
            raise ValueError(f"Jitted function has invalid argnames {invalid} in "
                             f"{what}_argnames. Function does not take these args.")
    if positional is not None:
        argnames = tuple(dict.fromkeys(
            [*argnames, *(positional[i] for i in argnums)]))
        argnums = tuple(sorted({*argnums, *(positional.index(n) for n in argnames
                                            if n in positional)}))
    return argnums, argnames


def _check_hashable(value: Any) -> None:
    try:
        hash(value)
    except TypeError as err:
        raise ValueError(
            "Non-hashable static arguments are not supported. An error occurred while "
            f"trying to hash an object of type {type(value)}, {value}. The error was:\n"
            f"{type(err).__name__}: {err}\n") from err


# ---------------------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------------------

# Flags that change what tracing produces are part of every signature. Reading them on
# every call would cost time, so they are copied here whenever one changes.
_config_state: tuple = ()


def _read_config() -> None:
    global _config_state
    _config_state = (config.jax_enable_x64, config.jax_numpy_dtype_promotion)


_read_config()
config.on_change(_read_config)


class _Cache(dict):
    """A signature -> entry dictionary that :func:`_forget_traces` can find and empty."""

    __slots__ = ("__weakref__",)


_all_caches: weakref.WeakValueDictionary[int, _Cache] = weakref.WeakValueDictionary()
_shared_caches: weakref.WeakKeyDictionary[Callable, dict[tuple, tuple[dict, dict]]] = \
    weakref.WeakKeyDictionary()


def _caches(fun: Callable, options: tuple) -> tuple[dict, dict]:
    """The caches of ``fun`` jitted with ``options``: ``jit(f)(x)`` twice traces once."""
    try:
        by_options = _shared_caches.setdefault(fun, {})
    except TypeError:  # a callable that cannot be weakly referenced: its own caches
        by_options = {}
    if options not in by_options:
        by_options[options] = (_Cache(), _Cache())
        _all_caches.update((id(c), c) for c in by_options[options])
    return by_options[options]


def cache_key(in_tree: PyTreeDef, avals: Sequence[ShapedArray], statics: tuple,
              context: tuple) -> Hashable:
    """What a call's signature is keyed by: two calls with equal keys share one trace.

    ``in_tree`` is the structure of the dynamic arguments, ``avals`` their leaves' types
    (shape, dtype, weak type), ``statics`` the static arguments as (position or name, type,
    value), and ``context`` what else a trace depends on: the flags that change tracing
    and the axis names vmap has bound (``psum(1, "i")`` is the size of ``"i"``, fixed in
    the trace). Whatever the function's jaxpr depends on must be in the key; anything
    more only retraces for nothing.
    """
    return (in_tree, *avals, statics, context)


def cached(cache: dict, key: Hashable, make_entry: Callable[[], CacheEntry]) -> CacheEntry:
    """The entry ``cache`` holds for ``key``; on a miss, ``make_entry()`` (which traces the
    function) and remember it under ``key``."""
    entry = cache.get(key)
    if entry is None:
        entry = cache[key] = make_entry()
    return entry


_REFERENCE_CACHE = (cache_key, cached)
# The fast path of ``Jitted.__call__`` keys calls on arrays by their types alone, which
# is what the reference key means. Its cache is filled only while the reference key and
# cache are installed: with a learner's, every call takes the general path, so that what
# the learner's key decides is what happens.
_fast_path = True


def _forget_traces() -> None:
    """A piece was installed or reset: no trace made with the previous ones is served."""
    global _fast_path
    for cache in list(_all_caches.values()):
        cache.clear()
    _fast_path = (cache_key, cached) == _REFERENCE_CACHE


on_pieces_change(_forget_traces)


def _fast_leaf_key(leaf: Any) -> Any:
    """What the fast path keys a leaf by: an array's type, or a NumPy array's shape and
    dtype (which, with the flags in the key, fix the type ``jit`` gives it); None for any
    other leaf, which takes the general path."""
    kind = type(leaf)
    if kind is Array:
        return leaf.aval
    if kind is np.ndarray:
        return (leaf.shape, leaf.dtype)
    return None


class Jitted:
    """``jit(fun)``: call it like ``fun``. Also ``.trace(...)``, ``.lower(...)`` (ahead
    of time compilation, see ``minijax.compiler.stages``), ``.eval_shape(...)``."""

    def __init__(self, fun: Callable, static_argnums: tuple[int, ...],
                 static_argnames: tuple[str, ...], donate_argnums: tuple[int, ...],
                 donate_argnames: tuple[str, ...], keep_unused: bool, inline: bool) -> None:
        functools.update_wrapper(self, fun)
        self._fun = fun
        try:
            signature: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):
            signature = None
        self._static_argnums, self._static_argnames = _resolve_static(
            signature, static_argnums, static_argnames, "static")
        self._donate_argnums, self._donate_argnames = _resolve_static(
            signature, donate_argnums, donate_argnames, "donate")
        self._keep_unused = keep_unused
        self._inline = inline
        self._name = tracing.tracing_context(fun, "jit").fun_name
        options = (self._static_argnums, self._static_argnames, self._donate_argnums,
                   self._donate_argnames, keep_unused, inline)
        # Signature -> entry; and the same entries, for calls on arrays only, keyed by
        # their types alone. Shared by every jit of the same function with these options.
        self._cache, self._fast_cache = _caches(fun, options)

    # --- calling ----------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The fast path, for eager calls on arrays with a known signature: one dictionary
        lookup keyed on the arrays' types, then one job on the device's queue."""
        if kwargs or self._static_argnums or core.current_trace() is not core.eval_trace:
            return self._call(args, kwargs)
        key = [_config_state]
        for arg in args:
            if type(arg) is not Array:
                return self._call_with_pytrees(args)
            key.append(arg.aval)
        entry = self._fast_cache.get(tuple(key))
        if entry is None:
            return self._call(args, kwargs)
        return entry.unflatten(dispatch(entry, args))

    def _call_with_pytrees(self, args: tuple) -> Any:
        """Almost as fast: positional pytrees of arrays (NumPy arrays too), keyed by their
        structure as well."""
        leaves, treedef = tree_flatten(args)
        key = [treedef, _config_state]
        for leaf in leaves:
            leaf_key = _fast_leaf_key(leaf)
            if leaf_key is None:
                return self._call(args, {})
            key.append(leaf_key)
        entry = self._fast_cache.get(tuple(key))
        if entry is None:
            return self._call(args, {})
        return entry.unflatten(dispatch(entry, leaves))

    def _call(self, args: tuple, kwargs: dict) -> Any:
        """The general path: static arguments, pytrees, Python scalars, tracing."""
        entry, leaves, consts = self._entry(args, kwargs)
        trace = core.current_trace()
        if trace is core.eval_trace and not consts:
            outs = dispatch(entry, leaves)
        elif entry.inline and trace is not core.eval_trace:
            outs = eval_closed_jaxpr(entry.params["jaxpr"], *consts, *leaves)
        else:
            outs = jit_p.bind(*consts, *leaves, **entry.params)
        return entry.unflatten(outs)

    # --- signatures -------------------------------------------------------------------
    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple, tuple, dict]:
        """(static positional, static keyword, dynamic positional, dynamic keyword); the
        static ones as (position or name, type, value)."""
        # A static value's type is part of the key: 1, 1.0 and True are equal, but a
        # function may well treat them differently.
        static_args = tuple((i, type(a), a) for i, a in enumerate(args)
                            if i in self._static_argnums)
        static_kwargs = tuple(sorted((k, type(v), v) for k, v in kwargs.items()
                                     if k in self._static_argnames))
        for *_, value in static_args + static_kwargs:
            _check_hashable(value)
        dynamic = tuple(a for i, a in enumerate(args) if i not in self._static_argnums)
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return static_args, static_kwargs, dynamic, dynamic_kwargs

    def _entry(self, args: tuple, kwargs: dict) -> tuple[CacheEntry, list[Any], list[Any]]:
        """The cache entry for this call (tracing on a miss), the flat dynamic arguments,
        and the values of tracers the function captured from an enclosing trace."""
        static_args, static_kwargs, dynamic, dynamic_kwargs = self._split(args, kwargs)
        leaves, treedef = tree_flatten((dynamic, dynamic_kwargs))
        avals = self._avals(leaves, args, kwargs)
        key = cache_key(treedef, avals, static_args + static_kwargs,
                        (_config_state, batching.axis_env()))
        traced: list[list[Any]] = []  # the captured tracers of a trace made now

        def make_entry() -> CacheEntry:
            entry, consts = self._trace(args, kwargs, avals, dynamic, dynamic_kwargs)
            traced.append(consts)
            return entry

        entry = cached(self._cache, key, make_entry)
        if traced and traced[0]:  # a trace that captured outer tracers is that trace's only
            self._cache.pop(key, None)
            return entry, leaves, traced[0]
        if _fast_path and not kwargs:
            self._remember_fast(args, leaves, avals, entry)
        return entry, leaves, []

    def _remember_fast(self, args: tuple, leaves: list[Any], avals: list[ShapedArray],
                       entry: CacheEntry) -> None:
        """File ``entry`` under the fast path's key for this call, if it has one: the
        arrays' types (and their tree unless they are flat arrays of minijax's own)."""
        if all(type(a) is Array for a in args):
            self._fast_cache[(_config_state, *avals)] = entry
            return
        leaf_keys = [_fast_leaf_key(leaf) for leaf in leaves]
        if None not in leaf_keys:
            self._fast_cache[(tree_flatten(args)[1], _config_state, *leaf_keys)] = entry

    def _avals(self, leaves: list[Any], args: tuple, kwargs: dict) -> list[ShapedArray]:
        """The leaves' types; a leaf that is no array is reported by its argument's name."""
        avals = []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, (Array, Tracer)):
                avals.append(leaf.aval)
                continue
            try:
                avals.append(abstractify(leaf, self._fun, ""))
            except TypeError:  # say which argument (the names are only made now)
                names = argument_names(self._fun, args, kwargs, self._static_argnums)
                abstractify(leaf, self._fun, names[i] if i < len(names) else "")
                raise
        return avals

    def _trace(self, args: tuple, kwargs: dict, avals: list[ShapedArray], dynamic: tuple,
               dynamic_kwargs: dict) -> tuple[CacheEntry, list[Any]]:
        """Trace the function on ``avals`` (the dynamic leaves' types); returns the cache
        entry and the captured tracers of enclosing traces (which become leading inputs
        of the equation)."""
        static_positions = self._static_argnums

        def with_statics(*dyn_args: Any, **dyn_kwargs: Any) -> Any:
            filled = iter(dyn_args)
            full = [a if i in static_positions else next(filled) for i, a in enumerate(args)]
            return self._fun(*full, **{**kwargs, **dyn_kwargs})

        in_tree = tree_flatten((dynamic, dynamic_kwargs))[1]
        names = argument_names(self._fun, args, kwargs, static_positions) \
            or ("",) * in_tree.num_leaves
        arg_avals, kwarg_avals = in_tree.unflatten(avals)
        closed, out_tree = trace_function(with_statics, tuple(arg_avals),
                                          DebugInfo("jit", self._fun, names), kwarg_avals)
        closed, consts = tracer_consts_as_inputs(closed)
        donated = (False,) * len(consts) + self._donated(in_tree, dynamic, dynamic_kwargs)
        params = {"jaxpr": closed, "name": self._name, "donated_invars": donated,
                  "keep_unused": self._keep_unused}
        return CacheEntry(params, in_tree, names, out_tree, self._inline), consts

    def _donated(self, in_tree: PyTreeDef, dynamic: tuple, dynamic_kwargs: dict
                 ) -> tuple[bool, ...]:
        """``donated_invars``: one flag per flattened input."""
        if not self._donate_argnums and not self._donate_argnames:
            return (False,) * in_tree.num_leaves
        positions = [i for i in range(len(dynamic) + len(self._static_argnums))
                     if i not in self._static_argnums]
        flags = []
        for i, arg in zip(positions, dynamic):
            flags += [i in self._donate_argnums] * tree_flatten(arg)[1].num_leaves
        for key in sorted(dynamic_kwargs):
            n = tree_flatten(dynamic_kwargs[key])[1].num_leaves
            flags += [key in self._donate_argnames] * n
        return tuple(flags)

    # --- methods, stages and bookkeeping ----------------------------------------------
    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """``@jit`` on a method: ``obj.method(x)`` calls the jitted function with ``obj``
        as its first argument (static only with ``static_argnums=0``)."""
        return self if instance is None else types.MethodType(self, instance)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """Ahead of time: trace for these arguments (arrays or ``ShapeDtypeStruct`` s)."""
        entry, _, consts = self._entry(args, kwargs)
        if consts:
            raise TypeError("jit(f).trace() cannot be used inside a transformation of a "
                            "function that f closes over")
        return stages.Traced(self._name, entry)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """Ahead of time: trace and lower to StableHLO (``.as_text()``, ``.compile()``)."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """The output's types (``ShapeDtypeStruct`` s), without computing anything."""
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        self._cache.clear()
        self._fast_cache.clear()

    def _cache_size(self) -> int:
        return len(self._cache)

    def __repr__(self) -> str:
        return f"<PjitFunction of {self._fun!r}>"


_NO_FUNCTION: Any = object()  # jit(...) without a function: a decorator (None is an error)


def jit(fun: Callable = _NO_FUNCTION, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, keep_unused: bool = False,
        inline: bool = False, backend: str | None = None) -> Any:
    """Compile ``fun``: trace it once per argument signature and run the compiled program.

    ``static_argnums``/``static_argnames`` name arguments that are not traced but passed
    to ``fun`` as they are (they must be hashable: their values are part of the cache
    key). ``donate_argnums``/``donate_argnames`` are accepted and ignored. With
    ``inline=True`` a call inside another trace records ``fun``'s equations directly
    instead of a nested ``jit`` equation. Works as a decorator, with or without options
    (``@partial(jit, static_argnums=1)``). ``backend`` is deprecated in JAX and only
    ``"cpu"`` exists here: accepted with JAX's warning, anything else is JAX's error.
    """
    if backend is not None:
        _check_backend(backend)
    options = dict(static_argnums=_as_tuple(static_argnums),
                   static_argnames=_as_tuple(static_argnames),
                   donate_argnums=_as_tuple(donate_argnums),
                   donate_argnames=_as_tuple(donate_argnames),
                   keep_unused=keep_unused, inline=inline)
    if fun is _NO_FUNCTION:
        return lambda f: jit(f, **options)
    check_callable(fun)
    return Jitted(fun, **options)


def _check_backend(backend: str) -> None:
    warnings.warn("backend and device argument on jit is deprecated. You can use "
                  '`jax.device_put(..., jax.local_devices(backend="cpu")[0])` on the inputs '
                  "to the jitted function to get the same behavior.", DeprecationWarning,
                  stacklevel=3)
    if backend != "cpu":
        raise RuntimeError(f"Unknown backend {backend}. Available backends are ['cpu']")


__all__ = ["Jitted", "cache_key", "cached", "jit", "jit_p"]
