"""``tools/course.py``, the front door a learner uses first.

It must refuse a too-old Python with a clear message, rebuild a ``.venv`` another Python
made, serve the whole repository with the welcome notebook behind the URL it prints, run
JupyterLab's terminal on the course's Python, and stop on Ctrl-C with a one-line goodbye.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_course():
    spec = importlib.util.spec_from_file_location("course", ROOT / "tools" / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


course = load_course()


def fake_venv(path: Path, version: str, with_python: bool = True) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text(f"home = /usr/bin\nversion = {version}\n")
    if with_python:
        (path / "bin" / "python").write_text("")
    return path


def test_a_venv_made_by_another_python_is_rebuilt(tmp_path):
    old = fake_venv(tmp_path / "old", "3.9.18")
    assert course.stale_reason(old, (3, 11, 7)) == (
        "old/ was made by Python 3.9.18, and this is Python 3.11.7")
    same = fake_venv(tmp_path / "same", "3.11.2")
    assert course.stale_reason(same, (3, 11, 7)) == ""
    broken = fake_venv(tmp_path / "broken", "3.11.7", with_python=False)
    assert course.stale_reason(broken, (3, 11, 7)) == "broken/ is incomplete"
    assert course.stale_reason(tmp_path / "absent", (3, 11, 7)) == ""


def test_a_too_old_python_is_told_what_to_do(monkeypatch):
    monkeypatch.setattr(course, "MIN_PYTHON", (99, 1))
    with pytest.raises(SystemExit) as stop:
        course.check_python()
    assert "needs Python 99.1 or newer" in str(stop.value)
    assert "python99.1 tools/course.py" in str(stop.value)


def test_the_stamp_remembers_extras_per_pyproject(tmp_path):
    (tmp_path / course.STAMP).write_text(json.dumps({"pyproject": "abc", "extras": ["", "jax"]}))
    assert course.installed(tmp_path, "abc") == {"", "jax"}
    assert course.installed(tmp_path, "changed") == set()
    assert course.installed(tmp_path / "nowhere", "abc") == set()


def test_the_labs_terminal_runs_the_course_python():
    env = course.course_env()
    assert env["PATH"].split(os.pathsep)[0] == str(course.venv_python().parent)
    assert env["VIRTUAL_ENV"] == str(course.VENV)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment_is_set_up() -> bool:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    return "" in course.installed(course.VENV, digest)


def wait_for(url: str, seconds: float = 60) -> bytes:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.mark.skipif(not environment_is_set_up(),
                    reason="needs the .venv that `python3 tools/course.py test` sets up")
def test_lab_serves_the_repository_at_the_welcome_notebook_and_stops_on_ctrl_c():
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "course.py"), "lab", f"--port={port}",
         "--ServerApp.port_retries=0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, env=dict(os.environ, DISPLAY="", WAYLAND_DISPLAY=""))
    try:
        printed = []
        while not (urls := re.findall(rf"http://127\.0\.0\.1:{port}\S+", "".join(printed))):
            line = server.stdout.readline()
            assert line, "JupyterLab stopped before printing its URL:\n" + "".join(printed)
            printed.append(line)
        url = urls[0]
        assert url.split("?")[0] == f"http://127.0.0.1:{port}/lab/tree/book/00_welcome.ipynb"
        page = wait_for(url).decode()
        assert '"treePath": "book/00_welcome.ipynb"' in page
        token = url.split("token=")[1]
        for folder, expected in [("exercises", "00_warmup.ipynb"), ("solutions", "00_warmup.ipynb"),
                                 ("minijax", "core.py"), ("book", "00_welcome.ipynb")]:
            listing = json.loads(wait_for(
                f"http://127.0.0.1:{port}/api/contents/{folder}?token={token}"))
            assert expected in {entry["name"] for entry in listing["content"]}, folder
        time.sleep(1)  # Ctrl-C once JupyterLab listens for it, as a person would press it
    finally:
        os.killpg(server.pid, signal.SIGINT)
        rest, _ = server.communicate(timeout=60)
    said = "".join(printed) + rest
    assert "Traceback" not in said
    assert said.rstrip().splitlines()[-1] == (
        "JupyterLab has stopped. Come back with: python3 tools/course.py lab")
