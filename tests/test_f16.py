"""float16 models: the tensor-core instruction types (Gemm, Attention, RMSNorm) take fp16 operands as they take
bf16 ones (their `f16` parameter: src/itypes/itype.h half_dtype, kernels/mk/half.cuh), so an fp16 model compiles
with the same instructions and fusions as its bf16 twin. Here on the CPU reference interpreter; the same cases
run on the megakernel in tests/test_gpu_f16.py."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import rel_err

F16 = torch.float16


def rand(*shape, scale=1.0, device="cpu", dtype=F16):
    """Fresh random values (never zeros) in fp16, O(1) after ``scale``."""
    return (torch.randn(*shape, device=device) * scale).to(dtype)


def icodes():
    return list(mk_backend.dispatchers[-1].program.icodes)


# name -> (fn, input builder(device), the icode prefixes the program must hold, tolerance)
def _mlp(x, w1, b1, w2, b2):
    return F.linear(torch.relu(F.linear(x, w1, b1)), w2, b2)


def _swiglu(x, wg, wu, wd):
    return F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)


def _residual(h, x, w):
    return h + F.linear(x, w)


def _products(a, b, c):  # plain, A^T, batched with B^T; ragged M / N / K
    a3, b3 = a[None].expand(2, -1, -1).contiguous(), b.t()[None].expand(2, -1, -1).contiguous()
    return a @ b, a.t() @ c, torch.bmm(a3, b3.transpose(1, 2))


def _sdpa_gqa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def _sdpa_masked(q, k, v, m):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


def _rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, 1e-6)


def _conv(x, w):
    return F.conv2d(x, w, padding=1)


CASES = {
    "mlp_bias_relu": (_mlp, lambda d: (rand(200, 256, device=d), rand(384, 256, scale=256 ** -0.5, device=d),
                                       rand(384, device=d), rand(256, 384, scale=384 ** -0.5, device=d),
                                       rand(256, device=d)), ["Gemm(tb,bias_row,act=relu,f16)", "Gemm(tb,bias_row,f16)"]),
    "swiglu": (_swiglu, lambda d: (rand(128, 256, device=d), rand(512, 256, scale=256 ** -0.5, device=d),
                                   rand(512, 256, scale=256 ** -0.5, device=d), rand(256, 512, scale=512 ** -0.5, device=d)),
               ["Gemm(tb,swiglu,f16)"]),
    "residual": (_residual, lambda d: (rand(192, 256, device=d), rand(192, 512, device=d),
                                       rand(256, 512, scale=512 ** -0.5, device=d)), ["Gemm(tb,bias_full,f16)"]),
    "products": (_products, lambda d: (rand(136, 200, scale=200 ** -0.5, device=d), rand(200, 136, device=d),
                                       rand(136, 72, device=d)), ["Gemm(f16)", "Gemm(ta,f16)", "Gemm(tb,f16)"]),
    "sdpa_gqa_causal": (_sdpa_gqa_causal, lambda d: (rand(2, 8, 200, 64, device=d), rand(2, 2, 200, 64, device=d),
                                                     rand(2, 2, 200, 64, device=d)), ["Attention(causal=1"]),
    "sdpa_masked_d128": (_sdpa_masked, lambda d: (rand(1, 4, 136, 128, device=d), rand(1, 4, 136, 128, device=d),
                                                  rand(1, 4, 136, 128, device=d), rand(1, 1, 136, 136, device=d)),
                         ["Attention(causal=0"]),
    "rms_norm": (_rms, lambda d: (rand(100, 512, scale=4.0, device=d), rand(512, device=d)), ["RMSNorm(eps="]),  # eps 1e-6 as the graph spells it
    "conv3x3": (_conv, lambda d: (rand(2, 16, 12, 12, device=d), rand(32, 16, 3, 3, scale=0.1, device=d)), ["Gemm("]),
}


def reference(fn, args):
    """The graph in fp32 on the CPU, rounded to fp16: what each compiled output is held to."""
    outs = fn(*[a.detach().float().cpu() for a in args])
    return [o.to(F16) for o in (outs if isinstance(outs, tuple) else (outs,))]


def check_compiled(fn, args, want, **options):
    """fn compiled with ``options`` on ``args``: every output fp16 on the inputs' device within 1e-2 of the fp32
    reference, no input modified, the program holding an icode starting with each of ``want`` and only the f16
    variants of the tensor-core instructions."""
    before = [a.clone() for a in args]
    outs = megakittens.compile(fn, **options)(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    refs = reference(fn, args)
    assert len(outs) == len(refs), (len(outs), len(refs))
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == F16 and o.device == args[0].device, (k, o.dtype, o.device)
        err = rel_err(o, r)
        assert err <= 1e-2, f"output {k}: relative error {err:.3g} against fp32"
    for a, b in zip(args, before):
        assert torch.equal(a, b), "an input was modified"
    kinds = icodes()
    for w in want:
        assert any(k.startswith(w) for k in kinds), (w, kinds)
    for k in kinds:  # every tensor-core instruction of an fp16 graph is the f16 one
        if k.startswith(("Gemm", "Attention", "RMSNorm")):
            assert k.endswith("f16)"), kinds


@pytest.mark.parametrize("name", sorted(CASES))
def test_f16_case_matches_fp32(name):
    fn, build, want = CASES[name]
    check_compiled(fn, build("cpu"), want)


def test_f32_model_hint_names_both_16_bit_types():
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    with pytest.raises(Exception, match=r"\.to\(torch\.bfloat16\) or \.to\(torch\.float16\)"):
        megakittens.compile(lambda x, w: x @ w)(x, w)


def test_f16_tiny_hf_llama_matches_eager():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                                   num_key_value_heads=1, vocab_size=512, max_position_embeddings=256, head_dim=64)
    m = transformers.LlamaModel(cfg).to(F16).eval()
    ids = torch.randint(0, 512, (1, 40))
    with torch.no_grad():
        ref = m(ids, use_cache=False).last_hidden_state
        out = megakittens.compile(m)(ids, use_cache=False).last_hidden_state
    assert out.dtype == F16
    assert rel_err(out, ref) <= 2e-2
    kinds = icodes()
    for w in ("Attention(causal=1,scale=0.125,bshd=qkvo,f16)", "Gemm(tb,swiglu,f16)", "Gemm(tb,rope=64,f16)",
              "RMSNorm(eps=1e-06,f16)"):
        assert w in kinds, (w, kinds)


def test_f16_written_out_attention_with_fully_masked_rows_matches_eager():
    """Hugging Face's eager attention in fp16 with left padding: the mask is fp16's lowest (-65504) where a key is
    dropped, and the padded query rows drop every key. Eager's scores + mask round to fp16, so those rows average V;
    Attention's fp32 scores would weight V by the scores instead, unless -65504 stands for bf16's lowest
    ([Note: fp16 mask lowest], kernels/mk/itypes/attention.cuh), which it does."""
    B, H, S, D, pad_len = 2, 2, 32, 64, 16

    def attn(q, k, v, pad):
        keep = torch.ones(S, S, dtype=torch.bool).tril()[None, None] & pad[:, None, None, :].bool()
        mask = torch.zeros(B, 1, S, S, dtype=q.dtype).masked_fill(~keep, torch.finfo(q.dtype).min)
        w = torch.softmax((q @ k.transpose(-2, -1)) * D ** -0.5 + mask, dim=-1, dtype=torch.float32).to(q.dtype)
        return w @ v

    q, k, v = rand(B, H, S, D), rand(B, H, S, D), rand(B, H, S, D)
    pad = torch.ones(B, S, dtype=torch.long)
    pad[0, :pad_len] = 0
    with torch.no_grad():
        out = megakittens.compile(attn)(q, k, v, pad)
        ref = attn(q, k, v, pad)
    assert any(k.startswith("Attention(") and "mask=add" in k and k.endswith("f16)") for k in icodes()), icodes()
    assert rel_err(out[0, :, :pad_len], ref[0, :, :pad_len]) <= 1e-3  # the rows with every key dropped
    assert rel_err(out, ref) <= 1e-2


def test_f16_products_are_never_split_along_k():
    """K = 16384 whose halves sum to +-131072 (past fp16's 65504) and whole to 1: split-K would round each half to
    fp16 (inf); one Gemm accumulates in fp32 as eager does."""
    M = N = 128
    K = 16384
    x = torch.ones(M, K, dtype=F16)
    w = torch.cat([torch.full((K // 2, N), 16.0), torch.full((K // 2, N), -16.0)]).to(F16)
    w[0] += 1.0 / 1.0  # the whole sum: 1
    out = megakittens.compile(lambda x, w: x @ w)(x, w)
    assert icodes().count("Gemm(f16)") == 1 and not any("bias_full" in k for k in icodes()), icodes()
    assert torch.equal(out, torch.ones(M, N, dtype=F16)), out


def test_f16_mixed_operand_dtypes_name_both():
    """An fp16 weight times a bf16 activation (which eager refuses as well): the error names both dtypes."""
    w = rand(64, 64)
    x = rand(16, 64, dtype=torch.bfloat16)
    with pytest.raises(Exception, match="share one dtype .* got input A bfloat16 and input B float16"):
        megakittens.compile(lambda x, w: torch.ops.aten.mm.default(x, w))(x, w)


def _t5_clamp(h):  # Hugging Face T5's fp16-only clamp
    clamp_value = torch.where(torch.isinf(h).any(), torch.finfo(h.dtype).max - 1000, torch.finfo(h.dtype).max)
    return torch.clamp(h * 2, min=-clamp_value, max=clamp_value)


@pytest.mark.parametrize("with_inf", [False, True])
def test_f16_isinf_any_where_clamp_as_t5_uses_them(with_inf, device="cpu"):
    """isinf, any over every element, where of the result and clamp with tensor bounds (decompose.py) compile
    with no fallback; the clamp value follows the inf, and values past fp16's range clamp as eager's."""
    h = rand(8, 64, scale=4.0, device=device)
    h[0, 0] = 40000.0  # h * 2 overflows to inf: clamped
    if with_inf:
        h[3, 5] = float("-inf")
    out = megakittens.compile(_t5_clamp)(h)
    ref = _t5_clamp(h)
    assert torch.equal(out, ref), (out - ref).abs().max()


def test_f16_t5_encoder_compiles_whole():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.T5Config(d_model=128, d_ff=256, num_layers=2, num_heads=4, d_kv=32, vocab_size=512)
    m = transformers.T5EncoderModel(cfg).to(F16).eval()
    ids = torch.randint(0, 512, (2, 40))
    with torch.no_grad():
        ref = m(input_ids=ids).last_hidden_state
        out = megakittens.compile(m)(input_ids=ids).last_hidden_state
    assert rel_err(out, ref) <= 1e-2
