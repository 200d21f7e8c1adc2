"""The softmax / SDPA math path (megakittens/decompose.py, megakittens/sdpa_math.py) on the H200: the RowReduce
max body (NaN-propagating), softmax, and the SDPA cases of tests/test_sdpa_math.py with CUDA tensors (where
PyTorch hands SDPA to its flash, efficient or cuDNN ops, not the CPU one), as one megakernel, no fallback."""
from __future__ import annotations

import math

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import rel_err
from test_gpu_llama import _compile_no_fallback, _gpu_ok, _megakernel_launches
from test_sdpa_math import CASES, _sdpa


def _need_gpu():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")


def _rand(*shape, scale=1.0):
    return (torch.randn(*shape, device="cuda") * scale).to(torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_row_max_and_softmax_on_the_gpu(dtype):
    _need_gpu()
    x = (torch.randn(4, 300, 1000, device="cuda") * 4).to(dtype)
    x[1, 5, 999] = float("nan")
    x[2, 7] = -math.inf
    fn = lambda x: (torch.softmax(x, -1), x.amax(-1))  # noqa: E731
    (p, m), (p_ref, m_ref) = _compile_no_fallback(fn)(x), fn(x)
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
    for out, ref in ((p, p_ref), (m, m_ref)):
        assert torch.equal(out.isnan(), ref.isnan()) and torch.equal(out.isinf(), ref.isinf())
        assert rel_err(out[ref.isfinite()], ref[ref.isfinite()]) <= 1e-2
    keep = m_ref.isfinite()
    assert torch.equal(m[keep], m_ref[keep])  # a max is exact: one of the inputs


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
def test_sdpa_math_on_the_gpu(case):
    _need_gpu()
    qs, ks, vs, ms, kw, attention = CASES[case]
    args = [_rand(*qs), _rand(*ks), _rand(*vs)] + ([_rand(*ms, scale=2.0)] if ms is not None else [])
    fn = _sdpa(**kw)
    compiled = _compile_no_fallback(fn)
    out = compiled(*args)
    assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
    ref64 = fn(*[a.double().cpu() for a in args])  # on the CPU: CUDA's SDPA refuses a mask with is_causal
    assert rel_err(out.cpu(), ref64) <= 1e-2, rel_err(out.cpu(), ref64)
    assert any(n.itype.startswith("Attention") for n in mk_backend.dispatchers[-1].program.nodes) == attention
    n, names = _megakernel_launches(compiled, *args)
    assert n == 1, names


@pytest.mark.gpu
def test_hf_t5_encoder_on_the_gpu():
    """T5's relative position bias reaches SDPA as an additive mask: every attention on the math path."""
    _need_gpu()
    transformers = pytest.importorskip("transformers")
    cfg = transformers.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=4, num_heads=8)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.T5EncoderModel(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (4, 512), device="cuda")
    fwd = lambda i: model(input_ids=i).last_hidden_state  # noqa: E731
    with torch.no_grad():
        h = _compile_no_fallback(fwd)(ids)
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        assert rel_err(h, fwd(ids)) <= 2e-2
