"""Rank-5 tensors models build (megakittens/rank5.py), rewritten in four dims on the CPU interpreter: a
rank-5 view read through selects of one dim (BLOOM's fused q / k / v) and Hugging Face's repeat_kv read by
a matmul."""
from __future__ import annotations

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import BF16, randn, rel_err


def test_rank5_view_read_by_selects():
    """x.view(B, S, H, 3, D)[..., i, :]: the view merged to (B, S, H, 3 D), each select a slice of it."""
    def f(x, w):
        B, S, _ = x.shape
        qkv = (x @ w).view(B, S, 4, 3, 32)
        q, k, v = qkv[..., 0, :], qkv[..., 1, :], qkv[..., 2, :]
        return q * k + v.sin()

    x, w = randn(2, 24, 64), randn(64, 384, scale=0.125)
    out, ref = megakittens.compile(f)(x, w), f(x, w)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2
    assert not any(k.startswith("Copy") for k in (n.itype for n in mk_backend.dispatchers[-1].program.nodes))


@pytest.mark.parametrize("read", ["unbind_sdpa", "index"])
def test_rank5_view_permuted_then_selected(read):
    """timm's attention: qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4) read by unbind(0) (or qkv[i]): each
    select a slice of the merged view, then the permute of the other dims."""
    B, N, H, D = 2, 17, 3, 64

    def f(x, w):
        qkv = (x @ w).reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)
        if read == "index":
            return (qkv[0] * qkv[1] + qkv[2]).sum(-1)
        q, k, v = qkv.unbind(0)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, H * D)

    x, w = randn(B, N, H * D), randn(H * D, 3 * H * D, scale=0.05)
    torch._dynamo.reset()
    out, ref = megakittens.compile(f)(x, w), f(x, w)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


def test_rank5_view_read_by_selects_and_a_slice_copy():
    """Falcon's grouped q / k / v: x.view(B, S, Hk, G + 2, D); the queries [..., :-2, :] flattened to
    (B, S, Hk G, D) (a copy of a slice of the merged view), k and v selects of it."""
    def f(x, w):
        B, S, _ = x.shape
        grouped = (x @ w).view(B, S, 2, -1, 32)
        q = grouped[..., :-2, :].flatten(-3, -2)
        k, v = grouped[..., -2, :], grouped[..., -1, :]
        return torch.cat([q, k * 2.0, v.sin()], dim=2)

    x, w = randn(2, 24, 64), randn(64, 2 * 5 * 32, scale=0.125)
    out, ref = megakittens.compile(f)(x, w), f(x, w)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


def test_rank6_window_partition_and_reverse():
    """Swin's window partition (B, H, W, C) -> (B H/w W/w, w, w, C) through a rank-6 view, transpose and copy,
    and its reverse: the same copy through 4 dims (megakittens/rank5.py flatten_high_rank_copies), exact."""
    def partition(x, w=4):
        B, H, W, C = x.shape
        return x.view(B, H // w, w, W // w, w, C).permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w, w, C)

    def reverse(win, B=2, H=8, W=12, w=4):
        C = win.shape[-1]
        return win.view(B, H // w, W // w, w, w, C).permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, C)

    x = randn(2, 8, 12, 32)
    fn = lambda x: reverse(partition(x) * 2.0) + x  # noqa: E731
    out = megakittens.compile(fn)(x)
    assert torch.equal(out, fn(x))


def test_rank5_expand_copy():
    """A mask unsqueezed and expanded over windows through 5 dims, copied and viewed back to 4 (Swin)."""
    def fn(m, s):
        return m.unsqueeze(0).expand(2, -1, -1, -1, -1).contiguous().view(8, 1, 16, 16) + s

    m, s = randn(4, 1, 16, 16), randn(8, 1, 16, 16)
    out = megakittens.compile(fn)(m, s)
    assert torch.equal(out, fn(m, s))


def test_rank5_view_selected_along_its_last_dim_keeps_the_error():
    def f(x):
        return x.view(2, 3, 4, 5, 8)[..., 1] * 2.0

    with pytest.raises(Exception, match=r"rank <= 4|rank-5"):
        megakittens.compile(f)(randn(2, 3, 4, 40))


def test_repeat_kv_read_by_a_matmul():
    """repeat_kv (unsqueeze -> expand to rank 5 -> reshape) of a transposed (B, S, Hk, D) key: copied in four
    dims, then multiplied."""
    def f(q, k):
        B, Hk, S, D = k.shape
        k = k[:, :, None].expand(B, Hk, 3, S, D).reshape(B, Hk * 3, S, D)
        return (q @ k.transpose(-2, -1)).tanh()

    q, k = randn(2, 6, 16, 64), randn(2, 16, 2, 64).transpose(1, 2)
    out, ref = megakittens.compile(f)(q, k), f(q, k)
    assert rel_err(out, ref) <= 1e-2


transformers = pytest.importorskip("transformers")


def _hf_matches_eager(cfg, model_cls):
    torch.manual_seed(0)
    m = model_cls(cfg).eval().to(BF16)
    ids = torch.randint(0, cfg.vocab_size, (2, 40))
    with torch.no_grad():
        out, ref = megakittens.compile(m)(ids).last_hidden_state, m(ids).last_hidden_state
    assert rel_err(out, ref) <= 2e-2
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


def test_hf_bloom_matches_eager():
    """BLOOM (eager attention only: ALiBi through baddbmm, its fused q / k / v viewed in rank 5)."""
    _hf_matches_eager(transformers.BloomConfig(hidden_size=256, n_layer=2, n_head=4, vocab_size=256),
                      transformers.BloomModel)


def test_hf_falcon_new_decoder_architecture_matches_eager():
    """Falcon's new decoder (GQA through its grouped fused q / k / v, viewed in rank 5)."""
    cfg = transformers.FalconConfig(vocab_size=512, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                    new_decoder_architecture=True, num_kv_heads=2, alibi=False)
    cfg._attn_implementation = "sdpa"
    kinds = _hf_matches_eager(cfg, transformers.FalconModel)
    assert sum(k.startswith("Attention(causal=1") for k in kinds) == 2, kinds


def test_dry_run_runs_the_graph_as_captured(capsys):
    """dry_run's eager run takes the captured graph: the rewritten BLOOM graph views a transpose as the tracer
    reads it, which eager's view refuses (found by a breadth trial)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.BloomModel(transformers.BloomConfig(hidden_size=128, n_layer=1, n_head=4,
                                                             vocab_size=256)).to(BF16).eval()
    ids = torch.randint(0, 256, (2, 24))
    torch._dynamo.reset()
    with torch.no_grad():
        out = megakittens.compile(model, dry_run=True)(ids).last_hidden_state
        ref = model(ids).last_hidden_state
    assert "support report" in capsys.readouterr().out
    assert rel_err(out, ref) <= 1e-2  # the captured graph's decompositions (LayerNorm) run as PyTorch ops


@pytest.mark.parametrize("eq,shapes", [("ibnd,jbnd->bnij", [(24, 2, 4, 32), (24, 2, 4, 32)]),
                                        ("ibnd,hnd->ibh", [(24, 2, 4, 32), (128, 4, 32)]),
                                        ("ijbs,ibns->bnij", [(24, 24, 2, 2), (24, 2, 4, 2)]),
                                        ("bnij,jbnd->ibnd", [(2, 4, 24, 24), (24, 2, 4, 32)])])
def test_einsum_through_rank5_views(eq, shapes):
    """XLNet's einsums: torch lowers them to bmm through rank-5 permuted views with unit dims, viewed back to
    4 dims and unsqueezed again (megakittens/rank5.py: the chain's source found past the strided 4-D views)."""
    a, b = randn(*shapes[0]), randn(*shapes[1])
    fn = lambda a, b: torch.einsum(eq, a, b)  # noqa: E731
    torch._dynamo.reset()
    out, ref = megakittens.compile(fn)(a, b), fn(a, b)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


def test_hf_xlnet_matches_eager():
    """XLNet: its einsums, index_select by a constant arange (fold.py: a slice), input_ids.t().contiguous()
    read by the Embedding in fp32 (float_ids.py)."""
    transformers = pytest.importorskip("transformers")
    _hf_matches_eager(transformers.XLNetConfig(vocab_size=256, d_model=128, n_layer=2, n_head=4, d_inner=256),
                      transformers.XLNetModel)


def _window_mask(nw_h: int, nw_w: int, w: int) -> torch.Tensor:
    """A shifted-window mask (torchvision's Swin): region ids of a padded map, their pairwise differences per
    window, -100 where they differ: (nW, w * w, w * w)."""
    ids = torch.zeros(nw_h * w, nw_w * w)
    ids[:, -w // 2:] += 1
    ids[-w // 2:, :] += 2
    ids = ids.view(nw_h, w, nw_w, w).permute(0, 2, 1, 3).reshape(nw_h * nw_w, w * w)
    d = ids.unsqueeze(1) - ids.unsqueeze(2)
    return d.masked_fill(d != 0, -100.0).masked_fill(d == 0, 0.0)


def test_window_mask_added_in_rank5():
    """torchvision's Swin: a mask built from constants inside forward, added to the scores viewed (B, nW, H,
    N, N) as a (1, nW, 1, N, N) constant, then viewed back (rank5.merge_high_rank_pointwise: the last two dims
    merged, the add run in 4 dims)."""
    B, nW, H, w = 2, 4, 3, 4
    N = w * w

    def f(attn):
        m = _window_mask(2, 2, w).to(attn.dtype)
        a = attn.view(attn.size(0) // nW, nW, H, N, N) + m.unsqueeze(1).unsqueeze(0)
        return torch.softmax(a.view(-1, H, N, N), -1)

    x = randn(B * nW, H, N, N)
    out, ref = megakittens.compile(f)(x), f(x)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2
    assert (out.float() < 1e-6).sum() > 0  # the mask reached the softmax: masked positions vanish


def test_rank5_pointwise_ops_of_views():
    """Pointwise ops whose operands are rank-5 views of 4-D tensors and a broadcast parameter (each merged to
    the same 4 dims), a unary op on a rank-5 view, and a rank-5 result viewed back to 4 dims."""
    def f(x, y, g):
        a = x.view(2, 3, 4, 8, 16) * torch.sigmoid(y.view(2, 3, 4, 8, 16)) + g.view(1, 3, 1, 1, 16)
        return torch.relu(a).view(6, 4, 8, 16) - x

    x, y, g = randn(6, 4, 8, 16), randn(6, 4, 8, 16), randn(3, 16)
    out, ref = megakittens.compile(f)(x, y, g), f(x, y, g)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


def test_rank5_pointwise_without_a_4d_grouping_keeps_the_error():
    """Operands that broadcast in alternating dims leave no merge to 4 dims: the rank-5 error stays."""
    def f(x, a, b):
        return (x.view(2, 3, 4, 5, 8) + a.view(2, 1, 4, 1, 8) + b.view(1, 3, 1, 5, 1)).view(6, 4, 5, 8)

    x, a, b = randn(6, 4, 5, 8), randn(8, 8), randn(15)
    with pytest.raises(Exception, match="rank-5"):
        megakittens.compile(f)(x, a, b)


@pytest.mark.parametrize("B,C,H,W,P", [(2, 8, 16, 24, 4), (1, 16, 14, 14, 7)])
def test_rank6_permute_copies_in_4d_steps(B, C, H, W, P):
    """torchvision MaxViT's window partition (B, C, H/P, P, W/P, P) permuted (0, 2, 4, 3, 5, 1) and its inverse:
    six dims that no two merge, copied as a chain of 4-D permute copies (rank5._permuted_copy)."""
    def f(x):
        y = x.reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 3, 5, 1).reshape(B, (H // P) * (W // P), P * P, C)
        y = torch.nn.functional.gelu(y)
        z = y.reshape(B, H // P, W // P, P, P, C).permute(0, 5, 1, 3, 2, 4).reshape(B, C, H, W)
        return z + x, y

    x = randn(B, C, H, W)
    out, ref = megakittens.compile(f)(x), f(x)
    for o, r in zip(out, ref):
        assert o.shape == r.shape and rel_err(o, r) <= 1e-2
    copies = [n for n in mk_backend.dispatchers[-1].program.nodes if n.itype.startswith("Copy")]
    assert 2 <= len(copies) <= 6, [n.itype for n in copies]


def test_rank5_softmax_over_the_last_dim():
    """A softmax over the last dim of a rank-5 tensor runs in 4 dims with the last dim kept alone, its leading
    dims merged as for pointwise ops (a view of a permuted rank-5 view picks the merge it can view: dims 0-1)."""
    def f(x, b):
        k = x.view(2, 4, 9, 2, 32).permute(0, 1, 3, 2, 4)
        s = torch.softmax(k.float() * 0.5 + b.view(1, 1, 2, 1, 32), -1).to(x.dtype)
        return s.permute(0, 1, 3, 2, 4).reshape(2, 4, 9, 64)

    x, b = randn(2, 4, 9, 64), randn(64)
    out, ref = megakittens.compile(f)(x, b), f(x, b)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


@pytest.mark.parametrize("split", ["chunk", "slice"])
def test_rank5_views_of_a_chunk_are_slices_of_the_source(split):
    """torchvision MaxViT's q / k / v: a fused projection chunked along its last dim, each chunk viewed (B, G, P, H,
    Dh), permuted and viewed back to 4 dims. The chunk's rank-5 views leave gaps in the source, so the 4-D view is
    the source viewed (B G, P, 3 H, Dh), sliced along 3 H and permuted (rank5._sliced_view)."""
    def f(qkv):
        q, k, v = torch.chunk(qkv, 3, dim=-1) if split == "chunk" else (qkv[..., :64], qkv[..., 64:128], qkv[..., 128:])
        q, k, v = (t.reshape(2, 4, 9, 2, 32).permute(0, 1, 3, 2, 4).reshape(8, 2, 9, 32) for t in (q, k, v))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v) + k

    x = randn(2, 4, 9, 192)
    out, ref = megakittens.compile(f)(x), f(x)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


def test_rank6_einsum_copy_of_a_scaled_permuted_view():
    """torchvision MaxViT's relative attention: k = (chunk viewed (B, G, P, H, Dh), permuted) * scale keeps the
    permuted layout in its meta strides, and the einsum copies it through 6 dims. Computed tensors are stored
    contiguously, so the copy is read from a contiguous alias of the product (rank5._contiguous_source)."""
    def f(qkv, bias):
        q, k, v = (t.reshape(2, 4, 16, 2, 32).permute(0, 1, 3, 2, 4) for t in torch.chunk(qkv, 3, dim=-1))
        k = k * 0.17
        s = torch.softmax(torch.einsum("bghid,bghjd->bghij", q, k) + bias, dim=-1)
        o = torch.einsum("bghij,bghjd->bghid", s, v)
        return o.permute(0, 1, 3, 2, 4).reshape(2, 4, 16, 64)

    x, bias = randn(2, 4, 16, 192), randn(2, 16, 16)
    out, ref = megakittens.compile(f)(x, bias), f(x, bias)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


def test_rank6_view_back_to_4d_of_a_permuted_product():
    """MaxViT's window departition after its grid swap: the residual sum (meta strides permuted by the swap)
    viewed (B, 1, 1, P, P, C), permuted (0, 5, 1, 3, 2, 4) and viewed (B, C, P, P) without a copy
    (rank5._rank4_end_of_rank5_chain over rank5._contiguous_source)."""
    def f(x, y):
        t = x.view(2, 64, 1, 7, 1, 7).permute(0, 2, 4, 3, 5, 1).reshape(2, 1, 49, 64)  # the partition: a view
        s = t + y  # (2, 1, 49, 64) laid out as x, (2, 64, 49)
        z = s.view(2, 1, 1, 7, 7, 64).permute(0, 5, 1, 3, 2, 4).view(2, 64, 7, 7)
        return torch.nn.functional.gelu(z)

    x, y = randn(2, 64, 7, 7), randn(2, 1, 49, 64)
    out, ref = megakittens.compile(f)(x, y), f(x, y)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2


def test_rank6_partitions_after_a_rewritten_view_read_logically():
    """MaxViT's block departition then grid partition at a map of one window: the first chain's 4-D view is
    rewritten over a contiguous source, so the next chain's meta strides (eager's layout) no longer describe
    it; the chains are replayed from their sources instead (rank5._logical_view). Read from the stale meta,
    the second partition looked like a plain view and came out transposed."""
    def f(x, y):
        t = x.view(2, 64, 1, 7, 1, 7).permute(0, 2, 4, 3, 5, 1).reshape(2, 1, 49, 64)
        s = t + y
        z = s.view(2, 1, 1, 7, 7, 64).permute(0, 5, 1, 3, 2, 4).view(2, 64, 7, 7)
        g = z.view(2, 64, 1, 7, 1, 7).permute(0, 2, 4, 3, 5, 1).view(2, 1, 49, 64)
        return torch.nn.functional.gelu(g) * 2

    x, y = randn(2, 64, 7, 7), randn(2, 1, 49, 64)
    out, ref = megakittens.compile(f)(x, y), f(x, y)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2
