"""The command line: ``python -m grader PATH`` (also installed as ``minijax-grade``).

``PATH`` is one notebook or a folder. A notebook's score table is printed; for a folder, every
``*.ipynb`` below it is graded (``.ipynb_checkpoints`` excepted), a progress line per notebook
goes to stderr as it is graded, and one summary line per notebook is printed at the end. The
chapter of each notebook is read from its file name: the name must contain the ``NN_topic`` of a
check module, possibly with a prefix or suffix (``alice_00_warmup.ipynb``); ``--chapter`` sets it
explicitly instead.

Two subcommands serve Gradescope (see :mod:`grader.gradescope`): ``bundle CHAPTER -o ZIP`` builds
the autograder zip, and ``gradescope ROOT`` is what that zip's ``run_autograder`` calls.

Examples::

    python -m grader exercises/00_warmup.ipynb
    python -m grader submission.ipynb --chapter 00_warmup --gradescope results.json
    python -m grader submissions/ --csv scores.csv --json scores.json
    python -m grader bundle 00_warmup -o autograder.zip

The exit status tells an instructor's script what happened (scores are in the outputs):
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.chapters import ChapterError, default_checks_dir, detect_chapter, known_chapters
from grader.gradescope import BundleConfig, build_bundle, run_in_gradescope
from grader.limits import Limits
from grader.outcome import NotebookReport
from grader.report import (
    VISIBILITIES,
    batch_json,
    format_batch,
    format_report,
    gradescope_json,
    report_json,
    write_csv,
)
from grader.runner import grade_many, grade_notebook

#: Every notebook was graded, whatever the scores (exercises that crashed or timed out included).
GRADED = 0
#: Some file is not a readable notebook (corrupt, not JSON, not nbformat); the others were graded.
UNREADABLE = 1
#: A usage error: a missing path, an unknown chapter, an option that does not fit (argparse's 2).
USAGE = 2
#: The grader itself, or a check module, failed on some notebook: its results are incomplete.
GRADER_FAILED = 3

__doc__ += "".join(
    f"\n* {code} -- {text}" for code, text in (
        (GRADED, "every notebook was graded;"),
        (UNREADABLE, "some submission is not a readable notebook (the others were graded);"),
        (USAGE, "a usage error;"),
        (GRADER_FAILED, "the grader or a check module failed on some notebook."),
    )
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bundle"]:
        return _bundle(argv[1:])
    if argv[:1] == ["gradescope"]:
        root = argparse.ArgumentParser(prog="minijax-grade gradescope")
        root.add_argument("root", type=Path, help="Gradescope's /autograder folder")
        return run_in_gradescope(root.parse_args(argv[1:]).root)
    parser = _parser()
    args = parser.parse_args(argv)
    limits = Limits(args.timeout, args.notebook_timeout, args.output_limit)
    if args.chapter and args.chapter not in known_chapters(args.checks_dir):
        parser.error(f"no checks for chapter {args.chapter!r} in {args.checks_dir}")
    try:
        if args.path.is_file():
            reports = [_grade_one(args, limits)]
        elif args.path.is_dir():
            reports = _grade_folder(args, limits, parser)
        else:
            parser.error(f"{args.path} does not exist")
    except ChapterError as exc:
        parser.error(str(exc))
    return exit_status(reports)


def exit_status(reports: list[NotebookReport]) -> int:
    """:data:`GRADER_FAILED` before :data:`UNREADABLE` before :data:`GRADED`."""
    if any(report.grader_failed for report in reports):
        return GRADER_FAILED
    if any(report.unreadable for report in reports):
        return UNREADABLE
    return GRADED


def _grade_one(args: argparse.Namespace, limits: Limits) -> NotebookReport:
    chapter = args.chapter or detect_chapter(args.path, known_chapters(args.checks_dir))
    report = grade_notebook(args.path, chapter, args.checks_dir, limits)
    print(format_report(report, hints=args.show_hints))
    if args.json:
        _write_json(args.json, report_json(report))
    if args.gradescope:
        data = gradescope_json(report, visibility=args.visibility, show_hints=args.show_hints)
        _write_json(args.gradescope, data)
    if args.csv:
        write_csv([report], args.csv)
    return report


def _grade_folder(
    args: argparse.Namespace, limits: Limits, parser: argparse.ArgumentParser
) -> list[NotebookReport]:
    if args.gradescope:
        parser.error("--gradescope describes one submission: give it a notebook, not a folder")
    notebooks = sorted(
        path for path in args.path.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts
    )
    if not notebooks:
        parser.error(f"no notebooks (*.ipynb) below {args.path}")

    def progress(number: int, report: NotebookReport) -> None:
        outcome = report.error or f"{report.score:g}/{report.max_score:g}"
        print(f"[{number}/{len(notebooks)}] {report.notebook}: {outcome}", file=sys.stderr,
              flush=True)

    reports = grade_many(notebooks, args.chapter, args.checks_dir, limits, progress)
    print(format_batch(reports))
    if args.json:
        _write_json(args.json, batch_json(reports))
    if args.csv:
        write_csv(reports, args.csv)
    return reports


def _bundle(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="minijax-grade bundle",
        description="Build the Gradescope autograder zip of one chapter.",
    )
    parser.add_argument("chapter", help="the chapter (e.g. 00_warmup), or its exercise notebook")
    parser.add_argument("-o", "--output", type=Path, default=Path("autograder.zip"),
                        help="the zip to write (default: %(default)s)")
    _add_checks_dir(parser)
    _add_limits(parser)
    _add_gradescope_options(parser)
    args = parser.parse_args(argv)
    chapters = known_chapters(args.checks_dir)
    try:
        chapter = args.chapter if args.chapter in chapters else detect_chapter(
            Path(args.chapter), chapters)
        limits = Limits(args.timeout, args.notebook_timeout, args.output_limit)
        config = BundleConfig(chapter, limits, args.visibility, args.show_hints)
        names = build_bundle(config, args.checks_dir, args.output)
    except ChapterError as exc:
        parser.error(str(exc))
    print(f"wrote {args.output}: {len(names)} files for chapter {chapter}; upload it as the "
          "assignment's autograder on Gradescope")
    return GRADED


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minijax-grade",
        description="Grade exercise notebooks of the course with the chapters' checks "
        "(subcommands: bundle CHAPTER -o ZIP, for Gradescope).",
    )
    parser.add_argument("path", type=Path, help="a notebook, or a folder of notebooks to grade")
    parser.add_argument("--chapter", help="the chapter (e.g. 00_warmup) instead of the file name's")
    _add_checks_dir(parser)
    _add_limits(parser)
    parser.add_argument("--json", type=Path, help="write detailed results as JSON to this file")
    parser.add_argument("--csv", type=Path, help="write one row per notebook as CSV to this file")
    parser.add_argument(
        "--gradescope",
        type=Path,
        help="write Gradescope's results.json to this file (one notebook)",
    )
    _add_gradescope_options(parser)
    return parser


def _add_checks_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checks-dir",
        type=Path,
        default=default_checks_dir(),
        help="folder of the check modules chNN_topic.py (default: the course's exercises/checks)",
    )


def _add_limits(parser: argparse.ArgumentParser) -> None:
    defaults = Limits()
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        default=defaults.exercise_seconds,
        help="seconds for one exercise (cell and check) or one other cell (default: %(default)g)",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=_positive(float),
        default=defaults.notebook_seconds,
        help="seconds for a whole notebook (default: %(default)g)",
    )
    parser.add_argument(
        "--output-limit",
        type=_positive(int),
        default=defaults.output_chars,
        help="characters one cell may print (default: %(default)d)",
    )


def _add_gradescope_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        default="visible",
        help="when students see the Gradescope results and each test (default: %(default)s)",
    )
    parser.add_argument(
        "--show-hints",
        action="store_true",
        help="keep the checks' hints in the messages of the score table and of Gradescope's "
        "results (left out by default)",
    )


def _positive(kind: type[float] | type[int]) -> Callable[[str], float | int]:
    """An argparse type for a positive number (a zero time limit would disable the timer)."""

    def parse(text: str) -> float | int:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value

    return parse
