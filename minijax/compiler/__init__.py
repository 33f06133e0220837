"""Compilation: ``jit`` and its ahead-of-time stages, lowering to StableHLO, backends.

The pipeline, one module per step::

    jit.py            jit(f): the cache of traced jaxprs, one entry per signature
    dispatch.py       running a cached signature eagerly: one job on the device's queue
    jit_primitive.py  the ``jit`` primitive, its rules, compiling a jaxpr
    stages.py         jit(f).trace(...) -> Traced -> .lower() -> Lowered -> .compile()
    lowering.py       jaxpr -> StableHLO text (the contract with every backend)
    stablehlo_ir.py   the small graph IR lowering builds, and its printer
    stablehlo_ops.py  every StableHLO op and its properties, in one table
    stablehlo.py      StableHLO text read back into that IR (what a backend does first)
    passes.py         optimisations on the graph
    numpy_backend.py  the graph -> generated Python calling NumPy (the "mini-XLA")
    xla_backend.py    the same text compiled by real XLA, when jax is installed

Import from the modules themselves; ``jit`` itself is ``minijax.jit``.
"""
