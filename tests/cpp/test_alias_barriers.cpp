// [Note: reshape aliases] phase 3 moves both sides of a reshape alias into the common refinement of
// their shapes when it can, instead of cutting them into one run per row: the program (instruction
// words, barriers) must be the same as with flat runs everywhere (ScheduleOptions::flat_aliases).
#include <gtest/gtest.h>

#include <cstring>

#include "fx_builder.h"
#include "schedule/program.h"
#include "trace/tracer.h"

namespace mk {
namespace {

using test::GraphBuilder;
using test::list;
using test::num;
using test::ref;

FxArg ints(std::vector<int64_t> v) {
  std::vector<FxArg> items;
  for (auto x : v) items.push_back(num(x));
  return list(items);
}

int alias_edges(const DAG& d) {
  int n = 0;
  for (const Node& node : d.nodes)
    for (const Edge& e : node.inputs) n += e.range.alias.has_value();
  return n;
}

void expect_same_as_flat(const FxGraph& g, int cluster = 2) {
  const DAG d = trace(g);
  ASSERT_GT(alias_edges(d), 0);
  ScheduleOptions o;
  o.profile = Profile::h200(16);
  o.cluster_size = cluster;
  const Program common = schedule(d, o);
  o.flat_aliases = true;
  const Program flat = schedule(d, o);
  ASSERT_EQ(common.instructions.size(), flat.instructions.size());
  EXPECT_EQ(std::memcmp(common.instructions.data(), flat.instructions.data(),
                        common.instructions.size() * sizeof(Instruction)), 0);
  ASSERT_EQ(common.barriers.size(), flat.barriers.size());
  for (size_t b = 0; b < common.barriers.size(); ++b) {
    EXPECT_EQ(common.barriers[b].target, flat.barriers[b].target) << "barrier " << b;
    EXPECT_EQ(common.barriers[b].producer, flat.barriers[b].producer) << "barrier " << b;
  }
  EXPECT_EQ(format_schedule(common), format_schedule(flat));
}

TEST(AliasBarriers, SplitHeadsOfAGemmOutput) {
  // q = (x @ w).view(1, S, H, D).transpose(1, 2) read by SDPA, as in examples/llama.py.
  GraphBuilder b;
  const int x = b.placeholder("x", {256, 512});
  const int w = b.placeholder("w", {512, 512});
  const int k = b.placeholder("k", {1, 8, 256, 64});
  const int v = b.placeholder("v", {1, 8, 256, 64});
  const int mm = b.call("mm", "aten.mm.default", {ref(x), ref(w)}, {256, 512});
  const int vw = b.call("view", "aten.view.default", {ref(mm), ints({1, 256, 8, 64})}, {1, 256, 8, 64});
  const int q = b.call("tq", "aten.transpose.int", {ref(vw), num(1), num(2)}, {1, 8, 256, 64});
  b.output({b.call("sdpa", "aten.scaled_dot_product_attention.default", {ref(q), ref(k), ref(v)}, {1, 8, 256, 64})});
  expect_same_as_flat(b.g);
}

TEST(AliasBarriers, MergedAndSplitDims) {
  // (256, 512) -> (1, 256, 512) (unsqueeze), -> (256, 8, 64) and -> (128, 1024) (rows merge).
  GraphBuilder b;
  const int x = b.placeholder("x", {256, 512});
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {256, 512});
  const int u = b.call("unsqueeze", "aten.unsqueeze.default", {ref(r), num(0)}, {1, 256, 512});
  const int n = b.call("neg", "aten.neg.default", {ref(u)}, {1, 256, 512});
  const int s = b.call("view", "aten.view.default", {ref(r), ints({256, 8, 64})}, {256, 8, 64});
  const int e = b.call("exp", "aten.exp.default", {ref(s)}, {256, 8, 64});
  const int m = b.call("view_1", "aten.view.default", {ref(r), ints({128, 1024})}, {128, 1024});
  const int t = b.call("tanh", "aten.tanh.default", {ref(m)}, {128, 1024});
  b.output({n, e, t});
  expect_same_as_flat(b.g);
  expect_same_as_flat(b.g, 1);
}

TEST(AliasBarriers, NoCommonShapeOrAnOffset) {
  // (192, 80) -> (80, 192): no common refinement; select(0, 1) then view: an offset alias. Both flat.
  GraphBuilder b;
  const int x = b.placeholder("x", {192, 80});
  const int r = b.call("relu", "aten.relu.default", {ref(x)}, {192, 80});
  const int v = b.call("view", "aten.view.default", {ref(r), ints({80, 192})}, {80, 192});
  const int n = b.call("neg", "aten.neg.default", {ref(v)}, {80, 192});
  const int y = b.placeholder("y", {3, 64, 64});
  const int ry = b.call("relu_1", "aten.relu.default", {ref(y)}, {3, 64, 64});
  const int s = b.call("select", "aten.select.int", {ref(ry), num(0), num(1)}, {64, 64});
  const int vs = b.call("view_1", "aten.view.default", {ref(s), ints({32, 128})}, {32, 128});
  b.output({n, b.call("exp", "aten.exp.default", {ref(vs)}, {32, 128})});
  expect_same_as_flat(b.g);
}

}  // namespace
}  // namespace mk
