"""Build the course as a static HTML website: ``python3 tools/course.py book``.

The site is made with Jupyter Book 1 (Sphinx and MyST-NB) from copies of the notebooks,
rendered with their stored outputs: nothing is executed, nothing is fetched, so the build
works offline. It holds, in reading order, the welcome page, then each chapter followed by
its exercise notebook (the stubs from ``exercises/``, never the solutions), then a glossary of
the Chinese terms and the source of the engine modules the chapters show. MathJax and a
subset of the Noto Sans CJK TC font are copied into the site, so math and Chinese text render
on a reader's machine that has neither.

Usage (inside the course's environment, with the ``book`` extra installed)::

    python tools/book_site.py                   # build into _build/book/html
    python tools/book_site.py --out DIR         # build into DIR/html
    python tools/book_site.py --refresh-font    # also remake book/_static/fonts (needs the
                                                # Debian package fonts-noto-cjk)
"""

from __future__ import annotations

import argparse
import copy
import html
import importlib.metadata
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # booktools, when this file runs as a script

from booktools.glossary import glossary_markdown  # noqa: E402

BOOK, EXERCISES, STATIC = ROOT / "book", ROOT / "exercises", ROOT / "book" / "_static"
DEFAULT_OUT = ROOT / "_build" / "book"
TITLE = "Build your own JAX"
SHOWN_SOURCE = re.compile(r"^`(minijax/[\w/]+\.py):(\d+)`", flags=re.M)
CJK_CHAR = re.compile("[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
FONT_DIR = STATIC / "fonts"
FONT_FILES = {"Regular": "NotoSansCJKtc-Regular.subset.woff",
              "Bold": "NotoSansCJKtc-Bold.subset.woff"}
DEBIAN_FONTS = Path("/usr/share/fonts/opentype/noto")
DEBIAN_FONT_LICENCE = Path("/usr/share/doc/fonts-noto-cjk/copyright")
# MathJax's combined component for TeX input and HTML output, and the folders it loads from.
MATHJAX_PARTS = ["tex-chtml.js", "input", "output", "ui", "a11y", "sre", "adaptors"]


@dataclass
class Page:
    """A notebook of the course and where its page sits in the site."""

    notebook: Path
    docname: str  # the page's path in the site, without suffix: "01_arrays", "exercises/01_arrays"
    title: str
    exercises: Page | None = None
    modules: list[str] = field(default_factory=list)  # engine files the notebook shows


def notebook_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def title_of(path: Path) -> str:
    """The text of the notebook's first heading: its page's title in the site."""
    for cell in notebook_json(path)["cells"]:
        for line in "".join(cell["source"]).splitlines():
            if cell["cell_type"] == "markdown" and line.startswith("# "):
                return line[2:].strip()
    raise SystemExit(f"{path} has no title (a Markdown line starting with '# ')")


def shown_modules(nb: dict) -> list[str]:
    """The engine files whose code the notebook's ``show_source``-like outputs show."""
    found: dict[str, None] = {}
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("data", {}).get("text/markdown", ""))
            found.update(dict.fromkeys(m.group(1) for m in SHOWN_SOURCE.finditer(text)))
    return list(found)


def chapters() -> list[Page]:
    """The chapters in reading order, each with its exercise page (same number prefix)."""
    exercises = {p.name[:3]: p for p in sorted(EXERCISES.glob("[0-9][0-9]_*.ipynb"))}
    pages = []
    for path in sorted(BOOK.glob("[0-9][0-9]_*.ipynb")):
        page = Page(path, path.stem, title_of(path), modules=shown_modules(notebook_json(path)))
        if path.name[:3] in exercises:
            ex = exercises[path.name[:3]]
            page.exercises = Page(ex, f"exercises/{ex.stem}", title_of(ex))
        pages.append(page)
    return pages


def reading_order(pages: list[Page]) -> list[Page]:
    """Every notebook page: each chapter, then its exercises."""
    return [p for page in pages for p in (page, page.exercises) if p is not None]


def module_docname(module: str) -> str:
    return "engine/" + module.removesuffix(".py")


def relative_link(from_doc: str, to_doc: str, suffix: str = ".md") -> str:
    """A Markdown link target from one page to another, relative to the first page."""
    depth = from_doc.count("/")
    return "../" * depth + to_doc + suffix


def markdown_cell(text: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def chapter_box(page: Page) -> str:
    """The note under a chapter's title: its exercises and the engine modules it shows."""
    heading = "With this chapter" if page.title.startswith("Chapter") else "With this page"
    lines = [f"```{{admonition}} {heading}", ":class: tip", ""]
    if page.exercises is not None:
        link = relative_link(page.docname, page.exercises.docname, ".ipynb")
        lines.append(f"* **Exercises:** [{page.exercises.title}]({link})")
    if page.modules:
        links = ", ".join(f"[`{m}`]({relative_link(page.docname, module_docname(m))})"
                          for m in page.modules)
        lines.append(f"* **Engine modules it shows:** {links}")
    lines += ["* **Run it yourself:** download the notebook with the button at the top of the "
              "page, or clone the course and run `python3 tools/course.py lab`.", "```"]
    return "\n".join(lines)


def exercise_box(chapter: Page) -> str:
    """The note under an exercise page's title: what it is, its chapter, how to work on it."""
    page = chapter.exercises
    link = relative_link(page.docname, chapter.docname, ".ipynb")
    return "\n".join([
        "```{note}", f"The exercises of [{chapter.title}]({link}), as learners receive them: "
        "each exercise is a stub that raises `NotImplementedError`, and the solutions are not "
        "part of this site. To work on them, clone the course, run "
        f"`python3 tools/course.py lab` and open `{page.notebook.relative_to(ROOT).as_posix()}`;"
        " `check(\"name\")` in the notebook grades one exercise.", "```"])


def check_is_stub(page: Page) -> None:
    """Refuse to publish an exercise notebook whose exercise cells are not the stubs."""
    for cell in notebook_json(page.notebook)["cells"]:
        if "exercise" in cell["metadata"] and "NotImplementedError" not in "".join(cell["source"]):
            name = cell["metadata"]["exercise"].get("name")
            raise SystemExit(f"{page.notebook}: exercise {name!r} is not a stub; the site "
                             "must not show solutions")


def link_shown_source(nb: dict, page: Page) -> None:
    """Make each ``minijax/x.py:N`` heading of a shown piece of source a link to its module."""
    def linked(match: re.Match) -> str:
        target = relative_link(page.docname, module_docname(match.group(1)))
        return f"[{match.group(0)}]({target})"

    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/markdown" in data:
                data["text/markdown"] = SHOWN_SOURCE.sub(linked, "".join(data["text/markdown"]))


def write_notebook(page: Page, src: Path, note: str) -> None:
    """Copy ``page``'s notebook into the site's sources with ``note`` under its title."""
    nb = copy.deepcopy(notebook_json(page.notebook))
    nb["cells"].insert(1, markdown_cell(note, "site-note"))
    link_shown_source(nb, page)
    target = src / f"{page.docname}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")


def module_page(module: str, taught_by: list[Page]) -> str:
    """A page with the whole source of one engine module, linked to the chapters showing it."""
    doc = module_docname(module)
    code = (ROOT / module).read_text(encoding="utf-8")
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall("`+", code)), default=0))
    chapters_ = ", ".join(f"[{p.title}]({relative_link(doc, p.docname, '.ipynb')})"
                          for p in taught_by)
    return (f"# `{module}`\n\nShown in: {chapters_}.\n\n"
            f"{fence}{{code-block}} python\n:linenos:\n\n{code}{fence}\n")


def write_engine_pages(pages: list[Page], src: Path) -> list[str]:
    """One page per engine module the chapters show, and an index of them by chapter."""
    taught: dict[str, list[Page]] = {}
    for page in pages:
        for module in page.modules:
            taught.setdefault(module, []).append(page)
    for module, by in taught.items():
        target = src / f"{module_docname(module)}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(module_page(module, by), encoding="utf-8")
    lines = ["# The engine's source", "",
             "The modules of `minijax/` whose code the chapters show, by chapter. Each page "
             "holds the whole file as it is in the course.", ""]
    for page in pages:
        if page.modules:
            links = ", ".join(f"[`{m}`]({relative_link('engine/index', module_docname(m))})"
                              for m in page.modules)
            chapter = relative_link("engine/index", page.docname, ".ipynb")
            lines.append(f"* [{page.title}]({chapter}): {links}")
    (src / "engine" / "index.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sorted(module_docname(m) for m in taught)


def table_of_contents(pages: list[Page], engine_docs: list[str]) -> dict:
    """Jupyter Book's ``_toc.yml``: welcome first, chapters with their exercises, reference."""
    welcome, *rest = pages

    def entry(page: Page) -> dict:
        sections = [{"file": page.exercises.docname}] if page.exercises else []
        return {"file": page.docname, **({"sections": sections} if sections else {})}

    start = [{"file": welcome.exercises.docname}] if welcome.exercises else []
    parts = [{"caption": "Start here", "chapters": start}] if start else []
    parts += [
        {"caption": "Chapters", "chapters": [entry(page) for page in rest]},
        {"caption": "Reference", "chapters": [
            {"file": "glossary"},
            {"file": "engine/index", "sections": [{"file": d} for d in engine_docs]}]},
    ]
    return {"format": "jb-book", "root": welcome.docname, "parts": parts}


def book_config() -> dict:
    """Jupyter Book's ``_config.yml``: stored outputs only, MathJax from the site itself."""
    return {
        "title": TITLE,
        "author": "the minijax course",
        "only_build_toc_files": True,
        "execute": {"execute_notebooks": "off"},
        "html": {"use_repository_button": False, "home_page_in_navbar": True},
        "latex": {"use_jupyterbook_latex": False},  # no PDF: leave its extension out
        "sphinx": {"config": {
            # Jupyter Book's default extensions less the ones that fetch from the network
            # (thebe, intersphinx; comments stay off): the site is read offline.
            "extensions": ["sphinx_togglebutton", "sphinx_copybutton", "myst_nb",
                           "jupyter_book", "sphinx_comments", "sphinx_external_toc",
                           "sphinx_design", "sphinx_book_theme"],
            "mathjax_path": "mathjax/tex-chtml.js",
            "html_favicon": "_static/favicon.svg",
            # Light until the reader picks another mode (the plots have white backgrounds);
            # the theme logs an error on a first visit when no mode is set at all.
            "html_context": {"default_mode": "light"},
            "nb_render_markdown_format": "myst",
            "html_css_files": ["minijax.css"],
            "html_show_copyright": False,
            "html_last_updated_fmt": None,
            # The stored tracebacks of deliberate errors hold backticks that IPython's
            # traceback lexer cannot read; Pygments then shows them uncoloured, which is fine.
            "suppress_warnings": ["myst.domains", "misc.highlighting_failure"],
        }},
    }


def stage(pages: list[Page], src: Path) -> None:
    """Write the site's sources: notebook copies, glossary, engine pages, config, assets."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for page in pages:
        write_notebook(page, src, chapter_box(page))
        if page.exercises is not None:
            check_is_stub(page.exercises)
            write_notebook(page.exercises, src, exercise_box(page))
    order = reading_order(pages)
    by_notebook = {p.notebook: p for p in order}
    # The welcome page lists the chapters' topics; a term "introduced" there is introduced
    # by its chapter, so the welcome page comes last when looking for first uses.
    glossary = glossary_markdown(
        [p.notebook for p in order[1:] + order[:1]],
        lambda nb: f"[{by_notebook[nb].title}]({by_notebook[nb].docname}.ipynb)")
    (src / "glossary.md").write_text(glossary, encoding="utf-8")
    engine_docs = write_engine_pages(pages, src)
    (src / "_toc.yml").write_text(json.dumps(table_of_contents(pages, engine_docs)))
    (src / "_config.yml").write_text(json.dumps(book_config()))
    shutil.copytree(STATIC, src / "_static")


def copy_mathjax(site: Path) -> None:
    """MathJax 3, from the ``sphinx-mathjax-offline`` package, into the site's _static."""
    dist = importlib.metadata.distribution("sphinx-mathjax-offline")
    source = Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))
    target = site / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    for part in MATHJAX_PARTS:
        if (source / part).is_dir():
            shutil.copytree(source / part, target / part, dirs_exist_ok=True)
        else:
            shutil.copy2(source / part, target / part)
    (target / "LICENSE-NOTE.txt").write_text(
        "MathJax 3 (https://www.mathjax.org), Apache License 2.0, copied from the PyPI "
        f"package sphinx-mathjax-offline {dist.version}.\n")


def site_characters(site: Path) -> set[str]:
    """Every CJK character (ideographs and CJK punctuation) the site's pages hold."""
    chars: set[str] = set()
    for page in site.rglob("*.html"):
        chars.update(CJK_CHAR.findall(html.unescape(page.read_text(encoding="utf-8"))))
    return chars


def font_characters() -> set[str]:
    """The characters the committed CJK font subset can draw."""
    from fontTools.ttLib import TTFont

    cmap = TTFont(FONT_DIR / FONT_FILES["Regular"]).getBestCmap()
    return {chr(code) for code in cmap}


def refresh_font(chars: set[str]) -> None:
    """Remake the font subsets in book/_static/fonts from Debian's fonts-noto-cjk."""
    import logging

    from fontTools import subset
    from fontTools.ttLib import TTCollection

    logging.getLogger("fontTools").setLevel(logging.WARNING)

    for weight, name in FONT_FILES.items():
        collection = TTCollection(DEBIAN_FONTS / f"NotoSansCJK-{weight}.ttc")
        font = next(f for f in collection.fonts if f["name"].getDebugName(1).endswith(" TC"))
        options = subset.Options()
        options.flavor = "woff"
        subsetter = subset.Subsetter(options)
        subsetter.populate(text="".join(sorted(chars)))
        subsetter.subset(font)
        font.flavor = "woff"
        font.save(FONT_DIR / name)
    notice = font["name"].getDebugName(0)
    licence = DEBIAN_FONT_LICENCE.read_text(encoding="utf-8").split("License: SIL-1.1\n")[-1]
    text = "\n".join("" if line == " ." else line[1:] for line in licence.splitlines()
                     if line.startswith(" "))
    (FONT_DIR / "OFL.txt").write_text(
        f"Noto Sans CJK TC, subset to the characters of this book.\n{notice}\n\n{text}\n",
        encoding="utf-8")


def build(out: Path = DEFAULT_OUT, refresh: bool = False) -> Path:
    """Build the site into ``out/html`` and return that folder."""
    from jupyter_book.sphinx import build_sphinx

    pages = chapters()
    src, site = out / "src", out / "html"
    stage(pages, src)
    if site.exists():
        shutil.rmtree(site)
    overrides = {"external_toc_path": (src / "_toc.yml").as_posix(),
                 "latex_individualpages": False}
    result = build_sphinx(src, site, path_config=str(src / "_config.yml"), noconfig=True,
                          confoverrides=overrides, freshenv=True, doctreedir=out / "doctrees",
                          quiet=True, warningiserror=True, keep_going=True)
    if result:
        raise SystemExit(f"the book's build failed (Sphinx returned {result}); see above")
    copy_mathjax(site)
    if refresh:
        refresh_font(site_characters(site))
        shutil.copytree(FONT_DIR, site / "_static" / "fonts", dirs_exist_ok=True)
    missing = site_characters(site) - font_characters()
    if missing:
        print(f"warning: the CJK font subset lacks {''.join(sorted(missing))}; rebuild with "
              "--refresh-font where fonts-noto-cjk is installed", file=sys.stderr)
    return site


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="Build the course's HTML book.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="build folder; the site goes to OUT/html (default: %(default)s)")
    parser.add_argument("--refresh-font", action="store_true",
                        help="remake the CJK font subset from Debian's fonts-noto-cjk")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    site = build(args.out.resolve(), refresh=args.refresh_font)
    print(f"Built the book in {time.perf_counter() - start:.0f} s. Open "
          f"{(site / 'index.html').as_uri()}\n(or serve it: python3 -m http.server -d {site})")


if __name__ == "__main__":
    main(sys.argv[1:])
