"""The course's front door: set up the environment, open the book, run the tests.

Usage (from the repository root, with Python 3.11 or newer)::

    python3 tools/course.py lab              # set up .venv, open JupyterLab at the welcome page
    python3 tools/course.py lab --with-jax   # the same, adding real JAX beside minijax
    python3 tools/course.py test             # set up .venv with the test tools, run every test
    python3 tools/course.py execute          # re-execute book/ and solutions/ in place
    python3 tools/course.py book             # build the course as a website (_build/book/html)

This script uses only the standard library, because it runs before anything is installed.
It keeps one virtual environment in ``.venv``. It installs only when ``pyproject.toml``
changed or a command needs an extra it lacks (a stamp file inside the environment records
what was installed from which ``pyproject.toml``), so a second run starts at once, and it
rebuilds an environment that another Python made.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
MIN_PYTHON = (3, 11)  # the README, pyproject.toml and environment.yml say the same
WELCOME = "book/00_welcome.ipynb"
STAMP = ".course-installed.json"


def check_python() -> None:
    """Stop at once, saying what to do, when this Python is too old for the course."""
    if sys.version_info < MIN_PYTHON:
        wanted = ".".join(map(str, MIN_PYTHON))
        sys.exit(f"The course needs Python {wanted} or newer; this is Python "
                 f"{sys.version.split()[0]} ({sys.executable}).\n"
                 f"Run this script with a newer one, e.g. python{wanted} tools/course.py ...")


def venv_python(venv_dir: Path = VENV) -> Path:
    """The interpreter inside a virtual environment (its location differs on Windows)."""
    if os.name == "nt":
        return venv_dir / "Scripts" / "python.exe"
    return venv_dir / "bin" / "python"


def venv_version(venv_dir: Path) -> str | None:
    """The Python version that made ``venv_dir``, as its ``pyvenv.cfg`` records it."""
    cfg = venv_dir / "pyvenv.cfg"
    if not cfg.exists():
        return None
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return value.strip()
    return None


def stale_reason(venv_dir: Path, version: tuple[int, ...] = tuple(sys.version_info[:3])) -> str:
    """Why ``venv_dir`` cannot be reused by this Python ("" when it can).

    A virtual environment belongs to the interpreter that made it: one left by another
    Python (a failed first try with an old one, an upgrade) would fail the same way for
    ever, so it is rebuilt rather than reused.
    """
    if not venv_dir.exists():
        return ""
    made_by = venv_version(venv_dir)
    here = ".".join(map(str, version))
    if made_by is None or not venv_python(venv_dir).exists():
        return f"{venv_dir.name}/ is incomplete"
    if made_by.split(".")[:2] != here.split(".")[:2]:
        return f"{venv_dir.name}/ was made by Python {made_by}, and this is Python {here}"
    return ""


def run(*args: str | os.PathLike[str], env: dict[str, str] | None = None) -> None:
    """Run a command from the repository root; stop with its exit code if it fails."""
    print("+", " ".join(str(a) for a in args), flush=True)
    result = subprocess.run([str(a) for a in args], cwd=ROOT, env=env)
    if result.returncode != 0:
        sys.exit(result.returncode)


def installed(venv_dir: Path, digest: str) -> set[str]:
    """The extras installed into ``venv_dir`` from the ``pyproject.toml`` with ``digest``."""
    try:
        stamp = json.loads((venv_dir / STAMP).read_text())
    except (OSError, ValueError):
        return set()
    return set(stamp["extras"]) if stamp.get("pyproject") == digest else set()


def ensure_environment(*extras: str) -> Path:
    """Create ``.venv`` if needed and install the course with ``extras`` (e.g. "test")."""
    check_python()
    reason = stale_reason(VENV)
    if reason:
        print(f"{reason}: rebuilding it.", flush=True)
        shutil.rmtree(VENV)
    if not VENV.exists():
        print(f"[setup] Creating a virtual environment in {VENV.name}/ with Python "
              f"{sys.version.split()[0]} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    have, need = installed(VENV, digest), set(extras) | {""}  # "" is the course itself
    if not need <= have:
        install(digest, have | need)
    return venv_python()


def install(digest: str, extras: set[str]) -> None:
    """pip-install the course (editable) with ``extras``, showing pip's progress."""
    python = venv_python()
    named = sorted(e for e in extras if e)
    print("[setup] Updating pip ...", flush=True)
    run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    target = f".[{','.join(named)}]" if named else "."
    print(f"[setup] Installing the course{' with ' + ', '.join(named) if named else ''} "
          "(the first time takes a minute or two) ...", flush=True)
    run(python, "-m", "pip", "install", "--progress-bar", "on", "--editable", target)
    (VENV / STAMP).write_text(json.dumps({"pyproject": digest, "extras": sorted(extras)}))
    print("[setup] Done.", flush=True)


def has_display() -> bool:
    """Whether a browser could open here: always on macOS and Windows, else if X/Wayland runs."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def lab_command(python: Path, browser: bool) -> list[str]:
    """JupyterLab serving the whole repository, its URL opening the welcome notebook.

    The pre-save hook keeps saved notebooks in the form they are committed in, so that
    opening and saving one unchanged leaves the clone clean.
    """
    args = [str(python), "-m", "jupyter", "lab", f"--ServerApp.root_dir={ROOT}",
            f"--LabApp.default_url=/lab/tree/{WELCOME}",
            "--ContentsManager.pre_save_hook=booktools.notebook_format.pre_save_hook"]
    if not browser:
        args.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers often run as root
        args.append("--allow-root")
    return args


def course_env() -> dict[str, str]:
    """This environment with ``.venv`` activated, so that JupyterLab's terminal runs the
    course's ``python`` (and ``python -m grader`` finds its packages)."""
    env = dict(os.environ, VIRTUAL_ENV=str(VENV))
    env["PATH"] = os.pathsep.join([str(venv_python().parent), env.get("PATH", "")])
    return env


def lab(args: list[str]) -> None:
    """Open the course in JupyterLab; arguments other than ``--with-jax`` go to JupyterLab."""
    python = ensure_environment(*(["jax"] if "--with-jax" in args else []))
    browser = has_display()
    if not browser:
        print("No display found: open the URL that JupyterLab prints below.", flush=True)
    # Ctrl-C is JupyterLab's to handle (it asks, then shuts its kernels down); this
    # process only waits for it to finish. A handler, not SIG_IGN: a child inherits an
    # ignored signal, but a handled one is reset to its default when the child starts.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    jupyter_args = [a for a in args if a != "--with-jax"]
    server = subprocess.Popen(lab_command(python, browser) + jupyter_args, cwd=ROOT,
                              env=course_env())
    server.wait()
    print("JupyterLab has stopped. Come back with: python3 tools/course.py lab", flush=True)


def test(pytest_args: list[str]) -> None:
    python = ensure_environment("test", "book")  # the book's site is tested too
    run(python, "-m", "ruff", "check", ".")
    run(python, "-m", "pytest", "-n", "2", "--dist", "loadfile", *pytest_args)


def execute(paths: list[str]) -> None:
    python = ensure_environment("test")
    run(python, str(ROOT / "tools" / "execute_notebooks.py"), *paths)


def book(args: list[str]) -> None:
    """Build the course as a website in _build/book/html (tools/book_site.py, offline)."""
    python = ensure_environment("book")
    run(python, str(ROOT / "tools" / "book_site.py"), *args)


def main(argv: list[str]) -> None:
    commands = {"lab": lab, "test": test, "execute": execute, "book": book}
    if not argv or argv[0] not in commands:
        print(__doc__)
        sys.exit(2)
    commands[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
