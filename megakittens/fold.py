"""FX passes that need tensor values, run on the aten graph before it is handed to the C++ core.

``fold_constants(gm)``: every node that depends on no graph input (``arange``-built position ids, the
causal masks Hugging Face builds from them, ``scalar_tensor``, ``lift_fresh_copy`` of a tensor built from
Python data inside forward, ``zeros_like`` / ``new_ones`` of anything...) is evaluated once at compile time; an ``index.Tensor`` by a constant range
of rows becomes a slice;
an SDPA whose ``attn_mask`` evaluates to the causal mask becomes ``is_causal=True`` without a mask (the
Attention instruction type has no masks), and every other folded tensor that a remaining node reads
becomes a ``get_attr`` constant of ``gm``, which the tracer treats as a graph input (equal ones, such as a
convolution's zero padding blocks, share one).

``drop_empty_cat_operands(gm)``: ``aten.cat`` skips 1-D empty operands (torch's legacy rule); Hugging Face's
KV cache starts as such a tensor, so a prefill with ``use_cache=True`` concatenates the new keys onto one.
An operand of the cat's rank that is empty (size 0 along the cat dim) adds nothing either: a rotary
embedding over the whole head concatenates the rotated part with an empty "pass" slice (GPT-NeoX with
rotary_pct 1, GPT-J). Those operands go (and the ops that only fed them), and a cat left with one operand
becomes that operand.
"""
from __future__ import annotations

import torch
import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily

_SDPA = {
    "aten.scaled_dot_product_attention.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_cudnn_attention.default",
}
_MASK_ARGS = ("attn_mask", "attn_bias")
# Ops whose values do not depend on their input's (nn.MultiheadAttention's float padding mask starts as
# zeros_like(mask); Funnel's new_ones).
_SHAPE_ONLY = {torch.ops.aten.zeros_like.default, torch.ops.aten.ones_like.default, torch.ops.aten.full_like.default,
               torch.ops.aten.new_zeros.default, torch.ops.aten.new_ones.default, torch.ops.aten.new_full.default}
_MASKED_MAX = -65504.0  # torch.finfo(torch.float16).min


def _foldable(node: torch.fx.Node) -> bool:
    """An aten op without side effects or randomness."""
    t = node.target
    if node.op != "call_function" or not isinstance(t, torch._ops.OpOverload):
        return False
    if t._schema.is_mutable or torch.Tag.nondeterministic_seeded in t.tags:
        return False
    return True


def _constant_nodes(gm: torch.fx.GraphModule) -> dict:
    """Values of the nodes that depend on no placeholder and no get_attr but Dynamo's lifted constants
    (``_tensor_constant<N>``: a tensor built from Python data inside forward, which the graph copies
    fresh with ``lift_fresh_copy`` at each call) and the constants an earlier fold made (``_mk_const_<N>``),
    evaluated in order."""
    env: dict = {}
    for node in gm.graph.nodes:
        if node.op == "get_attr" and str(node.target).startswith(("_tensor_constant", "_mk_const_")):
            value = getattr(gm, str(node.target), None)
            if isinstance(value, torch.Tensor):
                env[node] = value
            continue
        if node.op == "call_function" and node.target in _SHAPE_ONLY and isinstance(node.args[0], torch.fx.Node) and \
                isinstance(node.args[0].meta.get("val"), torch.Tensor) and node.args[0] not in env:
            v = node.args[0].meta["val"]  # only the shape, dtype and device of the input are read
            args = (torch.empty(v.shape, dtype=v.dtype, device=v.device),) + tuple(node.args[1:])
            env[node] = node.target(*args, **node.kwargs)
            continue
        if not _foldable(node) or not all(a in env for a in node.all_input_nodes):
            continue
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda a: env[a])
        env[node] = node.target(*args, **kwargs)
    return env


def _bound_args(node: torch.fx.Node) -> dict:
    """name -> value of every argument passed to an OpOverload call."""
    schema = node.target._schema
    out = dict(node.kwargs)
    for arg, value in zip(schema.arguments, node.args):
        out[arg.name] = value
    return out


def is_causal_mask(mask: torch.Tensor, sq: int, sk: int) -> bool:
    """Whether ``mask`` (bool: True = attend; float: 0 = attend, -inf or <= -65504 = masked) is SDPA's is_causal mask
    (top-left aligned: key j is masked for query i when j > i) on every batch and head."""
    if mask.dim() < 2 or tuple(mask.shape[-2:]) != (sq, sk):
        return False
    keep = torch.ones(sq, sk, dtype=torch.bool, device=mask.device).tril()
    if mask.dtype == torch.bool:
        return bool((mask == keep).all())
    if not mask.dtype.is_floating_point:
        return False
    # Masked entries: -inf, or at most fp16's lowest (-65504; Hugging Face fills with finfo(dtype).min). Then
    # exp(score - 65504 - rowmax) underflows to exactly 0 in fp32 for any |score| < 65000, as -inf does.
    # One elementwise pass, no boolean indexing: 0 where kept, <= -65504 (so not 0, not NaN) where masked.
    return bool(torch.where(keep, mask == 0, mask <= _MASKED_MAX).all())


def _is_causal_cached(checked: list, mask: torch.Tensor, sq: int, sk: int) -> bool:
    """``is_causal_mask(mask, sq, sk)``, answered from ``checked`` for a mask with the same dtype, shape and
    values (NaN never compares equal, so such a mask is checked itself) as one checked before."""
    for value, q, k, result in checked:
        if (q, k) == (sq, sk) and value.dtype == mask.dtype and value.shape == mask.shape and \
                value.device == mask.device and torch.equal(value, mask):
            return result
    result = is_causal_mask(mask, sq, sk)
    checked.append((mask, sq, sk, result))
    return result


def _drop_causal_masks(gm: torch.fx.GraphModule, env: dict) -> int:
    """SDPA nodes whose constant attn_mask is the causal mask: drop the mask, set is_causal=True.

    Each layer's SDPA has a mask of its own node (a decomposition turns the shared bool mask into a float
    one per call), but with the same values: a mask equal to one checked already (``torch.equal``, one
    pass, no temporaries) takes its answer. At seq 1024 on a CPU this takes 16 layers' checks from ~90 ms
    to ~10 ms."""
    count = 0
    checked: list = []  # (mask value, sq, sk, is_causal_mask)
    for node in gm.graph.nodes:
        if node.op != "call_function" or str(node.target) not in _SDPA:
            continue
        bound = _bound_args(node)
        name = next((k for k in _MASK_ARGS if bound.get(k) is not None), None)
        mask = bound.get(name) if name else None
        q, k = bound.get("query"), bound.get("key")
        if not isinstance(mask, torch.fx.Node) or mask not in env or bound.get("is_causal"):
            continue
        qv, kv = (n.meta.get("val") for n in (q, k))
        if qv is None or kv is None or not _is_causal_cached(checked, env[mask], qv.shape[-2], kv.shape[-2]):
            continue
        set_sdpa_arg(node, name, None)
        set_sdpa_arg(node, "is_causal", True)
        count += 1
    return count


def set_sdpa_arg(node: torch.fx.Node, name: str, value) -> None:
    """Set argument ``name`` of an OpOverload call ``node`` where its schema puts it (positional or keyword)."""
    names = [a.name for a in node.target._schema.arguments]
    args, kwargs = list(node.args), dict(node.kwargs)
    pos = names.index(name)
    if pos < len(args):
        args[pos] = value
    else:
        kwargs[name] = value
    node.args, node.kwargs = tuple(args), kwargs


def _empty_operand(node, out: torch.Tensor) -> bool:
    """A cat operand that contributes nothing: empty, of the cat's dtype (another dtype would still take
    part in type promotion), 1-D (the legacy rule) or of the cat's rank."""
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return (isinstance(v, torch.Tensor) and v.numel() == 0 and v.dtype == out.dtype
            and (v.dim() == 1 or v.dim() == out.dim()))


def drop_empty_cat_operands(gm: torch.fx.GraphModule) -> int:
    """See the module doc; returns how many operands were dropped."""
    dropped = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.cat.default or not node.args:
            continue
        out = node.meta.get("val")
        tensors = node.args[0]
        if not isinstance(out, torch.Tensor) or not isinstance(tensors, (list, tuple)):
            continue
        keep = [t for t in tensors if not _empty_operand(t, out)]
        if len(keep) == len(tensors) or not keep:
            continue
        dropped += len(tensors) - len(keep)
        only = keep[0].meta.get("val") if len(keep) == 1 and isinstance(keep[0], torch.fx.Node) else None
        if isinstance(only, torch.Tensor) and only.shape == out.shape and only.dtype == out.dtype:
            node.replace_all_uses_with(keep[0])
        else:
            node.args = (keep,) + tuple(node.args[1:])
    if dropped:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return dropped


def _index_as_slices(x: torch.Tensor, idx: list) -> "tuple[list, list] | None":
    """Whether ``x[idx]`` (constant index tensors, one per leading dim of x) reads a block of x in order: the
    ranges [a, a + n) per indexed dim and the result's shape, else None.

    One index: its values, flattened, are consecutive (the result is the block seen with the index's
    shape). Several: each index varies along at most one dim of their broadcast shape, as an arange there,
    and those dims increase from index to index (Hugging Face's padding mask, ``mask[batch_arange[:, None,
    None, None], kv_arange[None, None, None, :]]``), so the result is the block with size-1 dims between."""
    if any(not isinstance(i, torch.Tensor) or i.dtype not in (torch.int32, torch.int64) or i.numel() == 0
           for i in idx) or len(idx) > x.dim() or not all(isinstance(n, int) for n in x.shape):
        return None  # a data-dependent size (Reformer's slice by .item()) is refused later, by name
    if len(idx) == 1:
        flat = idx[0].flatten()
        a, n = int(flat[0]), flat.numel()
        if a < 0 or a + n > x.shape[0] or not torch.equal(flat, torch.arange(a, a + n, dtype=flat.dtype, device=flat.device)):
            return None
        return [(a, n)], list(idx[0].shape) + list(x.shape[1:])
    try:
        shape = list(torch.broadcast_shapes(*(i.shape for i in idx)))
    except RuntimeError:
        return None
    ranges, last = [], -1
    for d, i in enumerate(idx):
        i = i.reshape((1,) * (len(shape) - i.dim()) + tuple(i.shape))
        dims = [p for p, n in enumerate(i.shape) if n > 1]
        if len(dims) > 1 or (dims and dims[0] <= last):
            return None
        flat = i.flatten()
        a, n = int(flat[0]), flat.numel()
        if a < 0 or a + n > x.shape[d] or not torch.equal(flat, torch.arange(a, a + n, dtype=flat.dtype, device=flat.device)):
            return None
        last = dims[0] if dims else last
        ranges.append((a, n))
    if sorted(n for n in shape if n > 1) != sorted(n for _, n in ranges if n > 1) or \
            sum(n > 1 for n in shape) != sum(n > 1 for _, n in ranges):
        return None
    return ranges, shape + list(x.shape[len(idx):])


def _index_select_range(gm: torch.fx.GraphModule, node: torch.fx.Node, env: dict) -> bool:
    """``index_select(x, dim, arange(a, a + n))`` with a constant index (XLNet's relative shift) as the slice
    [a, a + n) of x along dim. Whether it was rewritten."""
    if node.op != "call_function" or node.target is not torch.ops.aten.index_select.default or node in env or \
            node.args[2] not in env or not isinstance(node.args[0], torch.fx.Node):
        return False
    x, dim, idx = node.args[0], node.args[1], env[node.args[2]]
    xv = x.meta.get("val")
    if not isinstance(xv, torch.Tensor) or xv.dim() == 0:
        return False
    dim %= xv.dim()
    found = _index_as_slices(xv.movedim(dim, 0), [idx.reshape(-1)]) if idx.dim() <= 1 else None
    if found is None:
        return False
    (a, n), = found[0]
    with gm.graph.inserting_before(node):
        s = gm.graph.call_function(torch.ops.aten.slice.Tensor, (x, dim, a, a + n))
    s.meta["val"] = xv.narrow(dim, a, n)
    node.replace_all_uses_with(s)
    return True


def _index_ranges_to_slices(gm: torch.fx.GraphModule, env: dict) -> int:
    """``x[idx, ...]`` (``aten.index.Tensor`` on leading dims) whose constant indices read a block of x in order
    (``_index_as_slices``) is that block, sliced and viewed: views that fold into edges. GPT-J and CodeGen
    gather their sin/cos table rows by position ids built from ``arange``; Hugging Face's attention-mask
    helpers index the mask by aranges of batch and key positions."""
    count = 0
    for node in list(gm.graph.nodes):
        if _index_select_range(gm, node, env):
            count += 1
            continue
        if node.op != "call_function" or node.target is not torch.ops.aten.index.Tensor or node in env:
            continue
        x, idx = node.args[0], node.args[1]
        if not isinstance(x, torch.fx.Node) or not isinstance(idx, (list, tuple)) or not idx or \
                not all(isinstance(i, torch.fx.Node) and i in env for i in idx):
            continue
        xv, out = x.meta.get("val"), node.meta.get("val")
        if not isinstance(xv, torch.Tensor) or xv.dim() == 0 or not isinstance(out, torch.Tensor):
            continue
        found = _index_as_slices(xv, [env[i] for i in idx])
        if found is None or list(out.shape) != found[1]:
            continue
        block, val = x, xv
        with gm.graph.inserting_before(node):
            for d, (a, n) in enumerate(found[0]):
                if (a, n) == (0, val.shape[d]):
                    continue
                block = gm.graph.call_function(torch.ops.aten.slice.Tensor, (block, d, a, a + n))
                val = val.narrow(d, a, n)
                block.meta["val"] = val
            view = gm.graph.call_function(torch.ops.aten.view.default, (block, list(out.shape)))
            view.meta["val"] = out
        node.replace_all_uses_with(view)
        gm.graph.erase_node(node)
        count += 1
    return count


def fold_constants(gm: torch.fx.GraphModule) -> int:
    """Fold the input-independent nodes of ``gm`` in place (see the module doc); returns how many folded
    tensors became constants."""
    with unset_fake_temporarily():
        env = _constant_nodes(gm)
        if not env:
            return 0
        _drop_causal_masks(gm, env)
        _index_ranges_to_slices(gm, env)
    count = 0
    made: dict = {}  # (dtype, shape) -> [(value, get_attr node)]: equal constants share one (a tensor slot each)
    for node in list(gm.graph.nodes):
        if node not in env or not isinstance(env[node], torch.Tensor) or \
                (node.op == "get_attr" and str(node.target).startswith("_mk_const_")):  # made already
            continue
        users = [u for u in node.users if u not in env]
        if not users:
            continue
        value = env[node].contiguous()
        same = made.setdefault((value.dtype, value.device, tuple(value.shape)), [])
        with unset_fake_temporarily():  # real constants compared (Dynamo's fake mode may be active)
            const = next((c for v, c in same if torch.equal(v, value)), None)
        if const is None:
            name = f"_mk_const_{count}"
            while hasattr(gm, name):
                name += "_"
            gm.register_buffer(name, value, persistent=False)
            with gm.graph.inserting_before(node):
                const = gm.graph.get_attr(name)
            const.meta["val"] = value
            same.append((value, const))
            count += 1
        for u in users:
            u.replace_input_with(node, const)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return count

