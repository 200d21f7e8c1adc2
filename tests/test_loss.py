"""Cross-entropy over integer targets on the CPU interpreter (megakittens/loss.py): F.cross_entropy / F.nll_loss
in each reduction, with class weights, an ignore_index inside the class range, bf16 scores, targets padded and
shifted as Hugging Face's causal-LM loss does, a whole LlamaForCausalLM called with labels; targets out of range
raise."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, rel_err


def _targets(n: int, c: int, ignore: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, c, (n,), generator=g)
    t[torch.randperm(n, generator=g)[: n // 4]] = ignore  # a quarter ignored
    return t


def _no_nll_left() -> None:
    """The loss ran as the one-hot product, the row sums and the weights' Embedding (fallback=None compiled the
    whole graph, so nothing ran eagerly)."""
    kinds = {str(n.itype) for n in mk_backend.dispatchers[-1].program.nodes}
    assert "Embedding" in kinds and "RowReduce(op=sum)" in kinds, kinds


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy(reduction, weighted):
    torch.manual_seed(0)
    n, c = 48, 100
    x = torch.randn(n, c) * 3
    t = _targets(n, c, -100)
    w = torch.rand(c) + 0.5 if weighted else None

    def f(x, t, w):
        return F.cross_entropy(x, t, weight=w, reduction=reduction)

    torch._dynamo.reset()
    out, ref = megakittens.compile(f)(x, t, w), f(x, t, w)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert not torch.isnan(out).any()
    assert rel_err(out, ref) <= 1e-5, (out, ref)
    _no_nll_left()


def test_nll_loss_ignore_index_in_range_and_bf16_scores():
    """ignore_index = 0 is a real class: its rows must drop out of the sum and the count; bf16 scores give a
    bf16 loss (computed in fp32, rounded once)."""
    torch.manual_seed(1)
    logp = torch.randn(64, 40).log_softmax(-1).to(BF16)
    t = _targets(64, 40, 0, seed=1)

    def f(logp, t):
        return F.nll_loss(logp, t, ignore_index=0)

    torch._dynamo.reset()
    out, ref = megakittens.compile(f)(logp, t), f(logp.float(), t)
    assert out.dtype == BF16 and rel_err(out, ref) <= 1e-2, (out, ref)
    assert rel_err(out, f(logp.float(), t.clamp(min=1))) > 1e-2  # the ignored rows make a difference


def test_every_target_ignored_gives_nan():
    x, t = torch.randn(8, 16), torch.full((8,), -100)

    def f(x, t):
        return F.cross_entropy(x, t)

    torch._dynamo.reset()
    assert torch.isnan(megakittens.compile(f)(x, t)) and torch.isnan(f(x, t))


@pytest.mark.parametrize("bad", [16, -3])
def test_target_out_of_range_raises(bad):
    x, t = torch.randn(8, 16), torch.randint(0, 16, (8,))
    t[5] = bad

    def f(x, t):
        return F.cross_entropy(x, t)

    torch._dynamo.reset()
    with pytest.raises(Exception, match="out of range"):
        megakittens.compile(f)(x, t)


def test_shifted_padded_labels():
    """Hugging Face's causal-LM loss: labels padded with ignore_index on the right, shifted by one, scores
    upcast to fp32 (transformers' ForCausalLMLoss)."""
    torch.manual_seed(2)
    logits = torch.randn(2, 24, 64).to(BF16)
    labels = torch.randint(0, 64, (2, 24))
    labels[1, 18:] = -100

    def f(logits, labels):
        shift = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
        return F.cross_entropy(logits.float().view(-1, 64), shift.view(-1), ignore_index=-100)

    torch._dynamo.reset()
    out, ref = megakittens.compile(f)(logits, labels), f(logits, labels)
    assert rel_err(out, ref) <= 1e-5, (out, ref)
    _no_nll_left()


def test_llama_for_causal_lm_with_labels():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to(BF16).eval()
    ids = torch.randint(0, 256, (2, 32))
    labels = ids.clone()
    labels[0, :5] = -100  # a prompt left out of the loss

    def f(ids, labels):
        out = model(input_ids=ids, labels=labels, use_cache=False)
        return out.loss, out.logits

    torch._dynamo.reset()
    with torch.no_grad():
        (loss, logits), (ref_loss, ref_logits) = megakittens.compile(f)(ids, labels), f(ids, labels)
    assert rel_err(logits, ref_logits) <= 2e-2
    assert rel_err(loss, ref_loss) <= 1e-2, (loss, ref_loss)
    _no_nll_left()
