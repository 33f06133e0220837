"""The matrix primitive x {JVP rule, transpose rule}, and a check that it has no gaps.

Every ``Primitive`` reachable from ``minijax.lax`` (plus ``add_any``) must have a JVP rule
and a transpose rule, unless the missing rule is listed in :data:`DELIBERATE_GAPS` with
the reason. A new primitive without rules therefore fails this test until someone either
writes the rules or says here why there are none; an entry that is no longer a gap fails
too (so the list stays true). Run with ``-s`` to see the table (it is also attached to
the test report as a section).
"""

from __future__ import annotations

import types

import pytest

import minijax
from minijax.core import Primitive
from minijax.interpreters import ad, transpose

# Primitives that are not linear in any input. Their JVP rules record *other* primitives
# applied to tangents (``sin``'s records ``mul`` by ``cos x``), so they never appear in a
# linear jaxpr and need no transpose rule.
NONLINEAR = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cos",
    "cosh", "exp", "exp2", "expm1", "integer_pow", "log", "log1p", "logistic", "max", "min",
    "pow", "rem", "rsqrt", "sin", "sinh", "sqrt", "square", "tan", "tanh", "clamp",
    "erf", "erfc", "erf_inv", "lgamma", "cumlogsumexp",
    # reductions and scans whose tangents are computed by mul/select/scatter-add/... :
    "reduce_max", "reduce_min", "reduce_prod", "cummax", "cummin", "cumprod",
    "scatter-max", "scatter-min",
    # decompositions: tangents by products and triangular solves; sorting: by gathers
    "cholesky", "eigh", "lu", "qr", "svd", "sort", "top_k",
)

# Primitives whose results are integers or booleans, or piecewise constant: their
# tangents are symbolic zeros (float0 for integers), so nothing is ever transposed.
ZERO_DERIVATIVE = (
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "population_count",
    "bitcast_convert_type", "is_finite", "sign", "floor", "ceil", "round", "iota",
    "argmax", "argmin", "reduce_and", "reduce_or", "reduce_xor", "clz", "empty2",
    "axis_index",
)

DELIBERATE_GAPS: dict[tuple[str, str], str] = {
    **{(name, "transpose"): "not linear in any input" for name in NONLINEAR},
    **{(name, "transpose"): "zero derivative: no tangent to transpose"
       for name in ZERO_DERIVATIVE},
    # JAX defines no derivative for nextafter: differentiating it raises
    # NotImplementedError("Differentiation rule for 'nextafter' not implemented").
    ("nextafter", "jvp"): "no derivative in JAX",
    ("nextafter", "transpose"): "no derivative in JAX",
    # digamma's derivative is polygamma(1, x), a primitive minijax does not have yet.
    ("digamma", "jvp"): "needs polygamma (not in minijax)",
    ("digamma", "transpose"): "not linear in any input",
}

# The control-flow primitives are covered like any other (their rules sit beside them in
# minijax/lax/control_flow/); ``while`` has a transpose rule only to raise JAX's
# "forward-mode only" error.
CONTROL_FLOW = ("cond", "while", "scan")


def reachable_primitives() -> dict[str, Primitive]:
    """Every Primitive object in ``minijax.lax`` and its submodules, and ``add_any``."""
    found: dict[str, Primitive] = {"add_any": ad.add_any_p}
    visited: set[str] = set()

    def walk(module: types.ModuleType) -> None:
        if module.__name__ in visited:
            return
        visited.add(module.__name__)
        for value in vars(module).values():
            if isinstance(value, Primitive):
                found[value.name] = value
            elif isinstance(value, types.ModuleType) and \
                    value.__name__.startswith("minijax.lax"):
                walk(value)

    walk(minijax.lax)
    return found


def rule_matrix() -> dict[str, dict[str, bool]]:
    import minijax.autodiff  # noqa: F401  (imports every rule module)

    return {name: {"jvp": p in ad.jvp_rules, "transpose": p in transpose.transpose_rules}
            for name, p in sorted(reachable_primitives().items())}


def format_matrix(matrix: dict[str, dict[str, bool]]) -> str:
    def cell(name: str, kind: str) -> str:
        if matrix[name][kind]:
            return "yes"
        reason = DELIBERATE_GAPS.get((name, kind))
        return f"- ({reason})" if reason else "MISSING"

    width = max(map(len, matrix))
    lines = [f"{'primitive':<{width}}  {'jvp rule':<24}  transpose rule", "-" * (width + 60)]
    lines += [f"{name:<{width}}  {cell(name, 'jvp'):<24}  {cell(name, 'transpose')}"
              for name in matrix]
    return "\n".join(lines)


def test_print_rule_matrix(request: pytest.FixtureRequest) -> None:
    table = format_matrix(rule_matrix())
    print("\n" + table)
    request.node.add_report_section("call", "AD rule matrix", table)
    assert "MISSING" not in table


def test_no_undocumented_gaps() -> None:
    matrix = rule_matrix()
    missing = [(name, kind) for name, kinds in matrix.items() for kind, has in kinds.items()
               if not has]
    undocumented = [gap for gap in missing if gap not in DELIBERATE_GAPS]
    assert not undocumented, f"rules missing and not listed in DELIBERATE_GAPS: {undocumented}"


def test_deliberate_gaps_are_real_gaps() -> None:
    """An entry of DELIBERATE_GAPS whose rule exists (or whose primitive is gone) is stale."""
    matrix = rule_matrix()
    stale = [(name, kind) for name, kind in DELIBERATE_GAPS
             if name not in matrix or matrix[name][kind]]
    assert not stale, f"DELIBERATE_GAPS lists rules that exist or primitives that do not: {stale}"


def test_control_flow_is_covered() -> None:
    matrix = rule_matrix()
    for name in CONTROL_FLOW:
        assert matrix[name]["jvp"], f"{name} has no JVP rule"
    for name in ("cond", "scan"):
        assert matrix[name]["transpose"], f"{name} has no transpose rule"


def test_missing_rules_raise_jax_errors() -> None:
    """What a gap means for a user: JAX's NotImplementedError messages."""
    import minijax.numpy as jnp
    from minijax import lax

    with pytest.raises(NotImplementedError,
                       match="Differentiation rule for 'nextafter' not implemented"):
        minijax.grad(lambda x: lax.nextafter(x, jnp.float32(2)))(1.0)
