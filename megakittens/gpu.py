"""The GPU runtime from Python: compile a scheduled Program into the persistent megakernel and launch
it on CUDA tensors (DESIGN §6, seed §07). The C++ side lives in src/runtime/ (bound as ``_C.GpuKernel``).

Entry points the dispatcher uses:
- ``num_ctas(cluster_size)``: the ``num_sms`` to schedule with (co-resident CTAs of the launch).
- ``run_program_gpu(program, slot_tensors, stream=None, options=None)``: JIT (cached) + one launch (the
  dispatcher allocates the slot tensors, reshape aliases included).

``options`` is a mapping or object with (all optional): ``use_jit_cache`` (True), ``global_work_queue``
(None: chosen by program, ``options.work_queue_for``), ``watchdog_s`` (10.0), ``sync`` (False: raise
watchdog errors at the next call instead of now).
"""
from __future__ import annotations

import functools
import glob
import os
import sys
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch

from megakittens import _C
from megakittens.options import work_queue_for

__all__ = ["available", "num_ctas", "kernel_for", "launcher", "run_program_gpu", "run_program_ptrs", "check", "device_info",
           "kernels_dir", "cuda_include_dir", "nvrtc_candidates"]

_KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"


# Event words per instruction row of a timeline (kernels/mk/vm.cuh kTimelineWords).
TIMELINE_WORDS = 27


def kernels_dir() -> str:
    """Folder holding kernels/mk/*.cuh ($MEGAKITTENS_KERNELS_DIR overrides)."""
    d = os.environ.get("MEGAKITTENS_KERNELS_DIR") or str(_KERNELS_DIR)
    if not os.path.exists(os.path.join(d, "mk", "interpreter.cuh")):
        raise RuntimeError(f"megakittens: device headers not found in {d} (set MEGAKITTENS_KERNELS_DIR)")
    return d


@functools.cache
def cuda_include_dir() -> Optional[str]:
    """A CUDA include folder with cuda_bf16.h and cccl/cuda/ptx, or None."""
    cands = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    cands += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for c in cands:
        inc = os.path.join(c, "include") if c else ""
        if inc and os.path.exists(os.path.join(inc, "cuda_bf16.h")) and os.path.isdir(os.path.join(inc, "cccl", "cuda")):
            return inc
    return None


@functools.cache
def nvrtc_candidates() -> tuple[str, ...]:
    """dlopen candidates for libnvrtc: $MEGAKITTENS_NVRTC, the nvidia-cuda-nvrtc wheel, the toolkit, the loader path."""
    out = []
    if os.environ.get("MEGAKITTENS_NVRTC"):
        out.append(os.environ["MEGAKITTENS_NVRTC"])
    for p in sys.path:
        for pat in ("nvidia/cu13/lib/libnvrtc.so*", "nvidia/cuda_nvrtc/lib/libnvrtc.so*"):
            out += sorted(x for x in glob.glob(os.path.join(p, pat)) if "builtins" not in x and "alt" not in x)
    inc = cuda_include_dir()
    if inc:
        out += sorted(glob.glob(os.path.join(os.path.dirname(inc), "lib64", "libnvrtc.so*")))
    out += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    seen, uniq = set(), []
    for x in out:
        if x not in seen:
            seen.add(x)
            uniq.append(x)
    return tuple(uniq)


def available() -> tuple[bool, str]:
    """(True, "") when CUDA tensors can run on the megakernel, else (False, reason)."""
    if getattr(_C, "gpu_runtime_missing", "x"):
        return False, f"megakittens was {getattr(_C, 'gpu_runtime_missing', 'built without the GPU runtime')}"
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    major, _ = torch.cuda.get_device_capability()
    if major != 9:
        return False, f"the megakernel targets Hopper (sm_90a); this device is sm_{major}x"
    if cuda_include_dir() is None:
        return False, "CUDA headers (cuda_bf16.h, cccl/) not found; set CUDA_HOME"
    return True, ""


def device_info() -> dict:
    torch.cuda.init()
    return _C.gpu_device_info()


@functools.cache
def num_ctas(cluster_size: int) -> int:
    """Co-resident megakernel CTAs (maxActiveClusters x cluster_size): schedule with num_sms = this."""
    torch.cuda.init()
    return int(_C.gpu_max_ctas(int(cluster_size)))


# One compiled kernel per Program object (the Program is immutable once scheduled).
_KERNELS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
_KERNELS_BY_ID: dict = {}


def _opt(options: Any, name: str, default: Any) -> Any:
    if options is None:
        return default
    if isinstance(options, dict):
        return options.get(name, default)
    return getattr(options, name, default)


def warn_ptxas_log(name: str, log: str) -> None:
    """Warns (UserWarning) when ptxas serialized the kernel's wgmma (C7510-C7520, e.g. a wgmma pipeline
    crossing a function call): correct, but every Gemm and Attention k-step slower (~27% more cycles in
    a whole Llama, benchmarks/notes.md Session 19). ``log``: the NVRTC / ptxas log of a fresh compile
    (empty on a disk-cache hit)."""
    bad = [ln.strip() for ln in log.splitlines() if "wgmma" in ln and "serialized" in ln]
    if bad:
        warnings.warn(f"megakittens: ptxas serialized the wgmma instructions of the megakernel for '{name}' "
                      f"(Gemm and Attention run slower): {bad[0]}", stacklevel=3)


def kernel_for(program: Any, use_jit_cache: bool = True) -> Any:
    """The ``_C.GpuKernel`` for ``program``, compiled on first use (disk cache unless use_jit_cache=False)."""
    key = id(program)
    hit = _KERNELS_BY_ID.get(key)
    if hit is not None and hit[0]() is program:
        return hit[1]
    ok, why = available()
    if not ok:
        raise RuntimeError(f"megakittens: GPU runtime unavailable: {why}")
    torch.cuda.init()
    k = _C.GpuKernel(program, kernels_dir(), cuda_include_dir(), list(nvrtc_candidates()),
                     os.environ.get("MEGAKITTENS_CACHE_DIR", ""), bool(use_jit_cache))
    warn_ptxas_log(getattr(program, "name", "?"), k.log)
    try:
        ref = weakref.ref(program)
    except TypeError:  # nanobind objects without weakref support: keep the program alive instead
        ref = (lambda p: (lambda: p))(program)
    _KERNELS_BY_ID[key] = (ref, k)
    return k


def run_program_gpu(program: Any, slot_tensors: Sequence[torch.Tensor], stream: Optional[int] = None,
                    options: Any = None, timeline: Optional[torch.Tensor] = None) -> None:
    """Launch ``program`` once over ``slot_tensors`` (one contiguous CUDA tensor per program slot, outputs
    allocated by the caller) on ``stream`` (an int CUstream; default: torch's current stream).

    ``timeline``: an int64 CUDA tensor ``[num_instructions, TIMELINE_WORDS]``; each role writes its
    %globaltimer event times (ns) into the instruction's row (kernels/mk/vm.cuh [Note: timeline];
    benchmarks/timeline.py).

    Raises ``_C.DeadlockError`` with the watchdog's report (at this call with ``sync``, else at the next
    call), ``RuntimeError``/``_C.GpuError`` for CUDA or JIT failures."""
    ptrs = []
    for s, t in enumerate(slot_tensors):
        if not t.is_cuda or not t.is_contiguous():
            raise ValueError(f"megakittens: slot {s} must be a contiguous CUDA tensor")
        ptrs.append(int(t.data_ptr()))
    run_program_ptrs(program, ptrs, stream=stream, options=options, timeline=timeline)


def run_program_ptrs(program: Any, ptrs: Sequence[int], stream: Optional[int] = None, options: Any = None,
                     timeline: Optional[torch.Tensor] = None) -> None:
    """``run_program_gpu`` on raw device addresses, one per slot (the caller keeps the memory alive until
    the launch is ordered before its reuse: same stream, as torch's caching allocator does)."""
    tl = 0
    if timeline is not None:
        want = (program.num_instructions, TIMELINE_WORDS)
        if not timeline.is_cuda or timeline.dtype != torch.int64 or tuple(timeline.shape) != want:
            raise ValueError(f"megakittens: timeline must be a CUDA int64 tensor of shape {want}, got "
                             f"{timeline.dtype} {tuple(timeline.shape)} on {timeline.device}")
        tl = int(timeline.data_ptr())
    launcher(program, options)(ptrs, stream, tl)


def _current_raw_stream() -> int:
    """torch's current CUstream of the current device as an int. torch.cuda.current_stream().cuda_stream
    builds a Stream object and took 8 us of host time per call on the H200 machine (2026-12-01), a
    fifth of a small MLP's launch; this is what Inductor's generated code calls (0.3 us)."""
    return torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice())


def launcher(program: Any, options: Any = None) -> Callable[..., None]:
    """``launch(ptrs, stream=None, timeline=0)``: one megakernel launch of ``program`` with ``options``
    (``Options`` or a dict: global_work_queue, watchdog_s, sync, pdl, plant_deadlock, use_jit_cache)
    resolved once, for callers that launch the same program many times (the dispatcher). ``stream``: an
    int CUstream, default torch's current one; ``timeline``: a device address (see run_program_gpu).
    Raises as ``run_program_gpu``."""
    k = kernel_for(program, bool(_opt(options, "use_jit_cache", True)))
    args = (work_queue_for(program, _opt(options, "global_work_queue", None)),
            float(_opt(options, "watchdog_s", 10.0)), bool(_opt(options, "sync", False)), bool(_opt(options, "pdl", True)),
            int(_opt(options, "plant_deadlock", -1)))
    run = k.run

    def launch(ptrs: Sequence[int], stream: Optional[int] = None, timeline: int = 0) -> None:
        run(ptrs, _current_raw_stream() if stream is None else int(stream), *args, timeline)

    return launch


def check(program: Any) -> None:
    """Synchronize and raise the watchdog report of any earlier launch of ``program``."""
    torch.cuda.synchronize()
    hit = _KERNELS_BY_ID.get(id(program))
    if hit is not None:
        hit[1].check()
