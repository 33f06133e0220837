"""The data sets shipped with the course load as documented, without the network."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from booktools.datasets import load_digits

ROOT = Path(__file__).resolve().parents[1]


def test_digits_are_the_uci_test_set():
    images, labels = load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert labels.shape == (1797,) and set(np.unique(labels)) == set(range(10))
    assert images.min() == 0 and images.max() == 16
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_every_shipped_data_file_names_its_source_and_licence():
    readme = (ROOT / "booktools" / "data" / "README.md").read_text()
    for path in (ROOT / "booktools" / "data").iterdir():
        if path.name != "README.md":
            assert f"`{path.name}`" in readme, path.name
    assert "CC BY 4.0" in readme and "doi.org/10.24432/C50P49" in readme
