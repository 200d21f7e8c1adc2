// The resolver registry: one entry per aten overload / custom op, keyed by str(OpOverload).
#include "trace/resolvers.h"

#include "ir/strings.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "itypes/attention.h"
#include "itypes/cat.h"
#include "itypes/copy.h"
#include "itypes/elementwise.h"
#include "itypes/embedding.h"
#include "itypes/gemm.h"
#include "itypes/rms_norm.h"
#include "itypes/rope.h"
#include "itypes/layer_norm.h"
#include "itypes/row_reduce.h"
#include "itypes/softmax.h"
#include "trace/op_call.h"

namespace mk {

namespace {

using ResolveFn = Resolution (*)(const OpCall&);
struct Entry {
  const char* schema;
  ResolveFn fn;
};

Resolution binary_on(const OpCall& c, const std::string& op, double alpha, const FxArg& a, const FxArg& b,
                     bool inplace = false);

// Whether a tensor-core IType's operand `t` is float16 (its f16 parameter; bfloat16 otherwise, which the
// IType's validate() then requires).
bool f16_of(const OpCall& c, const FxArg& t) { return c.meta(t).dtype == "float16"; }

// The transpose flags (and the bias kind) depend on the folded views: bound once the tracer has them.
Resolution gemm(const OpCall& c, const char* a, const char* b, const char* bias = nullptr) {
  // K = 1 (HF's rotary embedding: inv_freq (B, D/2, 1) @ positions (B, 1, S), in fp32): an outer
  // product, which is the broadcast product exactly (one rounding either way), in any floating dtype.
  const std::vector<int64_t>& as = c.meta(c.tensor(a)).shape;
  if (!bias && as.size() >= 2 && as.back() == 1 && c.meta(c.tensor(b)).shape.size() == as.size())
    return binary_on(c, "mul", 1.0, c.tensor(a), c.tensor(b));
  Gemm::Flags f;
  f.f16 = f16_of(c, c.tensor(a));
  Resolution r{std::make_shared<Gemm>(f), c.target(), {&c.tensor(a), &c.tensor(b)}};
  if (bias) r.inputs.push_back(&c.tensor(bias));
  r.bind = [f16 = f.f16](const std::vector<TensorRange>& views) -> ITypePtr {
    return std::make_shared<Gemm>(Gemm::flags_for(views, false, f16));
  };
  return r;
}

// megakittens.gemm_swiglu: D = silu(A @ B) * (A @ B2) (trace/fuse_swiglu).
Resolution gemm_swiglu(const OpCall& c) {
  Gemm::Flags f;
  f.swiglu = true;
  f.f16 = f16_of(c, c.tensor("a"));
  Resolution r{std::make_shared<Gemm>(f), c.target(), {&c.tensor("a"), &c.tensor("b"), &c.tensor("b2")}};
  r.bind = [f16 = f.f16](const std::vector<TensorRange>& views) -> ITypePtr {
    return std::make_shared<Gemm>(Gemm::flags_for(views, true, f16));
  };
  return r;
}

// addmm / baddbmm: D = beta * bias + alpha * (A @ B). Only beta = alpha = 1 (what nn.Linear emits).
Resolution gemm_bias(const OpCall& c, const char* a, const char* b) {
  for (const char* k : {"beta", "alpha"}) {
    if (const double x = c.f64(k, 1.0); x != 1.0)
      c.fail(k, "=", c.get(k)->str(), " is not supported (the Gemm bias epilogue computes bias + A @ B: beta and alpha must be 1)");
  }
  return gemm(c, a, b, "self");
}

// ElementwiseBinary on tensors a, b; which operand dims broadcast (torch rules, implicit or through a
// folded expand) depends on the folded views: bound once the tracer has them.
Resolution binary_on(const OpCall& c, const std::string& op, double alpha, const FxArg& a, const FxArg& b,
                     bool inplace) {
  Resolution r{std::make_shared<ElementwiseBinary>(op, alpha, inplace), c.target(), {&a, &b}};
  r.bind = [op, alpha, inplace](const std::vector<TensorRange>& views) -> ITypePtr {
    return std::make_shared<ElementwiseBinary>(op, alpha, inplace,
                                               ElementwiseBinary::broadcast_for(views.at(0), views.at(1)));
  };
  return r;
}

Resolution binary(const OpCall& c, const std::string& op, bool has_alpha = false) {
  const double alpha = has_alpha ? c.f64("alpha", 1.0) : 1.0;
  return binary_on(c, op, alpha, c.tensor("self"), c.tensor("other"));
}

Resolution unary(const OpCall& c, const std::string& op) {
  return {std::make_shared<ElementwiseUnary>(std::vector<std::string>{op}), c.target(), {&c.tensor("self")}};
}

// ---- Python number operands: ElementwiseUnary steps with a constant (docs/itypes.md) ----

std::string with_k(const char* name, double v) { return UnaryStep::with_constant(name, v); }

Resolution unary_ops(const OpCall& c, const FxArg& x, std::vector<std::string> ops) {
  return {std::make_shared<ElementwiseUnary>(std::move(ops)), c.target(), {&x}};
}

// y = scale * x + offset, in fp32: [neg | mul_scalar:scale,] add_scalar:offset.
Resolution affine(const OpCall& c, const FxArg& x, double scale, double offset) {
  std::vector<std::string> ops;
  if (scale == -1.0) ops.push_back("neg");
  else if (scale != 1.0) ops.push_back(with_k("mul_scalar", scale));
  ops.push_back(with_k("add_scalar", offset));
  return unary_ops(c, x, std::move(ops));
}

[[noreturn]] void both_numbers(const OpCall& c) {
  c.fail("both operands are numbers (", c.get("self")->str(), ", ", c.get("other")->str(),
         "): one must be a tensor");
}

// add / sub (.Tensor and .Scalar): self +- alpha * other; either operand may be a Python number.
Resolution add_sub(const OpCall& c, bool sub) {
  const auto a = c.scalar_operand("self"), b = c.scalar_operand("other");
  if (!a && !b) return binary(c, sub ? "sub" : "add", true);
  if (a && b) both_numbers(c);
  const double alpha = c.f64("alpha", 1.0), s = sub ? -alpha : alpha;
  if (b) return affine(c, c.tensor("self"), 1.0, s * *b);  // x + s*b
  return affine(c, c.tensor("other"), s, *a);               // a + s*x
}

// rsub: other - alpha * self.
Resolution rsub(const OpCall& c) {
  const auto a = c.scalar_operand("self"), b = c.scalar_operand("other");
  const double alpha = c.f64("alpha", 1.0);
  if (!a && !b)
    return binary_on(c, "sub", alpha, c.tensor("other"), c.tensor("self"));
  if (a && b) both_numbers(c);
  if (b) return affine(c, c.tensor("self"), -alpha, *b);     // b - alpha*x
  return affine(c, c.tensor("other"), 1.0, -alpha * *a);     // x - alpha*a
}

Resolution mul(const OpCall& c) {
  const auto a = c.scalar_operand("self"), b = c.scalar_operand("other");
  if (!a && !b) return binary(c, "mul");
  if (a && b) both_numbers(c);
  return unary_ops(c, c.tensor(b ? "self" : "other"), {with_k("mul_scalar", b ? *b : *a)});
}

// True division only; x / number is exact (div_scalar), never x * (1/number).
Resolution div(const OpCall& c, bool has_rounding_mode) {
  if (has_rounding_mode && !c.is_none("rounding_mode"))
    c.fail("only true division is supported, got rounding_mode=", c.get("rounding_mode")->str());
  const auto a = c.scalar_operand("self"), b = c.scalar_operand("other");
  if (!a && !b) return binary(c, "div");
  if (a && b) both_numbers(c);
  if (a) c.fail("a number divided by a tensor (", c.get("self")->str(), " / tensor) is not supported; only tensor / number");
  return unary_ops(c, c.tensor("self"), {with_k("div_scalar", *b)});
}

// x ** e: the common exponents map to exact ops, any other number to powf.
Resolution pow_scalar(const OpCall& c) {
  const double e = c.f64("exponent");
  std::string op;
  if (e == 2.0) op = "square";
  else if (e == 1.0) op = "identity";
  else if (e == 0.5) op = "sqrt";
  else if (e == -0.5) op = "rsqrt";
  else if (e == -1.0) op = "reciprocal";
  else op = with_k("pow_scalar", e);
  return unary_ops(c, c.tensor("self"), {op});
}

Resolution clamp(const OpCall& c) {
  std::vector<std::string> ops;
  if (!c.is_none("min")) ops.push_back(with_k("clamp_min", c.f64("min")));
  if (!c.is_none("max")) ops.push_back(with_k("clamp_max", c.f64("max")));
  if (ops.empty()) c.fail("at least one of min and max must be a number");
  return unary_ops(c, c.tensor("self"), std::move(ops));
}

Resolution gelu(const OpCall& c) {
  const std::string a = c.str("approximate", "none");
  if (a == "none") return unary(c, "gelu");
  if (a == "tanh") return unary(c, "gelu_tanh");
  c.fail("approximate='", a, "' is not supported (expected 'none' or 'tanh')");
}

// torch.finfo(dtype).eps, what rms_norm uses for eps=None.
double machine_eps(const OpCall& c, const std::string& dtype) {
  const DType d = dtype_from_name(dtype);
  if (d == DType::bf16) return 0.0078125;
  if (d == DType::f16) return 0.0009765625;
  if (d == DType::f32) return 1.1920928955078125e-07;
  c.fail("eps=None needs a floating-point input, got dtype ", dtype);
}

Resolution rms_norm(const OpCall& c) {
  const FxArg& x = c.tensor("input");
  const FxTensor& xm = c.meta(x);
  const std::vector<int64_t> ns = c.ints("normalized_shape");
  if (xm.shape.empty() || ns != std::vector<int64_t>{xm.shape.back()})
    c.fail("normalized_shape must be [last dim] = [", xm.shape.empty() ? 0 : xm.shape.back(),
           "] (RMSNorm normalizes the last dim only), got ", c.get("normalized_shape")->str());
  const double eps = c.opt_f64("eps").value_or(machine_eps(c, xm.dtype));
  const FxArg* w = c.opt_tensor("weight");
  Resolution r{std::make_shared<RMSNorm>(eps, w != nullptr, f16_of(c, x)), c.target(), {&x}};
  if (w) r.inputs.push_back(w);
  return r;
}

// megakittens.rope / rope_interleaved: the cos/sin broadcast dims and x's layout depend on the folded views.
Resolution rope(const OpCall& c, bool interleaved) {
  Resolution r{std::make_shared<Rope>(0, false, interleaved), c.target(),
               {&c.tensor("x"), &c.tensor("cos"), &c.tensor("sin")}};
  r.bind = [interleaved](const std::vector<TensorRange>& v) -> ITypePtr {
    return std::make_shared<Rope>(Rope::mask_for(v.at(0), v.at(1)), Rope::bshd_for(v.at(0)), interleaved,
                                  interleaved && Rope::half_for(v.at(0), v.at(1)));
  };
  return r;
}

// Which of q, k, v are read through a transpose(1, 2) of a (B, S, H, D) tensor depends on the folded
// views: bound once the tracer has them. `mask`: an additive mask, input 3.
Resolution attention(const OpCall& c, bool causal, double scale, const FxArg& q, const FxArg& k, const FxArg& v,
                     const FxArg* mask = nullptr) {
  const bool masked = mask != nullptr, f16 = f16_of(c, q);
  Resolution r{std::make_shared<Attention>(causal, scale, 0, masked, f16), c.target(), {&q, &k, &v}};
  if (masked) r.inputs.push_back(mask);
  r.bind = [causal, scale, masked, f16](const std::vector<TensorRange>& views) -> ITypePtr {
    return std::make_shared<Attention>(causal, scale, Attention::bshd_for(views), masked, f16);
  };
  return r;
}

// Shared by every SDPA flavour: dropout rejected, a mask of the query's dtype as Attention's additive mask, scale
// None -> 1/sqrt(D).
Resolution sdpa(const OpCall& c, const char* mask) {
  if (const double p = c.f64("dropout_p", 0.0); p != 0.0) c.fail("dropout is not supported, got dropout_p=", p);
  const FxArg* m = nullptr;
  if (mask && !c.is_none(mask)) {
    m = c.get(mask);
    if (!m->is_node()) c.fail("the Attention instruction type takes a tensor mask, got ", mask, "=", m->str());
    const FxTensor& mm = c.meta(*m);
    if (mm.dtype != c.meta(c.tensor("query")).dtype || mm.shape.size() != 4)
      c.fail("the Attention instruction type takes an additive 4-D mask (B|1, H|1, Sq|1, Sk) of the query's dtype (",
             c.meta(c.tensor("query")).dtype, "), got ", mask,
             " = a ", mm.dtype, " tensor of shape ", shape_str(mm.shape),
             "; megakittens/sdpa_math.py rewrites other masks (boolean ones built by casts, comparisons with a "
             "number, and / or / not and views; float masks of other dtypes) before tracing, or fallback=\"eager\" "
             "runs this SDPA as PyTorch's");
  }
  const FxArg& q = c.tensor("query");
  const FxTensor& qm = c.meta(q);
  if (qm.shape.empty() || qm.shape.back() <= 0) c.fail("query has no head dim, shape rank ", qm.shape.size());
  const double scale = c.opt_f64("scale").value_or(1.0 / std::sqrt(static_cast<double>(qm.shape.back())));
  return attention(c, c.flag("is_causal", false), scale, q, c.tensor("key"), c.tensor("value"), m);
}

// ---- data movement: copies and casts, embedding, cat, row reductions (docs/itypes.md) ----

std::string out_dtype(const OpCall& c) {
  const auto& outs = c.node().outputs;
  if (outs.size() != 1 || !outs[0]) c.fail("expects one tensor output");
  return outs[0]->dtype;
}

// clone / _to_copy: a tile view kept in its dtype is ElementwiseUnary identity (it has a GPU body);
// any other view (permuted, broadcast) or a dtype change is a Copy.
Resolution copy(const OpCall& c) {
  const FxArg& x = c.tensor("self");
  const bool same_dtype = c.meta(x).dtype == out_dtype(c);
  if (!c.is_none("memory_format")) {
    const std::string f = c.str("memory_format");
    if (f != "torch.contiguous_format" && f != "torch.preserve_format")
      c.fail("only contiguous copies are supported, got memory_format=", f);
  }
  Resolution r{std::make_shared<Copy>(), c.target(), {&x}};
  r.bind = [same_dtype](const std::vector<TensorRange>& v) -> ITypePtr {
    if (same_dtype && tile_view(v.at(0))) return std::make_shared<ElementwiseUnary>(std::vector<std::string>{"identity"});
    return std::make_shared<Copy>(Copy::src_for(v.at(0)));
  };
  return r;
}

// _to_copy(x, dtype=, layout=, device=, ...): a dtype cast on the same device.
Resolution to_copy(const OpCall& c) {
  if (!c.is_none("layout") && c.str("layout") != "torch.strided")
    c.fail("only strided tensors are supported, got layout=", c.get("layout")->str());
  if (!c.is_none("pin_memory") && c.flag("pin_memory")) c.fail("pin_memory=True is not supported");
  if (!c.is_none("non_blocking")) c.flag("non_blocking");  // type check: a same-device copy is synchronous anyway
  const FxTensor& in = c.meta(c.tensor("self"));
  const auto& outs = c.node().outputs;
  if (outs.size() == 1 && outs[0] && outs[0]->device != in.device)
    c.fail("copies between devices are not supported (", in.device, " -> ", outs[0]->device, ")");
  return copy(c);
}

Resolution cat(const OpCall& c) {
  const FxArg* list = c.get("tensors");
  if (!list || list->kind != FxArg::Kind::List || list->items.empty())
    c.fail("argument 'tensors' must be a non-empty list of tensors, got ", list ? list->str() : "nothing");
  const auto& outs = c.node().outputs;
  if (outs.size() != 1 || !outs[0]) c.fail("expects one tensor output");
  const int64_t rank = static_cast<int64_t>(outs[0]->shape.size());
  int64_t dim = c.i64("dim", 0);
  if (dim < -rank || dim >= rank) c.fail("dim ", dim, " is out of range for the rank-", rank, " output");
  if (dim < 0) dim += rank;
  Resolution r{std::make_shared<Cat>(static_cast<int>(4 - rank + dim)), c.target(), {}};
  for (const FxArg& t : list->items) {
    if (!t.is_node()) c.fail("argument 'tensors' must hold tensors only, got ", t.str());
    r.inputs.push_back(&t);
  }
  return r;
}

// sum / mean / max (amax) over the last dim only (RMSNorm- and LayerNorm-like patterns, softmax's row max);
// dtype= casts the result.
Resolution row_reduce(const OpCall& c, const char* op) {
  const FxArg& x = c.tensor("self");
  const int64_t rank = static_cast<int64_t>(c.meta(x).shape.size());
  const std::vector<int64_t> dims = c.is_none("dim") ? std::vector<int64_t>{} : c.ints("dim");
  const bool last = dims.size() == 1 && (dims[0] == -1 || dims[0] == rank - 1);
  const bool all_of_1d = rank == 1 && dims.empty();
  if (rank == 0 || (!last && !all_of_1d))
    c.fail(op, " is supported over the last dim only (dim=[-1]), got dim=", c.is_none("dim") ? "None" : c.get("dim")->str(),
           " on a rank-", rank, " tensor");
  return {std::make_shared<RowReduce>(op, c.flag("keepdim", false)), c.target(), {&x}};
}

std::vector<std::string> split_ops(const OpCall& c, const std::string& s) {
  if (s.find_first_not_of(' ') == std::string::npos) c.fail("ops must name at least one op, got ops='", s, "'");
  const std::vector<std::string> ops = split_trimmed(s, ',');
  for (const std::string& op : ops)
    if (op.empty()) c.fail("empty op in ops='", s, "'");
  return ops;
}

#define UNARY(name) \
  {"aten." #name ".default", {"self", [](const OpCall& c) { return unary(c, #name); }}}

const std::map<std::string, Entry>& registry() {
  static const std::map<std::string, Entry> r = {
      {"aten.mm.default", {"self, mat2", [](const OpCall& c) { return gemm(c, "self", "mat2"); }}},
      {"aten.bmm.default", {"self, mat2", [](const OpCall& c) { return gemm(c, "self", "mat2"); }}},
      {"aten.matmul.default", {"self, other", [](const OpCall& c) { return gemm(c, "self", "other"); }}},
      {"aten.addmm.default",
       {"self, mat1, mat2, *, beta, alpha", [](const OpCall& c) { return gemm_bias(c, "mat1", "mat2"); }}},
      {"aten.baddbmm.default",
       {"self, batch1, batch2, *, beta, alpha", [](const OpCall& c) { return gemm_bias(c, "batch1", "batch2"); }}},
      {"aten.add.Tensor", {"self, other, *, alpha", [](const OpCall& c) { return add_sub(c, false); }}},
      {"aten.sub.Tensor", {"self, other, *, alpha", [](const OpCall& c) { return add_sub(c, true); }}},
      {"aten.mul.Tensor", {"self, other", mul}},
      {"aten.div.Tensor", {"self, other, *, rounding_mode", [](const OpCall& c) { return div(c, true); }}},
      {"aten.add.Scalar", {"self, other, alpha", [](const OpCall& c) { return add_sub(c, false); }}},
      {"aten.sub.Scalar", {"self, other, alpha", [](const OpCall& c) { return add_sub(c, true); }}},
      {"aten.mul.Scalar", {"self, other", mul}},
      {"aten.div.Scalar", {"self, other", [](const OpCall& c) { return div(c, false); }}},
      {"aten.rsub.Scalar", {"self, other, alpha", rsub}},
      {"aten.rsub.Tensor", {"self, other, *, alpha", rsub}},
      {"aten.pow.Tensor_Scalar", {"self, exponent", pow_scalar}},
      {"aten.clamp.default", {"self, min, max", clamp}},
      {"aten.clamp_min.default",
       {"self, min", [](const OpCall& c) { return unary_ops(c, c.tensor("self"), {with_k("clamp_min", c.f64("min"))}); }}},
      {"aten.clamp_max.default",
       {"self, max", [](const OpCall& c) { return unary_ops(c, c.tensor("self"), {with_k("clamp_max", c.f64("max"))}); }}},
      {"aten.gelu.default", {"self, *, approximate", gelu}},
      {"aten.maximum.default", {"self, other", [](const OpCall& c) { return binary(c, "maximum"); }}},
      {"aten.minimum.default", {"self, other", [](const OpCall& c) { return binary(c, "minimum"); }}},
      {"aten.clone.default", {"self, *, memory_format", copy}},
      {"aten._to_copy.default", {"self, *, dtype, layout, device, pin_memory, non_blocking, memory_format", to_copy}},
      // padding_idx, scale_grad_by_freq and sparse only change the gradient.
      {"aten.embedding.default",
       {"weight, indices, padding_idx, scale_grad_by_freq, sparse",
        [](const OpCall& c) -> Resolution {
          return {std::make_shared<Embedding>(), c.target(), {&c.tensor("weight"), &c.tensor("indices")}};
        }}},
      {"aten.cat.default", {"tensors, dim", cat}},
      {"aten.mean.dim", {"self, dim, keepdim, *, dtype", [](const OpCall& c) { return row_reduce(c, "mean"); }}},
      {"aten.sum.dim_IntList", {"self, dim, keepdim, *, dtype", [](const OpCall& c) { return row_reduce(c, "sum"); }}},
      {"aten.amax.default", {"self, dim, keepdim", [](const OpCall& c) { return row_reduce(c, "max"); }}},
      UNARY(relu), UNARY(abs), UNARY(exp), UNARY(exp2), UNARY(log), UNARY(log2), UNARY(neg), UNARY(sqrt),
      UNARY(rsqrt), UNARY(silu), UNARY(sigmoid), UNARY(tanh), UNARY(cos), UNARY(sin), UNARY(reciprocal),
      UNARY(square), UNARY(erf), UNARY(expm1), UNARY(log1p),
      {"aten._fused_rms_norm.default", {"input, normalized_shape, weight, eps", rms_norm}},
      {"aten.rms_norm.default", {"input, normalized_shape, weight, eps", rms_norm}},
      {"aten._scaled_dot_product_flash_attention.default",
       {"query, key, value, dropout_p, is_causal, return_debug_mask, *, scale",
        [](const OpCall& c) { return sdpa(c, nullptr); }}},
      {"aten._scaled_dot_product_flash_attention_for_cpu.default",
       {"query, key, value, dropout_p, is_causal, *, attn_mask, scale",
        [](const OpCall& c) { return sdpa(c, "attn_mask"); }}},
      {"aten._scaled_dot_product_efficient_attention.default",
       {"query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale",
        [](const OpCall& c) { return sdpa(c, "attn_bias"); }}},
      {"aten._scaled_dot_product_cudnn_attention.default",
       {"query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, *, scale",
        [](const OpCall& c) { return sdpa(c, "attn_bias"); }}},
      // enable_gqa needs no flag: Attention handles H % Hk == 0 either way.
      {"aten.scaled_dot_product_attention.default",
       {"query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa",
        [](const OpCall& c) {
          c.flag("enable_gqa", false);  // type check only
          return sdpa(c, "attn_mask");
        }}},
      {"megakittens.elementwise_unary.default",
       {"x, ops",
        [](const OpCall& c) -> Resolution {
          return {std::make_shared<ElementwiseUnary>(split_ops(c, c.str("ops"))), c.target(), {&c.tensor("x")}};
        }}},
      {"megakittens.select.default",
       {"mask, x", [](const OpCall& c) { return binary_on(c, "select", 1.0, c.tensor("mask"), c.tensor("x")); }}},
      {"megakittens.elementwise_binary.default",
       {"a, b, op, alpha",
        [](const OpCall& c) -> Resolution {
          return binary_on(c, c.str("op"), c.f64("alpha", 1.0), c.tensor("a"), c.tensor("b"));
        }}},
      // Functionalized: the FX outputs are (op result slot, new bases...); an op without returns
      // still has one (None) result slot, so base k is FX output 1 + k.
      {"megakittens.elementwise_binary_.default",
       {"a, b, op, alpha",
        [](const OpCall& c) -> Resolution {
          const int base = c.base_index("a");
          Resolution r = binary_on(c, c.str("op"), c.f64("alpha", 1.0), c.tensor("a"), c.tensor("b"), true);
          r.kept = {1 + base};
          return r;
        }}},
      {"megakittens.rms_norm.default",
       {"x, weight, eps",
        [](const OpCall& c) {
          const FxArg* w = c.opt_tensor("weight");
          Resolution r{std::make_shared<RMSNorm>(c.f64("eps"), w != nullptr, f16_of(c, c.tensor("x"))), c.target(),
                       {&c.tensor("x")}};
          if (w) r.inputs.push_back(w);
          return r;
        }}},
      {"megakittens.rope.default", {"x, cos, sin", [](const OpCall& c) { return rope(c, false); }}},
      {"megakittens.rope_interleaved.default", {"x, cos, sin", [](const OpCall& c) { return rope(c, true); }}},
      {"megakittens.gemm.default", {"a, b", [](const OpCall& c) { return gemm(c, "a", "b"); }}},
      {"megakittens.gemm_swiglu.default", {"a, b, b2", gemm_swiglu}},
      {"megakittens.copy.default",
       {"x, dtype",
        [](const OpCall& c) -> Resolution {
          Resolution r{std::make_shared<Copy>(), c.target(), {&c.tensor("x")}};
          c.str("dtype");  // type check: the output meta carries the dtype
          r.bind = [](const std::vector<TensorRange>& v) -> ITypePtr {
            return std::make_shared<Copy>(Copy::src_for(v.at(0)));
          };
          return r;
        }}},
      {"megakittens.embedding.default",
       {"weight, ids",
        [](const OpCall& c) -> Resolution {
          return {std::make_shared<Embedding>(), c.target(), {&c.tensor("weight"), &c.tensor("ids")}};
        }}},
      {"megakittens.cat.default", {"tensors, dim", cat}},
      {"megakittens.softmax.default",
       {"x, log, safe, dtype",
        [](const OpCall& c) -> Resolution {
          return {std::make_shared<Softmax>(c.flag("log"), c.flag("safe")), c.target(), {&c.tensor("x")}};
        }}},
      {"megakittens.layer_norm.default",
       {"x, weight, bias, eps",
        [](const OpCall& c) -> Resolution {
          std::vector<const FxArg*> in{&c.tensor("x")};
          if (!c.is_none("weight")) in.push_back(&c.tensor("weight"));
          if (!c.is_none("bias")) in.push_back(&c.tensor("bias"));
          return {std::make_shared<LayerNorm>(c.f64("eps"), !c.is_none("weight"), !c.is_none("bias")), c.target(), in};
        }}},
      {"megakittens.row_reduce.default",
       {"x, op, keepdim",
        [](const OpCall& c) -> Resolution {
          return {std::make_shared<RowReduce>(c.str("op"), c.flag("keepdim")), c.target(), {&c.tensor("x")}};
        }}},
      {"megakittens.attention.default",
       {"q, k, v, causal, scale",
        [](const OpCall& c) {
          return attention(c, c.flag("causal"), c.f64("scale"), c.tensor("q"), c.tensor("k"), c.tensor("v"));
        }}},
  };
  return r;
}
#undef UNARY

// Where an unsupported op usually comes from, when the model code does not show it.
std::string unsupported_hint(const std::string& target) {
  if (target == "aten._safe_softmax.default" || target == "aten._softmax.default" ||
      target == "aten._log_softmax.default")
    return "; softmax lowers over the last dim only (megakittens/decompose.py): x.transpose(d, -1) first, or "
           "fallback=\"eager\"";
  if (target == "aten.lift_fresh_copy.default")
    return "; a tensor created from Python data inside forward (Hugging Face: the KV cache of use_cache=True, "
           "pass use_cache=False; or an index list, x[..., [i]]), or fallback=\"eager\"";
  if (target == "aten.native_layer_norm.default")
    return "; LayerNorm is lowered only over the last dim (megakittens/decompose.py), or fallback=\"eager\"";
  if (target == "aten.convolution.default")
    return "; convolutions are lowered when 1-D or 2-D, not transposed, bfloat16 or float16 (input and weight alike), with the "
           "channels divisible by the groups (megakittens/convolution.py), or fallback=\"eager\"";
  if (target == "aten.index.Tensor")
    return "; indexing with a tensor or a list (x[..., [i]], a boolean mask), or fallback=\"eager\"";
  if (target == "aten.where.self")
    return "; a select by a boolean mask (torch.where, masked_fill) whose mask is not computed by comparisons, "
           "casts, and / or / not, sums or integer arithmetic of inputs (megakittens/masks.py), or "
           "fallback=\"eager\"";
  if (target.rfind("aten.native_dropout", 0) == 0 || target.rfind("aten.bernoulli", 0) == 0)
    return "; dropout draws random numbers: call model.eval() (nn.Dropout, attention dropout) and pass "
           "dropout_p=0 to F.scaled_dot_product_attention";
  const auto starts = [&target](const char* prefix) { return target.rfind(prefix, 0) == 0; };
  for (const char* cmp : {"aten.eq.", "aten.ne.", "aten.lt.", "aten.le.", "aten.gt.", "aten.ge."})
    if (starts(cmp))
      return "; a comparison whose boolean result is returned or read by an op without an fp32 form (masks "
             "that where / masked_fill / floating-point ops read run as 0 / 1, megakittens/masks.py; Hugging "
             "Face builds one from an explicit position_ids to find packed sequences: leave position_ids=None "
             "for the default positions), or fallback=\"eager\"";
  if (target == "aten.copy.default" || starts("aten.fill.") || target == "aten.slice_scatter.default" ||
      target == "aten.select_scatter.default" || starts("aten.index_put") || starts("aten.index_copy"))
    return "; an assignment into part of a tensor with a step or by index (a[:, ::2] = y, index_copy_, a "
           "KV-cache write; a[:, :8] = y and a[...] = 0 run as a Cat), or fallback=\"eager\"";
  if (starts("aten.sum.") || starts("aten.mean.") || starts("aten.amax.") || starts("aten.amin.") ||
      starts("aten.max.") || starts("aten.min."))
    return "; RowReduce sums, averages or takes the max over the last dim (x.sum(-1), x.mean(-1), x.amax(-1); "
           "over other dims and every element too, through a copy): no min, and no max with indices "
           "(x.max(-1)); or fallback=\"eager\"";
  if (target == "aten.mv.default" || target == "aten.dot.default")
    return "; Gemm takes matrices: x.unsqueeze(0) @ w (rows of 8-element multiples), or fallback=\"eager\"";
  if (starts("aten.pow.Tensor_Tensor") || starts("aten.pow.Scalar"))
    return "; pow takes a tensor base and a Python scalar exponent (x ** 2.0), or fallback=\"eager\"";
  return "; fallback=\"eager\" runs it as a torch op between megakernels";
}

}  // namespace

namespace {
// The last dim of node `i`'s first output, or -1.
int64_t last_dim(const FxGraph& g, int64_t i) {
  if (i < 0 || i >= static_cast<int64_t>(g.nodes.size())) return -1;
  const auto& outs = g.nodes[i].outputs;
  return !outs.empty() && outs[0] && !outs[0]->shape.empty() ? outs[0]->shape.back() : -1;
}

bool is_batched_matmul(const std::string& t) {
  return t.rfind("aten.bmm.", 0) == 0 || t.rfind("aten.matmul.", 0) == 0 || t.rfind("aten.mm.", 0) == 0;
}

// SDPA's decomposition around its softmax: scores = q @ k^T (maybe scaled, cast, viewed) and out = P @ v.
// Returns (query's head dim, value's head dim), -1 where the walk from the softmax node `s` does not find
// the matmul within a few single-input steps.
std::pair<int64_t, int64_t> sdpa_head_dims(const FxGraph& g, int64_t s) {
  int64_t dq = -1, dv = -1;
  for (int64_t i = s, step = 0; step < 8 && i >= 0 && dq < 0; ++step) {  // back to the q @ k^T matmul
    const FxNode& x = g.nodes[i];
    if (x.args.empty() || !x.args[0].is_node()) break;
    i = x.args[0].i;
    if (is_batched_matmul(g.nodes[i].target) && !g.nodes[i].args.empty() && g.nodes[i].args[0].is_node())
      dq = last_dim(g, g.nodes[i].args[0].i);
  }
  std::vector<int64_t> frontier{s};  // forward, through every user, to the P @ v matmul
  for (int step = 0; step < 4 && dv < 0 && !frontier.empty(); ++step) {
    std::vector<int64_t> next;
    for (int64_t j = frontier.front() + 1; j < static_cast<int64_t>(g.nodes.size()) && dv < 0; ++j) {
      const FxNode& y = g.nodes[j];
      for (size_t a = 0; a < y.args.size(); ++a)
        if (y.args[a].is_node() && std::find(frontier.begin(), frontier.end(), y.args[a].i) != frontier.end()) {
          if (a == 0 && is_batched_matmul(y.target) && y.args.size() >= 2 && y.args[1].is_node())
            dv = last_dim(g, y.args[1].i);
          next.push_back(j);
          break;
        }
    }
    frontier = std::move(next);
  }
  return {dq, dv};
}
}  // namespace

// What the graph around an unsupported softmax (megakittens/decompose.py lowers those over the last dim) shows
// of its cause: random numbers drawn (dropout, as SDPA's decomposition with dropout_p > 0), scores that are
// not 4-D (SDPA on 3-D query / key / value), value's head dim unlike query's, or (aten._softmax /
// _log_softmax) a softmax of the model's own that the decomposition left.
std::string softmax_cause(const FxGraph& g, const FxNode& n) {
  for (const FxNode& m : g.nodes)
    for (const char* p : {"aten.native_dropout", "aten.bernoulli", "aten.rand"})
      if (m.target.rfind(p, 0) == 0)
        return "; the graph draws random numbers (node '" + m.name + "', " + m.target +
               "): dropout, as SDPA's decomposition has it when dropout_p > 0; pass dropout_p=0 or call "
               "model.eval()";
  if (n.target == "aten._softmax.default" || n.target == "aten._log_softmax.default")
    return "; a softmax that megakittens/decompose.py does not lower (a rank over 4, an integer input)";
  if (!n.args.empty() && n.args[0].is_node() && n.args[0].i >= 0 && n.args[0].i < static_cast<int64_t>(g.nodes.size())) {
    const FxNode& x = g.nodes[n.args[0].i];
    if (!x.outputs.empty() && x.outputs[0] && x.outputs[0]->shape.size() != 4)
      return "; its scores have shape " + shape_str(x.outputs[0]->shape) +
             ", not 4-D (B, H, Sq, Sk): SDPA's decomposition when query / key / value are not 4-D; unsqueeze "
             "them to (B, H, S, D)";
  }
  const int64_t self = &n - g.nodes.data();
  if (self >= 0 && self < static_cast<int64_t>(g.nodes.size())) {
    const auto [dq, dv] = sdpa_head_dims(g, self);
    if (dq > 0 && dv > 0 && dq != dv)
      return "; value's head dim (" + std::to_string(dv) + ") differs from query's (" + std::to_string(dq) +
             "): Attention needs them equal";
  }
  return "";
}

// The arguments of a convolution that megakittens/decompose.py did not lower: its kernel, stride, padding,
// dilation, groups and whether it is transposed, after the rule of unsupported_hint.
std::string convolution_args(const FxGraph& g, const FxNode& n) {
  if (n.args.size() < 9) return "";
  std::string kernel = "?";
  if (n.args[1].is_node() && n.args[1].i >= 0 && n.args[1].i < static_cast<int64_t>(g.nodes.size())) {
    const FxNode& w = g.nodes[n.args[1].i];
    if (!w.outputs.empty() && w.outputs[0] && w.outputs[0]->shape.size() > 2)
      kernel = shape_str(std::vector<int64_t>(w.outputs[0]->shape.begin() + 2, w.outputs[0]->shape.end()));
  }
  return "; got kernel " + kernel + ", stride " + n.args[3].str() + ", padding " + n.args[4].str() + ", dilation " +
         n.args[5].str() + ", transposed " + n.args[6].str() + ", groups " + n.args[8].str();
}

Resolution resolve_op(const FxGraph& g, const FxNode& n) {
  std::string target = n.target;
  if (n.target == "auto_functionalized_v2") {
    if (n.args.empty() || n.args[0].kind != FxArg::Kind::Str)
      fail("node '", n.name, "' (auto_functionalized_v2): args[0] must name the mutating op, got ",
           n.args.empty() ? std::string("nothing") : n.args[0].str());
    target = n.args[0].s;
  }
  const auto it = registry().find(target);
  if (it == registry().end() || n.op != "call_function") {
    const std::string shown = target == n.target ? target : n.target + "(" + target + ")";
    const bool softmax = target == "aten._safe_softmax.default" || target == "aten._softmax.default" ||
                         target == "aten._log_softmax.default";
    // A cause the graph shows replaces the general list of them.
    const std::string cause = softmax ? softmax_cause(g, n) : "";
    const std::string args = target == "aten.convolution.default" ? convolution_args(g, n) : "";
    fail("node '", n.name, "': unsupported op ", shown, " (no instruction type)",
         cause.empty() ? unsupported_hint(target) + args : cause + "; or fallback=\"eager\"");
  }
  const OpCall call(g, n, target, it->second.schema);
  try {
    return it->second.fn(call);
  } catch (const CompileError& e) {
    // IType constructors do not know the node: prefix it unless the message already names it.
    const std::string msg = e.what();
    if (msg.rfind("node '", 0) == 0) throw;
    call.fail(msg);
  }
}

}  // namespace mk
