"""The same whole-model megakernel built from two device-header trees, timed alternately in one process:
`python3 benchmarks/ab_kernels.py OLD_KERNELS_DIR [case ...]` on a GPU (cases as benchmarks/llama.py's,
"hf:1b" by default; "hf16:1b" is the same model in float16, built from this tree only).

Compiles each case once with megakittens (this checkout's host code), then builds its Program with the
headers of OLD_KERNELS_DIR (a `kernels/` folder of another commit, e.g. `git archive <rev> kernels | tar -x`)
and of this tree, and times each kernel alone (bench device_only, median of 20 launches) over four
alternating rounds: a header change that leaves the generated source alone (a template parameter with the
old default) shows up here or nowhere."""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import bench  # noqa: E402
from llama import _model  # noqa: E402
from model_timeline import capture  # noqa: E402

from megakittens import _C, gpu  # noqa: E402
from megakittens.options import work_queue_for  # noqa: E402


def launch_fn(program, slots, kernels_dir):
    k = _C.GpuKernel(program, kernels_dir, gpu.cuda_include_dir(), list(gpu.nvrtc_candidates()),
                     os.environ.get("MEGAKITTENS_CACHE_DIR", ""), True)
    ptrs = [int(t.data_ptr()) for t in slots]
    args = (work_queue_for(program, None), 10.0, False, True, -1)
    return lambda: k.run(ptrs, gpu._current_raw_stream(), *args, 0)


def main(old_dir, cases):
    for spec in cases:
        kind, name = spec.split(":")
        model, ids = _model(name)
        if kind == "hf16":
            model = model.to(torch.float16)
        program, slots, _ = capture(lambda i: model(i, use_cache=False).last_hidden_state, ids)
        if kind == "hf16":
            with torch.no_grad():
                eager = bench(lambda: model(ids, use_cache=False), iters=10)
            run = launch_fn(program, slots, gpu.kernels_dir())
            print(f"{spec}: kernel {bench(run, iters=20, device_only=True):.3f} ms, eager call {eager:.3f} ms",
                  flush=True)
            continue
        runs = {"old": launch_fn(program, slots, old_dir), "new": launch_fn(program, slots, gpu.kernels_dir())}
        times = {"old": [], "new": []}
        for _ in range(4):
            for tag, run in runs.items():
                times[tag].append(bench(run, iters=20, device_only=True))
        print(f"{spec}: old headers {' '.join(f'{t:.3f}' for t in times['old'])} ms, "
              f"new {' '.join(f'{t:.3f}' for t in times['new'])} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["hf:1b"])
