"""Data-movement ops for Llama-family models (issue 6) through megakittens.compile on the CPU reference
interpreter, against eager PyTorch: embedding, cat, dtype casts (bf16 <-> fp32, int64 -> fp32) and fp32
elementwise math, sum/mean over the last dim, copies of views an instruction type cannot read
([Note: view copies]), and constant folding of input-free subgraphs (arange, causal masks).

Tolerance: relative Frobenius error <= 1e-2 on fresh random inputs (tests/common.py); NaN fails."""
import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, check_interleavings, randn, rel_err
from megakittens import _C, fold

TOL = 1e-2


def _check(fn, *args, tol=TOL):
    out = megakittens.compile(fn)(*args)
    ref = fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == r.dtype and o.shape == r.shape, f"output {i}: {o.dtype}{list(o.shape)} vs {r.dtype}{list(r.shape)}"
        err = rel_err(o, r)
        assert err <= tol, f"output {i}: relative error {err:.3g}"
    return outs


def _itypes():
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


# ---- embedding --------------------------------------------------------------------------------------

@pytest.mark.parametrize("ids_dtype", [torch.int64, torch.int32])
def test_embedding_gathers_rows_exactly(ids_dtype):
    w = randn(1000, 384)
    ids = torch.randint(0, 1000, (3, 70), dtype=ids_dtype)
    (out,) = _check(lambda w, i: F.embedding(i, w), w, ids)
    assert torch.equal(out, F.embedding(ids, w))
    assert _itypes() == ["Embedding"]


def test_embedding_module_then_ops():
    emb = torch.nn.Embedding(512, 256).to(BF16).requires_grad_(False)
    ids = torch.randint(0, 512, (2, 33))
    _check(lambda i: torch.relu(emb(i)) * 2, ids)


@pytest.mark.parametrize("bad", [512, -1, 10 ** 9])
def test_embedding_out_of_range_id_raises(bad):
    w = randn(512, 64)
    ids = torch.randint(0, 512, (1, 16))
    ids[0, 5] = bad
    fn = megakittens.compile(lambda w, i: torch.ops.aten.embedding.default(w, i))
    with pytest.raises(IndexError, match="out of range for a table of 512 rows"):
        fn(w, ids)


def _token_types(w, table, positions):
    """BERT's ids when no token_type_ids are passed: a buffer gathered at the positions, expanded to the batch."""
    return F.embedding(torch.gather(table.expand(positions.shape[0], -1), 1, positions).expand(3, -1), w)


def test_embedding_through_a_gather_of_an_id_table():
    """embedding(W, gather(table, -1, positions)) of a one-row table: two Embeddings (megakittens/gather.py),
    rows copied exactly."""
    w, table = randn(16, 128), torch.randint(0, 16, (1, 64))
    positions = torch.randint(0, 64, (1, 24))
    (out,) = _check(_token_types, w, table, positions)
    assert torch.equal(out, _token_types(w, table, positions))
    assert _itypes() == ["Embedding", "Embedding"], _itypes()
    positions[0, 3] = 64  # past the table: IndexError, as eager's gather raises
    with pytest.raises(IndexError, match="out of range for a table of 64 rows"):
        megakittens.compile(_token_types)(w, table, positions)


def test_gather_of_a_table_with_distinct_rows_is_refused():
    w, table = randn(16, 128), torch.randint(0, 16, (3, 64))
    fn = megakittens.compile(lambda w, t, p: F.embedding(torch.gather(t, 1, p), w))
    with pytest.raises(Exception, match="unsupported op aten.gather"):
        fn(w, table, torch.randint(0, 64, (3, 24)))


def _roberta_positions(w, ids):
    """RoBERTa's position ids from the input ids (padding_idx 1), looked up in w."""
    m = ids.ne(1).int()
    return F.embedding((torch.cumsum(m, dim=1).type_as(m) * m).long() + 1, w)


def _opt_positions(w, am):
    """OPT's position ids from the attention mask (offset 2), looked up in w."""
    return F.embedding((torch.cumsum(am, dim=1) * am - 1).long() + 2, w)


@pytest.mark.parametrize("fn", [_roberta_positions, _opt_positions])
def test_embedding_ids_computed_in_integers(fn):
    """Ids from ne / cumsum / add / mul on integers: recomputed in fp32 (megakittens/float_ids.py), the rows
    copied exactly; the cumsum a broadcast product with a triangle summed by a RowReduce."""
    w = randn(80, 64)
    x = torch.randint(2, 80, (3, 45)) if fn is _roberta_positions else torch.ones(3, 45, dtype=torch.long)
    x[1, 30:] = 1 if fn is _roberta_positions else 0  # right padding
    x[2, :5] = 1 if fn is _roberta_positions else 0   # left padding
    (out,) = _check(fn, w, x)
    assert torch.equal(out, fn(w, x))
    assert "Embedding" in _itypes() and any(k.startswith("RowReduce") for k in _itypes()), _itypes()


def test_embedding_ids_from_an_unsupported_integer_op_keep_its_error():
    fn = megakittens.compile(lambda w, ids: F.embedding(ids.argmax(-1, keepdim=True), w))
    with pytest.raises(Exception, match="argmax"):
        fn(randn(16, 64), torch.randint(0, 16, (4, 16)))


@pytest.mark.parametrize("table", [(40, 96), (40, 3, 32)])
def test_index_by_an_id_tensor_is_an_embedding(table):
    """x[ids] with one integer index tensor on dim 0 (Whisper's embed_positions.weight[position_ids]): an
    Embedding over x's rows (megakittens/gather.py), exact."""
    x, ids = randn(*table), torch.randint(0, 40, (2, 9))
    (out,) = _check(lambda x, i: x[i] * 2.0, x, ids)
    assert torch.equal(out, x[ids] * 2.0)
    assert "Embedding" in _itypes(), _itypes()


@pytest.mark.parametrize("eos", [None, 2])
def test_rows_picked_by_an_argmax(eos):
    """CLIP's pooled output: hidden[arange(B), ids.argmax(-1)] (the largest id) or the first position of eos
    ((ids == eos).int().argmax(-1), torch's first-maximum rule on ties): argmax in fp32 (float_ids.py), the
    row an Embedding over hidden viewed (B S, C)."""
    def pool(h, ids):
        key = ids.to(torch.int) if eos is None else (ids.to(torch.int) == eos).int()
        return h[torch.arange(h.shape[0]), key.argmax(dim=-1)] * 2.0

    h, ids = randn(3, 20, 64), torch.randint(3, 500, (3, 20))
    ids[0, 12], ids[1, 5], ids[1, 9], ids[2, 0] = 2, 2, 2, 2  # eos twice in row 1: the first counts
    ids[2, 7] = ids[2, 15] = 600  # a tie for the largest id: the first counts
    (out,) = _check(pool, h, ids)
    assert torch.equal(out, pool(h, ids))
    assert "Embedding" in _itypes() and any(k.startswith("RowReduce") for k in _itypes()), _itypes()


def test_elementwise_ops_on_a_0_dim_tensor():
    """logits * scale.exp() + bias with 0-dim scale and bias (CLIP, SigLIP): the 0-dim ops on (1,) views
    (megakittens/scalars.py)."""
    fn = lambda x, s, b: x * s.exp() + b.tanh()  # noqa: E731
    _check(fn, randn(4, 24), torch.tensor(2.6).to(BF16), torch.tensor(-0.3).to(BF16))


def test_index_picks_wrap_negative_indices_and_raise_out_of_range():
    """x[i] and x[i, j] (float_ids.py's Embeddings): negative indices wrap as eager's; j past its dim raises
    IndexError as eager does, where a flattened id would have read another row."""
    t3, t = randn(10, 3, 8), randn(6, 7, 8)
    fn1 = lambda t3, i: t3[i] * 2.0  # noqa: E731
    fn2 = lambda t, a, b: t[a, b] * 2.0  # noqa: E731
    i, a, b = torch.tensor([-1, 2, -10]), torch.tensor([1, -1, 0]), torch.tensor([-1, 0, -7])
    assert torch.equal(megakittens.compile(fn1)(t3, i), fn1(t3, i))
    assert torch.equal(megakittens.compile(fn2)(t, a, b), fn2(t, a, b))
    for bad in ([7, 0, 0], [0, -8, 0]):
        with pytest.raises(IndexError):
            fn2(t, a, torch.tensor(bad))  # eager
        with pytest.raises(IndexError):
            megakittens.compile(fn2)(t, a, torch.tensor(bad))


def test_integer_inputs_past_fp32_range_never_pick_a_wrong_row():
    """Ids computed from inputs of 2^24 or more (which fp32 rounds): an IndexError, never another row; numbers
    of 2^24 or more in the chain keep the op's own error."""
    w = randn(64, 16)
    fn = lambda w, a, b: F.embedding(a - b, w)  # noqa: E731
    a, b = torch.tensor([[16777219, 9]]), torch.tensor([[16777216, 4]])
    assert torch.equal(fn(w, a, b), w[torch.tensor([[3, 5]])])  # eager
    with pytest.raises(IndexError):
        megakittens.compile(fn)(w, a, b)
    small = torch.tensor([[7, 9]]), torch.tensor([[2, 4]])
    assert torch.equal(megakittens.compile(fn)(w, *small), fn(w, *small))
    big = megakittens.compile(lambda w, i: F.embedding(i.ne(16777216).long(), w))
    with pytest.raises(Exception, match="ne"):
        big(w, torch.tensor([[16777217, 16777216, 5]]))


def test_cumsum_with_a_dtype():
    w, ids = randn(80, 64), torch.randint(0, 3, (2, 30))
    fn = lambda w, i: F.embedding(torch.cumsum(i.ne(1).int(), -1, dtype=torch.long), w)  # noqa: E731
    (out,) = _check(fn, w, ids)
    assert torch.equal(out, fn(w, ids))


@pytest.mark.parametrize("shape", [(8,), (3, 7, 5), (512, 4096)])
def test_full_reductions(shape):
    """x.sum() / x.mean() (0-dim results): row sums in fp32 over up to 1024 rows, then their sum (decompose.py),
    rounded once; against eager and the fp64 sum."""
    x = randn(*shape)
    for fn in (lambda x: x.sum() * 2.0, lambda x: x.mean() * x, lambda x: x.float().sum()):
        torch._dynamo.reset()
        out, ref = megakittens.compile(fn)(x), fn(x)
        assert out.shape == ref.shape and out.dtype == ref.dtype
        assert rel_err(out, ref) <= 1e-2
    exact = x.double().sum()
    out = megakittens.compile(lambda x: x.float().sum())(x)
    assert abs(float(out) - float(exact)) <= 1e-5 * float(x.double().abs().sum())


# ---- cat ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim):
    shapes = {0: [(2, 70, 96), (5, 70, 96), (1, 70, 96)], 1: [(3, 10, 96), (3, 200, 96), (3, 1, 96)],
              -1: [(3, 70, 32), (3, 70, 300), (3, 70, 1)]}[dim]
    xs = [randn(*s) for s in shapes]
    _check(lambda a, b, c: torch.cat([torch.neg(a), b, c], dim), *xs)
    assert "Cat(dim=%d)" % (4 - 3 + dim % 3) in _itypes()


def test_cat_rotate_half_of_a_transposed_view():
    # HF's rotate_half on q.transpose(1, 2): the slices of a transposed view are copied first.
    def f(q):
        x = q.transpose(1, 2)
        return torch.cat((-x[..., 32:], x[..., :32]), dim=-1)
    _check(f, randn(2, 40, 4, 64))
    assert _itypes().count("Copy(src=13)") == 2


def test_cat_skips_empty_1d_operands():
    """torch.cat skips 1-D empty operands (the KV cache Hugging Face starts from): they go before tracing
    (a zero-size tensor has no slot), and a cat left with one operand is that operand."""
    def f(x, y):
        empty = torch.tensor([], dtype=BF16)
        return torch.cat([empty, torch.neg(x)], dim=-2), torch.cat([torch.neg(x), empty, y], dim=-2)
    _check(f, randn(2, 40, 64), randn(2, 8, 64))
    assert _itypes().count("Cat(dim=2)") == 1, _itypes()


def test_cat_skips_empty_slices():
    """A rotary embedding over the whole head concatenates the rotated part with an empty "pass" slice
    (GPT-NeoX with rotary_pct 1, GPT-J): the empty operand and the slice feeding it go before tracing,
    under fallback="eager" and dry_run too (a zero-size tensor has no slot)."""
    def f(x, y):
        return torch.cat([x[..., :64] * 2, x[..., 64:]], -1), torch.cat([y[:, :0], torch.neg(y), y[:, 5:5]], 1)
    _check(f, randn(2, 8, 64), randn(4, 24))
    assert "Cat" not in " ".join(_itypes()), _itypes()
    x = randn(4, 64)
    g = lambda x: torch.cat([x[..., :64] * 2, x[..., 64:]], -1)  # noqa: E731
    torch.testing.assert_close(megakittens.compile(g, fallback="eager")(x), g(x))


# ---- casts and fp32 math ------------------------------------------------------------------------------

def test_fp32_math_between_casts():
    def f(x, w):
        h = x.float()
        h = h * torch.rsqrt((h * h * 3).sum(-1, keepdim=True) / 7 + 1) + torch.sin(h)
        return h.to(BF16) * w, h
    _check(f, randn(2, 100, 300), randn(300))
    it = _itypes()
    assert it[0] == "Copy" and "RowReduce(op=sum,keepdim)" in it


def test_mixed_dtype_binary_promotes_like_torch():
    x32 = torch.randn(64, 256)
    _check(lambda a, b: (a * b, b - a), x32, randn(64, 256))
    _check(lambda a, b: a + b, randn(8, 1, 256), torch.randn(256))


def test_float16_and_int_casts():
    ids = torch.randint(0, 1000, (4, 50))
    x = torch.randn(4, 50, dtype=torch.float16)
    _check(lambda i, x: (i.float() * 0.5 + x.float(), x.to(BF16)), ids, x)


def test_cast_of_a_transposed_view():
    _check(lambda x: x.t().float() * 3, randn(96, 200))
    assert _itypes()[0] == "Copy(src=32)"


def test_copy_stacks_small_planes():
    """The BHSD -> BSHD copy of an attention output has planes of heads x head_dim: consecutive d share
    a Copy instruction (src/itypes/copy.cpp copy_depth: at least one instruction per SM of 132), here 2
    of the 301 (a ragged last stack); the broadcast form (4 of 2 x 300) reads one backing element along
    the stacked dim."""
    o = randn(1, 4, 301, 32)
    out = _check(lambda o: o.transpose(1, 2).contiguous() * 2, o)[0]
    assert torch.equal(out, (o.transpose(1, 2).contiguous() * 2))  # a pure copy then one rounding
    p = mk_backend.dispatchers[-1].program
    (copy,) = [n for n in p.nodes if n.itype.startswith("Copy")]
    assert copy.itype == "Copy(src=13)" and copy.count == 151, (copy.itype, copy.count)
    x = randn(1, 300, 64, 4)  # a transposing plane (src=32) stacked too
    out = _check(lambda x: x.transpose(2, 3).contiguous() * 2, x)[0]
    assert torch.equal(out, x.transpose(2, 3).contiguous() * 2)
    (copy,) = [n for n in mk_backend.dispatchers[-1].program.nodes if n.itype.startswith("Copy")]
    assert copy.itype == "Copy(src=32)" and copy.count == 150, (copy.itype, copy.count)
    w = randn(1, 1, 4, 32)
    _check(lambda w: w.expand(2, 300, 4, 32).contiguous() + 1, w)
    (copy,) = [n for n in mk_backend.dispatchers[-1].program.nodes if n.itype.startswith("Copy")]
    assert copy.count == 2 * 75, copy.count


def test_int_output_cast_is_refused():
    with pytest.raises(Exception, match=r"_to_copy.*output must be a floating-point tensor"):
        megakittens.compile(lambda x: x.to(torch.int64) + 1)(randn(8, 8))


# ---- reductions ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("keepdim", [True, False])
@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [BF16, torch.float32])
def test_row_reduce(op, keepdim, dtype):
    x = randn(2, 37, 3000, dtype=dtype)
    _check(lambda x: getattr(torch, op)(x, dim=-1, keepdim=keepdim) + 1, x)
    assert f"RowReduce(op={op}{',keepdim' if keepdim else ''})" in _itypes()


def test_reduce_over_another_dim_runs():
    """Over dim 0: the dim moved last first (megakittens/decompose.py), no longer refused."""
    _check(lambda x: x.mean(0), randn(8, 64))


def test_unfused_rms_norm_pattern_runs():
    # An RMSNorm whose fp32 intermediates are also returned cannot fuse: it runs op by op.
    def f(x, w):
        h = x.float()
        var = h.pow(2).mean(-1, keepdim=True)
        return (h * torch.rsqrt(var + 1e-6)).to(BF16) * w, var
    _check(f, randn(64, 512), randn(512))
    assert not any(t.startswith("RMSNorm") for t in _itypes())


# ---- barriers through the new instruction types -------------------------------------------------------

def data_graph(ids, w, x):  # arguments in first-use order: the dispatcher is called with them directly
    e = F.embedding(ids, w)                       # (S, C)
    h = torch.cat([e, x.t().float().to(BF16)], 0)  # a Copy (transpose) then a Cat
    return h.float().mean(-1, keepdim=True), h


@pytest.mark.parametrize("global_work_queue", [False, True])
def test_interleavings(global_work_queue):
    args = (torch.randint(0, 300, (130,)), randn(300, 256), randn(256, 70))
    check_interleavings(data_graph, args, global_work_queue, cluster_size=2, seeds=12)


# ---- constant folding ---------------------------------------------------------------------------------

def test_arange_is_folded_into_a_constant():
    def f(x):
        pos = torch.arange(x.shape[-1], dtype=torch.float32)
        return x * torch.cos(pos * 0.1)
    _check(f, randn(16, 200))
    assert any(path.startswith("_mk_const") for path, _ in mk_backend.dispatchers[-1].program.attr_slots)


def _sdpa_with_mask(mask_kind):
    def f(q, k, v):
        s = q.shape[-2]
        i = torch.arange(s)
        keep = i[None, :] <= i[:, None]
        if mask_kind == "bool":
            mask = keep
        elif mask_kind == "additive":
            mask = torch.zeros(s, s, dtype=q.dtype).masked_fill(~keep, float("-inf"))
        else:  # a sliding window: not the causal mask
            mask = keep & (i[None, :] > i[:, None] - 8)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[None, None].expand(q.shape[0], 1, s, s))
    return f


@pytest.mark.parametrize("mask_kind", ["bool", "additive"])
def test_constant_causal_mask_becomes_is_causal(mask_kind):
    q, k, v = (randn(1, 2, 128, 64) for _ in range(3))
    _check(_sdpa_with_mask(mask_kind), q, k, v)
    assert [t for t in _itypes() if t.startswith("Attention")] == ["Attention(causal=1,scale=0.125)"]


def test_other_constant_masks_run_as_attentions_mask():
    """A constant mask that is not the causal one (a sliding window) is not is_causal: Attention takes it as
    its additive mask (a constant, megakittens/sdpa_math.py), with no score matrix and no warning."""
    import warnings
    q, k, v = (randn(1, 2, 128, 64) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _check(_sdpa_with_mask("window"), q, k, v)
    assert [t for t in _itypes() if t.startswith("Attention")] == ["Attention(causal=0,scale=0.125,mask=add)"]


def test_is_causal_mask():
    keep = torch.ones(5, 7, dtype=torch.bool).tril()
    assert fold.is_causal_mask(keep[None], 5, 7)
    assert not fold.is_causal_mask(keep, 7, 5)
    add = torch.zeros(5, 7).masked_fill(~keep, float("-inf"))
    assert fold.is_causal_mask(add.to(BF16), 5, 7)
    assert not fold.is_causal_mask(add.masked_fill(~keep, -1e4), 5, 7)  # exp(-1e4) is 0, but not for all scores
    assert fold.is_causal_mask(add.masked_fill(~keep, -65504.0).to(BF16), 5, 7)  # HF on CUDA: finfo(dtype).min
    assert fold.is_causal_mask(add.masked_fill(~keep, torch.finfo(BF16).min).to(BF16), 5, 7)
    assert not fold.is_causal_mask(keep.int(), 5, 7)
    for r, c in ((0, 0), (4, 1)):  # a NaN where kept or where masked
        nan = add.clone()
        nan[r, c] = float("nan")
        assert not fold.is_causal_mask(nan, 5, 7)
    assert not fold.is_causal_mask(add.masked_fill(~keep, 0.0), 5, 7)  # masked entries must be masked


def test_is_causal_mask_checks_each_distinct_mask():
    """_drop_causal_masks answers a mask equal to one checked before from its result; any other mask (other
    values, dtype, shape or query/key lengths, or a NaN) is checked itself."""
    keep = torch.ones(5, 7, dtype=torch.bool).tril()
    add = torch.zeros(5, 7).masked_fill(~keep, float("-inf"))
    checked: list = []
    assert fold._is_causal_cached(checked, add, 5, 7)
    assert fold._is_causal_cached(checked, add.clone(), 5, 7) and len(checked) == 1
    assert not fold._is_causal_cached(checked, add.masked_fill(~keep, -1e4), 5, 7)
    assert not fold._is_causal_cached(checked, add, 7, 5)
    assert fold._is_causal_cached(checked, add.to(BF16), 5, 7)
    assert fold._is_causal_cached(checked, add[None], 5, 7)
    nan = add.clone()
    nan[4, 1] = float("nan")
    assert not fold._is_causal_cached(checked, nan, 5, 7)
    assert not fold._is_causal_cached(checked, nan.clone(), 5, 7)
    assert len(checked) == 7


# ---- GPU codegen: the data-movement instruction types have plain-load device bodies ------------------

@pytest.mark.parametrize("case,device_type", [
    ("embedding", "mk::Embedding"), ("cat", "mk::Cat"), ("copy", "mk::Copy<"), ("row_reduce", "mk::RowReduce<"),
    ("row_max", "mk::RowReduce<"), ("layer_norm", "mk::LayerNorm<"), ("softmax", "mk::Softmax<"), ("fp32_unary", "mk::ElementwiseUnary<mk::Unary::relu>")])
def test_gpu_body(case, device_type):
    """Codegen gives each its device body ([Note: SIMT bodies], kernels/mk/simt.cuh): none is refused."""
    if getattr(_C, "gpu_runtime_missing", "x") or not hasattr(_C, "gpu_generate_source"):
        pytest.skip("built without the GPU runtime")
    fn, args = {
        "embedding": (lambda w, i: F.embedding(i, w), (randn(64, 128), torch.randint(0, 64, (8,)))),
        "cat": (lambda a, b: torch.cat([a, b], -1), (randn(8, 64), randn(8, 64))),
        "copy": (lambda x: torch.relu(x.t()), (randn(64, 128),)),
        "row_reduce": (lambda x: x.sum(-1), (randn(8, 64),)),
        "row_max": (lambda x: x.amax(-1), (randn(8, 64),)),
        "softmax": (lambda x: torch.softmax(x, -1), (randn(8, 64),)),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (64,), w, b), (randn(8, 64), randn(64), randn(64))),
        "fp32_unary": (lambda x: torch.relu(x), (torch.randn(8, 64),)),
    }[case]
    _check(fn, *args)
    program = mk_backend.dispatchers[-1].program
    assert _C.gpu_missing_bodies(program) == []
    assert device_type in _C.gpu_generate_source(program)


def test_causal_mask_of_the_cuda_sdpa_variant():
    """On CUDA an SDPA with a mask arrives as _scaled_dot_product_efficient_attention(attn_bias=...): the
    folded mask is dropped there too and is_causal set (the graph is only traced, never run here)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(q, k, v):
        s = q.shape[-2]
        i = torch.arange(s)
        mask = torch.zeros(s, s, dtype=q.dtype).masked_fill(i[None, :] > i[:, None], float("-inf"))
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            q, k, v, mask[None, None].expand(1, 2, s, s), False, 0.0, False, scale=0.125)[0]

    q, k, v = (randn(1, 2, 64, 64) for _ in range(3))
    gm = make_fx(f, tracing_mode="fake")(q, k, v)
    fold.fold_constants(gm)
    (sdpa,) = [n for n in gm.graph.nodes if "efficient_attention" in str(n.target)]
    bound = fold._bound_args(sdpa)
    assert bound["attn_bias"] is None and bound["is_causal"] is True
    assert not [n for n in gm.graph.nodes if n.op == "get_attr"]  # the mask is gone, not a constant
    dag = _C.trace(megakittens.fx_export.export_graph(gm, "eff"))
    assert [n.itype for n in dag.nodes if n.kind == "compute"] == ["Attention(causal=1,scale=0.125)"]


# ---- the custom ops ask for the instruction types directly; their eager bodies are the oracles ---------

def test_custom_ops_match_their_oracles():
    mk = torch.ops.megakittens

    def f(x, w, ids, y):
        c = mk.copy(x.t(), "float32")                          # Copy(src=32), a cast
        e = mk.embedding(w, ids)                               # Embedding
        j = mk.cat([e, y], 0)                                  # Cat
        return c, mk.row_reduce(j, "mean", True), mk.row_reduce(c, "sum", False)

    args = (randn(64, 96), randn(200, 64), torch.randint(0, 200, (40,)), randn(8, 64))
    _check(f, *args)
    assert _itypes() == ["Copy(src=32)", "Embedding", "Cat(dim=2)", "RowReduce(op=mean,keepdim)", "RowReduce(op=sum)"]
    with pytest.raises(IndexError):
        mk.embedding(args[1], torch.tensor([200]))
    with pytest.raises(ValueError, match="dtype must be one of"):
        mk.copy(args[0], "int64")


def gather_rows(table, x):  # GPT-J's embed_positions[position_ids], position ids from arange
    pos = torch.arange(3, 3 + x.shape[0])[None]
    return table[pos][0] * x


def gather_rows_reversed(table, x):
    return table[torch.arange(x.shape[0]).flip(0)] * x


def test_index_by_a_constant_range_is_a_slice():
    """megakittens/fold.py: x[idx] with a constant idx of consecutive rows a .. a + n - 1 becomes x[a:a + n] (a
    view, no instruction); any other constant index an Embedding (megakittens/gather.py)."""
    table, x = randn(64, 32), randn(20, 32)
    _check(gather_rows, table, x)
    assert "Embedding" not in _itypes(), _itypes()
    (out,) = _check(gather_rows_reversed, table, x)
    assert "Embedding" in _itypes() and torch.equal(out, gather_rows_reversed(table, x))
