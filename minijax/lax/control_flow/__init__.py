"""Control flow as higher-order primitives: their parameters are jaxprs.

``cond``/``switch`` choose a branch by a value, ``while_loop`` repeats while a value
says so, ``scan`` (and ``fori_loop``, ``map`` on top of it) loops a fixed number of
times. Each traces the user's Python functions into jaxprs (``common.py``) and binds one
primitive that carries them, so that a traced program keeps its control flow.
"""

from minijax.lax.control_flow.conditionals import cond, cond_p, switch
from minijax.lax.control_flow.loops import fori_loop, map, scan, scan_p, while_loop, while_p

__all__ = ["cond", "cond_p", "fori_loop", "map", "scan", "scan_p", "switch", "while_loop",
           "while_p"]
