"""Debug artifacts under the log directory: the DAG (JSON + graphviz picture) and the schedule text.

Files are named ``<qualname>.<NN>.<kind>``; NN counts compiled graphs, continuing after the highest NN
already in the directory, so a later run never overwrites an earlier one. The directory is ``./log``
unless the environment variable MEGAKITTENS_LOG_DIR says otherwise.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

_counter = itertools.count()


def _log_dir() -> Path:
    return Path(os.environ.get("MEGAKITTENS_LOG_DIR") or "log")  # unset or empty: ./log


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)  # "<locals>" -> "_locals_"


def next_number(name: str) -> int:
    """The graph number NN shared by all artifacts of one compiled graph: process-global, and past every
    NN that files of ``name`` already use in the log directory."""
    used = [int(m.group(1)) for f in (_log_dir().glob(f"{_safe(name)}.*") if _log_dir().is_dir() else [])
            if (m := re.fullmatch(re.escape(_safe(name)) + r"\.(\d+)\..*", f.name))]
    return max(next(_counter), max(used, default=-1) + 1)


def log_path(name: str, number: int, suffix: str) -> Path:
    """<log dir>/<name>.<NN>.<suffix>, creating the directory; name is made file-safe. Raises OSError naming
    the directory and MEGAKITTENS_LOG_DIR when it cannot be created (a file of that name, no permission)."""
    directory = _log_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OSError(f"megakittens: cannot create the log directory '{directory}' for save_dag / save_schedule "
                      f"(set MEGAKITTENS_LOG_DIR to a writable directory): {e}") from e
    return directory / f"{_safe(name)}.{number:02d}.{suffix}"


def dag_to_dict(dag: Any) -> dict:
    """A JSON-ready description of a ``_C.DAG``: nodes with kind, name, target, itype, inputs, outputs."""
    def meta(m):
        return {"dtype": m.dtype, "shape": list(m.shape), "device": m.device}

    nodes = []
    for n in dag.nodes:
        nodes.append({
            "id": n.id, "kind": n.kind, "name": n.name, "target": n.target, "itype": n.itype,
            "input_index": n.input_index, "attr": n.attr,
            "inputs": [{"producer": e.node, "output": e.output, "box": [list(p) for p in e.box],
                        "view_shape": list(e.view_shape)} for e in n.inputs],
            "outputs": [meta(m) for m in n.outputs],
        })
    return {"name": dag.name, "nodes": nodes}


def save_dag(dag: Any, name: str, number: int) -> Path:
    """Write <name>.<NN>.graph.json and, when graphviz and `dot` exist, <name>.<NN>.graph.png."""
    data = dag_to_dict(dag)
    path = log_path(name, number, "graph.json")
    path.write_text(json.dumps(data, indent=1))
    _save_picture(data, path.with_suffix(""))  # graph.json -> graph (graphviz adds .png)
    return path


def _save_picture(data: dict, stem: Path) -> None:
    try:
        import graphviz
    except ImportError:
        warnings.warn("megakittens: save_dag: no graphviz Python package, skipping the .png", stacklevel=3)
        return
    if shutil.which("dot") is None:
        warnings.warn("megakittens: save_dag: graphviz `dot` not found, skipping the .png", stacklevel=3)
        return
    g = graphviz.Digraph(data["name"], graph_attr={"rankdir": "TB"}, node_attr={"fontsize": "10"})
    for n in data["nodes"]:
        shapes = ", ".join(f"{m['dtype']}{m['shape']}" for m in n["outputs"])
        label = f"{n['name']}\n{n['itype'] or n['kind']}\n{shapes}"
        g.node(str(n["id"]), label, shape="box" if n["kind"] == "compute" else "ellipse")
        for e in n["inputs"]:
            g.edge(str(e["producer"]), str(n["id"]), label=str(e["view_shape"]), fontsize="8")
    g.render(filename=stem.name, directory=str(stem.parent), format="png", cleanup=True)


def save_schedule(program: Any, name: str, number: int, global_work_queue: bool = False) -> Path:
    """Write <name>.<NN>.schedule.txt: a line naming the launch's work queue, then program.format() (tensor
    table, one line per instruction). The instructions are the same under both queues; the per-SM tables'
    queue runs instruction i on SM i % num_sms as its (i / num_sms)-th, the column sm.iter; the global
    queue hands them out in program.global_order (src/schedule/phase1_place.cpp [Note: global claim
    order]), listed on a second line when it is not the index order."""
    queue = ("global: instructions claimed in claim order by whichever SM is free (sm.iter unused)"
             if global_work_queue else "per-SM tables: instruction i runs on SM sm as its iter-th (sm.iter)")
    head = f"# work queue {queue}\n"
    order = list(program.global_order)
    if global_work_queue and order != list(range(len(order))):
        head += "# claim order (instructions, first claimed first): " + " ".join(map(str, order)) + "\n"
    path = log_path(name, number, "schedule.txt")
    path.write_text(head + program.format())
    return path
