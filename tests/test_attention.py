"""Attention on the CPU reference interpreter through megakittens.compile (issue 5), against SDPA in
fp32: head dims 64 and 128 (others below 128 zero-padded to them), causal (top-left) and full, GQA, Sq != Sk,
a custom scale, and (B, S, H, D) tensors read through view + transpose(1, 2) - the same semantics
tests/test_gpu_attention.py checks on the GPU, on small shapes."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import check_close, randn
from test_sdpa_math import assert_gpu_bodies


def sdpa(causal, scale=None):
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=k.shape[1] != q.shape[1])
    return f


@pytest.mark.parametrize("B,H,Hk,Sq,Sk,D,causal,scale", [
    (1, 2, 2, 64, 64, 64, True, None),
    (2, 4, 1, 40, 90, 128, True, None),    # GQA 4, Sq < Sk: row i sees keys 0..i
    (1, 8, 2, 70, 30, 64, True, 0.3),      # rows past Sk see every key
    (2, 2, 2, 33, 129, 128, False, None),
])
def test_sdpa_on_the_reference(B, H, Hk, Sq, Sk, D, causal, scale):
    fn = sdpa(causal, scale)
    args = [randn(B, H, Sq, D), randn(B, Hk, Sk, D), randn(B, Hk, Sk, D)]
    out = megakittens.compile(fn)(*args)
    assert any(n.startswith("Attention") for n in mk_backend.dispatchers[-1].program.icodes)
    check_close(out, fn(*[a.float() for a in args]))


@pytest.mark.parametrize("D", [20, 32, 80, 96])
@pytest.mark.parametrize("causal,masked,Hk", [(False, False, 4), (True, False, 2), (False, True, 4), (True, True, 1)])
def test_other_head_dims_are_zero_padded(D, causal, masked, Hk):
    """Head dims below 128 (MobileViT's 20, 32, 80, 96) run as Attention at 64 or 128: q, k, v with zero columns
    (one Cat each), the scale of D passed explicitly, the output sliced back (megakittens/sdpa_math.py
    _pad_head_dim); no score-matrix math. With GQA, an additive mask, causal or not."""
    def f(q, k, v, *m):
        return F.scaled_dot_product_attention(q, k, v, *m, is_causal=causal, enable_gqa=Hk != 4) * 2.0
    args = [randn(2, 4, 40, D), randn(2, Hk, 56, D), randn(2, Hk, 56, D)] + ([randn(2, 1, 40, 56)] if masked else [])
    out = megakittens.compile(f)(*args)
    icodes = mk_backend.dispatchers[-1].program.icodes
    width = 64 if D <= 64 else 128
    want = f"Attention(causal={int(causal)},scale={1 / D ** 0.5:.9f}" + (",mask=add)" if masked else ")")
    assert want in icodes and not any(n.startswith(("Gemm", "Softmax")) for n in icodes), (width, icodes)
    assert out.shape == (2, 4, 40, D) and out.stride() == f(*args).stride()
    check_close(out, f(*[a.float() for a in args]))
    assert_gpu_bodies()


def test_padded_head_dim_keeps_a_custom_scale_and_the_bshd_views():
    """Head dim 24 read from (B, S, H, D) projections: the zero columns join along D in that memory order, so
    Attention still reads the transposes in place; the output keeps the (B, S, H, D) order the model's view reads."""
    def f(x, wo):
        B, S, _ = x.shape
        q = x.view(B, S, 2, 24).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, q, q, scale=0.3)
        return o.transpose(1, 2).reshape(B, S, 48) @ wo
    args = [randn(2, 50, 48), randn(48, 32, scale=0.15)]
    out = megakittens.compile(f)(*args)
    icodes = mk_backend.dispatchers[-1].program.icodes
    assert any(n.startswith("Attention(causal=0,scale=0.3,bshd=qkv") for n in icodes), icodes
    check_close(out, f(*[a.float() for a in args]))


def test_head_dim_above_128_off_the_tma_rows_stays_an_error():
    q = randn(1, 2, 32, 132)
    with pytest.raises(Exception, match=r"head dim D must be 64 or 128, got D=132"):
        megakittens.compile(sdpa(False))(q, q, q)


def repeat_kv_sdpa(q, k, v):
    """Hugging Face's repeat_kv written out in front of SDPA (a rank-5 expand)."""
    n = q.shape[1] // k.shape[1]
    k = k[:, :, None].expand(k.shape[0], k.shape[1], n, *k.shape[2:]).reshape(k.shape[0], -1, *k.shape[2:])
    v = v[:, :, None].expand(v.shape[0], v.shape[1], n, *v.shape[2:]).reshape(v.shape[0], -1, *v.shape[2:])
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.parametrize("Hk", [1, 2])
def test_repeat_kv_folds_into_gqa(Hk):
    """src/trace/fuse_repeat_kv.h: the repeat goes, Attention reads KV head h / (H / Hk); with one KV head
    the expand is viewable and Dynamo's graph has no clone, which the fusion matches too."""
    args = [randn(1, 4, 48, 64), randn(1, Hk, 48, 64), randn(1, Hk, 48, 64)]
    out = megakittens.compile(repeat_kv_sdpa)(*args)
    assert mk_backend.dispatchers[-1].program.icodes[1:] == ["Attention(causal=1,scale=0.125)"]
    check_close(out, repeat_kv_sdpa(*[a.float() for a in args]))


def bshd(q, k, v):
    B, S, _ = q.shape
    return F.scaled_dot_product_attention(q.view(B, S, 4, 64).transpose(1, 2), k.view(B, S, 2, 64).transpose(1, 2),
                                          v.view(B, S, 2, 64).transpose(1, 2), is_causal=True, enable_gqa=True)


def test_bshd_views_are_read_in_place():
    args = [randn(2, 50, 256), randn(2, 50, 128), randn(2, 50, 128)]
    out = megakittens.compile(bshd)(*args)
    p = mk_backend.dispatchers[-1].program
    assert p.icodes[1:] == ["Attention(causal=1,scale=0.125,bshd=qkv)"], p.icodes  # no copy node
    check_close(out, bshd(*[a.float() for a in args]))


def attention_block(q, k, v, wo):
    """SDPA, then the transpose back to (B, S, H, D) and the output projection, as models write it."""
    B, S, _ = q.shape
    o = bshd(q, k, v)
    return o.transpose(1, 2).reshape(B, S, 256) @ wo


def test_output_transpose_is_stored_by_the_attention():
    """src/trace/fuse_attention_output.h: the transposed copy of the output goes, Attention stores (B, S, H, D)."""
    args = [randn(2, 50, 256), randn(2, 50, 128), randn(2, 50, 128), randn(256, 256, scale=1 / 16)]
    out = megakittens.compile(attention_block)(*args)
    p = mk_backend.dispatchers[-1].program
    assert p.icodes[1:] == ["Attention(causal=1,scale=0.125,bshd=qkvo)", "Gemm"], p.icodes
    check_close(out, attention_block(*[a.float() for a in args]))

    def two_readers(q, k, v, wo):  # the (B, H, S, D) output is read as it is too: the copy stays
        B, S, _ = q.shape
        o = bshd(q, k, v)
        return o.transpose(1, 2).reshape(B, S, 256) @ wo, o * 2
    out = megakittens.compile(two_readers)(*args)
    p = mk_backend.dispatchers[-1].program
    assert "Attention(causal=1,scale=0.125,bshd=qkv)" in p.icodes and any(n.startswith("Copy") for n in p.icodes)
    check_close(out, two_readers(*[a.float() for a in args]))


def test_other_views_are_copied_first():
    """A (B, D, S, H) backing permuted to (B, H, S, D) is no (B, S, H, D) transpose: the tracer copies it
    into a fresh tensor ([Note: view copies]) and Attention reads that."""
    def f(q, k, v):
        return torch.ops.megakittens.attention(q.permute(0, 3, 2, 1), k, v, False, 0.125)
    args = [randn(1, 64, 32, 2), randn(1, 2, 32, 64), randn(1, 2, 32, 64)]
    out = megakittens.compile(f)(*args)
    icodes = mk_backend.dispatchers[-1].program.icodes
    assert "Attention(causal=0,scale=0.125)" in icodes and any(n.startswith("Copy") for n in icodes), icodes
    check_close(out, f(*[a.float() for a in args]))


@pytest.mark.parametrize("cluster_size,S,D", [(2, 2048, 128), (1, 1024, 64), (2, 1000, 64)])
def test_causal_tiles_are_balanced_over_the_sms(cluster_size, S, D):
    """[Note: cost-balanced placement] (src/schedule/phase1_place.cpp): a causal tile's work grows with its
    last key, and instruction k of a node runs on SM (start + k) % num_sms, so the scheduler places the
    longest tiles first on the least loaded SMs. Per SM, the keys of its Attention tiles plus one q tile each
    (the cost model) stay within 15% of the mean: the per-head order (Profile.balance_costs = 0) gave 19% (8B
    layer shape, 32 heads, seq 2048, cluster 2), 31% (seq 1024, D 64, cluster 1) and 30% (seq 1000, cluster
    2); balanced 9%, 3%, 13%. Each SM runs its share shortest first; a cluster's ranks stay together."""
    import collections

    from test_gpu_kernels import program_for

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    def per_sm_keys(balance):
        p = program_for(fn, [(1, 32, S, D), (1, 8, S, D), (1, 8, S, D)], cluster_size=cluster_size, num_sms=132,
                        balance_costs=balance)
        node = next(n for n in p.nodes if n.itype.startswith("Attention"))
        keys, last, tiles = collections.Counter(), {}, set()
        for i in range(node.start, node.start + node.count):
            b, h, hk, s0, q_rows, kv_end, d = p.instruction(i)["indices"][:7]
            keys[i % p.num_sms] += kv_end + 128
            tiles.add((h, s0))
            if cluster_size == 2 and i % 2 == 1:  # rank 1 of a cluster: the next q tile of rank 0's head
                assert p.instruction(i - 1)["indices"][1] == h and p.instruction(i - 1)["indices"][3] == s0 - 128
            if balance:  # each SM's tiles run shortest first
                assert kv_end >= last.get(i % p.num_sms, 0)
                last[i % p.num_sms] = kv_end
        assert len(tiles) == node.count  # a permutation: every tile once
        return max(keys.values()), sum(keys.values()) / p.num_sms

    top, mean = per_sm_keys(1)
    assert top <= 1.15 * mean, (top, mean)
    top0, mean0 = per_sm_keys(0)
    assert mean0 == mean and top0 > 1.15 * mean, (top0, mean)


@pytest.mark.parametrize("num_sms,balanced", [(16, True), (8, True), (4, False)])
def test_balance_costs_auto_balances_nodes_of_few_instructions_per_sm(num_sms, balanced):
    """Profile.balance_costs = 2: a node of at most 2 instructions per SM is placed as with 1
    (balanced), a larger one as with 0 (the IType's order). 16 causal tiles (2 heads x 8 q tiles, cluster 1)
    are 1, 2 and 4 per SM on 16, 8 and 4 SMs."""
    from test_gpu_kernels import program_for

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def order(balance):
        p = program_for(fn, [(1, 2, 1024, 64)] * 3, cluster_size=1, num_sms=num_sms, balance_costs=balance)
        node = next(n for n in p.nodes if n.itype.startswith("Attention"))
        return [tuple(p.instruction(i)["indices"][:7]) for i in range(node.start, node.start + node.count)]

    auto, on, off = order(2), order(1), order(0)
    assert on != off  # the two placements differ, so the comparison below can fail
    assert auto == (on if balanced else off)


def test_balance_costs_from_the_profile_env_matches_eager(monkeypatch):
    """MEGAKITTENS_PROFILE=balance_costs=1 (the A/B switch of [Note: cost-balanced placement]) reaches the
    schedule of a compiled causal SDPA, whose result (CPU interpreter) still matches eager: each SM's share of
    the Attention tiles is dealt longest first, where the IType's own order runs head by head."""
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    args = [randn(1, 2, 512, 64) for _ in range(3)]
    for balance in (0, 1):
        monkeypatch.setenv("MEGAKITTENS_PROFILE", f"balance_costs={balance}")
        torch._dynamo.reset()
        check_close(megakittens.compile(fn)(*args), fn(*args))
        p = mk_backend.dispatchers[-1].program
        node = next(n for n in p.nodes if n.itype.startswith("Attention"))
        kv_end = [p.instruction(i)["indices"][5] for i in range(node.start, node.start + node.count)]
        # 8 tiles (cluster pairs of q tiles) on 132 SMs, one per SM: balanced, the longer pairs of both heads
        # take the first cluster slots; else head by head, each head's longer pair first
        want = [384, 512, 384, 512, 128, 256, 128, 256] if balance else [384, 512, 128, 256] * 2
        assert kv_end == want, kv_end


@pytest.mark.parametrize("cluster_size", [1, 2])
@pytest.mark.parametrize("waves", [2, 4])
def test_balance_costs_in_chunks_keeps_heads_together(cluster_size, waves):
    """Profile.balance_costs = 3 ([Note: cost-balanced placement]): each chunk of claim_chunk waves of the
    IType's order (claim_chunk x SMs / G cluster groups, the remainder in the last) is dealt over its own positions, so the
    per-SM tables run a few heads at a time, yet the SMs' sums stay within 15% of the mean as with 1 (the
    slots' loads carry over from chunk to chunk); a node of one chunk is placed exactly as with 1."""
    import collections

    from test_gpu_kernels import program_for

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    G, num_sms = cluster_size, 8
    shapes = [(2, 4, 2048, 64)] * 3  # 8 heads x 16 q tiles: 128 tiles, several chunks

    def groups_of(p):
        node = next(n for n in p.nodes if n.itype.startswith("Attention"))
        return node, [tuple(tuple(p.instruction(node.start + q + r)["indices"][:7]) for r in range(G))
                      for q in range(0, node.padded, G)]

    _, own = groups_of(program_for(fn, shapes, cluster_size=G, num_sms=num_sms, balance_costs=0))
    node, placed = groups_of(program_for(fn, shapes, cluster_size=G, num_sms=num_sms, balance_costs=3,
                                         claim_chunk=waves))
    _, flat = groups_of(program_for(fn, shapes, cluster_size=G, num_sms=num_sms, balance_costs=1))
    chunk = waves * num_sms // G
    bounds = [0]
    while len(own) - bounds[-1] >= 2 * chunk:
        bounds.append(bounds[-1] + chunk)
    bounds.append(len(own))
    assert len(bounds) > 3
    for a, b in zip(bounds, bounds[1:]):  # a chunk's positions hold that chunk's groups, so its few heads
        assert sorted(placed[a:b]) == sorted(own[a:b])
        assert len({t[0][:2] for t in placed[a:b]}) <= (b - a) * G // 16 + 1
    assert placed != flat  # unlike 1, which deals the whole node at once (all heads side by side)
    load = collections.Counter()
    for q, grp in enumerate(placed):
        load[(node.start // G + q) % (num_sms // G)] += max(t[5] for t in grp) + 128
    mean = sum(load.values()) / len(load)
    assert max(load.values()) <= 1.15 * mean, (max(load.values()), mean)
    # One chunk (2 heads x 8 q tiles on 8 SMs): placed exactly as with 1.
    one = [(1, 2, 1024, 64)] * 3
    assert groups_of(program_for(fn, one, cluster_size=G, num_sms=num_sms, balance_costs=3))[1] == \
        groups_of(program_for(fn, one, cluster_size=G, num_sms=num_sms, balance_costs=1))[1]


def test_balance_costs_in_chunks_matches_eager(monkeypatch):
    """MEGAKITTENS_PROFILE=balance_costs=3 reaches a compiled causal SDPA of several chunks (CPU interpreter,
    per-SM tables and the global queue): it matches eager."""
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    monkeypatch.setenv("MEGAKITTENS_PROFILE", "balance_costs=3")
    args = [randn(2, 8, 384, 64) for _ in range(3)]
    for global_queue in (False, True):
        torch._dynamo.reset()
        check_close(megakittens.compile(fn, global_work_queue=global_queue)(*args), fn(*args))
        assert mk_backend.dispatchers[-1].program.profile.balance_costs == 3


@pytest.mark.parametrize("cluster_size", [1, 2])
@pytest.mark.parametrize("balance,waves", [(0, None), (1, None), (1, 1), (3, 1), (0, 0), (1, -1)])
def test_global_queue_claims_causal_tiles_longest_first(cluster_size, balance, waves):
    """[Note: global claim order] (src/schedule/phase1_place.cpp): the global queue's table takes a causal
    Attention node's tiles in chunks of claim_chunk x SMs / G cluster groups of the IType's order (each
    head's tiles longest to shortest; the remainder joins the last chunk; h200's claim_chunk 4), each
    chunk longest first; claim_chunk 0 is one chunk, -1 the IType's order: its rows a permutation of the
    node's own instructions, a cluster's ranks side by side, whatever the per-SM placement
    (balance_costs)."""
    from test_gpu_kernels import program_for

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    num_sms, G = 8, cluster_size
    shapes = [(2, 4, 1024 + 128 * G, 64)] * 3
    p = program_for(fn, shapes, cluster_size=G, num_sms=num_sms, balance_costs=balance, claim_chunk=waves)
    if waves is None:
        waves = p.profile.claim_chunk
        assert waves == 4
    node = next(n for n in p.nodes if n.itype.startswith("Attention"))
    order = list(p.global_order)
    rows = order[node.start:node.start + node.padded]
    assert sorted(rows) == list(range(node.start, node.start + node.padded))
    assert order[:node.start] == list(range(node.start))
    if G == 2:
        assert all(rows[q] % 2 == 0 and rows[q + 1] == rows[q] + 1 for q in range(0, len(rows), 2))
    tile = lambda i: tuple(p.instruction(i)["indices"][:7])  # noqa: E731
    groups = [max((tile(rows[q + r]) for r in range(G)), key=lambda t: t[5]) for q in range(0, len(rows), G)]
    # The IType's order, cluster group by group (balance_costs = 0 keeps it in the list).
    ref = program_for(fn, shapes, cluster_size=G, num_sms=num_sms, balance_costs=0)
    rnode = next(n for n in ref.nodes if n.itype.startswith("Attention"))
    own = [max((tuple(ref.instruction(rnode.start + q + r)["indices"][:7]) for r in range(G)), key=lambda t: t[5])
           for q in range(0, rnode.padded, G)]
    if waves < 0:
        assert groups == own
        return
    chunk = waves * num_sms // G if waves else len(groups)
    bounds = [0]
    while len(groups) - bounds[-1] >= 2 * chunk:
        bounds.append(bounds[-1] + chunk)
    bounds.append(len(groups))
    assert (len(bounds) > 2) == (waves > 0)  # several chunks, the last one longer
    for a, b in zip(bounds, bounds[1:]):
        ends = [t[5] for t in groups[a:b]]
        assert ends == sorted(ends, reverse=True)  # longest first within the chunk
        assert sorted(groups[a:b]) == sorted(own[a:b])  # the IType's consecutive groups
    wholly = [t[5] for t in groups] == sorted((t[5] for t in groups), reverse=True)
    assert wholly == (waves == 0)
    table, per_sm = p.table_global(), p.table_per_sm().reshape(-1, 64)
    for r in (node.start, node.start + 1, node.start + node.padded - 1):
        assert list(table[r]) == list(per_sm[order[r]])


def test_global_queue_causal_matches_eager_under_interleavings(monkeypatch):
    """Causal SDPA tiles claimed longest first from the global queue (a table order other than the
    instruction list's: balance_costs = 0 keeps the IType's per-head order there), on the CPU interpreter's
    SM interleavings: each matches eager."""
    from common import check_interleavings

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    monkeypatch.setenv("MEGAKITTENS_PROFILE", "balance_costs=0")
    torch._dynamo.reset()
    check_interleavings(fn, [randn(1, 2, 640, 64) for _ in range(3)], global_work_queue=True, cluster_size=1, seeds=4)
    p = mk_backend.dispatchers[-1].program
    assert list(p.global_order) != list(range(p.num_instructions))


def test_save_schedule_lists_the_claim_order(tmp_path, monkeypatch):
    """save_schedule under the global queue names the claim order when it is not the index order (a causal
    SDPA of several chunks), and leaves the line out for the per-SM tables."""
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    monkeypatch.setenv("MEGAKITTENS_LOG_DIR", str(tmp_path))
    monkeypatch.setenv("MEGAKITTENS_PROFILE", "balance_costs=0")
    args = [randn(1, 4, 1024, 64) for _ in range(3)]
    texts = []
    for global_queue in (True, False):
        torch._dynamo.reset()
        megakittens.compile(fn, save_schedule=True, global_work_queue=global_queue)(*args)
        newest = max(tmp_path.glob("*.schedule.txt"), key=lambda p: p.stat().st_mtime_ns)
        texts.append(newest.read_text().splitlines())
    p = mk_backend.dispatchers[-1].program
    claims = [ln for ln in texts[0] if ln.startswith("# claim order")]
    assert len(claims) == 1 and [int(x) for x in claims[0].split(":")[1].split()] == list(p.global_order)
    assert not any(ln.startswith("# claim order") for ln in texts[1])
