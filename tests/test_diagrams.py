"""The book's pictures of the machinery (booktools/diagrams.py) show the live objects."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

import minijax as jax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from booktools.diagrams import draw_jaxpr, draw_pipeline, trace_stack  # noqa: E402


def _example(x, y):
    jnp.cos(x)
    return jnp.sin(x) * y + np.float32(0.5), jnp.sum(y) * 2.0


def test_boxes_carry_the_names_the_printout_gives():
    closed = jax.make_jaxpr(_example)(1.0, jnp.ones(3))
    texts = [t.get_text() for t in draw_jaxpr(closed).texts]
    printed = []
    for line in str(closed).splitlines():
        if " = " in line:
            defined, applied = line.split(" = ")
            printed.append(f"{defined.split(':')[0].strip()} = {applied.split()[0].split('[')[0]}")
    boxes = [t.split("  (")[0] for t in texts if " = " in t]
    assert boxes == printed
    assert "_ = cos" in boxes  # a result nothing reads prints, and is drawn, as _


def test_every_arrow_points_right():
    closed = jax.make_jaxpr(lambda x: jnp.tanh(jnp.sin(x) + x) * x)(jnp.ones(2))
    ax = draw_jaxpr(closed)
    arrows = [a for a in ax.texts if a.get_text() == "" and hasattr(a, "xy")]
    assert arrows and all(a.xy[0] > a.xyann[0] for a in arrows)


def test_the_traces_of_linearize_and_of_a_traced_jvp():
    linearize = trace_stack(lambda g: jax.linearize(g, 1.0))
    assert [type(t).__name__ for t in linearize] == ["JVPTrace", "PartialEvalTrace", "EvalTrace"]
    traced_jvp = trace_stack(
        lambda g: jax.make_jaxpr(lambda x, t: jax.jvp(g, (x,), (t,)))(1.0, 1.0))
    assert [type(t).__name__ for t in traced_jvp] == ["JVPTrace", "JaxprTrace"]


def test_pipeline_shows_excerpts_of_each_stage():
    long = "\n".join(f"line {i}" for i in range(20))
    texts = [t.get_text() for t in draw_pipeline([("a", "x", ""), ("b", long, "go")]).texts]
    assert "go" in texts
    assert any(t.startswith("line 0") and "(15 more lines)" in t for t in texts)
