"""``megakittens.compile``: capture a function or module with Dynamo, lower it to aten (seed §01)."""
from __future__ import annotations

import functools
import logging
import warnings
from typing import Any, Callable, Optional

import torch
import torch._dynamo

from megakittens import backend
from megakittens.options import Options


def _qualname(fn: Any) -> str:
    if isinstance(fn, torch.nn.Module):
        return type(fn).__qualname__
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__


@functools.lru_cache(maxsize=256)
def _backend(options: Options, name: str) -> Any:
    # One backend object per (options, name): Dynamo keys its cache on the backend, so compiling the
    # same function again with the same options reuses the compiled graph instead of recompiling.
    return backend.make_backend(options, name)


def _logger_methods() -> frozenset:
    """logging.Logger's methods and Hugging Face's additions to it (``warning_once``, which its loss helpers
    call when ``loss_type`` is unset): Dynamo cannot trace them, so under fullgraph each would be a graph
    break (an error)."""
    names = ("debug", "info", "warning", "warn", "warning_once", "info_once", "warning_advice")
    return frozenset(m for m in (getattr(logging.Logger, n, None) for n in names) if m is not None)


def _without_logging(call: Callable) -> Callable:
    """``call`` with Dynamo told to skip logger calls (``torch._dynamo.config.ignore_logger_methods``): the
    compiled graph does not log, where eager would have."""
    @functools.wraps(call)
    def run(*args: Any, **kwargs: Any) -> Any:
        ignored = set(torch._dynamo.config.ignore_logger_methods) | _logger_methods()
        with torch._dynamo.config.patch(ignore_logger_methods=ignored):
            return call(*args, **kwargs)
    return run


def _capture(fn: Callable, options: Options) -> Callable:
    # megakittens.compile of a compiled function compiles the original with the new options (Dynamo cannot
    # wrap its own wrapper twice).
    fn = getattr(fn, "_megakittens_original", fn)
    aot = _backend(options, _qualname(fn))
    optimize = getattr(torch._dynamo, "optimize", None)
    if optimize is None:  # a torch without the seed's entry point
        if not options.enable:
            return fn
        compiled = torch.compile(fn, backend=aot, fullgraph=True, dynamic=False)
    else:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*optimize.*deprecated.*")
            warnings.filterwarnings("ignore", message=r".*deprecated.*optimize.*")
            # nopython: one graph = one kernel, a graph break is an error; dynamic=False: a new shape recompiles.
            compiled = optimize(backend=aot, nopython=True, dynamic=False, disable=not options.enable)(fn)
    if not options.enable:
        return compiled
    if isinstance(compiled, torch.nn.Module):  # an OptimizedModule: keep the module, wrap its forward
        compiled.forward = _without_logging(compiled.forward)
        return compiled
    run = _without_logging(compiled)
    run._megakittens_original = fn
    return run


def compile(fn: Optional[Callable] = None, *, enable: bool = True, dry_run: bool = False, verbose: bool = False,
            save_dag: bool = False, save_schedule: bool = False, use_jit_cache: bool = True,
            global_work_queue: Optional[bool] = None, cluster_size: int = 2, target: Optional[str] = None,
            fallback: Optional[str] = None, fuse: bool = True, **unknown: Any) -> Any:
    """Compile ``fn`` (a function or nn.Module) into one persistent megakernel.

    Usable as ``compile(fn)``, ``@compile`` and ``@compile(verbose=True)``. The whole function must be one
    graph (a graph break is an error); every new input shape recompiles. Logger calls inside ``fn``
    (``logging.Logger`` methods, Hugging Face's ``warning_once``) are skipped rather than breaking the graph. Inputs: tensors of rank <= 4
    (bfloat16 or float16; float32 and int64 ids where docs/itypes.md says); a strided input (a transpose, a
    step slice, an expand) runs on a contiguous copy made at each call. CPU tensors run on the reference
    interpreter. Outputs have the strides eager would give them.

    enable: False returns ``fn`` unchanged (runs eagerly). dry_run: print a support report (and save_dag), then run
    eagerly. verbose: print the FX graph and per-phase timings. save_dag / save_schedule: write
    ``log/<qualname>.<NN>.graph.json`` (+ .png) / ``.schedule.txt`` (directory: MEGAKITTENS_LOG_DIR).
    use_jit_cache: GPU runtime cubin cache. global_work_queue: True claims instructions from one atomic work
    queue, False runs the per-SM tables, None (default) takes the global queue for programs without Gemm or
    Attention (``megakittens.options.work_queue_for``). cluster_size: 1 or 2. target: None (this machine,
    h200 profile), "h200" or "b200".
    fallback: None (default) compiles the whole graph or raises; "eager" compiles each maximal subgraph of
    supported ops into its own megakernel and runs the other ops as ordinary torch ops between them
    (``megakittens.backend.partitionings[-1]`` records the split; dry_run prints it). Graph breaks stay
    errors either way. fuse: False skips the fusion passes (RMSNorm, RoPE, repeat_kv, residual add, SwiGLU,
    activation epilogue, elementwise chains, attention written out as matmul / softmax / matmul), so each
    aten op lowers on its own, as in the seed.

    Raises TypeError for an unknown option name (as Python does, listing the valid ones), ValueError for a
    bad cluster_size, target, fallback, or a flag that is not a bool (global_work_queue: a bool or None).
    Compilation errors (``CompileError``: unsupported op, dtype, view or layout) surface on the first call,
    wrapped by Dynamo, with the message intact.
    """
    if unknown:
        raise TypeError(f"megakittens.compile: unknown option(s) {sorted(unknown)}; valid: "
                         f"{sorted(Options.__dataclass_fields__)}")
    options = Options(enable=enable, dry_run=dry_run, verbose=verbose, save_dag=save_dag,
                      save_schedule=save_schedule, use_jit_cache=use_jit_cache,
                      global_work_queue=global_work_queue, cluster_size=cluster_size, target=target,
                      fallback=fallback, fuse=fuse)
    if fn is None:
        return lambda f: _capture(f, options)
    return _capture(fn, options)
