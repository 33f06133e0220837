"""``minijax.numpy``: NumPy's API on top of ``lax``, as ``jax.numpy``.

Promotion and broadcasting live here (``promotion.py``); every function ends in strict
``lax`` primitives, which is why every one of them can be traced, differentiated and
compiled.
"""

import numpy as _np

from minijax.array import Array as ndarray
from minijax.numpy import array_methods as _array_methods
from minijax.numpy import linalg
from minijax.numpy.binning import *
from minijax.numpy.calculus import *
from minijax.numpy.convolution import *
from minijax.numpy.counting import *
from minijax.numpy.covariance import *
from minijax.numpy.creation import (
    arange,
    array,
    asarray,
    copy,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    geomspace,
    identity,
    indices,
    linspace,
    logspace,
    meshgrid,
    ones,
    ones_like,
    tri,
    tril,
    triu,
    zeros,
    zeros_like,
)
from minijax.numpy.dtype_functions import *
from minijax.numpy.index_tricks import *
from minijax.numpy.indexing import _getitem, _index_update_helper, take, take_along_axis
from minijax.numpy.logic import *
from minijax.numpy.manipulation import *
from minijax.numpy.nan_functions import *
from minijax.numpy.padding import *
from minijax.numpy.polynomials import *
from minijax.numpy.products import *
from minijax.numpy.rearranging import *
from minijax.numpy.reductions import *
from minijax.numpy.scalar_types import *
from minijax.numpy.searching import *
from minijax.numpy.setops import *
from minijax.numpy.sorting import *
from minijax.numpy.ufuncs import *

pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None

_array_methods.attach()
