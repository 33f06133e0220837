"""The course's exercise grader.

In a notebook: ``from grader import checker; check = checker("00_warmup")``, then
``check("softmax")``; ``from grader import hint`` and ``hint("softmax")`` show the check's
hints too. From a shell: ``python -m grader exercises/00_warmup.ipynb`` (see
:mod:`grader.cli`). The pieces, one concept per module:

* :mod:`grader.checks` -- the API check modules use (``@exercise``, ``call``, ``expect_close``);
* :mod:`grader.chapters` -- finding and loading a chapter's check module;
* :mod:`grader.notebook` -- reading notebooks, exercise cells, IPython magics;
* :mod:`grader.plan` -- pairing exercise cells with checks;
* :mod:`grader.outcome` -- results and their messages;
* :mod:`grader.inline` -- ``check()`` inside a notebook;
* :mod:`grader.limits` -- time and output limits for learner code;
* :mod:`grader.plain` -- the plain data that alone crosses between worker and grader;
* :mod:`grader.channel` -- the pipe they cross, with deadlines;
* :mod:`grader.worker` -- the untrusted process that runs one notebook;
* :mod:`grader.sandbox` -- what that process may read, write and signal (Linux Landlock);
* :mod:`grader.reference` -- the answers it must not reach for (solutions, reference pieces);
* :mod:`grader.probes` -- instruments checks run there (tracing, counting runs under jit);
* :mod:`grader.session` -- starting that process confined, asking it, killing it;
* :mod:`grader.remote` -- the notebook's functions as a check in the grader calls them;
* :mod:`grader.runner` -- the trusted side: runs the cells there, the checks here, decides scores;
* :mod:`grader.report` -- score tables, JSON, Gradescope and CSV output;
* :mod:`grader.gradescope` -- the Gradescope autograder bundle, and running inside it;
* :mod:`grader.cli` -- the command line.
"""

from grader.inline import checker, hint

__all__ = ["checker", "hint"]
