"""Convolutions, pooling and the norms of convolutional models (megakittens/convolution.py,
megakittens/decompose.py) on the CPU interpreter, against eager and an fp32 reference: im2col with any
stride, padding and dilation, groups as a batched product, max pooling, constant padding, eval-mode batch
norm, group norm, weight norm, and whole Hugging Face ResNet / ConvNeXt / RegNet / Whisper-encoder /
wav2vec2 models."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import megakittens
import megakittens.backend as mk_backend
from common import BF16, randn, rel_err
from test_sdpa_math import assert_gpu_bodies


def kinds():
    return [n.itype for n in mk_backend.dispatchers[-1].program.nodes]


def _check(module, x, tol=1e-2):
    """Within tol of the fp32 module, and of eager bf16 unless eager itself is off from fp32 (torch 2.13's
    CPU bf16 grouped Conv1d with an even kernel of 16 reads 1.1 from fp32)."""
    module = module.to(BF16).eval().requires_grad_(False)
    out, ref = megakittens.compile(module)(x), module(x)
    ref32 = module.float()(x.float())
    assert out.shape == ref.shape and out.stride() == ref.stride(), (out.shape, out.stride(), ref.stride())
    assert rel_err(out, ref32) <= tol, rel_err(out, ref32)
    assert rel_err(out, ref) <= tol or rel_err(ref, ref32) > 10 * tol, (rel_err(out, ref), rel_err(ref, ref32))
    return out


CONVS = {  # name: (module, input shape)
    "k3_s1_p1": (lambda: nn.Conv2d(16, 32, 3, 1, 1), (2, 16, 12, 12)),         # Ho Wo a multiple of 8: weights-left
    "k3_s2_p1_odd": (lambda: nn.Conv2d(16, 32, 3, 2, 1), (2, 16, 13, 12)),     # phases, rows layout
    "k7_s2_p3_rgb": (lambda: nn.Conv2d(3, 20, 7, 2, 3), (2, 3, 30, 30)),       # 147 values a row: padded
    "k1_s1": (lambda: nn.Conv2d(16, 32, 1), (2, 16, 9, 9)),
    "k1_s2_no_bias": (lambda: nn.Conv2d(16, 32, 1, 2, bias=False), (2, 16, 9, 9)),
    "dilation2": (lambda: nn.Conv2d(8, 16, 3, 1, 2, dilation=2), (1, 8, 10, 11)),
    "rect_same": (lambda: nn.Conv2d(16, 16, (3, 5), padding="same"), (2, 16, 10, 10)),
    "valid_s2": (lambda: nn.Conv2d(16, 16, 3, 2, padding="valid"), (2, 16, 11, 11)),  # padding [0] in aten
    "groups2": (lambda: nn.Conv2d(16, 32, 3, 1, 1, groups=2), (2, 16, 8, 8)),
    "depthwise7": (lambda: nn.Conv2d(16, 16, 7, 1, 3, groups=16), (2, 16, 10, 10)),
    "c1d_k3_p1": (lambda: nn.Conv1d(16, 32, 3, 1, 1), (2, 16, 50)),
    "c1d_k3_s2_p1": (lambda: nn.Conv1d(32, 32, 3, 2, 1), (2, 32, 50)),       # Whisper's second convolution
    "c1d_k10_s5": (lambda: nn.Conv1d(1, 16, 10, 5), (2, 1, 400)),            # wav2vec2's first
    "c1d_groups4_k16": (lambda: nn.Conv1d(32, 32, 16, padding=8, groups=4), (2, 32, 40)),
}


@pytest.mark.parametrize("name", list(CONVS))
def test_convolution_matches_eager(name):
    make, shape = CONVS[name]
    torch.manual_seed(0)
    _check(make(), randn(*shape))
    gemms = [k for k in kinds() if k.startswith("Gemm")]
    assert len(gemms) == 1, kinds()  # one product (batched over groups), whatever the kernel
    assert not any(k.startswith(("ElementwiseUnary", "ElementwiseBinary")) for k in kinds()), kinds()
    assert_gpu_bodies()


def test_weights_left_layout_makes_no_copy_of_a_pointwise_convolution():
    """A 1 x 1 convolution over 8 x 8 positions: weight (O, C) @ x viewed (C, H W), NCHW as it is: one Gemm."""
    _check(nn.Conv2d(16, 24, 1, bias=False), randn(1, 16, 8, 8))
    assert kinds() == ["Gemm"], kinds()


@pytest.mark.parametrize("kw,shape", [(dict(kernel_size=3, stride=2, padding=1), (2, 16, 13, 13)),
                                      (dict(kernel_size=2, stride=2, ceil_mode=True), (2, 16, 9, 9)),
                                      (dict(kernel_size=3, stride=1, padding=1, ceil_mode=True), (2, 8, 7, 7)),
                                      (dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)), (1, 4, 9, 11))])
def test_max_pool_matches_eager(kw, shape):
    x = randn(*shape)
    x[0, 1, 2, 3] = float("nan")  # NaN propagates through the window max, as eager
    pool = nn.MaxPool2d(**kw)
    out, ref = megakittens.compile(pool)(x), pool(x)
    assert torch.equal(out.isnan(), ref.isnan()) and ref.isnan().any()
    keep = ~ref.isnan()
    assert torch.equal(out[keep], ref[keep])  # a max is exact
    assert not any(k.startswith("Gemm") for k in kinds())


def test_max_pool_indices_read_stay_an_error():
    def f(x):
        y, i = F.max_pool2d(x, 2, return_indices=True)
        return y, i

    with pytest.raises(Exception, match=r"max_pool2d_with_indices"):
        megakittens.compile(f)(randn(1, 4, 8, 8))


@pytest.mark.parametrize("pad,value", [((1, 2), 0.0), ((1, 1, 2, 0), -3.5), ((0, 0, -1, 2), 0.0), ((3, -2, 1, 1, 2, 2), 1.0)])
def test_constant_pad_matches_eager(pad, value):
    x = randn(2, 5, 6, 7)
    fn = lambda x: F.pad(x, pad, value=value) * 2.0  # noqa: E731
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.shape == ref.shape and torch.equal(out, ref)


def test_batch_norm_eval_group_norm_and_global_pooling():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn, self.gn = nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.GroupNorm(4, 16)

        def forward(self, x):
            y = self.gn(torch.relu(self.bn(self.conv(x))))
            return y.mean((-2, -1)), y.sum((-2, -1), keepdim=True), F.adaptive_avg_pool2d(y, 1)

    net = Net()
    net.bn.running_mean.uniform_(-1, 1)
    net.bn.running_var.uniform_(0.5, 2)
    net.bn.weight.data.uniform_(0.5, 1.5)
    net = net.to(BF16).eval().requires_grad_(False)
    x = randn(2, 8, 8, 8)
    outs, refs = megakittens.compile(net)(x), net(x)
    for o, r in zip(outs, refs):
        assert o.shape == r.shape and rel_err(o, r) <= 1e-2, rel_err(o, r)


@pytest.mark.parametrize("shape,size", [((2, 16, 1, 1), (7, 7)), ((2, 16, 2, 2), (7, 7)), ((2, 8, 5, 5), (3, 3)),
                                        ((2, 8, 7, 7), (7, 7)), ((2, 8, 14, 14), (7, 7)), ((2, 8, 5, 3), (7, 2)),
                                        ((8, 6, 10), (4, 7))])
def test_adaptive_avg_pool_matches_eager(shape, size):
    """Eager's windows, rows floor(i H / Ho) to ceil((i + 1) H / Ho): enlarging (torchvision VGG / AlexNet's 7 x 7
    pool of a 1 x 1 or 2 x 2 map), shrinking with overlapping windows, evenly (avg_pool2d), the identity, mixed,
    and an unbatched (C, H, W) map; the sums in fp32 rounded once, as eager's, so equal."""
    x = randn(*shape)
    fn = lambda x: F.adaptive_avg_pool2d(x * 2.0, size)  # noqa: E731
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.shape == ref.shape and torch.equal(out, ref), (out - ref).abs().max()
    assert_gpu_bodies()


def test_vgg_head_on_a_small_map_matches_eager():
    """VGG's classifier input at a small image: a 2 x 2 map pooled up to 7 x 7, flattened into a linear layer."""
    net = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d((7, 7)),
                        nn.Flatten(), nn.Linear(16 * 49, 32))
    _check(net, randn(2, 8, 4, 4))


def test_weight_norm_matches_eager():
    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(16, 16, 5, padding=2, groups=4), dim=2)
    _check(conv, randn(2, 16, 24))


transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("family", ["resnet", "convnext", "regnet", "whisper_encoder", "wav2vec2"])
def test_hf_convolutional_models_match_eager(family):
    T = transformers
    torch.manual_seed(0)
    if family == "resnet":
        m, kw = T.ResNetModel(T.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
                                             layer_type="bottleneck")), {"pixel_values": randn(2, 3, 64, 64)}
    elif family == "convnext":
        m, kw = T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)), \
            {"pixel_values": randn(2, 3, 64, 64)}
    elif family == "regnet":
        m, kw = T.RegNetModel(T.RegNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
                                             groups_width=8)), {"pixel_values": randn(2, 3, 64, 64)}
    elif family == "whisper_encoder":
        cfg = T.WhisperConfig(d_model=64, encoder_layers=2, decoder_layers=1, encoder_attention_heads=4,
                              decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
                              max_source_positions=32, vocab_size=256, pad_token_id=0)
        m, kw = T.WhisperModel(cfg).encoder, {"input_features": randn(2, 16, 64)}
    else:
        cfg = T.Wav2Vec2Config(hidden_size=64, num_hidden_layers=1, num_attention_heads=4, intermediate_size=128,
                               conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                               num_conv_pos_embedding_groups=4)
        m, kw = T.Wav2Vec2Model(cfg), {"input_values": randn(2, 800)}
    m = m.eval().to(BF16)
    with torch.no_grad():
        out, ref = megakittens.compile(m)(**kw), m(**kw)
    assert rel_err(out.last_hidden_state, ref.last_hidden_state) <= 2e-2
    assert_gpu_bodies()


def test_cat_stacks_small_planes_per_instruction():
    """A Cat of a convolution's taps (views of small planes) stacks whole planes along dim 1 per instruction
    (docs/itypes.md Cat); a transposed input (its dim 1 another backing dim) keeps one plane each."""
    def f(x, a):
        taps = [x[:, :, i:i + 7, j:j + 7] for i in (0, 2) for j in (0, 1)]
        return torch.cat(taps, 1), torch.cat([a.transpose(0, 1), a.transpose(0, 1)], 0)

    x, a = randn(2, 48, 9, 9), randn(2, 96, 7, 7)
    outs, refs = megakittens.compile(f)(x, a), f(x, a)
    assert all(torch.equal(o, r) for o, r in zip(outs, refs))
    counts = [n.count for n in mk_backend.dispatchers[-1].program.nodes]
    assert counts[0] < 4 * 2 * 48 and counts[1] == 2 * 2 * 96, counts


@pytest.mark.parametrize("case", ["k2", "k3s2p1", "k3s2p1_exclude_pad", "ceil_exclude_pad", "ceil", "divisor", "1d"])
def test_avg_pool(case):
    """nn.AvgPool2d / AvgPool1d: the taps' sum times eager's 1 / divisor per output position."""
    fns = {
        "k2": lambda x: F.avg_pool2d(x, 2),
        "k3s2p1": lambda x: F.avg_pool2d(x, 3, 2, 1),
        "k3s2p1_exclude_pad": lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
        "ceil_exclude_pad": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        "ceil": lambda x: F.avg_pool2d(x, 2, 2, 0, ceil_mode=True),
        "divisor": lambda x: F.avg_pool2d(x, 2, divisor_override=3),
        "1d": lambda x: F.avg_pool1d(x[0], 2),
    }
    x = randn(2, 8, 15, 13) + 1.0  # a mean away from 0: a wrong divisor shows
    torch._dynamo.reset()
    out, ref = megakittens.compile(fns[case])(x), fns[case](x)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2, rel_err(out, ref)


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_pool_window_larger_than_its_input(pool):
    """EfficientNet's pooler, nn.AvgPool2d(1280, ceil_mode=True) on a 7 x 7 map: only the taps that read the
    input are summed (convolution._taps skip_fill), not 1280^2 of them over a padded copy the window's size
    (which never finished compiling). A max pool's window is at most twice its padding: there the taps in
    the padding alone (-inf) are left out."""
    f = (lambda x: F.avg_pool2d(x, 96, ceil_mode=True)) if pool == "avg" else \
        (lambda x: F.max_pool2d(x, 9, stride=4, padding=4, ceil_mode=True))
    x = randn(2, 16, 7, 6) + 1.0
    torch._dynamo.reset()
    out, ref = megakittens.compile(f)(x), f(x)
    assert out.shape == ref.shape and rel_err(out, ref) <= 1e-2, rel_err(out, ref)
    assert len(mk_backend.dispatchers[-1].program.nodes) < 100


@pytest.mark.parametrize("kw", [dict(kernel_size=3, padding=1), dict(kernel_size=(2, 3), dilation=2, stride=2),
                                dict(kernel_size=(9, 1), padding=(4, 0))])
def test_unfold(kw):
    """F.unfold (aten.im2col; ConvBERT's span convolution): exact, (B, C kh kw, L) in eager's order."""
    x = randn(2, 8, 15, 13)
    fn = lambda x: F.unfold(x, **kw)  # noqa: E731
    torch._dynamo.reset()
    out, ref = megakittens.compile(fn)(x), fn(x)
    assert out.shape == ref.shape and torch.equal(out, ref)
