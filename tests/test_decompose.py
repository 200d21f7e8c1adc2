"""megakittens/decompose.py: aten ops rewritten, while Dynamo's graph is lowered to aten, into ops that have
instruction types: LayerNorm (one instruction: fp32 statistics, one rounding), split and unbind (slice and select views),
stack (one cat), a patch-embedding convolution (one matrix product)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, randn, rel_err


@pytest.mark.parametrize("affine", ["weight_bias", "weight", "none"])
@pytest.mark.parametrize("shape", [(64, 256), (2, 48, 384), (3, 130)])
def test_layer_norm_matches_eager(shape, affine):
    x = randn(*shape, scale=3.0) + 0.5  # a mean away from 0: the centring matters
    n = shape[-1]
    w = randn(n) if affine != "none" else None
    b = randn(n) if affine == "weight_bias" else None
    fn = lambda x, w, b: F.layer_norm(x, (n,), w, b, 1e-5) * 2  # noqa: E731
    out, ref = megakittens.compile(fn)(x, w, b), fn(x, w, b)
    assert out.dtype == BF16 and rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    kinds = [node.itype for node in mk_backend.dispatchers[-1].program.nodes]
    # one LayerNorm instruction; the unread mean / rstd outputs are dropped
    assert sum(k.startswith("LayerNorm") for k in kinds) == 1 and not any(k.startswith("RowReduce") for k in kinds), kinds


def test_layer_norm_module_fp32_and_eps():
    """nn.LayerNorm in fp32 with a large eps (eps is honoured: a wrong eps moves the result past 1e-2)."""
    ln = torch.nn.LayerNorm(128, eps=0.5).requires_grad_(False)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(128))
        ln.bias.copy_(torch.randn(128))
    x = torch.randn(32, 128) * 0.5
    out = megakittens.compile(ln)(x)
    assert out.dtype == torch.float32 and rel_err(out, ln(x)) <= 1e-4, rel_err(out, ln(x))
    assert rel_err(out, F.layer_norm(x, (128,), ln.weight, ln.bias, 1e-5)) > 1e-2


def test_layer_norm_of_a_transposed_view_has_eager_strides():
    x = randn(64, 256)
    fn = lambda x: F.layer_norm(x.t(), (64,))  # noqa: E731
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.stride() == ref.stride() == (64, 1) and rel_err(out, ref) <= 1e-2


def test_layer_norm_over_two_dims_is_reported():
    """A normalization over more than the last dim is not rewritten: the error names the op and why."""
    fn = lambda x: F.layer_norm(x, (8, 64))  # noqa: E731
    with pytest.raises(Exception, match=r"native_layer_norm.*only over the last dim"):
        megakittens.compile(fn)(randn(4, 8, 64))


@pytest.mark.parametrize("how", ["equal", "ragged", "sizes", "dim0"])
def test_split_becomes_slice_views(how):
    def fn(x, y):
        if how == "equal":
            a, b, c = x.split(64, dim=-1)
        elif how == "ragged":  # 200 = 64 + 64 + 64 + 8
            a, b, c, d = x.split(64, dim=1)
            return a * b + c * d.sum(-1, keepdim=True)
        elif how == "sizes":
            a, b, c = torch.split(x, [32, 96, 64], dim=1)
            return a.sum(-1, keepdim=True) * b + y[:, :96] + c.mean(-1, keepdim=True)
        else:
            a, b, c = x.split(16, dim=0)
        return (a + b) * c + y[:, : a.shape[1]]
    cols = 200 if how == "ragged" else 192
    rows = 48 if how == "dim0" else 32
    x, y = randn(rows, cols), randn(rows // 3 if how == "dim0" else rows, 192)
    out, ref = megakittens.compile(fn)(x, y), fn(x, y)
    assert rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    kinds = [node.itype for node in mk_backend.dispatchers[-1].program.nodes]
    assert not any(k.startswith("Copy") for k in kinds), kinds  # the pieces are views


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind_becomes_select_views(dim):
    def fn(x):
        a, b, c = x.unbind(dim)
        return a * b + c

    shape = {0: (3, 48, 128), 1: (48, 3, 128), -1: (48, 128, 3)}[dim]
    x = randn(*shape)
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2, rel_err(out, ref)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_becomes_one_cat(dim):
    def fn(x, y):  # as interleaved RoPE: stack((-x2, x1), -1)
        return torch.stack((-y, x * 2, y), dim=dim) + 1

    x, y = randn(48, 128), randn(48, 128)
    out, ref = megakittens.compile(fn)(x, y), fn(x, y)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    kinds = [node.itype for node in mk_backend.dispatchers[-1].program.nodes]
    assert sum(k.startswith("Cat") for k in kinds) == 1 and not any("stack" in k for k in kinds), kinds


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape,kernel", [
    ((2, 3, 64, 48), (16, 16)),   # ViT-style: whole patches
    ((1, 3, 70, 66), (14, 14)),   # 588 values a patch: padded to 592 columns; rows / columns past the last patch dropped
    ((2, 5, 24, 40), (4, 8)),     # a rectangular kernel
    ((2, 4, 40), (8,)),           # 1-D
])
def test_patch_convolution_becomes_one_matrix_product(shape, kernel, bias):
    conv = (torch.nn.Conv2d if len(kernel) == 2 else torch.nn.Conv1d)(shape[1], 96, kernel, stride=kernel, bias=bias)
    conv = conv.to(BF16).requires_grad_(False)
    x = randn(*shape)
    out, ref = megakittens.compile(conv)(x), conv(x)
    assert out.shape == ref.shape and out.stride() == ref.stride(), (out.shape, out.stride(), ref.stride())
    assert rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    kinds = [node.itype for node in mk_backend.dispatchers[-1].program.nodes]
    assert sum(k.startswith("Gemm") for k in kinds) == 1, kinds
    assert any(k.startswith("Cat") for k in kinds) == (kernel == (14, 14)), kinds  # the 16-byte row padding


@pytest.mark.parametrize("kw", [dict(kernel_size=3, padding=1), dict(kernel_size=4, stride=2), dict(kernel_size=4, stride=4, groups=2),
                                dict(kernel_size=2, stride=2, dilation=2)])
def test_transposed_convolutions_are_reported(kw):
    """Convolutions the decomposition does not lower (transposed) keep an error naming the op and the rule."""
    conv = torch.nn.ConvTranspose2d(4, 8, **kw).to(BF16).requires_grad_(False)
    with pytest.raises(Exception, match=r"aten.convolution.*1-D or 2-D, not transposed.*transposed True"):
        megakittens.compile(conv)(randn(1, 4, 16, 16))


def test_convolution_of_another_dtype_is_reported():
    """The matrix product takes bf16 or fp16: a float32 convolution keeps its op, whose error says so (not
    the Gemm's dtype rule on an addmm the user never wrote)."""
    conv = torch.nn.Conv2d(4, 8, 3, padding=1).float().requires_grad_(False)
    with pytest.raises(Exception, match=r"aten.convolution.*bfloat16 or float16 \(input and weight alike\)"):
        megakittens.compile(conv)(torch.randn(1, 4, 8, 8))


def test_3d_convolution_is_reported():
    conv3 = torch.nn.Conv3d(4, 8, 3).to(BF16).requires_grad_(False)
    with pytest.raises(Exception, match=r"rank-5 tensors are not supported"):
        megakittens.compile(conv3)(randn(1, 4, 6, 6, 6))


def test_layer_norm_weight_from_a_stacked_parameter():
    """weight / bias as rows of stacked parameters (W[1]: a view at an offset of its slot) are read in place."""
    x, W, B = randn(40, 96, scale=2.0), randn(3, 96), randn(3, 96)
    fn = lambda x, W, B: F.layer_norm(x, (96,), W[1], B[2], 1e-5)  # noqa: E731
    out, ref = megakittens.compile(fn)(x, W, B), fn(x, W, B)
    assert rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    assert rel_err(out, F.layer_norm(x, (96,), W[0], B[2], 1e-5)) > 1e-1  # the row matters


def test_layer_norm_weight_deep_in_a_4d_parameter_is_refused():
    """The weight's origin travels as (d, r, c) (docs/itypes.md): a row of a 4-D stack past its first plane is
    a CompileError naming the rule, not a wrong read."""
    x, W = randn(8, 64), randn(2, 2, 3, 64)
    with pytest.raises(Exception, match=r"weight must lie in the first plane of its tensor"):
        megakittens.compile(lambda x, W: F.layer_norm(x, (64,), W[1, 1, 2]))(x, W)


@pytest.mark.parametrize("out_channels", [100, 20])
def test_patch_convolution_pads_output_channels(out_channels):
    """Output channels that are not a multiple of 8 get zero filters (the Gemm's output rows are 16-byte
    multiples), sliced off before the NCHW copy."""
    conv = torch.nn.Conv2d(3, out_channels, 14, stride=14).to(BF16).requires_grad_(False)
    x = randn(2, 3, 56, 42)
    out, ref = megakittens.compile(conv)(x), conv(x)
    assert out.shape == ref.shape and out.stride() == ref.stride() and rel_err(out, ref) <= 1e-2


@pytest.mark.parametrize("shifts,dims", [((-2, -2), (1, 2)), ((3,), (2,)), ((5,), (1,))])
def test_roll(shifts, dims):
    """torch.roll along dims (Swin's shifted windows): a cat of two slices per dim, exact."""
    x = randn(2, 8, 12, 16)
    fn = lambda x: torch.roll(x, shifts, dims) + 1.0  # noqa: E731
    out = megakittens.compile(fn)(x)
    assert torch.equal(out, fn(x))


def test_vector_norm_over_the_last_dim():
    """F.normalize / torch.linalg.vector_norm(x, 2, -1): sqrt of the row sum of squares in fp32."""
    x = randn(6, 40, 64)
    for fn in (lambda x: F.normalize(x, dim=-1), lambda x: torch.linalg.vector_norm(x, 2, -1, keepdim=True) * x):
        torch._dynamo.reset()
        out = megakittens.compile(fn)(x)
        assert rel_err(out, fn(x)) <= 1e-2


@pytest.mark.parametrize("case", ["mean1", "mean1_keepdim", "sum02", "amax0", "softmax1", "log_softmax0"])
def test_reductions_and_softmax_over_other_dims(case):
    """Over a dim other than the last (BEiT's mean over the tokens, ConvBERT's softmax over dim 1): the dims
    moved last (a Copy), then the row instruction."""
    fns = {
        "mean1": lambda x: x.mean(1),
        "mean1_keepdim": lambda x: x.mean(1, keepdim=True) * 2,
        "sum02": lambda x: x.float().sum((0, 2)),
        "amax0": lambda x: x.amax(0),
        "softmax1": lambda x: x.softmax(1),
        "log_softmax0": lambda x: x.float().log_softmax(0),
    }
    x = randn(3, 40, 72, scale=3.0)
    torch._dynamo.reset()
    out, ref = megakittens.compile(fns[case])(x), fns[case](x)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    kinds = [node.itype for node in mk_backend.dispatchers[-1].program.nodes]
    assert any(k.startswith(("RowReduce", "Softmax")) for k in kinds), kinds


@pytest.mark.parametrize("repeats", [(3, 1, 1), (2, 20), (1, 2, 3)])
def test_repeat(repeats):
    x = randn(1, 24, 8) if len(repeats) == 3 else randn(24, 8)
    fn = lambda x: x.repeat(*repeats) + 1  # noqa: E731
    torch._dynamo.reset()
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.shape == ref.shape and torch.equal(out, ref)


def _assign_first(a, b):
    a = a.clone()
    a[:, :1] = b[:, :1]
    return a * 2


def _assign_middle(a, b):
    a = a * 1
    a[:, 3:5] = b
    return a


def _assign_zero(a, b):
    a = a + 0
    a[..., -2:] = 0
    return a + b[:, :1]


def _assign_row_in_fp32(a, b):
    a = a + 0
    a[:, 1] = b[:, 0].float()  # cast to a's dtype on the way in
    return a


def _zero_in_place(a, b):
    a = a + 0
    a[:, 1:3].zero_()
    return a - b[:, :1]


@pytest.mark.parametrize("fn", [_assign_first, _assign_middle, _assign_zero, _assign_row_in_fp32, _zero_in_place])
def test_assignments_into_part_of_a_tensor(fn):
    """a[:, i:j] = b / a[:, i] = b / a[..., -2:] = 0 inside the function (slice_scatter, select_scatter, copy,
    fill after functionalization: one Cat): exact."""
    a, b = randn(2, 8, 16), randn(2, 2, 16)
    a0 = a.clone()
    torch._dynamo.reset()
    out = megakittens.compile(fn)(a, b)
    assert torch.equal(a, a0)  # the caller's tensor is not written
    assert torch.equal(out, fn(a, b))


@pytest.mark.parametrize("n", [17, 40])
def test_cat_of_more_than_16_tensors(n):
    """DenseNet concatenates every earlier feature map: a cat of cats (one Cat node takes 16 inputs)."""
    xs = [randn(2, 3, 8) for _ in range(n)]
    fn = lambda *xs: torch.cat(xs, 1) * 2  # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(megakittens.compile(fn)(*xs), fn(*xs))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 10.0), (0.5, 20.0)])
def test_softplus_matches_eager_elementwise(dtype, beta, threshold):
    """F.softplus (decompose.py _softplus, Apertus' activation): every element within the output's rounding of
    eager's, from -60 (exp(x) ~ 1e-26, where log(1 + t) alone would give 0) past the threshold (x itself)."""
    x = torch.cat([torch.randn(64, 64) * 8, torch.linspace(-60, 60, 64)[None].repeat(4, 1)]).to(dtype)
    f = lambda x: F.softplus(x, beta, threshold)  # noqa: E731
    out, ref = megakittens.compile(f)(x), f(x)
    assert out.dtype == dtype and torch.isfinite(out).all()
    # Two units in the last place of the output's normal range; its subnormals (fp16 below 6.1e-5) have fewer bits.
    err = (out.float() - ref.float()).abs() - (2 ** -7 if dtype == torch.bfloat16 else 2 ** -10) * ref.float().abs()
    assert err.max().item() <= torch.finfo(dtype).tiny, err.max().item()
    assert not any(n.itype.startswith("Fallback") for n in mk_backend.dispatchers[-1].program.nodes)
