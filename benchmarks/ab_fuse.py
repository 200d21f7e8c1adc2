"""Same-process A/B of a MEGAKITTENS_FUSE setting on an HF Llama shape, calls interleaved so that drift
(clocks, a neighbour) hits both sides alike: `python3 benchmarks/ab_fuse.py hf:1b no_gemm_rope` on a GPU.
A setting `VAR=value` sets that environment variable instead while the B side compiles, e.g.
`python3 benchmarks/ab_fuse.py hf:1b MEGAKITTENS_PROFILE=balance_costs=1`; `option:name=value` passes a
`megakittens.compile` option (an int, True / False) to the B side, e.g. `option:global_work_queue=True`.
An optional third argument sets the rounds (7).
Prints per round the median call latency (bench: CUDA events, GPU idle before) and device time
(bench(device_only=True)) of the default and of the setting, then the medians over rounds."""
from __future__ import annotations

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import bench, rel_err  # noqa: E402
from llama import _model  # noqa: E402

import megakittens  # noqa: E402


def main(case="hf:1b", setting="no_gemm_rope", rounds=7):
    model, ids = _model(case.split(":")[1])

    def fwd_default(i):  # two code objects: Dynamo caches a compiled frame per code object
        return model(input_ids=i, use_cache=False).last_hidden_state

    def fwd_setting(i):
        return model(input_ids=i, use_cache=False).last_hidden_state

    with torch.no_grad():
        ref = fwd_default(ids)
        options = {}
        if setting.startswith("option:"):
            name, _, value = setting[len("option:"):].partition("=")
            consts = {"True": True, "False": False, "None": None}
            options[name] = consts[value] if value in consts else int(value)
            var = value = None
        else:
            var, value = setting.split("=", 1) if "=" in setting else ("MEGAKITTENS_FUSE", setting)
            if not var.startswith("MEGAKITTENS_"):
                raise SystemExit(f"ab_fuse: {setting!r}: the variable must be a MEGAKITTENS_* one "
                                 "(e.g. MEGAKITTENS_PROFILE=balance_costs=1) or option:name=value")
        old = os.environ.pop(var, None) if var else None
        a = megakittens.compile(fwd_default)
        out_a = a(ids)
        if var:
            os.environ[var] = value  # read when the graph is traced and scheduled (the first call)
        b = megakittens.compile(fwd_setting, **options)
        out_b = b(ids)
        if var:
            os.environ.pop(var, None)
        if old is not None:
            os.environ[var] = old
        print(f"{case}: rel. err vs eager: default {rel_err(out_a, ref):.3g}, {setting} {rel_err(out_b, ref):.3g}")
        res = {k: [] for k in ("call default", f"call {setting}", "device default", f"device {setting}")}
        for r in range(rounds):
            res["call default"].append(bench(lambda: a(ids), iters=20, warmup=2))
            res[f"call {setting}"].append(bench(lambda: b(ids), iters=20, warmup=2))
            res["device default"].append(bench(lambda: a(ids), iters=20, warmup=2, device_only=True))
            res[f"device {setting}"].append(bench(lambda: b(ids), iters=20, warmup=2, device_only=True))
            print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in res.items()), flush=True)
        print(f"{case} medians over {rounds} rounds (ms): " + ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in res.items()))


if __name__ == "__main__":
    main(*sys.argv[1:3], *[int(x) for x in sys.argv[3:4]]) if len(sys.argv) > 2 else main()
