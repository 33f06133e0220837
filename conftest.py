"""pytest set-up shared by the tests and the notebook checks (tests/, book/, solutions/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# No test may depend on the machine's speed: Hypothesis's default deadline (200 ms for each
# example) fails a property test on a slow or busy machine, so examples may take their time.
settings.register_profile("course", deadline=None)
settings.load_profile("course")


def pytest_configure(config: pytest.Config) -> None:
    """Find pyproject's ``--nbval-sanitize-with tools/nbval_sanitize.cfg`` from any current
    directory: nbval opens the path as given, so outside the repository root the notebooks
    would fail to load it. A path that exists where pytest runs is left as it is."""
    path = getattr(config.option, "nbval_sanitize_with", None)
    if path and not Path(path).is_absolute() and not Path(path).exists():
        config.option.nbval_sanitize_with = str(config.rootpath / path)
