"""Record JAX's results of the exact sweep cases in ``sweeps.json`` (run from anywhere:
``python tests/data/make_sweeps.py``; it needs JAX, the oracle, installed).

``tests/test_sweeps.py`` checks minijax against these digests where JAX is not installed,
and checks that they are still JAX's where it is. Rerun this script after changing the
operations or the special values in ``tests/sweeps.py``.
"""

from __future__ import annotations

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import sweeps  # noqa: E402


def main() -> None:
    import jax

    digests = {}
    for dtype in sweeps.DTYPES:
        for name, result in sweeps.jax_results(dtype).items():
            if sweeps.is_recorded(name, dtype):
                digests[f"{name}-{dtype}"] = sweeps.digest(result)
    out = {"jax_version": jax.__version__, "digests": digests}
    path = pathlib.Path(__file__).with_name("sweeps.json")
    path.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
    print(f"{len(digests)} digests written to {path}")


if __name__ == "__main__":
    main()
