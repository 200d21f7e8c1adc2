#include "runtime/codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "itypes/attention.h"
#include "itypes/copy.h"
#include "itypes/elementwise_fused.h"
#include "itypes/gemm.h"
#include "itypes/rms_norm.h"
#include "itypes/rope.h"
#include "itypes/layer_norm.h"
#include "itypes/row_reduce.h"
#include "itypes/softmax.h"
#include "runtime/driver.h"

namespace mk::rt {

namespace {

// One-line switch: false sends every flagged Gemm (ta, tb, bias_row, bias_full; Gemm::params() non-empty)
// back to the CPU interpreter ("no GPU body yet"); plain A @ B stays on the device. The finer switches
// send back only the Gemms with that flag.
constexpr bool kGemmFlagsOnDevice = true;
constexpr bool kGemmTaOnDevice = true, kGemmTbOnDevice = true, kGemmBiasOnDevice = true;

// Exact float literal (hex), so the kernel sees the value the graph had, rounded to fp32 once.
std::string float_literal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
  return buf;
}

// rms_in's eps as GemmT's RMS_EPS: the bits of the fp32 the graph's eps rounds to (0 without rms_in).
int32_t rms_eps_bits(const Gemm::Flags& f) {
  if (!f.rms_in) return 0;
  const float eps = static_cast<float>(*f.rms_in);
  int32_t bits;
  std::memcpy(&bits, &eps, sizeof bits);
  return bits;
}

// Bit 0: some node of `icode` has head dim 64, bit 1: 128 (which Attention bodies to instantiate).
int attention_head_dims(const Program& p, int icode) {
  int mask = 0;
  for (const auto& n : p.nodes)
    if (n.icode == icode && !n.src_slots.empty()) {
      const int64_t D = p.slots[n.src_slots[0]].shape.back();
      mask |= D == 64 ? 1 : D == 128 ? 2 : 0;
    }
  return mask;
}

// Whether every instruction of a bias_full Gemm icode TMA-loads its bias tile: the device's bias_tile()
// (kernels/mk/itypes/gemm.cuh [Note: gemm bias tile]) evaluated here, word 15's element offset into the
// bias slot on a 16-byte column. Then its body is GemmT's BIAS 2, without the L2 path.
bool gemm_bias_tiles(const Program& p, int icode) {
  for (const Instruction& in : p.instructions)
    if (in.icode == icode) {
      const int64_t cols = p.slots[in.src_slot(2)].padded()[3];
      if (cols <= 0 || in.indices[15] % cols % 8 != 0) return false;
    }
  return true;
}

// The device type of one icode; may append a parameter struct to `params`. (No iostreams here: the
// extension can meet a different libstdc++ at run time, seen crashing in numeric ostream inserts.)
std::string device_type(const Program& prog, int icode, std::string& params) {
  const IType& it = *prog.icodes[icode];
  const Profile& profile = prog.profile;
  const std::string P = "P" + std::to_string(icode);
  const std::string name = it.name();
  if (name == "Noop") return "mk::Noop";
  // kernels/mk/itypes/elementwise.cuh: 128x128 tiles, at most 4 / inputs of them per instruction (fixed
  // counts: at most two, the binary limit); rms_norm.cuh: rows in at most kXPages = 3 pages.
  const bool ew_tiles_ok = profile.ew_tile_rows == 128 && profile.ew_tile_cols == 128 &&
                           (profile.ew_max_pages > 0 ? profile.ew_max_pages <= 4 : profile.ew_tiles_per_instruction <= 2);
  if ((dynamic_cast<const ElementwiseUnary*>(&it) || dynamic_cast<const ElementwiseBinary*>(&it) ||
       dynamic_cast<const ElementwiseFused*>(&it)) && !ew_tiles_ok)
    throw GpuError("megakittens: IType " + it.str() + " has no GPU body for profile '" + profile.name +
                   "' (elementwise tiles must be 128x128, at most 4 pages per instruction)");
  if (dynamic_cast<const RMSNorm*>(&it) && profile.rms_norm_pages > 3)
    throw GpuError("megakittens: IType " + it.str() + " has no GPU body for profile '" + profile.name +
                   "' (RMSNorm rows must fit at most 3 pages per instruction)");
  if (const auto* u = dynamic_cast<const ElementwiseUnary*>(&it)) {
    const std::vector<UnaryStep>& steps = u->steps();
    if (!u->has_constants()) {
      std::string t = "mk::ElementwiseUnary<";
      for (size_t i = 0; i < steps.size(); ++i) t += (i ? ", mk::Unary::" : "mk::Unary::") + steps[i].name;
      return t + ">";
    }
    // Scalar forms ("mul_scalar:0.5"): one step struct per op, carrying its constant (exact, fp32).
    std::string body, t = "mk::ElementwiseUnaryK<";
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string S = "s" + std::to_string(i);
      if (!std::isfinite(steps[i].k))
        throw GpuError("megakittens: IType " + it.str() + " has no GPU body yet (non-finite constant)");
      body += "  struct " + S + " { static constexpr mk::Unary op = mk::Unary::" + steps[i].name +
              "; static constexpr float k = " + float_literal(steps[i].k) + "; };\n";
      t += (i ? ", " : "") + P + "::" + S;
    }
    params += "struct " + P + " {  // " + it.str() + "\n" + body + "};\n";
    return t + ">";
  }
  if (const auto* b = dynamic_cast<const ElementwiseBinary*>(&it)) {
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr mk::Binary op = mk::Binary::" + b->op() +
              ";\n  static constexpr float alpha = " + float_literal(b->alpha()) +
              ";\n  static constexpr unsigned bcast_a = " + std::to_string(b->broadcast()[0]) +
              ", bcast_b = " + std::to_string(b->broadcast()[1]) + ";\n};\n";
    return "mk::ElementwiseBinary<" + P + ">";
  }
  if (const auto* f = dynamic_cast<const ElementwiseFused*>(&it)) {
    // One const per step, each rounded to its step dtype ([Note: fused rounding]; the last one by the store).
    const int n = f->inputs();
    auto ref = [n](int r) { return r < n ? "x[" + std::to_string(r) + "]" : "t" + std::to_string(r - n); };
    std::string body, bc;
    for (int k = n; k-- > 0;)
      bc = k + 1 == n ? std::to_string(f->broadcast(k)) + "u"
                      : "k == " + std::to_string(k) + " ? " + std::to_string(f->broadcast(k)) + "u : " + bc;
    const auto& steps = f->steps();
    for (size_t j = 0; j < steps.size(); ++j) {
      const FusedStep& st = steps[j];
      std::string v;
      if (st.binary) {
        v = std::string("mk::binary<mk::Binary::") + binary_op_name(st.op) + ">(" + ref(st.a) + ", " + ref(st.b) +
            ", " + float_literal(st.alpha) + ")";
      } else {
        if (st.unary.has_k && !std::isfinite(st.unary.k))
          throw GpuError("megakittens: IType " + it.str() + " has no GPU body yet (non-finite constant)");
        v = "mk::unary<mk::Unary::" + st.unary.name + ">(" + ref(st.a) + ", " + float_literal(st.unary.k) + ")";
      }
      const bool last = j + 1 == steps.size();
      if (!last && st.dtype != DType::f32) v = std::string("mk::round_to<mk::Round::") + fused_dtype_name(st.dtype) + ">(" + v + ")";
      body += "    const float t" + std::to_string(j) + " = " + v + ";\n";
    }
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr int inputs = " + std::to_string(n) +
              ";\n  static constexpr __device__ unsigned bcast(int k) { return " + bc +
              "; }\n  static __device__ __forceinline__ float apply(const float (&x)[" + std::to_string(n) +
              "]) {\n" + body + "    return t" + std::to_string(steps.size() - 1) + ";\n  }\n};\n";
    return "mk::ElementwiseFused<" + P + ">";
  }
  // [Note: SIMT bodies] (kernels/mk/simt.cuh): plain loads and stores, any dtype.
  if (const auto* cp = dynamic_cast<const Copy*>(&it)) {
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr int rows = " + std::to_string(cp->src().rows) +
              ", cols = " + std::to_string(cp->src().cols) + ";\n};\n";
    return "mk::Copy<" + P + ">";
  }
  if (name == "Embedding") return "mk::Embedding";
  if (name == "Cat") return "mk::Cat";
  if (const auto* r = dynamic_cast<const Rope*>(&it)) {
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr unsigned bcast = " +
              std::to_string(r->cos_bcast()) + ";\n  static constexpr bool x_bshd = " +
              (r->x_bshd() ? "true" : "false") + ";\n  static constexpr bool interleaved = " +
              (r->interleaved() ? "true" : "false") + ";\n  static constexpr bool half_tables = " +
              (r->half_tables() ? "true" : "false") + ";\n};\n";
    return "mk::Rope<" + P + ">";
  }
  if (const auto* rr = dynamic_cast<const RowReduce*>(&it)) {
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr bool mean = " +
              (rr->op() == "mean" ? "true" : "false") + ", max = " + (rr->op() == "max" ? "true" : "false") + ", keepdim = " + (rr->keepdim() ? "true" : "false") + ";\n};\n";
    return "mk::RowReduce<" + P + ">";
  }
  if (const auto* sm = dynamic_cast<const Softmax*>(&it)) {
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr bool log = " + (sm->log() ? "true" : "false") +
              ", safe = " + (sm->safe() ? "true" : "false") + ";\n};\n";
    return "mk::Softmax<" + P + ">";
  }
  if (const auto* ln = dynamic_cast<const LayerNorm*>(&it)) {
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr float eps = " + float_literal(ln->eps()) +
              ";\n  static constexpr bool has_weight = " + (ln->has_weight() ? "true" : "false") +
              ", has_bias = " + (ln->has_bias() ? "true" : "false") + ";\n};\n";
    return "mk::LayerNorm<" + P + ">";
  }
  if (const auto* g = dynamic_cast<const Gemm*>(&it)) {
    // The device body is written for 128x256x64 CTA tiles, or 128x128 ones (profile h200); a swiglu
    // tile's B panel is 128 columns of B and 128 of B2 (gemm_n 256). Flags become the template
    // parameters of mk::GemmT<TA, TB, BIAS, SWIGLU, ACT, ROPE, RMS, F16> (kernels/mk/itypes/gemm.cuh).
    const bool narrow_ok = profile.gemm_n_narrow == 0 || profile.gemm_n_narrow == 128;
    const Gemm::Flags& f = g->flags();
    if (profile.gemm_cta_m == 128 && (profile.gemm_n == 256 || (profile.gemm_n == 128 && !f.swiglu)) && narrow_ok &&
        profile.gemm_k == 64) {
      if (f == Gemm::Flags{}) return "mk::Gemm";
      if (kGemmFlagsOnDevice && (kGemmTaOnDevice || !f.transpose_a) && (kGemmTbOnDevice || !f.transpose_b) &&
          (kGemmBiasOnDevice || f.bias == Gemm::Bias::none)) {
        const int bias = f.bias == Gemm::Bias::row ? 1 : f.bias != Gemm::Bias::full ? 0 : gemm_bias_tiles(prog, icode) ? 2 : 3;
        // TA, TB and BIAS always; the later parameters up to the last one that is not its default.
        std::vector<std::string> a = {f.transpose_a ? "true" : "false", f.transpose_b ? "true" : "false",
                                      std::to_string(bias), f.swiglu ? "true" : "false",
                                      "mk::Unary::" + (f.act.empty() ? std::string("identity") : UnaryStep::parse(f.act).name),
                                      std::to_string(f.rope),
                                      f.rms_in ? "true" : "false",
                                      f.f16 ? "true" : "false", std::to_string(rms_eps_bits(f))};
        const size_t n = f.rms_in ? 9 : f.f16 ? 8 : f.rope != 0 ? 6 : !f.act.empty() ? 5 : f.swiglu ? 4 : 3;
        std::string t = "mk::GemmT<";
        for (size_t k = 0; k < n; ++k) t += (k ? ", " : "") + a[k];
        return t + ">";
      }
    }
  }
  if (const auto* r = dynamic_cast<const RMSNorm*>(&it)) {
    params += "struct " + P + " {  // " + it.str() + "\n  static constexpr float eps = " + float_literal(r->eps()) +
              ";\n  static constexpr bool has_weight = " + (r->has_weight() ? "true" : "false") +
              ";\n  static constexpr bool f16 = " + (r->f16() ? "true" : "false") + ";\n};\n";
    return "mk::RMSNorm<" + P + ">";
  }
  if (const auto* a = dynamic_cast<const Attention*>(&it)) {
    // The device body is written for 128 query rows per CTA (profile h200) and kv blocks dividing
    // attn_kv_block ([Note: attention kv blocks]).
    if (profile.attn_cta_q == 128 && !profile.attn_pair_tiles && profile.attn_kv_block % 128 == 0) {
      params += "struct " + P + " {  // " + it.str() + "\n  static constexpr bool causal = " +
                (a->causal() ? "true" : "false") + ";\n  static constexpr float scale_log2 = " +
                float_literal(a->scale() * 1.4426950408889634) + ";\n  static constexpr int head_dims = " +
                std::to_string(attention_head_dims(prog, icode)) + ";\n  static constexpr unsigned bshd = " +
                std::to_string(a->bshd()) + ";\n  static constexpr bool masked = " + (a->masked() ? "true" : "false") +
                ";\n  static constexpr float scale = " + float_literal(a->scale()) +
                ";\n  static constexpr bool f16 = " + (a->f16() ? "true" : "false") + ";\n};\n";
      return "mk::Attention<" + P + ">";
    }
  }
  throw GpuError("megakittens: IType " + it.str() + " has no GPU body yet (kernels/mk/itypes/)");
}

}  // namespace

XmapPlan xmap_plan(const Program& p) {
  XmapPlan x;
  x.index.assign(p.slots.size(), -1);
  x.strided.assign(p.slots.size(), false);
  x.wide.assign(p.slots.size(), false);
  std::vector<bool> used(p.slots.size(), false);
  for (const auto& n : p.nodes) {
    const std::string name = n.itype->name();
    if (name == "Gemm") {
      // A, B and swiglu's B2 (TMA loads, wide maps too) and D (TMA store); a bias_full tile and the rope
      // tables are TMA-loaded in D's boxes (kernels/mk/itypes/gemm.cuh [Note: gemm bias tile], [Note: gemm
      // rope tables]), a bias row read with plain loads.
      const Gemm::Flags& f = static_cast<const Gemm&>(*n.itype).flags();
      const size_t loaded = f.swiglu ? 3 : 2;
      for (size_t k = 0; k < n.src_slots.size() && k < loaded; ++k) used[n.src_slots[k]] = x.wide[n.src_slots[k]] = true;
      if (f.bias == Gemm::Bias::full && n.src_slots.size() > 2) used[n.src_slots[2]] = true;
      const auto& gemm = static_cast<const Gemm&>(*n.itype);
      if (f.rope != 0)
        for (int k = gemm.rope_input(); k < gemm.rope_input() + 2 && k < static_cast<int>(n.src_slots.size()); ++k)
          used[n.src_slots[k]] = true;
      if (!n.dst_slots.empty()) used[n.dst_slots[0]] = true;  // D
    } else if (name == "Attention") {
      const unsigned bshd = static_cast<const Attention&>(*n.itype).bshd();
      for (size_t k = 0; k < n.src_slots.size() && k < 3; ++k) {
        used[n.src_slots[k]] = true;
        if (bshd & (1u << k)) x.strided[n.src_slots[k]] = true;
      }
      for (int s : n.dst_slots) used[s] = true;
      if ((bshd & Attention::kBshdO) && !n.dst_slots.empty()) x.strided[n.dst_slots[0]] = true;
    }
  }
  for (size_t s = 0; s < used.size(); ++s)
    if (used[s]) {
      x.index[s] = x.count;
      x.count += (x.strided[s] ? 2 : 1) + (x.wide[s] ? 4 : 0);
    }
  return x;
}

ParamLayout param_layout(const Program& p) {
  ParamLayout l;
  l.nslots = std::max<size_t>(1, p.slots.size());
  l.nxmaps = static_cast<size_t>(std::max(1, xmap_plan(p).count));
  l.maps_in_global = l.param_bytes() > ParamLayout::kMaxParamBytes;
  // Experiment switch (A/B runs on a small program): MEGAKITTENS_MAPS_IN_GLOBAL=1 keeps the maps in the
  // device buffer even when they fit the parameter.
  if (const char* env = std::getenv("MEGAKITTENS_MAPS_IN_GLOBAL"); env && std::string(env) == "1")
    l.maps_in_global = true;
  return l;
}

std::string generate_source(const Program& p) {
  // Gemm, RMSNorm and Attention bodies take their 16-bit float type (bf16 or fp16) as a template parameter
  // (kernels/mk/half.cuh); the others read each slot's dtype at run time ([Note: SIMT bodies]).
  std::string params, cases;
  for (size_t i = 0; i < p.icodes.size(); ++i) {
    const std::string t = device_type(p, static_cast<int>(i), params);
    cases += "      case " + std::to_string(i) + ": f.template operator()<" + t + ">(); break;  // " +
             p.icodes[i]->str() + "\n";
  }
  std::string s;
  s += "// Generated by megakittens (src/runtime/codegen.cpp) for program '" + p.name + "'.\n";
  // Experiment switches for the device headers (MEGAKITTENS_DEFINES="MK_X,MK_Y=2"): part of the source,
  // hence of the cache key. Nothing in a normal run sets it.
  if (const char* env = std::getenv("MEGAKITTENS_DEFINES")) {
    std::string list = env;
    for (size_t a = 0; a < list.size();) {
      size_t b = list.find(',', a);
      if (b == std::string::npos) b = list.size();
      std::string d = list.substr(a, b - a);
      if (!d.empty()) {
        const size_t eq = d.find('=');
        s += "#define " + (eq == std::string::npos ? d : d.substr(0, eq) + " " + d.substr(eq + 1)) + "\n";
      }
      a = b + 1;
    }
  }
  s += "#define MK_CLUSTER_SIZE " + std::to_string(p.cluster_size) + "\n";
  const ParamLayout layout = param_layout(p);
  s += "#define MK_NUM_SLOTS " + std::to_string(layout.nslots) + "\n";
  s += "#define MK_NUM_XMAPS " + std::to_string(layout.nxmaps) + "\n";
  s += "#define MK_MAPS_IN_GLOBAL " + std::to_string(layout.maps_in_global ? 1 : 0) + "\n";
  // kernels/mk/interpreter.cuh [Note: role calls]: the loader's and storer's loops are calls where a
  // Gemm or Attention body is present, else left to ptxas (it inlines them).
  bool tensor_core = false;
  for (const auto& it : p.icodes) tensor_core = tensor_core || it->name() == "Gemm" || it->name() == "Attention";
  s += "#define MK_ROLE_CALLS " + std::to_string(tensor_core ? 1 : 0) + "\n";
  s += "#include \"mk/interpreter.cuh\"\n#include \"mk/itypes/noop.cuh\"\n";
  s += "#include \"mk/itypes/elementwise_any.cuh\"\n#include \"mk/itypes/rms_norm.cuh\"\n";
  s += "#include \"mk/itypes/copy.cuh\"\n#include \"mk/itypes/cat.cuh\"\n#include \"mk/itypes/embedding.cuh\"\n";
  s += "#include \"mk/itypes/rope.cuh\"\n#include \"mk/itypes/row_reduce.cuh\"\n#include \"mk/itypes/layer_norm.cuh\"\n";
  s += "#include \"mk/itypes/softmax.cuh\"\n";
  s += "#include \"mk/itypes/gemm.cuh\"\n#include \"mk/itypes/attention.cuh\"\n\n";
  s += "namespace mk_gen {\n" + params + "struct Visit {\n";
  s += "  static constexpr int kNumIcodes = " + std::to_string(p.icodes.size()) + ";\n";
  s += "  template <class F>\n  static __device__ __forceinline__ void visit(int icode, F&& f) {\n";
  s += "    switch (icode) {\n" + cases + "      default: f.template operator()<mk::Noop>(); break;\n";
  s += "    }\n  }\n};\n}  // namespace mk_gen\n\n";
  s += "extern \"C\" __global__ void __launch_bounds__(384, 1)\n";
  s += "megakittens_kernel(const __grid_constant__ mk::Globals g) {\n  mk::run_vm<mk_gen::Visit>(g);\n}\n";
  return s;
}

}  // namespace mk::rt
