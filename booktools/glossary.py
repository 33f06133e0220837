"""The glossary of the Traditional Chinese terms the notebooks use.

The course grew from a text written in Traditional Chinese, and the chapters pair its terms
with the English ones: "asynchronous dispatch (非同步派遣)". The meanings live in one data
file, ``book/glossary.yml``; which notebook introduces a term is read from the notebooks
themselves, so the glossary page of the book site cannot drift from the chapters. A term is
a run of CJK ideographs: "形狀變換、堆疊" holds two terms, split at the enumeration comma.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from booktools.source import ROOT

GLOSSARY = ROOT / "book" / "glossary.yml"
CJK_TERM = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass(frozen=True)
class Entry:
    term: str
    english: str
    definition: str


def load_entries(path: Path = GLOSSARY) -> dict[str, Entry]:
    """The glossary's entries by term, in the file's order."""
    import yaml  # the book and test extras install PyYAML; the course's runtime does not

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {term: Entry(term, fields["english"], fields["definition"])
            for term, fields in data.items()}


def visible_text(notebook: Path) -> str:
    """Everything a reader of ``notebook`` sees as text: cell sources and text outputs."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            for mime in ("text/plain", "text/markdown", "text/html"):
                parts.append("".join(output.get("data", {}).get(mime, "")))
    return "\n".join(parts)


def term_uses(notebooks: Sequence[Path]) -> dict[str, list[Path]]:
    """Each term the notebooks use, with the notebooks that use it; terms and notebooks come
    in the order given, so the first notebook listed for a term is the one introducing it."""
    uses: dict[str, list[Path]] = {}
    for notebook in notebooks:
        for term in dict.fromkeys(CJK_TERM.findall(visible_text(notebook))):
            uses.setdefault(term, []).append(notebook)
    return uses


def glossary_markdown(notebooks: Sequence[Path], link: Callable[[Path], str],
                      entries: dict[str, Entry] | None = None) -> str:
    """The glossary page: a table of every term, in the order the notebooks introduce them.

    ``link(notebook)`` gives the Markdown link to a notebook's page. A term missing from the
    glossary file raises ``KeyError`` (the tests say which).
    """
    entries = load_entries() if entries is None else entries
    rows = ["| 中文 | English | meaning | introduced in |", "|---|---|---|---|"]
    for term, pages in term_uses(notebooks).items():
        entry = entries[term]
        rows.append(f"| {term} | {entry.english} | {entry.definition} | {link(pages[0])} |")
    intro = ("The course grew from a text written in Traditional Chinese, and the chapters pair "
             "its terms with the English ones. This page is generated from the notebooks: each "
             "term is listed where it first appears, in reading order.")
    table = "```{container} glossary-table\n" + "\n".join(rows) + "\n```\n"
    return "# Glossary (詞彙表)\n\n" + intro + "\n\n" + table
