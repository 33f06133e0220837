"""A leaf that is no array (a string in a dict passed to grad, jit returning a string) gets
JAX's TypeError, naming the value's type (and, for jit outputs, where it is in the
pytree), not NumPy's "data type 'x' not understood"."""

from __future__ import annotations

import pytest

import minijax
from tests.oracle import run_both

PROGRAMS = {
    "grad_of_a_dict_holding_a_string": lambda ns: ns.jax.grad(lambda d: d["a"])(
        {"a": 1.0, "b": "x"}),
    "grad_of_a_function_returning_a_string": lambda ns: ns.jax.grad(lambda x: "x")(1.0),
    "jit_returning_a_string": lambda ns: ns.jax.jit(lambda x: "x")(1.0),
    "jit_returning_an_object_in_a_dict": lambda ns: ns.jax.jit(
        lambda x: {"k": (x, object())})(1.0),
    "jit_returning_a_string_in_a_list": lambda ns: ns.jax.jit(lambda x: [x, "x"])(1.0),
}


def _message(error: Exception) -> str:
    """The message up to the location of the traced function (which differs by file)."""
    text = str(error)
    return text.split(" at ")[0] + text[text.find(" traced for "):] if " traced " in text \
        else text


@pytest.mark.parametrize("name", PROGRAMS)
def test_non_array_leaf_is_jax_s_type_error(name: str) -> None:
    pytest.importorskip("jax")
    (our_kind, ours), (their_kind, theirs) = run_both(PROGRAMS[name])
    assert our_kind == their_kind == "error"
    assert type(ours) is type(theirs) is TypeError
    assert _message(ours) == _message(theirs)


def test_messages_without_jax() -> None:
    with pytest.raises(TypeError, match=r"^Argument 'x' of type <class 'str'> is not a valid "
                                        r"JAX type\.$"):
        minijax.grad(lambda d: d["a"])({"a": 1.0, "b": "x"})
    with pytest.raises(TypeError, match=r"returned a value of type <class 'str'> at output "
                                        r"component \['k'\]\[1\], which is not a valid JAX"):
        minijax.jit(lambda x: {"k": (x, "x")})(1.0)
    with pytest.raises(TypeError, match=r"traced for jit returned a value of type "
                                        r"<class 'str'>, which is not a valid JAX type$"):
        minijax.jit(lambda x: "x")(1.0)


def test_python_complex_scalars_are_still_values() -> None:
    """The check must accept every Python number (complex included)."""
    assert complex(minijax.grad(lambda z: z * z, holomorphic=True)(1 + 1j)) == 2 + 2j
    assert complex(minijax.lax.add(1j, 2j)) == 3j
