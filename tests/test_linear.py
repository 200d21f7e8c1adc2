"""Transposed Gemm operands (folded aten.t / transpose / permute) and addmm's bias, end to end through
megakittens.compile on the CPU reference interpreter, against eager PyTorch.

Tolerance (DESIGN §8): relative Frobenius error <= 1e-2 on fresh random bf16 inputs.
"""
import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, check_close, check_interleavings, randn





def _gemm_itypes():
    """The Gemm ITypes (with their flags) of the last compiled graph."""
    return sorted(n.itype for n in mk_backend.dispatchers[-1].program.nodes if n.itype.startswith("Gemm"))


# Ragged on the h200 tiles (128 x 256 per CTA, clusters of 2): M = 200, K = 128, N = 320.
M, K, N = 200, 128, 320


def x_wT(x, W):
    return x @ W.T


def wT_x(W, x):
    return W.T @ x


def xt_yt(x, y):
    return x.t() @ y.t()


@pytest.mark.parametrize("fn,shapes,itype", [
    (x_wT, [(M, K), (N, K)], "Gemm(tb)"),
    (wT_x, [(K, M), (K, N)], "Gemm(ta)"),
    (xt_yt, [(K, M), (N, K)], "Gemm(ta,tb)"),
])
def test_transposed_operands(fn, shapes, itype):
    args = [randn(*s, scale=s[-1] ** -0.5) for s in shapes]
    check_close(megakittens.compile(fn)(*args), fn(*args))
    assert _gemm_itypes() == [itype]


@pytest.mark.parametrize("bias", [True, False])
def test_nn_linear(bias):
    lin = torch.nn.Linear(K, N, bias=bias).to(BF16).requires_grad_(False)
    with torch.no_grad():
        lin.weight.copy_(randn(N, K, scale=K ** -0.5))
        if bias:
            lin.bias.copy_(randn(N))
    x = randn(M, K)
    check_close(megakittens.compile(lin)(x), lin(x))
    assert _gemm_itypes() == ["Gemm(tb,bias_row)" if bias else "Gemm(tb)"]


def addmm_full(c, x, W):
    return torch.addmm(c, x, W.t())


def test_addmm_full_bias():
    args = randn(M, N), randn(M, K), randn(N, K, scale=K ** -0.5)
    check_close(megakittens.compile(addmm_full)(*args), addmm_full(*args))
    assert _gemm_itypes() == ["Gemm(tb,bias_full)"]


def addmm_beta(c, x, W):
    return torch.addmm(c, x, W, beta=0.5)


def test_addmm_beta_rejected():
    args = randn(64, 64), randn(64, 64), randn(64, 64)
    with pytest.raises(Exception, match=r"beta=0.5 is not supported"):
        megakittens.compile(addmm_beta)(*args)


def bmm_bt(a, b):
    return a @ b.transpose(1, 2)


def bmm_at(a, b):
    return torch.bmm(a.permute(0, 2, 1), b)


def baddbmm_bt(c, a, b):
    return torch.baddbmm(c, a, b.transpose(1, 2))


def test_bmm_transposed_batches():
    a, b = randn(3, M, K), randn(3, N, K, scale=K ** -0.5)
    check_close(megakittens.compile(bmm_bt)(a, b), bmm_bt(a, b))
    assert _gemm_itypes() == ["Gemm(tb)"]
    at, b2 = randn(3, K, M), randn(3, K, N, scale=K ** -0.5)
    check_close(megakittens.compile(bmm_at)(at, b2), bmm_at(at, b2))
    assert _gemm_itypes() == ["Gemm(ta)"]
    c = randn(N)
    check_close(megakittens.compile(baddbmm_bt)(c, a, b), baddbmm_bt(c, a, b))
    assert _gemm_itypes() == ["Gemm(tb,bias_row)"]


def stacked_mlp(W, b, x):
    """x = relu(x @ W[i].t() + b[i]) through F.linear: W (L, H, H) stored (out, in), b (L, H), x (M, H)."""
    for i in range(W.shape[0]):
        x = torch.relu(F.linear(x, W[i], b[i]))
    return x


def stacked_mlp_t(W, B, x):
    """The seed MLP with W[i].t() and a full per-layer bias added after the product: B (L, M, H)."""
    for i in range(W.shape[0]):
        x = torch.relu(x @ W[i].t() + B[i])
    return x


def stacked_inputs(M_=128, H=256, layers=3):
    return randn(layers, H, H, scale=H ** -0.5), randn(layers, H), randn(M_, H)


def stacked_t_inputs(M_=128, H=256, layers=3):
    return randn(layers, H, H, scale=H ** -0.5), randn(layers, M_, H), randn(M_, H)


def test_stacked_weight_mlp():
    args = stacked_inputs()
    check_close(megakittens.compile(stacked_mlp)(*args), stacked_mlp(*args))
    assert _gemm_itypes() == ["Gemm(tb,bias_row,act=relu)"] * 3  # relu folded into the epilogue
    args = stacked_t_inputs()
    check_close(megakittens.compile(stacked_mlp_t)(*args), stacked_mlp_t(*args))
    assert _gemm_itypes() == ["Gemm(tb,bias_full,act=relu)"] * 3  # the add and the relu in the epilogue


def relu_of_t(x):
    return torch.relu(x.t())


def test_other_itypes_read_a_copy_of_transposed_views():
    # [Note: view copies] elementwise ops read tiles on the backing's last two dims: a transposed view
    # is copied first (Copy src=32: rows along backing dim 3, columns along dim 2).
    x = randn(64, 128)
    check_close(megakittens.compile(relu_of_t)(x), relu_of_t(x))
    nodes = mk_backend.dispatchers[-1].program.nodes
    assert [(n.name, n.itype) for n in nodes] == [("relu_in0_copy", "Copy(src=32)"), ("relu", "ElementwiseUnary(ops=relu)")]


GRAPHS = {
    "stacked_mlp": (stacked_mlp, stacked_inputs),
    "linear_bt": (lambda x, y: xt_yt(x, y), lambda: (randn(K, M), randn(N, K, scale=K ** -0.5))),
}


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("global_work_queue", [False, True])
@pytest.mark.parametrize("cluster_size", [1, 2])
def test_interleavings(graph, global_work_queue, cluster_size):
    fn, make_inputs = GRAPHS[graph]
    check_interleavings(fn, make_inputs(), global_work_queue, cluster_size)


def test_outer_product_matmul_is_a_broadcast_mul():
    """K = 1 (HF's rotary embedding before transformers 5: inv_freq[None, :, None] @ positions[:, None, :] in
    fp32) is no Gemm: it resolves to a broadcast mul, exact in any floating dtype."""
    def rotary(inv_freq, pos):
        freqs = (inv_freq[None, :, None].expand(pos.shape[0], -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
        return torch.cat((freqs, freqs), dim=-1).cos()

    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, 64, 2, dtype=torch.float32) / 64))
    pos = torch.randint(0, 4096, (2, 50))
    out = megakittens.compile(rotary)(inv_freq, pos)
    assert out.dtype == torch.float32
    itypes = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    assert not any(i.startswith("Gemm") for i in itypes) and any(i.startswith("ElementwiseBinary(op=mul") for i in itypes)
    torch.testing.assert_close(out, rotary(inv_freq, pos), rtol=1e-5, atol=1e-5)
    a, b = randn(4, 96, 1), randn(4, 1, 72)  # bf16 bmm with K = 1: one product, rounded once, either way
    assert torch.equal(megakittens.compile(torch.bmm)(a, b), torch.bmm(a, b))


@pytest.mark.parametrize("side", ["right", "left", "batched"])
def test_unaligned_product_with_a_constant_operand(side):
    """A product whose operand is a constant built inside forward (folded: a real tensor beside the fake ones)
    and whose K or N is off TMA's rows: padded like any other (megakittens/gemm_padding.py)."""
    fn = {"right": lambda x: x @ torch.ones(6, 8, dtype=BF16),
          "left": lambda x: torch.eye(6, dtype=BF16) @ x,
          "batched": lambda x: torch.bmm(x, torch.arange(120, dtype=BF16).view(2, 6, 10) * 0.01)}[side]
    x = randn(4, 6) if side == "right" else randn(6, 10) if side == "left" else randn(2, 4, 6)
    check_close(megakittens.compile(fn)(x), fn(x))


@pytest.mark.parametrize("case", ["head_2_labels", "head_no_bias", "k_3_features", "k_1_feature", "full_bias_k_3",
                                  "baddbmm_k_3", "bmm_197_tokens"])
def test_products_off_tma_rows_are_padded(case):
    """K or N not a multiple of 8 (TMA's 16-byte rows): zero-padded operands (megakittens/gemm_padding.py),
    the product sliced back; exact against the product of the same bf16 operands, eager's strides."""
    if case.startswith("head"):
        lin = torch.nn.Linear(256, 2, bias=case == "head_2_labels").to(BF16).requires_grad_(False)
        fn, args = lin, [randn(5, 256)]
    elif case in ("k_3_features", "k_1_feature"):
        lin = torch.nn.Linear(3 if case == "k_3_features" else 1, 64).to(BF16).requires_grad_(False)
        fn, args = lin, [randn(2, 7, lin.in_features)]
    elif case == "full_bias_k_3":
        fn, args = (lambda c, a, b: torch.addmm(c, a, b)), [randn(5, 12), randn(5, 3), randn(3, 12)]
    elif case == "baddbmm_k_3":
        fn, args = (lambda c, a, b: torch.baddbmm(c, a, b)), [randn(2, 5, 12), randn(2, 5, 3), randn(2, 3, 12)]
    else:  # attention weights read beside the output: no Attention, two bmm over 197 tokens
        def fn(q, k, v):
            p = torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1)
            return p @ v, p
        args = [randn(2, 3, 197, 64) for _ in range(3)]
    with torch.no_grad():
        out, ref = megakittens.compile(fn)(*args), fn(*args)
    for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        assert o.shape == r.shape and o.stride() == r.stride(), (o.shape, o.stride(), r.stride())
        check_close(o, r)
    assert _gemm_itypes(), "the products run as Gemm instructions"
    assert any(n.itype.startswith("Cat") for n in mk_backend.dispatchers[-1].program.nodes)  # the zero padding


def test_gemm_tile_width_follows_the_sm_count():
    """Profile h200 (src/itypes/gemm.cpp gemm_tile_n): a GEMM whose 128x256 tiles fill less than a wave
    of SMs uses 128x128 tiles (a 1024 x 2048 output: 64 wide tiles, 128 narrow ones on 132 SMs); one
    with two full waves of wide tiles keeps them; a one-SM profile always keeps them."""
    from test_gpu_kernels import program_for
    from test_gpu_gemm import _tile_widths
    assert _tile_widths(program_for(lambda a, b: a @ b, [(1024, 512), (512, 2048)], split_k=1)) == {128}
    assert _tile_widths(program_for(lambda a, b: a @ b, [(2048, 512), (512, 4096)], split_k=1)) == {256}
    assert _tile_widths(program_for(lambda a, b: a @ b, [(1024, 512), (512, 2048)], num_sms=1)) == {256}
    assert _tile_widths(program_for(lambda a, b: a @ b, [(1024, 512), (512, 2048)], gemm_n=256)) == {256}
    # Gemms reading one A share the waves (q, k, v of a 1B layer: 96 wide tiles, one wave, vs 192 narrow).
    qkv = program_for(lambda x, wq, wk, wv: (x @ wq, x @ wk, x @ wv), [(1024, 2048), (2048, 2048), (2048, 512), (2048, 512)],
                      cluster_size=2)
    assert _tile_widths(qkv) == {256}
    assert _tile_widths(program_for(lambda x, wq: x @ wq, [(1024, 2048), (2048, 2048)], cluster_size=2,
                                    split_k=1)) == {128}


# SwiGLU (src/trace/fuse_swiglu.h): silu(x @ Wg^T) * (x @ Wu^T) is one Gemm(tb,swiglu).
def swiglu_linear(x, wg, wu):
    return F.silu(F.linear(x, wg)) * F.linear(x, wu)


def swiglu_plain(x, bg, bu):  # operands not transposed, product order swapped
    return (x @ bu) * F.silu(x @ bg)


def swiglu_fp32(x, bg, bu):
    """The fused Gemm's semantics: fp32 products and epilogue, one rounding."""
    return (F.silu(x.float() @ bg.float()) * (x.float() @ bu.float())).to(x.dtype)


@pytest.mark.parametrize("fn,shapes,itype", [
    (swiglu_linear, [(1, 200, K), (N, K), (N, K)], "Gemm(tb,swiglu)"),  # 3-D x: two views of x, ragged M, N
    (swiglu_plain, [(M, K), (K, N), (K, N)], "Gemm(swiglu)"),
])
def test_swiglu_is_one_gemm(fn, shapes, itype):
    args = [randn(*s, scale=s[-1] ** -0.5 if i else 1.0) for i, s in enumerate(shapes)]
    out = megakittens.compile(fn)(*args)
    assert _gemm_itypes() == [itype]
    assert not any(n.itype.startswith("Elementwise") for n in mk_backend.dispatchers[-1].program.nodes)
    check_close(out, fn(*args))
    tb = fn is swiglu_linear
    check_close(out, swiglu_fp32(args[0], *(a.t() if tb else a for a in args[1:])), tol=2e-3)


def test_swiglu_with_other_users_is_left_alone():
    """The gate product also leaves the graph: nothing is fused (its bf16 value must be stored)."""
    def fn(x, wg, wu):
        g = F.linear(x, wg)
        return F.silu(g) * F.linear(x, wu), g

    args = [randn(M, K), randn(N, K, scale=K ** -0.5), randn(N, K, scale=K ** -0.5)]
    outs = megakittens.compile(fn)(*args)
    assert _gemm_itypes() == ["Gemm(tb)", "Gemm(tb)"]
    check_close(outs, fn(*args))


def test_swiglu_op_and_its_constraints():
    """megakittens.ops.gemm_swiglu directly, and the error for a B2 that does not sit on its backing as B
    does (the kernel loads both with B's tile coordinates)."""
    x, bg, bu = randn(M, K), randn(K, N, scale=K ** -0.5), randn(K, N, scale=K ** -0.5)
    op = torch.ops.megakittens.gemm_swiglu
    check_close(megakittens.compile(op)(x, bg, bu), swiglu_fp32(x, bg, bu), tol=2e-3)
    assert _gemm_itypes() == ["Gemm(swiglu)"]
    wu = randn(N, K, scale=K ** -0.5)  # B2 = wu.t() transposed in the graph, B not
    with pytest.raises(Exception, match="input B2 view .* must sit on its backing exactly as input B"):
        megakittens.compile(lambda x, bg, wu: op(x, bg, wu.t()))(x, bg, wu)
    with pytest.raises(ValueError, match="B2 .* must have B's shape"):
        op(x, bg, randn(K, N + 8))
    with pytest.raises(Exception, match=r"megakittens.gemm_swiglu: B2 \[128, 328\] must have B's shape"):
        megakittens.compile(op)(x, bg, randn(K, N + 8))
    with pytest.raises(ValueError, match="megakittens.gemm_swiglu: A .*no broadcasting"):
        op(randn(2, M, K), bg, bu)


GRAPHS["swiglu"] = (swiglu_linear, lambda: (randn(M, K), randn(N, K, scale=K ** -0.5), randn(N, K, scale=K ** -0.5)))


# Split-K (src/schedule/phase0_split_k.cpp): a Gemm with few output tiles and a long K runs as a chain
# of Gemms over consecutive K ranges, each adding the previous one's output as its bias_full.
def linear_bias(x, W, b):
    return F.linear(x, W, b)


def residual_xt_yt(h, x, y):
    return h + x.t() @ y.t()


def addmm_tail(c, x, W):
    return torch.addmm(c, x, W)


# The chains below assume links of 4 steps (Profile.gemm_split_chain_steps; the h200 default of 8 splits
# less often): they cover 2-, 3- and 4-piece chains, here and on the GPU (tests/test_gpu_gemm.py).
SPLIT_K_CHAIN_STEPS = 4
SPLIT_K_CASES = {
    # name: (fn, input shapes, the Gemm ITypes of the chain)
    "mm_256x256x4096": (lambda a, b: a @ b, [(256, 4096), (4096, 256)], ["Gemm"] + ["Gemm(bias_full)"] * 3),
    "linear_bias_row_200x312x2048": (linear_bias, [(200, 2048), (312, 2048), (312,)],
                                     ["Gemm(tb,bias_row)", "Gemm(tb,bias_full)"]),
    "residual_ta_tb_1024x2048x8192": (residual_xt_yt, [(1024, 2048), (8192, 1024), (2048, 8192)],
                                      ["Gemm(ta,tb,bias_full)"] * 2),  # h is piece 0's bias
    # the activation applies to the sum: only the last piece carries it
    "mm_relu_256x256x4096": (lambda a, b: torch.relu(a @ b), [(256, 4096), (4096, 256)],
                             ["Gemm"] + ["Gemm(bias_full)"] * 2 + ["Gemm(bias_full,act=relu)"]),
    # K 3000 in three pieces: 1024 + 1024 + 952 (the last k-tile of the last piece is a tail)
    "addmm_k_tail_128x520x3000": (addmm_tail, [(128, 520), (128, 3000), (3000, 520)], ["Gemm(bias_full)"] * 3),
}


@pytest.mark.parametrize("case", sorted(SPLIT_K_CASES))
def test_split_k_chain(case, monkeypatch):
    """The pieces' K ranges cover K once (the results match eager), each piece after the first waits for
    the previous one only as a late input (its loads do not), and a profile with gemm_split_k = 1 keeps
    one Gemm."""
    monkeypatch.setenv("MEGAKITTENS_PROFILE", f"gemm_split_chain_steps={SPLIT_K_CHAIN_STEPS}")
    fn, shapes, chain = SPLIT_K_CASES[case]
    args = [randn(*s, scale=max(s) ** -0.5) for s in shapes]
    check_close(megakittens.compile(fn, cluster_size=2)(*args), fn(*args))
    program = mk_backend.dispatchers[-1].program
    gemms = [k for k, n in enumerate(program.nodes) if n.itype.startswith("Gemm")]
    assert [program.nodes[k].itype for k in gemms] == chain
    assert [program.nodes[k].name.endswith(f".k{i}") for i, k in enumerate(gemms)] == [True] * (len(chain) - 1) + [False]
    barriers = program.barriers
    for prev, k in zip(gemms, gemms[1:]):
        node = program.nodes[k]
        for i in range(node.start, node.start + node.count):
            inst = program.instruction(i)
            if inst["indices"][12] & 0xFFFF == 0:  # m_rows 0 (rank 1 past M): reads nothing
                continue
            n_in, late = inst["num_src_input"], inst["num_src_late"]
            producers = [barriers[b][1] for b in inst["src_barriers"][:n_in]]
            assert late >= 1 and set(producers[n_in - late:]) == {prev}, (case, i, producers, late)
            assert prev not in producers[:n_in - late], (case, i, producers, late)
    from test_gpu_kernels import program_for
    one = program_for(fn, shapes, cluster_size=2, split_k=1)
    assert sum(n.itype.startswith("Gemm") for n in one.nodes) == 1


# Activation epilogue (src/trace/fuse_gemm_act.h): a unary op on a Gemm's whole output, read by nothing
# else, becomes the Gemm's `act` flag.
@pytest.mark.parametrize("act,fn", [
    ("relu", torch.relu),
    ("gelu", F.gelu),
    ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")),
    ("silu", F.silu),
    ("sigmoid", torch.sigmoid),
    ("tanh", torch.tanh),
])
def test_activation_folds_into_the_gemm(act, fn):
    lin = torch.nn.Linear(K, N).to(BF16).requires_grad_(False)
    with torch.no_grad():
        lin.weight.copy_(randn(N, K, scale=K ** -0.5))
        lin.bias.copy_(randn(N))
    x = randn(M, K)
    f = lambda t: fn(lin(t))
    check_close(megakittens.compile(f)(x), f(x))
    assert [n.itype for n in mk_backend.dispatchers[-1].program.nodes] == [f"Gemm(tb,bias_row,act={act})"]


def test_activation_with_other_readers_stays_apart():
    """The Gemm's output is also returned (and a scalar op is not an activation): nothing folds."""
    def fn(x, w):
        y = x @ w.t()
        return torch.relu(y), y, (x @ w.t()) * 2.0
    args = [randn(M, K), randn(N, K, scale=K ** -0.5)]
    check_close(megakittens.compile(fn)(*args), fn(*args))
    itypes = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    assert "ElementwiseUnary(ops=relu)" in itypes and not any("act=" in t for t in itypes), itypes


def test_megakittens_profile_env_turns_split_k_off(monkeypatch):
    """MEGAKITTENS_PROFILE overrides profile fields for A/B runs: gemm_split_k=1 keeps one Gemm; a field it
    does not allow, a value that is not an int or one out of the field's range (gemm_n=0 once divided by
    zero) is a ValueError naming the entry."""
    fn = lambda a, b: a @ b  # noqa: E731
    args = [randn(256, 4096, scale=4096 ** -0.5), randn(4096, 256)]
    monkeypatch.setenv("MEGAKITTENS_PROFILE", "gemm_split_k=1")
    check_close(megakittens.compile(fn)(*args), fn(*args))
    assert _gemm_itypes() == ["Gemm"]
    for bad in ("num_sms=4", "gemm_split_k=two", "gemm_split_k", "gemm_n=0", "gemm_n=-5", "gemm_n=7",
                "gemm_split_k=-3", "rms_norm_pages=-1", "rms_norm_pages=4", "gemm_split_chain_steps=-1",
                "gemm_n_narrow=96", "balance_costs=4", "balance_costs=1,balance_costs=0", "gemm_n=64",
                "claim_chunk=-2", "claim_chunk=65", "claim_chunk=--1", "claim_chunk=\u00b2", "max_slots=1017",
                "max_slots=-1"):
        monkeypatch.setenv("MEGAKITTENS_PROFILE", bad)
        torch._dynamo.reset()
        with pytest.raises(Exception, match="MEGAKITTENS_PROFILE entry"):
            megakittens.compile(fn)(*args)


def test_megakittens_fuse_env_is_validated(monkeypatch):
    """MEGAKITTENS_FUSE (src/trace/fuse_switches.h) takes gemm_rope / no_gemm_rope / rms_in / no_rms_in,
    comma-joined, matched whole: an unknown entry (a near miss that a substring test would have read as
    gemm_rope) or a switch set both ways is a ValueError naming it, on any graph (this one has no Rope); the
    accepted ones still compile."""
    fn = lambda a, b: a @ b  # noqa: E731
    args = [randn(128, 256, scale=256 ** -0.5), randn(256, 128)]
    for good in ("rms_in", "no_gemm_rope, rms_in", ""):
        monkeypatch.setenv("MEGAKITTENS_FUSE", good)
        torch._dynamo.reset()
        check_close(megakittens.compile(fn)(*args), fn(*args))
    for bad, why in (("bogus", "'bogus' is not one of"), ("gemm_rope_off", "'gemm_rope_off' is not one of"),
                     ("rms_in,no_rms_in", "sets rms_in both on and off"),
                     ("gemm_rms", "'gemm_rms' is not one of"),  # Session 26's fold, removed
                     ("gemm_rope, no_gemm_rope", "sets gemm_rope both on and off")):  # a graph without Rope too
        monkeypatch.setenv("MEGAKITTENS_FUSE", bad)
        torch._dynamo.reset()
        with pytest.raises(Exception, match="MEGAKITTENS_FUSE.*" + why):
            megakittens.compile(fn)(*args)


def test_activation_folds_for_3d_activations():
    """A transformer MLP's (B, S, D) input: the matmul runs on (B * S, D) and the activation reads its
    (B, S, N) reshape; the fold keeps the readers on that reshape."""
    mlp = torch.nn.Sequential(torch.nn.Linear(K, N), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(N, K))
    mlp = mlp.to(BF16).requires_grad_(False)
    x = randn(2, 64, K)
    check_close(megakittens.compile(mlp)(x), mlp(x))
    assert _gemm_itypes() == ["Gemm(tb,bias_row)", "Gemm(tb,bias_row,act=gelu_tanh)"]
    assert not any(n.itype.startswith("Elementwise") for n in mk_backend.dispatchers[-1].program.nodes)


def test_2d_residual_and_the_seed_mlp_fold_into_the_gemm():
    """src/trace/fuse_residual.h without a reshape: h + linear(x, W) on 2-D activations, and the seed MLP's
    x @ W[i] + b[i] (b[i] selected after the matmul) then relu, become one Gemm per layer; fuse=False keeps
    the seed's own lowering (Gemm, add, relu)."""
    from common import mlp, mlp_inputs
    h, x, w = randn(M, N), randn(M, K), randn(N, K, scale=K ** -0.5)
    fn = lambda h, x, w: h + F.linear(x, w)  # noqa: E731
    check_close(megakittens.compile(fn)(h, x, w), fn(h, x, w))
    assert [n.itype for n in mk_backend.dispatchers[-1].program.nodes] == ["Gemm(tb,bias_full)"]
    args = mlp_inputs(128, 256)
    check_close(megakittens.compile(mlp)(*args), mlp(*args))
    assert [n.itype for n in mk_backend.dispatchers[-1].program.nodes] == ["Gemm(bias_full,act=relu)"] * 3
    torch._dynamo.reset()
    check_close(megakittens.compile(mlp, fuse=False)(*args), mlp(*args))
    assert [n.itype for n in mk_backend.dispatchers[-1].program.nodes] == \
        ["Gemm", "ElementwiseBinary(op=add,alpha=1)", "ElementwiseUnary(ops=relu)"] * 3


# --- an RMSNorm folded into the Gemms reading it (MEGAKITTENS_FUSE=rms_in; src/trace/fuse_rms_norm_gemm.h) ---

def _hf_rms_norm(h, w):  # HF LlamaRMSNorm's arithmetic, which the tracer fuses into one RMSNorm
    v = h.float()
    return w * (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)).to(h.dtype)


def rmsin_linear(x, nw, w):  # folded: the Gemm reads x and the weight
    return _hf_rms_norm(x, nw) @ w.T


def rmsin_3d_swiglu(x, nw, wg, wu):  # a 3-D x read through a reshape; the swiglu Gemm takes it
    y = _hf_rms_norm(x, nw)
    return torch.nn.functional.silu(y @ wg.T) * (y @ wu.T)


def rmsin_also_returned(x, nw, w):  # the norm's output is a graph output too: kept
    y = _hf_rms_norm(x, nw)
    return y @ w.T, y


def rmsin_read_by_elementwise(x, nw, w):  # a non-Gemm reader: kept
    y = _hf_rms_norm(x, nw)
    return y @ w.T + y.sum(-1, keepdim=True)


def rmsin_long_k(x, nw, w):  # K 8192 at M 128: split along K unfolded, whole when folded (the mean needs all of K)
    return _hf_rms_norm(x, nw) @ w.T


def rmsin_computed_weight(x, nw, w):  # the weight is computed in the graph: kept
    return _hf_rms_norm(x, nw * 2) @ w.T


def rmsin_transposed_reader(x, nw, w):  # read as B (y.T @ w): kept
    return _hf_rms_norm(x, nw).T @ w


@pytest.mark.parametrize("fn,shapes,folded", [
    (rmsin_linear, [(200, 264), (264,), (136, 264)], 1),
    (rmsin_3d_swiglu, [(2, 72, 256), (256,), (128, 256), (128, 256)], 1),
    (rmsin_also_returned, [(64, 256), (256,), (128, 256)], 0),
    (rmsin_read_by_elementwise, [(64, 256), (256,), (128, 256)], 0),
    (rmsin_long_k, [(128, 8192), (8192,), (256, 8192)], 1),
    (rmsin_computed_weight, [(64, 256), (256,), (128, 256)], 0),
    (rmsin_transposed_reader, [(256, 64), (64,), (256, 128)], 0),
])
@pytest.mark.parametrize("switch", ["rms_in", "", "no_rms_in"])
def test_rms_norm_folds_into_its_readers_only_where_allowed(monkeypatch, fn, shapes, folded, switch):
    monkeypatch.setenv("MEGAKITTENS_FUSE", switch)
    torch._dynamo.reset()
    args = [randn(*s) for s in shapes]
    out = megakittens.compile(fn)(*args)
    ref = fn(*args)
    for o, e in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        check_close(o, e)
    itypes = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    folded = folded and switch == "rms_in"  # off by default
    assert any("rms_in=1e-06" in t for t in itypes) == bool(folded), itypes
    assert any(t.startswith("RMSNorm") for t in itypes) != bool(folded), itypes
    if fn is rmsin_long_k:  # the unfolded product splits (a chain of bias_full pieces), the folded one does not
        assert any("bias_full" in t for t in itypes) != bool(folded), itypes
