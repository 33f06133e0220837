"""The command line: ``python -m grader PATH`` (also installed as ``minijax-grade``).

``PATH`` is one notebook or a folder. A notebook's score table is printed; for a folder, every
``*.ipynb`` below it is graded (``.ipynb_checkpoints`` excepted) and one line per notebook is
printed. The chapter of each notebook is read from its file name: the name must contain the
``NN_topic`` of a check module, possibly with a prefix or suffix (``alice_00_warmup.ipynb``);
``--chapter`` sets it explicitly instead.

Examples::

    python -m grader exercises/00_warmup.ipynb
    python -m grader submission.ipynb --chapter 00_warmup --gradescope results.json
    python -m grader submissions/ --csv scores.csv --json scores.json

The exit status is 0 whenever grading ran, however low the scores, and 2 for usage errors (a
missing path, an unknown chapter, an option that does not fit the path).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.chapters import ChapterError, default_checks_dir, detect_chapter, known_chapters
from grader.limits import Limits
from grader.report import (
    batch_json,
    format_batch,
    format_report,
    gradescope_json,
    report_json,
    write_csv,
)
from grader.runner import grade_many, grade_notebook


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    limits = Limits(args.timeout, args.notebook_timeout, args.output_limit)
    if args.chapter and args.chapter not in known_chapters(args.checks_dir):
        parser.error(f"no checks for chapter {args.chapter!r} in {args.checks_dir}")
    try:
        if args.path.is_file():
            _grade_one(args, limits)
        elif args.path.is_dir():
            _grade_folder(args, limits, parser)
        else:
            parser.error(f"{args.path} does not exist")
    except ChapterError as exc:
        parser.error(str(exc))
    return 0


def _grade_one(args: argparse.Namespace, limits: Limits) -> None:
    chapter = args.chapter or detect_chapter(args.path, known_chapters(args.checks_dir))
    report = grade_notebook(args.path, chapter, args.checks_dir, limits)
    print(format_report(report))
    if args.json:
        _write_json(args.json, report_json(report))
    if args.gradescope:
        _write_json(args.gradescope, gradescope_json(report))
    if args.csv:
        write_csv([report], args.csv)


def _grade_folder(
    args: argparse.Namespace, limits: Limits, parser: argparse.ArgumentParser
) -> None:
    if args.gradescope:
        parser.error("--gradescope describes one submission: give it a notebook, not a folder")
    notebooks = sorted(
        path for path in args.path.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts
    )
    if not notebooks:
        parser.error(f"no notebooks (*.ipynb) below {args.path}")
    reports = grade_many(notebooks, args.chapter, args.checks_dir, limits)
    print(format_batch(reports))
    if args.json:
        _write_json(args.json, batch_json(reports))
    if args.csv:
        write_csv(reports, args.csv)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    defaults = Limits()
    parser = argparse.ArgumentParser(
        prog="minijax-grade",
        description="Grade exercise notebooks of the course with the chapters' checks.",
    )
    parser.add_argument("path", type=Path, help="a notebook, or a folder of notebooks to grade")
    parser.add_argument("--chapter", help="the chapter (e.g. 00_warmup) instead of the file name's")
    parser.add_argument(
        "--checks-dir",
        type=Path,
        default=default_checks_dir(),
        help="folder of the check modules chNN_topic.py (default: the course's exercises/checks)",
    )
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
    parser.add_argument("--json", type=Path, help="write detailed results as JSON to this file")
    parser.add_argument("--csv", type=Path, help="write one row per notebook as CSV to this file")
    parser.add_argument(
        "--gradescope",
        type=Path,
        help="write Gradescope's results.json to this file (one notebook)",
    )
    return parser


def _positive(kind: type[float] | type[int]) -> Callable[[str], float | int]:
    """An argparse type for a positive number (a zero time limit would disable the timer)."""

    def parse(text: str) -> float | int:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value

    return parse
