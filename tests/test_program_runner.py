"""The runner on programs written for the purpose (tests/graphs.py): calling methods,
checking inputs and outputs, state shared by methods, input updates, and quantized
constants dequantized by their AffineGroup scheme."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graphs import B, W, call, constant, integer, linear_method, meta, method, saved, tensor

torch = pytest.importorskip("torch")

import ptn.torch  # noqa: E402
from ptn.program.read import read_program  # noqa: E402


def linear_package(tmp_path: Path, x: dict | None = None) -> Path:
    return saved(tmp_path / "lin.ptn", [linear_method(x)], {"w": W, "b": B})


def test_a_method_runs_by_name_and_as_an_attribute(tmp_path: Path) -> None:
    runner = ptn.torch.load_program(linear_package(tmp_path))
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))
    want = torch.nn.functional.linear(x, torch.from_numpy(W), torch.from_numpy(B))
    assert runner.methods == ("forward",)
    (by_name,) = runner.run("forward", x)
    (by_attribute,) = runner.forward(x)
    assert torch.equal(by_name, want) and torch.equal(by_attribute, want)
    assert "forward" in dir(runner)
    with pytest.raises(AttributeError):
        runner.backward  # noqa: B018
    with pytest.raises(ptn.torch.UnknownMethodError, match=r"no method 'backward'"):
        runner.run("backward", x)


def test_method_names_that_are_no_identifiers_run_by_name_only(tmp_path: Path) -> None:
    methods = [{**linear_method(), "name": name} for name in ("class", "run", "two words")]
    runner = ptn.torch.load_program(saved(tmp_path / "m.ptn", methods, {"w": W, "b": B}))
    x = torch.ones(2, 4)
    results = [runner.run(name, x)[0] for name in runner.methods]
    assert all(torch.equal(r, results[0]) for r in results)
    assert callable(runner.run) and runner.run.__func__ is ptn.torch.ProgramRunner.run  # type: ignore[attr-defined]
    assert "class" not in dir(runner) and "two words" not in dir(runner)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ((), r"takes 1 inputs \(x\), not 0"),
        ((np.ones((2, 4), np.float32),), r"input 0 \('x'\) is a ndarray, not a torch.Tensor"),
        (
            (torch.ones(2, 4, dtype=torch.float64),),
            r"is torch.float64; the graph declares F32 \[2, 4\]",
        ),
        ((torch.ones(8),), r"has shape \[8\] \(rank 1\); the graph declares F32 \[2, 4\]"),
        ((torch.ones(2, 5),), r"dimension 1 is 5, outside 4"),
    ],
)
def test_inputs_are_checked_against_the_graph(tmp_path: Path, inputs: tuple, message: str) -> None:
    runner = ptn.torch.load_program(linear_package(tmp_path))
    with pytest.raises(ptn.torch.InputError, match=message):
        runner.run("forward", *inputs)


def test_an_output_that_differs_from_its_declaration_is_an_error(tmp_path: Path) -> None:
    m = linear_method()
    m["graph"]["tensor_values"][-1]["meta"] = meta("HALF", 2, 3)  # "lin": declared F16
    runner = ptn.torch.load_program(saved(tmp_path / "o.ptn", [m], {"w": W, "b": B}))
    with pytest.raises(
        ptn.torch.OutputError, match=r"output 0 \('lin'\) is torch.float32; the graph declares F16"
    ):
        runner.forward(torch.ones(2, 4))


def test_an_operator_failure_names_the_node_and_keeps_its_cause(tmp_path: Path) -> None:
    """x declared [2, 1..8]: a width the weight does not take passes the input check and
    fails in linear, which the error names."""
    runner = ptn.torch.load_program(linear_package(tmp_path, meta("FLOAT", 2, (1, 8))))
    with pytest.raises(
        ptn.torch.OperatorError, match=r"node 'lin' \(torch.ops.aten.linear.default\)"
    ) as err:
        runner.forward(torch.ones(2, 5))
    assert isinstance(err.value.__cause__, RuntimeError)


def counter_methods() -> list[dict]:
    """step(): count += 1 (a persistent buffer) and seen += 1 (a non-persistent one),
    returning count; read(): count + seen. Both methods bind both."""
    one = meta("FLOAT", 1)
    bound = [constant("b_count", "count", one, mutated=True, kind="BUFFER")]
    buffers = [("b_seen", "seen", one)]
    step = method(
        "step",
        inputs={},
        constants=bound,
        buffers=buffers,
        nodes=[
            call("inc", "add.Scalar", [("self", tensor("b_count")), ("other", integer(1))]),
            call("inc_seen", "add.Scalar", [("self", tensor("b_seen")), ("other", integer(1))]),
            call("out", "clone.default", [("self", tensor("inc"))]),
        ],
        returns=[
            ("inc", "BUFFER_MUTATION", "count"),
            ("inc_seen", "BUFFER_MUTATION", "seen"),
            ("out", "USER_OUTPUT", ""),
        ],
        values={"inc": one, "inc_seen": one, "out": one},
    )
    read = method(
        "read",
        inputs={},
        constants=bound,
        buffers=buffers,
        nodes=[
            call("total", "add.Tensor", [("self", tensor("b_count")), ("other", tensor("b_seen"))])
        ],
        returns=[("total", "USER_OUTPUT", "")],
        values={"total": one},
    )
    return [step, read]


def test_buffers_carry_state_across_calls_and_methods(tmp_path: Path) -> None:
    path = saved(
        tmp_path / "c.ptn", counter_methods(), {"count": np.array([10.0], np.float32)}, ("count",)
    )
    runner = ptn.torch.load_program(path)
    assert runner.read()[0].item() == 10.0  # stored count, seen from zero
    assert [runner.step()[0].item() for _ in range(3)] == [11.0, 12.0, 13.0]
    assert runner.read()[0].item() == 13.0 + 3.0
    assert runner.buffers["count"].item() == 13.0 and runner.buffers["seen"].item() == 3.0
    again = ptn.torch.load_program(path)
    assert again.read()[0].item() == 10.0


def test_a_user_input_mutation_updates_the_callers_tensor(tmp_path: Path) -> None:
    x = meta("FLOAT", 3)
    m = method(
        "forward",
        inputs={"x": x},
        nodes=[call("doubled", "mul.Scalar", [("self", tensor("x")), ("other", integer(2))])],
        returns=[("doubled", "USER_INPUT_MUTATION", "x"), ("doubled", "USER_OUTPUT", "")],
        values={"doubled": x},
    )
    runner = ptn.torch.load_program(saved(tmp_path / "m.ptn", [m]))
    given = torch.tensor([1.0, 2.0, 3.0])
    (out,) = runner.forward(given)
    assert given.tolist() == [2.0, 4.0, 6.0] and out.tolist() == [2.0, 4.0, 6.0]


# -- AffineGroup ------------------------------------------------------------------------------


def pack(values: np.ndarray, bits: int) -> np.ndarray:
    """Unsigned ``bits``-bit values, least significant bit first, as bytes."""
    flat = values.reshape(-1).astype(np.int64)
    stream = ((flat[:, None] >> np.arange(bits)) & 1).astype(np.uint8).reshape(-1)
    return np.packbits(stream, bitorder="little")


def quantized_linear(scheme: dict, out_dtype: str = "FLOAT") -> dict:
    """forward(x) = linear(x, dequantize(w)) for a quantized w of logical sizes [4, 6]."""
    w_meta = {**meta("BYTE", 4, 6), "quant": {"scheme": ("AffineGroup", scheme)}}
    return method(
        "forward",
        inputs={"x": meta(out_dtype, 2, 6)},
        constants=[constant("p_w", "w", w_meta)],
        nodes=[call("lin", "linear.default", [("input", tensor("x")), ("weight", tensor("p_w"))])],
        returns=[("lin", "USER_OUTPUT", "")],
        values={"lin": meta(out_dtype, 2, 4)},
    )


@pytest.mark.parametrize("asymmetric", [False, True])
def test_int4_groups_are_dequantized_by_their_scheme(tmp_path: Path, asymmetric: bool) -> None:
    rng = np.random.default_rng(3)
    q = rng.integers(-8, 8, (4, 6))  # logical int4 values
    scales = rng.uniform(0.5, 2, (4, 3)).astype(np.float32)  # group_size 2: 3 groups a row
    zero = rng.integers(-2, 3, (4, 3)).astype(np.int8) if asymmetric else np.zeros((4, 3), np.int8)
    scheme = {
        "scale_data_key": "w.scale",
        "scale_dtype": "FLOAT",
        "quant_min": -8,
        "quant_max": 7,
        "group_size": 2,
    }
    constants = {"w": pack(q + 8, 4), "w.scale": scales}
    if asymmetric:
        scheme |= {"zero_point_data_key": "w.zero", "zero_point_dtype": "CHAR"}
        constants["w.zero"] = zero
    path = saved(tmp_path / "q.ptn", [quantized_linear(scheme)], constants)
    assert ptn.validate(path).valid
    x = torch.randn(2, 6, generator=torch.Generator().manual_seed(0))
    real = np.repeat(scales, 2, axis=1) * (q - np.repeat(zero, 2, axis=1))
    want = torch.nn.functional.linear(x, torch.from_numpy(real.astype(np.float32)))
    (got,) = ptn.torch.load_program(path).forward(x)
    torch.testing.assert_close(got, want)


def test_per_channel_int8_in_the_dtype_of_its_consumer(tmp_path: Path) -> None:
    """group_size 0: one scale a row; the consumer computes in float16, so the weight is
    dequantized to float16 (the scheme's result dtype is its consumer's, per ExecuTorch)."""
    q = np.arange(-12, 12).reshape(4, 6)
    scales = np.array([[0.5], [1.0], [0.25], [2.0]], np.float32)
    scheme = {
        "scale_data_key": "w.scale",
        "scale_dtype": "FLOAT",
        "quant_min": -128,
        "quant_max": 127,
    }
    constants = {"w": (q + 128).astype(np.uint8), "w.scale": scales}
    path = saved(tmp_path / "q8.ptn", [quantized_linear(scheme, "HALF")], constants)
    x = torch.ones(2, 6, dtype=torch.float16)
    (got,) = ptn.torch.load_program(path).forward(x)
    assert got.dtype == torch.float16
    want = torch.nn.functional.linear(x, torch.from_numpy((scales * q).astype(np.float16)))
    assert torch.equal(got, want)


def test_a_program_runs_from_its_decoded_form_and_any_tensors(tmp_path: Path) -> None:
    """ProgramRunner(program, constants): for constants from elsewhere (updated in place)."""
    with ptn.load(linear_package(tmp_path)) as pkg:
        program, _ = read_program(pkg.program)
    assert program is not None
    runner = ptn.torch.ProgramRunner(program, {"w": torch.from_numpy(W), "b": torch.zeros(3)})
    (out,) = runner.forward(torch.ones(2, 4))
    assert torch.allclose(out, torch.from_numpy(W).sum(1).expand(2, 3))
