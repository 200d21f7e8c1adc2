"""Where a whole model's megakernel time goes: `python3 benchmarks/model_timeline.py [case ...]` on a GPU.

Compiles each case (benchmarks/llama.py: "example:8b", "hf:8b", "hf:1b", ...) with megakittens, then
launches its megakernel once more with the device timeline on (kernels/mk/vm.cuh [Note: timeline]) and
prints, per IType and for the slowest nodes: instructions, summed span of the nodes (first publish to last
store), and SM-busy time (loader begin to store end, summed over instructions, divided by the SM count),
so that a row's busy time is its share of the launch if the SMs were never idle."""
from __future__ import annotations

import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from llama import _example_model, _model  # noqa: E402
from timeline import (COMP_BEGIN, COMP_END, FIRST_FULL, FULL_WAIT_CYCLES, INPUTS, LOAD_BEGIN,  # noqa: E402
                      LOOP_CYCLES, MAINLOOP_END, PUBLISH, STORE_END)

import megakittens  # noqa: E402
from megakittens import gpu  # noqa: E402


def capture(fwd, ids):
    """Runs the compiled model once and returns (program, slot tensors, options) of its megakernel launch."""
    import megakittens.backend as mk_backend
    from megakittens.dispatcher import Dispatcher
    mk_backend.dispatchers.clear()
    Dispatcher.keep_slot_tensors = True  # the call keeps every slot as a tensor for the relaunches
    try:
        with torch.no_grad():
            out = megakittens.compile(fwd)(ids)
            ref = fwd(ids)
    finally:
        Dispatcher.keep_slot_tensors = False
    from common import rel_err
    print(f"relative error of the output vs eager: {rel_err(out, ref):.3g}", flush=True)
    if len(mk_backend.dispatchers) != 1 or mk_backend.dispatchers[0].calls != 1:
        raise RuntimeError(f"expected one megakernel launch, saw {len(mk_backend.dispatchers)} compiled graphs")
    d = mk_backend.dispatchers[0]
    return d.program, d.last_slot_tensors, d.options


def report(name, program, slots, options):
    n = program.num_instructions
    for _ in range(3):  # warm: JIT, L2, clocks
        gpu.run_program_gpu(program, slots, options=options)
    from common import bench
    print(f"{name}: kernel {bench(lambda: gpu.run_program_gpu(program, slots, options=options), iters=20):.3f} ms "
          "(median of 20 launches, timeline off)", flush=True)
    t = torch.zeros(n, gpu.TIMELINE_WORDS, dtype=torch.int64, device="cuda")
    gpu.run_program_gpu(program, slots, options=options, timeline=t)
    torch.cuda.synchronize()
    t = t.cpu()
    if os.environ.get("MK_TIMELINE_DUMP"):  # raw data for offline analysis: events, instruction table, nodes
        os.makedirs(os.environ["MK_TIMELINE_DUMP"], exist_ok=True)
        # The words in instruction order (the per-SM table's rows; the global one is in claim order).
        torch.save({"timeline": t, "table": torch.from_numpy(program.table_per_sm().reshape(-1, 64)[:n].copy()),
                    "node_of": list(program.instruction_node), "num_sms": program.num_sms,
                    "nodes": [(x.name, x.itype) for x in program.nodes]},
                   os.path.join(os.environ["MK_TIMELINE_DUMP"], name.replace(":", "_") + ".pt"))
    real = (t[:, STORE_END] > 0).nonzero().flatten().tolist()
    table = program.table_per_sm().reshape(-1, 64)  # row i = instruction i (per_sm launches: timeline row i)
    node_of = list(program.instruction_node)  # -1: Noop padding
    gemm_rows = [i for i in real if node_of[i] >= 0 and program.nodes[node_of[i]].itype.startswith("Gemm")
                 and int(table[i][7 + 12]) & 0xffff > 0]
    if gemm_rows:  # kernels/mk/vm.cuh kEvFlags (word 12): 1 = B multicast ([Note: gemm multicast])
        print(f"Gemm instructions with B multicast: {int((t[gemm_rows, 12] == 1).sum())} of {len(gemm_rows)}")
    t0 = int(t[real, PUBLISH].min())
    span_us = (int(t[real, STORE_END].max()) - t0) / 1e3
    sms = program.num_sms
    per_node = collections.defaultdict(lambda: [0, 1 << 62, 0, 0.0, 0.0])  # count, first, last, busy, wait
    comp = collections.defaultdict(list)  # per node: consumer compute of each instruction, us (incl. data waits)
    for i in real:
        nd = node_of[i]
        r = per_node[nd]
        r[0] += 1
        r[1] = min(r[1], int(t[i, PUBLISH]))
        end = max(int(t[i, STORE_END]), int(t[i, COMP_END]))  # SIMT bodies end in the consumers
        r[2] = max(r[2], end)
        r[3] += (end - int(t[i, LOAD_BEGIN])) / 1e3
        r[4] += max(0, int(t[i, INPUTS]) - int(t[i, LOAD_BEGIN])) / 1e3
        if t[i, COMP_BEGIN] > 0:
            comp[nd].append((int(t[i, COMP_END]) - int(t[i, COMP_BEGIN])) / 1e3)
    per_itype = collections.defaultdict(lambda: [0, 0, 0.0, 0.0, 0.0])  # nodes, instrs, span, busy, wait
    rows = []
    for nd, (cnt, first, last, busy, wait) in per_node.items():
        itype = program.nodes[nd].itype.split("(")[0] if nd >= 0 else "Noop"
        k = per_itype[itype]
        k[0] += 1
        k[1] += cnt
        k[2] += (last - first) / 1e3
        k[3] += busy / sms
        k[4] += wait / sms
        rows.append(((last - first) / 1e3, program.nodes[nd].name if nd >= 0 else "-", itype, cnt, busy / sms))
    print(f"\n== {name}: {n} instructions, {sms} SMs, launch span {span_us:.1f} us", flush=True)
    print(f"{'IType':22s} {'nodes':>6s} {'instrs':>7s} {'node span us':>13s} {'SM-busy us':>11s} {'input wait':>11s}")
    for itype, (nodes, cnt, span, busy, wait) in sorted(per_itype.items(), key=lambda kv: -kv[1][3]):
        print(f"{itype:22s} {nodes:6d} {cnt:7d} {span:13.1f} {busy:11.1f} {wait:11.1f}")
    gemm_clock(program, t, real, node_of)
    print("slowest nodes (span us, name, IType, instructions, SM-busy us):")
    for span, nm, itype, cnt, busy in sorted(rows, reverse=True)[:12]:
        print(f"  {span:9.1f}  {nm:40s} {itype:20s} {cnt:6d} {busy:9.1f}")
    # One stretch of the launch in time order (a middle layer): start and end of each node, microseconds
    # from the launch's first publish, so serialisation and gaps between nodes show.
    lo, hi = float(os.environ.get("MK_GANTT_FROM", 0.4)), float(os.environ.get("MK_GANTT_TO", 0.55))
    print(f"nodes starting in [{lo:.0%}, {hi:.0%}) of the launch (start, end us; instructions; SM-busy us; "
          "median and max consumer compute per instruction us, including its waits for data):")
    for nd, (cnt, first, last, busy, wait) in sorted(per_node.items(), key=lambda kv: kv[1][1]):
        a, b = (first - t0) / 1e3, (last - t0) / 1e3
        if nd >= 0 and lo * span_us <= a < hi * span_us:
            c = sorted(comp[nd]) or [0.0]
            print(f"  {a:8.1f} {b:8.1f}  {program.nodes[nd].name:36s} {program.nodes[nd].itype[:60]:60s} {cnt:5d} "
                  f"{busy / sms:7.1f} {c[len(c) // 2]:7.1f} {c[-1]:7.1f}")


def gemm_clock(program, t, real, node_of):
    """With MEGAKITTENS_DEFINES=MK_GEMM_WAIT_STATS=1 (kernels/mk/itypes/gemm.cuh [Note: gemm wait stats]): per
    Gemm IType the median mainloop in SM cycles and in us, their ratio (the SM clock while it ran) and the
    share of cycles consumer 0 waited for full stages. A whole model's kernel runs long enough for the
    H200's 700 W power cap to lower the clock (benchmarks/notes.md Session 29), which a short
    benchmark of the same Gemm does not see."""
    per = collections.defaultdict(list)
    for i in real:
        nd = node_of[i]
        if nd >= 0 and program.nodes[nd].itype.startswith("Gemm") and t[i, LOOP_CYCLES] > 0:
            ns = int(t[i, MAINLOOP_END]) - int(t[i, FIRST_FULL])
            if ns > 0:
                per[program.nodes[nd].itype].append((int(t[i, LOOP_CYCLES]), ns, int(t[i, FULL_WAIT_CYCLES])))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    if per:
        print("Gemm mainloops (MK_GEMM_WAIT_STATS): IType, tiles, median cycles, median us, SM clock GHz, full-wait share")
    for itype, v in sorted(per.items()):
        print(f"  {itype[:40]:40s} {len(v):6d} {med([c for c, _, _ in v]):9d} {med([n for _, n, _ in v]) / 1e3:8.1f} "
              f"{med([c / n for c, n, _ in v]):6.2f} {med([w / c for c, _, w in v]):6.2f}")


def main(argv):
    for spec in argv or ["example:8b", "hf:8b"]:
        kind, name = spec.split(":")
        if kind == "hf":
            model, ids = _model(name)

            def fwd(i, model=model):
                return model(input_ids=i, use_cache=False).last_hidden_state
        else:
            fwd, ids = _example_model(name)
        program, slots, options = capture(fwd, ids)
        report(spec, program, slots, options)
        del fwd, slots
        torch._dynamo.reset()
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
