"""The seed's own worked example (§04-§05) through the real capture path: Dynamo + AOTAutograd →
C++ tracer → scheduler on the b200 profile, then the CPU reference interpreter against eager."""
import torch

import megakittens
import megakittens.backend as mk_backend
from megakittens import _C
from common import mlp, mlp_inputs, rel_err


def _compiled_program(**options):
    args = mlp_inputs(1024, 1024)
    out = megakittens.compile(mlp, target="b200", fuse=False, **options)(*args)  # the seed's own lowering
    assert rel_err(out, mlp(*args)) <= 1e-2
    return mk_backend.dispatchers[-1]


def test_seed_mlp_schedule_through_dynamo():
    d = _compiled_program()
    p = d.program
    assert p.num_sms == 148 and p.cluster_size == 2
    assert p.num_instructions == 240
    assert len(p.slots) == 11
    assert [list(p.slots[s].shape) for s in p.input_slots] == [[3, 1024, 1024], [1024, 1024], [3, 1024, 1024]]
    assert p.input_slots == [0, 1, 2]  # T0 = W, T1 = x, T2 = b
    gemms = [n for n in p.nodes if n.itype == "Gemm"]
    adds = [n for n in p.nodes if n.itype.startswith("ElementwiseBinary")]
    relus = [n for n in p.nodes if n.itype.startswith("ElementwiseUnary")]
    assert [n.start for n in gemms] == [0, 80, 160] and [n.count for n in gemms] == [16] * 3
    assert relus[-1].dst_slots == [3] == gemms[0].dst_slots  # the final ReLU reuses T3
    assert adds[-1].dst_slots[0] not in (3,) and adds[-1].start == 176
    barriers = p.barriers
    assert len(barriers) == 125
    assert sum(1 for (_, _, reuse) in barriers if reuse) == 1
    gemm_ids = {i for i, n in enumerate(p.nodes) if n.itype == "Gemm"}
    assert all(t == 2 for (t, prod, reuse) in barriers if not reuse and prod in gemm_ids)
    # Our icode rule: identical layers share one icode per IType (Noop, Gemm, add, relu).
    assert len(p.icodes) == 4
    # Per-SM table [2, 148, 64] with 56 zero-filled slots.
    table = p.table_per_sm()
    assert table.shape == (2, 148, 64)
    assert int((abs(table).sum(axis=2) == 0).sum()) == 56


def test_seed_icode_rule_and_view_folding():
    d = _compiled_program()
    seeded = _C.schedule(d.dag, _C.Profile.by_name("b200"), cluster_size=2, icode_per_tensor_tuple=True)
    assert len(seeded.icodes) == 10  # 9 icodes besides Noop
    # W[1] folds to ((0,1),(1,2),(0,1024),(0,1024)) on W's padded shape (1,3,1024,1024).
    W = next(n for n in d.dag.nodes if n.kind == "input" and n.input_index == 0)
    boxes = [tuple(map(tuple, e.box)) for n in d.dag.nodes for e in n.inputs if e.node == W.id]
    assert ((0, 1), (1, 2), (0, 1024), (0, 1024)) in boxes
    assert len(boxes) == 3


def test_layer2_row_block0_waits_on_16_relus():
    p = _compiled_program().program
    relu0 = next(n for n in p.nodes if n.itype.startswith("ElementwiseUnary"))
    producers = {}
    for i in range(relu0.start, relu0.start + relu0.count):
        for b in p.instruction(i)["dst_barriers"]:
            producers.setdefault(b, set()).add(i)
    for i in range(80, 88):
        inst = p.instruction(i)
        waits = inst["src_barriers"][: inst["num_src_input"]]
        deps = set().union(*(producers.get(b, set()) for b in waits))
        assert len(deps) == 16
        assert all(p.instruction(j)["indices"][6] < 512 for j in deps)  # ReLU rows 0-511
