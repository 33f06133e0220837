"""The project's setup files agree with each other and stand on their own.

``environment.yml`` (conda) and ``pyproject.toml`` (pip) describe one environment; these
tests fail when someone adds a dependency to one and forgets the other. They also check
that the README's two set-up commands are the ones CI runs, and that nothing in the
project reaches outside the repository (a learner's clone has nothing beside it).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib"}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def pip_requirements() -> dict[str, SpecifierSet]:
    """Runtime plus test requirements that apply to conda's Python (3.11 and newer)."""
    project = pyproject()["project"]
    lines = project["dependencies"] + project["optional-dependencies"]["test"]
    reqs = [Requirement(line) for line in lines]
    return {
        r.name.lower(): r.specifier
        for r in reqs
        if r.marker is None or r.marker.evaluate({"python_version": "3.11"})
    }


def conda_requirements() -> dict[str, SpecifierSet]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    specs = {}
    for entry in env["dependencies"]:
        if not isinstance(entry, str) or entry.startswith(("python", "pip")):
            continue
        name, spec = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", entry).groups()
        specs[CONDA_TO_PYPI.get(name, name).lower().replace("_", "-")] = SpecifierSet(spec)
    return specs


def normalised(reqs: dict[str, SpecifierSet]) -> dict[str, SpecifierSet]:
    return {name.replace("_", "-"): spec for name, spec in reqs.items()}


def test_environment_yml_matches_pyproject():
    pip, conda = normalised(pip_requirements()), conda_requirements()
    assert sorted(pip) == sorted(conda), (
        f"only in pyproject: {sorted(set(pip) - set(conda))}; "
        f"only in environment.yml: {sorted(set(conda) - set(pip))}"
    )
    for name in pip:
        assert pip[name] == conda[name], f"{name}: pyproject {pip[name]} vs conda {conda[name]}"


def test_environment_yml_installs_the_project():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip_entries = [e for e in env["dependencies"] if isinstance(e, dict) and "pip" in e]
    assert pip_entries and any("." in line for line in pip_entries[0]["pip"])


def test_one_python_story():
    """The README, pyproject.toml, environment.yml, ruff and tools/course.py agree on the
    oldest supported Python."""
    oldest = re.fullmatch(r">=(3\.\d+)", pyproject()["project"]["requires-python"]).group(1)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"Python {oldest} or newer" in readme
    conda = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))["dependencies"]
    assert f"python>={oldest}" in conda
    assert pyproject()["tool"]["ruff"]["target-version"] == "py" + oldest.replace(".", "")
    course = (ROOT / "tools" / "course.py").read_text(encoding="utf-8")
    assert f"MIN_PYTHON = ({oldest.replace('.', ', ')})" in course


def test_the_jax_extra_is_the_tested_jax():
    extras = pyproject()["project"]["optional-dependencies"]
    assert extras["jax"] == [line for line in extras["test"] if line.startswith("jax")]


def test_runtime_dependencies_are_the_documented_few():
    names = {Requirement(line).name.lower() for line in pyproject()["project"]["dependencies"]}
    assert names == {"numpy", "sympy", "matplotlib", "ml_dtypes", "jupyterlab", "ipykernel"}


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^python3 tools/course\.py (\w+)\s*$", text, flags=re.M)


def test_readme_has_the_two_setup_commands():
    assert {"lab", "test"} <= set(readme_commands())


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in script.splitlines() if line and not line.startswith("#")]
    assert "python3 tools/course.py test" in commands


def test_course_script_rejects_unknown_commands():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "course.py"), "nonsense"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "Usage" in result.stdout


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / line for line in out.splitlines() if line]


def test_nothing_depends_on_the_shared_folder():
    offenders = []
    suffixes = {".py", ".ipynb", ".toml", ".yml", ".cfg", ".md", ""}
    for path in tracked_files():
        if path.suffix in suffixes and path.is_file() and path.name != "test_environment.py":
            if "../shared" in path.read_text(errors="ignore"):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
