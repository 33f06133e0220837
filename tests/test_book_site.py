"""The course as a website: the glossary, the offline build, and the pages in a real browser.

The glossary tests need only the notebooks. The site tests build the book once per session
(``tools/book_site.py``, the ``book`` extra) into a temporary folder and check it as a reader
would meet it, offline: every page there, every link and image resolving, no stray
tracebacks, no solutions. Where Chromium is installed, the browser test loads every page
headless, fails on JavaScript and MathJax errors and on requests leaving the machine, checks
that Chinese text is drawn with the font the site ships, and saves screenshots to
``_build/screenshots/``.
"""

from __future__ import annotations

import functools
import http.server
import importlib.metadata
import importlib.util
import json
import re
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from booktools.glossary import CJK_TERM, load_entries, term_uses, visible_text

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "_build" / "screenshots"
TRACEBACK_TEXT = "Traceback (most recent call last)"


def load_book_site():
    spec = importlib.util.spec_from_file_location("book_site", ROOT / "tools" / "book_site.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["book_site"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


book_site = load_book_site()
PAGES = book_site.chapters()
NOTEBOOK_PAGES = book_site.reading_order(PAGES)


# --- the glossary (no build needed) --------------------------------------------------------

def test_every_chinese_term_of_the_notebooks_is_in_the_glossary():
    entries = load_entries()
    missing = {term: [nb.name for nb in nbs]
               for term, nbs in term_uses([p.notebook for p in NOTEBOOK_PAGES]).items()
               if term not in entries}
    assert missing == {}, "add these terms to book/glossary.yml"


def test_every_glossary_entry_is_used_by_a_notebook():
    used = term_uses([p.notebook for p in NOTEBOOK_PAGES])
    assert [term for term in load_entries() if term not in used] == []


def test_glossary_entries_are_whole_terms_with_english_and_a_one_line_definition():
    for term, entry in load_entries().items():
        assert CJK_TERM.fullmatch(term), term
        assert entry.english.strip() and entry.definition.strip(), term
        assert "\n" not in entry.definition and len(entry.definition) < 160, term


def test_term_detection_splits_runs_and_follows_reading_order(tmp_path):
    first, second = tmp_path / "a.ipynb", tmp_path / "b.ipynb"
    for path, text in [(first, "Reshaping (形狀變換、堆疊)"), (second, "stacking (堆疊), 廣播")]:
        path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": text}]}))
    assert term_uses([first, second]) == {"形狀變換": [first], "堆疊": [first, second],
                                          "廣播": [second]}


def test_the_site_shows_only_exercise_stubs():
    for page in NOTEBOOK_PAGES:
        if page.docname.startswith("exercises/"):
            book_site.check_is_stub(page)  # raises SystemExit on a solved exercise


# --- the built site ------------------------------------------------------------------------

class PageParser(HTMLParser):
    """Links, resources, ids and the text outside/inside deliberate-error cells of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []  # (tag, url)
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.stray_tracebacks = 0
        self._divs: list[bool] = []  # for each open div: inside a raises-exception cell?

    def _in_raises_cell(self) -> bool:
        return bool(self._divs) and self._divs[-1]

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name) and not (tag == "link" and attrs.get("rel") == "canonical"):
                self.links.append((tag, attrs[name]))
        if tag == "div":
            self._divs.append(self._in_raises_cell() or "tag_raises-exception" in classes)
            if "traceback" in classes and not self._divs[-1]:
                self.stray_tracebacks += 1

    def handle_endtag(self, tag):
        if tag == "div" and self._divs:
            self._divs.pop()

    def handle_data(self, data):
        self.text.append(data)
        if TRACEBACK_TEXT in data and not self._in_raises_cell():
            self.stray_tracebacks += 1


@functools.cache
def parsed(path: Path) -> PageParser:
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def engine_docs() -> list[str]:
    return sorted({book_site.module_docname(m) for page in PAGES for m in page.modules})


def expected_order() -> list[str]:
    """Every page in reading order: what the table of contents and next links must follow."""
    return ([p.docname for p in NOTEBOOK_PAGES] + ["glossary", "engine/index"] + engine_docs())


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("jupyter_book", reason="the book extra is not installed")
    try:
        importlib.metadata.distribution("sphinx-mathjax-offline")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the book extra is not installed")
    return book_site.build(tmp_path_factory.mktemp("book"))


def html_pages(site: Path) -> list[Path]:
    """The site's pages (``_static`` holds the theme's template fragments, not pages)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def test_every_page_exists(site):
    for doc in expected_order() + ["search", "genindex"]:
        assert (site / f"{doc}.html").is_file(), doc
    assert "00_welcome.html" in (site / "index.html").read_text()  # the welcome page opens it


def test_next_links_follow_the_reading_order_welcome_first(site):
    order = expected_order()
    for here, following in zip(order, order[1:]):
        page = (site / f"{here}.html").read_text(encoding="utf-8")
        found = re.search(r'<a class="right-next"\s+href="([^"]+)"', page)
        assert found, f"{here} has no next link"
        target = (site / here).parent / unquote(found.group(1)).split("#")[0]
        assert target.resolve() == (site / f"{following}.html").resolve(), here
    assert 'class="left-prev"' not in (site / f"{order[0]}.html").read_text(encoding="utf-8")


def resolve(page: Path, url: str) -> tuple[Path, str] | None:
    """The file and fragment an internal link points to (None for external links)."""
    parts = urlsplit(url)
    if parts.scheme or url.startswith("//"):
        return None
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    return target, parts.fragment


def test_every_internal_link_and_image_resolves(site):
    broken = []
    for page in html_pages(site):
        for tag, url in parsed(page).links:
            resolved = resolve(page, url)
            if resolved is None:
                continue
            target, fragment = resolved
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: <{tag}> {url}")
            elif fragment and target.suffix == ".html" and fragment not in parsed(target).ids:
                broken.append(f"{page.relative_to(site)}: <{tag}> {url} (no such anchor)")
    assert broken == []


def test_pages_load_nothing_from_the_network(site):
    remote = [f"{page.relative_to(site)}: <{tag}> {url}" for page in html_pages(site)
              for tag, url in parsed(page).links
              if tag in ("script", "img", "link", "iframe")
              and (urlsplit(url).scheme in ("http", "https") or url.startswith("//"))]
    assert remote == []


def test_no_page_holds_a_traceback_outside_a_deliberate_error_cell(site):
    strays = {doc: parsed(site / f"{doc}.html").stray_tracebacks
              for doc in [p.docname for p in NOTEBOOK_PAGES]}
    assert {doc: n for doc, n in strays.items() if n} == {}
    deliberate = "".join(parsed(site / "08_jit_sharp_edges.html").text)
    assert TRACEBACK_TEXT in deliberate  # the deliberate errors are shown


def test_exercise_pages_hold_stubs_and_no_solution_code(site):
    for page in NOTEBOOK_PAGES:
        if not page.docname.startswith("exercises/"):
            continue
        solved = ROOT / "solutions" / page.notebook.name
        own = visible_text(page.notebook)
        text = "".join(parsed(site / f"{page.docname}.html").text)
        assert "raise NotImplementedError" in text, page.docname
        cells = json.loads(solved.read_text(encoding="utf-8"))["cells"]
        solution_lines = {line.strip() for cell in cells if "exercise" in cell["metadata"]
                          for line in "".join(cell["source"]).splitlines()
                          if line.strip() not in own and len(line.strip()) > 15}
        assert solution_lines, page.docname  # the solutions differ from the stubs
        assert [line for line in solution_lines if line in text] == [], page.docname


def test_chapter_pages_link_their_exercises_and_engine_modules(site):
    for page in PAGES:
        hrefs = {url for _, url in parsed(site / f"{page.docname}.html").links}
        if page.exercises is not None:
            assert f"{page.exercises.docname}.html" in hrefs, page.docname
            back = {url for _, url in parsed(site / f"{page.exercises.docname}.html").links}
            assert f"../{page.docname}.html" in back, page.exercises.docname
        for module in page.modules:
            assert f"{book_site.module_docname(module)}.html" in hrefs, (page.docname, module)


def test_pages_render_math_sympy_plots_and_highlighted_code(site):
    page = (site / "03_four_ways_to_differentiate.html").read_text(encoding="utf-8")
    assert 'class="math notranslate nohighlight"' in page  # math for MathJax
    assert "text_latex" in page  # SymPy's LaTeX outputs
    assert re.search(r'<img [^>]*src="_images/[^"]+\.png"', page)  # plots
    assert 'class="highlight-ipython3' in page and '<span class="n">' in page
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    engine = (site / "engine" / "minijax" / "core.html").read_text(encoding="utf-8")
    assert "class Primitive" in "".join(parsed(site / "engine" / "minijax" / "core.html").text)
    assert 'class="linenos"' in engine


def test_glossary_page_lists_every_term_with_its_chapter(site):
    text = "".join(parsed(site / "glossary.html").text)
    for term, entry in load_entries().items():
        assert term in text and entry.english.replace("`", "") in text, term
    links = {url for _, url in parsed(site / "glossary.html").links}
    assert "01_arrays.html" in links


def test_the_site_ships_a_font_for_every_chinese_character_it_shows(site):
    missing = book_site.site_characters(site) - book_site.font_characters()
    assert missing == set(), "run tools/book_site.py --refresh-font (needs fonts-noto-cjk)"
    fonts = site / "_static" / "fonts"
    assert {p.name for p in fonts.iterdir()} >= {*book_site.FONT_FILES.values(), "OFL.txt"}
    assert "SIL OPEN FONT LICENSE" in (fonts / "OFL.txt").read_text(encoding="utf-8")


# --- in a real browser ---------------------------------------------------------------------

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def served(site):
    """The site over HTTP on the loopback interface, as a reader's browser would get it."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    from tests.devtools import Browser, chromium_binary

    binary = chromium_binary()
    if binary is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    chromium = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    for domain in ("Page", "Runtime", "Log", "Network", "DOM", "CSS"):
        chromium.call(f"{domain}.enable")
    yield chromium
    chromium.close()


WAIT_FOR_PAGE = """(async () => {
  if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
  await document.fonts.ready;
  return {math: document.querySelectorAll('.math').length,
          typeset: document.querySelectorAll('mjx-container').length,
          mathErrors: document.querySelectorAll('mjx-merror').length};
})()"""


def problems(events: list[dict], origin: str) -> list[str]:
    """Console errors, uncaught exceptions, failed loads and requests leaving the machine."""
    found = []
    for event in events:
        method, params = event["method"], event["params"]
        if method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails'].get('text')} "
                         f"{params['exceptionDetails'].get('exception', {}).get('description')}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            found.append(f"console.{params['type']}: {params['args']}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"log: {params['entry']['text']} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            found.append(f"failed load: {params.get('errorText')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith((origin, "data:", "blob:", "about:")):
                found.append(f"request leaving the machine: {url}")
    return found


def platform_fonts(browser, selector: str) -> list[dict]:
    """The fonts Chromium really drew the first ``selector`` element's own text with."""
    root = browser.call("DOM.getDocument", depth=0)["root"]["nodeId"]
    node = browser.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
    return browser.call("CSS.getPlatformFontsForNode", nodeId=node)["fonts"]


def screenshot(browser, url: str, path: Path, width: int, height: int, mobile: bool = False,
               centre: str | None = None) -> None:
    """Load ``url`` in a window of the given size, scroll ``centre`` into view, save a PNG."""
    import base64

    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                 deviceScaleFactor=1, mobile=mobile)
    browser.open(url)
    browser.evaluate(WAIT_FOR_PAGE)
    if centre:
        browser.evaluate(f"document.querySelector({centre!r}).scrollIntoView({{block: 'center'}})")
    data = browser.call("Page.captureScreenshot", format="png")["data"]
    path.write_bytes(base64.b64decode(data))


def test_every_page_loads_in_chromium_without_errors(site, served, browser):
    browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=900,
                 deviceScaleFactor=1, mobile=False)
    failures, typeset = {}, 0
    for page in html_pages(site):
        doc = page.relative_to(site).as_posix()
        if doc == "index.html":  # only redirects to the welcome page
            continue
        start = browser.open(f"{served}/{doc}")
        state = browser.evaluate(WAIT_FOR_PAGE)
        found = problems(browser.events[start:], served)
        if state["mathErrors"] or state["typeset"] < state["math"]:
            found.append(f"MathJax: {state}")
        if found:
            failures[doc] = found
        typeset += state["typeset"]
    assert failures == {}
    assert typeset > 100  # MathJax did typeset the book's math


def test_chinese_text_is_drawn_with_the_shipped_font(site, served, browser):
    browser.open(f"{served}/01_arrays.html")
    browser.evaluate(WAIT_FOR_PAGE)
    fonts = platform_fonts(browser, "article h1")
    assert any(f["isCustomFont"] and "CJK TC" in f["familyName"] for f in fonts), fonts


def test_screenshots_of_two_pages(site, served, browser):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shots = {"01_arrays-desktop": ("01_arrays.html", 1280, 900, False, None),
             "03_four_ways-math-desktop": ("03_four_ways_to_differentiate.html", 1280, 900,
                                           False, ".cell_output mjx-container"),
             "glossary-phone": ("glossary.html", 390, 844, True, None)}
    for name, (doc, width, height, mobile, centre) in shots.items():
        screenshot(browser, f"{served}/{doc}", SCREENSHOTS / f"{name}.png", width, height,
                   mobile, centre)
        assert (SCREENSHOTS / f"{name}.png").stat().st_size > 10_000, name


# Sphinx's search lists its results one at a time and retitles the page "Search Results"
# when it has listed them all: count them then, not at the first one.
SEARCH_RESULTS = """new Promise(resolve => {
  const started = Date.now();
  const poll = () => {
    const title = document.querySelector('#search-results h2');
    const done = title && title.innerText === 'Search Results';
    if (done || Date.now() - started > 20000) {
      resolve(document.querySelectorAll('#search-results li').length);
    } else { setTimeout(poll, 100); }
  };
  poll();
})"""


def test_search_finds_the_chapters_on_a_word(site, served, browser):
    browser.open(f"{served}/search.html?q=linearize")
    assert browser.evaluate(SEARCH_RESULTS) >= 2
