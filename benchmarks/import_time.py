"""How long a learner waits for ``import minijax.numpy`` and a first operation, and where
that time goes, beside JAX's.

    python benchmarks/import_time.py

Each measurement runs in a fresh interpreter (``python -X importtime``), five times; the
fastest run is reported, as the one least disturbed by the rest of the machine. The
breakdown groups the import times that Python reports by top-level package, so a slow
dependency (ml_dtypes 0.7.0 took about a second) stands out. Nothing here asserts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict

RUNS = 5
SNIPPET = """
import time
start = time.perf_counter()
import {module} as jnp
jnp.ones(16).__add__(1.0).block_until_ready()
print(time.perf_counter() - start)
"""
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def one_run(module: str) -> tuple[float, dict[str, float], dict[str, float]]:
    """(seconds to import and run a first op, seconds of import per top-level package,
    seconds of import per module)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           SNIPPET.format(module=module)],
                          capture_output=True, text=True, check=True)
    by_package: dict[str, float] = defaultdict(float)
    by_module = {}
    for self_us, _, _, name in IMPORT_LINE.findall(done.stderr):
        by_package[name.split(".")[0]] += int(self_us) / 1e6
        by_module[name] = int(self_us) / 1e6
    return float(done.stdout), dict(by_package), by_module


def report(module: str) -> None:
    runs = [one_run(module) for _ in range(RUNS)]
    total, packages, modules = min(runs, key=lambda run: run[0])
    print(f"import {module} + first op: {total:.3f} s (fastest of {RUNS}; "
          f"slowest {max(r[0] for r in runs):.3f} s)")
    for title, table in [("by package", packages), ("slowest modules", modules)]:
        print(f"  {title}:")
        for name, seconds in sorted(table.items(), key=lambda item: -item[1])[:6]:
            print(f"    {name:<40}{seconds:8.3f} s")


def main() -> None:
    report("minijax.numpy")
    try:
        import jax  # noqa: F401 - only to learn whether JAX is installed
    except ImportError:
        print("(JAX is not installed: no comparison)")
        return
    report("jax.numpy")


if __name__ == "__main__":
    main()
