"""Custom ops ``torch.ops.megakittens.*``: one per instruction type, eager bodies are the test oracles.

Every body computes in fp32 and rounds once to the output dtype (the input's dtype; docs/itypes.md says
which dtypes each instruction type takes). The compiler never runs these bodies: the tracer resolves each op to its IType
(docs/itypes.md), so a graph may use them to ask for an IType directly.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

UNARY_OPS = ("identity", "relu", "abs", "exp", "exp2", "log", "log2", "neg", "sqrt", "rsqrt",
             "silu", "gelu", "gelu_tanh", "sigmoid", "tanh", "cos", "sin", "reciprocal", "square",
             "erf", "expm1", "log1p")
# Scalar forms, written "name:k" (e.g. "mul_scalar:0.125"); k is rounded to fp32 as the compiler does
# (canonical %.9g text, then fp32).
UNARY_SCALAR_OPS = ("add_scalar", "mul_scalar", "div_scalar", "pow_scalar", "clamp_min", "clamp_max")
BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "select")

_UNARY_FNS = {
    "identity": lambda t: t,
    "relu": torch.relu,
    "abs": torch.abs,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "log": torch.log,
    "log2": torch.log2,
    "neg": torch.neg,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "cos": torch.cos,
    "sin": torch.sin,
    "reciprocal": torch.reciprocal,
    "square": torch.square,
    "erf": torch.erf,
    "expm1": torch.expm1,
    "log1p": torch.log1p,
}

_UNARY_SCALAR_FNS = {
    "add_scalar": lambda t, k: t + k,
    "mul_scalar": lambda t, k: t * k,
    "div_scalar": lambda t, k: t / k,  # true division, as the compiler (never t * (1/k))
    "pow_scalar": torch.pow,
    "clamp_min": torch.clamp_min,
    "clamp_max": torch.clamp_max,
}


def _fp32(v: float) -> float:
    """v as the compiler holds it: canonical %.9g text, then rounded to fp32."""
    return torch.tensor(float(f"{v:.9g}"), dtype=torch.float32).item()


def _parse_unary(ops: str) -> list:
    """[(fn, k or None)] for a comma-separated op list; raises ValueError for an unknown op or a bad constant."""
    steps = []
    for item in (s.strip() for s in ops.split(",")):
        name, colon, num = item.partition(":")
        if name in _UNARY_FNS and not colon:
            steps.append((_UNARY_FNS[name], None))
            continue
        if name in _UNARY_SCALAR_FNS and colon:
            try:
                k = _fp32(float(num))
            except ValueError:
                raise ValueError(f"megakittens.elementwise_unary: the constant of '{item}' is not a number") from None
            steps.append((_UNARY_SCALAR_FNS[name], k))
            continue
        raise ValueError(f"megakittens.elementwise_unary: unknown op '{item}' in '{ops}' (expected a comma-separated "
                         f"list of {', '.join(UNARY_OPS)}, or {', '.join(n + ':k' for n in UNARY_SCALAR_OPS)})")
    return steps


def _binary_fp32(a: Tensor, b: Tensor, op: str, alpha: float) -> Tensor:
    if op not in BINARY_OPS:
        raise ValueError(f"megakittens.elementwise_binary: unknown op '{op}' (expected one of {', '.join(BINARY_OPS)})")
    if a.shape != b.shape:
        raise ValueError(f"megakittens.elementwise_binary: shapes differ: {list(a.shape)} vs {list(b.shape)} "
                         "(no broadcasting)")
    x, y = a.float(), b.float()
    if op == "add":
        return x + alpha * y
    if op == "sub":
        return x - alpha * y
    if op == "mul":
        return x * y
    if op == "div":
        return x / y
    if op == "select":
        return torch.where(x != 0, y, 0.0)
    return torch.maximum(x, y) if op == "maximum" else torch.minimum(x, y)


@torch.library.custom_op("megakittens::elementwise_unary", mutates_args=())
def elementwise_unary(x: Tensor, ops: str) -> Tensor:
    """y = ops[-1](...ops[0](x)): x any shape (rank <= 4), bf16; y same shape and dtype.

    ``ops`` is a comma-separated chain applied left to right, each of UNARY_OPS or a scalar form
    ``name:k`` of UNARY_SCALAR_OPS (x + k, x * k, x / k, x ** k, clamp_min, clamp_max), in fp32, rounded once.
    Raises ValueError for an unknown op name or a bad constant.
    """
    t = x.float()
    for fn, k in _parse_unary(ops):
        t = fn(t) if k is None else fn(t, k)
    return t.to(x.dtype)


@elementwise_unary.register_fake
def _(x, ops):
    _parse_unary(ops)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("megakittens::elementwise_binary", mutates_args=())
def elementwise_binary(a: Tensor, b: Tensor, op: str, alpha: float = 1.0) -> Tensor:
    """y = a <op> b: a, b same shape (no broadcasting), bf16; y same shape and dtype.

    op: add (a + alpha*b), sub (a - alpha*b), mul, div (true division), maximum, minimum, select (b where
    a != 0, else 0); fp32, rounded once.
    Raises ValueError for an unknown op or different shapes.
    """
    return _binary_fp32(a, b, op, alpha).to(a.dtype)


@elementwise_binary.register_fake
def _(a, b, op, alpha=1.0):
    if a.shape != b.shape:
        raise ValueError(f"megakittens.elementwise_binary: shapes differ: {list(a.shape)} vs {list(b.shape)}")
    return torch.empty_like(a, memory_format=torch.contiguous_format)


@torch.library.custom_op("megakittens::elementwise_binary_", mutates_args=("a",))
def elementwise_binary_(a: Tensor, b: Tensor, op: str, alpha: float = 1.0) -> None:
    """In place: a = a <op> b (as elementwise_binary). After AOTAutograd it arrives wrapped in
    auto_functionalized_v2; the compiled node writes its output into a's buffer."""
    a.copy_(_binary_fp32(a, b, op, alpha).to(a.dtype))


@elementwise_binary_.register_fake
def _(a, b, op, alpha=1.0):
    return None


@torch.library.custom_op("megakittens::select", mutates_args=())
def select(mask: Tensor, x: Tensor) -> Tensor:
    """y = x where mask != 0, else 0 (``torch.where(mask != 0, x, 0)``): mask and x floating, broadcasting as
    torch's binary ops (rank <= 4); y their broadcast shape, x's dtype. One ElementwiseBinary(op=select):
    megakittens/masks.py writes ``where(c, a, b)`` as ``select(m, a) + select(1 - m, b)`` with m = c as 0 / 1,
    which keeps an inf or NaN of the branch not taken out of the sum."""
    return torch.where(mask != 0, x, torch.zeros((), dtype=x.dtype)).contiguous()


@select.register_fake
def _(mask, x):
    return x.new_empty(torch.broadcast_shapes(mask.shape, x.shape))


@torch.library.custom_op("megakittens::rms_norm", mutates_args=())
def rms_norm(x: Tensor, weight: Optional[Tensor], eps: float) -> Tensor:
    """y = x * rsqrt(mean(x^2, -1) + eps) * weight: x (..., R, C) bf16 or fp16, weight (C,) of x's dtype or None;
    y x's shape and dtype.

    Raises ValueError when weight is not of shape (C,).
    """
    if weight is not None and tuple(weight.shape) != (x.shape[-1],):
        raise ValueError(f"megakittens.rms_norm: weight shape {list(weight.shape)}, expected [{x.shape[-1]}]")
    t = x.float()
    y = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.float()
    return y.to(x.dtype)


@rms_norm.register_fake
def _(x, weight, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _rope_check(x: Tensor, cos: Tensor, sin: Tensor, op: str = "rope", half_ok: bool = False) -> None:
    if x.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise ValueError(f"megakittens.{op}: x must be bfloat16, float16 or float32, got {x.dtype}")
    if not (cos.is_floating_point() and sin.is_floating_point()):
        raise ValueError(f"megakittens.{op}: cos and sin must be floating point, got {cos.dtype}, {sin.dtype}")
    if x.dim() == 0 or x.shape[-1] % 2 != 0:
        raise ValueError(f"megakittens.{op}: the last dim D of x must be even, got x shape {list(x.shape)}")
    if cos.shape != sin.shape:
        raise ValueError(f"megakittens.{op}: cos shape {list(cos.shape)} must equal sin shape {list(sin.shape)}")
    half = half_ok and cos.dim() > 0 and 2 * cos.shape[-1] == x.shape[-1]
    ok = 0 < cos.dim() <= x.dim() and (cos.shape[-1] == x.shape[-1] or half)
    if ok:
        try:
            ok = torch.broadcast_shapes(cos.shape[:-1], x.shape[:-1]) == x.shape[:-1]
        except RuntimeError:
            ok = False
    if not ok:
        raise ValueError(f"megakittens.{op}: cos/sin shape {list(cos.shape)} must broadcast to x's shape "
                         f"{list(x.shape)} with the same last dim" + (" or half of it" if half_ok else ""))


@torch.library.custom_op("megakittens::rope", mutates_args=())
def rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """y = x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2], -1).

    x (..., D) bf16/fp16/fp32 with D even; cos, sin one shape that broadcasts to x's (torch rules, same
    last dim D), any float dtype. fp32 math, rounded once to x's dtype. Raises ValueError otherwise.
    """
    _rope_check(x, cos, sin)
    t, c, s = x.float(), cos.float(), sin.float()
    h = x.shape[-1] // 2
    return (t * c + torch.cat((-t[..., h:], t[..., :h]), -1) * s).to(x.dtype)


@rope.register_fake
def _(x, cos, sin):
    _rope_check(x, cos, sin)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("megakittens::rope_interleaved", mutates_args=())
def rope_interleaved(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """y = x * cos + rotate_every_two(x) * sin, rotate_every_two(x) = stack((-x[..., 1::2], x[..., ::2]), -1)
    flattened: the pairs (2i, 2i + 1) rotate (GPT-J's and Cohere's RoPE layout).

    x (..., D) bf16/fp16/fp32 with D even; cos, sin one shape that broadcasts to x's (torch rules) with
    last dim D, or D/2 for tables of one column per pair (read as ``cos.repeat_interleave(2, -1)``), any
    float dtype. fp32 math, rounded once to x's dtype. Raises ValueError otherwise.
    """
    _rope_check(x, cos, sin, "rope_interleaved", half_ok=True)
    t, c, s = x.float(), cos.float(), sin.float()
    if 2 * c.shape[-1] == t.shape[-1]:
        c, s = c.repeat_interleave(2, -1), s.repeat_interleave(2, -1)
    rot = torch.stack((-t[..., 1::2], t[..., ::2]), -1).flatten(-2)
    return (t * c + rot * s).to(x.dtype)


@rope_interleaved.register_fake
def _(x, cos, sin):
    _rope_check(x, cos, sin, "rope_interleaved", half_ok=True)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _gemm_shape(a: Tensor, b: Tensor, op: str = "gemm") -> list[int]:
    if a.dim() < 2 or a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"megakittens.{op}: A {list(a.shape)} and B {list(b.shape)} do not form "
                         "(..., M, K) @ (..., K, N) with equal leading dims (no broadcasting: a 3-D A needs a "
                         "3-D B)")
    return [*a.shape[:-1], b.shape[-1]]


@torch.library.custom_op("megakittens::gemm", mutates_args=())
def gemm(a: Tensor, b: Tensor) -> Tensor:
    """D = A @ B: A (..., M, K), B (..., K, N), equal leading dims; bf16 or fp16 (both alike) in, fp32 accumulate,
    D (..., M, N) in their dtype.

    Raises ValueError for mismatched shapes (no broadcasting).
    """
    _gemm_shape(a, b)
    return torch.matmul(a.float(), b.float()).to(a.dtype)


@gemm.register_fake
def _(a, b):
    return a.new_empty(_gemm_shape(a, b))


@torch.library.custom_op("megakittens::gemm_swiglu", mutates_args=())
def gemm_swiglu(a: Tensor, b: Tensor, b2: Tensor) -> Tensor:
    """D = silu(A @ B) * (A @ B2), a SwiGLU MLP's gate and up projections in one Gemm: A (..., M, K),
    B and B2 (..., K, N) with A's leading dims; bf16 or fp16 in, fp32 accumulate and epilogue, one rounding to
    that dtype, D (..., M, N). silu(x) = x * sigmoid(x) (Shazeer 2020, "GLU Variants Improve Transformer").

    Raises ValueError for mismatched shapes. The compiler also forms it from ``silu(x @ Wg) * (x @ Wu)``
    (src/trace/fuse_swiglu.h).
    """
    shape = _swiglu_shape(a, b, b2)
    g = torch.matmul(a.float(), b.float())
    return (torch.nn.functional.silu(g) * torch.matmul(a.float(), b2.float())).to(a.dtype).reshape(shape)


def _swiglu_shape(a: Tensor, b: Tensor, b2: Tensor) -> list[int]:
    shape = _gemm_shape(a, b, "gemm_swiglu")
    if b2.shape != b.shape:
        raise ValueError(f"megakittens.gemm_swiglu: B2 {list(b2.shape)} must have B's shape {list(b.shape)}")
    return shape


@gemm_swiglu.register_fake
def _(a, b, b2):
    return a.new_empty(_swiglu_shape(a, b, b2))


def _attention_check(q: Tensor, k: Tensor, v: Tensor) -> None:
    if q.dim() != 4 or k.dim() != 4 or k.shape != v.shape or q.shape[0] != k.shape[0] \
            or q.shape[3] != k.shape[3] or q.shape[1] % k.shape[1] != 0:
        raise ValueError(f"megakittens.attention: q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} are not "
                         "BHSD with k, v (B, Hk, Sk, D) and H % Hk == 0")


@torch.library.custom_op("megakittens::attention", mutates_args=())
def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float) -> Tensor:
    """o = softmax(scale * q k^T + mask) v: q (B, H, Sq, D), k, v (B, Hk, Sk, D), o (B, H, Sq, D), bf16 or fp16.

    GQA: head h reads KV head h // (H / Hk). causal masks key j > query i (top-left aligned, as SDPA's
    is_causal). fp32 math, rounded once. Raises ValueError for shapes that are not BHSD-compatible.
    """
    _attention_check(q, k, v)
    rep = q.shape[1] // k.shape[1]
    kf = k.float().repeat_interleave(rep, dim=1)
    vf = v.float().repeat_interleave(rep, dim=1)
    s = scale * torch.matmul(q.float(), kf.transpose(-1, -2))
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), vf).to(q.dtype)


@attention.register_fake
def _(q, k, v, causal, scale):
    _attention_check(q, k, v)
    return torch.empty_like(q, memory_format=torch.contiguous_format)


# ---- data movement (issue 6): Copy, Embedding, Cat, RowReduce ----------------------------------------

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _copy_dtype(dtype: str) -> torch.dtype:
    name = dtype.removeprefix("torch.")
    if name not in _DTYPES:
        raise ValueError(f"megakittens.copy: dtype must be one of {', '.join(_DTYPES)}, got '{dtype}'")
    return _DTYPES[name]


@torch.library.custom_op("megakittens::copy", mutates_args=())
def copy(x: Tensor, dtype: str) -> Tensor:
    """A fresh contiguous tensor with x's values (any view: permuted, sliced, broadcast) in ``dtype``
    ("bfloat16", "float16" or "float32"), converted through fp32. Raises ValueError for another dtype."""
    return x.float().to(_copy_dtype(dtype)).contiguous()


@copy.register_fake
def _(x, dtype):
    return x.new_empty(x.shape, dtype=_copy_dtype(dtype))


@torch.library.custom_op("megakittens::embedding", mutates_args=())
def embedding(weight: Tensor, ids: Tensor) -> Tensor:
    """Rows of weight (V, C) by integer ids (...): (..., C) in weight's dtype. Raises IndexError for an id
    outside [0, V), as the compiled instruction does."""
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= weight.shape[0]):
        raise IndexError(f"megakittens.embedding: an id is out of range for a table of {weight.shape[0]} rows")
    return weight[ids.long()]


@embedding.register_fake
def _(weight, ids):
    return weight.new_empty([*ids.shape, weight.shape[1]])


@torch.library.custom_op("megakittens::cat", mutates_args=())
def cat(tensors: list[Tensor], dim: int) -> Tensor:
    """torch.cat(tensors, dim) (equal shapes except along dim; the result in the promoted dtype)."""
    return torch.cat(tensors, dim)


@cat.register_fake
def _(tensors, dim):
    return torch.cat([torch.empty_like(x) for x in tensors], dim)


@torch.library.custom_op("megakittens::softmax", mutates_args=())
def softmax(x: Tensor, log: bool, safe: bool, dtype: str) -> Tensor:
    """softmax (log: log_softmax) of x over its last dim in fp32, rounded once to ``dtype`` ("bfloat16",
    "float16" or "float32"); safe: a row whose max is -inf (every entry masked) gives zeros, as
    ``aten._safe_softmax``, where softmax gives NaN. Raises ValueError for another dtype."""
    out_dtype = _copy_dtype(dtype)
    xf = x.float()
    y = torch.log_softmax(xf, -1) if log else torch.softmax(xf, -1)
    if safe:
        y = torch.where((xf.amax(-1, keepdim=True) == float("-inf")), torch.zeros_like(y), y)
    return y.to(out_dtype)


@softmax.register_fake
def _(x, log, safe, dtype):
    return x.new_empty(x.shape, dtype=_copy_dtype(dtype))


@torch.library.custom_op("megakittens::layer_norm", mutates_args=())
def layer_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float) -> Tensor:
    """LayerNorm of x over its last dim: (x - mean) * rsqrt(var + eps) * weight + bias, the statistics (var
    biased) and the affine terms in fp32, rounded once to x's dtype, contiguous (torch/_refs
    ``native_layer_norm``'s computation). weight / bias: (C,) or None. Raises ValueError for other shapes."""
    C = x.shape[-1]
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != (C,):
            raise ValueError(f"megakittens.layer_norm: {name} must have shape ({C},), got {tuple(p.shape)}")
    xf = x.double()
    mean = xf.mean(-1, keepdim=True)
    out = ((xf - mean) * torch.rsqrt(((xf - mean) ** 2).mean(-1, keepdim=True) + eps)).float()
    if weight is not None:
        out = out * weight.float()
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype).contiguous()


@layer_norm.register_fake
def _(x, weight, bias, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("megakittens::row_reduce", mutates_args=())
def row_reduce(x: Tensor, op: str, keepdim: bool) -> Tensor:
    """sum, mean or max (NaN-propagating, as ``amax``) of x over its last dim; sums accumulated in fp64, rounded
    once to x's dtype. Raises ValueError for another op."""
    if op not in ("sum", "mean", "max"):
        raise ValueError(f"megakittens.row_reduce: op must be 'sum', 'mean' or 'max', got '{op}'")
    if op == "max":
        return x.amax(-1, keepdim=keepdim)
    t = x.double()
    return (t.sum(-1, keepdim=keepdim) if op == "sum" else t.mean(-1, keepdim=keepdim)).to(x.dtype)


@row_reduce.register_fake
def _(x, op, keepdim):
    return x.new_empty([*x.shape[:-1], 1] if keepdim else list(x.shape[:-1]))
