"""Hugging Face encoders called the way users call them, on the CPU interpreter: BERT and the models built on its
embeddings with input_ids alone (the token type ids gathered from a buffer: megakittens/gather.py), with a
padding mask, and with a classification head of 2 labels (N off TMA's 16-byte rows: megakittens/gemm_padding.py);
RoBERTa, XLM-RoBERTa and MPNet (position ids numbered from the input ids) and OPT with a padding mask (from the
mask): integer id arithmetic recomputed in fp32 (megakittens/float_ids.py). Tiny configs, random bf16 weights,
batch 2, the padded batch padded with the pad token; outputs within tests/test_llama.py's HIDDEN_TOL of eager
on the kept positions."""
from __future__ import annotations

import pytest
import torch

import megakittens
import megakittens.backend as mk_backend
from common import BF16, rel_err
from test_llama import HIDDEN_TOL

SHARED = dict(vocab_size=512, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512)
# family: (config class, model class, extra config kwargs, the output compared)
ENCODERS = {
    "bert": ("BertConfig", "BertModel", {}, "last_hidden_state"),
    "electra": ("ElectraConfig", "ElectraModel", {"embedding_size": 128}, "last_hidden_state"),
    "albert": ("AlbertConfig", "AlbertModel", {"embedding_size": 128}, "last_hidden_state"),
    "bert_classifier": ("BertConfig", "BertForSequenceClassification", {"num_labels": 2}, "logits"),
    "roberta": ("RobertaConfig", "RobertaModel", {}, "last_hidden_state"),
    "xlm_roberta": ("XLMRobertaConfig", "XLMRobertaModel", {}, "last_hidden_state"),
    "mpnet": ("MPNetConfig", "MPNetModel", {}, "last_hidden_state"),
    "opt": ("OPTConfig", "OPTModel", {"ffn_dim": 512, "word_embed_proj_dim": 256}, "last_hidden_state"),
}
CAUSAL = {"opt"}


@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("family", sorted(ENCODERS))
def test_hf_encoders_with_input_ids_alone(family, mask):
    transformers = pytest.importorskip("transformers")
    cfg_name, model_name, extra, field = ENCODERS[family]
    if not hasattr(transformers, cfg_name):
        pytest.skip(f"transformers {transformers.__version__} has no {cfg_name}")
    shared = dict(SHARED)
    if family == "opt":
        del shared["intermediate_size"]
    cfg = getattr(transformers, cfg_name)(**shared, **extra)
    cfg._attn_implementation = "eager" if family == "mpnet" else "sdpa"  # MPNet: attention written out
    torch.manual_seed(0)
    model = getattr(transformers, model_name)(cfg).to(BF16).eval()
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
    ids = torch.randint(3, 512, (2, 40))
    am = torch.ones(2, 40, dtype=torch.long)
    if mask:
        am[1, 29:] = 0  # right padding, as a tokenizer pads a batch
        ids[1, 29:] = pad
    kw = {"attention_mask": am} if mask else {}
    torch._dynamo.reset()
    with torch.no_grad():
        out, ref = getattr(megakittens.compile(model)(ids, **kw), field), getattr(model(ids, **kw), field)
    keep = am.bool() if mask and field == "last_hidden_state" else torch.ones(2, 40, dtype=torch.bool)
    err = rel_err(out[keep] if out.dim() == 3 else out, ref[keep] if ref.dim() == 3 else ref)
    assert err <= HIDDEN_TOL, f"{family}: relative error {err:.3g}"
    kinds = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    if family in ("bert", "electra", "albert", "bert_classifier", "roberta", "xlm_roberta"):
        assert sum(k == "Embedding" for k in kinds) == 4, kinds  # words, positions, token types (two lookups)
    assert sum(k.startswith(f"Attention(causal={int(family in CAUSAL)}") for k in kinds) == 2, kinds
