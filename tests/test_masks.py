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


NAN, INF = float("nan"), float("inf")


def _eq_with_nans(out, ref) -> bool:
    return out.dtype == ref.dtype and torch.equal(out.isnan(), ref.isnan()) and \
        torch.equal(out.nan_to_num(0.0), ref.nan_to_num(0.0))


@pytest.mark.parametrize("case", ["scrub", "gt", "casts", "inf_equal", "logical_ints", "bf16_number"])
def test_comparisons_follow_eager_nan_and_rounding_rules(case):
    """A comparison with a NaN is false (but !=), equal infinities are equal, a bool of NaN is true, logical ops
    on integers take their truth, and a Python number is rounded to a bf16 operand's dtype (a breakage
    trial's findings: each gave a different answer from eager)."""
    x = torch.tensor([NAN, 1.0, -1.0, INF, -INF, 0.0])
    cases = {
        "scrub": (lambda x: x.masked_fill(x != x, 0.0), (x,)),
        "gt": (lambda x, y: y.masked_fill(x > 0, -5.0), (x, torch.ones(6))),
        "casts": (lambda x: ((x > 0).float(), (x == x).float(), x.bool().to(BF16), (x <= 0).float(),
                             (x >= 1).float(), (x < 0).float()), (x,)),
        "inf_equal": (lambda a, b: torch.where(a == b, 1.0, 5.0), (torch.tensor([INF, -INF, 1.0, NAN, INF]),
                                                                  torch.tensor([INF, -INF, 2.0, NAN, -INF]))),
        "logical_ints": (lambda i, j: (torch.logical_not(i).float(), torch.logical_or(i, j).float(),
                                       torch.logical_and(i, j).float()),
                         (torch.tensor([0, 1, 2, -1]), torch.tensor([0, 0, 3, -2]))),
        "bf16_number": (lambda x: (x.masked_fill(x == 0.1, 0.0), (x > 0.1).float()),
                        (torch.tensor([0.1, 0.5, 0.0999]).to(BF16),)),
    }
    f, args = cases[case]
    torch._dynamo.reset()
    outs, refs = megakittens.compile(f)(*args), f(*args)
    outs, refs = (outs, refs) if isinstance(outs, tuple) else ((outs,), (refs,))
    for out, ref in zip(outs, refs):
        assert _eq_with_nans(out, ref), (case, out, ref)


def test_large_integers_cast_or_poison_never_silently_off():
    """Integers that floating-point ops read are cast as eager casts them (y * i with i >= 2^24 is finite); a
    comparison of two integer tensors of 2^24 or more, or integer arithmetic past 2^24, gives NaN (fp32 could
    have rounded them), never a silently different number."""
    i, y = torch.tensor([2 ** 24, 2 ** 25 + 3, 7]), torch.ones(3)
    torch._dynamo.reset()
    out = megakittens.compile(lambda i, y: y * i)(i, y)
    assert torch.equal(out, y * i)
    cmp = lambda i, j, y: torch.where(i > j, y, -y)  # noqa: E731
    torch._dynamo.reset()
    out = megakittens.compile(cmp)(torch.tensor([2 ** 25 + 3, 5]), torch.tensor([2 ** 25, 3]), torch.ones(2))
    assert out[0].isnan() and out[1] == 1
    torch._dynamo.reset()
    out = megakittens.compile(lambda i, y: y * (i * i + 1 - i * i))(torch.tensor([4097, 3]), torch.ones(2))
    assert out[0].isnan() and out[1] == 1


def test_argmax_of_rows_with_nan_and_inf():
    """x.argmax(-1) in fp32 ids (float_ids.py): an inf maximum is found, a NaN is the maximum, an all -inf
    row gives 0, as eager."""
    x = torch.tensor([[0.0, NAN, 1.0], [0.0, INF, 1.0], [-INF, -INF, -INF], [2.0, 5.0, 5.0]])
    w = randn(3, 16)
    f = lambda x, w: F.embedding(x.argmax(-1), w)  # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(megakittens.compile(f)(x, w), f(x, w))


def test_overflowing_fill_value_and_bad_loss_inputs_are_refused():
    c = torch.tensor([True, False, True, False])
    torch._dynamo.reset()
    with pytest.raises(Exception, match="overflows torch.bfloat16"):
        megakittens.compile(lambda x, c: x.masked_fill(c, torch.finfo(torch.float32).min))(randn(4), c)
    torch._dynamo.reset()  # eager wants int64 targets and weights of the scores' dtype: the op stays, reported
    with pytest.raises(Exception, match="nll_loss_forward"):
        megakittens.compile(lambda x, t: F.cross_entropy(x, t))(torch.randn(4, 8), torch.tensor([1, 2, 3, 4],
                                                                                              dtype=torch.int32))


def test_label_smoothing_with_weights_and_edited_targets():
    """Label smoothing with class weights (a gather of the weights by the targets: an Embedding), targets
    edited by masked_fill / where / clamp before the loss (integer where in fp32)."""
    x, t, w = torch.randn(6, 8), torch.tensor([1, 2, -100, 3, 0, 7]), torch.rand(8) + 0.5
    fns = [lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.1),
           lambda x, t, w: F.cross_entropy(x, t.masked_fill(t < 2, -100)),
           lambda x, t, w: F.cross_entropy(x, torch.where(t < 2, -100, t), weight=w),
           lambda x, t, w: F.cross_entropy(x, t.clamp(min=0, max=5))]
    for f in fns:
        torch._dynamo.reset()
        out, ref = megakittens.compile(f)(x, t, w), f(x, t, w)
        assert rel_err(out, ref) <= 1e-5, (out, ref)
