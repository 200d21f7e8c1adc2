"""Elementwise fusion (src/trace/fuse_elementwise.h, issue 3's chain target) through megakittens.compile on
the CPU reference interpreter: connected elementwise nodes become one ElementwiseFused instruction type whose
intermediate values stay fp32 (float16 ones are rounded: [Note: fused rounding]), so the fused graph matches
the fp32 computation rounded once (relative error <= 1e-3, where bf16 rounding of every op costs ~1e-3 per op)
and eager within bf16 tolerance (relative error <= 1e-2)."""
import pytest
import torch
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, check_close, randn, rel_err


def chain20(x, y):  # benchmarks/run.py's chain (sqrt of |x|: the reference is NaN-free)
    ops = [torch.relu, torch.abs, torch.neg, torch.exp, lambda t: torch.sqrt(torch.abs(t))]
    for i in range(20):
        x = x + y if i % 2 else ops[(i // 2) % 5](x)
    return x


def diamond(x):
    a = torch.relu(x)
    return a * torch.sigmoid(a) - 0.5 * x


def bcast_row(x, w):  # the intermediate h is also an output: it is stored, the rest fuses after it
    h = torch.tanh(x * w)
    return h, h * 2 + torch.neg(w)


def fp32_between_casts(x, y):  # HF style: compute in fp32, cast back
    a = x.float()
    b = torch.sigmoid(a) * a + y
    return (b.square() - 1).to(BF16)


def three_inputs(x, y, z):  # more outer inputs than one instruction takes: two groups
    return F.silu(x) * y + torch.exp(z) * 0.5


def scalar_steps(x):
    return torch.clamp((1 - x) / 3, min=-0.25) ** 2 + 1e-6


def mixed_dtypes(x, y32):  # bf16 * fp32 -> fp32 (type promotion), then more fp32 steps
    return torch.abs(x * y32) + y32


def batched_bcast(x, c):  # (B, H, S, D) with a (S, D) operand, as RoPE's cos
    return torch.relu(x * c + x)


CASES = {  # name: (fn, input factory, fused icodes expected)
    "chain20": (chain20, lambda: (randn(256, 384, scale=0.5), randn(256, 384, scale=0.5)), 1),
    "diamond": (diamond, lambda: (randn(130, 260),), 1),
    "bcast_row": (bcast_row, lambda: (randn(64, 200), randn(200)), 2),  # neg(w) has w's shape: its own node
    "fp32_between_casts": (fp32_between_casts, lambda: (randn(96, 128), randn(96, 128, dtype=torch.float32)), 1),
    "three_inputs": (three_inputs, lambda: (randn(64, 128), randn(64, 128), randn(64, 128)), 2),
    "scalar_steps": (scalar_steps, lambda: (randn(100, 300),), 1),
    "mixed_dtypes": (mixed_dtypes, lambda: (randn(64, 96), randn(64, 96, dtype=torch.float32)), 1),
    "batched_bcast": (batched_bcast, lambda: (randn(2, 4, 64, 32), randn(64, 32)), 1),
}


def _run(fn, args, fuse):
    out = megakittens.compile(fn, fuse=fuse)(*args)
    return out, list(mk_backend.dispatchers[-1].program.icodes)


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_equals_unfused_and_matches_eager(case):
    fn, make, groups = CASES[case]
    args = make()
    before = [a.clone() for a in args]
    fused, icodes = _run(fn, args, True)
    unfused, plain = _run(fn, args, False)
    assert sum(c.startswith("ElementwiseFused") for c in icodes) == groups, icodes
    assert not any(c.startswith("ElementwiseFused") for c in plain)
    fused = fused if isinstance(fused, tuple) else (fused,)
    unfused = unfused if isinstance(unfused, tuple) else (unfused,)
    oracle = fn(*[a.float() for a in args])  # fp32 throughout (casts in fn still apply)
    oracle = oracle if isinstance(oracle, tuple) else (oracle,)
    for f, u, o in zip(fused, unfused, oracle):
        assert f.dtype == u.dtype and f.shape == u.shape
        if groups == 1:  # one fused node: nothing between input and output is rounded but the result
            err = rel_err(f, o.to(f.dtype))
            assert err <= 1e-3, f"{case}: fused vs fp32 rounded once: {err:.3g}"
    check_close(list(fused), fn(*args))
    check_close(list(fused), list(unfused))
    for a, b in zip(args, before):
        assert torch.equal(a, b), "an input was written"


def test_fused_chain_is_closer_to_fp32_than_eager():
    """Skipping the 19 intermediate bf16 roundings: the fused chain's error against fp32 is below eager's."""
    x, y = randn(256, 384, scale=0.5), randn(256, 384, scale=0.5)
    fused = megakittens.compile(chain20)(x, y)
    oracle = chain20(x.float(), y.float())
    assert rel_err(fused, oracle) < 0.75 * rel_err(chain20(x, y), oracle)


def test_chain_is_one_instruction_per_tile():
    """The 20 dependent steps become one: as many instructions as one elementwise op over the output."""
    x, y = randn(256, 384), randn(256, 384)
    megakittens.compile(chain20)(x, y)
    fused = mk_backend.dispatchers[-1].program
    megakittens.compile(lambda a, b: a + b)(x, y)
    single = mk_backend.dispatchers[-1].program
    assert fused.num_instructions == single.num_instructions
    assert [c for c in fused.icodes if c != "Noop"] == [c for c in fused.icodes if c.startswith("ElementwiseFused")]


def test_nan_propagates_through_fused_steps():
    x = randn(64, 128)
    x[3, 5] = float("nan")
    y = randn(64, 128)
    out = megakittens.compile(lambda a, b: torch.maximum(torch.relu(a), b) * 2)(x, y)
    ref = torch.maximum(torch.relu(x), y) * 2
    assert torch.isnan(out[3, 5]) and torch.equal(torch.isnan(out), torch.isnan(ref))


def test_non_float_operand_is_named_by_its_own_op():
    """A bool operand runs as a 0 / 1 mask (megakittens/masks.py); an int operand computed by an op with no fp32
    form keeps its op out of the group, so the error names that op."""
    x, m, i = randn(64, 128), torch.rand(64, 128) > 0.5, torch.randint(0, 5, (64, 128))
    f = lambda a, b: (a.relu() * b).exp()  # noqa: E731
    assert torch.equal(megakittens.compile(f)(x, m), f(x, m))
    with pytest.raises(Exception, match=r"node 'bitwise_xor': unsupported op aten.bitwise_xor.Scalar"):
        megakittens.compile(lambda a, b: (a.relu() * (b ^ 3)).exp())(x, i)
