"""Convolutional models (megakittens/convolution.py: im2col, grouped products, pooling, eval batch norm) on the
H200 as one megakernel, against eager on the GPU and the fp32 model: the convolution cases of
tests/test_convolution.py, a small Hugging Face ResNet / ConvNeXt and the Whisper-base encoder."""
from __future__ import annotations

import copy
import warnings

import pytest
import torch

import megakittens.backend as mk_backend
from common import rel_err
from test_convolution import CONVS
from test_gpu_llama import _compile_no_fallback, _gpu_ok, _megakernel_launches


def _need_gpu():
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")


def _run(module, *args, tol=1e-2):
    ref32 = copy.deepcopy(module).float().cuda().eval()
    module = module.to("cuda", torch.bfloat16).eval().requires_grad_(False)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Whisper encoder's head dim 64 attention is Attention; others may warn
        compiled = _compile_no_fallback(module)
        out, ref = compiled(*args), module(*args)
        want = ref32(*(a.float() for a in args))
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        pick = lambda o: o.last_hidden_state if hasattr(o, "last_hidden_state") else o  # noqa: E731
        assert rel_err(pick(out), pick(want)) <= tol and rel_err(pick(out), pick(ref)) <= tol, \
            (rel_err(pick(out), pick(want)), rel_err(pick(out), pick(ref)))
        assert _megakernel_launches(compiled, *args)[0] == 1


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CONVS))
def test_convolutions_on_the_gpu(name):
    _need_gpu()
    make, shape = CONVS[name]
    torch.manual_seed(0)
    _run(make(), torch.randn(*shape, device="cuda").to(torch.bfloat16))


@pytest.mark.gpu
@pytest.mark.parametrize("family", ["resnet", "convnext", "whisper_base_encoder"])
def test_hf_convolutional_models_on_the_gpu(family):
    _need_gpu()
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if family == "resnet":
        m = T.ResNetModel(T.ResNetConfig(embedding_size=32, hidden_sizes=[64, 128], depths=[2, 2]))
        x = torch.randn(4, 3, 128, 128, device="cuda").to(torch.bfloat16)
    elif family == "convnext":
        m = T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[32, 64], depths=[2, 2], num_stages=2))
        x = torch.randn(4, 3, 128, 128, device="cuda").to(torch.bfloat16)
    else:
        m = T.WhisperModel(T.WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                           encoder_ffn_dim=2048, decoder_layers=1, decoder_attention_heads=8)).encoder
        x = torch.randn(2, 80, 3000, device="cuda").to(torch.bfloat16)
    _run(m, x, tol=2e-2)
