// Tracer tests: FX graphs built by hand, as megakittens/fx_export.py would hand them over.
#include <gtest/gtest.h>

#include "fx_builder.h"
#include "ir/error.h"
#include "itypes/itype.h"
#include "schedule/program.h"
#include "trace/tracer.h"

namespace mk {
namespace {

using test::GraphBuilder;
using test::list;
using test::num;
using test::real;
using test::ref;
using test::str;

FxArg none() { return FxArg{}; }
FxArg boolean(bool v) {
  FxArg a;
  a.kind = FxArg::Kind::Bool;
  a.i = v;
  return a;
}

// Expects trace(g) to throw CompileError whose message contains every part.
void expect_error(const FxGraph& g, std::initializer_list<std::string> parts) {
  try {
    trace(g);
    FAIL() << "trace() did not throw";
  } catch (const CompileError& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

const Node& by_name(const DAG& d, const std::string& name) {
  for (const Node& n : d.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

TEST(Trace, SeedMlp) {
  const DAG d = trace(test::seed_mlp(1024, 1024), /*fuse=*/false);  // the seed's own lowering
  // 3 inputs + 3 x (mm, add, relu) + output; the selects are folded into edges.
  ASSERT_EQ(d.nodes.size(), 13u);
  EXPECT_EQ(d.name, "mlp");
  const Node& W = d.nodes[0];
  EXPECT_TRUE(W.is_input());
  EXPECT_EQ(W.input_index, 0);
  EXPECT_EQ(d.nodes[2].input_index, 2);
  EXPECT_EQ(W.outputs[0].str(), "bfloat16[3, 1024, 1024]@cpu");

  const Node& mm1 = by_name(d, "mm_1");
  ASSERT_TRUE(mm1.is_compute());
  EXPECT_EQ(mm1.itype->str(), "Gemm");
  EXPECT_EQ(mm1.target, "aten.mm.default");
  ASSERT_EQ(mm1.inputs.size(), 2u);
  EXPECT_EQ(mm1.inputs[0].node, by_name(d, "relu").id);
  EXPECT_EQ(mm1.inputs[1].node, W.id);
  EXPECT_EQ(mm1.inputs[1].range.box.str(), "((0,1),(1,2),(0,1024),(0,1024))");
  EXPECT_EQ(mm1.inputs[1].range.view_shape, (std::vector<int64_t>{1024, 1024}));
  EXPECT_TRUE(mm1.inputs[0].range.is_full(d.nodes[mm1.inputs[0].node].outputs[0].padded()));

  EXPECT_EQ(by_name(d, "add_2").itype->str(), "ElementwiseBinary(op=add,alpha=1)");
  EXPECT_EQ(by_name(d, "relu_2").itype->str(), "ElementwiseUnary(ops=relu)");
  const Node& out = d.nodes.back();
  ASSERT_TRUE(out.is_output());
  ASSERT_EQ(out.inputs.size(), 1u);
  EXPECT_EQ(out.inputs[0].node, by_name(d, "relu_2").id);
  // Use links: W feeds the three mms.
  EXPECT_EQ(W.users[0].size(), 3u);
}

TEST(Trace, SliceWithStartEnd) {
  GraphBuilder b;
  const int x = b.placeholder("x", {2, 64, 128});
  const int s = b.call("slice_1", "aten.slice.Tensor", {ref(x), num(1), num(16), num(48)}, {2, 32, 128});
  const int s2 = b.call("slice_2", "aten.slice.Tensor", {ref(s), num(-1), none(), num(64)}, {2, 32, 64});
  const int r = b.call("relu", "aten.relu.default", {ref(s2)}, {2, 32, 64});
  b.output({r});
  const DAG d = trace(b.g);
  ASSERT_EQ(d.nodes.size(), 3u);
  const Edge& e = d.nodes[1].inputs[0];
  EXPECT_EQ(e.range.box.str(), "((0,1),(0,2),(16,48),(0,64))");
  EXPECT_EQ(e.range.view_shape, (std::vector<int64_t>{2, 32, 64}));
}

TEST(Trace, SliceToEndUsesInt64Max) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int s = b.call("slice_1", "aten.slice.Tensor", {ref(x), num(0), num(8), num(9223372036854775807LL)},
                       {56, 128});
  const int r = b.call("relu", "aten.relu.default", {ref(s)}, {56, 128});
  b.output({r});
  EXPECT_EQ(trace(b.g).nodes[1].inputs[0].range.box.str(), "((0,1),(0,1),(8,64),(0,128))");
}

TEST(Trace, SliceStepRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int s = b.call("slice_3", "aten.slice.Tensor", {ref(x), num(0), num(0), num(64), num(2)}, {32, 128});
  const int r = b.call("relu", "aten.relu.default", {ref(s)}, {32, 128});
  b.output({r});
  expect_error(b.g, {"node 'slice_3' (aten.slice.Tensor): slices with step != 1 are not supported, got step=2"});
}

TEST(Trace, SelectOutOfRangeNamesViewNode) {
  GraphBuilder b;
  const int x = b.placeholder("x", {3, 64});
  const int s = b.call("select_9", "aten.select.int", {ref(x), num(0), num(5)}, {64});
  const int r = b.call("relu", "aten.relu.default", {ref(s)}, {64});
  b.output({r});
  expect_error(b.g, {"select_9", "aten.select.int", "index 5"});
}

TEST(Trace, UnsupportedOpRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int t = b.call("erfc_3", "aten.erfc.default", {ref(x)}, {64, 128});
  b.output({t});
  expect_error(b.g, {"node 'erfc_3': unsupported op aten.erfc.default (no instruction type)"});
}

TEST(Trace, ScalarOperandRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int t = b.call("maximum", "aten.maximum.default", {ref(x), num(2)}, {64, 128});
  b.output({t});
  expect_error(b.g, {"node 'maximum' (aten.maximum.default)", "scalar operands are not supported yet", "2"});
}

// ---- elementwise ops for Llama-family models (issue 6) ----

struct OneOp {
  std::string target;
  std::vector<FxArg> args;
  std::vector<std::pair<std::string, FxArg>> kwargs = {};
};

// Traces x (64, 128) -> op -> output; returns the op node (its itype and its tensor input).
const Node& traced_op(DAG& keep, const OneOp& op) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  std::vector<FxArg> args = op.args;
  for (auto& a : args)
    if (a.kind == FxArg::Kind::Node) a.i = x;  // ref(-1) stands for x
  const int t = b.call("op", op.target, args, {64, 128});
  for (const auto& kw : op.kwargs) b.g.nodes[t].kwargs.push_back(kw);
  b.output({t});
  keep = trace(b.g);
  const Node& n = by_name(keep, "op");
  EXPECT_EQ(n.inputs.size(), 1u);
  EXPECT_EQ(keep.nodes[n.inputs.at(0).node].name, "x");
  return n;
}

FxArg X() { return ref(-1); }

TEST(Trace, NewUnaryOps) {
  const std::vector<std::pair<OneOp, std::string>> cases = {
      {{"aten.silu.default", {X()}}, "ops=silu"},
      {{"aten.sigmoid.default", {X()}}, "ops=sigmoid"},
      {{"aten.tanh.default", {X()}}, "ops=tanh"},
      {{"aten.cos.default", {X()}}, "ops=cos"},
      {{"aten.sin.default", {X()}}, "ops=sin"},
      {{"aten.reciprocal.default", {X()}}, "ops=reciprocal"},
      {{"aten.square.default", {X()}}, "ops=square"},
      {{"aten.gelu.default", {X()}}, "ops=gelu"},
      {{"aten.gelu.default", {X()}, {{"approximate", str("none")}}}, "ops=gelu"},
      {{"aten.gelu.default", {X()}, {{"approximate", str("tanh")}}}, "ops=gelu_tanh"},
  };
  for (const auto& [op, want] : cases) {
    DAG d;
    EXPECT_EQ(traced_op(d, op).itype->str(), "ElementwiseUnary(" + want + ")") << op.target;
  }
}

TEST(Trace, ScalarOperands) {
  const std::vector<std::pair<OneOp, std::string>> cases = {
      {{"aten.add.Tensor", {X(), real(2.5)}}, "add_scalar:2.5"},
      {{"aten.add.Tensor", {X(), num(2)}, {{"alpha", num(3)}}}, "add_scalar:6"},  // x + alpha*c
      {{"aten.add.Tensor", {num(2), X()}}, "add_scalar:2"},                       // 2 + x
      {{"aten.add.Tensor", {real(2), X()}, {{"alpha", real(0.5)}}}, "mul_scalar:0.5,add_scalar:2"},
      {{"aten.sub.Tensor", {X(), num(1)}, {{"alpha", num(2)}}}, "add_scalar:-2"},
      {{"aten.sub.Tensor", {num(1), X()}}, "neg,add_scalar:1"},
      {{"aten.mul.Tensor", {X(), real(0.125)}}, "mul_scalar:0.125"},
      {{"aten.mul.Tensor", {num(3), X()}}, "mul_scalar:3"},
      {{"aten.mul.Tensor", {X(), real(0.1)}}, "mul_scalar:0.1"},
      {{"aten.div.Tensor", {X(), num(3)}}, "div_scalar:3"},
      {{"aten.add.Scalar", {X(), real(1e-6)}}, "add_scalar:1e-06"},
      {{"aten.add.Scalar", {X(), num(1), num(2)}}, "add_scalar:2"},  // alpha is positional here
      {{"aten.sub.Scalar", {X(), real(0.5)}}, "add_scalar:-0.5"},
      {{"aten.mul.Scalar", {X(), real(-2)}}, "mul_scalar:-2"},
      {{"aten.div.Scalar", {X(), real(8)}}, "div_scalar:8"},
      {{"aten.rsub.Scalar", {X(), num(1)}}, "neg,add_scalar:1"},
      {{"aten.rsub.Scalar", {X(), real(1), num(3)}}, "mul_scalar:-3,add_scalar:1"},
      {{"aten.pow.Tensor_Scalar", {X(), num(2)}}, "square"},
      {{"aten.pow.Tensor_Scalar", {X(), real(0.5)}}, "sqrt"},
      {{"aten.pow.Tensor_Scalar", {X(), real(-0.5)}}, "rsqrt"},
      {{"aten.pow.Tensor_Scalar", {X(), num(1)}}, "identity"},
      {{"aten.pow.Tensor_Scalar", {X(), num(-1)}}, "reciprocal"},
      {{"aten.pow.Tensor_Scalar", {X(), num(3)}}, "pow_scalar:3"},
      {{"aten.pow.Tensor_Scalar", {X(), real(1.5)}}, "pow_scalar:1.5"},
      {{"aten.clamp_min.default", {X(), num(0)}}, "clamp_min:0"},
      {{"aten.clamp_max.default", {X(), real(2.5)}}, "clamp_max:2.5"},
      {{"aten.clamp.default", {X(), num(0)}}, "clamp_min:0"},
      {{"aten.clamp.default", {X(), num(-1), num(1)}}, "clamp_min:-1,clamp_max:1"},
      {{"aten.clamp.default", {X(), none(), real(6)}}, "clamp_max:6"},
      {{"aten.clamp.default", {X()}, {{"max", num(6)}}}, "clamp_max:6"},
  };
  for (const auto& [op, want] : cases) {
    DAG d;
    EXPECT_EQ(traced_op(d, op).itype->str(), "ElementwiseUnary(ops=" + want + ")") << op.target;
  }
}

TEST(Trace, RsubTensorSwapsOperands) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128}), y = b.placeholder("y", {64, 128});
  const int t = b.call("rsub", "aten.rsub.Tensor", {ref(x), ref(y)}, {64, 128});
  b.g.nodes[t].kwargs.push_back({"alpha", real(0.5)});
  b.output({t});
  const DAG d = trace(b.g);
  const Node& n = by_name(d, "rsub");
  EXPECT_EQ(n.itype->str(), "ElementwiseBinary(op=sub,alpha=0.5)");  // y - 0.5 * x
  EXPECT_EQ(d.nodes[n.inputs[0].node].name, "y");
  EXPECT_EQ(d.nodes[n.inputs[1].node].name, "x");
}

// The same constant is one icode; another constant is another.
TEST(Trace, ScalarConstantsAreParams) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int m1 = b.call("m1", "aten.mul.Tensor", {ref(x), real(0.5)}, {64, 128});
  const int m2 = b.call("m2", "aten.mul.Tensor", {ref(m1), real(0.5)}, {64, 128});
  const int m3 = b.call("m3", "aten.mul.Tensor", {ref(m2), real(0.25)}, {64, 128});
  b.output({m3});
  const DAG d = trace(b.g, /*fuse=*/false);  // each op on its own (fuse_elementwise would merge them)
  EXPECT_TRUE(by_name(d, "m1").itype->same_as(*by_name(d, "m2").itype));
  EXPECT_FALSE(by_name(d, "m1").itype->same_as(*by_name(d, "m3").itype));
}

TEST(Trace, ScalarFormErrors) {
  auto graph = [](const OneOp& op) {
    GraphBuilder b;
    const int x = b.placeholder("x", {64, 128});
    std::vector<FxArg> args = op.args;
    for (auto& a : args)
      if (a.kind == FxArg::Kind::Node) a.i = x;
    const int t = b.call("op", op.target, args, {64, 128});
    for (const auto& kw : op.kwargs) b.g.nodes[t].kwargs.push_back(kw);
    b.output({t});
    return b.g;
  };
  expect_error(graph({"aten.gelu.default", {X()}, {{"approximate", str("fast")}}}),
               {"node 'op' (aten.gelu.default)", "approximate='fast' is not supported", "'none' or 'tanh'"});
  expect_error(graph({"aten.div.Tensor", {num(2), X()}}),
               {"node 'op' (aten.div.Tensor)", "a number divided by a tensor (2 / tensor) is not supported"});
  expect_error(graph({"aten.div.Tensor", {X(), num(2)}, {{"rounding_mode", str("trunc")}}}),
               {"node 'op' (aten.div.Tensor)", "rounding_mode='trunc'"});
  expect_error(graph({"aten.mul.Tensor", {X(), boolean(true)}}),
               {"node 'op' (aten.mul.Tensor)", "argument 'other' is the bool", "not supported"});
  expect_error(graph({"aten.add.Tensor", {num(2), real(3)}}), {"node 'op' (aten.add.Tensor)", "both operands are numbers"});
  expect_error(graph({"aten.clamp.default", {X(), none(), none()}}),
               {"node 'op' (aten.clamp.default)", "at least one of min and max"});
  expect_error(graph({"aten.clamp_min.default", {X(), X()}}),
               {"node 'op' (aten.clamp_min.default)", "argument 'min' must be a number"});
  expect_error(graph({"aten.pow.Tensor_Scalar", {X(), str("2")}}),
               {"node 'op' (aten.pow.Tensor_Scalar)", "argument 'exponent' must be a number"});
  expect_error(graph({"aten.maximum.default", {X(), real(0.5)}}),
               {"node 'op' (aten.maximum.default)", "scalar operands are not supported"});
}

TEST(Trace, CustomUnaryScalarForms) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int t = b.call("u", "megakittens.elementwise_unary.default", {ref(x), str("silu, mul_scalar:0.50, add_scalar:1e0")},
                       {64, 128});
  b.output({t});
  EXPECT_EQ(by_name(trace(b.g), "u").itype->str(), "ElementwiseUnary(ops=silu,mul_scalar:0.5,add_scalar:1)");

  GraphBuilder c;
  const int cx = c.placeholder("x", {64, 128});
  const int ct = c.call("u", "megakittens.elementwise_unary.default", {ref(cx), str("add_scalar")}, {64, 128});
  c.output({ct});
  expect_error(c.g, {"node 'u' (megakittens.elementwise_unary.default)", "op 'add_scalar' needs a constant"});
}

TEST(Trace, UnknownKwargRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int t = b.call("relu", "aten.relu.default", {ref(x)}, {64, 128});
  b.g.nodes[t].kwargs.push_back({"inplace", boolean(true)});
  b.output({t});
  expect_error(b.g, {"node 'relu' (aten.relu.default)", "unexpected keyword argument 'inplace'"});
}

TEST(Trace, SubAlphaAndDivRoundingMode) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int y = b.placeholder("y", {64, 128});
  const int s = b.call("sub", "aten.sub.Tensor", {ref(x), ref(y)}, {64, 128});
  b.g.nodes[s].kwargs.push_back({"alpha", num(2)});
  b.output({s});
  EXPECT_EQ(trace(b.g).nodes[2].itype->str(), "ElementwiseBinary(op=sub,alpha=2)");

  GraphBuilder c;
  const int cx = c.placeholder("x", {64, 128});
  const int cd = c.call("div", "aten.div.Tensor", {ref(cx), ref(cx)}, {64, 128});
  c.g.nodes[cd].kwargs.push_back({"rounding_mode", str("floor")});
  c.output({cd});
  expect_error(c.g, {"node 'div' (aten.div.Tensor)", "rounding_mode='floor'"});
}

TEST(Trace, NonContiguousInputRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  b.g.nodes[x].outputs[0]->stride = {1, 64};
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {64, 128});
  b.output({r});
  expect_error(b.g, {"input 'x': non-contiguous tensors are not supported (shape [64, 128], stride [1, 64])"});
}

TEST(Trace, Rank5InputRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x5", {2, 2, 2, 2, 2});
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {2, 2, 2, 2, 2});
  b.output({r});
  expect_error(b.g, {"input 'x5'", "rank-5"});
}

TEST(Trace, ZeroSizeTensorsRejectedByNode) {  // fallback="eager" judges them op by op
  GraphBuilder b;
  const int x = b.placeholder("x", {0, 8});
  b.output({b.call("relu", "aten.relu.default", {ref(x)}, {0, 8})});
  expect_error(b.g, {"input 'x'", "zero-size tensors are not supported, got shape [0, 8]"});
  GraphBuilder c;
  const int y = c.placeholder("y", {4, 8});
  const int e = c.call("slice", "aten.slice.Tensor", {ref(y), num(1), num(3), num(3)}, {4, 0});
  c.output({c.call("neg", "aten.neg.default", {ref(e)}, {4, 0})});
  expect_error(c.g, {"node 'neg' (aten.neg.default)", "zero-size tensors are not supported, got shape [4, 0]"});
}

TEST(Trace, NonTensorPlaceholderRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int s = b.placeholder("s0", {});
  b.g.nodes[s].outputs = {std::nullopt};
  const int r = b.call("mul", "aten.mul.Tensor", {ref(x), ref(s)}, {64, 128});
  b.output({r});
  expect_error(b.g, {"input 's0'", "tensor"});
}

TEST(Trace, ViewInFrontOfOutputStaysOnTheEdge) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {64, 128});
  const int s = b.call("slice_1", "aten.slice.Tensor", {ref(r), num(0), num(0), num(32)}, {32, 128});
  b.output({s});
  const DAG d = trace(b.g);
  const Edge& e = d.nodes.back().inputs.at(0);
  EXPECT_EQ(d.nodes[e.node].name, "relu");
  EXPECT_EQ(e.range.view_shape, (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(e.range.box.hi[2], 32);
}

TEST(Trace, NoneOutputRejected) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {64, 128});
  b.output({r});
  b.g.nodes.back().args[0].items.push_back(none());
  expect_error(b.g, {"output 1 is not a tensor"});
}

TEST(Trace, NoTensorOutputRejected) {
  GraphBuilder b;
  b.placeholder("x", {64, 128});
  b.output({});
  expect_error(b.g, {"returns no tensor"});
}

TEST(Trace, BackwardGraphRejected) {
  FxGraph g = test::seed_mlp(128, 128, 1);
  g.name = "mlp_bw";
  g.is_backward = true;
  expect_error(g, {"megakittens has no backward instruction types: cannot compile the backward graph of 'mlp_bw' "
                   "(first op: select aten.select.int)"});
}

// _fused_rms_norm returns (y, rstd): megakittens keeps y only.
FxGraph rms_graph(bool read_rstd) {
  GraphBuilder b;
  const int x = b.placeholder("x", {16, 2048});
  const int w = b.placeholder("w", {2048});
  FxNode n;
  n.name = "_fused_rms_norm";
  n.op = "call_function";
  n.target = "aten._fused_rms_norm.default";
  n.args = {ref(x), list({num(2048)}), ref(w), real(1e-5)};
  n.outputs = {test::contiguous({16, 2048}), test::contiguous({16, 1}, "float32")};
  n.multi_output = true;
  b.g.nodes.push_back(n);
  const int rms = static_cast<int>(b.g.nodes.size()) - 1;
  const int y = b.call("getitem", "getitem", {ref(rms), num(0)}, {16, 2048});
  const int rstd = b.call("getitem_1", "getitem", {ref(rms), num(1)}, {16, 1}, "float32");
  const int r = b.call("relu", "aten.relu.default", {ref(read_rstd ? rstd : y)}, {16, 2048});
  b.output({r, y});
  return b.g;
}

TEST(Trace, MultiOutputKeepsOutput0) {
  const DAG d = trace(rms_graph(false));
  ASSERT_EQ(d.nodes.size(), 5u);  // x, w, rms, relu, output
  const Node& rms = d.nodes[2];
  EXPECT_EQ(rms.itype->str(), "RMSNorm(eps=1e-05)");
  ASSERT_EQ(rms.outputs.size(), 1u);
  EXPECT_EQ(rms.outputs[0].str(), "bfloat16[16, 2048]@cpu");
  ASSERT_EQ(rms.inputs.size(), 2u);
  EXPECT_EQ(rms.inputs[1].node, 1);
  EXPECT_EQ(d.nodes[3].inputs[0].node, 2);
  EXPECT_EQ(d.nodes[4].inputs[1].node, 2);  // getitem in front of the output is output selection
  EXPECT_EQ(rms.users[0].size(), 2u);
}

TEST(Trace, DroppedOutputRejected) {
  expect_error(rms_graph(true), {"relu", "output 1 of aten._fused_rms_norm.default", "is not computed by megakittens"});
}

TEST(Trace, RmsNormDefaultEpsAndShape) {
  GraphBuilder b;
  const int x = b.placeholder("x", {16, 64});
  const int y = b.call("rms_norm", "aten.rms_norm.default", {ref(x), list({num(64)})}, {16, 64});
  b.output({y});
  const DAG d = trace(b.g);
  EXPECT_EQ(d.nodes[1].inputs.size(), 1u);
  const std::string s = d.nodes[1].itype->str();
  EXPECT_NE(s.find("no_weight"), std::string::npos) << s;
  EXPECT_NE(s.find("0.0078125"), std::string::npos) << s;

  b.g.nodes[y].args[1] = list({num(16), num(64)});
  expect_error(b.g, {"node 'rms_norm' (aten.rms_norm.default)", "normalized_shape", "[16, 64]"});
}

TEST(Trace, AttentionVariants) {
  GraphBuilder b;
  const int q = b.placeholder("q", {1, 4, 128, 64});
  const int k = b.placeholder("k", {1, 4, 128, 64});
  const int v = b.placeholder("v", {1, 4, 128, 64});
  const int o = b.call("sdpa", "aten.scaled_dot_product_attention.default", {ref(q), ref(k), ref(v)}, {1, 4, 128, 64});
  b.g.nodes[o].kwargs.push_back({"is_causal", boolean(true)});
  b.output({o});
  const DAG d = trace(b.g);
  EXPECT_EQ(d.nodes[3].itype->str(), "Attention(causal=1,scale=0.125)");
  ASSERT_EQ(d.nodes[3].inputs.size(), 3u);

  b.g.nodes[o].args.push_back(none());  // attn_mask
  b.g.nodes[o].args.push_back(real(0.1));
  expect_error(b.g, {"node 'sdpa'", "dropout_p=0.1"});
}

TEST(Trace, AttentionTakesAnAdditiveMaskInPlace) {
  // attn_mask (B, 1, Sq, Sk) bf16: input 3 of a masked Attention, read through its broadcast head dim (no copy).
  for (const char* dtype : {"bfloat16", "float32"}) {
    GraphBuilder b;
    const int q = b.placeholder("q", {2, 4, 128, 64});
    const int m = b.placeholder("m", {2, 1, 128, 200}, dtype);
    const int kv = b.placeholder("kv", {2, 4, 200, 64});
    const int o = b.call("sdpa", "aten.scaled_dot_product_attention.default", {ref(q), ref(kv), ref(kv), ref(m)},
                         {2, 4, 128, 64});
    b.output({o});
    if (std::string(dtype) == "float32") {
      expect_error(b.g, {"node 'sdpa'", "additive 4-D mask", "of the query's dtype (bfloat16)", "float32"});
      continue;
    }
    const DAG d = trace(b.g);
    const Node& n = d.nodes[d.nodes.back().inputs[0].node];
    EXPECT_EQ(n.itype->str(), "Attention(causal=0,scale=0.125,mask=add)");
    ASSERT_EQ(n.inputs.size(), 4u);
    EXPECT_EQ(n.inputs[3].node, m);
    EXPECT_TRUE(n.itype->late_input(3));
  }
}

TEST(Trace, AttentionReadsBshdViewsInPlace) {
  // q, v = x.view(B, S, H, D).transpose(1, 2) (what models feed SDPA): bound as bshd=qv, nothing copied.
  GraphBuilder b;
  const int xq = b.placeholder("xq", {1, 128, 4, 64});
  const int k = b.placeholder("k", {1, 4, 128, 64});
  const int xv = b.placeholder("xv", {1, 128, 4, 64});
  const int q = b.call("tq", "aten.transpose.int", {ref(xq), num(1), num(2)}, {1, 4, 128, 64});
  const int v = b.call("tv", "aten.transpose.int", {ref(xv), num(1), num(2)}, {1, 4, 128, 64});
  const int o = b.call("sdpa", "aten.scaled_dot_product_attention.default", {ref(q), ref(k), ref(v)}, {1, 4, 128, 64});
  b.output({o});
  const DAG d = trace(b.g);
  const Node& n = d.nodes[d.nodes.back().inputs[0].node];  // the output node reads the sdpa node
  EXPECT_EQ(n.itype->str(), "Attention(causal=0,scale=0.125,bshd=qv)");
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[0].node, 0);  // the placeholder itself: no copy node
  EXPECT_EQ(n.inputs[0].range.view_dim, (std::array<int8_t, 4>{0, 2, 1, 3}));
}

TEST(Trace, CustomOps) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int w = b.placeholder("w", {128, 128});
  const int g = b.call("gemm", "megakittens.gemm.default", {ref(x), ref(w)}, {64, 128});
  const int u = b.call("un", "megakittens.elementwise_unary.default", {ref(g), str("relu,abs")}, {64, 128});
  const int r = b.call("rn", "megakittens.rms_norm.default", {ref(u), none(), real(1e-6)}, {64, 128});
  const int e = b.call("eb", "megakittens.elementwise_binary.default", {ref(r), ref(x), str("mul")}, {64, 128});
  b.output({e});
  const DAG d = trace(b.g);
  EXPECT_EQ(d.nodes[2].itype->str(), "Gemm");
  EXPECT_EQ(d.nodes[3].itype->str(), "ElementwiseUnary(ops=relu,abs)");
  EXPECT_EQ(d.nodes[4].inputs.size(), 1u);
  EXPECT_EQ(d.nodes[5].itype->str(), "ElementwiseBinary(op=mul,alpha=1)");
}

// nn.Linear on a 2-D input after AOTAutograd: t(weight) + addmm(bias, x, t).
TEST(Trace, Float16OperandsTakeTheF16Instructions) {
  // An fp16 linear: Gemm(tb,bias_row,f16); with a bf16 bias its schedule names the bias and both dtypes.
  for (const char* bias_dtype : {"float16", "bfloat16"}) {
    GraphBuilder b;
    const int w = b.placeholder("w", {32, 64}, "float16");
    const int bias = b.placeholder("bias", {32}, bias_dtype);
    const int x = b.placeholder("x", {16, 64}, "float16");
    const int t = b.call("t", "aten.t.default", {ref(w)}, {64, 32}, "float16");
    const int mm = b.call("addmm", "aten.addmm.default", {ref(bias), ref(x), ref(t)}, {16, 32}, "float16");
    b.output({mm});
    const DAG d = trace(b.g);
    EXPECT_EQ(by_name(d, "addmm").itype->str(), "Gemm(tb,bias_row,f16)");
    if (std::string(bias_dtype) == "bfloat16") {  // validate() runs when the schedule is made
      try {
        schedule(d, ScheduleOptions{});
        FAIL() << "schedule() did not throw";
      } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("bias must be float16, got bfloat16"), std::string::npos) << e.what();
      }
    }
  }
  // RMSNorm and SDPA in fp16.
  GraphBuilder b;
  const int x = b.placeholder("x", {2, 4, 128, 64}, "float16");
  const int w = b.placeholder("w", {64}, "float16");
  const int n = b.call("norm", "megakittens.rms_norm.default", {ref(x), ref(w), real(1e-5)}, {2, 4, 128, 64}, "float16");
  const int o = b.call("sdpa", "aten.scaled_dot_product_attention.default", {ref(n), ref(x), ref(x)}, {2, 4, 128, 64},
                       "float16");
  b.output({o});
  const DAG d = trace(b.g);
  EXPECT_EQ(by_name(d, "norm").itype->str(), "RMSNorm(eps=1e-05,f16)");
  EXPECT_EQ(by_name(d, "sdpa").itype->str(), "Attention(causal=0,scale=0.125,f16)");
}

TEST(Trace, AddmmIsGemmWithBias) {
  GraphBuilder b;
  const int w = b.placeholder("arg0_1", {32, 64});
  const int bias = b.placeholder("arg1_1", {32});
  const int x = b.placeholder("arg2_1", {16, 64});
  const int t = b.call("t", "aten.t.default", {ref(w)}, {64, 32});
  const int mm = b.call("addmm", "aten.addmm.default", {ref(bias), ref(x), ref(t)}, {16, 32});
  b.output({mm});
  const DAG d = trace(b.g);
  ASSERT_EQ(d.nodes.size(), 5u);
  const Node& n = by_name(d, "addmm");
  EXPECT_EQ(n.itype->str(), "Gemm(tb,bias_row)");
  ASSERT_EQ(n.inputs.size(), 3u);  // A, B, bias
  EXPECT_EQ(n.inputs[0].node, by_name(d, "arg2_1").id);
  EXPECT_EQ(n.inputs[1].node, by_name(d, "arg0_1").id);
  EXPECT_EQ(n.inputs[2].node, by_name(d, "arg1_1").id);
  EXPECT_EQ(n.inputs[1].range.view_dim, (std::array<int8_t, 4>{-1, -1, 3, 2}));

  // A full (M, N) bias, beta/alpha passed as 1 explicitly; and baddbmm.
  GraphBuilder b2;
  const int c = b2.placeholder("c", {16, 32});
  const int x2 = b2.placeholder("x", {16, 64});
  const int w2 = b2.placeholder("w", {64, 32});
  const int am = b2.call("addmm", "aten.addmm.default", {ref(c), ref(x2), ref(w2)}, {16, 32});
  b2.g.nodes[am].kwargs = {{"beta", num(1)}, {"alpha", real(1.0)}};
  const int c3 = b2.placeholder("c3", {32});
  const int a3 = b2.placeholder("a3", {2, 16, 64});
  const int b3 = b2.placeholder("b3", {2, 64, 32});
  const int bb = b2.call("baddbmm", "aten.baddbmm.default", {ref(c3), ref(a3), ref(b3)}, {2, 16, 32});
  b2.output({am, bb});
  const DAG d2 = trace(b2.g);
  EXPECT_EQ(by_name(d2, "addmm").itype->str(), "Gemm(bias_full)");
  EXPECT_EQ(by_name(d2, "baddbmm").itype->str(), "Gemm(bias_row)");
}

TEST(Trace, AddmmBetaAlphaOtherThanOneRejected) {
  for (const char* k : {"beta", "alpha"}) {
    GraphBuilder b;
    const int c = b.placeholder("c", {32});
    const int x = b.placeholder("x", {16, 64});
    const int w = b.placeholder("w", {64, 32});
    const int am = b.call("addmm_7", "aten.addmm.default", {ref(c), ref(x), ref(w)}, {16, 32});
    b.g.nodes[am].kwargs = {{k, real(0.5)}};
    b.output({am});
    expect_error(b.g, {"node 'addmm_7' (aten.addmm.default): ", std::string(k) + "=0.5 is not supported",
                       "beta and alpha must be 1"});
  }
}

// mul = x * y; auto_functionalized_v2(elementwise_binary_, b=y, op='add', alpha=1.0, _a_base_index=0,
// _all_bases=[mul]) -> (None, new mul); relu(getitem(af, 1)).
FxGraph functionalized_graph() {
  GraphBuilder b;
  const int x = b.placeholder("arg0_1", {64, 128});
  const int y = b.placeholder("arg1_1", {64, 128});
  const int mul = b.call("mul", "aten.mul.Tensor", {ref(x), ref(y)}, {64, 128});
  FxNode n;
  n.name = "auto_functionalized_v2";
  n.op = "call_function";
  n.target = "auto_functionalized_v2";
  n.args = {str("megakittens.elementwise_binary_.default")};
  n.kwargs = {{"b", ref(y)}, {"op", str("add")}, {"alpha", real(1.0)}, {"_a_base_index", num(0)},
              {"_all_bases", list({ref(mul)})}};
  n.outputs = {std::nullopt, test::contiguous({64, 128})};
  n.multi_output = true;
  b.g.nodes.push_back(n);
  const int af = static_cast<int>(b.g.nodes.size()) - 1;
  const int gi = b.call("getitem_1", "getitem", {ref(af), num(1)}, {64, 128});
  const int r = b.call("relu", "aten.relu.default", {ref(gi)}, {64, 128});
  b.output({r});
  return b.g;
}

TEST(Trace, AutoFunctionalizedV2Unwrapped) {
  const DAG d = trace(functionalized_graph());
  ASSERT_EQ(d.nodes.size(), 6u);  // x, y, mul, eb_, relu, output
  const Node& eb = d.nodes[3];
  EXPECT_EQ(eb.name, "auto_functionalized_v2");
  EXPECT_EQ(eb.target, "megakittens.elementwise_binary_.default");
  EXPECT_EQ(eb.itype->str(), "ElementwiseBinary(op=add,alpha=1,inplace)");
  ASSERT_EQ(eb.inputs.size(), 2u);
  EXPECT_EQ(eb.inputs[0].node, 2);  // a = _all_bases[0] = mul
  EXPECT_EQ(eb.inputs[1].node, 1);  // b = y
  ASSERT_EQ(eb.outputs.size(), 1u);
  EXPECT_EQ(d.nodes[4].inputs[0].node, 3);
  EXPECT_EQ(d.nodes[4].inputs[0].output, 0);
}

TEST(Trace, AutoFunctionalizedV2ViewOfBaseRejected) {
  FxGraph g = functionalized_graph();
  g.nodes[3].kwargs.push_back({"_a_size", list({num(32), num(128)})});
  expect_error(g, {"auto_functionalized_v2(megakittens.elementwise_binary_.default)", "_a_size", "views"});
}

TEST(Trace, DeadNodePruned) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 128});
  const int unused = b.placeholder("unused", {3, 3, 3, 3, 3});  // dead: not even checked
  b.call("dead_sin", "aten.sin.default", {ref(unused)}, {3, 3, 3, 3, 3});
  const int y = b.placeholder("y", {64, 128});
  const int r = b.call("add", "aten.add.Tensor", {ref(x), ref(y)}, {64, 128});
  b.output({r});
  const DAG d = trace(b.g);
  ASSERT_EQ(d.nodes.size(), 4u);  // x, y, add, output
  EXPECT_EQ(d.nodes[0].input_index, 0);
  EXPECT_EQ(d.nodes[1].name, "y");
  EXPECT_EQ(d.nodes[1].input_index, 2);  // position among all placeholders
}

}  // namespace
}  // namespace mk
