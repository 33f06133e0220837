"""Small data sets that ship with the course (see ``booktools/data/README.md`` for their
sources and licences), so that no notebook needs the network."""

from __future__ import annotations

import gzip
from importlib.resources import files

import numpy as np


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The UCI handwritten digits: ``(images, labels)``, images ``uint8`` of shape
    ``(1797, 8, 8)`` with values 0..16, labels ``int64`` of shape ``(1797,)`` with 0..9."""
    with gzip.open(files("booktools") / "data" / "digits.csv.gz", "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    return table[:, :64].reshape(-1, 8, 8).astype(np.uint8), table[:, 64]
