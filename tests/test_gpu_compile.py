"""megakittens.compile on CUDA tensors (issue 3): the dispatcher launches the persistent megakernel,
once per call, and matches eager; graphs with instruction types that have no device body yet fall back
to the CPU reference interpreter with a warning naming the reason."""
import warnings

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import many_slots, many_slots_inputs, randn, rel_err

pytestmark = pytest.mark.gpu
mk = torch.ops.megakittens


def chain(x, y, w):
    a = torch.relu(x) + y
    b = mk.rms_norm(a, w, 1e-5)
    return torch.sqrt(torch.abs(b * y)), torch.sub(b, x, alpha=0.5)


def _inputs():
    return randn(1000, 768, device="cuda"), randn(1000, 768, device="cuda"), randn(768, device="cuda")


@pytest.mark.parametrize("cluster_size", [1, 2])
@pytest.mark.parametrize("global_work_queue", [False, True, None])  # None: the queue (no Gemm / Attention)
def test_compile_runs_on_the_megakernel(cluster_size, global_work_queue):
    args = _inputs()
    f = megakittens.compile(chain, cluster_size=cluster_size, global_work_queue=global_work_queue)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: this graph must run on the GPU
        outs = f(*args)
        outs2 = f(*args)
    d = mk_backend.dispatchers[-1]
    assert d._gpu_error == "", d._gpu_error
    for o, o2, r in zip(outs, outs2, chain(*args)):
        assert o.is_cuda and rel_err(o, r) <= 1e-2
        assert o2.data_ptr() != o.data_ptr()  # a later call never overwrites a returned tensor
        assert rel_err(o2, r) <= 1e-2


def test_one_kernel_launch_per_call():
    args = _inputs()
    f = megakittens.compile(chain)
    f(*args)  # compile + JIT outside the profiled region
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        f(*args)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = [e.name for e in kernels]
    assert len(kernels) == 1, names
    assert not any("memset" in n.lower() for n in names)


def _row_scale(x, w):
    """An infinite clamp bound: an ElementwiseUnary constant with no device literal, so no device body."""
    return torch.clamp(x * w, max=float("inf"))


def test_unsupported_device_itype_falls_back_with_a_reason():
    args = [randn(128, 256, device="cuda"), randn(256, device="cuda")]
    with pytest.warns(RuntimeWarning, match="CPU reference interpreter"):
        out = megakittens.compile(_row_scale)(*args)
    assert out.is_cuda and rel_err(out, _row_scale(*args)) <= 1e-2
    assert mk_backend.dispatchers[-1]._gpu_error  # the reason is recorded (and was in the warning)


def _ln_split(x, w, b, qkv):
    """LayerNorm and a fused q/k/v split (megakittens/decompose.py) on the device: fp32 row reductions,
    mixed-dtype elementwise ops, slice views."""
    q, k, v = qkv.split(256, dim=-1)
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5) * (q + k * v)


def test_layer_norm_and_split_run_on_the_megakernel():
    args = (randn(2, 64, 256, scale=2.0, device="cuda") + 0.5, randn(256, device="cuda"), randn(256, device="cuda"),
            randn(2, 64, 768, device="cuda"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: this graph must run on the GPU
        out = megakittens.compile(_ln_split)(*args)
    assert out.is_cuda and rel_err(out, _ln_split(*args)) <= 1e-2


@pytest.mark.parametrize("n", [300, 800])
def test_more_than_256_tensor_slots_on_the_megakernel(n):
    """n inputs (slots up to ~n + 5: 10-bit slot ids, [Note: slot bits]; tile maps in device memory) through
    TMA adds, RMSNorm and a Gemm whose B operand sits in a slot >= 256 (>= 512 for n = 800)."""
    args = many_slots_inputs(n, device="cuda")
    f = megakittens.compile(many_slots)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: this graph must run on the GPU
        out = f(*args)
    d = mk_backend.dispatchers[-1]
    assert d._gpu_error == "", d._gpu_error
    assert len(d.program.slots) > n
    assert out.is_cuda and rel_err(out, many_slots(*args)) <= 1e-2
