"""What every test may rely on."""

from __future__ import annotations

import pytest

from minijax import pieces


@pytest.fixture(autouse=True)
def minijax_own_pieces():
    """A test that installs a learner's piece leaves minijax's own behind it, whatever
    happens in it (``reset`` with nothing installed costs nothing)."""
    yield
    pieces.reset()
