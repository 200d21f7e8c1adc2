// ITypes: tiling, access regions, indices, validation and CPU reference semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "ir/error.h"
#include "itypes/attention.h"
#include "itypes/elementwise.h"
#include "itypes/gemm.h"
#include "itypes/rms_norm.h"
#include "itypes/rope.h"
#include "reference/exec.h"
#include "schedule/instruction.h"
#include "test_util.h"

namespace mk {
namespace {

using Shape = std::vector<int64_t>;

float round_bf16(float x) {
  if (std::isnan(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

TensorMeta bf16(Shape s) { return {DType::bf16, std::move(s), "cpu"}; }
Operand whole(Shape s) { return {bf16(s), TensorRange::full(s)}; }

NodeInfo node(std::vector<Operand> in, std::vector<TensorMeta> out, Profile p, int cluster = 1) {
  NodeInfo n;
  n.name = "n0";
  n.target = "megakittens.test.default";
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.profile = std::move(p);
  n.cluster_size = cluster;
  return n;
}

// Every element of the output written exactly once; pair-tile ranks of one cluster tile write the same
// boxes, so each cluster's boxes are deduplicated first.
void expect_exact_cover(const IType& t, const NodeInfo& n, int group = 1) {
  const Coord4 s = n.outputs[0].padded();
  std::vector<int> hits(s[0] * s[1] * s[2] * s[3], 0);
  const int64_t count = t.num_instructions(n);
  ASSERT_EQ(count % group, 0);
  for (int64_t g = 0; g < count; g += group) {
    std::set<Box> boxes;
    for (int64_t i = g; i < g + group; ++i) {
      const InstrDesc d = t.instruction(n, i);
      ASSERT_EQ(d.writes.size(), 1u);
      for (const Box& b : d.writes[0]) {
        EXPECT_FALSE(b.empty()) << "instruction " << i;
        boxes.insert(b);
      }
    }
    for (const Box& b : boxes) {
      ASSERT_TRUE(Box::of_shape(s).contains(b)) << b.str();
      for (int64_t i0 = b.lo[0]; i0 < b.hi[0]; ++i0)
        for (int64_t i1 = b.lo[1]; i1 < b.hi[1]; ++i1)
          for (int64_t i2 = b.lo[2]; i2 < b.hi[2]; ++i2)
            for (int64_t i3 = b.lo[3]; i3 < b.hi[3]; ++i3) ++hits[((i0 * s[1] + i1) * s[2] + i2) * s[3] + i3];
    }
  }
  EXPECT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }))
      << "write boxes must cover the output exactly once";
}

using test::error_of;

// ---- A tiny ExecContext over fp32 buffers holding bf16 values; checks accesses against the boxes ----

struct Slot {
  TensorMeta meta;
  std::vector<float> data;
};

class TestCtx : public ExecContext {
 public:
  std::vector<Slot> slots;
  std::map<int, std::vector<Box>> may_read, may_write;  // backing boxes of the current instruction

  std::vector<float> load(int slot, const Box& box) override {
    check(slot, box, may_read, "read");
    std::vector<float> out;
    walk(slot, box, [&](int64_t k) { out.push_back(slots[slot].data[k]); });
    return out;
  }
  void store(int slot, const Box& box, const std::vector<float>& data) override {
    check(slot, box, may_write, "write");
    EXPECT_EQ(static_cast<int64_t>(data.size()), box.volume());
    size_t j = 0;
    walk(slot, box, [&](int64_t k) { slots[slot].data[k] = round_bf16(data[j++]); });
  }
  const TensorMeta& meta(int slot) const override { return slots[slot].meta; }

 private:
  void check(int slot, const Box& box, std::map<int, std::vector<Box>>& allowed, const char* what) {
    EXPECT_TRUE(Box::of_shape(slots[slot].meta.padded()).contains(box)) << what << " " << box.str();
    const auto& boxes = allowed[slot];
    EXPECT_TRUE(std::any_of(boxes.begin(), boxes.end(), [&](const Box& b) { return b.contains(box); }))
        << "instruction " << instruction_index << ": " << what << " of slot " << slot << " box " << box.str()
        << " is outside its access regions";
  }
  template <class F>
  void walk(int slot, const Box& b, F f) {
    const Coord4 s = slots[slot].meta.padded();
    for (int64_t i0 = b.lo[0]; i0 < b.hi[0]; ++i0)
      for (int64_t i1 = b.lo[1]; i1 < b.hi[1]; ++i1)
        for (int64_t i2 = b.lo[2]; i2 < b.hi[2]; ++i2)
          for (int64_t i3 = b.lo[3]; i3 < b.hi[3]; ++i3) f(((i0 * s[1] + i1) * s[2] + i2) * s[3] + i3);
  }
};

// Runs every instruction of the node; input k lives in slot src[k], output 0 in slot dst.
void run_node(const IType& t, const NodeInfo& n, TestCtx& ctx, const std::vector<int>& src, int dst) {
  t.validate(n);
  for (int64_t i = 0; i < t.num_instructions(n); ++i) {
    const InstrDesc d = t.instruction(n, i);
    ASSERT_LE(d.indices.size(), size_t(kMaxIndices));
    ASSERT_EQ(d.reads.size(), n.inputs.size());
    Instruction in;
    for (size_t k = 0; k < src.size(); ++k) in.set_src_slot(static_cast<int>(k), src[k]);
    in.set_dst_slot(0, dst);
    std::copy(d.indices.begin(), d.indices.end(), in.indices);
    ctx.may_read.clear();
    ctx.may_write.clear();
    for (size_t k = 0; k < src.size(); ++k)
      for (const Box& b : d.reads[k]) ctx.may_read[src[k]].push_back(n.inputs[k].range.to_backing(b));
    for (const Box& b : d.writes[0])  // outputs are whole tensors: output coords are slot coords
      ctx.may_write[dst].push_back(b);
    ctx.instruction_index = i;
    ctx.cluster_rank = static_cast<int>(i % n.cluster_size);
    t.execute(in, ctx);
  }
}

std::mt19937 rng(1234);

// Random non-zero bf16 values in +-[lo, hi].
std::vector<float> random_values(int64_t n, float lo = 0.25f, float hi = 2.f) {
  std::uniform_real_distribution<float> mag(lo, hi);
  std::bernoulli_distribution neg(0.5);
  std::vector<float> v(n);
  for (auto& x : v) x = round_bf16(neg(rng) ? -mag(rng) : mag(rng));
  return v;
}

int add_slot(TestCtx& ctx, Shape s, bool random = true) {
  TensorMeta m = bf16(std::move(s));
  const int64_t n = m.numel();
  ctx.slots.push_back({m, random ? random_values(n) : std::vector<float>(n, std::numeric_limits<float>::quiet_NaN())});
  return static_cast<int>(ctx.slots.size() - 1);
}

// The values of a view, row-major over its padded shape.
std::vector<double> view_values(const TestCtx& ctx, int slot, const TensorRange& r) {
  const Coord4 v = r.view_padded(), s = ctx.slots[slot].meta.padded();
  std::vector<double> out;
  for (int64_t i0 = 0; i0 < v[0]; ++i0)
    for (int64_t i1 = 0; i1 < v[1]; ++i1)
      for (int64_t i2 = 0; i2 < v[2]; ++i2)
        for (int64_t i3 = 0; i3 < v[3]; ++i3) {
          const Coord4 p = r.to_backing(Coord4{i0, i1, i2, i3});
          out.push_back(ctx.slots[slot].data[((p[0] * s[1] + p[1]) * s[2] + p[2]) * s[3] + p[3]]);
        }
  return out;
}

// Relative error <= tol per element (against the larger of |want| and 1% of the largest |want|); NaN fails.
testing::AssertionResult close(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-2) {
  if (got.size() != want.size()) return testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  double big = 0;
  for (double w : want) big = std::max(big, std::fabs(w));
  for (size_t k = 0; k < got.size(); ++k) {
    const double err = std::fabs(got[k] - want[k]);
    if (!(err <= tol * std::max(std::fabs(want[k]), 1e-2 * big)))  // NaN compares false
      return testing::AssertionFailure() << "element " << k << ": got " << got[k] << ", want " << want[k];
  }
  return testing::AssertionSuccess();
}

// ---- names and parameters ----

TEST(ITypeNames, OpNames) {
  EXPECT_EQ(ElementwiseUnary({"relu"}).op_name(), "elementwise_unary");
  EXPECT_EQ(ElementwiseBinary("add").op_name(), "elementwise_binary");
  EXPECT_EQ(RMSNorm(1e-5).op_name(), "rms_norm");
  EXPECT_EQ(Gemm().op_name(), "gemm");
  EXPECT_EQ(Attention(false, 0.125).op_name(), "attention");
}

TEST(ITypeNames, Params) {
  EXPECT_EQ(ElementwiseUnary({"relu", "abs"}).params(), "ops=relu,abs");
  EXPECT_EQ(ElementwiseUnary({"relu", "abs"}).str(), "ElementwiseUnary(ops=relu,abs)");
  EXPECT_EQ(ElementwiseBinary("add").params(), "op=add,alpha=1");
  EXPECT_EQ(ElementwiseBinary("sub", 0.5, true).params(), "op=sub,alpha=0.5,inplace");
  EXPECT_EQ(RMSNorm(1e-5).params(), "eps=1e-05");
  EXPECT_EQ(RMSNorm(1e-6, false).params(), "eps=1e-06,no_weight");
  EXPECT_EQ(Attention(true, 1 / std::sqrt(128.0)).params(), "causal=1,scale=0.0883883476");
  EXPECT_EQ(Gemm().params(), "");
  EXPECT_TRUE(ElementwiseBinary("add").same_as(ElementwiseBinary("add", 1.0)));
  EXPECT_FALSE(ElementwiseBinary("add").same_as(ElementwiseBinary("add", 2.0)));
}

TEST(ITypeNames, UnknownOpsListSupported) {
  const std::string u = error_of([] { ElementwiseUnary({"relu", "erfc"}); });
  EXPECT_NE(u.find("'erfc'"), std::string::npos) << u;
  EXPECT_NE(u.find("supported ops: identity, relu, abs, exp, exp2, log, log2, neg, sqrt, rsqrt, silu, gelu, "
                   "gelu_tanh, sigmoid, tanh, cos, sin, reciprocal, square, erf, expm1, log1p, add_scalar:k, "
                   "mul_scalar:k, "
                   "div_scalar:k, pow_scalar:k, clamp_min:k, clamp_max:k"),
            std::string::npos)
      << u;
  const std::string b = error_of([] { ElementwiseBinary("pow"); });
  EXPECT_NE(b.find("'pow'"), std::string::npos) << b;
  EXPECT_NE(b.find("maximum"), std::string::npos) << b;
  EXPECT_THROW(Attention(true, 0.0), CompileError);
}

TEST(ITypeNames, InplaceInput) {
  EXPECT_EQ(ElementwiseBinary("add", 1, true).inplace_input(0), 0);
  EXPECT_FALSE(ElementwiseBinary("add").inplace_input(0).has_value());
  EXPECT_FALSE(Gemm().inplace_input(0).has_value());
}

// ---- elementwise ----

TEST(ElementwiseIType, TilingCounts) {
  // b200 (seed): two 128x128 tiles per instruction. h200: 1 to 4 (unary) or 2 (binary) tiles, as many
  // as still give each of its SMs an instruction.
  const ElementwiseUnary relu({"relu"});
  for (const auto& [p, want] : {std::pair{Profile::b200(), 32}, std::pair{Profile::h200(132), 64}}) {
    const NodeInfo n = node({whole({1024, 1024})}, {bf16({1024, 1024})}, p);
    relu.validate(n);
    EXPECT_EQ(relu.num_instructions(n), want);
    EXPECT_EQ(ew_num_tiles(Coord4{1, 1, 1024, 1024}, p, 1), want);
    expect_exact_cover(relu, n);
  }
  const Profile h = Profile::h200(132);
  EXPECT_EQ(ew_tiles(Coord4{1, 1, 8192, 8192}, h, 1), 4);
  EXPECT_EQ(ew_tiles(Coord4{1, 1, 8192, 8192}, h, 2), 2);
  EXPECT_EQ(ew_tiles(Coord4{1, 1, 128, 128 * 133}, h, 1), 2);
  {
    const NodeInfo n = node({whole({8192, 8192})}, {bf16({8192, 8192})}, h);
    EXPECT_EQ(relu.num_instructions(n), 64 * 16);
    expect_exact_cover(relu, n);
  }
  // Ragged: (3, 2, 200, 300) -> 3*2 * 2 row tiles * 2 col tiles (b200: two tiles per instruction).
  const Profile p = Profile::b200();
  const NodeInfo n = node({whole({3, 2, 200, 300})}, {bf16({3, 2, 200, 300})}, p);
  const ElementwiseUnary u({"abs"});
  EXPECT_EQ(u.num_instructions(n), 24);
  expect_exact_cover(u, n);
  const EwTile last = ew_tile(Coord4{3, 2, 200, 300}, p, 1, 23);
  EXPECT_EQ(last.origin, (Coord4{2, 1, 128, 256}));
  EXPECT_EQ(last.rows, 72);
  EXPECT_EQ(last.cols, 44);
  const EwTile t1 = ew_tile(Coord4{3, 2, 200, 300}, p, 1, 1);  // column tile fastest
  EXPECT_EQ(t1.origin, (Coord4{0, 0, 0, 256}));
  // 1-D tensors are one row.
  const NodeInfo v = node({whole({1000})}, {bf16({1000})}, p);
  EXPECT_EQ(u.num_instructions(v), 4);
  expect_exact_cover(u, v);
}

// h200 with the fixed two tiles per instruction (no adaptive tile count): the index layouts below.
Profile h200_fixed_tiles() {
  Profile p = Profile::h200();
  p.ew_max_pages = 0;
  return p;
}

TEST(ElementwiseIType, IndicesCarryBackingOrigins) {
  // a = W[1] of W (3, 256, 512), b whole: indices address W at d = 1.
  const Operand w1{bf16({3, 256, 512}), TensorRange::full({3, 256, 512}).select(0, 1)};
  const NodeInfo n = node({w1, whole({256, 512})}, {bf16({256, 512})}, h200_fixed_tiles());
  const ElementwiseBinary add("add");
  add.validate(n);
  ASSERT_EQ(add.num_instructions(n), 4);
  const InstrDesc d = add.instruction(n, 3);
  EXPECT_EQ(d.indices, (std::vector<int32_t>{0, 1, 128, 256, 0, 0, 128, 256, 0, 0, 128, 256, 128, 256}));
  const Box box{{0, 0, 128, 256}, {1, 1, 256, 512}};
  ASSERT_EQ(d.reads.size(), 2u);
  EXPECT_EQ(d.reads[0], std::vector<Box>{box});  // view coords
  EXPECT_EQ(d.reads[1], std::vector<Box>{box});
  EXPECT_EQ(d.writes, std::vector<std::vector<Box>>{{box}});
  const InstrDesc u = ElementwiseUnary({"neg"}).instruction(node({w1}, {bf16({256, 512})}, h200_fixed_tiles()), 0);
  EXPECT_EQ(u.indices, (std::vector<int32_t>{0, 1, 0, 0, 0, 0, 0, 0, 128, 256}));
}

TEST(ElementwiseIType, ValidateNamesNodeAndValue) {
  const Profile p = Profile::h200();
  const std::string shape = error_of([&] {
    ElementwiseBinary("add").validate(node({whole({4, 8}), whole({1, 8})}, {bf16({4, 8})}, p));
  });
  EXPECT_NE(shape.find("'n0'"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[1, 8]"), std::string::npos) << shape;
  EXPECT_NE(shape.find("instruction type says 0000"), std::string::npos) << shape;  // plain form, broadcast input
  const std::string bad = error_of([&] {
    ElementwiseBinary("add").validate(node({whole({4, 8}), whole({3, 8})}, {bf16({4, 8})}, p));
  });
  EXPECT_NE(bad.find("input b shape [3, 8] does not broadcast to the output shape [4, 8]"), std::string::npos) << bad;
  Operand i64 = whole({4, 8});
  i64.backing.dtype = DType::i64;
  const std::string dt = error_of([&] { ElementwiseUnary({"relu"}).validate(node({i64}, {bf16({4, 8})}, p)); });
  EXPECT_NE(dt.find("must be a floating-point tensor (bfloat16, float16, float32), got int64"), std::string::npos) << dt;
  EXPECT_NE(dt.find("megakittens.test.default"), std::string::npos) << dt;
  const std::string rk = error_of(
      [&] { ElementwiseUnary({"relu"}).validate(node({whole({2, 2, 2, 2, 2})}, {bf16({2, 2, 2, 2, 2})}, p)); });
  EXPECT_NE(rk.find("rank 5"), std::string::npos) << rk;
  // A column of a matrix runs along the backing's row dim: the tile indices cannot address it.
  const Operand col{bf16({64, 32}), TensorRange::full({64, 32}).select(1, 3)};
  EXPECT_THROW(ElementwiseUnary({"relu"}).validate(node({col}, {bf16({64})}, p)), CompileError);
  // A row of a matrix is fine.
  const Operand row{bf16({64, 32}), TensorRange::full({64, 32}).select(0, 3)};
  EXPECT_NO_THROW(ElementwiseUnary({"relu"}).validate(node({row}, {bf16({32})}, p)));
}

TEST(ElementwiseIType, ExecuteUnaryMatchesNaive) {
  const std::vector<std::pair<std::vector<std::string>, double (*)(double)>> cases = {
      {{"identity"}, [](double x) { return x; }},
      {{"relu"}, [](double x) { return std::max(x, 0.0); }},
      {{"neg", "relu"}, [](double x) { return std::max(-x, 0.0); }},
      {{"abs", "log"}, [](double x) { return std::log(std::fabs(x)); }},
      {{"abs", "log2"}, [](double x) { return std::log2(std::fabs(x)); }},
      {{"exp"}, [](double x) { return std::exp(x); }},
      {{"exp2", "neg"}, [](double x) { return -std::exp2(x); }},
      {{"abs", "sqrt"}, [](double x) { return std::sqrt(std::fabs(x)); }},
      {{"abs", "rsqrt"}, [](double x) { return 1 / std::sqrt(std::fabs(x)); }},
  };
  for (const auto& [ops, f] : cases) {
    TestCtx ctx;
    const Shape s{2, 130, 300};
    const int x = add_slot(ctx, s), y = add_slot(ctx, s, false);
    const ElementwiseUnary t(ops);
    run_node(t, node({whole(s)}, {bf16(s)}, Profile::h200()), ctx, {x}, y);
    std::vector<double> want;
    for (float v : ctx.slots[x].data) want.push_back(f(v));
    EXPECT_TRUE(close(ctx.slots[y].data, want)) << t.str();
  }
}

// Every new op (and the scalar forms) against std:: math in double, on a ragged 3-D shape.
TEST(ElementwiseIType, ExecuteNewUnaryOpsMatchStd) {
  const double kS = std::sqrt(2.0 / 3.14159265358979323846);
  const std::vector<std::pair<std::vector<std::string>, double (*)(double)>> cases = {
      {{"silu"}, [](double x) { return x / (1 + std::exp(-x)); }},
      {{"gelu"}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {{"gelu_tanh"}, nullptr},  // needs kS: below
      {{"sigmoid"}, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {{"tanh"}, [](double x) { return std::tanh(x); }},
      {{"cos"}, [](double x) { return std::cos(x); }},
      {{"sin"}, [](double x) { return std::sin(x); }},
      {{"mul_scalar:4", "sin"}, [](double x) { return std::sin(4 * x); }},
      {{"reciprocal"}, [](double x) { return 1 / x; }},
      {{"square"}, [](double x) { return x * x; }},
      {{"add_scalar:2.5"}, [](double x) { return x + 2.5; }},
      {{"add_scalar:-0.75"}, [](double x) { return x - 0.75; }},
      {{"mul_scalar:0.125", "add_scalar:1"}, [](double x) { return x * 0.125 + 1; }},
      {{"div_scalar:3"}, [](double x) { return x / 3; }},
      {{"neg", "add_scalar:1"}, [](double x) { return 1 - x; }},
      {{"pow_scalar:3"}, [](double x) { return x * x * x; }},
      {{"abs", "pow_scalar:1.5"}, [](double x) { return std::pow(std::fabs(x), 1.5); }},
      {{"abs", "pow_scalar:-2"}, [](double x) { return std::pow(std::fabs(x), -2.0); }},
      {{"clamp_min:0.5"}, [](double x) { return std::max(x, 0.5); }},
      {{"clamp_max:-0.5"}, [](double x) { return std::min(x, -0.5); }},
      {{"clamp_min:-1", "clamp_max:1"}, [](double x) { return std::clamp(x, -1.0, 1.0); }},
      {{"silu", "mul_scalar:0.5", "gelu"}, [](double x) {
         const double s = 0.5 * x / (1 + std::exp(-x));
         return 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
       }},
  };
  for (const auto& [ops, f] : cases) {
    TestCtx ctx;
    const Shape s{2, 130, 300};
    const int x = add_slot(ctx, s), y = add_slot(ctx, s, false);
    // Wider inputs than random_values' default, so that tanh, sigmoid and gelu see their tails.
    for (float& v : ctx.slots[x].data) v = round_bf16(v * 3.f);
    const ElementwiseUnary t(ops);
    run_node(t, node({whole(s)}, {bf16(s)}, Profile::h200()), ctx, {x}, y);
    std::vector<double> want;
    for (float v : ctx.slots[x].data)
      want.push_back(f ? f(v) : 0.5 * v * (1 + std::tanh(kS * (v + 0.044715 * double(v) * v * v))));
    EXPECT_TRUE(close(ctx.slots[y].data, want)) << t.str();
  }
}

TEST(ElementwiseIType, ScalarStepsParseAndParams) {
  EXPECT_EQ(ElementwiseUnary({"mul_scalar:0.125", "add_scalar:2.50"}).params(), "ops=mul_scalar:0.125,add_scalar:2.5");
  EXPECT_EQ(ElementwiseUnary({"mul_scalar:0.1"}).params(), "ops=mul_scalar:0.1");
  EXPECT_EQ(ElementwiseUnary({"clamp_min:0", "pow_scalar:3e0"}).params(), "ops=clamp_min:0,pow_scalar:3");
  EXPECT_EQ(ElementwiseUnary({"add_scalar:1e-6"}).params(), "ops=add_scalar:1e-06");
  EXPECT_EQ(UnaryStep::with_constant("div_scalar", 1.0 / 3), "div_scalar:0.333333333");
  EXPECT_TRUE(ElementwiseUnary({"add_scalar:2.5"}).same_as(ElementwiseUnary({"add_scalar:2.50"})));
  EXPECT_FALSE(ElementwiseUnary({"add_scalar:2.5"}).same_as(ElementwiseUnary({"add_scalar:2.25"})));
  const ElementwiseUnary u({"silu", "mul_scalar:0.1"});
  EXPECT_TRUE(u.has_constants());
  EXPECT_FALSE(ElementwiseUnary({"silu", "gelu_tanh"}).has_constants());
  ASSERT_EQ(u.steps().size(), 2u);
  EXPECT_EQ(u.steps()[0].name, "silu");
  EXPECT_FALSE(u.steps()[0].has_k);
  EXPECT_EQ(u.steps()[1].name, "mul_scalar");
  EXPECT_EQ(u.steps()[1].k, 0.1f);  // the constant is the canonical text rounded to fp32
  EXPECT_NE(error_of([] { ElementwiseUnary({"add_scalar"}); }).find("op 'add_scalar' needs a constant"), std::string::npos);
  EXPECT_NE(error_of([] { ElementwiseUnary({"relu:2"}); }).find("op 'relu' takes no constant"), std::string::npos);
  EXPECT_NE(error_of([] { ElementwiseUnary({"mul_scalar:x2"}); }).find("the constant of 'mul_scalar:x2' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of([] { ElementwiseUnary({"mul_scalar:"}); }).find("is not a number"), std::string::npos);
  EXPECT_NE(error_of([] { ElementwiseUnary({"tan:2"}); }).find("unknown op 'tan:2'"), std::string::npos);
}

TEST(ElementwiseIType, ScalarStepSemantics) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Division by a constant is exact (x / k), not x * (1/k): they differ for some x.
  const UnaryStep d = UnaryStep::parse("div_scalar:3");
  int differs = 0;
  for (int i = 1; i < 2000; ++i) {
    const float x = round_bf16(0.01f * static_cast<float>(i));
    EXPECT_EQ(d.apply(x), x / 3.f);
    differs += x * (1.f / 3.f) != x / 3.f;
  }
  EXPECT_GT(differs, 0);
  // clamp keeps NaN (as torch.clamp_min / clamp_max); so do the functions.
  EXPECT_TRUE(std::isnan(UnaryStep::parse("clamp_min:0").apply(nan)));
  EXPECT_TRUE(std::isnan(UnaryStep::parse("clamp_max:0").apply(nan)));
  EXPECT_EQ(UnaryStep::parse("clamp_min:0").apply(-2.f), 0.f);
  EXPECT_EQ(UnaryStep::parse("clamp_max:1").apply(2.f), 1.f);
  EXPECT_EQ(UnaryStep::parse("pow_scalar:0").apply(nan), 1.f);  // as torch.pow(nan, 0)
  // Tails: silu/sigmoid saturate without NaN.
  EXPECT_EQ(UnaryStep::parse("sigmoid").apply(-200.f), 0.f);
  EXPECT_EQ(UnaryStep::parse("sigmoid").apply(200.f), 1.f);
  EXPECT_EQ(UnaryStep::parse("silu").apply(-200.f), 0.f);
  EXPECT_EQ(UnaryStep::parse("silu").apply(200.f), 200.f);
  EXPECT_EQ(UnaryStep::parse("gelu").apply(-20.f), 0.f);
  EXPECT_EQ(UnaryStep::parse("gelu_tanh").apply(20.f), 20.f);
  EXPECT_TRUE(std::isinf(UnaryStep::parse("reciprocal").apply(0.f)));
}

TEST(ElementwiseIType, ExecuteBinaryMatchesNaive) {
  const std::vector<std::pair<ElementwiseBinary, double (*)(double, double)>> cases = {
      {ElementwiseBinary("add"), [](double a, double b) { return a + b; }},
      {ElementwiseBinary("add", 0.5), [](double a, double b) { return a + 0.5 * b; }},
      {ElementwiseBinary("sub", 2), [](double a, double b) { return a - 2 * b; }},
      {ElementwiseBinary("mul"), [](double a, double b) { return a * b; }},
      {ElementwiseBinary("div"), [](double a, double b) { return a / b; }},
      {ElementwiseBinary("maximum"), [](double a, double b) { return std::max(a, b); }},
      {ElementwiseBinary("minimum"), [](double a, double b) { return std::min(a, b); }},
      {ElementwiseBinary("select"), [](double a, double b) { return a != 0.0 ? b : 0.0; }},
  };
  for (const auto& [t, f] : cases) {
    // a is W[1] of W (3, 140, 260), sliced to columns [4, 260).
    TestCtx ctx;
    const Shape s{140, 256};
    const int w = add_slot(ctx, {3, 140, 260}), b = add_slot(ctx, s), y = add_slot(ctx, s, false);
    const Operand a{bf16({3, 140, 260}), TensorRange::full({3, 140, 260}).select(0, 1).slice(1, 4, 260)};
    run_node(t, node({a, whole(s)}, {bf16(s)}, Profile::b200()), ctx, {w, b}, y);
    const auto av = view_values(ctx, w, a.range);
    std::vector<double> want;
    for (size_t k = 0; k < av.size(); ++k) want.push_back(f(av[k], ctx.slots[b].data[k]));
    EXPECT_TRUE(close(ctx.slots[y].data, want)) << t.str();
  }
}

TEST(ElementwiseIType, InplaceFormOnAViewWritesOutputCoords) {
  // The scheduler aliases an in-place output to its input only when the input is a whole tensor;
  // otherwise y gets its own slot, so y's origin is in output coordinates, never a's.
  TestCtx ctx;
  const Shape s{100, 300};
  const int w = add_slot(ctx, {2, 100, 300}), b = add_slot(ctx, s), y = add_slot(ctx, s);
  const Operand a{bf16({2, 100, 300}), TensorRange::full({2, 100, 300}).select(0, 1)};
  const std::vector<float> before = ctx.slots[w].data;
  const ElementwiseBinary t("mul", 1, true);
  const NodeInfo n = node({a, whole(s)}, {bf16(s)}, Profile::h200());
  EXPECT_EQ(t.instruction(n, 0).indices[1], 1);  // a is read at d = 1
  EXPECT_EQ(t.instruction(n, 0).indices[9], 0);  // y is written in its own coordinates
  run_node(t, n, ctx, {w, b}, y);
  EXPECT_EQ(ctx.slots[w].data, before);  // the input view is untouched
  const int64_t half = 100 * 300;
  std::vector<double> want;
  for (int64_t k = 0; k < half; ++k) want.push_back(double(before[half + k]) * ctx.slots[b].data[k]);
  EXPECT_TRUE(close(ctx.slots[y].data, want));
}

// ---- ElementwiseBinary broadcasting ----

TEST(ElementwiseBroadcast, MasksAndParams) {
  using B = ElementwiseBinary::Broadcast;
  Coord4 out{};
  // Row vector (C,) over (R, C): b broadcasts along rows.
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({6, 8}), TensorRange::full({8}), &out), (B{0, 0b0100}));
  EXPECT_EQ(out, (Coord4{1, 1, 6, 8}));
  // Column (R, 1): along cols. Per-batch (B, 1, C) + (B, S, C): along rows. 0-d and (1,): everything wider.
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({6, 8}), TensorRange::full({6, 1})), (B{0, 0b1000}));
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({2, 1, 8}), TensorRange::full({2, 5, 8})), (B{0b0100, 0}));
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({2, 5, 8}), TensorRange::full({})), (B{0, 0b1110}));
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({1}), TensorRange::full({3, 2, 5, 8})), (B{0b1111, 0}));
  // Both sides broadcast: (R, 1) op (1, C) -> (R, C).
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({6, 1}), TensorRange::full({1, 8}), &out), (B{0b1000, 0b0100}));
  EXPECT_EQ(out, (Coord4{1, 1, 6, 8}));
  // An expanded view has the output's shape but still broadcasts.
  const TensorRange e = TensorRange::full({8}).expand({6, 8});
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({6, 8}), e), (B{0, 0b0100}));
  // Same shapes: the plain form, whose params text is unchanged.
  EXPECT_EQ(ElementwiseBinary::broadcast_for(TensorRange::full({6, 8}), TensorRange::full({6, 8})), (B{0, 0}));
  EXPECT_EQ(ElementwiseBinary("add").params(), "op=add,alpha=1");
  EXPECT_EQ(ElementwiseBinary("mul", 1, false, {0, 0}).params(), "op=mul,alpha=1");
  EXPECT_EQ(ElementwiseBinary("mul", 1, false, {0, 0b0100}).params(), "op=mul,alpha=1,bcast_b=0010");
  EXPECT_EQ(ElementwiseBinary("sub", 2, false, {0b1000, 0b0110}).params(), "op=sub,alpha=2,bcast_a=0001,bcast_b=0110");
  EXPECT_EQ(ElementwiseBinary("add", 1, true, {0, 0b1000}).params(), "op=add,alpha=1,inplace,bcast_b=0001");
  EXPECT_FALSE(ElementwiseBinary("mul").same_as(ElementwiseBinary("mul", 1, false, {0, 0b0100})));
  EXPECT_TRUE(ElementwiseBinary("mul").same_as(ElementwiseBinary("mul", 1, false, {0, 0})));
  // Incompatible shapes name both.
  const std::string bad = error_of([] {
    ElementwiseBinary::broadcast_for(TensorRange::full({6, 8}), TensorRange::full({3}));
  });
  EXPECT_NE(bad.find("input a of shape [6, 8] and input b of shape [3] do not broadcast"), std::string::npos) << bad;
  EXPECT_NE(error_of([] { ElementwiseBinary("add", 1, true, {0b0100, 0}); }).find("in place"), std::string::npos);
}

TEST(ElementwiseBroadcast, IndicesAndRegions) {
  const Profile p = h200_fixed_tiles();  // tiles of 128 x 256
  // y (2, 200, 300) = a (2, 200, 300) * b, b = the row W[1] (300,) of W (3, 300) broadcast over (2, 200).
  const Operand a = whole({2, 200, 300});
  const Operand b{bf16({3, 300}), TensorRange::full({3, 300}).select(0, 1)};
  const NodeInfo n = node({a, b}, {bf16({2, 200, 300})}, p);
  const ElementwiseBinary t("mul", 1, false, ElementwiseBinary::broadcast_for(a.range, b.range));
  EXPECT_EQ(t.broadcast(), (ElementwiseBinary::Broadcast{0, 0b0110}));
  t.validate(n);
  ASSERT_EQ(t.num_instructions(n), 2 * 2 * 2);
  expect_exact_cover(t, n);
  // Instruction 7: batch 1, row tile 1, col tile 1 -> rows [128, 200), cols [256, 300).
  const InstrDesc d = t.instruction(n, 7);
  EXPECT_EQ(d.indices, (std::vector<int32_t>{0, 1, 128, 256, 0, 0, 1, 256, 0, 1, 128, 256, 72, 44}));
  ASSERT_EQ(d.reads.size(), 2u);
  EXPECT_EQ(d.reads[0], (std::vector<Box>{{{0, 1, 128, 256}, {1, 2, 200, 300}}}));
  EXPECT_EQ(d.reads[1], (std::vector<Box>{{{0, 0, 0, 256}, {1, 1, 1, 300}}}));  // view coords: one row
  EXPECT_EQ(b.range.to_backing(d.reads[1][0]), (Box{{0, 0, 1, 256}, {1, 1, 2, 300}}));
  EXPECT_EQ(d.writes, (std::vector<std::vector<Box>>{{{{0, 1, 128, 256}, {1, 2, 200, 300}}}}));

  // The same through an expand view: b.expand(2, 200, 300); reads map to the single backing row.
  const Operand be{bf16({3, 300}), b.range.expand({2, 200, 300})};
  const NodeInfo ne = node({a, be}, {bf16({2, 200, 300})}, p);
  const ElementwiseBinary te("mul", 1, false, ElementwiseBinary::broadcast_for(a.range, be.range));
  EXPECT_EQ(te.broadcast(), t.broadcast());
  te.validate(ne);
  const InstrDesc de = te.instruction(ne, 7);
  EXPECT_EQ(de.indices, d.indices);
  EXPECT_EQ(be.range.to_backing(de.reads[1][0]), (Box{{0, 0, 1, 256}, {1, 1, 2, 300}}));

  // A column (200, 1) over the rows: its cols stay at 0, one column wide.
  const Operand c = whole({200, 1});
  const NodeInfo nc = node({a, c}, {bf16({2, 200, 300})}, p);
  const ElementwiseBinary tc("add", 1, false, ElementwiseBinary::broadcast_for(a.range, c.range));
  tc.validate(nc);
  const InstrDesc dc = tc.instruction(nc, 7);
  EXPECT_EQ(std::vector<int32_t>(dc.indices.begin() + 4, dc.indices.begin() + 8), (std::vector<int32_t>{0, 0, 128, 0}));
  EXPECT_EQ(dc.reads[1], (std::vector<Box>{{{0, 0, 128, 0}, {1, 1, 200, 1}}}));

  // A mask that does not match the operands is an error naming the node and the shapes.
  const std::string wrong = error_of([&] { ElementwiseBinary("mul", 1, false, {0, 0b0100}).validate(nc); });
  EXPECT_NE(wrong.find("'n0'"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("[200, 1]"), std::string::npos) << wrong;
  const std::string big = error_of([&] {
    ElementwiseBinary("mul").validate(node({whole({4, 8}), whole({2, 4, 8})}, {bf16({4, 8})}, p));
  });
  EXPECT_NE(big.find("input b shape [2, 4, 8] does not broadcast to the output shape [4, 8]"), std::string::npos) << big;
}

// The value of operand `r` (on slot `slot`) at output point p, torch broadcasting (size-1 dims read 0).
double bcast_value(const TestCtx& ctx, int slot, const TensorRange& r, const Coord4& p) {
  const Coord4 v = r.view_padded(), s = ctx.slots[slot].meta.padded();
  Coord4 q = p;
  for (int d = 0; d < 4; ++d)
    if (v[d] == 1) q[d] = 0;
  const Coord4 b = r.to_backing(q);
  return ctx.slots[slot].data[((b[0] * s[1] + b[1]) * s[2] + b[2]) * s[3] + b[3]];
}

TEST(ElementwiseBroadcast, ExecuteMatchesNaive) {
  struct Case {
    Shape a_backing;
    TensorRange a;
    Shape b_backing;
    TensorRange b;
    Shape y;
  };
  const std::vector<Case> cases = {
      {{3, 140, 260}, TensorRange::full({3, 140, 260}), {260}, TensorRange::full({260}), {3, 140, 260}},
      {{140, 260}, TensorRange::full({140, 260}), {140, 1}, TensorRange::full({140, 1}), {140, 260}},
      {{2, 1, 70}, TensorRange::full({2, 1, 70}), {2, 130, 70}, TensorRange::full({2, 130, 70}), {2, 130, 70}},
      {{2, 3, 130, 40}, TensorRange::full({2, 3, 130, 40}), {}, TensorRange::full({}), {2, 3, 130, 40}},
      {{1}, TensorRange::full({1}), {5, 300}, TensorRange::full({5, 300}), {5, 300}},
      {{130, 1}, TensorRange::full({130, 1}), {1, 270}, TensorRange::full({1, 270}), {130, 270}},
      // cos/sin (S, D) over (B, H, S, D), and a row of a stacked table expanded over rows.
      {{2, 3, 40, 64}, TensorRange::full({2, 3, 40, 64}), {40, 64}, TensorRange::full({40, 64}), {2, 3, 40, 64}},
      {{150, 300}, TensorRange::full({150, 300}), {4, 300}, TensorRange::full({4, 300}).slice(0, 2, 3).expand({150, 300}),
       {150, 300}},
      // A (1, 300) row expanded to (2, 150, 300) with a new leading dim, against a column slice of a backing.
      {{4, 150, 1}, TensorRange::full({4, 150, 1}).slice(0, 1, 3), {1, 300}, TensorRange::full({1, 300}).expand({2, 150, 300}),
       {2, 150, 300}},
  };
  const std::vector<std::pair<std::string, double (*)(double, double)>> ops = {
      {"add", [](double a, double b) { return a + 0.5 * b; }},
      {"sub", [](double a, double b) { return a - 0.5 * b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }},
      {"maximum", [](double a, double b) { return std::max(a, b); }},
  };
  for (const Case& cs : cases)
    for (const auto& [op, f] : ops) {
      TestCtx ctx;
      const int sa = add_slot(ctx, cs.a_backing), sb = add_slot(ctx, cs.b_backing), sy = add_slot(ctx, cs.y, false);
      const Operand a{bf16(cs.a_backing), cs.a}, b{bf16(cs.b_backing), cs.b};
      const double alpha = op == "add" || op == "sub" ? 0.5 : 1.0;
      const ElementwiseBinary t(op, alpha, false, ElementwiseBinary::broadcast_for(a.range, b.range));
      const NodeInfo n = node({a, b}, {bf16(cs.y)}, Profile::h200());
      run_node(t, n, ctx, {sa, sb}, sy);
      const Coord4 ys = n.outputs[0].padded();
      std::vector<double> want;
      for (int64_t i0 = 0; i0 < ys[0]; ++i0)
        for (int64_t i1 = 0; i1 < ys[1]; ++i1)
          for (int64_t i2 = 0; i2 < ys[2]; ++i2)
            for (int64_t i3 = 0; i3 < ys[3]; ++i3) {
              const Coord4 p{i0, i1, i2, i3};
              want.push_back(f(bcast_value(ctx, sa, a.range, p), bcast_value(ctx, sb, b.range, p)));
            }
      EXPECT_TRUE(close(ctx.slots[sy].data, want)) << t.str() << " a " << a.range.str() << " b " << b.range.str();
    }
}

// ---- RMSNorm ----

TEST(RMSNormIType, Tiling) {
  const Profile p = Profile::b200();
  EXPECT_EQ(RMSNorm::rows_per_instruction(2048, 1 << 20, p), 8);  // b200: one page per instruction
  EXPECT_EQ(RMSNorm::rows_per_instruction(4096, 1 << 20, p), 4);
  EXPECT_EQ(RMSNorm::rows_per_instruction(16384, 1 << 20, p), 1);
  EXPECT_EQ(RMSNorm::rows_per_instruction(100, 1 << 20, p), 128);  // 200 bytes pad to 256
  // h200: up to 3 pages, only while every SM still gets an instruction (132 SMs x 8 rows per page).
  const Profile h = Profile::h200(132);
  EXPECT_EQ(RMSNorm::rows_per_instruction(2048, 1024, h), 8);
  EXPECT_EQ(RMSNorm::rows_per_instruction(2048, 132 * 8 + 1, h), 16);
  EXPECT_EQ(RMSNorm::rows_per_instruction(2048, 1 << 20, h), 24);
  EXPECT_EQ(RMSNorm::rows_per_instruction(16384, 1 << 20, h), 3);
  const RMSNorm t(1e-5);
  const NodeInfo n = node({whole({4, 100, 2048}), whole({2048})}, {bf16({4, 100, 2048})}, p);
  t.validate(n);
  EXPECT_EQ(t.num_instructions(n), 4 * 13);
  expect_exact_cover(t, n);
  // Balanced row tiles: 13 tiles of 7-8 rows per batch, not 12 of 8 and one of 4.
  const InstrDesc d = t.instruction(n, 12);  // last row block of batch 0: rows 92..99
  EXPECT_EQ(d.indices, (std::vector<int32_t>{0, 0, 92, 0, 0, 0, 92, 0, 0, 0, 0, 0, 8, 2048}));
  ASSERT_EQ(d.reads.size(), 2u);
  EXPECT_EQ(d.reads[1], std::vector<Box>{Box::of_shape({1, 1, 1, 2048})});
}

TEST(RMSNormIType, BalancedTiles) {
  // 16384 x 8192 on 132 SMs: 2731 tiles of <= 6 rows would leave 41 SMs an instruction short; 2772 = 21 x
  // 132 tiles of 5-6 rows instead. 2000 x 4096 (167 tiles of <= 12 rows): no multiple of 132 within an
  // eighth more tiles, so the count stays.
  Profile h = Profile::h200(132);
  const RMSNorm t(1e-5);
  const NodeInfo big = node({whole({16384, 8192}), whole({8192})}, {bf16({16384, 8192})}, h);
  EXPECT_EQ(t.num_instructions(big), 2772);
  expect_exact_cover(t, big);
  for (int64_t i : {0, 1, 2771}) {
    const int32_t rows = t.instruction(big, i).indices[12];
    EXPECT_TRUE(rows == 5 || rows == 6) << i << ": " << rows;
  }
  EXPECT_EQ(t.num_instructions(node({whole({2000, 4096}), whole({4096})}, {bf16({2000, 4096})}, h)), 167);
  h.rms_norm_balance = 0;
  const NodeInfo uniform = node({whole({16384, 8192}), whole({8192})}, {bf16({16384, 8192})}, h);
  EXPECT_EQ(t.num_instructions(uniform), 2731);
  EXPECT_EQ(t.instruction(uniform, 2730).indices[12], 4);
  expect_exact_cover(t, uniform);
}

TEST(RMSNormIType, Validate) {
  const Profile p = Profile::h200();
  const std::string w = error_of(
      [&] { RMSNorm(1e-5).validate(node({whole({8, 256}), whole({128})}, {bf16({8, 256})}, p)); });
  EXPECT_NE(w.find("'n0'"), std::string::npos) << w;
  EXPECT_NE(w.find("[128]"), std::string::npos) << w;
  const std::string c = error_of(
      [&] { RMSNorm(1e-5).validate(node({whole({8, 32768}), whole({32768})}, {bf16({8, 32768})}, p)); });
  EXPECT_NE(c.find("C=32768"), std::string::npos) << c;
  EXPECT_THROW(RMSNorm(1e-5).validate(node({whole({8, 256})}, {bf16({8, 256})}, p)), CompileError);
  EXPECT_NO_THROW(RMSNorm(1e-5, false).validate(node({whole({8, 256})}, {bf16({8, 256})}, p)));
}

TEST(RMSNormIType, ExecuteMatchesNaive) {
  for (bool has_weight : {true, false}) {
    TestCtx ctx;
    Profile p = Profile::h200();
    p.page_bytes = 4096;  // 8 rows of C = 256 per instruction: several instructions, a ragged last one
    const Shape s{3, 37, 256};
    const int x = add_slot(ctx, s), y = add_slot(ctx, s, false);
    const int wb = add_slot(ctx, {2, 256});
    const Operand w{bf16({2, 256}), TensorRange::full({2, 256}).select(0, 1)};  // weight W[1]
    const RMSNorm t(1e-5, has_weight);
    std::vector<Operand> in{whole(s)};
    std::vector<int> src{x};
    if (has_weight) in.push_back(w), src.push_back(wb);
    run_node(t, node(in, {bf16(s)}, p), ctx, src, y);
    const auto& xv = ctx.slots[x].data;
    std::vector<double> want;
    for (int64_t r = 0; r < 3 * 37; ++r) {
      double ss = 0;
      for (int c = 0; c < 256; ++c) ss += double(xv[r * 256 + c]) * xv[r * 256 + c];
      const double inv = 1 / std::sqrt(ss / 256 + 1e-5);
      for (int c = 0; c < 256; ++c) want.push_back(xv[r * 256 + c] * inv * (has_weight ? ctx.slots[wb].data[256 + c] : 1.0));
    }
    EXPECT_TRUE(close(ctx.slots[y].data, want)) << t.str();
  }
}

// ---- Rope ----

TEST(RopeIType, TilingCountsAndIndices) {
  const Profile p = Profile::h200();
  EXPECT_EQ(Rope().op_name(), "rope");
  EXPECT_EQ(Rope(0b0100).params(), "bcast=0010");
  EXPECT_FALSE(Rope(0b0100).same_as(Rope(0b0110)));
  // Llama-1B q (B, S, H, D) = (1, 1024, 32, 64) with cos (S, 1, D): R = H = 32 < 128, so blocks of
  // 4 consecutive positions with all 32 heads: 256 instructions, not 1024.
  const Operand x = whole({1, 1024, 32, 64}), cos = whole({1024, 1, 64});
  const NodeInfo n = node({x, cos, cos}, {bf16({1, 1024, 32, 64})}, p);
  const Rope t(Rope::mask_for(x.range, cos.range));
  EXPECT_EQ(t.cos_bcast(), 0b0100);
  t.validate(n);
  EXPECT_EQ(Rope::d_per_instruction(x.padded()), 4);
  ASSERT_EQ(t.num_instructions(n), 256);
  expect_exact_cover(t, n);
  const InstrDesc d = t.instruction(n, 5);  // positions 20..23
  EXPECT_EQ(d.indices, (std::vector<int32_t>{0, 20, 0, 0, 0, 20, 0, 0, 0, 20, 0, 0, 4, 32, 64}));
  ASSERT_EQ(d.reads.size(), 3u);
  EXPECT_EQ(d.reads[0], (std::vector<Box>{{{0, 20, 0, 0}, {1, 24, 32, 64}}}));
  EXPECT_EQ(d.reads[1], (std::vector<Box>{{{0, 20, 0, 0}, {1, 24, 1, 64}}}));  // one row per position
  EXPECT_EQ(d.reads[2], d.reads[1]);
  EXPECT_EQ(d.writes, (std::vector<std::vector<Box>>{{{{0, 20, 0, 0}, {1, 24, 32, 64}}}}));

  // R >= 128: 128-row tiles of one (b, d); HF's (B, H, S, D) with cos (B, 1, S, D).
  const Operand xh = whole({2, 4, 300, 64}), ch = whole({2, 1, 300, 64});
  const NodeInfo nh = node({xh, ch, ch}, {bf16({2, 4, 300, 64})}, p);
  const Rope th(Rope::mask_for(xh.range, ch.range));
  EXPECT_EQ(th.params(), "bcast=0100");
  th.validate(nh);
  ASSERT_EQ(th.num_instructions(nh), 2 * 4 * 3);
  expect_exact_cover(th, nh);
  const InstrDesc dh = th.instruction(nh, 3 * 4 + 2 * 3 + 2);  // b 1, h 2, rows 256..299
  EXPECT_EQ(dh.indices, (std::vector<int32_t>{1, 2, 256, 0, 1, 2, 256, 0, 1, 0, 256, 0, 1, 44, 64}));
  EXPECT_EQ(dh.reads[1], (std::vector<Box>{{{1, 0, 256, 0}, {2, 1, 300, 64}}}));

  // R = 48: floor(128 / 48) = 2 positions per block, the last block of 5 clipped to 1.
  const Operand xr = whole({3, 5, 48, 32}), cr = whole({5, 1, 32});
  const NodeInfo nr = node({xr, cr, cr}, {bf16({3, 5, 48, 32})}, p);
  const Rope tr(Rope::mask_for(xr.range, cr.range));
  tr.validate(nr);
  ASSERT_EQ(tr.num_instructions(nr), 3 * 3);
  expect_exact_cover(tr, nr);
  const InstrDesc dr = tr.instruction(nr, 5);  // b 1, position 4 only
  EXPECT_EQ(std::vector<int32_t>(dr.indices.begin() + 12, dr.indices.end()), (std::vector<int32_t>{1, 48, 32}));
  EXPECT_EQ(dr.reads[1], (std::vector<Box>{{{0, 4, 0, 0}, {1, 5, 1, 32}}}));  // cos does not vary over b

  // HF's q (B, S, H, D) = (2, 40, 3, 64) read through transpose(1, 2): one (b, h) per instruction, its
  // origin on the backing (b, 0, h, 0).
  const Operand xt{bf16({2, 40, 3, 64}), TensorRange::full({2, 40, 3, 64}).transpose(1, 2)}, ct = whole({40, 64});
  EXPECT_FALSE(Rope().reads_view(0, TensorRange::full({2, 40, 3, 64}).permute({0, 3, 1, 2}), {2, 40, 3, 64}));
  EXPECT_TRUE(Rope().reads_view(0, xt.range, {2, 40, 3, 64}));
  ASSERT_TRUE(Rope::bshd_for(xt.range));
  const NodeInfo nt = node({xt, ct, ct}, {bf16({2, 3, 40, 64})}, p);
  const Rope tt(Rope::mask_for(xt.range, ct.range), true);
  EXPECT_EQ(tt.params(), "bcast=1100,x_bshd");
  tt.validate(nt);
  ASSERT_EQ(tt.num_instructions(nt), 2 * 3);
  expect_exact_cover(tt, nt);
  EXPECT_EQ(tt.instruction(nt, 4).indices, (std::vector<int32_t>{1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 40, 64}));
  // A plain Rope refuses the transposed view, naming it.
  const std::string tv = error_of([&] { Rope(tt.cos_bcast()).validate(nt); });
  EXPECT_NE(tv.find("input x view"), std::string::npos) << tv;
}

TEST(RopeIType, ValidateNamesNodeAndValue) {
  const Profile p = Profile::h200();
  const std::string odd = error_of([&] {
    Rope(0b0011).validate(node({whole({2, 40, 63}), whole({40, 63}), whole({40, 63})}, {bf16({2, 40, 63})}, p));
  });
  EXPECT_NE(odd.find("'n0'"), std::string::npos) << odd;
  EXPECT_NE(odd.find("D=63"), std::string::npos) << odd;
  const std::string shapes = error_of([&] {
    Rope(0b0011).validate(node({whole({2, 40, 64}), whole({40, 64}), whole({1, 40, 64})}, {bf16({2, 40, 64})}, p));
  });
  EXPECT_NE(shapes.find("cos shape [40, 64] must equal sin shape [1, 40, 64]"), std::string::npos) << shapes;
  // Same shapes, different views of their backings: one origin cannot serve both.
  const Operand c{bf16({50, 64}), TensorRange::full({50, 64}).slice(0, 0, 40)};
  const Operand s{bf16({50, 64}), TensorRange::full({50, 64}).slice(0, 10, 50)};
  const std::string views = error_of([&] {
    Rope(0b0011).validate(node({whole({2, 40, 64}), c, s}, {bf16({2, 40, 64})}, p));
  });
  EXPECT_NE(views.find("must match cos view"), std::string::npos) << views;
  const std::string bcast = error_of([&] {
    Rope(0b0011).validate(node({whole({2, 40, 64}), whole({40, 32}), whole({40, 32})}, {bf16({2, 40, 64})}, p));
  });
  EXPECT_NE(bcast.find("cos/sin shape [40, 32] must broadcast to x's shape [2, 40, 64]"), std::string::npos) << bcast;
  const std::string mask = error_of([&] {
    Rope(0).validate(node({whole({2, 40, 64}), whole({40, 64}), whole({40, 64})}, {bf16({2, 40, 64})}, p));
  });
  EXPECT_NE(mask.find("broadcasts along padded dims 0100"), std::string::npos) << mask;  // along d
  EXPECT_NO_THROW(
      Rope(0b0010).validate(node({whole({2, 40, 64}), whole({40, 64}), whole({40, 64})}, {bf16({2, 40, 64})}, p)));
}

TEST(RopeIType, ExecuteMatchesNaive) {
  struct Case {
    Shape x_backing;
    TensorRange x;
    Shape c_backing;
    TensorRange c;
  };
  const std::vector<Case> cases = {
      {{2, 3, 40, 64}, TensorRange::full({2, 3, 40, 64}), {40, 64}, TensorRange::full({40, 64})},
      {{1, 150, 4, 32}, TensorRange::full({1, 150, 4, 32}), {150, 1, 32}, TensorRange::full({150, 1, 32})},
      {{2, 3, 130, 16}, TensorRange::full({2, 3, 130, 16}), {2, 1, 130, 16}, TensorRange::full({2, 1, 130, 16})},
      // A slice of x's backing and a slice of a longer table (cos[:S] of max_seq rows), expanded.
      {{2, 5, 6, 64}, TensorRange::full({2, 5, 6, 64}).slice(1, 1, 4), {10, 1, 64},
       TensorRange::full({10, 1, 64}).slice(0, 2, 5).expand({3, 6, 64})},
      // HF's q: (B, S, H, D) read through transpose(1, 2) in place (x_bshd), S < 128 and S > 128.
      {{2, 40, 3, 64}, TensorRange::full({2, 40, 3, 64}).transpose(1, 2), {1, 1, 40, 64}, TensorRange::full({1, 1, 40, 64})},
      {{1, 130, 2, 32}, TensorRange::full({1, 130, 2, 32}).transpose(1, 2), {130, 32}, TensorRange::full({130, 32})},
  };
  for (const Case& cs : cases) {
    TestCtx ctx;
    const int sx = add_slot(ctx, cs.x_backing), sc = add_slot(ctx, cs.c_backing), ss = add_slot(ctx, cs.c_backing);
    const Operand x{bf16(cs.x_backing), cs.x}, c{bf16(cs.c_backing), cs.c};
    const Shape ys = cs.x.view_shape;
    const Rope t(Rope::mask_for(x.range, c.range), Rope::bshd_for(x.range));
    EXPECT_EQ(t.x_bshd(), !cs.x.is_straight()) << x.range.str();
    const NodeInfo n = node({x, c, c}, {bf16(ys)}, Profile::h200());
    const int sy = add_slot(ctx, ys, false);
    run_node(t, n, ctx, {sx, sc, ss}, sy);
    const Coord4 s = n.outputs[0].padded();
    const int64_t h = s[3] / 2;
    std::vector<double> want;
    for (int64_t i0 = 0; i0 < s[0]; ++i0)
      for (int64_t i1 = 0; i1 < s[1]; ++i1)
        for (int64_t i2 = 0; i2 < s[2]; ++i2)
          for (int64_t i3 = 0; i3 < s[3]; ++i3) {
            const Coord4 p{i0, i1, i2, i3}, q{i0, i1, i2, i3 < h ? i3 + h : i3 - h};
            const double rot = (i3 < h ? -1 : 1) * bcast_value(ctx, sx, x.range, q);
            want.push_back(bcast_value(ctx, sx, x.range, p) * bcast_value(ctx, sc, c.range, p) +
                           rot * bcast_value(ctx, ss, c.range, p));
          }
    EXPECT_TRUE(close(ctx.slots[sy].data, want)) << t.str() << " x " << x.range.str() << " cos " << c.range.str();
  }
}

// ---- Gemm ----

NodeInfo gemm_node(Shape a, Shape b, Profile p, int cluster) {
  Shape d(a.begin(), a.end() - 1);
  d.push_back(b.back());
  return node({whole(a), whole(b)}, {bf16(d)}, std::move(p), cluster);
}

// h200 with 256-wide tiles only (Profile::gemm_n_narrow off): the layout tests below fix the tile width.
Profile h200_wide() {
  Profile p = Profile::h200();
  p.gemm_n_narrow = 0;
  return p;
}

TEST(GemmIType, H200NarrowTilesUnderOneWave) {
  // src/itypes/gemm.cpp gemm_tile_n: 1024 x 2048 is 8 x 8 = 64 wide tiles on 132 SMs (one wave, half the
  // SMs idle) or 8 x 16 = 128 narrow ones (one wave): narrow. 2048 x 4096: 256 wide tiles (2 waves) vs
  // 512 narrow ones (4 waves at 0.77 each = 3.1): wide; 1280 x 3584: 140 wide tiles (2 waves, the second
  // nearly empty) vs 280 narrow ones (3 waves, 2.3): still wide.
  const Gemm g;
  const NodeInfo n = gemm_node({1024, 512}, {512, 2048}, Profile::h200(), 1);
  ASSERT_EQ(g.num_instructions(n), 128);
  for (int64_t i = 0; i < 128; ++i) EXPECT_EQ(g.instruction(n, i).indices[13], 128) << i;
  expect_exact_cover(g, n);
  const NodeInfo w = gemm_node({2048, 512}, {512, 4096}, Profile::h200(), 1);
  ASSERT_EQ(g.num_instructions(w), 256);
  EXPECT_EQ(g.instruction(w, 0).indices[13], 256);
  EXPECT_EQ(g.num_instructions(gemm_node({1280, 512}, {512, 3584}, Profile::h200(), 1)), 140);
  // Off, or on one SM (every extra tile is a wave): wide.
  EXPECT_EQ(g.num_instructions(gemm_node({1024, 512}, {512, 2048}, h200_wide(), 1)), 64);
  EXPECT_EQ(g.num_instructions(gemm_node({1024, 512}, {512, 2048}, Profile::h200(1), 1)), 64);
}

TEST(GemmIType, TileWidthOfGemmsSharingA) {
  // A 1B layer's q, k and v (N 2048, 512, 512 at M 1024, cluster 2) read one A: narrow tiles would be
  // 128 + 32 + 32 = 192 (two waves on 132 SMs, 1.54 at 0.77 each), wide ones 96 (one wave): every member
  // takes wide tiles, though q alone would take narrow ones.
  const Gemm g;
  NodeInfo q = gemm_node({1024, 2048}, {2048, 2048}, Profile::h200(), 2);
  EXPECT_EQ(g.num_instructions(q), 128);
  q.gemm_group_n = {2048, 512, 512};
  EXPECT_EQ(g.num_instructions(q), 64);
  EXPECT_EQ(g.instruction(q, 0).indices[13], 256);
  NodeInfo k = gemm_node({1024, 2048}, {2048, 512}, Profile::h200(), 2);
  k.gemm_group_n = {2048, 512, 512};
  EXPECT_EQ(g.num_instructions(k), 16);
  expect_exact_cover(g, q);
}

TEST(GemmIType, SplitKDecision) {
  // src/itypes/gemm.cpp Gemm::split_k. A 1B layer's down projection (1024 x 2048, K 8192, cluster 2):
  // one wave of 128 narrow tiles (128 + 3 steps at 0.77) vs two pieces of 64 wide tiles sharing one wave
  // (64 + 3 steps, plus the chain): 2. The 8B's (2048 x 4096, K 14336) fills two waves of wide tiles
  // either way: 1. Gemms sharing A (q, k, v), swiglu and a profile with gemm_split_k = 1: never.
  const Gemm g;
  EXPECT_EQ(g.split_k(gemm_node({1024, 8192}, {8192, 2048}, Profile::h200(), 2)), 2);
  EXPECT_EQ(g.split_k(gemm_node({2048, 14336}, {14336, 4096}, Profile::h200(), 2)), 1);
  EXPECT_EQ(g.split_k(gemm_node({4096, 4096}, {4096, 4096}, Profile::h200(), 2)), 1);
  // A long K over few tiles: 256 x 256, K 4096 -> 2 at the default chain cost (8 steps per link), 4
  // when each link costs 4 (the profile field is honoured). The seed MLP at (1024, 1024): K 1024 is too
  // short to pay for a link (it ran 20 us slower split on the H200, benchmarks/notes.md "Session 8").
  EXPECT_EQ(g.split_k(gemm_node({256, 4096}, {4096, 256}, Profile::h200(), 1)), 2);
  Profile cheap_chain = Profile::h200();
  cheap_chain.gemm_split_chain_steps = 4;
  EXPECT_EQ(g.split_k(gemm_node({256, 4096}, {4096, 256}, cheap_chain, 1)), 4);
  EXPECT_EQ(g.split_k(gemm_node({1024, 1024}, {1024, 1024}, Profile::h200(), 2)), 1);
  NodeInfo q = gemm_node({1024, 8192}, {8192, 2048}, Profile::h200(), 2);
  q.gemm_group_n = {2048, 512, 512};
  EXPECT_EQ(g.split_k(q), 1);
  Profile off = Profile::h200();
  off.gemm_split_k = 1;
  EXPECT_EQ(g.split_k(gemm_node({1024, 8192}, {8192, 2048}, off, 2)), 1);
  // K too short to give a second piece a k-tile of its own.
  EXPECT_EQ(g.split_k(gemm_node({128, 64}, {64, 128}, Profile::h200(), 1)), 1);
  EXPECT_EQ(Gemm::split_k_chunk(3000, 3, 64), 1024);
  EXPECT_EQ(Gemm::split_k_chunk(8192, 2, 64), 4096);
}

TEST(GemmIType, ActivationFlag) {
  // `act` (src/trace/fuse_gemm_act.h): any unary op without a constant, named in params and the icode.
  Gemm::Flags f;
  f.act = "gelu_tanh";
  const NodeInfo n = gemm_node({256, 128}, {128, 256}, Profile::h200(), 1);
  Gemm(f).validate(n);
  EXPECT_EQ(Gemm(f).params(), "act=gelu_tanh");
  for (const char* bad : {"mul_scalar:2", "identity", "nope"}) {
    f.act = bad;
    EXPECT_THROW(Gemm(f).validate(n), CompileError) << bad;
  }
}

TEST(GemmIType, RopeFlag) {
  // `rope=D` (src/trace/fuse_gemm_rope.h): two table inputs after A, B (and a bias_row), late, never split
  // along K; tiles hold whole heads; the tables are whole tensors of T rows of D, T dividing M.
  Gemm::Flags f;
  f.rope = 64;
  const Gemm g(f);
  const Profile p = Profile::h200();
  const auto rope_node = [&](Shape table, int64_t N = 512, int64_t M = 256) {
    return node({whole({M, 128}), whole({128, N}), whole(table), whole(table)}, {bf16({M, N})}, p);
  };
  g.validate(rope_node({128, 64}));  // T = 128 rows, M = 256: rows m % 128
  EXPECT_EQ(g.params(), "rope=64");
  EXPECT_EQ(g.rope_input(), 2);
  EXPECT_TRUE(g.late_input(2) && g.late_input(3) && !g.late_input(1));
  const NodeInfo n = rope_node({1, 256, 64});
  EXPECT_EQ(g.split_k(n), 1);
  const InstrDesc d = g.instruction(n, 0);
  ASSERT_EQ(d.reads.size(), 4u);
  EXPECT_EQ(d.reads[2], (std::vector<Box>{Box::of_shape({1, 1, 256, 64})}));  // the whole table
  const std::string rows = error_of([&] { g.validate(rope_node({96, 64})); });  // 96 does not divide 256
  EXPECT_NE(rows.find("rope cos table must be a whole tensor of T rows of D=64"), std::string::npos) << rows;
  const std::string heads = error_of([&] { g.validate(rope_node({128, 64}, 480)); });
  EXPECT_NE(heads.find("N is a multiple of the head dim 64"), std::string::npos) << heads;
  Gemm::Flags bad = f;
  bad.rope = 96;
  const std::string dim = error_of([&] { Gemm(bad).validate(rope_node({128, 96}, 576)); });
  EXPECT_NE(dim.find("head dims 64 and 128, got rope=96"), std::string::npos) << dim;
  bad = f;
  bad.act = "relu";
  EXPECT_THROW(Gemm(bad).validate(rope_node({128, 64})), CompileError);
  Profile narrow = p;
  narrow.gemm_n_narrow = 96;
  const std::string tiles = error_of([&] {
    g.validate(node({whole({256, 128}), whole({128, 512}), whole({128, 64}), whole({128, 64})}, {bf16({256, 512})},
                    narrow));
  });
  EXPECT_NE(tiles.find("tiles of whole heads"), std::string::npos) << tiles;
}

TEST(GemmIType, SeedMlpOnB200) {
  const Gemm g;
  const NodeInfo n = gemm_node({1024, 1024}, {1024, 1024}, Profile::b200(), 2);
  g.validate(n);
  ASSERT_EQ(g.num_instructions(n), 16);
  for (int i = 0; i < 16; ++i) {
    const InstrDesc d = g.instruction(n, i);
    ASSERT_EQ(d.indices.size(), 15u);
    const int rank = i % 2, m0 = i < 8 ? 0 : 512;
    EXPECT_EQ(d.indices[2], m0 + rank * 256) << i;  // A.r: the rank's own rows
    EXPECT_EQ(d.indices[10], m0 + rank * 256) << i;  // D.r
    EXPECT_EQ(d.indices[12], 256 | (1 << 16));  // m_rows; bit 16: the other rank has rows (multicast pair)
    EXPECT_EQ(d.indices[13], 256);
    EXPECT_EQ(d.indices[14], 1024);
    // Pair tiles: both ranks claim the whole 512-row cluster tile.
    const int nt = i < 8 ? (i / 2) : 3 - (i - 8) / 2;  // serpentine: row block 1 runs right to left
    EXPECT_EQ(d.indices[7], nt * 256) << i;  // B.c
    EXPECT_EQ(d.writes[0], (std::vector<Box>{Box{{0, 0, m0, nt * 256}, {1, 1, m0 + 512, nt * 256 + 256}}})) << i;
    EXPECT_EQ(d.reads[0], (std::vector<Box>{Box{{0, 0, m0, 0}, {1, 1, m0 + 512, 1024}}})) << i;
    EXPECT_EQ(d.reads[1], (std::vector<Box>{Box{{0, 0, 0, nt * 256}, {1, 1, 1024, nt * 256 + 256}}})) << i;
  }
  expect_exact_cover(g, n, 2);
}

TEST(GemmIType, H200OwnRows) {
  const Gemm g;
  const NodeInfo n = gemm_node({1024, 1024}, {1024, 1024}, h200_wide(), 2);
  ASSERT_EQ(g.num_instructions(n), 32);
  const InstrDesc d = g.instruction(n, 1);
  EXPECT_EQ(d.writes[0], (std::vector<Box>{Box{{0, 0, 128, 0}, {1, 1, 256, 256}}}));
  EXPECT_EQ(d.reads[0], (std::vector<Box>{Box{{0, 0, 128, 0}, {1, 1, 256, 1024}}}));
  expect_exact_cover(g, n);
}

TEST(GemmIType, RaggedAndSupergroups) {
  const Gemm g;
  // 1000 x 3000, K = 512 on b200: 2 cluster-tile rows x 12 column tiles (supergroups of 8 and 4).
  const NodeInfo n = gemm_node({1000, 512}, {512, 3000}, Profile::b200(), 2);
  g.validate(n);
  ASSERT_EQ(g.num_instructions(n), 48);
  std::vector<int> cols;
  for (int i = 0; i < 48; i += 2) cols.push_back(g.instruction(n, i).indices[11] / 256);
  EXPECT_EQ(cols, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 4, 3, 2, 1, 0, 8, 9, 10, 11, 11, 10, 9, 8}));
  const InstrDesc edge = g.instruction(n, 41);  // row block 1, rank 1, column 11 (descending: 11 10 9 8)
  EXPECT_EQ(edge.indices[10], 768);
  EXPECT_EQ(edge.indices[12], 232 | (1 << 16));  // 1000 - 768; rank 0 has rows too: a multicast pair
  EXPECT_EQ(edge.indices[11], 2816);
  EXPECT_EQ(edge.indices[13], 184);  // 3000 - 2816
  EXPECT_EQ(edge.writes[0], (std::vector<Box>{Box{{0, 0, 512, 2816}, {1, 1, 1000, 3000}}}));
  expect_exact_cover(g, n, 2);
  expect_exact_cover(g, gemm_node({1000, 512}, {512, 3000}, Profile::h200(), 2));
  expect_exact_cover(g, gemm_node({1000, 512}, {512, 3000}, Profile::h200(), 1));
}

TEST(GemmIType, EmptyRankReadsOnlyB) {
  const Gemm g;
  // M = 600 on h200, cluster 2: row block 2 is [512, 768); rank 1 starts at 640 >= M.
  const NodeInfo n = gemm_node({600, 256}, {256, 256}, h200_wide(), 2);
  ASSERT_EQ(g.num_instructions(n), 6);
  const InstrDesc r0 = g.instruction(n, 4), r1 = g.instruction(n, 5);
  EXPECT_EQ(r0.indices[12], 88);  // no pair bit: rank 1 has no rows to share B with
  EXPECT_EQ(r1.indices[12], 0);
  ASSERT_EQ(r1.reads.size(), 2u);
  EXPECT_TRUE(r1.reads[0].empty());
  EXPECT_EQ(r1.reads[1], (std::vector<Box>{Box{{0, 0, 0, 0}, {1, 1, 256, 256}}}));
  ASSERT_EQ(r1.writes.size(), 1u);
  EXPECT_TRUE(r1.writes[0].empty());
  // b200 pair tiles: the empty rank still claims the (clipped) cluster tile like its partner.
  const NodeInfo b = gemm_node({600, 256}, {256, 256}, Profile::b200(), 2);
  ASSERT_EQ(g.num_instructions(b), 4);
  EXPECT_EQ(g.instruction(b, 3).indices[12], 0);
  EXPECT_EQ(g.instruction(b, 3).writes, g.instruction(b, 2).writes);
  EXPECT_EQ(g.instruction(b, 3).writes[0], (std::vector<Box>{Box{{0, 0, 512, 0}, {1, 1, 600, 256}}}));
}

TEST(GemmIType, Validate) {
  const Gemm g;
  const Profile p = Profile::h200();
  const std::string k = error_of([&] { g.validate(gemm_node({64, 128}, {64, 64}, p, 1)); });
  EXPECT_NE(k.find("'n0'"), std::string::npos) << k;
  EXPECT_NE(k.find("K of A (128)"), std::string::npos) << k;
  const std::string tma = error_of([&] { g.validate(gemm_node({64, 100}, {100, 64}, p, 1)); });
  EXPECT_NE(tma.find("row stride of A must be a multiple of 16 bytes for TMA, got K=100 elements"), std::string::npos)
      << tma;
  const std::string tmb = error_of([&] { g.validate(gemm_node({64, 64}, {64, 60}, p, 1)); });
  EXPECT_NE(tmb.find("N=60"), std::string::npos) << tmb;
  const std::string lead = error_of([&] { g.validate(gemm_node({2, 64, 64}, {3, 64, 64}, p, 1)); });
  EXPECT_NE(lead.find("[2]"), std::string::npos) << lead;
  const std::string out = error_of(
      [&] { g.validate(node({whole({64, 64}), whole({64, 32})}, {bf16({64, 64})}, p)); });
  EXPECT_NE(out.find("[64, 32]"), std::string::npos) << out;
  EXPECT_THROW(g.validate(gemm_node({64}, {64, 64}, p, 1)), CompileError);
}

void check_gemm_execute(const Operand& a, int a_slot, const Shape& bshape, Profile p, int cluster, TestCtx& ctx) {
  const Shape& as = a.shape();
  Shape ds(as.begin(), as.end() - 1);
  ds.push_back(bshape.back());
  const int b = add_slot(ctx, bshape), d = add_slot(ctx, ds, false);
  const Gemm g;
  run_node(g, node({a, whole(bshape)}, {bf16(ds)}, p, cluster), ctx, {a_slot, b}, d);
  const Coord4 A = a.padded(), B = TensorMeta{DType::bf16, bshape}.padded();
  const auto av = view_values(ctx, a_slot, a.range);
  const auto& bv = ctx.slots[b].data;
  const int64_t M = A[2], K = A[3], N = B[3], batches = A[0] * A[1];
  std::vector<double> want;
  for (int64_t z = 0; z < batches; ++z)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += av[(z * M + m) * K + k] * bv[(z * K + k) * N + n];
        want.push_back(acc);
      }
  EXPECT_TRUE(close(ctx.slots[d].data, want)) << p.name << " cluster " << cluster;
}

TEST(GemmIType, ExecuteMatchesNaive) {
  for (bool pair : {false, true})
    for (int cluster : {1, 2}) {
      Profile p = pair ? Profile::b200() : Profile::h200();
      p.gemm_cta_m = 16;
      p.gemm_n = 32;
      TestCtx ctx;
      // A = X[1] of X (3, 2, 40, 24): batched (2, 40, 24) @ (2, 24, 72), ragged rows and columns.
      const int x = add_slot(ctx, {3, 2, 40, 24});
      const Operand a{bf16({3, 2, 40, 24}), TensorRange::full({3, 2, 40, 24}).select(0, 1)};
      check_gemm_execute(a, x, {2, 24, 72}, p, cluster, ctx);
    }
  // The seed's shape scaled down on the real b200 tiles: the second rank of the only cluster tile is empty.
  TestCtx ctx;
  const int x = add_slot(ctx, {256, 64});
  check_gemm_execute(whole({256, 64}), x, {64, 384}, Profile::b200(), 2, ctx);
}

// ---- Gemm: transposed operands and bias ----

Gemm::Flags gflags(bool ta, bool tb, Gemm::Bias bias = Gemm::Bias::none) {
  Gemm::Flags f;
  f.transpose_a = ta;
  f.transpose_b = tb;
  f.bias = bias;
  return f;
}

// A whole tensor of shape `backing` seen with its last two dims swapped.
Operand transposed(Shape backing) {
  const int r = static_cast<int>(backing.size());
  return {bf16(backing), TensorRange::full(backing).transpose(r - 2, r - 1)};
}

TEST(GemmIType, RmsInFlag) {
  // [Note: gemm rms_in]: one more input (the norm's weight, read whole), no index word for eps (a constant of
  // the icode: a Gemm with a bias has 16 words already), never split along K; a weight of the wrong length or a
  // transposed A is rejected.
  const Profile p = Profile::h200(132);
  Gemm::Flags f = gflags(false, true);
  f.rms_in = 1e-6;
  const Gemm g(f);
  EXPECT_EQ(g.params(), "tb,rms_in=1e-06");
  EXPECT_EQ(g.num_inputs(), 3);
  const NodeInfo n = node({whole({1024, 512}), transposed({640, 512}), whole({512})}, {bf16({1024, 640})}, p);
  g.validate(n);
  EXPECT_EQ(g.split_k(node({whole({128, 8192}), transposed({256, 8192}), whole({8192})}, {bf16({128, 256})}, p)), 1);
  const InstrDesc d = g.instruction(n, 0);
  ASSERT_EQ(d.reads.size(), 3u);
  ASSERT_EQ(d.reads[2].size(), 1u);
  EXPECT_EQ(d.reads[2][0].hi[3], 512);  // the whole weight
  EXPECT_EQ(d.indices.size(), 15u);
  Gemm::Flags fb = gflags(false, true, Gemm::Bias::row);
  fb.rms_in = 1e-6;
  const NodeInfo nb = node({whole({1024, 512}), transposed({640, 512}), whole({640}), whole({512})},
                           {bf16({1024, 640})}, p);
  Gemm(fb).validate(nb);
  EXPECT_EQ(Gemm(fb).instruction(nb, 0).indices.size(), 16u);  // the bias offset, nothing after it
  const std::string w = error_of([&] {
    g.validate(node({whole({1024, 512}), transposed({640, 512}), whole({256})}, {bf16({1024, 640})}, p));
  });
  EXPECT_NE(w.find("rms weight must be a whole (K,) tensor with K=512"), std::string::npos) << w;
  Gemm::Flags ft = gflags(true, true);
  ft.rms_in = 1e-6;
  const std::string t = error_of([&] {
    Gemm(ft).validate(node({transposed({512, 1024}), transposed({640, 512}), whole({512})}, {bf16({1024, 640})}, p));
  });
  EXPECT_NE(t.find("not transposed"), std::string::npos) << t;
}

TEST(GemmIType, FlagParams) {
  EXPECT_EQ(Gemm(gflags(false, false)).params(), "");
  EXPECT_EQ(Gemm(gflags(true, false)).params(), "ta");
  EXPECT_EQ(Gemm(gflags(false, true)).params(), "tb");
  EXPECT_EQ(Gemm(gflags(true, true, Gemm::Bias::full)).params(), "ta,tb,bias_full");
  EXPECT_EQ(Gemm(gflags(false, true, Gemm::Bias::row)).str(), "Gemm(tb,bias_row)");
  EXPECT_TRUE(Gemm().same_as(Gemm(gflags(false, false))));
  EXPECT_FALSE(Gemm().same_as(Gemm(gflags(false, true))));
  // Flags from folded views: x @ W.T, x.t() @ y, bias rows 1 -> row, else full.
  const TensorRange s = TensorRange::full({16, 64}), t = TensorRange::full({32, 64}).transpose(0, 1);
  EXPECT_EQ(Gemm::flags_for({s, t}), gflags(false, true));
  EXPECT_EQ(Gemm::flags_for({t, s}), gflags(true, false));
  EXPECT_EQ(Gemm::flags_for({s, t, TensorRange::full({32})}), gflags(false, true, Gemm::Bias::row));
  EXPECT_EQ(Gemm::flags_for({s, t, TensorRange::full({1, 32})}), gflags(false, true, Gemm::Bias::row));
  EXPECT_EQ(Gemm::flags_for({s, t, TensorRange::full({16, 32})}), gflags(false, true, Gemm::Bias::full));
  // A (1, K) row vector transposed has one wide dim, on the swapped side: transposed.
  EXPECT_TRUE(Gemm::is_transposed(TensorRange::full({64, 1}).transpose(0, 1)));
  EXPECT_FALSE(Gemm::is_transposed(TensorRange::full({1, 1}).transpose(0, 1)));
}

TEST(GemmIType, TransposedIndicesAndRegions) {
  // x.t() @ W.t() + bias: A^T backing (K, M) = (64, 296), B^T backing (N, K) = (512, 64), h200 cluster 2.
  const Operand a = transposed({64, 296}), b = transposed({512, 64});
  const Operand c{bf16({3, 512}), TensorRange::full({3, 512}).select(0, 2)};  // b[2] of stacked biases
  const Gemm g(gflags(true, true, Gemm::Bias::row));
  const NodeInfo n = node({a, b, c}, {bf16({296, 512})}, h200_wide(), 2);
  g.validate(n);
  ASSERT_EQ(g.num_instructions(n), 2 * 2 * 2);  // 2 cluster-tile rows x 2 column tiles x 2 ranks
  for (int64_t i = 0; i < 8; ++i) {
    const InstrDesc d = g.instruction(n, i);
    ASSERT_EQ(d.indices.size(), 16u);
    const int32_t m = d.indices[10], n0 = d.indices[11];
    // A^T origin: view (m, 0) on backing (0, m); B^T origin: view (0, n0) on backing (n0, 0).
    EXPECT_EQ(std::vector<int32_t>(d.indices.begin(), d.indices.begin() + 8),
              (std::vector<int32_t>{0, 0, 0, m, 0, 0, n0, 0})) << i;
    EXPECT_EQ(d.indices[14], 64);
    EXPECT_EQ(d.indices[15], 2 * 512 + n0) << i;  // bias origin (0, 0, 2, n0) as an element offset
    const int32_t rows = d.indices[12] & 0xffff, cols = d.indices[13];
    EXPECT_EQ(d.indices[12] >> 16, m < 256 ? 1 : 0) << i;  // M = 296: only the first cluster tile is a pair
    if (rows == 0) {
      EXPECT_TRUE(d.reads[0].empty());
      EXPECT_TRUE(d.reads[2].empty());
      continue;
    }
    // Regions stay in view coords; mapped to the backing they swap rows and columns.
    EXPECT_EQ(d.reads[0], (std::vector<Box>{Box{{0, 0, m, 0}, {1, 1, m + rows, 64}}}));
    EXPECT_EQ(a.range.to_backing(d.reads[0][0]), (Box{{0, 0, 0, m}, {1, 1, 64, m + rows}}));
    EXPECT_EQ(b.range.to_backing(d.reads[1][0]), (Box{{0, 0, n0, 0}, {1, 1, n0 + cols, 64}}));
    EXPECT_EQ(d.reads[2], (std::vector<Box>{Box{{0, 0, 0, n0}, {1, 1, 1, n0 + cols}}}));
    EXPECT_EQ(c.range.to_backing(d.reads[2][0]), (Box{{0, 0, 2, n0}, {1, 1, 3, n0 + cols}}));
  }
  expect_exact_cover(g, n);
}

TEST(GemmIType, PlainIndexLayoutUnchanged) {
  // No flag: 15 words, params "", the seed layout.
  const NodeInfo n = gemm_node({256, 64}, {64, 256}, h200_wide(), 1);
  const InstrDesc d = Gemm().instruction(n, 1);
  EXPECT_EQ(d.indices, (std::vector<int32_t>{0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 128, 0, 128, 256, 64}));
  EXPECT_EQ(d.reads.size(), 2u);
}

TEST(GemmIType, FlagValidation) {
  const Profile p = Profile::h200();
  const Operand x = whole({16, 64}), wt = transposed({32, 64});
  // A transposed view without the flag, and the flag without a transposed view.
  const std::string lacks = error_of([&] { Gemm().validate(node({x, wt}, {bf16({16, 32})}, p)); });
  EXPECT_NE(lacks.find("node 'n0' (megakittens.test.default): input B view"), std::string::npos) << lacks;
  EXPECT_NE(lacks.find("is transposed"), std::string::npos) << lacks;
  EXPECT_NE(lacks.find("lacks the 'tb' flag"), std::string::npos) << lacks;
  const std::string expects = error_of(
      [&] { Gemm(gflags(true, false)).validate(node({x, whole({64, 32})}, {bf16({16, 32})}, p)); });
  EXPECT_NE(expects.find("input A view"), std::string::npos) << expects;
  EXPECT_NE(expects.find("the Gemm expects it transposed"), std::string::npos) << expects;
  // W[:, 1].t() on W (32, 3, 64): rows along backing dim 3, columns along backing dim 1 - neither layout.
  const Operand odd{bf16({32, 3, 64}), TensorRange::full({32, 3, 64}).select(1, 1).transpose(0, 1)};
  EXPECT_FALSE(Gemm::is_transposed(odd.range));
  const std::string o = error_of([&] { Gemm().validate(node({x, odd}, {bf16({16, 32})}, p)); });
  EXPECT_NE(o.find("must keep its last two dims on the backing tensor's last two dims (straight, or swapped with the 'tb' flag), got view dims 2, 3 on backing dims 3, 1"),
            std::string::npos) << o;
  // TMA rows of a transposed A are M long.
  const std::string tma = error_of(
      [&] { Gemm(gflags(true, false)).validate(node({transposed({64, 100}), whole({64, 32})}, {bf16({100, 32})}, p)); });
  EXPECT_NE(tma.find("row stride of A must be a multiple of 16 bytes for TMA, got M=100 elements"), std::string::npos)
      << tma;
  // Bias: count, shape, dtype, layout.
  const Gemm row(gflags(false, true, Gemm::Bias::row)), full(gflags(false, true, Gemm::Bias::full));
  const std::string cnt = error_of([&] { row.validate(node({x, wt}, {bf16({16, 32})}, p)); });
  EXPECT_NE(cnt.find("expects 3 tensor inputs, got 2"), std::string::npos) << cnt;
  const std::string shp = error_of([&] { row.validate(node({x, wt, whole({40})}, {bf16({16, 32})}, p)); });
  EXPECT_NE(shp.find("bias shape [40] must be [N] or [1, N] with N=32"), std::string::npos) << shp;
  const std::string fs = error_of([&] { full.validate(node({x, wt, whole({8, 32})}, {bf16({16, 32})}, p)); });
  EXPECT_NE(fs.find("bias shape [8, 32] must be [M, N] with N=32, M=16"), std::string::npos) << fs;
  Operand f32 = whole({32});
  f32.backing.dtype = DType::f32;
  const std::string dt = error_of([&] { row.validate(node({x, wt, f32}, {bf16({16, 32})}, p)); });
  EXPECT_NE(dt.find("bias must be bfloat16, got float32"), std::string::npos) << dt;
  EXPECT_NE(dt.find(".to(torch.bfloat16)"), std::string::npos) << dt;  // the way out, for a float model
  const std::string tb = error_of([&] { full.validate(node({x, wt, transposed({32, 16})}, {bf16({16, 32})}, p)); });
  EXPECT_NE(tb.find("bias view"), std::string::npos) << tb;
  EXPECT_NE(tb.find("must not be transposed"), std::string::npos) << tb;
  EXPECT_NO_THROW(row.validate(node({x, wt, whole({1, 32})}, {bf16({16, 32})}, p)));
  EXPECT_NO_THROW(full.validate(node({x, wt, whole({16, 32})}, {bf16({16, 32})}, p)));
}

TEST(GemmIType, OtherITypesRejectTransposedViews) {
  const Profile p = Profile::h200();
  const Operand t = transposed({32, 64});
  const std::string u = error_of([&] { ElementwiseUnary({"relu"}).validate(node({t}, {bf16({64, 32})}, p)); });
  EXPECT_NE(u.find("must keep its last two dims on the backing tensor's last two dims"), std::string::npos) << u;
  EXPECT_NE(u.find("on backing dims [-1,-1,3,2]"), std::string::npos) << u;
  const std::string r = error_of([&] { RMSNorm(1e-5, false).validate(node({t}, {bf16({64, 32})}, p)); });
  EXPECT_NE(r.find("must keep its last two dims"), std::string::npos) << r;
  const std::string b = error_of(
      [&] { ElementwiseBinary("add").validate(node({whole({64, 32}), t}, {bf16({64, 32})}, p)); });
  EXPECT_NE(b.find("must keep its last two dims"), std::string::npos) << b;
}

// Runs a Gemm node whose operands live in fresh random slots and compares with a naive fp64 product of
// the views (+ bias, added before the one rounding).
void check_flagged_gemm(const Gemm& g, const std::vector<Operand>& in, Profile p, int cluster) {
  TestCtx ctx;
  std::vector<int> src;
  for (const Operand& op : in) src.push_back(add_slot(ctx, op.backing.shape));
  const Coord4 A = in[0].padded(), B = in[1].padded();
  const int64_t M = A[2], K = A[3], N = B[3];
  Shape ds(in[0].shape().begin(), in[0].shape().end() - 1);
  ds.push_back(N);
  const int d = add_slot(ctx, ds, false);
  run_node(g, node(in, {bf16(ds)}, p, cluster), ctx, src, d);
  const auto av = view_values(ctx, src[0], in[0].range), bv = view_values(ctx, src[1], in[1].range);
  std::vector<double> cv;
  Coord4 C{1, 1, 1, 1};
  if (in.size() > 2) cv = view_values(ctx, src[2], in[2].range), C = in[2].padded();
  std::vector<double> want;
  for (int64_t z0 = 0; z0 < A[0]; ++z0)
    for (int64_t z1 = 0; z1 < A[1]; ++z1)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          const int64_t z = z0 * A[1] + z1;
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += av[(z * M + m) * K + k] * bv[(z * K + k) * N + n];
          if (!cv.empty()) {
            const int64_t c0 = C[0] > 1 ? z0 : 0, c1 = C[1] > 1 ? z1 : 0, cm = C[2] > 1 ? m : 0;
            acc += cv[((c0 * C[1] + c1) * C[2] + cm) * C[3] + n];
          }
          want.push_back(acc);
        }
  EXPECT_TRUE(close(ctx.slots[d].data, want)) << g.str() << " " << p.name << " cluster " << cluster;
}

TEST(GemmIType, ExecuteFlagsMatchNaive) {
  for (bool pair : {false, true})
    for (int cluster : {1, 2}) {
      Profile p = pair ? Profile::b200() : Profile::h200();
      p.gemm_cta_m = 16;
      p.gemm_n = 32;
      // Batched A = X[1].transpose(-1, -2) of X (3, 2, 24, 40): (2, 40, 24); B = Y.transpose(1, 2) of
      // Y (2, 72, 24): (2, 24, 72); ragged rows and columns.
      const Operand a{bf16({3, 2, 24, 40}), TensorRange::full({3, 2, 24, 40}).select(0, 1).transpose(1, 2)};
      const Operand as = whole({2, 40, 24});
      const Operand b = transposed({2, 72, 24}), bs = whole({2, 24, 72});
      using B = Gemm::Bias;
      check_flagged_gemm(Gemm(gflags(true, false)), {a, bs}, p, cluster);
      check_flagged_gemm(Gemm(gflags(false, true)), {as, b}, p, cluster);
      check_flagged_gemm(Gemm(gflags(true, true)), {a, b}, p, cluster);
      // Bias: a row of stacked biases (offset origin), broadcast over batches and rows.
      const Operand row{bf16({3, 72}), TensorRange::full({3, 72}).select(0, 1)};
      check_flagged_gemm(Gemm(gflags(true, true, B::row)), {a, b, row}, p, cluster);
      // Per-batch rows (2, 1, 72), a full (40, 72) broadcast over batches, a full per-batch (2, 40, 72)
      // sliced out of a wider tensor.
      check_flagged_gemm(Gemm(gflags(false, true, B::row)), {as, b, whole({2, 1, 72})}, p, cluster);
      check_flagged_gemm(Gemm(gflags(true, false, B::full)), {a, bs, whole({40, 72})}, p, cluster);
      const Operand wide{bf16({2, 48, 80}), TensorRange::full({2, 48, 80}).slice(1, 8, 48).slice(2, 8, 80)};
      check_flagged_gemm(Gemm(gflags(false, false, B::full)), {as, bs, wide}, p, cluster);
    }
}

// ---- Attention ----

NodeInfo attn_node(int B, int H, int Hk, int Sq, int Sk, int D, Profile p, int cluster) {
  return node({whole({B, H, Sq, D}), whole({B, Hk, Sk, D}), whole({B, Hk, Sk, D})}, {bf16({B, H, Sq, D})},
              std::move(p), cluster);
}

TEST(AttentionIType, Tiling) {
  const Attention full(false, 0.125), causal(true, 0.125);
  const NodeInfo n = attn_node(1, 4, 2, 1024, 1024, 128, Profile::b200(), 2);
  full.validate(n);
  ASSERT_EQ(full.num_instructions(n), 16);
  EXPECT_EQ(full.instruction(n, 0).indices, (std::vector<int32_t>{0, 0, 0, 0, 256, 1024, 128}));
  EXPECT_EQ(full.instruction(n, 3).indices, (std::vector<int32_t>{0, 0, 0, 768, 256, 1024, 128}));
  EXPECT_EQ(full.instruction(n, 4).indices, (std::vector<int32_t>{0, 1, 0, 0, 256, 1024, 128}));
  EXPECT_EQ(full.instruction(n, 10).indices, (std::vector<int32_t>{0, 2, 1, 512, 256, 1024, 128}));
  // Causal: longest query tiles first; kv_end stops after the rank's last row.
  EXPECT_EQ(causal.instruction(n, 0).indices, (std::vector<int32_t>{0, 0, 0, 512, 256, 768, 128}));
  EXPECT_EQ(causal.instruction(n, 1).indices, (std::vector<int32_t>{0, 0, 0, 768, 256, 1024, 128}));
  EXPECT_EQ(causal.instruction(n, 2).indices, (std::vector<int32_t>{0, 0, 0, 0, 256, 256, 128}));
  const InstrDesc d = causal.instruction(n, 0);  // pair tiles: q and o cover the cluster tile
  EXPECT_EQ(d.reads[0], (std::vector<Box>{Box{{0, 0, 512, 0}, {1, 1, 1024, 128}}}));
  EXPECT_EQ(d.writes[0], d.reads[0]);
  EXPECT_EQ(d.reads[1], (std::vector<Box>{Box{{0, 0, 0, 0}, {1, 1, 768, 128}}}));
  EXPECT_EQ(d.reads[2], d.reads[1]);
  expect_exact_cover(causal, n, 2);

  // h200, Sq = 300, cluster 2: tiles [0, 256) and [256, 512); rank 1 of the second is empty.
  const NodeInfo h = attn_node(2, 2, 1, 300, 200, 64, Profile::h200(), 2);
  ASSERT_EQ(full.num_instructions(h), 2 * 2 * 2 * 2);
  EXPECT_EQ(full.instruction(h, 2).indices, (std::vector<int32_t>{0, 0, 0, 256, 44, 200, 64}));
  const InstrDesc e = full.instruction(h, 3);
  EXPECT_EQ(e.indices[4], 0);
  EXPECT_TRUE(e.reads[0].empty());
  EXPECT_TRUE(e.writes[0].empty());
  EXPECT_EQ(causal.instruction(h, 0).indices, (std::vector<int32_t>{0, 0, 0, 256, 44, 200, 64}));
  EXPECT_EQ(causal.instruction(h, 2).indices, (std::vector<int32_t>{0, 0, 0, 0, 128, 128, 64}));
  expect_exact_cover(causal, h);
  expect_exact_cover(full, h);

  // h200 reads K/V in whole kv blocks of attn_kv_block = 128 rows ([Note: attention kv blocks]):
  // Sq = 100 < Sk = 1000, causal: kv_end = 100, K/V rows [0, 128) read; Sk = 90: clipped to [0, 90).
  const NodeInfo r = attn_node(1, 1, 1, 100, 1000, 128, Profile::h200(), 1);
  const InstrDesc rd = causal.instruction(r, 0);
  EXPECT_EQ(rd.indices, (std::vector<int32_t>{0, 0, 0, 0, 100, 100, 128}));
  EXPECT_EQ(rd.reads[1], (std::vector<Box>{Box{{0, 0, 0, 0}, {1, 1, 128, 128}}}));
  EXPECT_EQ(causal.instruction(attn_node(1, 1, 1, 100, 90, 64, Profile::h200(), 1), 0).reads[2],
            (std::vector<Box>{Box{{0, 0, 0, 0}, {1, 1, 90, 64}}}));
}

TEST(AttentionIType, Validate) {
  const Attention t(false, 0.125);
  const Profile p = Profile::h200();
  const std::string d = error_of([&] { t.validate(attn_node(1, 2, 2, 64, 64, 96, p, 1)); });
  EXPECT_NE(d.find("'n0'"), std::string::npos) << d;
  EXPECT_NE(d.find("D=96"), std::string::npos) << d;
  const std::string g = error_of([&] { t.validate(attn_node(1, 3, 2, 64, 64, 64, p, 1)); });
  EXPECT_NE(g.find("H=3, Hk=2"), std::string::npos) << g;
  const std::string sk = error_of([&] { t.validate(attn_node(1, 2, 2, 64, 0, 64, p, 1)); });
  EXPECT_NE(sk.find("Sk=0"), std::string::npos) << sk;
  NodeInfo sliced = attn_node(1, 2, 2, 64, 64, 64, p, 1);
  sliced.inputs[0] = {bf16({1, 2, 128, 64}), TensorRange::full({1, 2, 128, 64}).slice(2, 0, 64)};
  const std::string s = error_of([&] { t.validate(sliced); });
  EXPECT_NE(s.find("whole (B, H, S, D) tensor"), std::string::npos) << s;
  // (B, S, H, D) backings read through transpose(1, 2): accepted with the bshd mask, which the views set.
  const Operand qt{bf16({1, 64, 2, 64}), TensorRange::full({1, 64, 2, 64}).transpose(1, 2)};
  NodeInfo bshd = attn_node(1, 2, 2, 64, 64, 64, p, 1);
  bshd.inputs[0] = bshd.inputs[2] = qt;
  EXPECT_EQ(Attention::bshd_for({qt.range, bshd.inputs[1].range, qt.range}), Attention::kBshdQ | Attention::kBshdV);
  Attention(false, 0.125, Attention::kBshdQ | Attention::kBshdV).validate(bshd);
  EXPECT_TRUE(t.reads_view(0, qt.range, qt.backing.padded()));  // read in place: no copy node
  EXPECT_FALSE(t.reads_view(0, sliced.inputs[0].range, sliced.inputs[0].backing.padded()));
  EXPECT_EQ(Attention(false, 0.125, 5).params(), "causal=0,scale=0.125,bshd=qv");
  const std::string m = error_of([&] { Attention(false, 0.125, Attention::kBshdQ).validate(bshd); });
  EXPECT_NE(m.find("v must be a whole (B, H, S, D) tensor"), std::string::npos) << m;
  // Any other permutation (here (B, D, S, H) seen as (B, H, S, D)) is rejected.
  NodeInfo perm = attn_node(1, 2, 2, 64, 64, 64, p, 1);
  perm.inputs[1] = {bf16({1, 64, 64, 2}), TensorRange::full({1, 64, 64, 2}).permute({0, 3, 2, 1})};
  EXPECT_EQ(Attention::bshd_for({perm.inputs[0].range, perm.inputs[1].range}), 0u);
  const std::string pm = error_of([&] { t.validate(perm); });
  EXPECT_NE(pm.find("k must be a whole"), std::string::npos) << pm;
  NodeInfo kv = attn_node(1, 2, 2, 64, 64, 64, p, 1);
  kv.inputs[2] = whole({1, 2, 32, 64});
  EXPECT_THROW(t.validate(kv), CompileError);
  EXPECT_THROW(t.validate(node({whole({2, 64, 64}), whole({2, 64, 64}), whole({2, 64, 64})}, {bf16({2, 64, 64})}, p)),
               CompileError);
}

TEST(AttentionIType, MaskReadsAndValidate) {
  // [Note: attention mask] input 3, (B|1, H|1, Sq|1, Sk): read boxes on its own dims (a dim of extent 1 is
  // broadcast), rows of the tile, keys [0, kv_end).
  const Attention t(false, 0.125, 0, true), tc(true, 0.125, 0, true);
  const Profile p = Profile::h200();
  NodeInfo n = attn_node(2, 4, 2, 300, 300, 64, p, 1);
  n.inputs.push_back(whole({2, 1, 300, 300}));
  t.validate(n);
  EXPECT_EQ(t.params(), "causal=0,scale=0.125,mask=add");
  EXPECT_TRUE(t.late_input(3) && !t.late_input(0) && !Attention(false, 0.125).late_input(3));
  const InstrDesc d = t.instruction(n, 5);  // b 0, h 1, rows [256, 300)
  ASSERT_EQ(d.reads.size(), 4u);
  EXPECT_EQ(d.reads[3], (std::vector<Box>{Box{{0, 0, 256, 0}, {1, 1, 300, 300}}}));
  EXPECT_EQ(tc.instruction(n, 10).reads[3], (std::vector<Box>{Box{{0, 0, 128, 0}, {1, 1, 256, 256}}}));  // causal
  n.inputs[3] = whole({1, 4, 1, 300});  // a key mask per head, broadcast over batch and rows
  t.validate(n);
  EXPECT_EQ(t.instruction(n, 5).reads[3], (std::vector<Box>{Box{{0, 1, 0, 0}, {1, 2, 1, 300}}}));  // b 0, h 1
  // The same through an expand: the view is (B, H, Sq, Sk), the backing keeps its 1s; read in place.
  n.inputs[3] = {bf16({1, 1, 1, 300}), TensorRange::full({1, 1, 1, 300}).expand({2, 4, 300, 300})};
  t.validate(n);
  EXPECT_TRUE(t.reads_view(3, n.inputs[3].range, n.inputs[3].backing.padded()));
  // Errors: Sk broadcast, another dim neither 1 nor full, fp32, a sliced mask (the tracer copies it).
  for (const Operand& bad : {whole({2, 1, 300, 1}), whole({2, 2, 300, 300}), Operand{TensorMeta{DType::f32, {2, 1, 300, 300}, "cpu"},
                             TensorRange::full({2, 1, 300, 300})}}) {
    n.inputs[3] = bad;
    EXPECT_THROW(t.validate(n), CompileError);
  }
  const Operand sliced{bf16({2, 1, 300, 400}), TensorRange::full({2, 1, 300, 400}).slice(3, 0, 300)};
  EXPECT_FALSE(t.reads_view(3, sliced.range, sliced.backing.padded()));
  n.inputs[3] = whole({2, 1, 300, 300});
  n.inputs.pop_back();
  const std::string e = error_of([&] { t.validate(n); });
  EXPECT_NE(e.find("expects 4 tensor inputs"), std::string::npos) << e;
}

TEST(AttentionIType, ExecuteMatchesNaive) {
  for (bool causal : {false, true})
    for (bool pair : {false, true})
      for (auto [Sq, Sk] : {std::pair{40, 40}, std::pair{40, 56}, std::pair{50, 24}}) {
        Profile p = pair ? Profile::b200() : Profile::h200();
        p.attn_cta_q = 16;
        p.attn_kv_block = pair ? 1 : 16;
        const int B = 2, H = 4, Hk = 2, D = 64;
        const double scale = 0.2;
        // q and v as (B, S, H, D) tensors read through transpose(1, 2) when not pair (the bshd mask).
        const unsigned bshd = pair ? 0u : Attention::kBshdQ | Attention::kBshdV;
        TestCtx ctx;
        const int q = bshd ? add_slot(ctx, {B, Sq, H, D}) : add_slot(ctx, {B, H, Sq, D});
        const int k = add_slot(ctx, {B, Hk, Sk, D});
        const int v = bshd ? add_slot(ctx, {B, Sk, Hk, D}) : add_slot(ctx, {B, Hk, Sk, D});
        const int o = add_slot(ctx, {B, H, Sq, D}, false);
        const Attention t(causal, scale, bshd);
        NodeInfo n = attn_node(B, H, Hk, Sq, Sk, D, p, 2);
        if (bshd) {
          n.inputs[0] = {bf16({B, Sq, H, D}), TensorRange::full({B, Sq, H, D}).transpose(1, 2)};
          n.inputs[2] = {bf16({B, Sk, Hk, D}), TensorRange::full({B, Sk, Hk, D}).transpose(1, 2)};
        }
        run_node(t, n, ctx, {q, k, v}, o);
        std::vector<float> qv = ctx.slots[q].data, kv = ctx.slots[k].data, vv = ctx.slots[v].data;
        auto to_bhsd = [&](const std::vector<float>& x, int Hx, int S) {  // (B, S, Hx, D) -> (B, Hx, S, D)
          std::vector<float> y(x.size());
          for (int b = 0; b < B; ++b)
            for (int s = 0; s < S; ++s)
              for (int h = 0; h < Hx; ++h)
                for (int c = 0; c < D; ++c) y[((b * Hx + h) * S + s) * D + c] = x[((b * S + s) * Hx + h) * D + c];
          return y;
        };
        if (bshd) qv = to_bhsd(qv, H, Sq), vv = to_bhsd(vv, Hk, Sk);
        std::vector<double> want;
        for (int b = 0; b < B; ++b)
          for (int h = 0; h < H; ++h)
            for (int i = 0; i < Sq; ++i) {
              const int hk = h / (H / Hk), n = causal ? std::min(Sk, i + 1) : Sk;
              std::vector<double> s(n);
              double mx = -1e300, sum = 0;
              for (int j = 0; j < n; ++j) {
                for (int c = 0; c < D; ++c)
                  s[j] += double(qv[((b * H + h) * Sq + i) * D + c]) * kv[((b * Hk + hk) * Sk + j) * D + c];
                s[j] *= scale;
                mx = std::max(mx, s[j]);
              }
              for (int j = 0; j < n; ++j) sum += s[j] = std::exp(s[j] - mx);
              for (int c = 0; c < D; ++c) {
                double acc = 0;
                for (int j = 0; j < n; ++j) acc += s[j] / sum * vv[((b * Hk + hk) * Sk + j) * D + c];
                want.push_back(acc);
              }
            }
        EXPECT_TRUE(close(ctx.slots[o].data, want)) << t.str() << " pair " << pair << " Sq " << Sq << " Sk " << Sk;
      }
}

TEST(ITypeCompare, NaNFails) {
  EXPECT_FALSE(close({std::numeric_limits<float>::quiet_NaN()}, {1.0}));
  EXPECT_FALSE(close({1.0f, 2.5f}, {1.0, 2.0}));
  EXPECT_TRUE(close({1.0f, 2.001f}, {1.0, 2.0}));
}

}  // namespace
}  // namespace mk
