"""`python -m tools.operator_table [--check]`: write schema/operators.json from torch.

The operator table is the set of ATen operators a `.ptn` program may call, each overload
with its schema as data (spec.md section 4.5). It is generated once from the operator
registry of the pinned torch (``TORCH``) and committed; every validator and the runner
read the committed file, never torch. ``--check`` regenerates it in memory and fails when
the committed file differs (tests/test_operator_table.py runs that check where the
pinned torch is installed).

What is in is decided here, as data: an allow list of operator names (``ALLOWED``), pure
tensor computation each, and for each name every overload torch registers except those
the policy refuses (``refusal``): ``out=`` variants, anything with a random generator,
named-tensor overloads, types ptn cannot pass, and in-place variants of the operators
that change a tensor's shape or storage rather than its values. A few parameters are
held to the values that keep a call pure (``ALLOWED_VALUES``: the CPU, no pinned memory,
no training-mode updates, no dropout). ``REFUSED`` names well-known operators that stay
out, each with the reason a validator gives when a program calls one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools import REPO_ROOT

TORCH = "2.13.0"
"""The torch whose registry the table is generated from (CI installs it)."""
TABLE_VERSION = 1
"""The table's own version: raised whenever an operator or overload leaves it."""
OUTPUT = Path("schema/operators.json")

_NAMES = """
abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh
tanh asinh acosh atanh sigmoid logit erf erfc erfinv floor ceil round trunc frac sign sgn
reciprocal square relu relu6 gelu silu mish hardtanh hardsigmoid hardswish elu selu celu
leaky_relu softplus softshrink hardshrink logical_not bitwise_not isnan isinf isfinite
nan_to_num clamp clamp_min clamp_max clip threshold glu _prelu_kernel prelu log_sigmoid

add sub rsub mul div floor_divide remainder fmod pow atan2 maximum minimum fmax fmin eq ne lt
le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor
bitwise_left_shift bitwise_right_shift where lerp addcmul addcdiv hypot copysign xlogy

sum mean prod amax amin max min argmax argmin var std var_mean std_mean logsumexp
linalg_vector_norm norm all any cumsum cumprod softmax _softmax log_softmax _log_softmax topk
sort argsort

linear matmul mm bmm addmm baddbmm addmv mv dot einsum outer

view_copy view reshape _unsafe_view permute permute_copy transpose transpose_copy t t_copy
squeeze squeeze_copy unsqueeze unsqueeze_copy expand expand_copy slice slice_copy select
select_copy narrow narrow_copy flatten unflatten cat stack split split_with_sizes split_copy
split_with_sizes_copy chunk unbind unbind_copy repeat repeat_interleave tile flip roll
contiguous clone alias alias_copy detach detach_copy index_select gather scatter scatter_add
index index_put index_copy index_fill masked_fill masked_scatter slice_scatter
select_scatter diagonal diagonal_copy triu tril pad constant_pad_nd reflection_pad1d
reflection_pad2d replication_pad1d replication_pad2d movedim

zeros ones full zeros_like ones_like full_like arange linspace scalar_tensor eye
lift_fresh_copy _to_copy to type_as copy fill zero new_zeros new_ones new_full

convolution conv1d conv2d conv3d conv_transpose1d conv_transpose2d embedding layer_norm
native_layer_norm group_norm native_group_norm batch_norm _native_batch_norm_legit_no_training
rms_norm scaled_dot_product_attention max_pool1d max_pool2d max_pool2d_with_indices avg_pool1d
avg_pool2d adaptive_avg_pool1d adaptive_avg_pool2d _adaptive_avg_pool2d upsample_nearest2d
upsample_bilinear2d pixel_shuffle lstm gru rnn_tanh rnn_relu lstm_cell gru_cell rnn_tanh_cell

sym_size sym_numel _assert_scalar _assert_tensor_metadata
"""
ALLOWED = tuple(sorted(set(_NAMES.split())))
"""The operator names in the table: elementwise math, reductions, linear algebra, shape
and copy operators, tensor factories, and the common CNN, transformer and RNN layers.
The in-place variant ``<name>_`` of each is in too, unless ``<name>`` is a view."""

REFUSED = {
    "from_file": "it reads and writes files of the host",
    "_print": "it prints to the terminal",
    "set_": "it makes a tensor share another's storage",
    "resize_": "it changes the storage of an existing tensor",
    "resize_as_": "it changes the storage of an existing tensor",
    "as_strided": "it views arbitrary memory of its input's storage",
    "as_strided_": "it views arbitrary memory of its input's storage",
    "as_strided_copy": "it reads arbitrary memory of its input's storage",
    "as_strided_scatter": "it writes arbitrary memory of its input's storage",
    "empty": "it returns uninitialised memory",
    "empty_like": "it returns uninitialised memory",
    "empty_strided": "it returns uninitialised memory",
    "new_empty": "it returns uninitialised memory",
    "new_empty_strided": "it returns uninitialised memory",
    "bernoulli": "it draws from the process's random number generator",
    "bernoulli_": "it draws from the process's random number generator",
    "dropout": "it draws from the process's random number generator",
    "multinomial": "it draws from the process's random number generator",
    "normal": "it draws from the process's random number generator",
    "normal_": "it draws from the process's random number generator",
    "rand": "it draws from the process's random number generator",
    "rand_like": "it draws from the process's random number generator",
    "randint": "it draws from the process's random number generator",
    "randn": "it draws from the process's random number generator",
    "randn_like": "it draws from the process's random number generator",
    "randperm": "it draws from the process's random number generator",
    "uniform_": "it draws from the process's random number generator",
    "_local_scalar_dense": "its result depends on tensor data, which no plan can bound",
    "set_grad_enabled": "it changes the process's autograd mode",
    "is_grad_enabled": "it reads the process's autograd mode",
    "requires_grad_": "it changes a tensor's autograd state",
    "retain_grad": "it changes a tensor's autograd state",
    "backward": "it runs autograd over the caller's graph",
    "manual_seed": "it reseeds the process's random number generator",
    "seed": "it reseeds the process's random number generator",
    "random_": "it draws from the process's random number generator",
    "save": "it writes a file of the host",
    "warn": "it prints to the terminal",
    "item": "its result depends on tensor data, which no plan can bound",
    "nonzero": "the size of its result depends on tensor data, which no plan can bound",
    "masked_select": "the size of its result depends on tensor data, which no plan can bound",
    "unique": "the size of its result depends on tensor data, which no plan can bound",
}
"""Well-known operators that are not in the table, and why (a validator's message says it)."""

REFUSED_OVERLOADS = {
    ("repeat_interleave", "Tensor"): "the size of its result depends on tensor data",
    ("repeat_interleave", "self_Tensor"): "the size of its result depends on tensor data",
    ("where", "default"): "it is nonzero (as_tuple): the size of its result depends on data",
    ("eq", "Tensor_list"): "a TorchScript builtin comparing lists, not a tensor kernel",
    ("ne", "Tensor_list"): "a TorchScript builtin comparing lists, not a tensor kernel",
    ("index", "list_Tensor"): "a TorchScript builtin searching a list, not a tensor kernel",
}
"""Overloads of allowed operators that stay out, and why."""

HIDDEN_ALIASES = {
    ("type_as", "default"): "self",
    ("_unsafe_view", "default"): "self",
    ("einsum", "default"): "tensors",
}
"""Overloads whose result may be their argument's storage (``type_as`` of a tensor of that
dtype is the tensor itself; ``_unsafe_view`` is a view; an ``einsum`` that only permutes
returns a view) although torch's schema announces no alias: the table gives them the alias
set a view has, so that a write through their result is a write into the argument."""

ALLOWED_VALUES: dict[str, list[Any]] = {
    "device": ["cpu"],
    "pin_memory": [False],
    "train": [False],
    "training": [False],
    "dropout_p": [0.0],
}
"""Parameters held to values that keep a call pure, by name: the CPU only (another
device initialises its runtime in the process), no pinned memory (which needs a device
runtime), no training mode (which updates running statistics in place, unannounced by
the schema, or draws dropout masks) and no dropout in attention. An optional parameter
may also be None."""

# Types a node can give a value for (spec.md section 4.4), in ptn's names.
_BASE = {
    "Tensor": "Tensor",
    "int": "int",
    "SymInt": "int",
    "float": "float",
    "bool": "bool",
    "Scalar": "Scalar",
    "str": "str",
    "ScalarType": "ScalarType",
    "Layout": "Layout",
    "MemoryFormat": "MemoryFormat",
    "Device": "Device",
}
_LISTS = {"int", "float", "bool", "Tensor", "Tensor?", "Scalar"}
_RETURNS = {"Tensor", "Tensor[]", "int", "float", "bool", "Scalar"}

_SCALAR_OPERATORS = frozenset(("_assert_scalar",))
"""Operators in the table that take and return no tensor (torch.export's shape guards)."""

_ALIAS = re.compile(r"\(([a-z]+)(!?)(?: -> \*)?\)")


@dataclass(frozen=True)
class _Arg:
    name: str
    type: str
    size: int | None
    alias: str | None
    write: bool
    kwarg_only: bool
    default: str | None


def _split(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return [*parts, tail] if tail else parts


def _type(raw: str) -> tuple[str | None, int | None, str | None, bool]:
    """(ptn type or None when ptn cannot pass it, list size, alias set, written) of a
    schema type such as ``Tensor(a!)``, ``SymInt[2]``, ``Tensor(a -> *)[]``, ``Tensor?[]``."""
    alias = None
    write = False
    match = _ALIAS.search(raw)
    if match is not None:
        alias, write = match.group(1), bool(match.group(2))
        raw = raw[: match.start()] + raw[match.end() :]
    size = None
    sized = re.fullmatch(r"(.*)\[(\d+)\](\??)", raw)
    if sized is not None:
        raw, size = f"{sized.group(1)}[]{sized.group(3)}", int(sized.group(2))
    suffix = ""
    while raw.endswith(("?", "[]")):
        cut = 1 if raw.endswith("?") else 2
        suffix = raw[-cut:] + suffix
        raw = raw[:-cut]
    if raw not in _BASE:
        return None, size, alias, write
    base = _BASE[raw]
    if suffix.startswith("[]") or suffix.startswith("?[]"):
        element = base + ("?" if suffix.startswith("?[]") else "")
        if element not in _LISTS:
            return None, size, alias, write
    elif suffix not in ("", "?"):
        return None, size, alias, write
    return base + suffix, size, alias, write


def _args(text: str) -> list[_Arg]:
    out, kwarg_only = [], False
    for part in _split(text):
        if part == "*":
            kwarg_only = True
            continue
        decl, _, default = part.partition("=")
        raw, _, name = decl.strip().rpartition(" ")
        kind, size, alias, write = _type(raw.strip())
        out.append(
            _Arg(name, kind or f"?{raw.strip()}", size, alias, write, kwarg_only, default or None)
        )
    return out


def _returns(text: str) -> list[_Arg]:
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    out = []
    for part in _split(text):
        raw, _, name = part.rpartition(" ") if " " in part.replace(" -> ", "") else (part, "", "")
        kind, size, alias, write = _type(raw.strip() or part)
        out.append(_Arg(name, kind or f"?{part}", size, alias, write, False, None))
    return out


def parse_schema(text: str) -> tuple[str, str, list[_Arg], list[_Arg]]:
    """(operator, overload, parameters, returns) of a schema string as torch prints it:
    ``aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor``."""
    head, _, rest = text.partition("(")
    depth = 1
    i = 0
    for i, c in enumerate(rest):  # noqa: B007 (i is where the parameters end)
        depth += c == "("
        depth -= c == ")"
        if depth == 0:
            break
    params, returns = rest[:i], rest[i + 1 :].strip().removeprefix("->").strip()
    qualified = head.removeprefix("aten::")
    name, _, overload = qualified.partition(".")
    return name, overload or "default", _args(params), _returns(returns)


def refusal(
    name: str, params: list[_Arg], returns: list[_Arg], overload: str = "default"
) -> str | None:
    """Why the policy leaves an overload out, or None when it is in."""
    if (name, overload) in REFUSED_OVERLOADS:
        return REFUSED_OVERLOADS[name, overload]
    if name not in _SCALAR_OPERATORS and not any("Tensor" in a.type for a in (*params, *returns)):
        return "a TorchScript builtin on Python numbers, lists or strings, not a tensor kernel"
    if any(p.write and p.kwarg_only for p in params):
        return "an out= variant (an exported graph is functional)"
    if any(p.write and p.type != "Tensor" for p in params):
        return "it writes a list in place (a TorchScript builtin)"
    for p in params:
        if "Generator" in p.type:
            return "it takes a random generator"
        if p.type.startswith("?") and p.default is None:
            return f"parameter {p.name!r} is of a type ptn cannot pass ({p.type[1:]})"
    for r in returns:
        if r.type.startswith("?") or (r.type not in _RETURNS and r.type != "Tensor?"):
            return f"it returns a {r.type.lstrip('?')}, which a node cannot hold"
    return None


def _param_entry(p: _Arg) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": p.name, "type": p.type}
    if p.size is not None:
        entry["size"] = p.size
    if p.kwarg_only:
        entry["kwarg_only"] = True
    if p.default is not None:
        entry["default"] = p.default
    if p.alias is not None:
        entry["alias"] = p.alias
    if p.write:
        entry["write"] = True
    allowed = ALLOWED_VALUES.get(p.name)
    if allowed is not None:
        entry["allowed"] = [*allowed, *([None] if p.type.endswith("?") else [])]
    return entry


def _return_entry(r: _Arg) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": r.type}
    if r.name:
        entry["name"] = r.name
    if r.alias is not None:
        entry["alias"] = r.alias
    if r.write:
        entry["write"] = True
    return entry


def _with_hidden_alias(
    name: str, overload: str, params: list[_Arg], returns: list[_Arg]
) -> tuple[list[_Arg], list[_Arg]]:
    """The overload with the alias set ``HIDDEN_ALIASES`` gives it (set ``a``)."""
    param = HIDDEN_ALIASES.get((name, overload))
    if param is None:
        return params, returns
    if not any(p.name == param for p in params) or any(p.alias for p in params):
        raise ValueError(f"{name}.{overload}: no parameter {param!r} free to alias")
    params = [dataclasses.replace(p, alias="a") if p.name == param else p for p in params]
    returns = [dataclasses.replace(r, alias="a") for r in returns]
    return params, returns


def _is_view(overloads: list[tuple[str, str, list[_Arg], list[_Arg]]]) -> bool:
    """Whether an operator returns a view of an input (an alias it does not write)."""
    return any(
        r.alias is not None and not r.write for _, _, _, returns in overloads for r in returns
    )


def build_table(schemas: list[str], torch_version: str) -> dict[str, Any]:
    """The table (schema/operators.json's content) from torch's schema strings."""
    by_name: dict[str, list[tuple[str, str, list[_Arg], list[_Arg]]]] = {}
    for text in schemas:
        if text.startswith("aten::"):
            parsed = parse_schema(text)
            by_name.setdefault(parsed[0], []).append(parsed)
    names = set(ALLOWED)
    names.update(
        f"{n}_" for n in ALLOWED if f"{n}_" in by_name and n in by_name and not _is_view(by_name[n])
    )
    leaked = names & set(REFUSED)
    if leaked:
        raise ValueError(f"operators both allowed and refused: {sorted(leaked)}")
    missing = sorted(n for n in ALLOWED if n not in by_name)
    if missing:
        raise ValueError(f"torch {torch_version} has no operator named {missing}")
    operators = []
    for name in sorted(names):
        for _, overload, params, returns in sorted(by_name[name], key=lambda o: o[1]):
            if refusal(name, params, returns, overload) is None:
                params, returns = _with_hidden_alias(name, overload, params, returns)
                operators.append(
                    {
                        "name": name,
                        "overload": overload,
                        "params": [_param_entry(p) for p in params],
                        "returns": [_return_entry(r) for r in returns],
                    }
                )
    return {
        "$schema": "./operators.schema.json",
        "description": (
            "The ATen operators a .ptn program may call, each overload with its schema "
            "(spec.md section 4.5). Generated by `python -m tools.operator_table` from "
            f"torch {torch_version}'s operator registry: do not edit by hand."
        ),
        "version": TABLE_VERSION,
        "torch": torch_version,
        "refused": [{"name": n, "why": REFUSED[n]} for n in sorted(REFUSED)],
        "operators": operators,
    }


def render(table: dict[str, Any]) -> str:
    """The file's text: one operator overload per line, so that diffs read per overload."""
    head = {k: v for k, v in table.items() if k not in ("refused", "operators")}
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    for key in ("refused", "operators"):
        rows = [f"    {json.dumps(row, separators=(', ', ': '))}" for row in table[key]]
        lines.append(f"  {json.dumps(key)}: [")
        lines.append(",\n".join(rows))
        lines.append("  ]," if key == "refused" else "  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def from_torch() -> str:
    """The table's text from the installed torch (which must be ``TORCH``)."""
    import torch

    version = str(torch.__version__).split("+")[0]
    if version != TORCH:
        raise SystemExit(f"the table is generated from torch {TORCH}; this is torch {version}")
    schemas = [str(s) for s in torch._C._jit_get_all_schemas()]
    return render(build_table(schemas, TORCH))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.operator_table", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    path = REPO_ROOT / OUTPUT
    text = from_torch()
    if args.check:
        if path.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is stale: run python -m tools.operator_table", file=sys.stderr)
            return 1
        print(f"{OUTPUT} is current")
        return 0
    path.write_text(text, encoding="utf-8", newline="\n")
    count = text.count('"overload"')
    print(f"wrote {OUTPUT}: {count} operator overloads (torch {TORCH})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
