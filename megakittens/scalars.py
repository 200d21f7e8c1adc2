"""FX pass over the aten graph: elementwise ops on 0-dim tensors, computed on (1,) views.

The elementwise instruction types take tensors of rank 1 to 4 (src/itypes/elementwise.cpp). A model's scalar
parameters are 0-dim: CLIP multiplies its similarity logits by ``logit_scale.exp()``, SigLIP adds a
``logit_bias``. ``scalars_as_vectors`` rewrites each pointwise op (``torch.Tag.pointwise``) whose tensors are
all 0-dim as the same op on their ``view([1])``, viewed back to 0-dim: the same values, one element.
"""
from __future__ import annotations

import torch
import torch.fx

from megakittens.fx_nodes import emit, fake_mode, finish, val

aten = torch.ops.aten


def _rank0(a) -> bool:
    v = val(a)
    return v is not None and v.dim() == 0


def scalars_as_vectors(gm: torch.fx.GraphModule) -> int:
    """Rewrite each pointwise op on 0-dim tensors (module doc) on (1,) views; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload) or \
                torch.Tag.pointwise not in node.target.tags or not _rank0(node) or \
                not val(node).dtype.is_floating_point:
            continue
        tensors = [a for a in node.all_input_nodes if val(a) is not None]
        if not tensors or not all(_rank0(a) for a in tensors):
            continue
        with gm.graph.inserting_before(node), fake_mode(val(node)):
            views = {a: emit(gm, aten.view.default, (a, [1])) for a in tensors}
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda a: views.get(a, a))
            out = emit(gm, aten.view.default, (emit(gm, node.target, args, kwargs), []))
        node.replace_all_uses_with(out)
        count += 1
    return finish(gm, count)
