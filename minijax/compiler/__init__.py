"""Compilation: ``jit`` and its ahead-of-time stages, lowering to StableHLO, backends.

The pipeline, one module per step::

    jit.py            the cache of traced jaxprs, and the ``jit`` primitive
    stages.py         jit(f).trace(...) -> Traced -> .lower() -> Lowered -> .compile()
    lowering.py       jaxpr -> StableHLO text (the contract with every backend)
    stablehlo.py      that text -> a small graph IR
    stablehlo_ops.py  every StableHLO op and its properties, in one table
    passes.py         optimisations on the graph
    numpy_backend.py  the graph -> generated Python calling NumPy (the "mini-XLA")
    xla_backend.py    the same text compiled by real XLA, when jax is installed

Import from the modules themselves; ``jit`` itself is ``minijax.jit``.
"""
