"""Softmax and the SDPA calls Attention cannot take (megakittens/decompose.py, megakittens/sdpa_math.py), on the
CPU interpreter: softmax / log_softmax over the last dim as one Softmax row instruction (fp32), amax as a
RowReduce max; SDPA with a runtime mask Attention cannot take, a head dim above 128 or value's head dim unlike
query's as two Gemms around that softmax (head dims below 128 run as Attention, zero-padded: test_attention.py);
3-D SDPA as a batch of one on the Attention path; baddbmm with alpha / beta; a mask indexed by aranges (Hugging
Face's padding mask) as a slice."""
from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, randn, rel_err


def kinds():
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


def assert_gpu_bodies():
    """Every node of the last program has a GPU body: its megakernel source generates (no NVRTC needed)."""
    if getattr(megakittens._C, "gpu_runtime_missing", "x"):
        return  # built without the GPU runtime
    assert megakittens._C.gpu_missing_bodies(mk_backend.dispatchers[-1].program) == []


@pytest.mark.parametrize("fn", [lambda x: torch.softmax(x, -1), lambda x: F.log_softmax(x, -1),
                                lambda x: torch.softmax(x, -1, dtype=torch.float32), lambda x: torch.softmax(x.float() * 3, -1),
                                lambda x: torch.amax(x, -1) + torch.amax(x * 2, -1, keepdim=True)[..., 0]],
                         ids=["softmax", "log_softmax", "softmax_fp32_out", "softmax_fp32_in", "amax"])
def test_softmax_and_row_max_match_eager(fn):
    x = randn(3, 40, 72, scale=4.0)
    x[1, 5, 7] = float("nan")  # a NaN row stays NaN (amax propagates it), the others are untouched
    x[2, 6] = -math.inf        # a row of -inf: NaN through softmax, -inf through amax, as eager
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert torch.equal(out.isnan(), ref.isnan()) and torch.equal(out.isinf(), ref.isinf())
    finite = ref.isfinite()
    assert finite.sum() > 0.9 * ref.numel() and rel_err(out[finite], ref[finite]) <= 1e-2, rel_err(out[finite], ref[finite])
    if "amax" in fn.__code__.co_names:
        assert sum(k.startswith("RowReduce(op=max") for k in kinds()) == 2, kinds()
    else:  # one row instruction, beside at most a cast and the fp32_in case's scaling
        assert sum(k.startswith("Softmax") for k in kinds()) == 1 and len(kinds()) <= 3, kinds()


def _sdpa(**kw):
    return lambda q, k, v, *m: F.scaled_dot_product_attention(q, k, v, *m, **kw)


CASES = {  # name: (q shape, k shape, v shape, mask shape or None, kwargs, takes Attention)
    # Masks with head dims up to 128 take Attention's additive mask (80: zero-padded to 128); larger head dims
    # the score-matrix math.
    "d80_padding_mask": ((2, 2, 60, 80), (2, 2, 60, 80), (2, 2, 60, 80), (2, 1, 1, 60), {}, True),
    "d160_padding_mask": ((2, 2, 60, 160), (2, 2, 60, 160), (2, 2, 60, 160), (2, 1, 1, 60), {}, False),
    "d128_odd_keys_mask": ((1, 2, 30, 128), (1, 2, 77, 128), (1, 2, 77, 128), (1, 2, 30, 77), {}, True),
    "d80_full_ragged_keys": ((2, 4, 100, 80), (2, 4, 100, 80), (2, 4, 100, 80), None, {}, True),
    "d160_full_ragged_keys": ((2, 4, 100, 160), (2, 4, 100, 160), (2, 4, 100, 160), None, {}, False),
    "d80_causal": ((1, 4, 64, 80), (1, 4, 64, 80), (1, 4, 64, 80), None, {"is_causal": True}, True),
    "d256_gqa_causal": ((1, 4, 48, 256), (1, 1, 48, 256), (1, 1, 48, 256), None, {"is_causal": True, "enable_gqa": True}, False),
    "dv128_causal": ((2, 2, 100, 64), (2, 2, 100, 64), (2, 2, 100, 128), None, {"is_causal": True}, False),
    "padding_mask": ((2, 4, 72, 64), (2, 4, 72, 64), (2, 4, 72, 64), (2, 1, 1, 72), {}, True),
    "head_mask_gqa_sq_ne_sk": ((2, 4, 24, 64), (2, 2, 40, 64), (2, 2, 40, 64), (2, 4, 24, 40), {"enable_gqa": True}, True),
    "query_mask_gqa": ((1, 6, 32, 128), (1, 2, 32, 128), (1, 2, 32, 128), (32, 32), {"enable_gqa": True, "scale": 0.3}, True),
    "three_d_causal": ((4, 100, 64), (4, 100, 64), (4, 100, 64), None, {"is_causal": True}, True),
    "two_d": ((100, 64), (100, 64), (100, 64), None, {}, True),
    "three_d_dv": ((4, 40, 64), (4, 40, 64), (4, 40, 128), None, {}, False),
    "head_mask_3d": ((2, 4, 40, 64), (2, 4, 40, 64), (2, 4, 40, 64), (4, 40, 40), {}, True),
    "head_mask_3d_gqa": ((2, 4, 40, 64), (2, 2, 40, 64), (2, 2, 40, 64), (4, 40, 40), {"enable_gqa": True}, True),
    "mask_and_causal": ((2, 4, 40, 64), (2, 4, 40, 64), (2, 4, 40, 64), (40, 40), {"is_causal": True}, True),
    "batch_broadcast_kv": ((3, 4, 40, 64), (1, 4, 40, 64), (1, 4, 40, 64), None, {}, True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sdpa_math_matches_eager(case):
    qs, ks, vs, ms, kw, attention = CASES[case]
    args = [randn(*qs), randn(*ks), randn(*vs)]
    if ms is not None:
        args.append(randn(*ms, scale=2.0))
    fn = _sdpa(**kw)
    out, ref = megakittens.compile(fn)(*args), fn(*args)
    ref64 = fn(*[a.double() for a in args])
    assert out.shape == ref.shape and out.dtype == BF16
    # bf16 scores and probabilities: within 2x eager's own distance from the fp64 result, and 1e-2
    assert rel_err(out, ref64) <= max(2 * rel_err(ref, ref64), 5e-3) and rel_err(out, ref) <= 1e-2
    has_attention = any(k.startswith("Attention") for k in kinds())
    assert has_attention == attention, kinds()
    assert has_attention or sum(k.startswith("Gemm") for k in kinds()) == 2, kinds()
    assert_gpu_bodies()


@pytest.mark.parametrize("D", [64, 160])
@pytest.mark.parametrize("how", ["bool_input", "eq_scalar", "gt_scalar", "float_cast", "not_ne"])
def test_boolean_masks_from_inputs_casts_and_comparisons(how, D):
    """Boolean masks reach Attention's additive mask (head dim 64) or the math path (160) however they are
    built: a bool graph input, comparisons of an int mask with a number, a float mask cast to bool, not / ne;
    True = attend, as SDPA reads them."""
    q, k, v = randn(2, 2, 24, D), randn(2, 2, 24, D), randn(2, 2, 24, D)
    am = torch.ones(2, 24, dtype=torch.long)
    am[1, 17:] = 0
    build = {
        "bool_input": lambda m: m,
        "eq_scalar": lambda m: m == 1,
        "gt_scalar": lambda m: m > 0,
        "float_cast": lambda m: m.to(BF16).bool(),
        "not_ne": lambda m: ~(m != 1),
    }[how]
    mask = am.bool() if how == "bool_input" else am
    fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, build(m)[:, None, None, :])  # noqa: E731
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = megakittens.compile(fn)(q, k, v, mask)
    math_path = any(issubclass(w.category, megakittens.MathAttentionWarning) for w in caught)
    assert math_path == (D == 160) and any(k.startswith("Attention") for k in kinds()) == (D == 64), kinds()
    ref = fn(q.double(), k.double(), v.double(), mask)
    assert rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    assert_gpu_bodies()


def test_dry_run_runs_a_math_path_graph():
    """dry_run runs the captured graph eagerly: the math path keeps the memory order of the SDPA output it
    replaces ((B, S, H, D) from PyTorch's fused kernels), so the model's transpose + view after it stay valid."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2)
    cfg._attn_implementation = "sdpa"
    model = transformers.LlamaModel(cfg).to(BF16).eval()
    ids, am = torch.randint(0, 512, (2, 37)), torch.ones(2, 37, dtype=torch.long)
    am[0, 30:] = 0
    fwd = lambda i, a: model(input_ids=i, attention_mask=a, use_cache=False).last_hidden_state  # noqa: E731
    with torch.no_grad():
        out, ref = megakittens.compile(fwd, dry_run=True)(ids, am), fwd(ids, am)
    keep = am.bool()  # the captured graph, run eagerly: its math path, not PyTorch's fused SDPA
    assert rel_err(out[keep], ref[keep]) <= 1e-2


def test_head_dims_off_the_tma_rows_name_the_rule():
    """Head dims above 128 that are not multiples of 8 fit neither Attention (not even zero-padded) nor the math's
    Gemms: the error names the head dim, with or without a mask; a mask Attention cannot take (fp32 for a bf16
    query) names the rule."""
    q = randn(1, 2, 32, 132)
    with pytest.raises(Exception, match=r"head dim D must be 64 or 128, got D=132"):
        megakittens.compile(_sdpa())(q, q, q)
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"head dim D must be 64 or 128, got D=132"):
        megakittens.compile(_sdpa())(q, q, q, randn(1, 1, 32, 32))
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"additive 4-D mask .* of the query's dtype \(bfloat16\), got attn_mask = a float32 tensor"):
        megakittens.compile(_sdpa())(q, q, q, randn(1, 1, 32, 32).float())


@pytest.mark.parametrize("D", [64, 80, 160])
def test_fully_masked_rows_give_zeros(D):
    """A query row whose keys are all masked (-inf) comes out 0, as SDPA's math backend (_safe_softmax) gives,
    not NaN, through Attention's mask (head dim 64; 80 zero-padded) and the math path (160); the other rows are
    unaffected."""
    q, k, v = randn(2, 2, 32, D), randn(2, 2, 32, D), randn(2, 2, 32, D)
    mask = torch.zeros(2, 1, 32, 32, dtype=BF16)
    mask[0, :, 3:, 20:] = -math.inf  # batch 0: rows >= 3 see keys < 20 only
    mask[1, :, 5] = -math.inf        # batch 1: row 5 sees nothing
    out = megakittens.compile(_sdpa())(q, k, v, mask)
    assert torch.isfinite(out).all() and out[1, :, 5].abs().max() == 0
    keep = torch.ones(2, 32, dtype=torch.bool)
    keep[1, 5] = False
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), mask.double())
    assert rel_err(out.transpose(1, 2)[keep], ref.transpose(1, 2)[keep]) <= 1e-2


def test_baddbmm_with_alpha_and_beta():
    x, a, b = randn(3, 16, 24), randn(3, 16, 32), randn(3, 32, 24)
    fn = lambda x, a, b: torch.baddbmm(x, a, b, beta=0.5, alpha=0.125)  # noqa: E731
    out, ref = megakittens.compile(fn)(x, a, b), fn(x.double(), a.double(), b.double())
    assert rel_err(out, ref) <= 1e-2


def test_mask_indexed_by_aranges_becomes_a_slice():
    """mask[batch_arange[:, None, None, None], kv_arange[None, None, None, :]] (Hugging Face's padding mask
    function): constant aranges, so a slice of the mask seen with size-1 dims between, not an index op."""
    def fn(m, x):
        b = torch.arange(m.shape[0])[:, None, None, None]
        kv = torch.arange(1, m.shape[1])[None, None, None, :]
        return x + m[b, kv].to(x.dtype)
    m, x = randn(2, 17), randn(2, 3, 5, 16)
    out, ref = megakittens.compile(fn)(m, x), fn(m, x)
    assert rel_err(out, ref) <= 1e-2
    assert not any("index" in k.lower() for k in kinds()), kinds()


@pytest.mark.parametrize("family", ["t5_encoder", "t5_encoder_padded", "gemma_head_dim_256", "phi3_head_dim_96"])
def test_hf_models_on_the_math_path_match_eager(family):
    """T5's encoder (its relative position bias is an additive SDPA mask: Attention's mask at head dim 64),
    Gemma at head dim 256 with one KV head (every attention on the math path), Phi-3 at head dim 96 (Attention,
    zero-padded to 128); tiny configs, random bf16 weights."""
    transformers = pytest.importorskip("transformers")
    ids = torch.randint(0, 500, (2, 64))
    kw = {}
    if family == "t5_encoder_padded":  # T5's mask: where(padding mask, position bias, finfo.min), cloned
        kw["attention_mask"] = torch.ones(2, 64, dtype=torch.long)
        kw["attention_mask"][1, 50:] = 0
    if family.startswith("t5_encoder"):
        cfg = transformers.T5Config(vocab_size=512, d_model=256, d_kv=64, d_ff=512, num_layers=2, num_heads=4)
        model_cls = transformers.T5EncoderModel
    elif family == "gemma_head_dim_256":
        cfg = transformers.GemmaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                       num_attention_heads=2, num_key_value_heads=1, head_dim=256)
        model_cls = transformers.GemmaModel
    else:
        cfg = transformers.Phi3Config(vocab_size=512, hidden_size=384, intermediate_size=512, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=4, pad_token_id=0)
        model_cls = transformers.Phi3Model
    cfg._attn_implementation = "sdpa"
    model = model_cls(cfg).to(BF16).eval()
    fwd = lambda i: model(input_ids=i, **kw).last_hidden_state  # noqa: E731
    with torch.no_grad():
        h, h_ref = megakittens.compile(fwd)(ids), fwd(ids)
    keep = kw["attention_mask"].bool() if kw else torch.ones(2, 64, dtype=torch.bool)
    assert rel_err(h[keep], h_ref[keep]) <= 2e-2, rel_err(h[keep], h_ref[keep])
    if family.startswith("t5"):  # head dim 64: Attention with the bias as its additive mask
        assert sum(k.startswith("Attention") and "mask=add" in k for k in kinds()) == 2, kinds()
        assert not any(k.startswith("Softmax") for k in kinds()), kinds()
    elif family.startswith("phi3"):
        assert sum(k.startswith("Attention") for k in kinds()) == 2, kinds()
        assert not any(k.startswith("Softmax") for k in kinds()), kinds()
    else:
        assert not any(k.startswith("Attention") for k in kinds()) and sum(k.startswith("Softmax(safe)") for k in kinds()) == 2
    assert_gpu_bodies()


def test_fallback_eager_keeps_pytorch_sdpa_for_what_attention_cannot_take():
    """With fallback="eager" the SDPA calls Attention cannot take (Dv != Dq, a mask at head dim 160) run as
    PyTorch's own SDPA between megakernels (its fused kernels, no score matrix), not as the math path, and
    nothing warns; a masked SDPA at head dim 64 runs in the megakernel (Attention's mask)."""
    q, v, m = randn(1, 2, 64, 64), randn(1, 2, 64, 128), randn(1, 1, 64, 64)
    q160 = randn(1, 2, 64, 160)
    fn = lambda q, v, m, q160: (F.scaled_dot_product_attention(q, q, v) * 2,  # noqa: E731
                                F.scaled_dot_product_attention(q160, q160, q160, attn_mask=m) * 2,
                                F.scaled_dot_product_attention(q, q, q, attn_mask=m) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        out = megakittens.compile(fn, fallback="eager")(q, v, m, q160)
    for o, r in zip(out, fn(q, v, m, q160)):
        assert rel_err(o, r) <= 1e-2
    eager = sorted(t for _, t, _ in mk_backend.partitionings[-1].eager)
    assert eager.count("aten._scaled_dot_product_flash_attention_for_cpu.default") == 1, eager
    assert any(k.startswith("Attention") and "mask=add" in k for d in mk_backend.dispatchers
               for k in [n.itype for n in d.program.nodes]), eager
