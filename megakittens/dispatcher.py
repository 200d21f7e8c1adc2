"""Run a scheduled Program on the AOTAutograd runtime arguments (seed §07).

CPU path: every slot is a contiguous host tensor and ``_C.interpret`` executes the instruction stream on
them. CUDA tensors go through the same path (copied to the host and back) until the GPU runtime lands.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any

import torch

from megakittens import _C
from megakittens.options import Options

_DTYPES = {
    "bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
    "int64": torch.int64, "int32": torch.int32, "bool": torch.bool,
}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _describe(dtype: str, shape) -> str:
    return f"{dtype}[{', '.join(str(int(s)) for s in shape)}]"


@functools.cache
def _warn_no_gpu_runtime() -> None:
    warnings.warn("megakittens: GPU runtime not available yet, running the CPU reference interpreter",
                  RuntimeWarning, stacklevel=3)


class Dispatcher:
    """Callable ``dispatcher(*args) -> list[Tensor]`` for one compiled graph.

    args: the runtime arguments in placeholder order (``program.input_slots[k]`` holds argument k).
    Returns one tensor per graph output. Every non-input slot is allocated fresh on each call, so a
    tensor returned by one call is never overwritten by the next.

    Attributes: ``seed`` (interleaving seed of the reference interpreter, default 0), ``calls`` (number
    of calls so far), ``last_stats`` (the dict ``_C.interpret`` returned last).
    Raises ValueError for an argument whose dtype or shape differs from the compiled one;
    ``DeadlockError`` / ``RaceError`` from the interpreter.
    """

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
        # Input slots that some instruction writes (in-place ops): they get a private copy per call,
        # so the caller's tensor is never written.
        written = {s for n in program.nodes for s in n.dst_slots}
        self._copy_inputs = written & set(self.input_slots)

    @property
    def name(self) -> str:
        return self.program.name

    def _check(self, k: int, t: Any) -> None:
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
        if len(args) != len(self.input_slots):
            raise TypeError(f"megakittens: '{self.name}' takes {len(self.input_slots)} inputs, got {len(args)}")
        for k, t in enumerate(args):
            self._check(k, t)
        device = next((t.device for t in args if t.device.type != "cpu"), torch.device("cpu"))
        if device.type != "cpu":
            _warn_no_gpu_runtime()

        tensors: list = [None] * len(self.slots)
        for k, t in enumerate(args):
            s = self.input_slots[k]
            tensors[s] = self._host(t, copy=s in self._copy_inputs)
        for path, s in self.program.attr_slots:
            tensors[s] = self._host(self._attr(path), copy=s in self._copy_inputs)
        for s, meta in enumerate(self.slots):
            if tensors[s] is None:
                tensors[s] = self._fresh(meta)

        self.last_stats = _C.interpret(self.program, [t.data_ptr() for t in tensors], seed=self.seed,
                                       global_work_queue=self.options.global_work_queue)
        self.calls += 1

        args_by_slot = {self.input_slots[k]: t for k, t in enumerate(args)}
        outs = []
        for s in self.output_slots:
            if s in args_by_slot and s not in self._copy_inputs:
                outs.append(args_by_slot[s])  # the graph returns one of its inputs unchanged
            else:
                outs.append(tensors[s].to(device) if device.type != "cpu" else tensors[s])
        return outs

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
