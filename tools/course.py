"""The course's front door: set up the environment, open the book, run the tests.

Usage (from the repository root, with any Python >= 3.10)::

    python3 tools/course.py lab       # create .venv, install the course, open JupyterLab
    python3 tools/course.py test      # create or update .venv with test extras, run every test
    python3 tools/course.py execute   # re-execute book/ and solutions/ in place

This script uses only the standard library, because it runs before anything is installed.
It keeps one virtual environment in ``.venv`` and reinstalls only when ``pyproject.toml``
changed (a hash of it is stored inside the environment), so a second run starts at once.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
WELCOME = "book/00_welcome.ipynb"


def venv_python() -> Path:
    """The interpreter inside ``.venv`` (its location differs on Windows)."""
    if os.name == "nt":
        return VENV / "Scripts" / "python.exe"
    return VENV / "bin" / "python"


def run(*args: str | os.PathLike[str], env: dict[str, str] | None = None) -> None:
    """Run a command from the repository root; stop with its exit code if it fails."""
    print("+", " ".join(str(a) for a in args), flush=True)
    result = subprocess.run([str(a) for a in args], cwd=ROOT, env=env)
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_environment(extras: str) -> Path:
    """Create ``.venv`` if needed and install the course with ``extras`` (e.g. "test").

    Installing is skipped when the same extras were installed from the same
    ``pyproject.toml`` before, which the stamp file records.
    """
    if not venv_python().exists():
        print(f"Creating a virtual environment in {VENV.name}/ ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    stamp = VENV / f".installed-{extras or 'base'}"
    if not stamp.exists() or stamp.read_text() != digest:
        python = venv_python()
        run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        target = f".[{extras}]" if extras else "."
        run(python, "-m", "pip", "install", "--quiet", "--editable", target)
        stamp.write_text(digest)
    return venv_python()


def has_display() -> bool:
    """Whether a browser could open here: always on macOS and Windows, else if X/Wayland runs."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def lab() -> None:
    python = ensure_environment("")
    args = [python, "-m", "jupyter", "lab", WELCOME]
    if not has_display():
        print("No display found: open the URL that JupyterLab prints below.", flush=True)
        args.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers often run as root
        args.append("--allow-root")
    run(*args)


def test(pytest_args: list[str]) -> None:
    python = ensure_environment("test")
    run(python, "-m", "ruff", "check", ".")
    run(python, "-m", "pytest", "-n", "2", "--dist", "loadfile", *pytest_args)


def execute(paths: list[str]) -> None:
    python = ensure_environment("test")
    run(python, str(ROOT / "tools" / "execute_notebooks.py"), *paths)


def main(argv: list[str]) -> None:
    commands = {"lab": lambda: lab(), "test": lambda: test(argv[1:]),
                "execute": lambda: execute(argv[1:])}
    if not argv or argv[0] not in commands:
        print(__doc__)
        sys.exit(2)
    commands[argv[0]]()


if __name__ == "__main__":
    main(sys.argv[1:])
