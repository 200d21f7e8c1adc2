"""Diagnostic (device): how far megakittens and eager bf16 each are from an fp32 run of the same model, to
tell bf16 rounding drift from a bug. `python3 benchmarks/accuracy_llama.py example:1b hf:1b ...` (the
shapes of benchmarks/llama.py). Prints the relative error of the final hidden state for each pair and, for
examples/llama.py (which has the lm_head), the argmax agreement on the positions where the fp32 run's top
two logits are decisive (examples/llama.py argmax_agreement)."""
import sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
from llama import _example_model, _example_module, _model  # noqa: E402

import megakittens  # noqa: E402


def main(specs):
    for spec in specs or ["example:8b"]:
        kind, name = spec.split(":")
        if kind == "hf":
            model, ids = _model(name)

            def run(i, model=model):
                return model(input_ids=i, use_cache=False).last_hidden_state, None
        else:
            fwd, ids = _example_model(name)
            model = fwd.__closure__[0].cell_contents

            def run(i, model=model):
                return model(i)

        torch._dynamo.reset()
        with torch.no_grad():
            h_mk, l_mk = megakittens.compile(run)(ids)
            h_bf, l_bf = run(ids)
            model.float()
            h_32, l_32 = run(ids)
        rel, agree = _example_module().rel_error, _example_module().argmax_agreement
        line = f"{spec}: hidden |mk - eager| {rel(h_mk, h_bf):.3e}, |mk - fp32| {rel(h_mk, h_32):.3e}, " \
               f"|eager - fp32| {rel(h_bf, h_32):.3e}"
        if l_mk is not None:
            line += (f"; argmax (decisive) mk~eager {agree(l_mk, l_bf)[1]:.4f}, mk~fp32 {agree(l_mk, l_32)[1]:.4f}, "
                     f"eager~fp32 {agree(l_bf, l_32)[1]:.4f}")
        print(line, flush=True)
        del model, run
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
