"""Run a scheduled Program on the AOTAutograd runtime arguments (seed §07).

CUDA tensors run on the persistent megakernel (``megakittens.gpu``) when the GPU runtime can run every
instruction type of the graph; otherwise, and for CPU tensors, every slot is a contiguous host tensor
and ``_C.interpret`` (the CPU reference interpreter) executes the instruction stream on them.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import torch

from megakittens import _C
from megakittens.options import Options, work_queue_for

_DTYPES = {
    "bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
    "int64": torch.int64, "int32": torch.int32, "bool": torch.bool,
}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _describe(dtype: str, shape) -> str:
    return f"{dtype}[{', '.join(str(int(s)) for s in shape)}]"




def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (Linux); None elsewhere."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _expected_strides(gm: Any, n: int) -> list:
    """Per graph output: the strides its FX meta value has (the layout eager returns) when that layout is
    dense and non-overlapping, else None (no constraint). All None unless the graph has n outputs."""
    try:
        out = next(node for node in gm.graph.nodes if node.op == "output")
        vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in out.args[0]]
    except Exception:
        return [None] * n
    if len(vals) != n:
        return [None] * n
    return [tuple(v.stride()) if isinstance(v, torch.Tensor) and _dense(v.shape, v.stride()) else None
            for v in vals]


def _view_source(n: Any) -> Any:
    """The node whose storage eager's value of ``n`` shares: up through view ops (an aten op whose schema says
    its output aliases its input, and ``getitem`` of a split), to a placeholder or the first op that makes
    a new tensor; ``n`` itself when it is not an FX node."""
    while isinstance(n, torch.fx.Node) and n.op == "call_function":
        op = n.args[0].target if n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node) else n.target
        schema = getattr(op, "_schema", None)
        if schema is None or not schema.returns or schema.returns[0].alias_info is None or \
                schema.returns[0].alias_info.is_write:
            break
        n = n.args[0].args[0] if op is not n.target else n.args[0]
    return n


_OWNERS = ("placeholder", "get_attr")  # nodes whose storage is the caller's (an argument, a module's tensor)


def fresh_outputs(before: list, after: list) -> list:
    """Indices of the outputs that a rewrite of the graph turned into a view of storage eager does not share
    with them: ``before`` / ``after`` are ``output_sources`` of the graph as captured and as rewritten
    (megakittens/fold.py drops a cat's empty operands; an index of all rows is the tensor itself). The
    caller copies those outputs."""
    fresh = []
    for i, (b, a) in enumerate(zip(before, after)):
        if b is None or a is None:
            continue
        if (a.op in _OWNERS and b.op not in _OWNERS) or any(after[j] is a and before[j] is not b for j in range(i)):
            fresh.append(i)
    return fresh


def output_sources(gm: Any, n: int = -1) -> list:
    """Per graph output: ``_view_source`` of its FX value (None unless the graph has n outputs; any number for
    n = -1)."""
    try:
        out = next(node for node in gm.graph.nodes if node.op == "output")
        args = list(out.args[0])
    except Exception:
        return [None] * max(n, 0)
    return [_view_source(a) for a in args] if n < 0 or len(args) == n else [None] * n


def restrided(t: torch.Tensor, stride: tuple) -> torch.Tensor:
    """A copy of ``t`` laid out with ``stride`` (eager's layout of an output)."""
    r = torch.empty_strided(t.shape, stride, dtype=t.dtype, device=t.device)
    r.copy_(t)
    return r


def _dense(shape: Any, stride: Any) -> bool:
    """Whether the strides lay the elements out densely, without overlap (some permutation of a
    contiguous layout): ordered by stride, each dim of size > 1 steps over all the faster ones."""
    dims = sorted((int(st), int(n)) for n, st in zip(shape, stride) if int(n) > 1)
    step = 1
    for st, n in dims:
        if st != step:
            return False
        step *= n
    return True


def _same_layout(t: torch.Tensor, stride: tuple) -> bool:
    """Strides equal wherever they matter (dims of size > 1)."""
    return len(stride) == t.dim() and all(n <= 1 or a == b for n, a, b in zip(t.shape, t.stride(), stride))


class _GpuPlan:
    """Slot memory of a GPU call: ``fresh`` (slot, shape, dtype) get their own tensors, ``arena`` (slot, byte
    offset) share one allocation of ``arena_bytes``, ``aliases`` (slot, base slot, byte offset) own none;
    ``outputs``: the graph's output slots."""

    def __init__(self) -> None:
        self.outputs: set = set()
        self.fresh: list = []
        self.arena: list = []
        self.arena_bytes = 0
        self.aliases: list = []


class Dispatcher:
    """Callable ``dispatcher(*args) -> list[Tensor]`` for one compiled graph.

    args: the runtime arguments in placeholder order (``program.input_slots[k]`` holds argument k).
    Returns one tensor per graph output. Every non-input slot is allocated fresh on each call, so a
    tensor returned by one call is never overwritten by the next.

    Attributes: ``seed`` (interleaving seed of the reference interpreter, default 0), ``calls`` (number
    of calls so far), ``last_stats`` (the dict ``_C.interpret`` returned last). ``keep_slot_tensors``
    (class or instance attribute, default False): a GPU call then keeps every slot as a tensor in
    ``last_slot_tensors`` (for tools that relaunch the kernel on them).
    Raises ValueError for an argument whose dtype or shape differs from the compiled one;
    ``DeadlockError`` / ``RaceError`` from the interpreter.
    """

    keep_slot_tensors = False

    def close(self) -> None:
        """Drop every attribute, the _C program, DAG and launcher among them (megakittens.backend calls it at
        exit, before the extension is torn down); the Dispatcher cannot be called afterwards."""
        vars(self).clear()

    def __init__(self, program: Any, dag: Any, graph_module: torch.fx.GraphModule, options: Options):
        self.program = program
        self.dag = dag
        self.graph_module = graph_module
        self.options = options
        self.seed = 0
        self.calls = 0
        self.last_stats: dict = {}
        self.slots = list(program.slots)
        self.input_slots = list(program.input_slots)
        self.output_slots = list(program.output_slots)
        self._output_views = list(program.output_views)
        self._slot_base = list(program.slot_base)
        self._slot_offset = list(program.slot_offset)
        # Input slots that some instruction writes (in-place ops): they get a private copy per call,
        # so the caller's tensor is never written.
        written = {s for n in program.nodes for s in n.dst_slots}
        self._copy_inputs = written & set(self.input_slots)
        self._global_queue = work_queue_for(program, options.global_work_queue)  # the CPU interpreter's
        # (argument position, slot) of every argument the graph reads; unused placeholders have no slot.
        self._arg_slots = [(k, s) for k, s in enumerate(self.input_slots) if s >= 0]
        self._arg_meta = {k: (_DTYPES[self.slots[s].dtype], torch.Size(self.slots[s].shape)) for k, s in self._arg_slots}
        self._gpu_error: str | None = None  # why CUDA tensors cannot run on the megakernel, once known
        self._plan: _GpuPlan | None = None  # the GPU call's slot memory layout, made on first use
        self._launch: Any = None  # gpu.launcher(program, options), made on the first GPU call
        self._attr_slots = list(program.attr_slots)
        # A graph attribute (a constant the capture lifted, e.g. DeBERTa's relative positions) that lives on the
        # CPU while the call runs on a GPU: its device copy per slot, with the tensor and _version it was made from.
        self._attr_copies: dict[int, tuple[torch.Tensor, int, torch.Tensor]] = {}
        self._arg_of_slot = {s: k for k, s in self._arg_slots}  # an output that is an input: the caller's tensor
        # Outputs that are compile-time constants (megakittens/fold.py): eager builds them afresh at every
        # call, so each call returns its own copy, never the module's buffer.
        self._const_slots = {s for path, s in self._attr_slots if path.split(".")[-1].startswith("_mk_const")}
        self._warned = False
        self._output_strides = _expected_strides(graph_module, len(self.output_slots))
        # Where eager's outputs share storage: an output that is a view of a graph input returns the caller's
        # tensor (as eager), but one that eager computes afresh (F.pad by 0, repeat(1, 1), roll by the dim's
        # size: copies the tracer folds into the input's slot) must not, nor may two outputs of one slot that
        # eager makes separately.
        bound = {s for _, s in self._arg_slots} | {s for _, s in self._attr_slots}
        owner: dict = {}  # slot -> the eager source of the first output returned from it
        self._fresh_outputs = set()  # output indices that get a copy of their slot
        for i, (s, source) in enumerate(zip(self.output_slots, output_sources(graph_module, len(self.output_slots)))):
            if source is not None and ((s in bound and source.op not in _OWNERS) or
                                       owner.setdefault(s, source) is not source):
                self._fresh_outputs.add(i)
        # Host bytes the CPU interpreter allocates: each non-alias slot plus a 4-byte writer tag per element.
        self._host_bytes = sum(math.prod(m.shape) * (_DTYPES[m.dtype].itemsize + 4)
                               for s, m in enumerate(self.slots) if self._slot_base[s] < 0)

    def _gpu_ready(self) -> bool:
        """Compile (or fetch from the cache) the megakernel on first CUDA use; False if it cannot run."""
        if self._gpu_error is None:
            from megakittens import gpu
            ok, why = gpu.available()
            if ok and self.program.profile.name != "h200":
                ok, why = False, f"target '{self.program.profile.name}' tiles do not run on this GPU"
            if ok:
                try:
                    gpu.kernel_for(self.program, self.options.use_jit_cache)
                except Exception as e:  # an IType without a device body yet, or a JIT failure
                    ok, why = False, f"the GPU runtime cannot run '{self.name}': {e}"
            self._gpu_error = "" if ok else why
        return self._gpu_error == ""

    @property
    def name(self) -> str:
        return self.program.name

    @staticmethod
    def _device_of(args: tuple) -> torch.device:
        """The device of the first tensor argument not on the CPU, else the CPU."""
        first = next((t for t in args if isinstance(t, torch.Tensor)), None)
        if first is not None and first.is_cuda:  # every argument on one GPU: no scan
            return first.device
        return next((t.device for t in args if isinstance(t, torch.Tensor) and t.device.type != "cpu"),
                    torch.device("cpu"))

    def _check(self, k: int, t: Any) -> None:
        want = self._arg_meta[k]
        if isinstance(t, torch.Tensor) and t.dtype == want[0] and t.shape == want[1]:
            return  # the per-call fast path
        meta = self.slots[self.input_slots[k]]
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"megakittens: input {k} of '{self.name}': expected a tensor "
                            f"{_describe(meta.dtype, meta.shape)}, got {type(t).__name__}")
        if _dtype_name(t.dtype) != meta.dtype or list(t.shape) != list(meta.shape):
            raise ValueError(f"megakittens: input {k} of '{self.name}': expected "
                             f"{_describe(meta.dtype, meta.shape)}, got {_describe(_dtype_name(t.dtype), t.shape)}")

    def _attr(self, path: str) -> torch.Tensor:
        obj = self.graph_module
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def _host(self, t: torch.Tensor, copy: bool) -> torch.Tensor:
        """A contiguous CPU tensor with t's values; t itself when it already is one and copy is False."""
        t = t.detach()
        if t.device.type != "cpu":
            return t.to("cpu", memory_format=torch.contiguous_format)
        if copy or not t.is_contiguous():
            return t.clone(memory_format=torch.contiguous_format)
        return t

    def __call__(self, *args: Any) -> list[torch.Tensor]:
        if len(args) < len(self.input_slots):
            raise TypeError(f"megakittens: '{self.name}' takes {len(self.input_slots)} inputs, got {len(args)}")
        meta = self._arg_meta
        for k, _ in self._arg_slots:  # the common case inline: a 16-layer Llama passes ~150 arguments
            t = args[k]
            want = meta[k]
            if not (isinstance(t, torch.Tensor) and t.dtype == want[0] and t.shape == want[1]):
                self._check(k, t)
        device = self._device_of(args)
        if device.type == "cuda":
            if self._gpu_ready():
                return self._call_gpu(args, device)
            if not self._warned:  # once per compiled graph
                self._warned = True
                warnings.warn(f"megakittens: {self._gpu_error}; running the CPU reference interpreter instead",
                              RuntimeWarning, stacklevel=2)

        self._check_host_memory()
        tensors: list = [None] * len(self.slots)
        for k, s in self._arg_slots:
            tensors[s] = self._host(args[k], copy=s in self._copy_inputs)
        for path, s in self._attr_slots:
            tensors[s] = self._host(self._attr(path), copy=s in self._copy_inputs)
        self._fill_slots(tensors, lambda meta: self._fresh(meta))

        self.last_stats = _C.interpret(self.program, [t.data_ptr() for t in tensors], seed=self.seed,
                                       global_work_queue=self._global_queue)
        self.calls += 1

        return self._outputs(args, tensors, device)

    def _check_host_memory(self) -> None:
        """MemoryError, before allocating, when the CPU interpreter would need more than the host has: every
        slot plus a 4-byte writer tag per element (src/reference/memory.h) and slack for the inputs' copies."""
        need = self._host_bytes
        avail = _available_memory()
        if avail is not None and need > avail:
            raise MemoryError(f"megakittens: the CPU reference interpreter needs about {need / 2**30:.1f} GiB for "
                              f"'{self.name}' (its tensors plus a 4-byte race tag per element), but only "
                              f"{avail / 2**30:.1f} GiB are available; run it on a GPU, or on smaller shapes")

    def _call_gpu(self, args: tuple, device: torch.device) -> list[torch.Tensor]:
        """One megakernel launch on torch's current stream. Outputs are fresh tensors; every other
        intermediate slot lies in one fresh arena allocation (``_GpuPlan``), released when the call
        returns, as eager releases its intermediates: a few hundred ``torch.empty`` calls cost ~1 ms of host
        time per call on a 16-layer model, before the launch."""
        from megakittens import gpu

        plan = self._plan if self._plan is not None else self._make_plan()
        tensors: list = [None] * len(self.slots)
        ptrs = [0] * len(self.slots)
        copy = self._copy_inputs
        bound = [(s, args[k]) for k, s in self._arg_slots] + [(s, self._attr_on(p, s, device)) for p, s in self._attr_slots]
        for s, t in bound:
            if not t.is_cuda:
                raise ValueError(f"megakittens: '{self.name}' runs on {device}, but slot {s} is on {t.device}")
            if s in copy or not t.is_contiguous():
                t = t.detach().clone(memory_format=torch.contiguous_format)
            tensors[s] = t
            ptrs[s] = t.data_ptr()
        for s, shape, dtype in plan.fresh:
            t = torch.empty(shape, dtype=dtype, device=device)
            tensors[s], ptrs[s] = t, t.data_ptr()
        arena = torch.empty(plan.arena_bytes, dtype=torch.uint8, device=device) if plan.arena_bytes else None
        base_ptr = arena.data_ptr() if arena is not None else 0
        for s, off in plan.arena:
            ptrs[s] = base_ptr + off
        for s, base, off in plan.aliases:
            ptrs[s] = ptrs[base] + off
        if self.keep_slot_tensors:  # tools (benchmarks/model_timeline.py) relaunch on the same slots
            for s, off in plan.arena:
                meta = self.slots[s]
                dtype = _DTYPES[meta.dtype]
                n = math.prod(meta.shape) * dtype.itemsize
                tensors[s] = arena[off:off + n].view(dtype).view(list(meta.shape))
        for s, base, _ in plan.aliases:
            if tensors[base] is not None and (self.keep_slot_tensors or s in plan.outputs):
                tensors[s] = self._alias_view(tensors, s)
        if self._launch is None:  # the kernel and the options resolved once (host time: gpu.launcher)
            self._launch = gpu.launcher(self.program, self.options)
        self._launch(ptrs)
        self.calls += 1
        if self.keep_slot_tensors:
            self.last_slot_tensors = tensors
        return self._outputs(args, tensors, device)

    def _attr_on(self, path: str, s: int, device: torch.device) -> torch.Tensor:
        """Graph attribute `path` (slot s) on `device`: itself when it is there, else a copy made once and remade
        only when the attribute changes (another tensor, or written in place: its _version)."""
        t = self._attr(path)
        if t.device == device:
            return t
        cached = self._attr_copies.get(s)
        if cached is None or cached[0] is not t or cached[1] != t._version:
            cached = (t, t._version, t.detach().to(device))
            self._attr_copies[s] = cached
        return cached[2]

    def _make_plan(self) -> "_GpuPlan":
        """Which slots a GPU call allocates as tensors (graph outputs that are not inputs, and the bases of
        output aliases), which go into the arena (256-byte aligned, as cudaMalloc: TMA wants 16), and the
        alias slots' byte offsets into their base (computed once)."""
        bound = {s for _, s in self._arg_slots} | {s for _, s in self._attr_slots}
        need = set()
        for s in self.output_slots:
            need.add(s)
            if self._slot_base[s] >= 0:
                need.add(self._slot_base[s])
        plan = _GpuPlan()
        plan.outputs = set(self.output_slots)
        for s, meta in enumerate(self.slots):
            if s in bound or self._slot_base[s] >= 0:
                continue
            dtype = _DTYPES[meta.dtype]
            if s in need:
                plan.fresh.append((s, list(meta.shape), dtype))
            else:
                plan.arena.append((s, plan.arena_bytes))
                plan.arena_bytes += -(-max(1, math.prod(meta.shape) * dtype.itemsize) // 256) * 256
        for s, meta in enumerate(self.slots):
            if self._slot_base[s] >= 0:
                plan.aliases.append((s, self._slot_base[s], self._slot_offset[s] * _DTYPES[meta.dtype].itemsize))
        self._plan = plan
        return plan

    def _outputs(self, args: tuple, tensors: list, device: torch.device) -> list[torch.Tensor]:
        """The graph outputs: each its slot's tensor (a returned input is the caller's own tensor, as in
        eager), seen through the output's view when the graph returns one (zero-copy, as_strided)."""
        outs = []
        for i, (s, view) in enumerate(zip(self.output_slots, self._output_views)):
            k = self._arg_of_slot.get(s)
            src = None if k is None else args[k]
            fresh = i in self._fresh_outputs
            if src is not None and s not in self._copy_inputs and src.is_contiguous() and not fresh:
                t = src
            else:
                t = tensors[s] if tensors[s].device == device else tensors[s].to(device)
                if (s in self._const_slots or fresh) and t is tensors[s]:
                    t = t.clone()
            if view is not None:
                offset, sizes, strides = view
                t = t.as_strided(sizes, strides, t.storage_offset() + offset)
            want = self._output_strides[len(outs)]
            if want is not None and t is not src and not _same_layout(t, want):
                # Eager would return this layout (e.g. x * 2 on a transposed x keeps x's strides), and code
                # after the graph (the eager ops of fallback="eager", or the caller's .view) relies on it.
                t = restrided(t, want)
            outs.append(t)
        return outs

    def _fill_slots(self, tensors: list, new: Any) -> None:
        """Every slot not bound yet: a fresh tensor (``new(meta)``), or for a reshape alias
        (``program.slot_base[s] >= 0``) its base slot's memory seen with the alias's shape."""
        for s, meta in enumerate(self.slots):
            if tensors[s] is None and self._slot_base[s] < 0:
                tensors[s] = new(meta)
        for s in range(len(self.slots)):
            if self._slot_base[s] >= 0:
                tensors[s] = self._alias_view(tensors, s)

    def _alias_view(self, tensors: list, s: int) -> torch.Tensor:
        """Reshape alias slot s ([Note: reshape aliases]): its base slot's tensor from element
        ``slot_offset[s]`` on, seen with the alias's shape."""
        shape = list(self.slots[s].shape)
        off = self._slot_offset[s]
        return tensors[self._slot_base[s]].reshape(-1)[off:off + math.prod(shape)].view(shape)

    @staticmethod
    def _fresh(meta: Any) -> torch.Tensor:
        """A new host buffer for one slot, poisoned (NaN for floats) so an unwritten read shows."""
        dtype = _DTYPES[meta.dtype]
        t = torch.empty(list(meta.shape), dtype=dtype)
        if dtype.is_floating_point:
            t.fill_(float("nan"))
        elif dtype != torch.bool:
            t.fill_(-1)
        return t
