"""Shared helpers of the benchmark suites (DESIGN §9): timing with CUDA events (median), building
Programs from small functions, and the machine-readable result rows."""
from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import megakittens.ops  # noqa: F401
from megakittens import _C, fx_export, gpu
from megakittens.options import Options

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def commit() -> str:
    if os.environ.get("MK_COMMIT"):
        return os.environ["MK_COMMIT"]
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True).strip()
    except Exception:
        return "unknown"


def env_info() -> dict:
    info = gpu.device_info()
    drv = info["driver_version"]
    return {"device": info["name"], "driver": f"CUDA driver API {drv // 1000}.{drv % 1000 // 10}",
            "date": datetime.date.today().isoformat(), "commit": commit(), "torch": torch.__version__}


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in fp64 (the models' accuracy measure, tests/test_gpu_llama.py)."""
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


_FLUSH = None


def flush_l2():
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    _FLUSH.zero_()


# Spin kernel length for bench(device_only=True): ~0.2 ms at the H200's ~2 GHz SM clock, longer than the
# host time of any single call benchmarked here (an eager RMSNorm: about 6 launches).
_HOST_COVER_CYCLES = 400_000


def bench(fn, iters=50, warmup=5, flush=False, device_only=False) -> float:
    """Median milliseconds of fn() over `iters` runs, CUDA events around each run, the GPU idle after each.

    device_only: a spin kernel (torch.cuda._sleep) runs before the start event, so the host enqueues the
    start event and fn's launches while the GPU is still busy and the events time fn's device work alone,
    not the host's launch latency (the method of triton.testing.do_bench, whose L2 flush before each run
    plays the spin kernel's part). Bandwidth rows use it; latency rows (a call as a user sees it) do not.
    """
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if flush:
            flush_l2()
        if device_only:
            torch.cuda._sleep(_HOST_COVER_CYCLES)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def host_ms(fn, iters=10, warmup=2) -> float:
    """Median host milliseconds of one fn() call that starts on an idle GPU: the time until the call
    returns (its launches enqueued), not the GPU time. bench() of a one-launch call is at least this much
    plus the kernel: the part of a latency a faster kernel cannot remove."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def program_for(fn, example_args, cluster_size=1, name="bench", fuse=True):
    fake = [a.detach().cpu() for a in example_args]
    gm = make_fx(fn, tracing_mode="fake")(*fake)
    dag = _C.trace(fx_export.export_graph(gm, name), fuse=fuse)
    # Options.profile: this GPU's h200 profile with MEGAKITTENS_PROFILE's overrides (A/B runs).
    return _C.schedule(dag, Options(cluster_size=cluster_size).profile(), cluster_size=cluster_size)


def parse_variant(text, tool):
    """An A/B variant `name:VAR=value|VAR=value` (MEGAKITTENS_* variables) as (name, env); `name:` alone is
    the default. Raises SystemExit naming `tool` and the entry when an entry is not MEGAKITTENS_*=value."""
    name, _, rest = text.partition(":")
    env = {}
    for item in filter(None, rest.split("|")):
        var, eq, value = item.partition("=")
        if not eq or not var.startswith("MEGAKITTENS_"):
            raise SystemExit(f"{tool}: variant {text!r}: entries must be MEGAKITTENS_*=value")
        env[var] = value
    return name or "default", env


def ab_common_args(ap, tool):
    """Adds the A/B tools' shared arguments (--modes, --variant, --rounds) to the argparse parser ap;
    returns a function that checks them and the tool's own --iters on the parsed namespace and gives
    (variants, modes), calling ap.error on a bad value."""
    ap.add_argument("--modes", default="per_sm,global")
    ap.add_argument("--variant", action="append", default=[], help="name:VAR=value|VAR=value (repeat)")
    ap.add_argument("--rounds", type=int, default=5)

    def check(a):
        variants = [parse_variant(v, tool) for v in (a.variant or ["default:"])]
        names = [n for n, _ in variants]
        if len(set(names)) != len(names):
            ap.error(f"--variant: names must differ, got {names}")
        modes = a.modes.split(",")
        if any(m not in ("per_sm", "global") for m in modes):
            ap.error(f"--modes: a comma-joined subset of per_sm,global, got {a.modes!r}")
        if a.rounds < 1 or a.iters < 1:
            ap.error(f"--rounds and --iters must be >= 1, got {a.rounds} and {a.iters}")
        return variants, modes
    return check


def with_env(env, fn):
    """fn() with the variables of env set, the old values restored after."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


class MkRunner:
    """Launches a Program over fixed slot buffers (inputs = args), as the dispatcher would."""

    def __init__(self, program, args, options=None):
        self.program = program
        self.options = dict(options or {})
        self.slots = [None] * len(program.slots)
        for k, s in enumerate(program.input_slots):
            self.slots[s] = args[k]
        for s, m in enumerate(program.slots):
            if self.slots[s] is None:
                self.slots[s] = torch.empty(list(m.shape), dtype=getattr(torch, m.dtype), device="cuda")
        self.kernel = gpu.kernel_for(program, self.options.get("use_jit_cache", True))
        self.ptrs = [int(t.data_ptr()) for t in self.slots]
        self.launch = gpu.launcher(program, self.options)  # the dispatcher's per-call path

    def __call__(self):
        self.launch(self.ptrs)

    def outputs(self):
        return [self.slots[s] for s in self.program.output_slots]

    def timeline(self):
        """One synchronised launch recording the event times: int64 [num_instructions, gpu.TIMELINE_WORDS],
        on the CPU."""
        t = torch.zeros(self.program.num_instructions, gpu.TIMELINE_WORDS, dtype=torch.int64, device="cuda")
        gpu.run_program_gpu(self.program, self.slots, options=self.options, timeline=t)
        torch.cuda.synchronize()
        return t.cpu()


def row(suite, case, metric, unit, mk, baselines: dict, env: dict, higher_is_better=True, **extra):
    base = next(iter(baselines.values())) if baselines else None
    ratio = None
    if mk is not None and base:
        ratio = (mk / base) if higher_is_better else (base / mk)
    r = {"suite": suite, "case": case, "metric": metric, "unit": unit, "megakittens": mk, "baselines": baselines,
         "ratio": ratio, "higher_is_better": higher_is_better, **env, **extra}
    print(json.dumps(r), flush=True)
    return r


def write(suite, rows):
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{suite}.json").write_text(json.dumps(rows, indent=1) + "\n")
    out = os.environ.get("OUT")
    if out:
        Path(out, f"{suite}.json").write_text(json.dumps(rows, indent=1) + "\n")
