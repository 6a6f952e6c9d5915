"""Export small real models with the released ExecuTorch and keep them as test fixtures.

    bash .ci/install-executorch.sh          # executorch 1.5.1, torchao 0.18, transformers
    python -m tools.real_exports [--out tests/fixtures/real] [--only NAME ...] [--list]

Each model is exported with ``torch.export.export`` and lowered and written by ExecuTorch's
own ``executorch.exir.native.to_native(programs).save(path)`` (nothing here writes a .ptn
itself). For every package ``<name>.ptn`` the script also writes ``<name>.io.safetensors``,
the eager module's behaviour on fixed inputs, so a test can run an interpreter of the
program without executorch, torchao or transformers installed:

    <method>/call<k>/input<j>        the j-th user input of the k-th call of <method>
    <method>/call<k>/output<j>       the j-th user output (pytree leaves of the eager result)
    <method>/call<k>/state/<fqn>     a mutable buffer's value after that call

The file's only metadata entry, ``io``, is a JSON object: ``package``, ``call_order`` (a
list of "<method>/call<k>") and ``zeroed_non_persistent_buffers``. Calls are made in
``call_order`` on ONE eager copy of the model, so state carries over from call to call
and from method to method. Persistent buffers start from the values stored in the package.
Non-persistent buffers are zeroed in the eager copy before the first call, because a .ptn
ships no bytes for them (a MutableBufferSpec) and a loader zero-initialises them; the fqns
zeroed are listed under ``eager_reference`` in the manifest (transformers' ``inv_freq`` is one,
so the tiny Llama/Qwen2 references are computed with RoPE frequencies of zero).

``manifest.json`` describes every package (what it demonstrates, methods and their input
bounds, constant keys, aliases, mutable state, quantization, member and tensor offsets, the
writer's quirks seen) and lists the attempts that did not export, with the error.

Known refusals (attempted on every run and recorded under ``not_exported``):
  - BatchNorm2d / max_pool2d, and nn.LayerNorm: to_native needs exactly one native delegate
    per method, and the native partitioner does not claim ``operator.getitem``, so an op
    with a tuple result (native_batch_norm, max_pool2d_with_indices, native_layer_norm)
    cuts the method into several delegates ("lowered to 3 native delegates").
  - A method whose graph first uses its inputs in another order than the signature's:
    the delegate takes its inputs in first-use order, and to_native refuses the mismatch
    (the KV-cache models below are written to use their inputs in order).
  - torchao ``IntxWeightOnlyConfig`` (int4 per-group, int8 per-channel): the graph keeps
    ``torchao.dequantize_affine``, which is no ATen core op, so ops stay outside the delegate.
  - torchao ``Int4WeightOnlyConfig``: cannot even quantize on a CPU-only machine (its plain
    format needs the mslk package, plain_int32 is not implemented on CPU).
  - A non-tensor keyword input (``use_cache=False`` passed to a transformers model) is refused
    by to_native's input check; the tiny LLMs are exported with ``use_cache=False`` in the
    config instead.
One package records a writer bug rather than a feature: ``input_mutation`` mutates a user
input in place, and the saved program has no USER_INPUT_MUTATION but an extra USER_OUTPUT
(x's new value, first); its .io file follows the program (output0 = x after the call).
torchao's ``Int8WeightOnlyConfig`` does export, but as plain int8 + fp32 scale constants and
ATen dequantisation ops: ExecuTorch 1.5.1 never emits a QuantSpec (no code in the wheel
creates AffineGroup or PackedQuant), so no fixture carries one.

Determinism: fixed seeds; constants, program.ptg and the .io files are identical from run to
run. ExecuTorch's writer stamps program.ptg's zip header with the current local time (the
streamed program.safetensors gets 1980-01-01), so a package file differs between runs while
its members do not: a package whose members are unchanged is left as it is on disk.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import itertools
import json
import os
import struct
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils import _pytree as pytree

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "fixtures" / "real"
EXECUTORCH_VERSION = "1.5.1"
TORCH_VERSION = "2.13.0"


# ---------------------------------------------------------------------------
# What an export is
# ---------------------------------------------------------------------------


@dataclass
class Spec:
    """One package: its methods (modules sharing submodules), example inputs, and calls."""

    modules: dict[str, nn.Module]
    examples: dict[str, tuple[torch.Tensor, ...]]
    calls: list[tuple[str, tuple[torch.Tensor, ...]]]
    dynamic_shapes: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Wraps the eager copies when the package's user outputs are not the module's results.
    eager_view: Callable[[dict[str, nn.Module]], dict[str, nn.Module]] | None = None


@dataclass
class Entry:
    name: str
    demonstrates: str
    build: Callable[[], Spec]
    expect_export: bool = True
    # The well-known metadata an LLM export of this program would carry (spec.md 9.3),
    # from the model's own configuration: kept in the manifest, since ExecuTorch 1.5.1's
    # to_native writes none; tests add it to a copy of the package.
    metadata: dict[str, Any] | None = None


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(seed: int, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_gen(seed)).to(dtype)


def hash_seed(text: str) -> int:
    """A seed derived from a name, stable across processes (unlike hash())."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def _single(module: nn.Module, calls: Sequence[tuple[torch.Tensor, ...]], **kw: Any) -> Spec:
    """A one-method ("forward") package whose example input is the first call's."""
    module.eval()
    return Spec(
        modules={"forward": module},
        examples={"forward": calls[0]},
        calls=[("forward", c) for c in calls],
        **kw,
    )


# ---------------------------------------------------------------------------
# The models
# ---------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, ...], act: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = self.act(x)
        return x


def build_mlp() -> Spec:
    torch.manual_seed(1)
    return _single(MLP((4, 16, 3), torch.relu), [(_randn(101, 2, 4),), (_randn(102, 2, 4),)])


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def build_cnn() -> Spec:
    torch.manual_seed(2)
    return _single(CNN(), [(_randn(201, 2, 1, 6, 6),), (_randn(202, 2, 1, 6, 6),)])


class Norm(nn.Module):
    """Layer norm written with single-result ops (weight ones, bias zeros at init).

    nn.LayerNorm lowers to native_layer_norm, whose tuple result is read with getitem; the
    native partitioner does not claim getitem, so the method would split into 3 delegates.
    """

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x - x.mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight + (
            self.bias
        )


class TiedLM(nn.Module):
    """Embedding and output head share ONE Parameter; two norms hold equal bytes."""

    def __init__(self, norm: Callable[[int], nn.Module] = Norm) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.norm_a = norm(8)
        self.mix = nn.Linear(8, 8)
        self.norm_b = norm(8)
        self.head = nn.Linear(8, 16, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.norm_a(self.embed(ids))
        h = self.norm_b(h + torch.relu(self.mix(h)))
        return self.head(h)


def build_tied() -> Spec:
    torch.manual_seed(3)
    calls = [(torch.randint(0, 16, (1, 5), generator=_gen(301)),)]
    calls.append((torch.randint(0, 16, (1, 5), generator=_gen(302)),))
    return _single(
        TiedLM(),
        calls,
        notes=[
            "embed.weight and head.weight are one Parameter: torch.export lifts it once, so the "
            "package has a single data key for it (no alias)",
            "norm_a and norm_b are separate norms with equal initial bytes (ones/zeros): "
            "ExecuTorch's writer stores them once and writes aliases.json",
        ],
    )


class KVCache(nn.Module):
    """One persistent buffer updated in place at the positions given as input."""

    cache: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.randn(1, 6, 4))
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        # Use the inputs in signature order: to_native refuses a delegate whose inputs
        # (ordered by first use) differ from the method's.
        rows = self.proj(x)[0]
        self.cache.index_put_((torch.zeros_like(pos), pos), rows)
        return self.cache.sum(dim=1) * 0.5 + x.mean(dim=1)


def build_kv_cache() -> Spec:
    torch.manual_seed(4)
    calls = [
        (_randn(401, 1, 2, 4), torch.tensor([0, 1])),
        (_randn(402, 1, 2, 4), torch.tensor([2, 5])),
    ]
    return _single(
        KVCache(),
        calls,
        notes=[
            "cache starts from seeded random values (not zeros), so a reader that zeroes a "
            "persistent buffer instead of loading it gives different outputs"
        ],
    )


class KVCachePair(nn.Module):
    """Two persistent caches, both zero at export, plus an immutable buffer of equal bytes."""

    k_cache: torch.Tensor
    v_cache: torch.Tensor
    v_bias: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(1, 6, 4))
        self.register_buffer("v_cache", torch.zeros(1, 6, 4))
        self.register_buffer("v_bias", torch.zeros(1, 6, 4))

    def forward(
        self, pos: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> torch.Tensor:
        # Each input is first used in signature order (to_native refuses a reordering).
        pos = pos.clamp(0, self.k_cache.shape[1] - 1)
        q = q * 0.5
        self.k_cache[:, pos] = k
        self.v_cache[:, pos] = v
        scores = torch.softmax(q @ self.k_cache.transpose(1, 2), dim=-1)
        return scores @ (self.v_cache + self.v_bias)


def build_kv_cache_pair() -> Spec:
    torch.manual_seed(5)

    def call(seed: int, pos: list[int]) -> tuple[torch.Tensor, ...]:
        return (
            torch.tensor(pos),
            _randn(seed, 1, 2, 4),
            _randn(seed + 1, 1, 2, 4),
            _randn(seed + 2, 1, 2, 4),
        )

    return _single(
        KVCachePair(),
        [call(501, [0, 1]), call(511, [2, 3])],
        notes=[
            "k_cache and v_cache are both mutated and hold equal bytes (zeros) at export; "
            "v_bias is immutable with the same bytes, dtype and shape",
        ],
    )


class NonPersistent(nn.Module):
    """A non-persistent accumulator updated in place, and a read-only non-persistent buffer."""

    acc: torch.Tensor
    offset: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.full((4,), 5.0), persistent=False)
        self.register_buffer("offset", torch.arange(4.0), persistent=False)
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.acc.add_(x.sum(dim=0))
        return self.fc(x) + self.acc + self.offset


def build_nonpersistent() -> Spec:
    torch.manual_seed(6)
    return _single(
        NonPersistent(),
        [(_randn(601, 3, 4),), (_randn(602, 3, 4),)],
        notes=[
            "acc (eager init 5.0) and offset (eager init arange) are non-persistent: both "
            "become MutableBufferSpecs with no bytes, so a loader starts them at zero; the "
            "eager reference zeroes both before the first call",
        ],
    )


def build_fp16() -> Spec:
    torch.manual_seed(7)
    model = MLP((8, 16, 4), torch.relu).half()
    calls = [(_randn(701, 2, 8, dtype=torch.float16),), (_randn(702, 2, 8, dtype=torch.float16),)]
    return _single(model, calls)


def build_bf16() -> Spec:
    torch.manual_seed(8)
    model = MLP((8, 16, 4), F.gelu).to(torch.bfloat16)
    calls = [
        (_randn(801, 2, 8, dtype=torch.bfloat16),),
        (_randn(802, 2, 8, dtype=torch.bfloat16),),
    ]
    return _single(model, calls)


class Mixed(nn.Module):
    """fp16 constants first in key order with an odd byte count, then fp32 constants."""

    def __init__(self) -> None:
        super().__init__()
        self.a_half = nn.Linear(4, 3).half()  # 6 + 24 bytes: the F32 tensors start at 30
        self.b_float = nn.Linear(3, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b_float(self.a_half(x.half()).float())


def build_mixed() -> Spec:
    torch.manual_seed(9)
    return _single(Mixed(), [(_randn(901, 2, 4),), (_randn(902, 2, 4),)])


class Int8Linear(nn.Module):
    """int8 weight with a per-row fp32 scale, dequantised in forward."""

    weight_q: torch.Tensor
    weight_scale: torch.Tensor

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        scale = weight.abs().amax(dim=1) / 127.0
        self.register_buffer("weight_q", torch.round(weight / scale[:, None]).to(torch.int8))
        self.register_buffer("weight_scale", scale)
        self.bias = nn.Parameter(bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight_q.to(torch.float32) * self.weight_scale[:, None]
        return F.linear(x, w, self.bias)


def build_int8_manual() -> Spec:
    torch.manual_seed(10)
    ref = nn.Linear(16, 8)
    model = Int8Linear(ref.weight.detach().clone(), ref.bias.detach().clone())
    return _single(model, [(_randn(1001, 2, 16),), (_randn(1002, 2, 16),)])


def _torchao_mlp(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return MLP((32, 16, 8), torch.relu).eval()


def build_int8_torchao() -> Spec:
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    model = _torchao_mlp(11)
    quantize_(model, Int8WeightOnlyConfig())
    return _single(
        model,
        [(_randn(1101, 2, 32),), (_randn(1102, 2, 32),)],
        notes=[
            "torchao Int8WeightOnlyConfig (version 2, Int8Tensor): torch.export unwraps the "
            "subclass into two parameters per weight, <layer>.parametrizations.weight.original0 "
            "(int8 qdata) and .original1 (fp32 per-row scale), dequantised with ATen ops "
            "(_to_copy, mm, mul); no QuantSpec is emitted",
        ],
    )


def build_intx_int4_torchao() -> Spec:
    from torchao.quantization import IntxWeightOnlyConfig, PerGroup, quantize_

    model = _torchao_mlp(12)
    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(16)))  # type: ignore[attr-defined]
    return _single(model, [(_randn(1201, 2, 32),)])


def build_int4_torchao() -> Spec:
    from torchao.quantization import Int4WeightOnlyConfig, quantize_

    model = _torchao_mlp(13)
    quantize_(model, Int4WeightOnlyConfig(group_size=16))
    return _single(model, [(_randn(1301, 2, 32),)])


class TwoMethods(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 4))
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.enc(x)))


class EncodeOf(nn.Module):
    """The encoder of a TwoMethods, under the same attribute name (so the same fqns)."""

    def __init__(self, full: TwoMethods) -> None:
        super().__init__()
        self.enc = full.enc

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.enc(x)


def build_two_methods() -> Spec:
    torch.manual_seed(14)
    full = TwoMethods().eval()
    x0, x1 = _randn(1401, 3, 6), _randn(1402, 3, 6)
    return Spec(
        modules={"forward": full, "encode": EncodeOf(full).eval()},
        examples={"forward": (x0,), "encode": (x0,)},
        calls=[("forward", (x0,)), ("encode", (x0,)), ("forward", (x1,)), ("encode", (x1,))],
        notes=["enc.* constants are bound by both methods and stored once"],
    )


class InputMutation(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.mul_(2.0)
        return self.fc(x) + y


class AlsoReturnFirstInput(nn.Module):
    """Eager view of what the package's method returns: x after the call, then the result."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        result = self.inner(x, y)
        return x, result


def build_input_mutation() -> Spec:
    torch.manual_seed(20)
    return _single(
        InputMutation(),
        [(_randn(2001, 2, 3), _randn(2002, 2, 3)), (_randn(2003, 2, 3), _randn(2004, 2, 3))],
        eager_view=lambda mods: {"forward": AlsoReturnFirstInput(mods["forward"])},
        notes=[
            "the module returns ONE tensor and mutates its input x in place; to_edge turns that "
            "into a USER_INPUT_MUTATION, but the program ExecuTorch 1.5.1 saves has no "
            "USER_INPUT_MUTATION spec: it has TWO USER_OUTPUTs, the new value of x first, and "
            "to_native's checks do not notice (an output the outer graph never uses)",
            "so output0 in the .io file is x after the call and output1 the module's result",
        ],
    )


class FlattenLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(x).flatten(1))


def build_dynamic_batch() -> Spec:
    torch.manual_seed(15)
    batch = torch.export.Dim("batch", min=2, max=8)
    return _single(
        FlattenLinear(),
        [(_randn(1501, 2, 2, 4),), (_randn(1502, 8, 2, 4),)],
        dynamic_shapes={"forward": ({0: batch},)},
        notes=[
            "exported with Dim('batch', min=2, max=8): the input's first Dim is {min 2, max 8}; "
            "flatten becomes view_copy whose size list refers to a sym_size node by name "
            "(IntListArg.refs); the two calls are at the lower and upper bound",
        ],
    )


def _tiny_llm(kind: str) -> Spec:
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    common: dict[str, Any] = dict(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        initializer_range=0.1,
        use_cache=False,
        attn_implementation="sdpa",
    )
    notes = [
        "built from a random config (no download); use_cache=False is set in the config "
        "because to_native refuses a non-tensor keyword input",
        "rotary_emb.inv_freq is a non-persistent buffer: a MutableBufferSpec with no bytes, "
        "zeroed at load, so the eager reference zeroes it too (cos=1, sin=0: RoPE is the "
        "identity in these references)",
        "RMSNorm weights are all ones, so they alias one owner; lifted scalar constants "
        "(_lifted_tensor_constantN) are bound with kind BUFFER",
    ]
    model: nn.Module
    if kind == "llama":
        torch.manual_seed(16)
        model = LlamaForCausalLM(LlamaConfig(**common))
        seed = 1601
    else:
        torch.manual_seed(17)
        model = Qwen2ForCausalLM(Qwen2Config(**common, tie_word_embeddings=True))
        # Biases start at zero; give them small seeded values so the bias adds are exercised.
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("bias"):
                    p.copy_(_randn(hash_seed(name), *p.shape) * 0.1)
        seed = 1701
        notes.append(
            "tie_word_embeddings=True: torch.export lifts the tied Parameter once, under "
            "lm_head.weight (model.embed_tokens.weight is not a data key); the embedding op "
            "reads it"
        )
    calls = [
        (torch.randint(0, 128, (1, 8), generator=_gen(seed)),),
        (torch.randint(0, 128, (1, 8), generator=_gen(seed + 1)),),
    ]
    return _single(model, calls, notes=notes)


class RMSNorm(nn.Module):
    """RMS norm written with single-result ops (weight ones at init)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class CachedAttention(nn.Module):
    """Grouped-query attention over a KV cache of ``length`` positions in two buffers of
    shape [1, kv_heads, length, head_dim] (ExecuTorch's Llama layout).

    A full cache (``window`` 0) writes position p at slot p; a sliding-window cache, as long
    as its window, is a ring: position p goes to slot p % window. The cache is updated in
    place with ``update`` ("index_put": cache[:, :, slots] = k, ExecuTorch's KVCache;
    "index_copy": cache.index_copy_(2, slots, k), transformers' static cache). Attention
    reads the whole cache without a mask: these fixtures exercise the cache layout a
    program shows, not the quality of the model.
    """

    k_cache: torch.Tensor
    v_cache: torch.Tensor

    def __init__(
        self, dim: int, heads: int, kv_heads: int, head_dim: int, length: int, window: int,
        update: str, persistent: bool,
    ) -> None:  # fmt: skip
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.window, self.update = window, update
        self.wq = nn.Linear(dim, heads * head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.wo = nn.Linear(heads * head_dim, dim, bias=False)
        shape = (1, kv_heads, length, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=persistent)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=persistent)

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        steps = x.shape[1]
        q = self.wq(x).view(1, steps, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(1, steps, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(1, steps, self.kv_heads, self.head_dim).transpose(1, 2)
        slots = input_pos % self.window if self.window else input_pos
        if self.update == "index_put":
            self.k_cache[:, :, slots] = k
            self.v_cache[:, :, slots] = v
        else:
            self.k_cache.index_copy_(2, slots, k)
            self.v_cache.index_copy_(2, slots, v)
        group = self.heads // self.kv_heads
        length = self.k_cache.shape[2]
        keys = self.k_cache[:, :, None].expand(1, self.kv_heads, group, length, self.head_dim)
        values = self.v_cache[:, :, None].expand(1, self.kv_heads, group, length, self.head_dim)
        keys = keys.reshape(1, self.heads, length, self.head_dim)
        values = values.reshape(1, self.heads, length, self.head_dim)
        scores = torch.softmax(q @ keys.transpose(2, 3) * self.head_dim**-0.5, dim=-1)
        out = (scores @ values).transpose(1, 2).reshape(1, steps, self.heads * self.head_dim)
        return self.wo(out)


class CachedDecoder(nn.Module):
    """A tiny decoder-only LM with one KV cache per layer: ``windows[i]`` 0 gives layer i a
    full cache of ``context`` positions, a window W a sliding-window cache of W positions.
    Layers are attention only, without norms or MLP (one norm before the head), to keep
    the program small.

    forward(tokens [1, T], input_pos [T]) -> logits [1, T, vocab], T in 2..``max_step``.
    """

    def __init__(
        self, vocab: int, dim: int, heads: int, kv_heads: int, head_dim: int, context: int,
        windows: Sequence[int], update: str, persistent: bool, tied: bool,
    ) -> None:  # fmt: skip
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            CachedAttention(dim, heads, kv_heads, head_dim, w or context, w, update, persistent)
            for w in windows
        )
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        if tied:
            self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        for attention in self.layers:
            h = h + attention(h, input_pos)
        return self.head(self.norm(h))


def _cached_decoder(seed: int, windows: Sequence[int], **kw: Any) -> Spec:
    torch.manual_seed(seed)
    vocab, context, max_step = 32, 16, 4
    model = CachedDecoder(
        vocab=vocab, dim=8, heads=2, kv_heads=1, head_dim=4, context=context,
        windows=windows, **kw,
    )  # fmt: skip

    def call(k: int, start: int, steps: int) -> tuple[torch.Tensor, ...]:
        tokens = torch.randint(0, vocab, (1, steps), generator=_gen(seed * 100 + k))
        return tokens, torch.arange(start, start + steps)

    # A prefill of 3, then steps of 2: the ring caches wrap (positions 4 to 6, window 4).
    calls = [call(0, 0, 3), call(1, 3, 2), call(2, 5, 2)]
    # torch.export specialises a step of one token (a guard T != 1): steps are 2 or more.
    steps = torch.export.Dim("steps", min=2, max=max_step)
    return _single(
        model,
        calls,
        dynamic_shapes={"forward": ({1: steps}, {0: steps})},
        notes=[
            f"caches per layer (windows {list(windows)}: 0 = full history of {context} "
            "positions, W = a ring of W positions): [1, kv_heads 1, length, head_dim 4]",
            f"tokens [1, 2..{max_step}] and input_pos [2..{max_step}] share one Dim (a step "
            "of 1 token would be specialised by torch.export); the "
            "attention reads the whole cache unmasked (the fixture is about the layout)",
        ],
    )


# The tiny transformers LLMs take 8 tokens a call and keep no cache: the context is 8.
_NO_CACHE_METADATA: dict[str, Any] = {
    "get_vocab_size": 128,
    "get_max_context_len": 8,
    "get_max_seq_len": 8,
    "get_n_layers": 2,
    "use_kv_cache": False,
    "enable_dynamic_shape": False,
    "get_activation_dtype": 6,
    "get_logits_to_keep_mode": 0,
}
_DECODER_METADATA: dict[str, Any] = {
    "get_vocab_size": 32,
    "get_max_context_len": 16,
    "get_max_seq_len": 4,
    "get_bos_id": 1,
    "get_eos_ids": [2],
    "use_kv_cache": True,
    "use_sdpa_with_kv_cache": False,
    "enable_dynamic_shape": True,
    "get_activation_dtype": 6,
    "get_logits_to_keep_mode": 0,
}


class CNNBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(h.flatten(1))


def build_layer_norm() -> Spec:
    torch.manual_seed(3)
    calls = [(torch.randint(0, 16, (1, 5), generator=_gen(301)),)]
    return _single(TiedLM(nn.LayerNorm), calls)


class SecondInputFirst(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(b) + a


def build_input_order() -> Spec:
    return _single(SecondInputFirst(), [(_randn(1901, 2, 3), _randn(1902, 2, 3))])


def build_cnn_batchnorm() -> Spec:
    torch.manual_seed(18)
    return _single(CNNBatchNorm(), [(_randn(1801, 2, 1, 6, 6),)])


ENTRIES: list[Entry] = [
    Entry("mlp", "fp32 MLP: two Linear layers and relu", build_mlp),
    Entry("cnn", "conv2d + relu + flatten + linear (no BatchNorm/max_pool2d)", build_cnn),
    Entry(
        "tied_weights",
        "a Parameter shared by embedding and head (one key) and equal-bytes norm weights "
        "(aliases.json)",
        build_tied,
    ),
    Entry(
        "kv_cache",
        "a persistent buffer updated in place with index_put_ (NamedTensorRef.mutated, "
        "BUFFER_MUTATION output); stored values are non-zero",
        build_kv_cache,
    ),
    Entry(
        "kv_cache_pair",
        "two persistent mutated buffers with equal bytes at export (k_cache, v_cache zeros) "
        "and an immutable buffer with the same bytes: none of them may be folded",
        build_kv_cache_pair,
    ),
    Entry(
        "nonpersistent_buffer",
        "non-persistent buffers (one mutated, one read-only) -> MutableBufferSpec, "
        "zero-initialised at load",
        build_nonpersistent,
    ),
    Entry("fp16_mlp", "fp16 MLP (F16 constants, HALF graph values)", build_fp16),
    Entry("bf16_mlp", "bf16 MLP with gelu (BF16 constants)", build_bf16),
    Entry(
        "mixed_dtype",
        "fp16 and fp32 constants in one package; F32 data after 30 bytes of F16 is unaligned",
        build_mixed,
    ),
    Entry("int8_manual", "int8 weight + fp32 scale dequantised in forward", build_int8_manual),
    Entry(
        "int8_torchao",
        "torchao 0.18 Int8WeightOnlyConfig Linear layers (exported as plain int8 + scale)",
        build_int8_torchao,
    ),
    Entry(
        "two_methods",
        "two methods (forward, encode) sharing the encoder's weights",
        build_two_methods,
    ),
    Entry(
        "dynamic_batch",
        "dynamic batch dimension with bounds (Dim min 2, max 8) and a symbolic view size",
        build_dynamic_batch,
    ),
    Entry(
        "input_mutation",
        "a method that mutates a user input in place: saved as an extra USER_OUTPUT",
        build_input_mutation,
    ),
    Entry(
        "llama_tiny",
        "transformers LlamaForCausalLM, random tiny config, no cache",
        lambda: _tiny_llm("llama"),
        metadata={**_NO_CACHE_METADATA, "get_bos_id": 1, "get_eos_ids": [2]},
    ),
    Entry(
        "qwen2_tiny",
        "transformers Qwen2ForCausalLM, random tiny config, tied embeddings, no cache",
        lambda: _tiny_llm("qwen2"),
        metadata=_NO_CACHE_METADATA,
    ),
    Entry(
        "mistral_tiny",
        "a Mistral-style decoder: both layers slide a window of 4 over a ring cache of 4 "
        "positions (non-persistent buffers written with index_put_); steps of 2..4 tokens",
        lambda: _cached_decoder(21, (4, 4), update="index_put", persistent=False, tied=False),
        metadata={
            **_DECODER_METADATA,
            "get_n_layers": 2,
            "get_n_caches": 2,
            "get_kv_heads": [1, 1],
            "get_head_dims": [4, 4],
            "get_windows": [4, 4],
        },
    ),
    Entry(
        "gemma3_tiny",
        "a Gemma 3-style decoder: local, local, global layers (windows 4, 4 and 0: caches of "
        "4, 4 and 16 positions, persistent buffers written with index_copy_), tied embeddings",
        lambda: _cached_decoder(22, (4, 4, 0), update="index_copy", persistent=True, tied=True),
        metadata={
            **_DECODER_METADATA,
            "get_n_layers": 3,
            "get_n_caches": 3,
            "get_kv_heads": [1, 1, 1],
            "get_head_dims": [4, 4, 4],
            "get_windows": [4, 4, 0],
        },
    ),
    Entry(
        "torchao_intx_int4",
        "torchao IntxWeightOnlyConfig int4 per-group (group 16)",
        build_intx_int4_torchao,
        expect_export=False,
    ),
    Entry(
        "torchao_int4_weight_only",
        "torchao Int4WeightOnlyConfig (group 16)",
        build_int4_torchao,
        expect_export=False,
    ),
    Entry(
        "layer_norm",
        "tied_weights with nn.LayerNorm (native_layer_norm returns a tuple read by getitem)",
        build_layer_norm,
        expect_export=False,
    ),
    Entry(
        "input_order",
        "forward(a, b) whose graph uses b before a (delegate inputs are in first-use order)",
        build_input_order,
        expect_export=False,
    ),
    Entry(
        "cnn_batchnorm_maxpool",
        "conv2d + BatchNorm2d + max_pool2d",
        build_cnn_batchnorm,
        expect_export=False,
    ),
]


# ---------------------------------------------------------------------------
# Export, eager reference
# ---------------------------------------------------------------------------


class StageError(Exception):
    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"{stage}: {type(error).__name__}: {error}")
        self.stage = stage
        self.error = error


def _non_persistent_fqns(module: nn.Module) -> list[str]:
    out = []
    for prefix, sub in module.named_modules():
        for name in sorted(getattr(sub, "_non_persistent_buffers_set", ())):
            out.append(f"{prefix}.{name}" if prefix else name)
    return sorted(out)


def export_package(spec: Spec, path: Path) -> None:
    """torch.export every method, then ExecuTorch's to_native(...).save(path)."""
    from executorch.exir.native import to_native

    try:
        programs = {
            method: torch.export.export(
                module,
                spec.examples[method],
                dynamic_shapes=spec.dynamic_shapes.get(method),
            )
            for method, module in spec.modules.items()
        }
    except Exception as e:
        raise StageError("torch.export", e) from e
    arg: Any = programs["forward"] if list(programs) == ["forward"] else programs
    try:
        manager = to_native(arg)
    except Exception as e:
        raise StageError("to_native", e) from e
    try:
        manager.save(str(path))
    except Exception as e:
        raise StageError("save", e) from e


def eager_reference(
    modules: dict[str, nn.Module], spec: Spec, state_fqns: dict[str, list[str]]
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Run the calls on the given (copied) modules; return the tensors and the call order."""
    tensors: dict[str, torch.Tensor] = {}
    order: list[str] = []
    counts: dict[str, int] = {}
    with torch.no_grad():
        for method, inputs in spec.calls:
            k = counts.get(method, 0)
            counts[method] = k + 1
            prefix = f"{method}/call{k}"
            order.append(prefix)
            for j, t in enumerate(inputs):
                tensors[f"{prefix}/input{j}"] = t.clone()
            result = modules[method](*inputs)
            leaves = pytree.tree_leaves(result)
            for j, t in enumerate(leaves):
                if not isinstance(t, torch.Tensor):
                    raise TypeError(f"{prefix}: output {j} is {type(t).__name__}, not a tensor")
                tensors[f"{prefix}/output{j}"] = t.detach().clone().contiguous()
            for fqn in state_fqns.get(method, []):
                buf = modules[method].get_buffer(fqn)
                tensors[f"{prefix}/state/{fqn}"] = buf.detach().clone().contiguous()
    return tensors, order


# ---------------------------------------------------------------------------
# Reading a package back (for the manifest and the checks)
# ---------------------------------------------------------------------------


def _member_data_offsets(path: Path) -> dict[str, int]:
    """Absolute file offset of each member's data (from its local header)."""
    data = path.read_bytes()
    out = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            at = info.header_offset
            name_len, extra_len = struct.unpack_from("<HH", data, at + 26)
            out[info.filename] = at + 30 + name_len + extra_len
    return out


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def _safetensors_header(blob: bytes) -> tuple[int, dict[str, Any]]:
    (n,) = struct.unpack_from("<Q", blob, 0)
    return n, json.loads(blob[8 : 8 + n])


_SCALAR_NAMES = {
    0: "BYTE",
    1: "CHAR",
    2: "SHORT",
    3: "INT",
    4: "LONG",
    5: "HALF",
    6: "FLOAT",
    7: "DOUBLE",
    11: "BOOL",
    15: "BFLOAT16",
    16: "UINT16",
    17: "UINT32",
    18: "UINT64",
}
_ST_ITEMSIZE = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "C64": 8,
    "U16": 2,
    "U32": 4,
    "U64": 8,
}


def _meta_json(meta: Any) -> dict[str, Any]:
    return {
        "dtype": _SCALAR_NAMES.get(int(meta.dtype), int(meta.dtype)),
        "sizes": [[d.min, d.max] for d in meta.sizes or []],
    }


def describe_package(path: Path, spec: Spec, io_tensors: dict[str, torch.Tensor]) -> dict:
    """The manifest entry of a written package, from its bytes."""
    from executorch.backends.native.serialization.graph_serialize import (
        collect_data_keys,
        deserialize_program,
    )
    from executorch.exir._serialize._ptn import read_ptn

    members = _members(path)
    offsets = _member_data_offsets(path)
    ptg, constants = read_ptn(str(path))
    program = deserialize_program(ptg)
    aliases = json.loads(members["aliases.json"]) if "aliases.json" in members else {}

    tensors: dict[str, Any] = {}
    if "program.safetensors" in members:
        n, header = _safetensors_header(members["program.safetensors"])
        data_start = offsets["program.safetensors"] + 8 + n
        for key, info in header.items():
            if key == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            size = _ST_ITEMSIZE[info["dtype"]]
            tensors[key] = {
                "dtype": info["dtype"],
                "shape": info["shape"],
                "data_offsets": [begin, end],
                "file_offset": data_start + begin,
                "aligned_in_data_section": begin % size == 0,
                "aligned_in_file": (data_start + begin) % size == 0,
            }

    methods = []
    quant = []
    mutated_keys: set[str] = set()
    nonpersistent: set[str] = set()
    lifted_as_buffer = []
    for m in program.methods:
        metas = {tv.name: tv.meta for tv in m.graph.tensor_values or []}
        user_outputs = [s.name for s in m.output_specs or [] if int(s.kind) == 0]
        mutations = {s.target: _KINDS[int(s.kind)] for s in m.output_specs or [] if s.kind}
        for c in m.constants or []:
            if c.mutated:
                mutated_keys.add(c.data_key)
            if c.data_key.startswith("_lifted_tensor_constant") and int(c.kind) == 2:
                lifted_as_buffer.append(c.data_key)
            if c.meta.quant is not None:
                quant.append({"method": m.name, "constant": c.data_key})
        for tv in m.graph.tensor_values or []:
            if tv.meta.quant is not None:
                quant.append({"method": m.name, "value": tv.name})
        for mb in m.mutable_buffers or []:
            nonpersistent.add(mb.fqn)
        methods.append(
            {
                "name": m.name,
                "inputs": [{"name": n, **_meta_json(metas[n])} for n in m.graph.inputs or []],
                "user_outputs": [{"name": n, **_meta_json(metas[n])} for n in user_outputs],
                "graph_outputs": list(m.graph.outputs or []),
                "constants": [
                    {
                        "name": c.name,
                        "data_key": c.data_key,
                        "kind": _INPUT_KINDS[int(c.kind)],
                        "mutated": bool(c.mutated),
                    }
                    for c in m.constants or []
                ],
                "mutable_buffers": [
                    {"name": mb.name, "fqn": mb.fqn, **_meta_json(metas[mb.name])}
                    for mb in m.mutable_buffers or []
                ],
                "mutations": dict(sorted(mutations.items())),
                "calls": sum(1 for method, _ in spec.calls if method == m.name),
                "operators": sorted({n.target for n in m.graph.nodes if n.target}),
                "nodes": len(m.graph.nodes),
            }
        )

    # Keys with equal dtype, shape and bytes where one of them is mutated: what a writer
    # folding on content alone would merge into one entry.
    groups: dict[tuple[str, tuple[int, ...], str], list[str]] = {}
    for key in sorted(constants):
        t = constants[key].contiguous()
        digest = hashlib.sha256(t.reshape(-1).view(torch.uint8).numpy().tobytes()).hexdigest()
        groups.setdefault((str(t.dtype), tuple(t.shape), digest), []).append(key)
    equal_with_mutated = [
        keys for keys in groups.values() if len(keys) > 1 and set(keys) & mutated_keys
    ]

    quirks = []
    bad_members = {k: v % 8 for k, v in offsets.items() if v % 8}
    if bad_members:
        quirks.append(f"member data offsets are not 8-aligned (offset mod 8: {bad_members})")
    unaligned = sorted(k for k, t in tensors.items() if not t["aligned_in_data_section"])
    if unaligned:
        quirks.append(
            "tensors not aligned to their element size within the safetensors data "
            f"section: {unaligned}"
        )
    for keys in equal_with_mutated:
        mutated = [k for k in keys if k in mutated_keys]
        others = [k for k in keys if k not in mutated_keys]
        stored = [k for k in mutated if k in tensors and k not in aliases]
        aliased_to_mutated = sorted(k for k, owner in aliases.items() if owner in mutated)
        text = f"keys {keys} hold equal bytes ({len(mutated)} mutated: {mutated}); "
        if stored == mutated and not aliased_to_mutated:
            text += "ExecuTorch's writer kept every mutated one as its own safetensors entry"
            if others:
                text += f" and aliased none of {others} to them"
        else:
            text += "ExecuTorch's writer FOLDED mutated keys"
        quirks.append(text)
    if lifted_as_buffer:
        quirks.append(
            f"{len(lifted_as_buffer)} lifted tensor constant(s) bound with kind BUFFER, not "
            "CONSTANT_TENSOR"
        )
    readonly_np = sorted(
        fqn for fqn in nonpersistent if not any(fqn in entry["mutations"] for entry in methods)
    )
    if readonly_np:
        quirks.append(
            f"read-only non-persistent buffer(s) {readonly_np} become MutableBufferSpecs: "
            "their values are not in the package (zero at load)"
        )

    data_keys = sorted(collect_data_keys(program))
    return {
        "file": path.name,
        "io_file": f"{path.stem}.io.safetensors",
        "bytes": path.stat().st_size,
        "members": [
            {
                "name": name,
                "size": len(blob),
                "sha256": hashlib.sha256(blob).hexdigest(),
                "data_offset": offsets[name],
                "compress_type": zipfile.ZipFile(path).getinfo(name).compress_type,
            }
            for name, blob in members.items()
        ],
        "program_version": program.version,
        "methods": methods,
        "constant_keys": data_keys,
        "safetensors_tensors": tensors,
        "aliases": aliases,
        "has_aliases": bool(aliases),
        "mutated_data_keys": sorted(mutated_keys),
        "non_persistent_fqns": sorted(nonpersistent),
        "has_mutable_state": bool(mutated_keys or nonpersistent),
        "quant_specs": quant,
        "has_quant": bool(quant),
        "io_tensors": len(io_tensors),
        "notes": spec.notes,
        "quirks": quirks,
    }


_KINDS = {0: "USER_OUTPUT", 1: "BUFFER_MUTATION", 2: "USER_INPUT_MUTATION"}
_INPUT_KINDS = {0: "USER_INPUT", 1: "PARAMETER", 2: "BUFFER", 3: "CONSTANT_TENSOR"}


def check_against_eager(entry: dict, io_tensors: dict[str, torch.Tensor]) -> None:
    """The program's user outputs match the eager outputs in count, dtype and bounds."""
    st_dtype = {
        torch.float32: "FLOAT",
        torch.float16: "HALF",
        torch.bfloat16: "BFLOAT16",
        torch.int64: "LONG",
        torch.int8: "CHAR",
    }
    for m in entry["methods"]:
        for k in range(m["calls"]):
            prefix = f"{m['name']}/call{k}"
            for kind, specs in (("input", m["inputs"]), ("output", m["user_outputs"])):
                got = sorted(
                    n for n in io_tensors if n.startswith(f"{prefix}/{kind}") and "/state/" not in n
                )
                if len(got) != len(specs):
                    raise AssertionError(
                        f"{entry['file']} {prefix}: {len(got)} eager {kind}s, program has "
                        f"{len(specs)}"
                    )
                for j, s in enumerate(specs):
                    t = io_tensors[f"{prefix}/{kind}{j}"]
                    if st_dtype.get(t.dtype) != s["dtype"]:
                        raise AssertionError(f"{prefix}/{kind}{j}: {t.dtype} vs {s['dtype']}")
                    for size, (lo, hi) in zip(t.shape, s["sizes"], strict=True):
                        if size < lo or (hi >= 0 and size > hi):
                            raise AssertionError(f"{prefix}/{kind}{j}: {size} not in [{lo},{hi}]")


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for dist in ("executorch", "torch", "torchao", "transformers", "safetensors", "flatbuffers"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


def _same_members(a: Path, b: Path) -> bool:
    if not (a.exists() and b.exists()):
        return False
    return _members(a) == _members(b)


def _write_io(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    from safetensors.torch import save

    blob = save(dict(sorted(tensors.items())), metadata=metadata)
    if not path.exists() or path.read_bytes() != blob:
        path.write_bytes(blob)


def run_entry(entry: Entry, out: Path) -> tuple[str, dict]:
    """Export one entry; returns ("ok", manifest entry) or ("failed", failure record)."""
    try:
        spec = entry.build()
    except Exception as e:
        return "failed", _failure(entry, StageError("build/quantize", e))
    # The eager copy is taken before export and lowering: the exported program holds the
    # module's own tensors, and the calls below mutate buffers in place.
    eager = copy.deepcopy(spec.modules)
    zeroed: dict[str, list[str]] = {}
    for method, module in eager.items():
        fqns = _non_persistent_fqns(module)
        for fqn in fqns:
            module.get_buffer(fqn).zero_()
        if fqns:
            zeroed[method] = fqns
    if spec.eager_view is not None:
        eager = spec.eager_view(eager)

    final = out / f"{entry.name}.ptn"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        fresh = Path(tmp) / final.name
        try:
            export_package(spec, fresh)
        except StageError as e:
            return "failed", _failure(entry, e)
        if not _same_members(fresh, final):
            os.replace(fresh, final)

    from executorch.backends.native.serialization.graph_serialize import deserialize_program
    from executorch.exir._serialize._ptn import read_ptn

    program = deserialize_program(read_ptn(str(final))[0])
    state_fqns = {
        m.name: sorted(
            {c.data_key for c in m.constants or [] if c.mutated}
            | {mb.fqn for mb in m.mutable_buffers or []}
        )
        for m in program.methods
    }
    io_tensors, order = eager_reference(eager, spec, state_fqns)
    manifest = describe_package(final, spec, io_tensors)
    manifest = {"name": entry.name, "demonstrates": entry.demonstrates, **manifest}
    manifest["eager_reference"] = {
        "call_order": order,
        "zeroed_non_persistent_buffers": zeroed,
        "state_recorded": {k: v for k, v in state_fqns.items() if v},
    }
    check_against_eager(manifest, io_tensors)
    # One metadata entry: the safetensors library writes several in a per-process order.
    io_meta = {
        "package": final.name,
        "call_order": order,
        "zeroed_non_persistent_buffers": zeroed,
    }
    _write_io(out / manifest["io_file"], io_tensors, {"io": json.dumps(io_meta, sort_keys=True)})
    return "ok", manifest


def _with_metadata(record: dict) -> dict:
    """The manifest entry with its ``metadata`` as ENTRIES states it now (for every package,
    exported in this run or not: metadata is added to a copy, never to the package)."""
    entry = next(e for e in ENTRIES if e.name == record["name"])
    record = {k: v for k, v in record.items() if k != "metadata"}
    if entry.metadata is not None:
        record["metadata"] = entry.metadata
    return record


def _failure(entry: Entry, e: StageError) -> dict:
    message = str(e.error).strip().splitlines()[0] if str(e.error).strip() else ""
    if len(message) > 400:
        message = message[:400] + "..."
    return {
        "name": entry.name,
        "attempted": entry.demonstrates,
        "stage": e.stage,
        "error": f"{type(e.error).__name__}: {message}",
        "expected": not entry.expect_export,
    }


WRITER_NOTES = [
    "program.ptg is written with ZipFile.writestr(name, ...), so its zip header carries the "
    "local time of the save; program.safetensors is streamed through ZipFile.open(name, 'w') "
    "and gets 1980-01-01 00:00:00. Members are STORED and unaligned.",
    "safetensors header is padded with spaces to a multiple of 8; tensors follow in sorted "
    "key order with no padding between them (an F32 tensor after an odd number of F16 "
    "elements is not 4-aligned).",
    "immutable constants with equal dtype, shape and bytes are stored once (first key in "
    "sorted order owns them, the rest go to aliases.json); keys of persistent buffers some "
    "method mutates are never folded, and never become owners.",
    "a Parameter shared by two modules (a true tie) is lifted once by torch.export and so "
    "has one data key; aliases.json only comes from equal bytes under distinct keys.",
    "ExecuTorch 1.5.1 has no code that creates a QuantSpec: torchao weight-only int8 exports "
    "as plain int8 + scale constants, and the other torchao schemes do not export.",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="export only these")
    parser.add_argument("--list", action="store_true", help="list the entries and exit")
    args = parser.parse_args(argv)

    if args.list:
        for e in ENTRIES:
            print(f"{e.name:26} {'' if e.expect_export else '(expected to fail) '}{e.demonstrates}")
        return 0

    versions = _versions()
    if versions["executorch"] != EXECUTORCH_VERSION or not (versions["torch"] or "").startswith(
        TORCH_VERSION
    ):
        print(
            f"need executorch {EXECUTORCH_VERSION} and torch {TORCH_VERSION} "
            f"(have {versions['executorch']}, {versions['torch']}): "
            "bash .ci/install-executorch.sh",
            file=sys.stderr,
        )
        return 2

    selected = [e for e in ENTRIES if not args.only or e.name in args.only]
    unknown = set(args.only or ()) - {e.name for e in ENTRIES}
    if unknown:
        print(f"unknown entries: {sorted(unknown)}", file=sys.stderr)
        return 2

    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    previous = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    packages = {p["name"]: p for p in previous.get("packages", [])}
    failures = {f["name"]: f for f in previous.get("not_exported", [])}

    surprises = 0
    for entry in selected:
        print(f"{entry.name} ...", flush=True)
        status, record = run_entry(entry, args.out)
        packages.pop(entry.name, None)
        failures.pop(entry.name, None)
        if status == "ok":
            record.update({"executorch": versions["executorch"], "torch": versions["torch"]})
            packages[entry.name] = record
            print(f"  wrote {record['file']} ({record['bytes']} bytes)")
        else:
            failures[entry.name] = record
            print(f"  not exported ({record['stage']}): {record['error'][:200]}")
        if (status == "ok") != entry.expect_export:
            surprises += 1
            print(f"  UNEXPECTED: expected {'success' if entry.expect_export else 'failure'}")

    order = [e.name for e in ENTRIES]
    manifest = {
        "generator": "tools/real_exports.py",
        "versions": versions,
        "writer": WRITER_NOTES,
        "io_layout": {
            "file": "<name>.io.safetensors",
            "keys": [
                "<method>/call<k>/input<j>",
                "<method>/call<k>/output<j>",
                "<method>/call<k>/state/<fqn>",
            ],
            "metadata": "one entry, 'io': a JSON object with package, call_order (list of "
            "'<method>/call<k>') and zeroed_non_persistent_buffers (method -> fqns)",
            "rule": "calls run in call_order on one eager copy (state carries over); "
            "non-persistent buffers zeroed before the first call; output<j> are the user "
            "outputs in order (the program's USER_OUTPUT output_specs)",
        },
        "packages": sorted(
            (_with_metadata(p) for p in packages.values()), key=lambda p: order.index(p["name"])
        ),
        "not_exported": sorted(failures.values(), key=lambda f: order.index(f["name"])),
    }
    text = json.dumps(manifest, indent=1, sort_keys=False) + "\n"
    if not manifest_path.exists() or manifest_path.read_text() != text:
        manifest_path.write_text(text)
    total = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    print(f"{len(packages)} packages, {len(failures)} not exported; {total} bytes in {args.out}")
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
