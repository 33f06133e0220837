"""The one form in which the course's notebooks are stored.

A notebook's file must not change when a learner merely opens and saves it, or every
read-only visit would leave the clone dirty (and a later ``git pull`` would refuse).
Two writers touch notebooks: the executor that stores their outputs
(``tools/execute_notebooks.py``) and JupyterLab, which adds the running kernel's
``language_info`` when it opens a notebook and autosaves it. Both bring the metadata to
the form below: the executor before it writes, JupyterLab through :func:`pre_save_hook`,
which ``tools/course.py lab`` installs.
"""

from __future__ import annotations

from typing import Any

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

# What ipykernel reports about its language, less the Python version: that one differs
# from machine to machine, so the stored form leaves it out.
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
}


def normalise_metadata(nb: dict[str, Any]) -> None:
    """Give ``nb`` the stored kernel metadata and drop what differs from run to run."""
    metadata = nb.setdefault("metadata", {})
    if metadata.get("kernelspec", {}).get("name") in (None, KERNELSPEC["name"]):
        metadata["kernelspec"] = dict(KERNELSPEC)  # a learner's other kernel is kept
    if metadata.get("language_info", {}).get("name") in (None, "python"):
        metadata["language_info"] = dict(LANGUAGE_INFO)
    for cell in nb.get("cells", []):
        cell.get("metadata", {}).pop("execution", None)


def pre_save_hook(model: dict[str, Any], **kwargs: Any) -> None:
    """Jupyter Server's ``ContentsManager.pre_save_hook``: notebooks are saved normalised."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        normalise_metadata(model["content"])
