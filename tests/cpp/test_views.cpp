// Views folded into edge ranges: TensorRange::permute / transpose, and the tracer folding aten.t,
// aten.transpose.int, aten.permute.default (alone and chained with select/slice) and no-op reshapes.
#include <gtest/gtest.h>

#include "fx_builder.h"
#include "ir/error.h"
#include "itypes/gemm.h"
#include "trace/tracer.h"
#include "test_util.h"

namespace mk {
namespace {

using test::GraphBuilder;
using test::list;
using test::num;
using test::ref;
using Dims = std::array<int8_t, 4>;
using Shape = std::vector<int64_t>;

using test::error_of;

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << "'" << (part) << "' not in: " << (msg)

FxArg ints(std::vector<int64_t> v) {
  std::vector<FxArg> items;
  for (auto x : v) items.push_back(num(x));
  return list(items);
}

const Node& by_name(const DAG& d, const std::string& name) {
  for (const Node& n : d.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

// ---- TensorRange ----

TEST(TensorRangeViews, PermuteReordersViewDimsOnly) {
  const TensorRange x = TensorRange::full({2, 3, 4});
  const TensorRange p = x.permute({2, 0, 1});
  EXPECT_EQ(p.view_shape, (Shape{4, 2, 3}));
  EXPECT_EQ(p.view_dim, (Dims{-1, 3, 1, 2}));
  EXPECT_EQ(p.box, x.box);
  EXPECT_EQ(p.to_backing(Coord4{0, 3, 1, 2}), (Coord4{0, 1, 2, 3}));
  // A box in view coords lands on the backing dims each view dim runs along.
  EXPECT_EQ(p.to_backing(Box{{0, 1, 0, 1}, {1, 3, 2, 3}}), (Box{{0, 0, 1, 1}, {1, 2, 3, 3}}));
  EXPECT_FALSE(p.is_straight());
  EXPECT_EQ(p.permute({1, 2, 0}), x);  // the inverse permutation restores the straight view
  EXPECT_EQ(x.permute({-3, -2, -1}), x);
  EXPECT_EQ(x.transpose(-1, -2), x.permute({0, 2, 1}));
  EXPECT_EQ(x.transpose(1, 1), x);
}

TEST(TensorRangeViews, SelectThenTranspose) {
  // W[1].t() on W (3, 64, 32): the box of W[1], rows of the view along W's columns.
  const TensorRange w = TensorRange::full({3, 64, 32}).select(0, 1).transpose(0, 1);
  EXPECT_EQ(w.view_shape, (Shape{32, 64}));
  EXPECT_EQ(w.view_dim, (Dims{-1, -1, 3, 2}));
  EXPECT_EQ(w.box.str(), "((0,1),(1,2),(0,64),(0,32))");
  EXPECT_EQ(w.to_backing(Box{{0, 0, 4, 10}, {1, 1, 8, 20}}).str(), "((0,1),(1,2),(10,20),(4,8))");
  EXPECT_EQ(w.to_backing(Coord4{0, 0, 5, 7}), (Coord4{0, 1, 7, 5}));
  EXPECT_TRUE(Gemm::is_transposed(w));
  EXPECT_EQ(w.str(), "((0,1),(1,2),(0,64),(0,32)) view[32,64] on backing dims [-1,-1,3,2]");
}

TEST(TensorRangeViews, SliceAndSelectAfterPermute) {
  // x.t()[16:48]: the slice runs along the backing's columns.
  const TensorRange s = TensorRange::full({64, 128}).transpose(0, 1).slice(0, 16, 48);
  EXPECT_EQ(s.view_shape, (Shape{32, 64}));
  EXPECT_EQ(s.box.str(), "((0,1),(0,1),(0,64),(16,48))");
  EXPECT_EQ(s.view_dim, (Dims{-1, -1, 3, 2}));
  // x.permute(2, 0, 1)[:, 1]: selects backing dim 0 (now view dim 1).
  const TensorRange p = TensorRange::full({2, 3, 4}).permute({2, 0, 1}).select(1, 1);
  EXPECT_EQ(p.view_shape, (Shape{4, 3}));
  EXPECT_EQ(p.view_dim, (Dims{-1, -1, 3, 2}));
  EXPECT_EQ(p.box.str(), "((0,1),(1,2),(0,3),(0,4))");
  // A selected batch row then transposed batches: view dims on backing dims (1, 3, 2).
  const TensorRange b = TensorRange::full({3, 2, 8, 16}).select(0, 2).transpose(1, 2);
  EXPECT_EQ(b.view_dim, (Dims{-1, 1, 3, 2}));
  EXPECT_EQ(b.view_shape, (Shape{2, 16, 8}));
}

TEST(TensorRangeViews, IsFullNeedsStraightLayout) {
  const TensorRange sq = TensorRange::full({64, 64});
  EXPECT_TRUE(sq.is_full({1, 1, 64, 64}));
  // Same box and padded shape, but transposed: not the whole tensor as it is laid out.
  EXPECT_FALSE(sq.transpose(0, 1).is_full({1, 1, 64, 64}));
  // Size-1 dims may run anywhere.
  const TensorRange one = TensorRange::full({1, 64});
  EXPECT_TRUE(one.permute({0, 1}).is_straight());
  EXPECT_FALSE(one.transpose(0, 1).is_straight());  // (64, 1): rows along the backing's columns
}

TEST(TensorRangeViews, ExpandBroadcastsSizeOneDims) {
  // A row W[2] (64,) of W (4, 64), expanded to (3, 8, 64): two new leading dims, one backing row.
  const TensorRange row = TensorRange::full({4, 64}).select(0, 2);
  const TensorRange e = row.expand({3, 8, 64});
  EXPECT_EQ(e.view_shape, (Shape{3, 8, 64}));
  EXPECT_EQ(e.bcast, (std::array<bool, 4>{false, true, true, false}));
  EXPECT_EQ(e.box, row.box);
  EXPECT_TRUE(e.has_broadcast());
  EXPECT_FALSE(e.is_straight());
  EXPECT_FALSE(e.is_full({1, 1, 4, 64}));
  // Any coordinate in a broadcast dim maps to the single backing index.
  EXPECT_EQ(e.to_backing(Coord4{0, 2, 5, 7}), (Coord4{0, 0, 2, 7}));
  EXPECT_EQ(e.to_backing(Box{{0, 1, 2, 8}, {1, 3, 8, 16}}), (Box{{0, 0, 2, 8}, {1, 1, 3, 16}}));
  EXPECT_EQ(e.str(), "((0,1),(0,1),(2,3),(0,64)) view[3,8,64] broadcast along view dims [0,1]");
  // torch.as_strided: stride 0 along broadcast dims.
  const TensorRange::Strided st = e.strided({1, 1, 4, 64});
  EXPECT_EQ(st.offset, 2 * 64);
  EXPECT_EQ(st.sizes, (Shape{3, 8, 64}));
  EXPECT_EQ(st.strides, (Shape{0, 0, 1}));
  // A (R, 1) column grown along its existing size-1 dim; -1 keeps a dim.
  const TensorRange c = TensorRange::full({5, 1}).expand({-1, 32});
  EXPECT_EQ(c.view_shape, (Shape{5, 32}));
  EXPECT_EQ(c.bcast, (std::array<bool, 4>{false, false, false, true}));
  EXPECT_EQ(c.to_backing(Box{{0, 0, 1, 3}, {1, 1, 4, 20}}), (Box{{0, 0, 1, 0}, {1, 1, 4, 1}}));
  // Same shape: unchanged. A 0-d tensor grows to anything.
  EXPECT_EQ(TensorRange::full({5, 1}).expand({5, 1}), TensorRange::full({5, 1}));
  const TensorRange z = TensorRange::full({}).expand({2, 3});
  EXPECT_EQ(z.to_backing(Coord4{0, 0, 1, 2}), (Coord4{0, 0, 0, 0}));
  // select / slice / permute carry the broadcast dims along.
  EXPECT_EQ(e.select(0, 2), row.expand({8, 64}));
  const TensorRange sl = e.slice(1, 2, 6);
  EXPECT_EQ(sl.view_shape, (Shape{3, 4, 64}));
  EXPECT_EQ(sl.box, row.box);
  const TensorRange pm = e.permute({2, 0, 1});
  EXPECT_EQ(pm.view_shape, (Shape{64, 3, 8}));
  EXPECT_EQ(pm.bcast, (std::array<bool, 4>{false, false, true, true}));
  EXPECT_EQ(pm.to_backing(Coord4{0, 9, 2, 7}), (Coord4{0, 0, 2, 9}));
  // A reshape of a broadcast view is not a contiguous run.
  EXPECT_HAS(error_of([&] { e.reshape({3, 512}, {4, 64}); }), "is not one contiguous run");
  EXPECT_HAS(error_of([&] { c.reshape({160}, {5, 1}); }), "is not one contiguous run");
  // Only size-1 dims grow; the message names both shapes.
  EXPECT_HAS(error_of([&] { TensorRange::full({3, 64}).expand({8, 64}); }),
             "expand: cannot expand a [3, 64] view to [8, 64]: dim 0 has size 3");
  EXPECT_HAS(error_of([&] { TensorRange::full({64}).expand({-1, 64}); }), "-1 is not allowed for a new leading dim");
  EXPECT_HAS(error_of([&] { TensorRange::full({3, 64}).expand({64}); }), "fewer dims");
  EXPECT_HAS(error_of([&] { TensorRange::full({64}).expand({2, 2, 2, 2, 64}); }), "rank > 4");
}

TEST(TensorRangeViews, PermuteRejectsNonPermutations) {
  const TensorRange x = TensorRange::full({2, 3, 4});
  EXPECT_HAS(error_of([&] { x.permute({0, 1}); }), "permute: dims [0, 1] must name each of the 3 dims");
  EXPECT_HAS(error_of([&] { x.permute({0, 1, 1}); }), "repeat dim 1");
  EXPECT_HAS(error_of([&] { x.permute({0, 1, 3}); }), "permute: dim 3 is out of range for a rank-3 view");
  EXPECT_HAS(error_of([&] { x.transpose(0, -4); }), "transpose: dim -4 is out of range");
}

// ---- tracer ----

TEST(TraceViews, MmWithPermutedWeight) {
  // x @ W.T as Dynamo emits it: permute(W, [1, 0]) + mm.
  GraphBuilder b;
  const int x = b.placeholder("x", {16, 64});
  const int W = b.placeholder("W", {32, 64});
  const int p = b.call("permute", "aten.permute.default", {ref(W), ints({1, 0})}, {64, 32});
  const int mm = b.call("mm", "aten.mm.default", {ref(x), ref(p)}, {16, 32});
  b.output({mm});
  const DAG d = trace(b.g);
  ASSERT_EQ(d.nodes.size(), 4u);  // x, W, mm, output: the permute is folded
  const Node& n = by_name(d, "mm");
  EXPECT_EQ(n.itype->str(), "Gemm(tb)");
  EXPECT_EQ(n.inputs[1].node, by_name(d, "W").id);
  EXPECT_EQ(n.inputs[1].range.view_dim, (Dims{-1, -1, 3, 2}));
  EXPECT_EQ(n.inputs[1].range.view_shape, (Shape{64, 32}));
  EXPECT_EQ(n.inputs[1].range.box.str(), "((0,1),(0,1),(0,32),(0,64))");
  EXPECT_EQ(n.inputs[0].range.view_dim, (Dims{-1, -1, 2, 3}));
}

TEST(TraceViews, TransposeBothOperandsWithT) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 16});
  const int y = b.placeholder("y", {32, 64});
  const int t = b.call("t", "aten.t.default", {ref(x)}, {16, 64});
  const int t1 = b.call("t_1", "aten.t.default", {ref(y)}, {64, 32});
  const int mm = b.call("mm", "aten.mm.default", {ref(t), ref(t1)}, {16, 32});
  b.output({mm});
  const DAG d = trace(b.g);
  EXPECT_EQ(by_name(d, "mm").itype->str(), "Gemm(ta,tb)");
  EXPECT_EQ(by_name(d, "mm").itype->params(), "ta,tb");
}

TEST(TraceViews, SelectThenTOnStackedWeights) {
  // x @ W[1].t() with W (3, N, K): select + t.
  GraphBuilder b;
  const int x = b.placeholder("x", {16, 64});
  const int W = b.placeholder("W", {3, 32, 64});
  const int s = b.call("select", "aten.select.int", {ref(W), num(0), num(1)}, {32, 64});
  const int t = b.call("t", "aten.t.default", {ref(s)}, {64, 32});
  const int mm = b.call("mm", "aten.mm.default", {ref(x), ref(t)}, {16, 32});
  b.output({mm});
  const DAG d = trace(b.g);
  const Edge& e = by_name(d, "mm").inputs[1];
  EXPECT_EQ(by_name(d, "mm").itype->str(), "Gemm(tb)");
  EXPECT_EQ(e.range.box.str(), "((0,1),(1,2),(0,32),(0,64))");
  EXPECT_EQ(e.range.view_dim, (Dims{-1, -1, 3, 2}));
}

TEST(TraceViews, SliceThenTAndTThenSlice) {
  GraphBuilder b;
  const int x = b.placeholder("x", {16, 64});
  const int W = b.placeholder("W", {48, 64});
  // W[8:40].t(): (64, 32)
  const int s = b.call("slice", "aten.slice.Tensor", {ref(W), num(0), num(8), num(40)}, {32, 64});
  const int t = b.call("t", "aten.t.default", {ref(s)}, {64, 32});
  const int mm = b.call("mm", "aten.mm.default", {ref(x), ref(t)}, {16, 32});
  // W.t()[:, 8:40]: the same view reached the other way round.
  const int t2 = b.call("t_2", "aten.t.default", {ref(W)}, {64, 48});
  const int s2 = b.call("slice_2", "aten.slice.Tensor", {ref(t2), num(1), num(8), num(40)}, {64, 32});
  const int mm2 = b.call("mm_2", "aten.mm.default", {ref(x), ref(s2)}, {16, 32});
  b.output({mm, mm2});
  const DAG d = trace(b.g);
  const Edge& e = by_name(d, "mm").inputs[1];
  EXPECT_EQ(e.range.box.str(), "((0,1),(0,1),(8,40),(0,64))");
  EXPECT_EQ(e.range.view_dim, (Dims{-1, -1, 3, 2}));
  EXPECT_EQ(by_name(d, "mm_2").inputs[1].range, e.range);
  EXPECT_EQ(by_name(d, "mm_2").itype->str(), "Gemm(tb)");
}

TEST(TraceViews, BmmThroughNoOpExpandAndView) {
  // a @ b.transpose(1, 2) on 3-D tensors, as AOTAutograd emits it: expand/view no-ops around bmm.
  GraphBuilder b;
  const int a = b.placeholder("a", {2, 8, 16});
  const int c = b.placeholder("c", {2, 4, 16});
  const int tr = b.call("transpose", "aten.transpose.int", {ref(c), num(1), num(2)}, {2, 16, 4});
  const int ex = b.call("expand", "aten.expand.default", {ref(a), ints({2, 8, 16})}, {2, 8, 16});
  const int v = b.call("view", "aten.view.default", {ref(ex), ints({2, 8, 16})}, {2, 8, 16});
  const int ex1 = b.call("expand_1", "aten.expand.default", {ref(tr), ints({2, -1, 4})}, {2, 16, 4});
  const int v1 = b.call("view_1", "aten.view.default", {ref(ex1), ints({2, 16, 4})}, {2, 16, 4});
  const int bmm = b.call("bmm", "aten.bmm.default", {ref(v), ref(v1)}, {2, 8, 4});
  const int v2 = b.call("view_2", "aten.view.default", {ref(bmm), ints({2, 8, -1})}, {2, 8, 4});
  b.output({v2});
  const DAG d = trace(b.g);
  ASSERT_EQ(d.nodes.size(), 4u);
  const Node& n = by_name(d, "bmm");
  EXPECT_EQ(n.itype->str(), "Gemm(tb)");
  EXPECT_EQ(n.inputs[1].range.view_dim, (Dims{-1, 1, 3, 2}));
  EXPECT_TRUE(n.inputs[0].range.is_full({1, 2, 8, 16}));
  EXPECT_EQ(d.nodes.back().inputs[0].node, n.id);  // the no-op view in front of the output is folded
}

TEST(TraceViews, BatchPermutedGemmOperandIsCopied) {
  GraphBuilder b;
  const int a = b.placeholder("a", {2, 3, 8, 16});
  const int c = b.placeholder("c", {3, 2, 16, 8});
  const int p = b.call("permute", "aten.permute.default", {ref(c), ints({1, 0, 2, 3})}, {2, 3, 16, 8});
  const int mm = b.call("matmul", "aten.matmul.default", {ref(a), ref(p)}, {2, 3, 8, 8});
  b.output({mm});
  // The tracer folds the permute; the Gemm cannot read permuted batches ([Note: view copies]), so B is
  // a Copy of the view, and the Gemm itself still names the constraint.
  const DAG d = trace(b.g);
  const Node& n = by_name(d, "matmul");
  const Node& copy = d.nodes[n.inputs[1].node];
  EXPECT_EQ(copy.name, "matmul_in1_copy");
  EXPECT_EQ(copy.itype->str(), "Copy");  // rows and columns straight: only the batch dims move
  EXPECT_EQ(copy.inputs[0].node, by_name(d, "c").id);
  EXPECT_TRUE(n.inputs[1].range.is_full(Coord4{2, 3, 16, 8}));
  NodeInfo info;
  info.name = n.name;
  info.target = n.target;
  info.inputs = {{d.nodes[n.inputs[0].node].outputs[0], n.inputs[0].range},
                 {copy.inputs[0].range.backing(by_name(d, "c").outputs[0]), copy.inputs[0].range}};
  info.outputs = n.outputs;
  const std::string msg = error_of([&] { n.itype->validate(info); });
  EXPECT_HAS(msg, "node 'matmul' (aten.matmul.default): input B view");
  EXPECT_HAS(msg, "batch dims must run along the backing's batch dims in order");
}

TEST(TraceViews, TransposedViewInFrontOfOutputIsStrided) {
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 32});
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {64, 32});
  const int t = b.call("t", "aten.t.default", {ref(r)}, {32, 64});
  b.output({t});
  const DAG d = trace(b.g);
  const TensorRange& v = d.nodes.back().inputs.at(0).range;
  const TensorRange::Strided s = v.strided({1, 1, 64, 32});
  EXPECT_EQ(s.offset, 0);
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(s.strides, (std::vector<int64_t>{1, 32}));
  const TensorRange w = TensorRange::full({3, 64, 32}).select(0, 2).slice(0, 8, 16);
  const TensorRange::Strided ws = w.strided({1, 3, 64, 32});
  EXPECT_EQ(ws.offset, 2 * 64 * 32 + 8 * 32);
  EXPECT_EQ(ws.sizes, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(ws.strides, (std::vector<int64_t>{32, 1}));
}

TEST(TraceViews, ReshapeIsAnAliasOfAContiguousRun) {
  // [Note: reshape aliases] a whole tensor, and a contiguous slice of one, reshape without a copy.
  GraphBuilder b;
  const int x = b.placeholder("x", {3, 64, 64});
  const int s = b.call("select", "aten.select.int", {ref(x), num(0), num(1)}, {64, 64});
  const int v = b.call("view_3", "aten.view.default", {ref(s), ints({32, 128})}, {32, 128});
  const int r = b.call("relu", "aten.relu.default", {ref(v)}, {32, 128});
  const int u = b.call("unsqueeze", "aten.unsqueeze.default", {ref(r), num(0)}, {1, 32, 128});
  b.output({b.call("neg", "aten.neg.default", {ref(u)}, {1, 32, 128})});
  const DAG d = trace(b.g);
  const TensorRange& in = d.nodes[1].inputs.at(0).range;
  ASSERT_TRUE(in.alias.has_value());
  EXPECT_EQ(in.alias->offset, 64 * 64);
  EXPECT_EQ(in.alias->shape, (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(in.backing(d.nodes[0].outputs[0]).shape, (std::vector<int64_t>{32, 128}));
  const TensorRange& in2 = d.nodes[2].inputs.at(0).range;
  ASSERT_TRUE(in2.alias.has_value());
  EXPECT_EQ(in2.alias->offset, 0);
  EXPECT_EQ(in2.view_shape, (std::vector<int64_t>{1, 32, 128}));

  // [Note: view copies] a reshape of a transposed view reshapes a Copy of it.
  GraphBuilder t;
  const int y = t.placeholder("y", {64, 32});
  const int tr = t.call("t", "aten.t.default", {ref(y)}, {32, 64});
  const int vv = t.call("view_4", "aten.view.default", {ref(tr), ints({2048})}, {2048});
  t.output({t.call("relu", "aten.relu.default", {ref(vv)}, {2048})});
  const DAG dt = trace(t.g);
  const Node& copy = by_name(dt, "view_4_copy");
  EXPECT_EQ(copy.itype->str(), "Copy(src=32)");
  EXPECT_EQ(copy.outputs[0].shape, (std::vector<int64_t>{32, 64}));
  const Edge& e = by_name(dt, "relu").inputs[0];
  EXPECT_EQ(e.node, copy.id);
  ASSERT_TRUE(e.range.alias.has_value());
  EXPECT_EQ(e.range.alias->shape, (std::vector<int64_t>{2048}));
}

TEST(TraceViews, BroadcastViewOnlyForBinaryOps) {
  // A broadcast view folds, but only ElementwiseBinary reads one: a unary op reads a Copy of it.
  GraphBuilder b2;
  const int y = b2.placeholder("y", {1, 64});
  const int e = b2.call("expand", "aten.expand.default", {ref(y), ints({8, 64})}, {8, 64});
  b2.output({b2.call("relu", "aten.relu.default", {ref(e)}, {8, 64})});
  const DAG d2 = trace(b2.g);
  const Node& c2 = by_name(d2, "relu_in0_copy");
  EXPECT_EQ(c2.itype->str(), "Copy(src=-3)");
  EXPECT_TRUE(c2.inputs[0].range.has_broadcast());
  EXPECT_EQ(by_name(d2, "relu").inputs[0].node, c2.id);
  // An expand that cannot broadcast names both shapes.
  GraphBuilder b3;
  const int z = b3.placeholder("z", {3, 64});
  const int e3 = b3.call("expand", "aten.expand.default", {ref(z), ints({8, 64})}, {8, 64});
  b3.output({b3.call("mul", "aten.mul.Tensor", {ref(e3), ref(e3)}, {8, 64})});
  EXPECT_HAS(error_of([&] { trace(b3.g); }),
             "node 'expand' (aten.expand.default): expand: cannot expand a [3, 64] view to [8, 64]");
  // A reshape of a broadcast view is not a contiguous run: it reshapes a Copy.
  GraphBuilder b4;
  const int w = b4.placeholder("w", {64});
  const int e4 = b4.call("expand", "aten.expand.default", {ref(w), ints({8, 64})}, {8, 64});
  const int v4 = b4.call("view", "aten.view.default", {ref(e4), ints({512})}, {512});
  const int x4 = b4.placeholder("x", {512});
  b4.output({b4.call("add", "aten.add.Tensor", {ref(x4), ref(v4)}, {512})});
  EXPECT_EQ(by_name(trace(b4.g), "view_copy").itype->str(), "Copy(src=-3)");
}

TEST(TraceViews, BinaryOpsBroadcastImplicitlyAndThroughExpand) {
  GraphBuilder b;
  const int x = b.placeholder("x", {16, 64});
  const int w = b.placeholder("w", {64});
  const int c = b.placeholder("c", {16, 1});
  const int m = b.call("mul", "aten.mul.Tensor", {ref(x), ref(w)}, {16, 64});         // implicit
  const int e = b.call("expand", "aten.expand.default", {ref(w), ints({16, 64})}, {16, 64});
  const int a = b.call("add", "aten.add.Tensor", {ref(e), ref(m)}, {16, 64});         // expand_as
  const int s = b.call("sub", "aten.sub.Tensor", {ref(a), ref(c)}, {16, 64});         // column
  const int r = b.call("rsub", "aten.rsub.Tensor", {ref(c), ref(s)}, {16, 64});       // s - c
  b.output({r});
  const DAG d = trace(b.g, /*fuse=*/false);  // each op on its own (fuse_elementwise would merge them)
  EXPECT_EQ(by_name(d, "mul").itype->str(), "ElementwiseBinary(op=mul,alpha=1,bcast_b=0010)");
  EXPECT_EQ(by_name(d, "add").itype->str(), "ElementwiseBinary(op=add,alpha=1,bcast_a=0010)");
  EXPECT_EQ(by_name(d, "sub").itype->str(), "ElementwiseBinary(op=sub,alpha=1,bcast_b=0001)");
  EXPECT_EQ(by_name(d, "rsub").itype->str(), "ElementwiseBinary(op=sub,alpha=1,bcast_b=0001)");
  const TensorRange& er = by_name(d, "add").inputs[0].range;
  EXPECT_EQ(er.view_shape, (Shape{16, 64}));
  EXPECT_EQ(er.bcast, (std::array<bool, 4>{false, false, true, false}));
  EXPECT_EQ(er.box.str(), "((0,1),(0,1),(0,1),(0,64))");
  // Incompatible operands name both shapes.
  GraphBuilder g;
  const int p = g.placeholder("p", {16, 64});
  const int q = g.placeholder("q", {32});
  g.output({g.call("mul", "aten.mul.Tensor", {ref(p), ref(q)}, {16, 64})});
  EXPECT_HAS(error_of([&] { trace(g.g); }),
             "node 'mul' (aten.mul.Tensor): ElementwiseBinary: input a of shape [16, 64] and input b of shape [32] do not broadcast");
}

TEST(TraceViews, BadPermuteNamesNode) {
  GraphBuilder b;
  const int x = b.placeholder("x", {8, 16});
  const int p = b.call("permute_4", "aten.permute.default", {ref(x), ints({0, 0})}, {8, 8});
  b.output({b.call("relu", "aten.relu.default", {ref(p)}, {8, 8})});
  EXPECT_HAS(error_of([&] { trace(b.g); }), "node 'permute_4' (aten.permute.default): permute: dims [0, 0] repeat");
  GraphBuilder b2;
  const int y = b2.placeholder("y", {2, 8, 16});
  const int t = b2.call("t_5", "aten.t.default", {ref(y)}, {16, 8, 2});
  b2.output({b2.call("relu", "aten.relu.default", {ref(t)}, {16, 8, 2})});
  EXPECT_HAS(error_of([&] { trace(b2.g); }), "node 't_5' (aten.t.default): t() expects a tensor with <= 2 dims");
}

TEST(TraceViews, FoldedShapeCheckedAgainstGraph) {
  GraphBuilder b;
  const int x = b.placeholder("x", {8, 16});
  const int t = b.call("t", "aten.t.default", {ref(x)}, {8, 16});  // wrong meta: should be [16, 8]
  b.output({b.call("relu", "aten.relu.default", {ref(t)}, {8, 16})});
  EXPECT_HAS(error_of([&] { trace(b.g); }), "internal: the folded view has shape [16, 8], the graph says [8, 16]");
}

}  // namespace
}  // namespace mk
