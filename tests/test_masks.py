"""Boolean masks and integer tensors read by floating-point ops, on the CPU interpreter (megakittens/masks.py):
masked_fill with -inf, where with a NaN in the branch not taken, x * mask, a sum over a count, comparisons of two
tensors, cross_entropy's label smoothing, and the Hugging Face models whose masks are built this way (their
padding-mask variants); an Embedding reading a buffer row expanded over the batch (megakittens/float_ids.py)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, randn, rel_err
from test_llama import HIDDEN_TOL


def _same(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert torch.equal(out.isnan(), ref.isnan()) and torch.equal(out.isinf(), ref.isinf())
    ok = torch.isfinite(ref)
    assert rel_err(out[ok], ref[ok]) <= 1e-2


def _run(f, *args):
    torch._dynamo.reset()
    out = megakittens.compile(f)(*args)
    kinds = {str(n.itype) for n in mk_backend.dispatchers[-1].program.nodes}
    return out, f(*args), kinds


def test_masked_fill_minus_inf_then_softmax():
    x, m = randn(4, 8, 64), torch.rand(4, 1, 64)
    m[..., :3] = 0.9  # every row keeps something

    def f(x, m):
        return x.masked_fill(m < 0.5, float("-inf")).softmax(-1)

    out, ref, kinds = _run(f, x, m)
    assert (ref == 0).any()
    _same(out, ref)
    assert any("select" in k for k in kinds), kinds


def test_where_keeps_nan_of_the_branch_not_taken_out():
    x, m = torch.randn(16, 32), torch.randint(0, 2, (16, 32))

    def f(x, m):
        return torch.where(m.bool(), x.log(), 0.5 * x)  # log of a negative is NaN where m is 0 too

    out, ref, _ = _run(f, x, m)
    assert ref.isnan().any() and not ref.isnan().all()
    _same(out, ref)


def test_tensor_comparisons_and_scalar_branches():
    x, y = torch.randn(16, 48), torch.randn(16, 48)
    y[0, :5] = x[0, :5]  # ties

    def f(x, y):
        return (torch.where(x > y, x, y * 2), torch.where(x == y, 1.0, x), torch.where(x <= y, -1.0, 3.0),
                x * (x != y))

    outs, refs, _ = _run(f, x, y)
    for out, ref in zip(outs, refs):
        _same(out, ref)


def test_integer_mask_times_bf16_hidden_stays_bf16():
    x, m = randn(2, 24, 64), torch.ones(2, 24, dtype=torch.long)
    m[1, 17:] = 0

    def f(x, m):
        return x * m[..., None]

    out, ref, _ = _run(f, x, m)
    assert torch.equal(out, ref)


def test_sum_over_an_integer_count():
    x, m = torch.randn(4, 40), torch.rand(4, 40) > 0.3

    def f(x, m):
        return (x * m).sum(-1) / m.sum(-1), x.masked_fill(~m, 0).sum() / m.sum()

    outs, refs, _ = _run(f, x, m)
    for out, ref in zip(outs, refs):
        assert rel_err(out, ref) <= 1e-5


def test_label_smoothing():
    x, t = torch.randn(32, 50), torch.randint(0, 50, (32,))
    t[::5] = -100

    def f(x, t):
        return F.cross_entropy(x, t, label_smoothing=0.1)

    out, ref, _ = _run(f, x, t)
    assert rel_err(out, ref) <= 1e-5, (out, ref)


def test_embedding_of_an_expanded_buffer_row():
    """BigBird / Nystromformer: token type ids as a buffer row expanded over the batch (an integer expand, which
    no Copy writes): read in fp32."""
    w = randn(2, 64)
    buf = torch.zeros(1, 128, dtype=torch.long)
    buf[0, 60:] = 1

    def f(w, ids):
        return F.embedding(buf[:, : ids.shape[1]].expand(ids.shape[0], ids.shape[1]), w)

    out, ref, _ = _run(f, w, torch.randint(0, 2, (3, 100)))
    assert torch.equal(out, ref)


HF = {  # family: (config, model, config kwargs); the masked variant builds its mask with where / masked_fill
    "gemma2": ("Gemma2Config", "Gemma2Model", dict(num_key_value_heads=2, head_dim=32, sliding_window=16)),
    "bloom": ("BloomConfig", "BloomModel", dict(n_layer=2, n_head=4)),
    "mpt": ("MptConfig", "MptModel", dict(d_model=128, n_heads=4, n_layers=2, max_seq_len=128, expansion_ratio=2)),
    "squeezebert": ("SqueezeBertConfig", "SqueezeBertModel", dict(embedding_size=128)),
    "deberta_v2": ("DebertaV2Config", "DebertaV2Model", {}),
    "big_bird": ("BigBirdConfig", "BigBirdModel", dict(attention_type="original_full")),
}


@pytest.mark.parametrize("family", sorted(HF))
def test_hf_models_with_a_padding_mask(family):
    transformers = pytest.importorskip("transformers")
    cfg_name, model_name, extra = HF[family]
    if not hasattr(transformers, cfg_name):
        pytest.skip(f"transformers {transformers.__version__} has no {cfg_name}")
    shared = dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=128)
    cfg = getattr(transformers, cfg_name)(**{**shared, **extra})
    torch.manual_seed(0)
    model = getattr(transformers, model_name)(cfg).to(BF16).eval()
    ids = torch.randint(3, 512, (2, 24))
    am = torch.ones(2, 24, dtype=torch.long)
    am[1, 17:] = 0
    torch._dynamo.reset()
    with torch.no_grad():
        out = megakittens.compile(model)(ids, attention_mask=am).last_hidden_state
        ref = model(ids, attention_mask=am).last_hidden_state
    keep = am.bool()
    assert not out[keep].isnan().any()
    assert rel_err(out[keep], ref[keep]) <= HIDDEN_TOL, family
