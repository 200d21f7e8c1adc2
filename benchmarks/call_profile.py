"""Where one call of a compiled model goes, host against GPU: `python3 benchmarks/call_profile.py [case ...]`.

For each case (benchmarks/llama.py names: "hf:1b", "hf:8b", "example:1b", ...) it compiles the model, then
prints, in milliseconds (medians; the GPU idle before each call, as `bench` times a latency row):
- call: CUDA events around one call of the compiled model (the latency row of run.py llama);
- kernel: the same around a bare relaunch of its megakernel on the call's slots (`gpu.run_program_gpu`);
- host: time until the call returns (Dynamo's guards, the Dispatcher, the launch), and the same for the
  Dispatcher alone (called with the arguments Dynamo passed it) and for the bare launch;
- the device activity torch.profiler records during one call (kernels, memcpy, memset), with the time from
  the call's start to each one's start: launches besides the megakernel, or a late start, show there.
"""
from __future__ import annotations

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import bench, host_ms  # noqa: E402
from llama import _example_model, _model  # noqa: E402

import megakittens  # noqa: E402
import megakittens.backend as mk_backend  # noqa: E402
from megakittens import gpu  # noqa: E402
from megakittens.dispatcher import Dispatcher  # noqa: E402


def _fwd(case):
    kind, size = case.split(":")
    if kind == "hf":
        model, ids = _model(size)
        return (lambda i: model(input_ids=i, use_cache=False).last_hidden_state), ids
    return _example_model(size)


def profile_case(case: str) -> None:
    fwd, ids = _fwd(case)
    mk_backend.dispatchers.clear()
    compiled = megakittens.compile(fwd)
    seen = {}
    orig = Dispatcher.__call__

    def spy(self, *args):  # the arguments Dynamo hands the Dispatcher
        seen["d"], seen["args"] = self, args
        return orig(self, *args)

    Dispatcher.keep_slot_tensors = True
    Dispatcher.__call__ = spy
    try:
        with torch.no_grad():
            compiled(ids)
    finally:
        Dispatcher.__call__ = orig
        Dispatcher.keep_slot_tensors = False
    d, args = seen["d"], seen["args"]
    slots = d.last_slot_tensors
    with torch.no_grad():
        call = bench(lambda: compiled(ids), iters=20, warmup=3)
        kernel = bench(lambda: gpu.run_program_gpu(d.program, slots, options=d.options), iters=20, warmup=3)
        h_call = host_ms(lambda: compiled(ids), iters=20)
        h_disp = host_ms(lambda: d(*args), iters=20)
        h_launch = host_ms(lambda: gpu.run_program_gpu(d.program, slots, options=d.options), iters=20)
    print(f"== {case}: {len(args)} arguments, {len(d.slots)} slots, {d.program.num_instructions} instructions")
    print(f"  call {call:.3f} ms | kernel {kernel:.3f} ms | host: call {h_call:.3f}, dispatcher {h_disp:.3f}, "
          f"bare launch {h_launch:.3f} ms")
    torch.cuda.synchronize()
    with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                             torch.profiler.ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        compiled(ids)
        t_ret = (time.perf_counter() - t0) * 1e3
        torch.cuda.synchronize()
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    if not events:
        return
    start = events[0].time_range.start
    print(f"  profiled call returned after {t_ret:.3f} ms; device activity (start from the first event, "
          "duration, name), then the slowest host ops:")
    dev = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    for e in dev:
        print(f"    {(e.time_range.start - start) / 1e3:8.3f} {(e.time_range.end - e.time_range.start) / 1e3:8.3f}  "
              f"{e.name[:90]}")
    host = [e for e in events if e.device_type != torch.autograd.DeviceType.CUDA]
    for e in sorted(host, key=lambda e: e.time_range.start - e.time_range.end)[:8]:
        print(f"    host {(e.time_range.start - start) / 1e3:8.3f} {(e.time_range.end - e.time_range.start) / 1e3:8.3f}  "
              f"{e.name[:90]}")


def main(argv):
    for case in argv or ["hf:1b", "hf:8b"]:
        profile_case(case)


if __name__ == "__main__":
    main(sys.argv[1:])
