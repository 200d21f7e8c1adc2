"""FX pass over the aten graph: an embedding looked up through a ``gather`` of an id table, as two lookups.

BERT and the models built on its embeddings (RoBERTa, ELECTRA, ALBERT, ...) called without ``token_type_ids``
take them from a buffer of ids, ``gather``-ed at the position ids::

    ids = torch.gather(table.expand(B, -1), 1, position_ids)      # table (1, L), position_ids (B, S)
    y = F.embedding(ids, W)                                        # W (V, C)

Both the table and the positions are graph inputs (module buffers), so nothing folds, and no instruction
type gathers integers: the compiler's tensors are floating past an Embedding's ids (docs/itypes.md, Copy).
``y[b, s] = W[table[0, position_ids[b, s]]]`` is a lookup of the rows ``T = W[table[0]]`` (L, C) at the
positions, so ``embedding_of_gather`` rewrites it as ``embedding(embedding(W, table.view(L)), position_ids)``:
two Embedding instructions, every value exact (rows are copied, never computed). It applies when the gather
is over the table's last dim and the table is one row broadcast over the others (every dim but the last is 1
before any expand), which is what those models build; any view or expand between the gather and the
embedding is kept, applied to the looked-up rows (an expand of the ids an expand of the rows: a broadcast the
readers take in place, where expanded ids would need a copy, and integer copies do not exist).
"""
from __future__ import annotations

import torch
import torch.fx

from megakittens.fx_nodes import call, emit, fake_mode, finish, RESHAPES, val

aten = torch.ops.aten
_VIEWS = (aten.expand.default, *RESHAPES)


def _one_row(src) -> "torch.fx.Node | None":
    """The table ``src`` is a broadcast of, when every dim but its last is 1 there (an optional expand of it
    in between), else None."""
    x = src.args[0] if call(src, aten.expand.default) else src
    xv, sv = val(x), val(src)
    if xv is None or sv is None or xv.dim() != sv.dim() or any(d != 1 for d in xv.shape[:-1]):
        return None
    return x


def embedding_of_gather(gm: torch.fx.GraphModule) -> int:
    """Rewrite each ``embedding(W, views(gather(table, -1, idx)))`` of a one-row table (module doc) as two
    embeddings; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if not call(node, aten.embedding.default):
            continue
        chain, ids = [], node.args[1]
        while call(ids, *_VIEWS) and len(ids.users) == 1:
            chain.append(ids)
            ids = ids.args[0]
        if not call(ids, aten.gather.default) or ids.kwargs.get("sparse_grad", False) or len(ids.args) > 3:
            continue
        src, dim, index = ids.args
        table = _one_row(src)
        if table is None or dim % val(src).dim() != val(src).dim() - 1:
            continue
        with gm.graph.inserting_before(node), fake_mode(val(index)):
            flat = emit(gm, aten.view.default, (table, [val(table).shape[-1]]))
            rows = emit(gm, aten.embedding.default, (node.args[0], flat))    # T = W[table[0]] (L, C)
            out = emit(gm, aten.embedding.default, (rows, index, *node.args[2:]), node.kwargs)
            for v in reversed(chain):  # the views of the ids, on the rows (ids must not be copied: int64)
                out = emit(gm, v.target, (out, [*v.args[1], val(rows).shape[-1]]), v.kwargs)
        node.replace_all_uses_with(out)
        count += 1
    return finish(gm, count)

