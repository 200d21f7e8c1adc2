"""Where an instruction's time goes: `python3 benchmarks/timeline.py [case ...]` on a GPU.

Launches each case once with the device timeline on (kernels/mk/vm.cuh [Note: timeline]) and prints, per
phase, the median and 90th percentile over instructions (microseconds), plus the per-SM instruction interval.
Phases (events in launch order of one instruction):
  stage     publish -> loader begins        (the loader still busy with the previous instruction)
  inputs    loader begins -> inputs ready   (global barrier waits)
  issue     inputs ready -> loader done     (page waits, TMA issue)
  compute   loader done -> consumer 0 done  (load latency + compute)
  reuse     storer begins -> reuse ready
  stored    consumer 0 done -> hand-back    (storer waits for all tiles, issues, stores read smem)
  complete  hand-back -> stores complete    (global writes visible)
  total     publish -> barriers released
  rtt       Gemm: loader issued k-tile 0 -> consumer 0 saw it land (one TMA round trip)
  mainloop  Gemm: k-tile 0 landed -> the last wgmma done (divide by k-tiles - 1 for the step time)
  epilogue  Gemm: last wgmma done -> consumer 0 done (bias wait, conversion, page stores), in two parts:
  epi_wait  Gemm: last wgmma done -> consumer 0 has its epilogue page and its bias inputs
  epi_body  Gemm: the rest (bias loads, activation, rounding, page stores)
Cases: relu, add, rmsnorm (8192x8192; rms16k 16384x8192, rms16kx16k 16384^2), chain (20 ops, 1024x1024), gemm4k, gemm8k
(gemm4k_nt, k132_nt: B as nn.Linear's (N, K) weight; o8b, swiglu8b: the 8B o projection + residual and SwiGLU at
2048 tokens), mlp512, mlp1024 and mlp4k (the seed MLP at (M, H) = (512, 512), (1024, 1024) and (4096, 4096);
mm3_4k, mm3relu_4k and mm3bias_4k: mlp4k without its bias and relu, with the relu only, with the bias only),
tiny (relu of one 128x128 tile: the launch floor), k128 / k256 / k64x128 (one column of 128x128, 128x256 or
64x128 tiles, K 16384: the k-step latency of one SM), k132 (132 wide tiles, K 16384: the step with every SM
loading) and attn2k / attn2k_d64 (SDPA at (16, 16, 2048, 128 / 64), full).
A second line per case reads the per-SM intervals' tail: the mean interval (what the span pays; the median
hides slow intervals), the phase medians of the instructions that close the slowest tenth of intervals next
to those closing the faster half, and the spread of the SMs' finish times.
Programs of at most 12 nodes also print one line per node: when its first instruction was published, its
inputs were ready, its first compute began, its last compute ended and its last store completed, in us
after the launch's first publish (the per-step hand-off latency of a dependent chain).
Every case also prints the host time of one launch call (common.host_ms) and where the launch's device
time goes around the instructions (launch_cost; `launch` is device time only, bench(device_only=True)).
With MEGAKITTENS_DEFINES=MK_GEMM_WAIT_STATS=1 a Gemm case also prints which side of the k-tile ring waits
(`waits:` line, kernels/mk/itypes/gemm.cuh [Note: gemm wait stats]); with MK_ATTN_WAIT_STATS=1 an attention
case prints where its consumer loop's cycles go (`attention loop:` line, attention.cuh [Note: attention wait
stats]).
Environment: MODES ("per_sm global"), CLUSTER (1 or 2), MEGAKITTENS_DEFINES / MEGAKITTENS_PROFILE (A/B runs)."""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import MkRunner, bench, host_ms, program_for  # noqa: E402
from gemm import mlp  # noqa: E402

import megakittens.ops  # noqa: E402,F401

BF16 = torch.bfloat16
(PUBLISH, LOAD_BEGIN, INPUTS, LOAD_END, COMP_BEGIN, COMP_END, STORE_BEGIN, REUSE, HANDBACK, COMPLETE,
 STORE_END, SM, FLAGS, FIRST_ISSUE, FIRST_FULL, MAINLOOP_END, EPILOGUE_READY, CTA_ENTRY, CTA_READY,
 LOOP_CYCLES, FULL_WAIT_CYCLES, EMPTY_WAIT_CYCLES, ATTN_TURN_WAIT, ATTN_ISSUE, ATTN_S_WAIT, ATTN_SOFTMAX,
 ATTN_PV_WAIT) = range(27)
# A Gemm under MK_GEMM_WAIT_STATS reuses three attention words (kernels/mk/vm.cuh, [Note: gemm turn stats]).
GEMM_HEAD_WAIT, GEMM_DRAIN_HEAD, GEMM_PAGES_KT0 = ATTN_TURN_WAIT, ATTN_ISSUE, ATTN_S_WAIT
PHASES = [("stage", PUBLISH, LOAD_BEGIN), ("inputs", LOAD_BEGIN, INPUTS), ("issue", INPUTS, LOAD_END),
          ("compute", LOAD_END, COMP_END), ("reuse", STORE_BEGIN, REUSE), ("stored", COMP_END, HANDBACK),
          ("complete", HANDBACK, COMPLETE), ("release", COMPLETE, STORE_END), ("total", PUBLISH, STORE_END),
          # Gemm only: k-tile 0's TMA round trip, the mainloop after it, the epilogue (bias wait included)
          ("rtt", FIRST_ISSUE, FIRST_FULL), ("mainloop", FIRST_FULL, MAINLOOP_END), ("epilogue", MAINLOOP_END, COMP_END),
          ("epi_wait", MAINLOOP_END, EPILOGUE_READY), ("epi_body", EPILOGUE_READY, COMP_END)]


def cases():
    r = lambda *s: torch.randn(*s, dtype=BF16, device="cuda")  # noqa: E731
    from run import chain20  # noqa: E402
    return {
        "relu": (lambda x: torch.relu(x), [r(8192, 8192)]),
        "add": (lambda x, y: x + y, [r(8192, 8192), r(8192, 8192)]),
        "rmsnorm": (lambda x, w: torch.ops.megakittens.rms_norm(x, w, 1e-6), [r(8192, 8192), r(8192)]),
        "rms16k": (lambda x, w: torch.ops.megakittens.rms_norm(x, w, 1e-6), [r(16384, 8192), r(8192)]),
        "rms16kx16k": (lambda x, w: torch.ops.megakittens.rms_norm(x, w, 1e-6), [r(16384, 16384), r(16384)]),
        "chain": (chain20, [r(1024, 1024) * 0.1, r(1024, 1024) * 0.1]),
        "gemm4k": (lambda a, b: a @ b, [r(4096, 4096), r(4096, 4096)]),
        "gemm8k": (lambda a, b: a @ b, [r(8192, 8192), r(8192, 8192)]),
        # nn.Linear's layout: the weight (N, K) read transposed (Gemm flag tb), as every model Gemm.
        "gemm4k_nt": (lambda a, w: a @ w.t(), [r(4096, 4096), r(4096, 4096)]),
        "k132_nt": (lambda a, w: a @ w.t(), [r(1536, 16384) * 0.01, r(2816, 16384)]),
        # The Llama-3-8B o projection with its residual add at 2048 tokens: one Gemm(tb, bias_full).
        "o8b": (lambda x, w, res: x @ w.t() + res, [r(2048, 4096), r(4096, 4096) * 0.02, r(2048, 4096)]),
        # The Llama-3-8B SwiGLU at 2048 tokens: silu(x W_gate^T) * (x W_up^T), one swiglu Gemm.
        "swiglu8b": (lambda x, wg, wu: torch.nn.functional.silu(x @ wg.t()) * (x @ wu.t()),
                     [r(2048, 4096), r(14336, 4096) * 0.02, r(14336, 4096) * 0.02]),
        "mlp512": (mlp, [r(3, 512, 512) * 512 ** -0.5, r(512, 512), r(3, 512, 512)]),
        "mlp1024": (mlp, [r(3, 1024, 1024) * 1024 ** -0.5, r(1024, 1024), r(3, 1024, 1024)]),
        "mlp4k": (mlp, [r(3, 4096, 4096) * 4096 ** -0.5, r(4096, 4096), r(3, 4096, 4096)]),
        # The (4096, 4096) MLP without its bias and relu: three dependent 4096^3 products.
        "mm3_4k": (lambda W, x: _mm3(W, x), [r(3, 4096, 4096) * 4096 ** -0.5, r(4096, 4096)]),
        "mm3relu_4k": (lambda W, x: _mm3(W, x, relu=True), [r(3, 4096, 4096) * 4096 ** -0.5, r(4096, 4096)]),
        "mm3bias_4k": (lambda W, x, b: _mm3(W, x, b),
                       [r(3, 4096, 4096) * 4096 ** -0.5, r(4096, 4096), r(3, 4096, 4096)]),
        "tiny": (lambda x: torch.relu(x), [r(128, 128)]),
        "k128": (lambda a, b: a @ b, [r(128, 16384) * 0.01, r(16384, 128)]),
        "k256": (lambda a, b: a @ b, [r(128, 16384) * 0.01, r(16384, 256)]),
        "k64x128": (lambda a, b: a @ b, [r(64, 16384) * 0.01, r(16384, 128)]),
        "k132": (lambda a, b: a @ b, [r(1536, 16384) * 0.01, r(16384, 2816)]),
        # Attention alone (issue 5's first shape, full; and at head dim 64). `cublas:attn2k_cudnn` in
        # benchmarks/ncu_case.py: torch's cuDNN SDPA on the same inputs.
        "attn2k": (_sdpa, [r(16, 16, 2048, 128) for _ in range(3)]),
        "attn2k_cudnn": (_sdpa_cudnn, [r(16, 16, 2048, 128) for _ in range(3)]),
        "attn2k_d64": (_sdpa, [r(16, 16, 2048, 64) for _ in range(3)]),
        "attn2k_d64_cudnn": (_sdpa_cudnn, [r(16, 16, 2048, 64) for _ in range(3)]),
        # Causal: the same shapes, and an HF 1B layer's attention (32 heads over 8 KV heads, 1024 tokens).
        "attn2k_causal": (_sdpa_causal, [r(16, 16, 2048, 128) for _ in range(3)]),
        "attn2k_d64_causal": (_sdpa_causal, [r(16, 16, 2048, 64) for _ in range(3)]),
        "attn1b": (_sdpa_gqa_causal, [r(1, 32, 1024, 64), r(1, 8, 1024, 64), r(1, 8, 1024, 64)]),
    }


def _mm3(W, x, b=None, relu=False):
    for i in range(3):
        x = x @ W[i] if b is None else x @ W[i] + b[i]
        x = torch.relu(x) if relu else x
    return x


def _sdpa(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def _sdpa_causal(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def _sdpa_gqa_causal(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def _sdpa_cudnn(q, k, v):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        return _sdpa(q, k, v)


def pct(v: torch.Tensor, q: float) -> float:
    return float(torch.quantile(v.double(), q)) / 1e3 if v.numel() else float("nan")


def per_node(program, t: torch.Tensor) -> None:
    """One line per node: first publish, inputs ready, first compute, last compute end, last store end (us)."""
    node_of = torch.tensor(list(program.instruction_node), dtype=torch.int64)
    t = t[: node_of.numel()]
    real = t[:, STORE_END] > 0
    t0 = int(t[real, PUBLISH].min())
    us = lambda v: (int(v) - t0) / 1e3  # noqa: E731
    for k, node in enumerate(program.nodes):
        rows = t[(node_of == k) & real]
        if rows.shape[0] == 0:
            continue
        print(f"    {node.name[:28]:28s} {node.itype[:34]:34s} n={rows.shape[0]:4d} publish {us(rows[:, PUBLISH].min()):7.1f}"
              f" inputs {us(rows[:, INPUTS].min()):7.1f}..{us(rows[:, INPUTS].max()):7.1f}"
              f" compute {us(rows[:, COMP_BEGIN].min()):7.1f}..{us(rows[:, COMP_END].max()):7.1f}"
              f" stored {us(rows[:, STORE_END].max()):7.1f}", flush=True)


def durations(rows: torch.Tensor, a: int, b: int):
    """Event b minus event a per row (ns, >= 0), and which rows recorded both."""
    return (rows[:, b] - rows[:, a]).clamp(min=0), (rows[:, a] > 0) & (rows[:, b] > 0)


def analyse(name: str, t: torch.Tensor, mode: str, ms: float) -> None:
    t = t[t[:, PUBLISH] > 0]  # Noop padding rows have no loader events but do have publish; keep real ones
    real = t[t[:, STORE_END] > 0]
    t0 = int(real[:, PUBLISH].min())
    span = (int(real[:, STORE_END].max()) - t0) / 1e3
    parts = []
    for label, a, b in PHASES:
        d, ok = durations(real, a, b)
        parts.append(f"{label} {pct(d[ok], .5):.2f}/{pct(d[ok], .9):.2f}")
    g, closing = sm_intervals(real)
    print(f"{name:8s} {mode:6s} n={real.shape[0]:6d} launch {ms * 1e3:8.1f} us span {span:8.1f} us | per-SM interval {pct(g, .5):.2f}/"
          f"{pct(g, .9):.2f} | " + " | ".join(parts), flush=True)
    if g.numel() > 10:
        tail(real, g, closing, t0)
    launch_cost(t, t0, int(real[:, STORE_END].max()), ms)
    wait_stats(real)
    attn_stats(real)
    turns(real)


def wait_stats(real: torch.Tensor) -> None:
    """Gemm under MEGAKITTENS_DEFINES=MK_GEMM_WAIT_STATS=1 (kernels/mk/itypes/gemm.cuh [Note: gemm wait
    stats]): the fraction of consumer 0's mainloop cycles spent waiting for full stages and the loader's
    cycles waiting for empty ones (relative to the same mainloop), median / p90 over instructions."""
    r = real[(real[:, LOOP_CYCLES] > 0) & (real[:, ATTN_SOFTMAX] == 0)]
    if r.numel() == 0:
        return
    loop = r[:, LOOP_CYCLES].double()
    full, empty = r[:, FULL_WAIT_CYCLES].double() / loop, r[:, EMPTY_WAIT_CYCLES].double() / loop
    ghz = loop / durations(r, FIRST_FULL, MAINLOOP_END)[0].double().clamp(min=1)
    q = lambda v, f: float(torch.quantile(v, f))  # noqa: E731
    head = r[:, GEMM_HEAD_WAIT].double() / loop
    print(f"    waits: consumer 0 on full {q(full, .5):.3f}/{q(full, .9):.3f} (k-tiles 1-3 {q(head, .5):.3f}/"
          f"{q(head, .9):.3f}), loader on empty "
          f"{q(empty, .5):.3f}/{q(empty, .9):.3f} of the mainloop's {q(loop, .5):.0f} cycles "
          f"(SM clock {q(ghz, .5):.2f} GHz)", flush=True)


def attn_stats(real: torch.Tensor) -> None:
    """Attention under MEGAKITTENS_DEFINES=MK_ATTN_WAIT_STATS=1 (kernels/mk/itypes/attention.cuh [Note:
    attention wait stats]): consumer warp 0's loop cycles (turns 1 .. nb-1), the SM clock, the loop's share
    of the instruction's compute (the rest: Q, the first block, the last P V, the epilogue), and each part's
    share of the loop, median / p90 over instructions (kv_head: the K / V waits of the turns before the
    stage ring's first wrap, kv those after it)."""
    r = real[(real[:, ATTN_SOFTMAX] > 0) & (real[:, LOOP_CYCLES] > 0)]
    if r.numel() == 0:
        return
    loop = r[:, LOOP_CYCLES].double()
    q = lambda v, f: float(torch.quantile(v, f))  # noqa: E731
    parts = [("kv", FULL_WAIT_CYCLES), ("kv_head", EMPTY_WAIT_CYCLES), ("turn", ATTN_TURN_WAIT),
             ("issue", ATTN_ISSUE), ("s_wait", ATTN_S_WAIT),
             ("softmax", ATTN_SOFTMAX), ("pv_wait", ATTN_PV_WAIT)]
    rest = loop - sum(r[:, w].double() for _, w in parts)
    shares = [f"{n} {q(r[:, w].double() / loop, .5):.3f}/{q(r[:, w].double() / loop, .9):.3f}" for n, w in parts]
    loop_ns = durations(r, FIRST_FULL, MAINLOOP_END)[0].double().clamp(min=1)
    of_compute = loop_ns / durations(r, COMP_BEGIN, COMP_END)[0].double().clamp(min=1)
    print(f"    attention loop: {q(loop, .5):.0f}/{q(loop, .9):.0f} cycles (SM clock {q(loop / loop_ns, .5):.2f} GHz, "
          f"{q(of_compute, .5):.3f} of the instruction's compute); shares " + ", ".join(shares) +
          f", rest {q(rest / loop, .5):.3f}/{q(rest / loop, .9):.3f}", flush=True)


def attn_by_blocks(program, t: torch.Tensor, mode: str) -> None:
    """Attention: per key-block count nb, the instructions' median compute (consumer 0's begin -> end) and,
    under MK_ATTN_WAIT_STATS=1, its head (begin -> the loop's start: Q, S_0, the first softmax) and tail
    (the loop's end -> end: the last P V, the epilogue), and the dispatch before it (the SM's previous
    compute end -> this begin), in us; then a least-squares fit compute = a + b * nb: a is what an
    instruction costs beyond its blocks (a causal tile's loop is short, so a weighs on causal most). Under the
    global queue timeline row r is instruction program.global_order[r] ([Note: global claim order])."""
    rows, nbs = [], []
    order = list(program.global_order) if mode == "global" else range(program.num_instructions)
    for r_, i in enumerate(order):
        if r_ >= t.shape[0]:
            break
        node = program.nodes[program.instruction_node[i]]
        if not node.itype.startswith("Attention") or int(t[r_, STORE_END]) == 0:
            continue
        idx = program.instruction(i)["indices"]
        if idx[4] <= 0:
            continue
        bn = 128  # kv block rows at D 64 and at D 128 (attention.cuh Geo::BN, MK_ATTN_BN_D128 default)
        rows.append(r_)
        nbs.append((idx[5] + bn - 1) // bn)
    if not rows:
        return
    r = t[torch.tensor(rows)]
    nb = torch.tensor(nbs)
    prev = torch.zeros(r.shape[0], dtype=torch.int64)
    for sm in r[:, SM].unique():
        sel = (r[:, SM] == sm).nonzero().flatten()
        order = sel[r[sel, COMP_BEGIN].argsort()]
        prev[order[1:]] = r[order[:-1], COMP_END]
    comp = (r[:, COMP_END] - r[:, COMP_BEGIN]).double() / 1e3
    stats = bool((r[:, FIRST_FULL] > 0).any())
    line = []
    for k in nb.unique().tolist():
        m = nb == k
        part = f"nb {k}: n {int(m.sum())} compute {float(comp[m].median()):.2f}"
        if stats:
            h = m & (r[:, FIRST_FULL] > 0)
            if bool(h.any()):
                head = (r[h, FIRST_FULL] - r[h, COMP_BEGIN]).double().median() / 1e3
                tl = (r[h, COMP_END] - r[h, MAINLOOP_END]).double().median() / 1e3
                part += f" head {float(head):.2f} tail {float(tl):.2f}"
        d = m & (prev > 0)
        if bool(d.any()):
            part += f" dispatch {float((r[d, COMP_BEGIN] - prev[d]).double().median() / 1e3):.2f}"
        line.append(part)
    print("    attention by key blocks: " + "; ".join(line), flush=True)
    if nb.unique().numel() > 1:
        X = torch.stack([torch.ones_like(comp), nb.double()], 1)
        a, b = torch.linalg.lstsq(X, comp.unsqueeze(1)).solution.flatten().tolist()
        print(f"    attention fit: compute = {a:.2f} + {b:.3f} * nb us (a: per instruction, b: per key block)",
              flush=True)


def turns(real: torch.Tensor) -> None:
    """Gemm: the turn from one instruction to the next on an SM (consecutive by compute begin), median / p90
    in us: `turn` the last wgmma of i done -> consumer 0 saw k-tile 0 of i + 1 land (the tensor core's idle
    time between tiles), of which `epilogue` (i's) and `dispatch` (consumer 0 done with i -> began i + 1);
    `lead` how long before i's last wgmma the loader issued i + 1's k-tile 0 (negative: after), and the
    loader's path to it, `inputs` (i + 1's barrier waits) and `pages` (inputs ready -> k-tile 0 issued)."""
    r = real[(real[:, FIRST_FULL] > 0) & (real[:, FIRST_ISSUE] > 0) & (real[:, MAINLOOP_END] > 0)]
    pairs = []
    for sm in r[:, SM].unique():
        x = r[r[:, SM] == sm]
        x = x[x[:, COMP_BEGIN].argsort()]
        if x.shape[0] > 1:
            pairs.append((x[:-1], x[1:]))
    if not pairs:
        return
    a, b = torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])
    parts = {"turn": b[:, FIRST_FULL] - a[:, MAINLOOP_END], "epilogue": a[:, COMP_END] - a[:, MAINLOOP_END],
             "dispatch": b[:, COMP_BEGIN] - a[:, COMP_END], "lead": a[:, MAINLOOP_END] - b[:, FIRST_ISSUE],
             "inputs": b[:, INPUTS] - b[:, LOAD_BEGIN], "pages": b[:, FIRST_ISSUE] - b[:, INPUTS]}
    # MK_GEMM_WAIT_STATS ([Note: gemm turn stats]): how long before i's mainloop end its drain had freed
    # the pages of i + 1's k-tile 0 (negative: after), then until i + 1's loader had them, then armed
    # and issued k-tile 0.
    ok = (a[:, GEMM_DRAIN_HEAD] > 0) & (b[:, GEMM_PAGES_KT0] > 0)
    if bool(ok.any()):
        a, b = a[ok], b[ok]
        parts.update({"drain_head": a[:, MAINLOOP_END] - a[:, GEMM_DRAIN_HEAD],
                      "granted": b[:, GEMM_PAGES_KT0] - a[:, GEMM_DRAIN_HEAD],
                      "issued": b[:, FIRST_ISSUE] - b[:, GEMM_PAGES_KT0]})
    print("    turn: " + " | ".join(f"{k} {pct(v, .5):.2f}/{pct(v, .9):.2f}" for k, v in parts.items()), flush=True)


def launch_cost(t: torch.Tensor, t0: int, end: int, ms: float) -> None:
    """What the launch costs around the instructions (us): the CTAs' kernel entries and the ends of their
    prologues (barrier inits, CTA barrier, griddepcontrol.wait) relative to the first publish, and the
    device time outside [first entry, last store end] (the grid's launch and retirement, event overhead)."""
    entry, ready = t[t[:, CTA_ENTRY] > 0][:, CTA_ENTRY], t[t[:, CTA_READY] > 0][:, CTA_READY]
    if entry.numel() == 0:
        return
    e, r = (entry - t0).double() / 1e3, (ready - t0).double() / 1e3
    q = lambda v: f"{float(v.min()):.1f}/{float(v.median()):.1f}/{float(v.max()):.1f}"  # noqa: E731
    inside = (end - int(entry.min())) / 1e3
    print(f"    launch: CTA entry {q(e)} us, prologue done {q(r)} us (min/median/max, vs first publish); "
          f"first entry to last store {inside:.1f} us; device time outside it {ms * 1e3 - inside:.1f} us", flush=True)


def sm_intervals(real: torch.Tensor):
    """Per-SM intervals between consecutive instructions' ends (ns), and the instruction closing each."""
    gaps, closing = [], []
    for sm in real[:, SM].unique():
        r = real[real[:, SM] == sm]
        r = r[r[:, STORE_END].argsort()]
        if r.shape[0] > 1:
            gaps.append(r[1:, STORE_END] - r[:-1, STORE_END])
            closing.append(r[1:])
    if not gaps:
        return torch.zeros(0, dtype=torch.int64), real[:0]
    return torch.cat(gaps), torch.cat(closing)


def tail(real: torch.Tensor, g: torch.Tensor, closing: torch.Tensor, t0: int) -> None:
    """Where the slow intervals go: the mean interval (what the span pays, unlike the median), the phases
    of the instructions closing the slowest tenth of intervals against those closing the faster half, and
    how far apart the SMs finish (us)."""
    slow, fast = g >= torch.quantile(g.double(), .9), g <= torch.quantile(g.double(), .5)
    parts = []
    for label, a, b in PHASES[:7]:
        d, ok = durations(closing, a, b)
        parts.append(f"{label} {pct(d[slow & ok], .5):.2f}/{pct(d[fast & ok], .5):.2f}")
    last = torch.stack([real[real[:, SM] == sm][:, STORE_END].max() for sm in real[:, SM].unique()]) - t0
    print(f"    interval mean {g.double().mean() / 1e3:.2f} us; slowest 10% vs fastest half, closing instruction's "
          f"phase medians: " + " | ".join(parts) + f"; SMs finish at {pct(last, 0):.1f}/{pct(last, .5):.1f}/"
          f"{pct(last, 1):.1f} us (min/median/max)", flush=True)


def main(argv):
    print("MEGAKITTENS_DEFINES=" + os.environ.get("MEGAKITTENS_DEFINES", ""))
    want = argv or ["relu", "add", "rmsnorm", "chain", "gemm4k", "gemm8k"]
    all_cases = cases()
    print("phase: median/p90 us over instructions")
    for name in want:
        fn, args = all_cases[name]
        cluster = int(os.environ.get("CLUSTER", "1"))
        p = program_for(fn, args, cluster_size=cluster, name=f"timeline_{name}_c{cluster}")
        for mode in os.environ.get("MODES", "per_sm global").split():
            runner = MkRunner(p, args, {"global_work_queue": mode == "global"})
            ms = bench(runner, iters=20, device_only=True)
            t = runner.timeline()
            analyse(name, t, mode, ms)
            print(f"    host {host_ms(runner) * 1e3:.1f} us per launch call", flush=True)
            if len(p.nodes) <= 12:
                per_node(p, t)
            attn_by_blocks(p, t, mode)


if __name__ == "__main__":
    main(sys.argv[1:])
