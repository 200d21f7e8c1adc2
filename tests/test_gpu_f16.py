"""float16 on the megakernel: tests/test_f16.py's cases (Gemm with every epilogue, Attention with GQA, causal
and an additive mask, RMSNorm, a convolution) in one graph against fp32, both queue modes, clusters 1 and 2; large fp16
products against cuBLAS; a tiny Hugging Face Llama in fp16 against eager."""
from __future__ import annotations

import pytest
import torch

import megakittens
from common import rel_err
from test_f16 import CASES, F16, check_compiled, icodes, rand
from test_f16 import test_f16_isinf_any_where_clamp_as_t5_uses_them as t5_clamp_case

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("cluster,global_queue", [(1, False), (1, True), (2, False)])
def test_f16_cases_on_gpu(cluster, global_queue):
    """Every case of test_f16.py in one compiled graph (one kernel build per configuration)."""
    names = sorted(CASES)
    built = {n: CASES[n][1]("cuda") for n in names}

    def every_case(*flat):
        outs, k = [], 0
        for n in names:
            fn, nargs = CASES[n][0], len(built[n])
            o = fn(*flat[k:k + nargs])
            outs += list(o) if isinstance(o, tuple) else [o]
            k += nargs
        return tuple(outs)

    check_compiled(every_case, [a for n in names for a in built[n]], [w for n in names for w in CASES[n][2]],
                   cluster_size=cluster, global_work_queue=global_queue)


@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (1000, 3000, 512), (4096, 4096, 4096)])
def test_f16_gemm_against_cublas(shape):
    """fp16 operands of magnitude ~8 (products past bf16's 8-bit mantissa, inside fp16's range): as close to
    fp32 as cuBLAS's fp16 product is."""
    M, N, K = shape
    a, b = rand(M, K, scale=8.0, device="cuda"), rand(K, N, scale=8.0 / K ** 0.5, device="cuda")
    out = megakittens.compile(lambda a, b: a @ b)(a, b)
    ref = a.float() @ b.float()
    assert icodes()[-1] == "Gemm(f16)"
    err, cublas = rel_err(out, ref), rel_err(a @ b, ref)
    assert err <= max(2 * cublas, 1e-3), (err, cublas)


def test_f16_hf_llama_on_gpu():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=512, intermediate_size=1024, num_hidden_layers=2, num_attention_heads=8,
                                   num_key_value_heads=2, vocab_size=1024, max_position_embeddings=512)
    m = transformers.LlamaModel(cfg).to(F16).cuda().eval()
    ids = torch.randint(0, 1024, (2, 200), device="cuda")
    with torch.no_grad():
        ref = m.float()(ids, use_cache=False).last_hidden_state
        m.to(F16)
        eager = m(ids, use_cache=False).last_hidden_state
        out = megakittens.compile(m)(ids, use_cache=False).last_hidden_state
    assert out.dtype == F16
    assert rel_err(out, ref) <= max(2 * rel_err(eager, ref), 2e-2), (rel_err(out, ref), rel_err(eager, ref))
    assert any(k.startswith("Attention(") and k.endswith("f16)") for k in icodes()), icodes()


@pytest.mark.parametrize("with_inf", [False, True])
def test_f16_t5_clamp_on_gpu(with_inf):
    t5_clamp_case(with_inf, device="cuda")
