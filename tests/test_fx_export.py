"""The Python side of the FX hand-over: node tuples as docs/core-api.md specifies them."""
import operator

import torch
from torch._dynamo.backends.common import aot_autograd

import megakittens  # noqa: F401  (custom ops)
from megakittens import _C, fx_export
from common import randn


class Ref:
    """Stand-in for _C.NodeRef so the encoding can be compared as plain data."""
    def __init__(self, index):
        self.index = index

    def __eq__(self, other):
        return isinstance(other, Ref) and other.index == self.index

    def __repr__(self):
        return f"Ref({self.index})"


def aten_graph(fn, *args) -> torch.fx.GraphModule:
    """The forward aten graph AOTAutograd hands to a backend for fn(*args)."""
    graphs = []

    def fw(gm, example_inputs):
        graphs.append(gm)
        return gm

    torch._dynamo.optimize(backend=aot_autograd(fw_compiler=fw), nopython=True, dynamic=False)(fn)(*args)
    return graphs[0]


def test_mlp_layer_encoding():
    gm = aten_graph(lambda W, x: torch.relu(x @ W[1]), randn(3, 64, 64), randn(32, 64))
    nodes = fx_export.encode_nodes(gm.graph, gm, node_ref=Ref)
    by_name = {n[0]: n for n in nodes}
    assert [n[1] for n in nodes] == ["placeholder", "placeholder", "call_function", "call_function",
                                     "call_function", "output"]
    w = nodes[0]
    assert w[2] == w[0] and w[5] == [((3, 64, 64), (4096, 64, 1), "bfloat16", "cpu")] and w[6] is False
    sel = by_name["select"]
    assert sel[2] == "aten.select.int" and sel[3] == [Ref(0), 0, 1]
    assert sel[5] == [((64, 64), (64, 1), "bfloat16", "cpu")]
    mm = by_name["mm"]
    assert mm[2] == "aten.mm.default" and mm[3] == [Ref(1), Ref(2)] and mm[4] == {}
    out = nodes[-1]
    assert out[2] == "output" and out[3] == [(Ref(4),)] and out[5] == [] and out[6] is False


def test_multi_output_getitem_and_strings():
    q = randn(1, 2, 64, 64)
    gm = aten_graph(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                    q, q, q)
    nodes = fx_export.encode_nodes(gm.graph, gm, node_ref=Ref)
    sdpa = next(n for n in nodes if "scaled_dot_product" in n[2])
    assert sdpa[6] is True and len(sdpa[5]) >= 2 and sdpa[5][0][0] == (1, 2, 64, 64)
    get = next(n for n in nodes if n[2] == "getitem")
    assert get[3] == [Ref(nodes.index(sdpa)), 0]


def test_dtype_and_opoverload_args_are_strings():
    def f(a, b):
        t = a.to(torch.float32) * 2
        torch.ops.megakittens.elementwise_binary_(b, b, "add", 0.5)
        return t, b

    gm = aten_graph(f, randn(8, 8), randn(8, 8))
    nodes = fx_export.encode_nodes(gm.graph, gm, node_ref=Ref)
    to_copy = next(n for n in nodes if n[2] == "aten._to_copy.default")
    assert to_copy[4]["dtype"] == "torch.float32"
    af = next(n for n in nodes if n[2] == "auto_functionalized_v2")
    assert af[3] == ["megakittens.elementwise_binary_.default"]
    assert af[4]["op"] == "add" and af[4]["alpha"] == 0.5 and af[4]["_all_bases"] == [Ref(1)]
    assert af[6] is True


def test_target_names():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(operator.getitem, (x, 0))
    z = g.call_method("relu", (y,))
    g.output(z)
    assert [fx_export.target_name(n) for n in g.nodes] == ["x", "getitem", "relu", "output"]


def test_export_builds_fxgraph():
    gm = aten_graph(lambda a, b: a + b, randn(8, 8), randn(8, 8))
    graph = fx_export.export_graph(gm, "add_fn")
    assert isinstance(graph, _C.FxGraph)
    assert len(_C.trace(graph).nodes) == 4  # two inputs, one add, the output
