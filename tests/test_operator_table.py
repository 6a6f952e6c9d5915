"""ptn's operator table (schema/operators.json, spec.md section 4.5): generated from torch's
registry, and holding to its policy.

The table is data every validator reads; these tests check the data itself: that it is
what tools/operator_table.py makes of the pinned torch (where that torch is installed),
that nothing it holds reaches outside the computation, and that it covers what real
exports and the common model families call.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

import ptn
from ptn.program.calls import RETURN_KINDS, value_problem
from ptn.program.model import CALL_FUNCTION
from ptn.program.operators import OperatorTable, operator_table
from ptn.program.read import read_program
from tools import operator_table as tool

REPO = Path(__file__).resolve().parent.parent
TABLE = operator_table()
SCHEMAS = [s for overloads in TABLE.operators.values() for s in overloads.values()]


def _torch_version() -> str | None:
    try:
        return importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return None


@pytest.mark.skipif(
    _torch_version() != tool.TORCH, reason=f"the table is generated from torch {tool.TORCH}"
)
def test_the_committed_table_is_what_the_pinned_torch_gives() -> None:
    """The drift check: regenerate from torch's registry, compare with the file."""
    committed = (REPO / tool.OUTPUT).read_text(encoding="utf-8")
    assert tool.from_torch() == committed, "stale: run python -m tools.operator_table"
    assert tool.main(["--check"]) == 0


@pytest.mark.skipif(
    _torch_version() != tool.TORCH, reason=f"the table is generated from torch {tool.TORCH}"
)
def test_every_overload_has_a_kernel_in_torch() -> None:
    """The runner can run whatever validation lets through."""
    import torch

    from ptn.interop.torch_values import Kernels

    kernels = Kernels(torch)
    for schema in SCHEMAS:
        assert kernels(schema)._schema.name == f"aten::{schema.name}", schema.qualified


def test_the_table_says_its_version_and_source() -> None:
    assert TABLE.version == tool.TABLE_VERSION == 1
    assert TABLE.torch == tool.TORCH
    assert len(SCHEMAS) > 400


# -- the policy -------------------------------------------------------------------------------


OUTSIDE = {
    # files, the terminal
    "from_file", "_print", "save", "load",
    # storage identity
    "set_", "resize_", "resize_as_", "as_strided", "as_strided_", "as_strided_copy",
    "as_strided_scatter", "unsqueeze_", "squeeze_", "transpose_", "t_", "swapdims_",
    "detach_", "_unsafe_index",
    # uninitialised memory
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    # random numbers
    "rand", "randn", "randint", "rand_like", "randn_like", "randperm", "bernoulli",
    "bernoulli_", "normal", "normal_", "uniform_", "multinomial", "dropout", "dropout_",
    "native_dropout", "feature_dropout", "alpha_dropout", "rrelu", "exponential_",
    "geometric_", "cauchy_", "log_normal_", "random_",
    # data-dependent sizes
    "nonzero", "masked_select", "unique", "_unique2", "_local_scalar_dense", "item",
    # process state, autograd
    "set_grad_enabled", "is_grad_enabled", "manual_seed", "seed", "requires_grad_",
    "retain_grad", "backward", "warn",
}  # fmt: skip


def test_nothing_outside_the_computation_is_in_the_table() -> None:
    assert OUTSIDE.isdisjoint(TABLE.operators), sorted(OUTSIDE & set(TABLE.operators))
    assert set(TABLE.refused).isdisjoint(TABLE.operators)


def test_refused_overloads_of_allowed_operators_are_out() -> None:
    for name, overload in tool.REFUSED_OVERLOADS:
        assert name in TABLE.operators and overload not in TABLE.operators[name]


def test_hidden_aliases_carry_a_views_alias_set() -> None:
    for (name, overload), param in tool.HIDDEN_ALIASES.items():
        schema = TABLE.operators[name][overload]
        (aliased,) = [p for p in schema.params if p.alias]
        assert aliased.name == param and all(r.alias == aliased.alias for r in schema.returns)


def test_no_overload_draws_random_numbers_or_writes_an_out_argument() -> None:
    for s in SCHEMAS:
        for p in s.params:
            assert "Generator" not in p.type, s.qualified
            assert not (p.write and p.kwarg_only), s.qualified  # out=
            if p.write:
                assert p.type == "Tensor" and p.alias is not None, s.qualified


def test_only_operators_that_are_not_views_have_in_place_variants() -> None:
    for name in TABLE.operators:
        if name.endswith("_") and name[:-1] in TABLE.operators:
            base = TABLE.operators[name[:-1]].values()
            assert not any(r.alias and not r.write for s in base for r in s.returns), name


def test_devices_training_and_dropout_are_held_to_pure_values() -> None:
    held = {
        "device": ("cpu",),
        "pin_memory": (False,),
        "train": (False,),
        "training": (False,),
        "dropout_p": (0.0,),
    }
    seen = set()
    for s in SCHEMAS:
        for p in s.params:
            if p.name in held:
                seen.add(p.name)
                optional = (None,) if p.type.endswith("?") else ()
                assert p.allowed == (*held[p.name], *optional), (s.qualified, p.name)
            else:
                assert p.allowed is None, (s.qualified, p.name)
            assert p.type != "Device" or p.name == "device", (s.qualified, p.name)
    assert seen == set(held)


def test_every_return_is_a_kind_a_node_can_hold_and_aliases_a_parameter() -> None:
    for s in SCHEMAS:
        sets = {p.alias for p in s.params if p.alias}
        for r in s.returns:
            assert r.type in RETURN_KINDS, s.qualified
            assert r.alias is None or r.alias in sets, s.qualified


def test_every_parameter_type_is_one_a_node_can_give() -> None:
    """value_problem knows a value kind for each type (a NoneArg passes any optional)."""
    for s in SCHEMAS:
        for p in s.params:
            problem = value_problem(p, None)
            assert problem is not None and "ptn passes no value" not in problem, (s.qualified, p)


# -- coverage ---------------------------------------------------------------------------------


def test_every_operator_of_every_real_export_is_in_the_table() -> None:
    for path in sorted((REPO / "tests" / "fixtures" / "real").glob("*.ptn")):
        with ptn.load(path) as pkg:
            program, _ = read_program(bytes(pkg.program))
        assert program is not None
        for method in program.methods:
            for node in method.graph.nodes:
                if node.op_kind == CALL_FUNCTION:
                    TABLE.lookup(node.target)  # raises NodeProblem if not


COMMON = {
    "transformer": "embedding linear matmul bmm baddbmm softmax _softmax layer_norm "
    "native_layer_norm rms_norm scaled_dot_product_attention gelu silu rsqrt pow mean "
    "cat split chunk index_put_ slice_scatter where masked_fill triu tril arange cumsum "
    "topk argmax",
    "cnn": "convolution conv1d conv2d conv_transpose2d relu relu_ hardswish max_pool2d "
    "max_pool2d_with_indices avg_pool2d adaptive_avg_pool2d batch_norm "
    "_native_batch_norm_legit_no_training group_norm upsample_nearest2d "
    "upsample_bilinear2d pixel_shuffle flatten constant_pad_nd",
    "rnn": "lstm gru rnn_tanh rnn_relu lstm_cell gru_cell rnn_tanh_cell sigmoid tanh stack unbind",
}


@pytest.mark.parametrize("family", sorted(COMMON))
def test_the_common_model_families_are_covered(family: str) -> None:
    missing = [n for n in COMMON[family].split() if n not in TABLE.operators]
    assert missing == []


# -- the generator ----------------------------------------------------------------------------


def test_schema_strings_parse_with_alias_sets_sizes_and_defaults() -> None:
    name, overload, params, returns = tool.parse_schema(
        "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"
    )
    assert (name, overload) == ("split", "Tensor")
    assert [(p.name, p.type, p.alias, p.write, p.default) for p in params] == [
        ("self", "Tensor", "a", False, None),
        ("split_size", "int", None, False, None),
        ("dim", "int", None, False, "0"),
    ]
    assert [(r.type, r.alias) for r in returns] == [("Tensor[]", "a")]
    _, overload, params, returns = tool.parse_schema(
        "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], "
        "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor"
    )
    assert overload == "default"
    assert [(p.type, p.size, p.default) for p in params[1:3]] == [
        ("int[]", 2, None),
        ("int[]", 2, "[]"),
    ]
    _, _, params, returns = tool.parse_schema(
        "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"
    )
    assert (params[0].alias, params[0].write, params[2].kwarg_only) == ("a", True, True)
    assert (returns[0].alias, returns[0].write) == ("a", True)


def test_the_policy_refuses_out_variants_generators_and_builtins() -> None:
    def why(text: str) -> str | None:
        name, _, params, returns = tool.parse_schema(text)
        return tool.refusal(name, params, returns)

    assert "out=" in str(
        why("aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) "
            "-> Tensor(a!)")
    )  # fmt: skip
    assert "generator" in str(why("aten::rand(SymInt[] size, *, Generator? generator) -> Tensor"))
    assert "builtin" in str(why("aten::add.int(int a, int b) -> int"))
    assert "Dimname" in str(why("aten::sum.dim_DimnameList(Tensor self, Dimname[1] dim) -> Tensor"))
    assert why("aten::neg(Tensor self) -> Tensor") is None


def test_a_table_naming_an_operator_both_allowed_and_refused_is_not_built() -> None:
    schemas = ["aten::neg(Tensor self) -> Tensor"]
    refused = dict(tool.REFUSED)
    try:
        tool.REFUSED["neg"] = "test"
        with pytest.raises(ValueError, match="both allowed and refused"):
            tool.build_table(schemas, "0.0.0")
    finally:
        tool.REFUSED.clear()
        tool.REFUSED.update(refused)


def test_a_table_is_read_back_as_written() -> None:
    doc = {
        "version": 7,
        "torch": "9.9.9",
        "refused": [{"name": "bad", "why": "it is bad"}],
        "operators": [
            {
                "name": "neg",
                "overload": "default",
                "params": [{"name": "self", "type": "Tensor"}],
                "returns": [{"type": "Tensor"}],
            }
        ],
    }
    table = OperatorTable(doc)
    assert table.lookup("torch.ops.aten.neg.default").qualified == "neg"
    assert (table.version, table.torch, table.refused) == (7, "9.9.9", {"bad": "it is bad"})
