"""The plain-load device bodies ([Note: SIMT bodies], kernels/mk/simt.cuh) on the H200: Copy (casts,
transposes, broadcasts), Embedding, Cat, Rope, RowReduce, and elementwise ops on fp16/fp32, broadcast
operands and rows without a TMA map, each against eager; both queue modes, cluster sizes 1 and 2.
tests/test_nvrtc.py checks on the CPU that the generated source of every case compiles without spills."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import megakittens.ops  # noqa: F401  (registers torch.ops.megakittens.*)
from megakittens import _C, fx_export
from test_gpu_kernels import _gpu_ok, run_gpu

mkops = torch.ops.megakittens
BF16 = torch.bfloat16


def _randn(shape, dtype=BF16, g=None, scale=1.0):
    return (torch.randn(shape, generator=g, dtype=torch.float32) * scale).to(dtype)


# ---- cases: name -> (fn, make_inputs(generator)) ----------------------------------------------------

def c_transpose(g):
    return (lambda x: (x.t().contiguous(),)), [_randn((300, 136), g=g)]


def c_bhsd_to_bshd(g):  # the attention output layout change of a Llama layer
    return (lambda x: (x.transpose(1, 2).contiguous(),)), [_randn((2, 8, 100, 64), g=g)]


def c_casts(g):  # bf16 -> fp32 -> math in fp32 -> bf16, int64 -> fp32, fp16 in
    def f(x, i, h):
        y = x.float()
        return (y, torch.exp(y * 0.5).to(BF16), i.float() * 0.25, (h.float() + 1).to(torch.float16))
    return f, [_randn((64, 96), g=g), torch.randint(-1000, 1000, (64, 96), generator=g), _randn((64, 96), torch.float16, g)]


def c_expand_copy(g):
    return (lambda w: (w.expand(130, 72).contiguous(),)), [_randn((1, 72), g=g)]


def c_embedding(g):
    def f(w, ids, ids32):
        return (F.embedding(ids, w), F.embedding(ids32, w))
    return f, [_randn((1000, 136), g=g), torch.randint(0, 1000, (2, 77), generator=g),
               torch.randint(0, 1000, (50,), generator=g, dtype=torch.int32)]


def c_float_ids(g):  # megakittens/float_ids.py's lookups: fp32 ids holding integers
    def f(w, fids):
        return (mkops.embedding(w, fids),)
    return f, [_randn((1000, 136), g=g), torch.randint(0, 1000, (3, 40), generator=g).float()]


def c_cat(g):
    def f(a, b, c):
        return (torch.cat([a, b], dim=-1), torch.cat([a, c], dim=0))
    return f, [_randn((40, 64), g=g), _randn((40, 72), g=g), _randn((9, 64), g=g)]


def c_cat_planes(g):  # small planes stacked per instruction (a convolution's taps): views of a padded input too
    def f(a, b, x):
        taps = [x[:, :, i:i + 7, j:j + 7] for i in (0, 2) for j in (0, 1)]
        return (torch.cat([a, b], dim=1), torch.cat(taps, dim=1), torch.cat([a.transpose(0, 1), b.transpose(0, 1)], 0))
    return f, [_randn((2, 96, 7, 7), g=g), _randn((2, 40, 7, 7), g=g), _randn((2, 48, 9, 9), g=g)]


def c_rope(g):  # gpt-fast form (cos (S, D) over (B, S, H, D)) and HF form (x_bshd, cos (1, 1, S, D))
    def f(x, q, cos, sin, cos4, sin4):
        B, S, H, D = q.shape
        hf = q.view(B, S, H, D).transpose(1, 2)
        return (mkops.rope(x, cos, sin), mkops.rope(hf, cos4, sin4))
    S, D = 100, 64
    return f, [_randn((2, S, 4, D), g=g), _randn((2, S, 4, D), g=g), _randn((S, 1, D), g=g), _randn((S, 1, D), g=g),
               _randn((1, 1, S, D), g=g), _randn((1, 1, S, D), g=g)]


def c_rope_long(g):  # HF form, D 128: rows of 128 and 96 (2,048 and 1,536 chunks, [Note: SIMT chunks]: loads
    # of several chunks in flight, then the leftover chunks one at a time)
    def f(q, cos4, sin4):
        return (mkops.rope(q.transpose(1, 2), cos4, sin4),)
    S, D = 224, 128
    return f, [_randn((1, S, 2, D), g=g), _randn((1, 1, S, D), g=g), _randn((1, 1, S, D), g=g)]


def c_rope_interleaved(g):  # rotate_every_two: the scalar path (D 32: 64-byte rows) and the vector path (D 128)
    def f(x, q, cos, sin, cos4, sin4):
        return (mkops.rope_interleaved(x, cos, sin), mkops.rope_interleaved(q.transpose(1, 2), cos4, sin4))
    S = 60
    return f, [_randn((2, S, 4, 32), g=g), _randn((1, S, 4, 128), g=g), _randn((S, 1, 32), g=g),
               _randn((S, 1, 32), g=g), _randn((1, 1, S, 128), g=g), _randn((1, 1, S, 128), g=g)]


def c_rope_half_tables(g):  # interleaved, tables of D/2 columns (one per pair): the scalar path
    def f(q, cos, sin):
        return (mkops.rope_interleaved(q.transpose(1, 2), cos, sin),)
    S = 60
    return f, [_randn((1, S, 4, 128), g=g), _randn((1, 1, S, 64), g=g), _randn((1, 1, S, 64), g=g)]


def c_row_reduce(g):
    def f(x, y):
        return (x.sum(-1), y.float().mean(-1, keepdim=True))
    return f, [_randn((70, 300), g=g), _randn((3, 20, 129), g=g)]


def c_row_max(g):  # RowReduce max (softmax's row max): bf16 and fp32 rows, keepdim and not
    def f(x, y):
        return (x.amax(-1), y.float().amax(-1, keepdim=True))
    return f, [_randn((70, 300), g=g), _randn((3, 20, 129), g=g)]


def c_softmax(g):  # Softmax: bf16 rows, fp32 log-softmax, safe rows of -inf (zeros) beside NaN-free ones
    def f(x, y, z):
        return (mkops.softmax(x, False, False, "bfloat16"), mkops.softmax(y, True, False, "float32"),
                mkops.softmax(z, False, True, "float32"))
    z = _randn((4, 16, 40), g=g).float() * 4
    z[1, 3] = float("-inf")
    return f, [_randn((70, 300), g=g) * 3, _randn((3, 20, 129), g=g).float(), z]


def c_layer_norm(g):  # LayerNorm: bf16 with bf16 weight and bias, fp32 with a weight only, a stacked weight's row
    def f(x, w, b, y, W):
        return (mkops.layer_norm(x, w, b, 1e-5), mkops.layer_norm(y, W[1], None, 1e-3), mkops.layer_norm(x, None, None, 0.5))
    return f, [(_randn((70, 300), g=g) * 3 + 1).to(BF16), _randn((300,), g=g), _randn((300,), g=g),
               _randn((3, 20, 129), g=g).float(), _randn((2, 129), g=g).float()]


def c_broadcast(g):
    def f(x, w, col, s):
        return (x * w, x + col, torch.maximum(x, s), (x.float() * w.float()).to(BF16))
    return f, [_randn((100, 200), g=g), _randn((200,), g=g), _randn((100, 1), g=g), _randn((), g=g)]


def c_hf_rotary(g):  # HF's rotary embedding: outer product in fp32, cat, cos/sin, cast
    def f(inv_freq, pos):
        freqs = pos[:, :, None].float() * inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos().to(BF16), (emb.sin() * 1.0).to(BF16))
    return f, [1.0 / (10000 ** (torch.arange(0, 64, 2, dtype=torch.float32) / 64)), torch.arange(100)[None]]


def c_hf_rotary_matmul(g):  # older transformers: inv_freq (B, D/2, 1) @ positions (B, 1, S) in fp32 (K = 1)
    def f(inv_freq, pos):
        a = inv_freq[None, :, None].float().expand(pos.shape[0], -1, 1)
        freqs = (a @ pos[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos().to(BF16), emb.sin().to(BF16))
    return f, [1.0 / (10000 ** (torch.arange(0, 64, 2, dtype=torch.float32) / 64)), torch.arange(100)[None]]


def c_unaligned(g):  # rows of 200 B: no TMA tile map, the plain path
    return (lambda x, y: (torch.relu(x) + y, torch.sigmoid(y))), [_randn((50, 100), g=g), _randn((50, 100), g=g)]


# [Note: SIMT chunks]: bf16 slots whose rows are 16-byte multiples take the 8-element vector path.
def c_rope_vec(g):  # Llama head_dim 128, both forms
    def f(x, q, cos, sin, cos4, sin4):
        B, S, H, D = q.shape
        return (mkops.rope(x, cos, sin), mkops.rope(q.transpose(1, 2), cos4, sin4))
    S, D = 72, 128
    return f, [_randn((1, S, 3, D), g=g), _randn((1, S, 4, D), g=g), _randn((S, 1, D), g=g), _randn((S, 1, D), g=g),
               _randn((1, 1, S, D), g=g), _randn((1, 1, S, D), g=g)]


def c_vec_copies(g):  # BHSD -> BSHD at head_dim 128, an aligned embedding, cat and broadcasts (a splat column)
    def f(o, w, ids, a, b, x, row, col):
        return (o.transpose(1, 2).contiguous(), F.embedding(ids, w), torch.cat([a, b], dim=-1), x * row, x + col)
    return f, [_randn((1, 4, 80, 128), g=g), _randn((500, 256), g=g), torch.randint(0, 500, (1, 90), generator=g),
               _randn((40, 64), g=g), _randn((40, 128), g=g), _randn((96, 256), g=g), _randn((256,), g=g),
               _randn((96, 1), g=g)]


def c_copy_stack(g):  # planes of 4 x 32: 3 d per Copy instruction (a ragged last one), vector and fp32 paths
    def f(o):
        t = o.transpose(1, 2)
        return (t.contiguous(), t.float())
    return f, [_randn((1, 4, 400, 32), g=g)]


CASES = {f.__name__[2:]: f for f in (c_transpose, c_bhsd_to_bshd, c_casts, c_expand_copy, c_embedding, c_float_ids, c_cat, c_cat_planes,
                                     c_rope, c_row_reduce, c_row_max, c_softmax, c_layer_norm, c_broadcast, c_hf_rotary, c_hf_rotary_matmul,
                                     c_unaligned, c_rope_vec, c_vec_copies, c_copy_stack, c_rope_interleaved,
                                     c_rope_half_tables, c_rope_long)}


def case_inputs(case, seed):
    return CASES[case](torch.Generator().manual_seed(seed))


def program_of(fn, args, cluster_size=1, num_sms=132, name="simt"):
    gm = make_fx(fn, tracing_mode="fake")(*args)
    dag = _C.trace(fx_export.export_graph(gm, name))
    return _C.schedule(dag, _C.Profile.by_name("h200", num_sms), cluster_size=cluster_size)


# ---- GPU (the CPU part, the generated source compiling, is in tests/test_nvrtc.py) ------------------

def check_close(out, ref, what):
    assert out.dtype == ref.dtype and out.shape == ref.shape, (what, out.dtype, ref.dtype, out.shape, ref.shape)
    assert torch.equal(torch.isnan(out), torch.isnan(ref)), f"{what}: NaN pattern differs from eager"
    o, r = out.double().cpu(), ref.double().cpu()
    finite = torch.isfinite(r)
    err = ((o[finite] - r[finite]).norm() / r[finite].norm().clamp_min(1e-30)).item()
    assert err <= 1e-2, f"{what}: relative error {err:.3e}"


@pytest.mark.gpu
@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("global_queue", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_simt_itype_vs_eager(case, global_queue, cluster):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, args = case_inputs(case, 0)
    program = program_of(fn, args, cluster_size=cluster, num_sms=gpu.num_ctas(cluster), name=case)
    for seed in (1, 2):  # fresh inputs; the second launch exercises the epoch-scaled barriers
        fn, args = case_inputs(case, seed)
        args = [a.cuda() for a in args]
        outs = run_gpu(program, args, {"global_work_queue": global_queue, "sync": True, "watchdog_s": 5.0})
        refs = fn(*args)
        assert isinstance(refs, tuple) and len(outs) == len(refs)
        for k, (out, ref) in enumerate(zip(outs, refs)):
            check_close(out, ref, f"{case} output {k}")


@pytest.mark.gpu
def test_embedding_index_out_of_range_raises_and_context_survives():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, args = case_inputs("embedding", 0)
    program = program_of(fn, args, num_sms=gpu.num_ctas(1), name="embedding_oob")
    args = [a.cuda() for a in args]
    bad = args[1].clone()
    bad[1, 5] = 1000  # one past the table
    with pytest.raises(IndexError, match="out of range"):
        run_gpu(program, [args[0], bad, args[2]], {"sync": True, "watchdog_s": 2.0})
    outs = run_gpu(program, args, {"sync": True, "watchdog_s": 5.0})
    for out, ref in zip(outs, fn(*args)):
        check_close(out, ref, "embedding after the error")


@pytest.mark.gpu
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), -1.0, 1000.0])
def test_float_ids_that_are_no_index_raise(bad):
    """An fp32 id of NaN or +-inf (float_ids.py's marks for values fp32 cannot hold) raises IndexError on the
    device, as one out of range does: a float-to-integer conversion alone would make NaN row 0."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    fn, args = case_inputs("float_ids", 0)
    program = program_of(fn, args, num_sms=gpu.num_ctas(1), name="float_ids_bad")
    args = [a.cuda() for a in args]
    ids = args[1].clone()
    ids[2, 7] = bad
    with pytest.raises(IndexError, match="out of range"):
        run_gpu(program, [args[0], ids], {"sync": True, "watchdog_s": 2.0})


@pytest.mark.gpu
def test_sqrt_is_sqrtf_bit_for_bit():
    """mk::sqrt_rn (kernels/mk/unary.cuh, branch-free) equals torch.sqrt (sqrtf) on fp32 in every bit: normal
    values over the whole range, denormals, values below 2^-101 (scaled), +-0, inf, negatives and NaN."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    from megakittens import gpu
    g = torch.Generator().manual_seed(3)
    bits = torch.randint(0, 0x7f800000, (256, 1024), generator=g, dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32).clone()  # every positive finite exponent, denormals included
    special = torch.tensor([0.0, -0.0, float("inf"), -1.0, -float("inf"), float("nan"), 2.0 ** -101, 2.0 ** -102,
                            2.0 ** -149, 2.0 ** -126, 3.4e38, 1.0, 2.0, 0.5])
    x[0, :special.numel()] = special
    program = program_of(lambda t: torch.sqrt(t), [x], num_sms=gpu.num_ctas(1), name="sqrt_bits")
    (out,) = run_gpu(program, [x.cuda()], {"sync": True, "watchdog_s": 5.0})
    ref = torch.sqrt(x.cuda())
    assert torch.equal(torch.isnan(out), torch.isnan(ref))
    same = (out.view(torch.int32) == ref.view(torch.int32)) | torch.isnan(ref)
    assert bool(same.all()), f"{int((~same).sum())} values differ, e.g. sqrt({x.cuda()[~same][:4].tolist()})"
