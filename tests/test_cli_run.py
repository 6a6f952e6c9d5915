"""``ptn run``: a method on random or given inputs, its outputs shown and written; exit
status 0 (it ran), 1 (the package does not run), 2 (usage, I/O, inputs that do not fit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from graphs import B, W, linear_method, saved
from test_program_run import REAL, numbered, reference

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from ptn.cli.main import cli  # noqa: E402
from ptn.interop.run_io import read_tensors, write_tensors  # noqa: E402

PACKAGES = sorted(p.stem for p in REAL.glob("*.ptn"))


class Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def ptn_run(*args: str) -> Ran:
    """The command in this process (torch is imported once for all the tests)."""
    result = CliRunner().invoke(cli, ["run", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def test_random_inputs_run_every_method_of_every_real_export() -> None:
    """The smoke test a CI can run on any package."""
    for name in PACKAGES:
        methods = ["forward", "encode"] if name == "two_methods" else ["forward"]
        for method in methods:
            proc = ptn_run(str(REAL / f"{name}.ptn"), "--random", "--method", method)
            assert proc.returncode == 0, (name, proc.stderr)
            lines = proc.stdout.splitlines()
            assert lines[0].startswith(f"{REAL / name}.ptn {method}: ") and "seed 0" in lines[0]
            assert any(line.lstrip().startswith("output0") for line in lines[1:])


def test_output_file_round_trips_through_inputs(tmp_path: Path) -> None:
    first, second = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    path = str(REAL / "kv_cache.ptn")
    assert ptn_run(path, "--random", "--seed", "7", "-o", str(first)).returncode == 0
    proc = ptn_run(path, "--inputs", str(first), "-o", str(second))
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stderr and "2 inputs, 1 output" in proc.stderr
    a, b = read_tensors(first), read_tensors(second)
    assert sorted(a) == ["output0", "pos", "x"] and all(torch.equal(a[k], b[k]) for k in a)


def test_given_inputs_give_the_eager_outputs(tmp_path: Path) -> None:
    io, _ = reference("dynamic_batch")
    (x,) = numbered(io, "forward/call1", "input")
    given, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    write_tensors(given, {"x": x})
    proc = ptn_run(str(REAL / "dynamic_batch.ptn"), "--inputs", str(given), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "float32 [8, 3]" in proc.stdout
    assert torch.equal(read_tensors(out)["output0"], io["forward/call1/output0"])


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--random", "--inputs", "x"], "give --inputs FILE or --random, not both"),
        ([], "method forward takes inputs (x): give --inputs FILE or --random"),
        (["--random", "--method", "decode"], "no method 'decode'; the package has forward, encode"),
        (["--inputs", "/nonexistent/in.safetensors"], "not a safetensors file ptn can read"),
    ],
)
def test_usage_problems_exit_2(args: list[str], words: str) -> None:
    proc = ptn_run(str(REAL / "two_methods.ptn"), *args)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def test_inputs_that_do_not_fit_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "in.safetensors"
    write_tensors(path, {"x": torch.zeros(9, 2, 4), "y": torch.zeros(1)})
    proc = ptn_run(str(REAL / "dynamic_batch.ptn"), "--inputs", str(path))
    assert proc.returncode == 2 and "keys that are no input: y" in proc.stderr
    write_tensors(path, {"x": torch.zeros(9, 2, 4)})
    proc = ptn_run(str(REAL / "dynamic_batch.ptn"), "--inputs", str(path))
    assert proc.returncode == 2 and "dimension 0 is 9, outside 2..8" in proc.stderr


def test_a_package_that_does_not_run_exits_1(tmp_path: Path) -> None:
    m = linear_method()
    m["graph"]["nodes"][3]["target"] = "torch.ops.aten.nope.default"
    proc = ptn_run(str(saved(tmp_path / "u.ptn", [m], {"w": W, "b": B})), "--random")
    assert proc.returncode == 1
    assert "error ptg-unknown-operator [program.ptg /methods/0/graph/nodes/3/target]" in proc.stderr
    broken = tmp_path / "broken.ptn"
    broken.write_bytes(b"PK\x05\x06" + bytes(18))
    assert ptn_run(str(broken), "--random").returncode == 1
    assert ptn_run(str(tmp_path / "missing.ptn"), "--random").returncode == 2


def test_names_from_the_file_are_escaped(tmp_path: Path) -> None:
    m = {**linear_method(), "name": "\x1b[31mred"}
    path = saved(tmp_path / "e.ptn", [m], {"w": W, "b": B})
    proc = ptn_run(str(path), "--random")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\\x1b[31mred" in proc.stdout


def test_without_torch_it_says_what_to_install() -> None:
    code = "import sys; sys.modules['torch'] = None; from ptn.cli.main import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "run", str(REAL / "mlp.ptn"), "--random"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "pip install torch" in proc.stderr


@pytest.mark.slow
def test_the_command_is_listed_and_exits_by_its_status() -> None:
    proc = subprocess.run([sys.executable, "-m", "ptn", "--help"], capture_output=True, text=True)
    assert "ptn run model.ptn --random" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "ptn", "run", str(REAL / "two_methods.ptn"), "--random"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "two_methods.ptn forward: " in proc.stdout


def test_the_docs_example_is_real() -> None:
    """docs/run.md shows ``ptn run kv_cache.ptn --random``: the same rows (not the time)."""
    doc = (REAL.parent.parent.parent / "docs" / "run.md").read_text()
    shown = doc.split("$ ptn run tests/fixtures/real/kv_cache.ptn --random\n")[1].split("$")[0]
    proc = ptn_run(str(REAL / "kv_cache.ptn"), "--random")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == shown.splitlines()[1:]


@pytest.mark.parametrize(
    ("size", "cap"),
    [("8M", 8 * 2**20), ("8MiB", 8 * 2**20), ("8mb", 8 * 2**20), ("1.5G", 3 * 2**29),
     ("2048", 2048), ("1 K", 1024), ("1T", 2**40)],
)  # fmt: skip
def test_max_memory_takes_sizes_with_binary_units(size: str, cap: int) -> None:
    from ptn.cli.running import MemorySize

    assert MemorySize().convert(size, None, None) == cap


@pytest.mark.parametrize("size", ["lots", "0", "0.1", "-1G", "1X", "G", ""])
def test_a_size_that_is_no_size_is_a_usage_problem(size: str) -> None:
    proc = ptn_run(str(REAL / "mlp.ptn"), "--random", "--max-memory", size)
    assert proc.returncode == 2 and "is no size in bytes" in proc.stderr, proc.stderr


def test_the_limits_are_in_the_help() -> None:
    proc = ptn_run("--help")
    assert proc.returncode == 0
    assert "--max-memory SIZE" in proc.stdout and "--time-limit SECONDS" in proc.stdout
