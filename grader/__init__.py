"""The course's exercise grader.

In a notebook: ``from grader import checker; check = checker("00_warmup")``, then
``check("softmax")``. From a shell: ``python -m grader exercises/00_warmup.ipynb`` (see
:mod:`grader.cli`). The pieces, one concept per module:

* :mod:`grader.checks` -- the API check modules use (``@exercise``, ``call``, ``expect_close``);
* :mod:`grader.chapters` -- finding and loading a chapter's check module;
* :mod:`grader.notebook` -- reading notebooks, exercise cells, IPython magics;
* :mod:`grader.plan` -- pairing exercise cells with checks;
* :mod:`grader.outcome` -- results and their messages;
* :mod:`grader.inline` -- ``check()`` inside a notebook;
* :mod:`grader.limits` -- time and output limits for learner code;
* :mod:`grader.worker` -- runs one notebook in a child process;
* :mod:`grader.runner` -- starts that process and collects its results;
* :mod:`grader.report` -- score tables, JSON, Gradescope and CSV output;
* :mod:`grader.cli` -- the command line.
"""

from grader.inline import checker

__all__ = ["checker"]
