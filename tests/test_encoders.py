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
    # ESM: its GELU written out with erf, rotary positions
    "esm": ("EsmConfig", "EsmModel", {"pad_token_id": 1, "position_embedding_type": "rotary"}, "last_hidden_state"),
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


def test_hf_whisper_encoder_decoder_matches_eager():
    """WhisperModel whole: the convolutional encoder, and a decoder whose positions are an index of its
    position table (an Embedding: megakittens/gather.py) with cross-attention to the encoder."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.WhisperConfig(vocab_size=512, d_model=256, encoder_layers=2, decoder_layers=2,
                                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=512,
                                     decoder_ffn_dim=512, num_mel_bins=80, max_source_positions=32,
                                     max_target_positions=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                     decoder_start_token_id=1)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.WhisperModel(cfg).to(BF16).eval()
    feats, dec = torch.randn(2, 80, 64).to(BF16), torch.randint(3, 512, (2, 8))
    torch._dynamo.reset()
    with torch.no_grad():
        out = megakittens.compile(model)(input_features=feats, decoder_input_ids=dec).last_hidden_state
        ref = model(input_features=feats, decoder_input_ids=dec).last_hidden_state
    assert rel_err(out, ref) <= HIDDEN_TOL
    kinds = [n.itype for n in mk_backend.dispatchers[-1].program.nodes]
    assert sum(k.startswith("Attention") for k in kinds) == 6, kinds  # encoder self, decoder self and cross


@pytest.mark.parametrize("eos", [None, 2])
def test_hf_clip_text_model_matches_eager(eos):
    """CLIPTextModel whole, pooled output included: the row of the largest id (legacy configs) or of the first
    eos token, picked by an argmax computed in fp32 and an Embedding over the hidden states
    (megakittens/float_ids.py)."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.CLIPTextConfig(vocab_size=512, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=512, max_position_embeddings=77,
                                      **({} if eos is None else {"eos_token_id": eos}))
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.CLIPTextModel(cfg).to(BF16).eval()
    ids = torch.randint(3, 500, (2, 20))
    ids[0, 12], ids[1, 5], ids[1, 9] = 2, 2, 2
    torch._dynamo.reset()
    with torch.no_grad():
        out, ref = megakittens.compile(model)(ids), model(ids)
    for field in ("last_hidden_state", "pooler_output"):
        err = rel_err(getattr(out, field), getattr(ref, field))
        assert err <= HIDDEN_TOL, f"{field}: relative error {err:.3g}"


def test_hf_clip_model_matches_eager():
    """CLIPModel whole: both towers, the eos-pooled text embedding, and the logits scaled by the 0-dim
    ``logit_scale.exp()`` (megakittens/scalars.py). Against the fp32 model: the scale (~14) magnifies the
    towers' bf16 differences in the logits."""
    transformers = pytest.importorskip("transformers")
    tc = dict(vocab_size=512, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
              max_position_embeddings=77, eos_token_id=2)
    vc = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, image_size=64,
              patch_size=16)
    cfg = transformers.CLIPConfig(text_config=tc, vision_config=vc, projection_dim=128)
    torch.manual_seed(0)
    model = transformers.CLIPModel(cfg).to(BF16).eval()
    ids, pixels = torch.randint(3, 500, (2, 20)), torch.randn(2, 3, 64, 64).to(BF16)
    ids[:, 15] = 2
    torch._dynamo.reset()
    with torch.no_grad():
        out = megakittens.compile(model)(input_ids=ids, pixel_values=pixels)
        ref = model.float()(input_ids=ids, pixel_values=pixels.float())
    for field in ("text_embeds", "image_embeds", "logits_per_image"):
        err = rel_err(getattr(out, field), getattr(ref, field))
        assert err <= HIDDEN_TOL, f"{field}: relative error {err:.3g}"
