"""Rope (issue 6): megakittens::rope against eager on the CPU reference interpreter, the FX-level fusion of
the rotate-half RoPE (examples/llama.py's apply_rotary_emb and Hugging Face's apply_rotary_pos_emb), and
clear errors for bad inputs."""
from dataclasses import replace

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
import megakittens.ops  # noqa: F401  (registers torch.ops.megakittens.*)
from common import rel_err
from test_llama import HIDDEN_TOL, _example, _hf_model, _itypes

rope = torch.ops.megakittens.rope


def _rotate_half(t):
    h = t.shape[-1] // 2
    return torch.cat((-t[..., h:], t[..., :h]), -1)


def _naive(x, cos, sin):  # fp64 math: an oracle independent of the op's fp32 body
    t = x.double()
    return t * cos.double() + _rotate_half(t) * sin.double()


def _tables(shape, dtype):
    ang = torch.rand(shape) * 6.3
    return ang.cos().to(dtype), ang.sin().to(dtype)


@pytest.mark.parametrize("x_shape,cos_shape,x_dtype,cos_dtype", [
    ((2, 4, 40, 64), (40, 64), torch.bfloat16, torch.bfloat16),        # (S, D) over (B, H, S, D)
    ((1, 40, 8, 64), (1, 40, 1, 64), torch.bfloat16, torch.float32),   # (1, S, 1, D) over (B, S, H, D), fp32 tables
    ((2, 3, 150, 32), (2, 1, 150, 32), torch.bfloat16, torch.bfloat16),  # (B, 1, S, D), S >= 128
    ((2, 24, 6, 16), (24, 1, 16), torch.float16, torch.float32),
    ((3, 10, 128), (10, 128), torch.float32, torch.bfloat16),
])
def test_custom_op_matches_eager(x_shape, cos_shape, x_dtype, cos_dtype):
    x = torch.randn(x_shape).to(x_dtype)
    cos, sin = _tables(cos_shape, cos_dtype)
    ref = rope(x, cos, sin)
    assert ref.dtype == x_dtype and ref.shape == x.shape
    assert rel_err(ref, _naive(x, cos, sin)) <= 1e-2  # the oracle itself
    y = megakittens.compile(lambda x, c, s: rope(x, c, s))(x, cos, sin)
    assert y.dtype == x_dtype
    assert rel_err(y, ref) <= 1e-2
    it = _itypes()
    assert len(it) == 1 and it[0].startswith("Rope(bcast="), it


def test_instruction_count_blocks_positions():
    """(B, S, H, D) = (1, 1024, 32, 64): blocks of 4 positions x 32 heads, 256 instructions."""
    x = torch.randn(1, 1024, 32, 64).to(torch.bfloat16)
    cos, sin = _tables((1024, 1, 64), torch.float32)
    y = megakittens.compile(lambda x, c, s: rope(x, c, s))(x, cos, sin)
    assert rel_err(y, rope(x, cos, sin)) <= 1e-2
    assert mk_backend.dispatchers[-1].program.num_instructions == 256


def test_bad_inputs_raise_clear_errors():
    x = torch.randn(2, 8, 63).to(torch.bfloat16)
    cos, sin = _tables((8, 63), torch.float32)
    with pytest.raises(ValueError, match=r"last dim D of x must be even, got x shape \[2, 8, 63\]"):
        rope(x, cos, sin)
    x = torch.randn(2, 8, 64).to(torch.bfloat16)
    cos, sin = _tables((8, 64), torch.float32)
    with pytest.raises(ValueError, match=r"cos shape \[8, 64\] must equal sin shape \[1, 8, 64\]"):
        rope(x, cos, sin[None])
    with pytest.raises(ValueError, match=r"must broadcast to x's shape \[2, 8, 64\]"):
        rope(x, cos[:, :32], sin[:, :32])
    # Same shapes, different rows of one table: one index origin cannot serve both (a CompileError at
    # compile time, which Dynamo wraps).
    table = torch.randn(16, 64)
    with pytest.raises(Exception, match=r"node '.*' \(megakittens.rope.default\): sin view .* must "
                                                       r"match cos view"):
        megakittens.compile(lambda x, t: rope(x, t[:8], t[4:12]))(x, table)


@pytest.mark.parametrize("gemm_rope", [True, False])
def test_fusion_fires_on_hf_llama_model(gemm_rope, monkeypatch):
    if not gemm_rope:  # the default folds head dim 64 (src/trace/fuse_gemm_rope.h)
        monkeypatch.setenv("MEGAKITTENS_FUSE", "no_gemm_rope")
    model = _hf_model("LlamaModel", layers=2)
    ids = torch.randint(0, 512, (2, 48))
    with torch.no_grad():
        h = megakittens.compile(lambda ids: model(input_ids=ids, use_cache=False).last_hidden_state)(ids)
        h_ref = model(input_ids=ids, use_cache=False).last_hidden_state
    assert rel_err(h, h_ref) <= HIDDEN_TOL
    it = _itypes()
    if gemm_rope:  # q and k per layer, in their projection's epilogue (src/trace/fuse_gemm_rope.h)
        assert it.count("Gemm(tb,rope=64)") == 4 and not any(t.startswith("Rope(") for t in it), it
    else:  # q and k per layer, read through HF's transpose(1, 2) in place (no Copy first)
        assert sum(t.startswith("Rope(") and t.endswith(",x_bshd)") for t in it) == 4, it
    # The one Cat left builds the tables (LlamaRotaryEmbedding: cat((freqs, freqs), -1)), none rotates.
    assert sum(t.startswith("Cat") for t in it) == 1, it


def _count_1b_layer(unfusable: bool) -> int:
    """Instructions of examples/llama.py's 1B shapes with one layer, S = 1024 (schedule only)."""
    llama = _example()
    args = replace(llama.CONFIGS["1b"], n_layer=1, vocab_size=512)  # the vocab only sizes lm_head
    model = llama.build(args, 1024, "cpu")
    counts = []
    schedule = mk_backend._C.schedule

    def counting(*a, **k):
        p = schedule(*a, **k)
        counts.append(p.num_instructions)
        return p

    orig_rot, orig_dry = llama.rotate_half, mk_backend._dry_run
    if unfusable:  # x * -1 instead of -x: the same instructions (one unary op), but no neg to match
        llama.rotate_half = lambda t: torch.cat((t[..., t.shape[-1] // 2:] * -1, t[..., :t.shape[-1] // 2]), -1)
    mk_backend._C.schedule = counting
    mk_backend._dry_run = lambda gm, graph, options, name, captured: (
        mk_backend._compile_program(gm, graph, options, name, dry_run=True), mk_backend.make_boxed_func(gm))[1]
    try:
        megakittens.compile(model, dry_run=True)(torch.randint(0, 512, (1, 1024)))
    finally:
        llama.rotate_half, mk_backend._C.schedule, mk_backend._dry_run = orig_rot, schedule, orig_dry
    return counts[-1]


def test_instruction_count_1b_layer():
    before, after = _count_1b_layer(True), _count_1b_layer(False)
    print(f"1-layer 1B-shaped example, S=1024: {before} instructions unfused, {after} with Rope")
    assert after < before


def test_gpu_body():
    """Codegen emits Rope's plain-load device body with its broadcast mask (bcast=0010: bit 2, padded dim r)."""
    from megakittens import _C
    if getattr(_C, "gpu_runtime_missing", "x") or not hasattr(_C, "gpu_generate_source"):
        pytest.skip("built without the GPU runtime")
    x = torch.randn(1, 64, 8, 64).to(torch.bfloat16)
    cos, sin = _tables((64, 1, 64), torch.bfloat16)
    megakittens.compile(lambda x, c, s: rope(x, c, s))(x, cos, sin)
    src = _C.gpu_generate_source(mk_backend.dispatchers[-1].program)
    assert "mk::Rope<" in src and "static constexpr unsigned bcast = 4;" in src


# ---- interleaved RoPE (GPT-J's and Cohere's rotate_every_two: the pairs (2i, 2i + 1) rotate) ----------

rope_interleaved = torch.ops.megakittens.rope_interleaved


def _rotate_every_two(t):
    return torch.stack((-t[..., 1::2], t[..., ::2]), -1).flatten(-2)


def _naive_interleaved(x, cos, sin):
    t = x.double()
    return t * cos.double() + _rotate_every_two(t) * sin.double()


@pytest.mark.parametrize("x_shape,cos_shape,x_dtype,cos_dtype", [
    ((2, 4, 40, 64), (40, 64), torch.bfloat16, torch.bfloat16),
    ((1, 40, 8, 64), (1, 40, 1, 64), torch.bfloat16, torch.float32),
    ((2, 24, 6, 16), (24, 1, 16), torch.float16, torch.float32),
])
def test_interleaved_custom_op_matches_eager(x_shape, cos_shape, x_dtype, cos_dtype):
    x = torch.randn(x_shape).to(x_dtype)
    cos, sin = _tables(cos_shape, cos_dtype)
    ref = rope_interleaved(x, cos, sin)
    assert rel_err(ref, _naive_interleaved(x, cos, sin)) <= 1e-2  # the oracle itself
    assert rel_err(ref, rope(x, cos, sin)) > 0.1  # a different rotation than rotate_half
    y = megakittens.compile(lambda x, c, s: rope_interleaved(x, c, s))(x, cos, sin)
    assert y.dtype == x_dtype and rel_err(y, ref) <= 1e-2
    it = _itypes()
    assert len(it) == 1 and it[0].startswith("Rope(bcast=") and it[0].endswith(",interleaved)"), it


def cohere_rotary(q, cos, sin):  # transformers' Cohere apply_rotary_pos_emb: fp32, stack of step-2 slices
    qf = q.float()
    return (qf * cos[:, None] + _rotate_every_two(qf) * sin[:, None]).to(q.dtype)


def gptj_rotary(q, cos, sin):  # no casts; the tables already carry the head dim
    return q * cos + _rotate_every_two(q) * sin


@pytest.mark.parametrize("fn,cos_shape", [(cohere_rotary, (2, 40, 64)), (gptj_rotary, (2, 1, 40, 64))])
def test_interleaved_rotary_fuses_into_one_rope(fn, cos_shape):
    """src/trace/fuse_rope.cpp: neg / step-2 slices / stack (a cat of unsqueezed views after
    megakittens/decompose.py) / view / muls / add (and the fp32 casts) become one Rope(..., interleaved)."""
    q = torch.randn(2, 4, 40, 64).to(torch.bfloat16)
    cos, sin = _tables(cos_shape, torch.bfloat16)
    y = megakittens.compile(fn)(q, cos, sin)
    assert _itypes() == ["Rope(bcast=0100,interleaved)"], _itypes()
    assert rel_err(y, _naive_interleaved(q, cos[:, None] if fn is cohere_rotary else cos,
                                         sin[:, None] if fn is cohere_rotary else sin)) <= 1e-2


def test_interleaved_half_tables_custom_op():
    """Tables of one column per pair (D/2) read as their repeat_interleave(2, -1)."""
    x = torch.randn(2, 4, 40, 64).to(torch.bfloat16)
    cos, sin = _tables((40, 32), torch.float32)
    wide = (cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1))
    ref = rope_interleaved(x, cos, sin)
    assert rel_err(ref, _naive_interleaved(x, *wide)) <= 1e-2
    y = megakittens.compile(lambda x, c, s: rope_interleaved(x, c, s))(x, cos, sin)
    assert _itypes() == ["Rope(bcast=1100,interleaved,half_tables)"], _itypes()
    assert rel_err(y, ref) <= 1e-2
    with pytest.raises(ValueError, match="same last dim or half of it"):
        rope_interleaved(x, cos[:, :16], sin[:, :16])


def helium_rotary(q, k, cos, sin):  # transformers' Helium / Glm: rotate-half tables, first half repeat-interleaved
    cos = cos[:, None][..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[:, None][..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return q * cos + _rotate_every_two(q) * sin, k * cos + _rotate_every_two(k) * sin  # q and k share the tables


def ernie_rotary(q, cos, sin):  # Ernie4_5: fp32 tables and q * cos in fp32, the pairs rotated in bf16 first
    cos = cos[:, None][..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[:, None][..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return (q.float() * cos + _rotate_every_two(q).float() * sin).to(q.dtype)


def test_interleaved_repeated_tables_fuse_with_half_tables():
    """src/trace/fuse_rope.cpp: a table spelled view(clone(expand(unsqueeze(c, -1)))) (repeat_interleave of a
    4-D c: rank 5 inside) becomes Rope's half-width operand c, also when q's and k's rotations share it."""
    q, k = torch.randn(2, 4, 40, 64).to(torch.bfloat16), torch.randn(2, 2, 40, 64).to(torch.bfloat16)
    cos, sin = _tables((2, 40, 64), torch.bfloat16)
    wide = tuple(t[:, None][..., :32].repeat_interleave(2, -1) for t in (cos, sin))
    yq, yk = megakittens.compile(helium_rotary)(q, k, cos, sin)
    assert _itypes() == ["Rope(bcast=0100,interleaved,half_tables)"] * 2, _itypes()
    assert rel_err(yq, _naive_interleaved(q, *wide)) <= 1e-2 and rel_err(yk, _naive_interleaved(k, *wide)) <= 1e-2
    cos32, sin32 = cos.float(), sin.float()
    y = megakittens.compile(ernie_rotary)(q, cos32, sin32)
    assert _itypes() == ["Rope(bcast=0100,interleaved,half_tables)"], _itypes()
    assert rel_err(y, _naive_interleaved(q, *wide)) <= 1e-2
