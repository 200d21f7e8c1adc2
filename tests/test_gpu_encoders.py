"""Hugging Face encoders on the H200 as one megakernel, called as users call them: BERT with input_ids alone (its
token type ids gathered from a buffer: two Embeddings, megakittens/gather.py) and a 2-label classification head
(zero-padded to TMA's 16-byte rows, megakittens/gemm_padding.py); RoBERTa and OPT with a padding mask, their
position ids computed in fp32 (megakittens/float_ids.py: Embedding reading fp32 ids on the device); DeBERTa-v2
with a padding mask (its masked_fill as ElementwiseBinary(op=select), megakittens/masks.py). BERT-base
widths (hidden 768, 12 heads), 2 layers, batch 8, 128 tokens; within 2e-2 of eager on the kept positions."""
from __future__ import annotations

import pytest
import torch

import megakittens.backend as mk_backend
from common import rel_err
from test_gpu_llama import _compile_no_fallback, _gpu_ok, _megakernel_launches

WIDTHS = dict(vocab_size=1000, hidden_size=768, num_hidden_layers=2, num_attention_heads=12, intermediate_size=3072)
CASES = {
    "bert": ("BertConfig", "BertModel", "last_hidden_state", False),
    "bert_classifier": ("BertConfig", "BertForSequenceClassification", "logits", True),
    "roberta": ("RobertaConfig", "RobertaModel", "last_hidden_state", True),
    "opt": ("OPTConfig", "OPTModel", "last_hidden_state", True),
    "deberta_v2": ("DebertaV2Config", "DebertaV2Model", "last_hidden_state", True),  # masked_fill: select
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
def test_hf_encoder_is_one_megakernel(case):
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    transformers = pytest.importorskip("transformers")
    cfg_name, model_name, field, masked = CASES[case]
    widths = dict(WIDTHS)
    if case == "opt":
        widths["ffn_dim"] = widths.pop("intermediate_size")
    cfg = getattr(transformers, cfg_name)(**widths, **({"num_labels": 2} if case == "bert_classifier" else {}))
    # DeBERTa-v2's disentangled attention has no SDPA path (transformers 5.17 refuses "sdpa" for it).
    cfg._attn_implementation = "eager" if case == "deberta_v2" else "sdpa"
    torch.manual_seed(0)
    model = getattr(transformers, model_name)(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
    ids = torch.randint(3, 1000, (8, 128), device="cuda")
    am = torch.ones(8, 128, dtype=torch.long, device="cuda")
    am[3, 100:], am[5, 17:] = 0, 0
    ids[am == 0] = pad
    kw = {"attention_mask": am} if masked else {}

    def fwd(i):
        return getattr(model(i, **kw), field)

    with torch.no_grad():
        ref = fwd(ids)
        fn = _compile_no_fallback(fwd)
        out = fn(ids)
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        assert _megakernel_launches(fn, ids)[0] == 1
        ref32 = getattr(model.float()(ids, **kw), field)
    keep = am.bool() if out.dim() == 3 else torch.ones(out.shape[0], dtype=torch.bool, device="cuda")
    assert rel_err(out[keep], ref32[keep]) <= 2e-2 or rel_err(out[keep], ref[keep]) <= 2e-2


@pytest.mark.gpu
def test_torch_transformer_encoder_is_one_megakernel():
    """nn.TransformerEncoder's fused fast path (megakittens/native_layers.py) at BERT-base widths with a key
    padding mask: one megakernel, within 2e-2 of eager on the kept positions."""
    if not _gpu_ok():
        pytest.skip("needs a Hopper GPU and the GPU runtime")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to(device="cuda",
                                                                              dtype=torch.bfloat16).eval()
    x = torch.randn(8, 128, 768, device="cuda", dtype=torch.bfloat16)
    pad = torch.zeros(8, 128, dtype=torch.bool, device="cuda")
    pad[3, 100:], pad[5, 17:] = True, True

    def fwd(x, p):
        return enc(x, src_key_padding_mask=p)

    with torch.no_grad():
        ref = fwd(x, pad)
        fn = _compile_no_fallback(fwd)
        out = fn(x, pad)
        assert mk_backend.dispatchers[-1]._gpu_error == "", mk_backend.dispatchers[-1]._gpu_error
        assert _megakernel_launches(fn, x, pad)[0] == 1
    assert rel_err(out[~pad], ref[~pad]) <= 2e-2
