"""The table of StableHLO ops (``stablehlo_ops.OPS``) is the one place an op is declared.

* every op the parser, the printer and lowering know has a row, and every row the
  parser and printer can spell;
* every NumPy ufunc and kernel a row names exists, and the elementwise ops with neither
  are written by hand in the NumPy backend;
* a row added at test time is all a new elementwise op needs to be parsed, printed,
  optimised, run by the NumPy backend and counted by the cost analysis;
* the table imports nothing from minijax, so every layer of the compiler may read it.
"""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest

from minijax.compiler import lowering, numpy_backend, stablehlo, stablehlo_ir, stablehlo_ops
from minijax.compiler.stablehlo import parse_module, walk_ops
from minijax.compiler.stablehlo_ir import print_module
from minijax.compiler.stablehlo_ops import OPS, PRETTY_SYNTAXES, TRANSCENDENTAL, OpInfo
from tests.oracle import tolerances
from tests.test_numpy_backend import PROGRAMS, lower_program

# Printed by ``Printer._body`` itself (``return``, ``call``), without a method of their own.
_TERMINATORS_AND_CALLS = ("func.return", "stablehlo.return", "func.call")


def test_columns_take_their_documented_values() -> None:
    for name, info in OPS.items():
        assert info.syntax in (*PRETTY_SYNTAXES, "generic", "custom"), name
        assert info.cost in ("flop", "transcendental", "data", "none"), name
        assert not info.keywords or info.syntax in PRETTY_SYNTAXES, name
        assert not info.kernel_kinds or (info.numpy and info.kernel), name
        assert not info.commutative or info.identity is not None, name


def test_every_op_the_parser_and_printer_know_has_a_row() -> None:
    custom = {name for name, info in OPS.items() if info.syntax == "custom"}
    assert set(stablehlo._PARSERS) == custom
    for name in custom.difference(_TERMINATORS_AND_CALLS):
        assert hasattr(stablehlo_ir.Printer, "_" + name.replace(".", "_")), name


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_every_op_lowering_emits_has_a_row(program) -> None:
    _, text, _ = lower_program(program)
    module = parse_module(text)
    names = {op.name for func in module.funcs for op in walk_ops(func.body)}
    assert names <= set(OPS), names - set(OPS)


def test_every_numpy_ufunc_and_kernel_exists() -> None:
    for name, info in OPS.items():
        if info.numpy:
            assert isinstance(getattr(np, info.numpy, None), np.ufunc), name
        if info.kernel:
            assert callable(numpy_backend.KERNELS.get(info.kernel)), name


def test_elementwise_ops_without_ufunc_or_kernel_are_written_by_hand() -> None:
    by_hand = inspect.getsource(numpy_backend.elementwise_expr) + inspect.getsource(
        numpy_backend.ufunc_call)
    for name, info in OPS.items():
        if info.elementwise and not info.numpy and not info.kernel:
            assert f'"{name}"' in by_hand, name


_EXP2_MODULE = """\
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.exp2 %arg0 : tensor<3xf32>
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %1 = stablehlo.exp2 %cst : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %3 = stablehlo.multiply %0, %2 : tensor<3xf32>
    return %3 : tensor<3xf32>
  }
}
"""


def test_a_new_elementwise_op_is_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SyntaxError, match="unknown operation stablehlo.exp2"):
        parse_module(_EXP2_MODULE)
    monkeypatch.setitem(OPS, "stablehlo.exp2", OpInfo(elementwise=True, numpy="exp2",
                                                      cost=TRANSCENDENTAL))
    assert print_module(parse_module(_EXP2_MODULE)) == _EXP2_MODULE
    executable = numpy_backend.compile(_EXP2_MODULE)
    x = np.array([0.0, 1.0, -2.5], np.float32)
    (out,) = executable(x)
    rtol, atol = tolerances("float32")
    np.testing.assert_allclose(out, np.exp2(x) * np.float32(8), rtol=rtol, atol=atol)
    assert out.dtype == np.float32
    assert "np.exp2(" in executable.as_text()  # fused into the product; exp2(3) folded:
    optimized = executable.optimized_ir()
    assert optimized.count("stablehlo.exp2") == 1 and "dense<8.000000e+00>" in optimized
    cost = lowering.module_cost(parse_module(_EXP2_MODULE))
    assert cost["transcendentals"] == 4  # three elements, and the scalar


def test_the_table_imports_nothing_from_minijax() -> None:
    tree = ast.parse(inspect.getsource(stablehlo_ops))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names]
    assert imported and not [m for m in imported if m.split(".")[0] == "minijax"]
