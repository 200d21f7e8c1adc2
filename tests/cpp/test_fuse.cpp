// The FX-level RMSNorm fusion (trace/fuse_rms_norm): F.rms_norm's and LlamaRMSNorm's decompositions
// become one RMSNorm node; a decomposition whose intermediates are used elsewhere is left alone.
#include <gtest/gtest.h>

#include "fx_builder.h"
#include "ir/error.h"
#include "itypes/elementwise_fused.h"
#include "itypes/rms_norm.h"
#include "trace/fuse_residual.h"
#include "trace/fuse_rms_norm.h"
#include "trace/fuse_rope.h"
#include "trace/fuse_swiglu.h"
#include "trace/tracer.h"

using namespace mk;
using namespace mk::test;

namespace {

FxArg kw_dtype(const char* d) { return str(std::string("torch.") + d); }

// x (R, C) bf16 -> the decomposition up to m = h * rsqrt(mean(h^2) + eps); returns (builder, x, w, m, h).
struct Decomposed {
  GraphBuilder b;
  int x, w, h, m;
  explicit Decomposed(bool f_form, bool square_by_mul = false) {
    x = b.placeholder("x", {8, 64});
    w = b.placeholder("w", {64});
    h = b.call("_to_copy", "aten._to_copy.default", {ref(x)}, {8, 64}, "float32");
    b.g.nodes[h].kwargs = {{"dtype", kw_dtype("float32")}};
    const int p = square_by_mul ? b.call("mul_0", "aten.mul.Tensor", {ref(h), ref(h)}, {8, 64}, "float32")
                                : b.call("pow_1", "aten.pow.Tensor_Scalar", {ref(h), num(2)}, {8, 64}, "float32");
    const int mean = b.call("mean", "aten.mean.dim", {ref(p), list({num(f_form ? 1 : -1)}), FxArg{FxArg::Kind::Bool, 1}},
                            {8, 1}, "float32");
    const int add = b.call("add", f_form ? "aten.add.Scalar" : "aten.add.Tensor", {ref(mean), real(1e-5)}, {8, 1},
                           "float32");
    const int r = b.call("rsqrt", "aten.rsqrt.default", {ref(add)}, {8, 1}, "float32");
    m = b.call("mul", "aten.mul.Tensor", {ref(h), ref(r)}, {8, 64}, "float32");
  }
  int cast(int src, const std::string& name) {
    const int c = b.call(name, "aten._to_copy.default", {ref(src)}, {8, 64});
    b.g.nodes[c].kwargs = {{"dtype", kw_dtype("bfloat16")}};
    return c;
  }
};

void expect_one_rms_norm(const FxGraph& g, bool weight) {
  const DAG d = trace(g);
  int compute = 0;
  for (const Node& n : d.nodes)
    if (n.is_compute()) {
      ++compute;
      const auto* r = dynamic_cast<const RMSNorm*>(n.itype.get());
      ASSERT_NE(r, nullptr) << n.itype->str();
      EXPECT_FLOAT_EQ(static_cast<float>(r->eps()), 1e-5f);
      EXPECT_EQ(r->has_weight(), weight);
    }
  EXPECT_EQ(compute, 1);
}

}  // namespace

TEST(FuseRMSNorm, FunctionalForm) {  // mul by the weight in fp32, then cast back
  Decomposed d(true);
  const int y32 = d.b.call("mul_1", "aten.mul.Tensor", {ref(d.m), ref(d.w)}, {8, 64}, "float32");
  d.b.output({d.cast(y32, "_to_copy_1")});
  expect_one_rms_norm(d.b.g, true);
}

TEST(FuseRMSNorm, LlamaForm) {  // cast back, then the weight in bf16
  Decomposed d(false);
  const int c = d.cast(d.m, "_to_copy_1");
  d.b.output({d.b.call("mul_1", "aten.mul.Tensor", {ref(d.w), ref(c)}, {8, 64})});
  expect_one_rms_norm(d.b.g, true);
}

TEST(FuseRMSNorm, GptFastForm) {  // h * h instead of pow(h, 2), cast back, then the weight on the right
  Decomposed d(false, true);
  const int c = d.cast(d.m, "_to_copy_1");
  d.b.output({d.b.call("mul_1", "aten.mul.Tensor", {ref(c), ref(d.w)}, {8, 64})});
  expect_one_rms_norm(d.b.g, true);
}

TEST(FuseRMSNorm, SquareOfAnotherTensorIsLeftAlone) {  // h * x is no square: nothing fuses
  Decomposed d(false, true);
  d.b.g.nodes[d.h + 1].args[1] = ref(d.x);
  d.b.output({d.cast(d.m, "_to_copy_1")});
  FxGraph g = d.b.g;
  EXPECT_EQ(fuse_decomposed_rms_norm(g), 0);
}

TEST(FuseRMSNorm, WithoutWeight) {
  Decomposed d(true);
  d.b.output({d.cast(d.m, "_to_copy_1")});
  expect_one_rms_norm(d.b.g, false);
}

TEST(FuseRMSNorm, SharedIntermediateIsLeftAlone) {
  Decomposed d(true);
  const int c = d.cast(d.m, "_to_copy_1");
  const int h2 = d.cast(d.h, "_to_copy_2");  // a second use of the fp32 upcast
  d.b.output({c, h2});
  FxGraph g = d.b.g;
  EXPECT_EQ(fuse_decomposed_rms_norm(g), 0);
  // Unfused, every op still has an instruction type: the mean is a RowReduce, nothing is an RMSNorm.
  const DAG dag = trace(d.b.g);
  int reduce = 0;
  for (const Node& n : dag.nodes)
    if (n.is_compute()) {
      EXPECT_EQ(dynamic_cast<const RMSNorm*>(n.itype.get()), nullptr) << n.name;
      reduce += n.itype->str() == "RowReduce(op=mean,keepdim)";
    }
  EXPECT_EQ(reduce, 1);
}

// ---- RoPE (trace/fuse_rope) ----

namespace {

// x (1, 8, 4, 64) bf16 [-> fp32], cos/sin (8, 1, 64) fp32: r = X * cos + rotate_half(X) * sin.
struct RopeGraph {
  GraphBuilder b;
  int x, cos, sin, X, add;
  RopeGraph(bool upcast, bool swap, int64_t hi_end = 9223372036854775807LL) {
    const std::vector<int64_t> s{1, 8, 4, 64}, h{1, 8, 4, 32};
    const char* dt = upcast ? "float32" : "bfloat16";
    x = b.placeholder("x", s);
    cos = b.placeholder("cos", {8, 1, 64}, dt);
    sin = b.placeholder("sin", {8, 1, 64}, dt);
    X = x;
    if (upcast) {
      X = b.call("_to_copy", "aten._to_copy.default", {ref(x)}, s, "float32");
      b.g.nodes[X].kwargs = {{"dtype", str("torch.float32")}};
    }
    const int m1 = b.call("mul", "aten.mul.Tensor", swap ? std::vector<FxArg>{ref(cos), ref(X)}
                                                         : std::vector<FxArg>{ref(X), ref(cos)}, s, dt);
    const int s1 = b.call("slice_1", "aten.slice.Tensor", {ref(X), num(3), num(32), num(hi_end)}, h, dt);
    const int n1 = b.call("neg", "aten.neg.default", {ref(s1)}, h, dt);
    const int s2 = b.call("slice_2", "aten.slice.Tensor", {ref(X), num(3), num(0), num(32)}, h, dt);
    const int cat = b.call("cat", "aten.cat.default", {list({ref(n1), ref(s2)}), num(-1)}, s, dt);
    const int m2 = b.call("mul_1", "aten.mul.Tensor", {ref(cat), ref(sin)}, s, dt);
    add = b.call("add", "aten.add.Tensor", swap ? std::vector<FxArg>{ref(m2), ref(m1)}
                                                : std::vector<FxArg>{ref(m1), ref(m2)}, s, dt);
  }
  int cast_back() {
    const int c = b.call("_to_copy_1", "aten._to_copy.default", {ref(add)}, {1, 8, 4, 64});
    b.g.nodes[c].kwargs = {{"dtype", str("torch.bfloat16")}};
    return c;
  }
};

void expect_one_rope(const FxGraph& g) {
  const DAG d = trace(g);
  int compute = 0;
  for (const Node& n : d.nodes)
    if (n.is_compute()) {
      ++compute;
      EXPECT_EQ(n.itype->str(), "Rope(bcast=0010)");  // cos (8, 1, 64) broadcasts over the heads
    }
  EXPECT_EQ(compute, 1);
}

}  // namespace

TEST(FuseRope, Fp32FormWithCasts) {  // examples/llama.py: x.float() ... .type_as(x)
  RopeGraph r(true, false);
  r.b.output({r.cast_back()});
  FxGraph g = r.b.g;
  EXPECT_EQ(fuse_rope(g), 1);
  expect_one_rope(r.b.g);
}

TEST(FuseRope, PlainFormOperandsSwapped) {  // Hugging Face in bf16, cos * q and the add reversed
  RopeGraph r(false, true);
  r.b.output({r.add});
  FxGraph g = r.b.g;
  EXPECT_EQ(fuse_rope(g), 1);
  EXPECT_EQ(g.nodes[r.add].target, "megakittens.rope.default");
  expect_one_rope(r.b.g);
}

TEST(FuseRope, WrongHalvesAndSharedIntermediatesAreLeftAlone) {
  RopeGraph wrong(false, false, 48);  // x[..., 32:48] is no half
  wrong.b.output({wrong.add});
  EXPECT_EQ(fuse_rope(wrong.b.g), 0);
  RopeGraph shared(true, false);  // the fp32 product also leaves the graph
  const int c = shared.cast_back();
  shared.b.output({c, shared.add - 1});
  FxGraph g = shared.b.g;
  EXPECT_EQ(fuse_rope(g), 0);
}

namespace {
// linear(in, w) as AOTAutograd emits it for in (1, 64, 128), w (256, 128): view(in) to 2-D, mm by t(w),
// _unsafe_view back to (1, 64, 256); returns that last node. `tag` suffixes the node names.
int aot_linear(GraphBuilder& b, int in, int w, const std::string& tag) {
  FxTensor wt = contiguous({128, 256});
  wt.stride = {1, 128};
  const int v = b.call("view_" + tag, "aten.view.default", {ref(in), list({num(64), num(128)})}, {64, 128});
  const int t = b.add("t_" + tag, "call_function", "aten.t.default", {ref(w)}, wt);
  const int m = b.call("mm_" + tag, "aten.mm.default", {ref(v), ref(t)}, {64, 256});
  return b.call("uv_" + tag, "aten._unsafe_view.default", {ref(m), list({num(1), num(64), num(256)})}, {1, 64, 256});
}

// The ITypes of the compute nodes of `g`'s DAG, in order.
std::vector<std::string> traced_itypes(const FxGraph& g) {
  std::vector<std::string> itypes;
  for (const Node& n : trace(g).nodes)
    if (n.is_compute()) itypes.push_back(n.itype->str());
  return itypes;
}

// h + linear(x, W), then add.Tensor(h, .).
FxGraph residual_graph(bool swap, bool extra_user) {
  GraphBuilder b;
  const int h = b.placeholder("h", {1, 64, 256});
  const int x = b.placeholder("x", {1, 64, 128});
  const int w = b.placeholder("w", {256, 128});
  const int v = aot_linear(b, x, w, "w");
  const int a = b.call("add", "aten.add.Tensor", swap ? std::vector<FxArg>{ref(v), ref(h)} : std::vector<FxArg>{ref(h), ref(v)},
                       {1, 64, 256});
  std::vector<int> outs{a};
  if (extra_user) outs.push_back(v);
  b.output(outs);
  return b.g;
}
}  // namespace

TEST(FuseResidual, AddBecomesTheGemmsFullBias) {
  for (bool swap : {false, true}) {
    FxGraph g = residual_graph(swap, false);
    EXPECT_EQ(fuse_residual_add(g), 1);
    EXPECT_EQ(traced_itypes(residual_graph(swap, false)), (std::vector<std::string>{"Gemm(tb,bias_full)"})) << swap;
  }
}

TEST(FuseResidual, OtherUsersOfTheProductKeepTheAdd) {
  FxGraph g = residual_graph(false, true);
  EXPECT_EQ(fuse_residual_add(g), 0);
}

namespace {
// silu(linear(x, Wg)) * linear(x, Wu). other_x: the up projection reads another tensor; extra_user: the
// gate product also leaves the graph.
FxGraph swiglu_graph(bool swap, bool other_x, bool extra_user) {
  GraphBuilder b;
  const int x = b.placeholder("x", {1, 64, 128});
  const int y = b.placeholder("y", {1, 64, 128});
  const int wg = b.placeholder("wg", {256, 128});
  const int wu = b.placeholder("wu", {256, 128});
  const int g = aot_linear(b, x, wg, "g");
  const int s = b.call("silu", "aten.silu.default", {ref(g)}, {1, 64, 256});
  const int u = aot_linear(b, other_x ? y : x, wu, "u");
  const int m = b.call("mul", "aten.mul.Tensor", swap ? std::vector<FxArg>{ref(u), ref(s)} : std::vector<FxArg>{ref(s), ref(u)},
                       {1, 64, 256});
  std::vector<int> outs{m};
  if (extra_user) outs.push_back(g);
  b.output(outs);
  return b.g;
}
}  // namespace

TEST(FuseSwiglu, GateAndUpBecomeOneGemm) {
  for (bool swap : {false, true}) {
    FxGraph g = swiglu_graph(swap, false, false);
    EXPECT_EQ(fuse_swiglu(g), 1);
    EXPECT_EQ(traced_itypes(swiglu_graph(swap, false, false)), (std::vector<std::string>{"Gemm(tb,swiglu)"})) << swap;
  }
}

TEST(FuseSwiglu, OtherInputsOrUsersAreLeftAlone) {
  FxGraph other = swiglu_graph(false, true, false);
  EXPECT_EQ(fuse_swiglu(other), 0);
  FxGraph shared = swiglu_graph(false, false, true);
  EXPECT_EQ(fuse_swiglu(shared), 0);
}

// ---- The DAG-level elementwise fusion (trace/fuse_elementwise) ----

namespace {

std::vector<const Node*> computes(const DAG& d) {
  std::vector<const Node*> out;
  for (const Node& n : d.nodes)
    if (n.is_compute()) out.push_back(&n);
  return out;
}

}  // namespace

TEST(FuseElementwise, ChainOfTwentyOpsIsOneInstructionType) {  // benchmarks/run.py chain20
  GraphBuilder b;
  const int x0 = b.placeholder("x", {64, 128}), y = b.placeholder("y", {64, 128});
  const char* unary[] = {"aten.relu.default", "aten.abs.default", "aten.neg.default", "aten.exp.default", "aten.sqrt.default"};
  int x = x0;
  for (int i = 0; i < 20; ++i)
    x = i % 2 ? b.call("add_" + std::to_string(i), "aten.add.Tensor", {ref(x), ref(y)}, {64, 128})
              : b.call("u_" + std::to_string(i), unary[(i / 2) % 5], {ref(x)}, {64, 128});
  b.output({x});
  const DAG d = trace(b.g);
  const auto c = computes(d);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->name, "add_19");  // the root keeps its place and name
  const auto* f = dynamic_cast<const ElementwiseFused*>(c[0]->itype.get());
  ASSERT_NE(f, nullptr) << c[0]->itype->str();
  EXPECT_EQ(f->inputs(), 2);
  EXPECT_EQ(f->steps().size(), 20u);
  EXPECT_EQ(d.nodes[c[0]->inputs[0].node].name, "x");
  EXPECT_EQ(d.nodes[c[0]->inputs[1].node].name, "y");
  EXPECT_EQ(f->params().substr(0, 61), "x2: relu(x0):f32; add(t0,x1):f32; abs(t1):f32; add(t2,x1):f32");
  EXPECT_EQ(trace(b.g, /*fuse=*/false).nodes.size(), 23u);  // fuse=False keeps every op
}

TEST(FuseElementwise, SharedOrViewedIntermediatesStay) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128}), y = b.placeholder("y", {64, 128});
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {64, 128});
  const int s = b.call("sigmoid", "aten.sigmoid.default", {ref(r)}, {64, 128});
  const int m = b.call("mul", "aten.mul.Tensor", {ref(r), ref(s)}, {64, 128});  // a diamond: fuses
  const int a = b.call("add", "aten.add.Tensor", {ref(m), ref(y)}, {64, 128});
  const int t = b.call("t", "aten.t.default", {ref(a)}, {128, 64});
  const int e = b.call("exp", "aten.exp.default", {ref(t)}, {128, 64});  // reads `add` transposed
  const int n = b.call("neg", "aten.neg.default", {ref(e)}, {128, 64});
  b.output({n, m});  // `mul` is an output as well
  const DAG d = trace(b.g);
  std::vector<std::string> got;
  for (const Node* c : computes(d)) got.push_back(c->name + " " + c->itype->str());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "mul ElementwiseFused(x1: relu(x0):f32; sigmoid(t0):f32; mul(t0,t1):bf16)",
                     "add ElementwiseBinary(op=add,alpha=1)",
                     "exp_in0_copy Copy(src=32)",  // the transposed view, materialised
                     "neg ElementwiseFused(x1: exp(x0):f32; neg(t0):bf16)"}));
}

TEST(FuseElementwise, AtMostTwoOuterInputsAndBroadcastMasks) {
  GraphBuilder b;
  const int x = b.placeholder("x", {16, 64}), w = b.placeholder("w", {64}), c = b.placeholder("c", {16, 1});
  const int m = b.call("mul", "aten.mul.Tensor", {ref(x), ref(w)}, {16, 64});
  const int s = b.call("sub", "aten.sub.Tensor", {ref(m), ref(c)}, {16, 64});  // a third input: a new group
  const int r = b.call("relu", "aten.relu.default", {ref(s)}, {16, 64});
  const int h = b.call("mul_1", "aten.mul.Tensor", {ref(r), real(0.5)}, {16, 64}, "float32");
  b.output({h});
  const DAG d = trace(b.g);
  std::vector<std::string> got;
  for (const Node* n : computes(d)) got.push_back(n->name + " " + n->itype->str());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "mul ElementwiseBinary(op=mul,alpha=1,bcast_b=0010)",
                     "mul_1 ElementwiseFused(x2: sub(x0,x1):f32; relu(t0):f32; mul_scalar:0.5(t1):f32; bcast_x1=0001)"}));
}

// [Note: fused rounding]: bf16 intermediates stay fp32 (an op list too), float16 ones are rounded (range).
TEST(FuseElementwise, IntermediatesStayFp32ExceptFloat16) {
  for (const char* dt : {"bfloat16", "float16"}) {
    GraphBuilder b;
    const int x = b.placeholder("x", {8, 128}, dt);
    const int r = b.call("rsub", "aten.rsub.Scalar", {ref(x), num(1)}, {8, 128}, dt);  // neg, add_scalar:1
    const int e = b.call("exp", "aten.exp.default", {ref(r)}, {8, 128}, dt);
    const int n = b.call("neg", "aten.neg.default", {ref(e)}, {8, 128}, dt);
    b.output({n});
    const DAG d = trace(b.g);
    const auto c = computes(d);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]->itype->str(), std::string(dt) == "bfloat16"
                                      ? "ElementwiseFused(x1: neg(x0):f32; add_scalar:1(t0):f32; exp(t1):f32; neg(t2):bf16)"
                                      : "ElementwiseFused(x1: neg(x0):f32; add_scalar:1(t0):f16; exp(t1):f16; neg(t2):f16)");
  }
}

TEST(FuseElementwise, ConstructorChecksItsSteps) {
  FusedStep relu;
  relu.unary = UnaryStep::parse("relu");
  relu.a = 0;
  relu.dtype = DType::bf16;
  auto err = [](auto f) {
    try {
      f();
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err([&] { ElementwiseFused(3, {relu}); }).find("3 inputs; it takes 1 to 2"), std::string::npos);
  EXPECT_NE(err([&] { ElementwiseFused(1, {}); }).find("0 steps"), std::string::npos);
  FusedStep later = relu;
  later.a = 1;  // step 0 reading itself
  EXPECT_NE(err([&] { ElementwiseFused(1, {later}); }).find("neither an input nor an earlier step"), std::string::npos);
  EXPECT_NE(err([&] { ElementwiseFused(1, {relu, relu}); }).find("nothing reads step 0"), std::string::npos);
  EXPECT_NE(err([&] { ElementwiseFused(2, {relu}); }).find("no step reads input x1"), std::string::npos);
  EXPECT_EQ(err([&] { ElementwiseFused(1, {relu}); }), "no error");
}
