"""Compile options (seed §01, DESIGN §1), validated once when ``compile`` is called."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from megakittens import _C

TARGETS = (None, "b200", "h200")
# Profile fields MEGAKITTENS_PROFILE may set (experiments, A/B runs): Gemm tile widths, split-K pieces,
# RMSNorm row pages per instruction and their balance, the cost-balanced placement of causal Attention tiles.
PROFILE_OVERRIDES = ("gemm_n", "gemm_n_narrow", "gemm_split_k", "gemm_split_chain_steps", "rms_norm_pages",
                     "rms_norm_balance", "balance_costs", "claim_chunk", "max_slots")
# The values each override may take (the device bodies' limits: kernels/mk/itypes/gemm.cuh runs 64-column
# boxes in tiles of at most 256 columns, rms_norm.cuh at most 3 row pages), as (test, what it means).
_OVERRIDE_RANGES = {
    "gemm_n": (lambda v: 64 <= v <= 256 and v % 64 == 0, "a multiple of 64 from 64 to 256"),
    "gemm_n_narrow": (lambda v: v == 0 or (64 <= v <= 256 and v % 64 == 0), "0 (off) or a multiple of 64 from 64 to 256"),
    "gemm_split_k": (lambda v: 1 <= v <= 64, "from 1 (never split) to 64"),
    "gemm_split_chain_steps": (lambda v: 0 <= v <= 1000, "from 0 to 1000"),
    "rms_norm_pages": (lambda v: 1 <= v <= 3, "1, 2 or 3"),
    "rms_norm_balance": (lambda v: v in (0, 1), "0 (uniform row tiles) or 1 (balanced over the SMs)"),
    "balance_costs": (lambda v: v in (0, 1, 2, 3),
                      "0 (off), 1 (every node), 2 (nodes of at most 2 instructions per SM) or 3 (every node, chunk by chunk)"),
    "claim_chunk": (lambda v: -1 <= v <= 64, "-1 (the IType's order), 0 (the whole node longest first) or waves per chunk, 1 to 64"),
    "max_slots": (lambda v: 0 <= v <= _C.max_slots,
                  f"0 (the instruction's limit, {_C.max_slots}) or a lower tensor slot limit, 1 to {_C.max_slots}"),
}
CLUSTER_SIZES = (1, 2)
FALLBACKS = (None, "eager")


@dataclass(frozen=True)
class Options:
    enable: bool = True
    dry_run: bool = False          # trace (and save_dag) only, then run the graph eagerly
    verbose: bool = False          # print the FX table and per-phase timings
    save_dag: bool = False         # write <log>/<qualname>.<NN>.graph.json (+ .graph.png)
    save_schedule: bool = False    # write <log>/<qualname>.<NN>.schedule.txt
    use_jit_cache: bool = True     # GPU runtime: reuse compiled cubins from the disk cache
    # True: instructions claimed from one atomic queue; False: per-SM tables; None: by program (work_queue_for)
    global_work_queue: Optional[bool] = None
    cluster_size: int = 2
    target: Optional[str] = None   # None: the local device (h200 profile), else "b200" / "h200"
    fallback: Optional[str] = None  # None: the whole graph or an error; "eager": unsupported ops run as torch ops
    fuse: bool = True              # False: no fusion passes (src/trace/tracer.h trace), each aten op on its own

    def __post_init__(self):
        for name in ("enable", "dry_run", "verbose", "save_dag", "save_schedule", "use_jit_cache", "fuse"):
            if not isinstance(getattr(self, name), bool):  # "no" would be truthy: refuse, never guess
                raise ValueError(f"megakittens: {name} must be True or False, got {getattr(self, name)!r}")
        _check_work_queue(self.global_work_queue)
        if self.cluster_size not in CLUSTER_SIZES or not isinstance(self.cluster_size, int) or \
                isinstance(self.cluster_size, bool):
            raise ValueError(f"megakittens: cluster_size must be 1 or 2, got {self.cluster_size!r}")
        if self.target not in TARGETS:
            raise ValueError(f"megakittens: target must be None, 'b200' or 'h200', got {self.target!r}")
        if self.fallback not in FALLBACKS:
            raise ValueError(f"megakittens: fallback must be None (compile the whole graph or raise) or 'eager' "
                             f"(unsupported ops run as torch ops between megakernels), got {self.fallback!r}")

    def profile(self):
        """The target ``_C.Profile`` (``profile_args``), with the overrides of the environment variable
        ``MEGAKITTENS_PROFILE="gemm_split_k=1,gemm_n_narrow=0"`` (fields in PROFILE_OVERRIDES, int values)
        applied. Raises ValueError naming a malformed entry, an unknown field or a value out of its range."""
        import os  # noqa: PLC0415
        import re  # noqa: PLC0415
        p = _C.Profile.by_name(*self.profile_args())
        seen = {}
        for item in filter(None, (s.strip() for s in os.environ.get("MEGAKITTENS_PROFILE", "").split(","))):
            key, _, value = item.partition("=")
            if key not in PROFILE_OVERRIDES or re.fullmatch(r"-?[0-9]+", value) is None:
                raise ValueError(f"megakittens: MEGAKITTENS_PROFILE entry {item!r} must be <field>=<int> with field "
                                 f"one of {', '.join(PROFILE_OVERRIDES)}")
            if key in seen:
                raise ValueError(f"megakittens: MEGAKITTENS_PROFILE entry {item!r}: {key} is already set by "
                                 f"{seen[key]!r}; give each field once")
            seen[key] = item
            ok, what = _OVERRIDE_RANGES[key]
            if not ok(int(value)):
                raise ValueError(f"megakittens: MEGAKITTENS_PROFILE entry {item!r}: {key} must be {what}, got {int(value)}")
            setattr(p, key, int(value))
        if p.gemm_n_narrow > p.gemm_n:
            given = " and ".join(repr(seen[k]) for k in ("gemm_n", "gemm_n_narrow") if k in seen)
            raise ValueError(f"megakittens: MEGAKITTENS_PROFILE entry {given}: gemm_n_narrow ({p.gemm_n_narrow}"
                             f"{'' if 'gemm_n_narrow' in seen else f', the {p.name} profile default'}) must not "
                             f"exceed gemm_n ({p.gemm_n}{'' if 'gemm_n' in seen else f', the {p.name} default'}); "
                             f"set gemm_n_narrow=0 (no narrow tiles) or at most gemm_n")
        return p

    def profile_args(self) -> tuple[str, int]:
        """(profile name, num_sms) for ``_C.Profile.by_name``; num_sms 0 keeps the profile's default.

        target None means "this machine": the h200 profile with as many SMs as the megakernel has
        co-resident CTAs on CUDA device 0 (the per-SM table needs exactly that many), or 132 (an H200)
        when there is no GPU.
        """
        if self.target is not None:
            return self.target, 0
        from megakittens import gpu  # noqa: PLC0415  (gpu imports torch.cuda lazily)
        if gpu.available()[0]:
            return "h200", gpu.num_ctas(self.cluster_size)
        if torch.cuda.is_available():
            return "h200", torch.cuda.get_device_properties(0).multi_processor_count
        return "h200", 132


# ITypes whose programs keep the per-SM tables when global_work_queue is None (work_queue_for).
TABLE_QUEUE_ITYPES = ("Gemm", "Attention")


def work_queue_for(program, global_work_queue: Optional[bool] = None) -> bool:
    """Whether ``program`` runs on the global work queue: ``global_work_queue`` when it is True or False,
    else (None, the default) True exactly when no node of the program is a Gemm or an Attention.

    Why (H200, benchmarks/notes.md Sessions 12, 33, 34, 35): memory-bound programs run faster on the queue,
    whose claims even out the SMs' unequal DRAM rates (memory suite at 256 MB, % of copy, per-SM tables vs
    queue: relu 88.6 vs 90.9, add 91.9 vs 97.8, RMSNorm 81.2 vs 84.5; the 20-op chain 20.6 vs 18.9 us), while the models'
    Gemm and Attention tiles are placed by cost on the tables (src/schedule/phase1_place.cpp) and ran 7%
    slower on the queue. Raises ValueError for a value other than None, True or False."""
    if global_work_queue is not None:
        _check_work_queue(global_work_queue)
        return global_work_queue
    return not any(n.itype.split("(")[0] in TABLE_QUEUE_ITYPES for n in program.nodes)


def _check_work_queue(value) -> None:
    if value is not None and not isinstance(value, bool):  # "auto" or 1 would be truthy: refuse, never guess
        raise ValueError(f"megakittens: global_work_queue must be True, False or None (chosen per program), "
                         f"got {value!r}")
