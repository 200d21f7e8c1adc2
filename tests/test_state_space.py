"""Hugging Face models whose graphs megakittens cannot compile whole (state-space scans, data-dependent
slices), on the CPU reference interpreter: a fullgraph compile raises a CompileError naming the op, and
fallback="eager" runs them against eager. Found by the breadth trial of 2026-12-06 (benchmarks/notes.md
Session 45), where each crashed inside the front end instead."""
import pytest
import torch

import megakittens
from common import rel_err

transformers = pytest.importorskip("transformers")


def _model(cfg_name: str, model_name: str, **cfg):
    if not hasattr(transformers, cfg_name):
        pytest.skip(f"transformers {transformers.__version__} has no {cfg_name}")
    torch.manual_seed(0)
    return getattr(transformers, model_name)(getattr(transformers, cfg_name)(**cfg)).to(torch.bfloat16).eval()


@pytest.mark.parametrize("name", ["Mamba", "Mamba2"])
def test_state_space_models_fall_back_to_eager(name):
    """Mamba's scan runs torch.vmap, whose failed functionalized trace left functorch's layer stack pushed (the
    AOTAutograd trace after it then hit an internal assert: backend.capture_inference restores the depth);
    Mamba2's chunked scan views 6-D tensors that rank5._logical_view cannot replay (a fake tensor's
    impossible view raises ValueError, now caught like RuntimeError)."""
    extra = {"num_heads": 4, "head_dim": 32, "n_groups": 1, "chunk_size": 4} if name == "Mamba2" else {}
    model = _model(f"{name}Config", f"{name}Model", vocab_size=256, hidden_size=64, state_size=8,
                   num_hidden_layers=2, expand=2, conv_kernel=4, **extra)
    ids = torch.randint(0, 256, (2, 12))
    fwd = lambda i: model(input_ids=i, use_cache=False).last_hidden_state  # noqa: E731
    with torch.no_grad():
        ref = fwd(ids)
        with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="CompileError"):
            megakittens.compile(fwd)(ids)
        torch._dynamo.reset()
        out = megakittens.compile(fwd, fallback="eager")(ids)
    assert out.shape == ref.shape and not out.isnan().any()
    assert rel_err(out, ref) <= 1e-2, f"{name}: relative error {rel_err(out, ref):.3g}"


@pytest.mark.parametrize("fallback", [None, "eager"])
def test_slice_by_item_is_named_as_data_dependent(fallback):
    """Reformer slices its axial position embeddings by `position_ids.max().item()`: fold._index_as_slices
    compared that unbacked size and raised torch's GuardOnDataDependentSymNode; now the slice is refused by
    name, with or without fallback="eager" (README: a shape only the data decides)."""
    model = _model("ReformerConfig", "ReformerModel", vocab_size=256, hidden_size=64, num_attention_heads=2,
                   attention_head_size=32, feed_forward_size=128, attn_layers=["local", "local"],
                   axial_pos_shape=[4, 4], axial_pos_embds_dim=[32, 32], local_attn_chunk_length=4,
                   max_position_embeddings=16, is_decoder=False)
    ids = torch.randint(0, 256, (2, 16))
    with torch.no_grad(), pytest.raises(torch._dynamo.exc.BackendCompilerFailed,
                                        match="shape depends on the values of its input"):
        megakittens.compile(model, fallback=fallback)(input_ids=ids)
