"""Elementwise ops for Llama-family models (issue 6) through megakittens.compile on the CPU reference
interpreter, against eager PyTorch: silu, gelu (exact and tanh), sigmoid, tanh, cos, sin, reciprocal,
square, and Python number operands (add/sub/mul/div/rsub/pow/clamp with a scalar), which become
ElementwiseUnary steps with a constant (docs/itypes.md).

Tolerance: relative Frobenius error <= 1e-2 on fresh random bf16 inputs (tests/common.py)."""
import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import randn, rel_err

TOL = 1e-2
mk = torch.ops.megakittens
aten = torch.ops.aten


def _check(fn, *args):
    out = megakittens.compile(fn)(*args)
    ref = fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == r.dtype and o.shape == r.shape
        err = rel_err(o, r)
        assert err <= TOL, f"output {i}: relative error {err:.3g}"
    return outs


def _icodes():
    return list(mk_backend.dispatchers[-1].program.icodes)


UNARY = {
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "cos": torch.cos,
    "sin": torch.sin,
    "reciprocal": torch.reciprocal,
    "square": torch.square,
    "erf": torch.erf,
    "expm1": torch.expm1,
    "log1p": lambda x: torch.log1p(x.abs()),  # log1p's domain: x > -1
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_op(name):
    fn = UNARY[name]
    x = randn(3, 200, 300, scale=3.0)  # ragged tiles, and the tails of tanh/sigmoid/gelu
    _check(lambda t: fn(t), x)
    # log1p reads |x| (its domain): the two steps fuse
    want = "ElementwiseFused(x1: abs(x0):f32; log1p(t0):bf16)" if name == "log1p" else f"ElementwiseUnary(ops={name})"
    assert want in _icodes(), _icodes()


def test_expm1_log1p_keep_small_values():
    """expm1 / log1p near 0, where exp(x) - 1 and log(1 + x) in fp32 cancel: xIELU (Apertus) and softplus-like
    activations read them there."""
    x = randn(64, 256, scale=1e-4)
    _check(lambda t: (torch.expm1(t), torch.log1p(t)), x)
    assert {"ElementwiseUnary(ops=expm1)", "ElementwiseUnary(ops=log1p)"} <= set(_icodes())


SCALAR = {
    # name: (fn, the icode it must resolve to)
    "mul_add": (lambda x: x * 0.5 + 1, None),
    "mul_0.1": (lambda x: x * 0.1, "ElementwiseUnary(ops=mul_scalar:0.1)"),
    "rmul": (lambda x: 2 * x, "ElementwiseUnary(ops=mul_scalar:2)"),
    "radd": (lambda x: 3 + x, "ElementwiseUnary(ops=add_scalar:3)"),
    "sub": (lambda x: x - 1.5, "ElementwiseUnary(ops=add_scalar:-1.5)"),
    "rsub": (lambda x: 1 - x, "ElementwiseUnary(ops=neg,add_scalar:1)"),
    "rsub_alpha": (lambda x: torch.rsub(x, 1.0, alpha=3), "ElementwiseUnary(ops=mul_scalar:-3,add_scalar:1)"),
    "div": (lambda x: x / 3, "ElementwiseUnary(ops=div_scalar:3)"),
    "rdiv": (lambda x: 2 / (x.abs() + 0.5), None),  # Dynamo writes it as reciprocal * 2
    "add_alpha": (lambda x: torch.add(x, 2, alpha=3), "ElementwiseUnary(ops=add_scalar:6)"),
    "sub_alpha": (lambda x: torch.sub(x, 0.25, alpha=2), "ElementwiseUnary(ops=add_scalar:-0.5)"),
    "add_Scalar": (lambda x: aten.add.Scalar(x, 1e-6), "ElementwiseUnary(ops=add_scalar:1e-06)"),
    "sub_Scalar": (lambda x: aten.sub.Scalar(x, 0.5), "ElementwiseUnary(ops=add_scalar:-0.5)"),
    "mul_Scalar": (lambda x: aten.mul.Scalar(x, 0.125), "ElementwiseUnary(ops=mul_scalar:0.125)"),
    "div_Scalar": (lambda x: aten.div.Scalar(x, 7.0), "ElementwiseUnary(ops=div_scalar:7)"),
    "pow2": (lambda x: x ** 2, "ElementwiseUnary(ops=square)"),
    "pow3": (lambda x: x ** 3, "ElementwiseUnary(ops=pow_scalar:3)"),
    "pow1": (lambda x: x ** 1, "ElementwiseUnary(ops=identity)"),
    "pow_half": (lambda x: (x.abs() + 0.1) ** 0.5, "ElementwiseFused(x1: abs(x0):f32; add_scalar:0.1(t0):f32; sqrt(t1):bf16)"),
    "pow_mhalf": (lambda x: (x.abs() + 0.1) ** -0.5, "ElementwiseFused(x1: abs(x0):f32; add_scalar:0.1(t0):f32; rsqrt(t1):bf16)"),
    "pow_m1": (lambda x: (x.abs() + 0.1) ** -1, "ElementwiseFused(x1: abs(x0):f32; add_scalar:0.1(t0):f32; reciprocal(t1):bf16)"),
    "pow_1.5": (lambda x: (x.abs() + 0.1) ** 1.5, "ElementwiseFused(x1: abs(x0):f32; add_scalar:0.1(t0):f32; pow_scalar:1.5(t1):bf16)"),
    "clamp_min": (lambda x: torch.clamp(x, min=0), "ElementwiseUnary(ops=clamp_min:0)"),
    "clamp_both": (lambda x: torch.clamp(x, -1, 0.5), "ElementwiseUnary(ops=clamp_min:-1,clamp_max:0.5)"),
    "clamp_max": (lambda x: torch.clamp(x, max=0.25), "ElementwiseUnary(ops=clamp_max:0.25)"),
    "clamp_min_fn": (lambda x: x.clamp_min(-0.5), "ElementwiseUnary(ops=clamp_min:-0.5)"),
    "clamp_max_fn": (lambda x: x.clamp_max(0.75), "ElementwiseUnary(ops=clamp_max:0.75)"),
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_operand(name):
    fn, icode = SCALAR[name]
    _check(fn, randn(130, 260))
    if icode:
        assert icode in _icodes(), _icodes()


def test_division_by_a_number_is_exact():
    """x / 3 rounds x/3 once (fp32 division), never x * (1/3): bit-equal to the fp32 oracle."""
    x = randn(256, 256) * 10
    out = megakittens.compile(lambda t: t / 3)(x)
    torch.testing.assert_close(out, (x.float() / 3).to(x.dtype), rtol=0, atol=0)


def swiglu(x, Wg, Wu, Wd):
    return (F.silu(x @ Wg) * (x @ Wu)) @ Wd


def test_swiglu():
    x, Wg, Wu, Wd = randn(128, 256), randn(256, 512, scale=256 ** -0.5), randn(256, 512, scale=256 ** -0.5), \
        randn(512, 256, scale=512 ** -0.5)
    _check(swiglu, x, Wg, Wu, Wd)


def gelu_mlp(x, W1, W2):
    return F.gelu(x @ W1, approximate="tanh") @ W2 * 0.5 + 1


def test_gelu_mlp():
    _check(gelu_mlp, randn(128, 256), randn(256, 512, scale=256 ** -0.5), randn(512, 256, scale=512 ** -0.5))


def rope_like(x, pos):
    """cos/sin of a scaled position table mixed into x, as rotary embeddings do (elementwise part only)."""
    ang = pos * 0.01
    return x * torch.cos(ang) + (1 - x) * torch.sin(ang)


def test_rope_like():
    _check(rope_like, randn(2, 128, 64), randn(2, 128, 64) * 50)


def every_op(x):
    """All new ops in one graph: several icodes of one IType with different constants."""
    a = torch.sigmoid(x) * torch.tanh(x) + F.gelu(x) - F.silu(x) / 4
    b = torch.cos(x * 2) - torch.sin(x) ** 2 + torch.reciprocal(x.abs() + 1)
    c = torch.clamp(a * b, -2, 2) ** 3 + torch.rsub(x, 0.5) * 0.125
    return F.gelu(c, approximate="tanh"), a, b


def test_every_op_in_one_graph():
    _check(every_op, randn(3, 64, 200))


def test_custom_op_scalar_forms():
    """megakittens.elementwise_unary with scalar forms: the oracle and the compiled graph agree."""
    ops = "silu,mul_scalar:0.5,add_scalar:1,clamp_max:1.25,pow_scalar:2.5,div_scalar:3"

    def f(x):
        return mk.elementwise_unary(x, ops)

    x = randn(100, 300)
    out = _check(f, x)[0]
    t = x.float()
    want = (torch.clamp_max(F.silu(t) * 0.5 + 1, 1.25) ** 2.5 / 3).to(x.dtype)
    assert rel_err(out, want) <= TOL
    assert "ElementwiseUnary(ops=silu,mul_scalar:0.5,add_scalar:1,clamp_max:1.25,pow_scalar:2.5,div_scalar:3)" \
        in _icodes()


@pytest.mark.parametrize("ops", ["silu", "gelu", "gelu_tanh", "sigmoid", "tanh", "cos", "sin", "reciprocal",
                                 "square", "erf", "expm1", "add_scalar:2.5", "mul_scalar:0.125", "div_scalar:3",
                                 "pow_scalar:3",
                                 "clamp_min:0", "clamp_max:-0.5"])
def test_custom_op_oracle_matches_eager(ops):
    """The oracle (megakittens/ops.py) computes each op as eager does, in fp32."""
    x = randn(64, 64)
    name, _, k = ops.partition(":")
    ref = {
        "silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
        "sigmoid": torch.sigmoid, "tanh": torch.tanh, "cos": torch.cos, "sin": torch.sin,
        "reciprocal": torch.reciprocal, "square": torch.square, "erf": torch.erf, "expm1": torch.expm1,
        "add_scalar": lambda t: t + float(k), "mul_scalar": lambda t: t * float(k), "div_scalar": lambda t: t / float(k),
        "pow_scalar": lambda t: t ** float(k), "clamp_min": lambda t: t.clamp_min(float(k)),
        "clamp_max": lambda t: t.clamp_max(float(k)),
    }[name]
    assert rel_err(mk.elementwise_unary(x, ops), ref(x.float()).to(x.dtype)) <= 1e-2


def test_custom_op_rejects_bad_forms():
    x = randn(8, 8)
    for bad in ("add_scalar", "relu:2", "mul_scalar:abc", "tan"):
        with pytest.raises(ValueError):
            mk.elementwise_unary(x, bad)


def test_clamp_with_a_nan_bound_is_nan():
    """torch.clamp with a NaN bound returns NaN everywhere (CPU reference; a non-finite constant has no
    device body)."""
    x = randn(64, 128)
    out = megakittens.compile(lambda t: torch.clamp(t, min=float("nan")))(x)
    assert torch.isnan(out).all()
    out = megakittens.compile(lambda t: torch.clamp(t, max=float("nan")) + 1)(x)
    assert torch.isnan(out).all()
