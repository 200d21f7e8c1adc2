"""Broadcasting in ElementwiseBinary (issue 6) through megakittens.compile on the CPU reference
interpreter, against eager PyTorch: implicit torch broadcasting (row vectors, columns, per-batch rows,
0-d and (1,) tensors), broadcasting aten.expand folded as a broadcast view (``expand_as``), and a
RoPE-like rotation with cos/sin (S, D) broadcast over the heads of a (B, H, S, D) tensor
(docs/itypes.md, docs/ir.md [Note: broadcast views]).

Tolerance: relative Frobenius error <= 1e-2 on fresh random bf16 inputs (tests/common.py)."""
import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import check_interleavings, randn, rel_err

TOL = 1e-2


def _check(fn, *args):
    out = megakittens.compile(fn)(*args)
    ref = fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == r.dtype and o.shape == r.shape, f"output {i}: {o.dtype}{list(o.shape)} vs {r.dtype}{list(r.shape)}"
        err = rel_err(o, r)
        assert err <= TOL, f"output {i}: relative error {err:.3g}"
    return outs


def _icodes():
    return list(mk_backend.dispatchers[-1].program.icodes)


def _binary_icodes():
    return [c for c in _icodes() if c.startswith("ElementwiseBinary")]


CASES = {
    # name: (fn, input factory, the ElementwiseBinary icodes it must resolve to)
    "row_vector": (lambda x, w: x * w, lambda: (randn(200, 300), randn(300)),
                   ["ElementwiseBinary(op=mul,alpha=1,bcast_b=0010)"]),
    "row_1xC": (lambda x, w: x / w, lambda: (randn(130, 270), randn(1, 270) + 4),
                ["ElementwiseBinary(op=div,alpha=1,bcast_b=0010)"]),
    "column": (lambda x, b: x + b, lambda: (randn(200, 300), randn(200, 1)),
               ["ElementwiseBinary(op=add,alpha=1,bcast_b=0001)"]),
    "vector_first": (lambda w, x: w - x, lambda: (randn(300), randn(200, 300)),
                     ["ElementwiseBinary(op=sub,alpha=1,bcast_a=0010)"]),
    "3d_row": (lambda x, w: x * w, lambda: (randn(2, 70, 96), randn(96)),
               ["ElementwiseBinary(op=mul,alpha=1,bcast_b=0110)"]),
    "per_batch": (lambda b, x: b + x, lambda: (randn(2, 1, 96), randn(2, 70, 96)),
                  ["ElementwiseBinary(op=add,alpha=1,bcast_a=0010)"]),
    "scalar_tensor": (lambda x, s: x - s, lambda: (randn(3, 50, 80), randn(1).reshape(())),
                      ["ElementwiseBinary(op=sub,alpha=1,bcast_b=0111)"]),
    "one_elem": (lambda x, s: torch.maximum(x, s), lambda: (randn(50, 80), randn(1)),
                 ["ElementwiseBinary(op=maximum,alpha=1,bcast_b=0011)"]),
    "outer": (lambda c, r: c * r, lambda: (randn(64, 1), randn(1, 96)),
              ["ElementwiseBinary(op=mul,alpha=1,bcast_a=0001,bcast_b=0010)"]),
    "alpha": (lambda x, w: torch.add(x, w, alpha=0.5), lambda: (randn(40, 64), randn(64)),
              ["ElementwiseBinary(op=add,alpha=0.5,bcast_b=0010)"]),
    "expand_as": (lambda x, w: x * w.expand_as(x), lambda: (randn(2, 70, 96), randn(96)),
                  ["ElementwiseBinary(op=mul,alpha=1,bcast_b=0110)"]),
    "expand_column": (lambda x, b: b.expand(-1, 300) + x, lambda: (randn(200, 300), randn(200, 1)),
                      ["ElementwiseBinary(op=add,alpha=1,bcast_a=0001)"]),
    "same_shape_plain": (lambda x, y: x * y, lambda: (randn(64, 96), randn(64, 96)),
                         ["ElementwiseBinary(op=mul,alpha=1)"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_broadcast(name):
    fn, make, icodes = CASES[name]
    _check(fn, *make())
    assert _binary_icodes() == icodes


def rope(x, cos, sin):
    """RoPE-like rotation, rotate(x) = (-x2, x1) over the halves of the head dim, kept as two halves
    (no cat): x * cos + rotate(x) * sin with cos/sin (S, D) broadcast over (B, H)."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    lo = x1 * cos[..., :h] - x2 * sin[..., :h]
    hi = x2 * cos[..., h:] + x1 * sin[..., h:]
    return lo, hi


def rope_inputs():
    B, H, S, D = 2, 3, 40, 64
    pos = torch.arange(S, dtype=torch.float32)[:, None] * torch.linspace(0.01, 1.0, D)[None, :]
    return randn(B, H, S, D), pos.cos().to(torch.bfloat16), pos.sin().to(torch.bfloat16)


def test_rope():
    _check(rope, *rope_inputs())
    muls = [c for c in _binary_icodes() if "op=mul" in c]
    assert muls and all("bcast_b=1100" in c for c in muls), _binary_icodes()


def test_rope_expanded():
    # The same with cos/sin expanded explicitly (as HF models do with unsqueeze + expand).
    def f(x, cos, sin):
        return rope(x, cos.expand(x.shape[0], x.shape[1], -1, -1), sin.expand(x.shape[0], x.shape[1], -1, -1))
    _check(f, *rope_inputs())
    muls = [c for c in _binary_icodes() if "op=mul" in c]
    assert muls and all("bcast_b=1100" in c for c in muls), _binary_icodes()


def test_expand_of_a_computed_tensor():
    # The broadcast operand is produced in the graph: the barrier covers its single backing row.
    def f(x, w):
        g = torch.sigmoid(w)
        return x * g.expand_as(x) + g
    _check(f, randn(200, 300), randn(300))
    assert _binary_icodes() == ["ElementwiseBinary(op=mul,alpha=1,bcast_b=0010)",
                                "ElementwiseBinary(op=add,alpha=1,bcast_b=0010)"]


def test_expand_as_output_is_a_stride_0_view():
    # A returned expand stays on the output edge and comes back as eager's stride-0 view.
    def f(x, w):
        return x * w, (w * 2).expand(3, 64), w.expand(3, 64)
    outs = _check(f, randn(3, 64), randn(64))
    assert outs[1].stride() == (0, 1) and outs[2].stride() == (0, 1)


def test_expand_feeding_unary_is_copied():
    # [Note: view copies] only binary ops read broadcast views: a unary op reads a Copy of it.
    def f(x):
        return torch.relu(x.expand(8, 64))
    _check(f, randn(1, 64))
    assert "Copy(src=-3)" in mk_backend.dispatchers[-1].program.icodes


def test_incompatible_shapes_rejected():
    # torch itself rejects these; the trace must not get that far silently.
    with pytest.raises(Exception):
        megakittens.compile(lambda x, w: x * w)(randn(16, 64), randn(32))


# --- interleavings: 20 seeds x queue modes ----------------------------------------------------------

def bgraph(w, c, x):
    """Broadcast operands produced in the graph, read by many tiles: barriers from the broadcast reads.
    (Arguments in first-use order: the dispatcher is called with them directly.)"""
    w2 = torch.sigmoid(w)   # (C,)
    c2 = torch.relu(c)      # (R, 1)
    h = x * w2
    return h + c2 - w2.expand_as(h), h * c2


def bgraph_inputs():
    return randn(300), randn(200, 1), randn(200, 300)


@pytest.mark.parametrize("global_work_queue", [False, True])
@pytest.mark.parametrize("cluster_size", [1, 2])
def test_interleavings(global_work_queue, cluster_size):
    check_interleavings(bgraph, bgraph_inputs(), global_work_queue, cluster_size)


# --- GPU codegen: no device body reads a broadcast operand yet ----------------------------------------

def test_broadcast_gpu_source_carries_the_masks():
    """A broadcast ElementwiseBinary runs on the device's plain-load path: codegen passes each operand's
    broadcast mask (bit k = padded dim k) to the body; the plain form has zero masks."""
    from megakittens import _C
    if getattr(_C, "gpu_runtime_missing", "x") or not hasattr(_C, "gpu_generate_source"):
        pytest.skip("built without the GPU runtime")
    _check(lambda x, w: x * w, randn(128, 256), randn(256))
    assert "bcast_a = 0, bcast_b = 4;" in _C.gpu_generate_source(mk_backend.dispatchers[-1].program)  # rows: bit 2
    _check(lambda x, c: x + c, randn(128, 256), randn(128, 1))
    assert "bcast_a = 0, bcast_b = 8;" in _C.gpu_generate_source(mk_backend.dispatchers[-1].program)  # cols: bit 3
    _check(lambda x, y: x * y, randn(128, 256), randn(128, 256))
    assert "bcast_a = 0, bcast_b = 0;" in _C.gpu_generate_source(mk_backend.dispatchers[-1].program)