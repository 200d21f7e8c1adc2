// [Note: barrier coarsening] causal attention at 2048 rows reads key/value prefixes: without merging
// dependency sets the first key tile would arrive on 16 barriers (room for 8). The merged schedule
// fits, and the interpreter (race checks on) still runs it correctly in any interleaving.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "fx_builder.h"
#include "reference/interpreter.h"
#include "reference/memory.h"
#include "schedule/program.h"
#include "trace/tracer.h"

using namespace mk;
using namespace mk::test;

namespace {

// o = causal SDPA(q, -k, -v): q (1, 1, S, 64), k, v (1, 1, S, 64); the negations make k and v
// computed tensors, so the attention waits on their tiles.
FxGraph causal_graph(int64_t S) {
  GraphBuilder b;
  const int q = b.placeholder("q", {1, 1, S, 64});
  const int k = b.placeholder("k", {1, 1, S, 64});
  const int v = b.placeholder("v", {1, 1, S, 64});
  const int nk = b.call("neg", "aten.neg.default", {ref(k)}, {1, 1, S, 64});
  const int nv = b.call("neg_1", "aten.neg.default", {ref(v)}, {1, 1, S, 64});
  FxArg causal;
  causal.kind = FxArg::Kind::Bool;
  causal.i = 1;
  const int a = b.add("sdpa", "call_function", "aten.scaled_dot_product_attention.default",
                      {ref(q), ref(nk), ref(nv), FxArg{}, real(0.0), causal}, contiguous({1, 1, S, 64}));
  b.output({a});
  return b.g;
}

int max_dst(const Program& p) {
  int m = 0;
  for (const Instruction& in : p.instructions) m = std::max(m, in.num_dst_barriers());
  return m;
}

TEST(BarrierCoarsening, CausalPrefixesFitTheDstLimit) {
  ScheduleOptions o;
  o.profile = Profile::h200(16);
  o.cluster_size = 1;
  const Program small = schedule(trace(causal_graph(512)), o);  // 4 query tiles: within the limit
  EXPECT_EQ(max_dst(small), 4);
  const int64_t S = 2048;
  const Program p = schedule(trace(causal_graph(S)), o);
  EXPECT_LE(max_dst(p), kMaxDstBarriers);
  EXPECT_GE(max_dst(p), kMaxDstBarriers / 2);  // merged only as far as needed

  // Run it: every output row of the first query tile matches a naive fp64 attention.
  std::vector<std::vector<uint16_t>> mem;
  for (const TensorMeta& m : p.slots) mem.emplace_back(m.numel(), 0x7fc0);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int k = 0; k < 3; ++k)
    for (auto& x : mem[p.input_slots[k]]) x = float_to_bf16(nd(rng));
  std::vector<SlotBuffer> bufs;
  for (auto& m : mem) bufs.push_back({m.data()});
  for (uint64_t seed : {0, 1, 2}) {
    InterpretOptions io;
    io.seed = seed;
    interpret(p, bufs, io);
  }
  const auto &Q = mem[p.input_slots[0]], &K = mem[p.input_slots[1]], &V = mem[p.input_slots[2]];
  const auto& O = mem[p.output_slots[0]];
  for (int64_t i : {int64_t(0), int64_t(5), S - 1}) {
    std::vector<double> w(i + 1);
    double mx = -1e30, sum = 0;
    for (int64_t j = 0; j <= i; ++j) {
      double dot = 0;
      for (int d = 0; d < 64; ++d) dot += bf16_to_float(Q[i * 64 + d]) * -bf16_to_float(K[j * 64 + d]);
      w[j] = dot / 8.0;
      mx = std::max(mx, w[j]);
    }
    for (double& x : w) sum += (x = std::exp(x - mx));
    for (int d = 0; d < 64; d += 7) {
      double want = 0;
      for (int64_t j = 0; j <= i; ++j) want += w[j] / sum * -bf16_to_float(V[j * 64 + d]);
      EXPECT_NEAR(bf16_to_float(O[i * 64 + d]), want, 1e-2 * std::max(1.0, std::fabs(want))) << i << "," << d;
    }
  }
}

// A reuse barrier of a slot is arrived at only by the instructions that touched its old tensor: a Cat of
// 12 computed inputs, each of whose slots a later tensor reuses, makes 12 reuse events with the Cat as an
// arriver, but each Cat instruction reads one input, so it arrives on that input's reuse barrier alone
// (every instruction of the Cat on all 12 was past the limit of 8; im2col's Cat of a convolution's taps).
TEST(BarrierCoarsening, ReuseArrivalsOnlyFromInstructionsThatTouchTheOldTensor) {
  GraphBuilder b;
  constexpr int kN = 12;
  std::vector<FxArg> parts;
  std::vector<int> xs;
  for (int i = 0; i < kN; ++i) {
    xs.push_back(b.placeholder("x" + std::to_string(i), {64, 64}));
    parts.push_back(ref(b.call("neg_" + std::to_string(i), "aten.neg.default", {ref(xs.back())}, {64, 64})));
  }
  const int big = b.placeholder("big", {4096, 256});
  const int cat = b.call("cat", "aten.cat.default", {list(parts), num(0)}, {kN * 64, 64});
  const int gap = b.call("relu_big", "aten.relu.default", {ref(big)}, {4096, 256});  // >= one wave apart
  std::vector<int> outs{cat, gap};
  for (int i = 0; i < kN; ++i)  // same meta as neg_i, after the gap: takes a released slot
    outs.push_back(b.call("sin_" + std::to_string(i), "aten.sin.default", {ref(xs[i])}, {64, 64}));
  b.output(outs);
  ScheduleOptions o;
  o.profile = Profile::h200(16);
  o.cluster_size = 1;
  const Program p = schedule(trace(b.g), o);
  int reuse = 0;
  for (const BarrierInfo& br : p.barriers) reuse += br.reuse;
  EXPECT_GE(reuse, kN / 2);  // the slots were reused
  int64_t cat_instructions = 0;
  for (size_t k = 0; k < p.instructions.size(); ++k)
    if (p.instruction_node[k] >= 0 && p.nodes[p.instruction_node[k]].itype->name() == "Cat") {
      ++cat_instructions;
      EXPECT_LE(p.instructions[k].num_dst_reuse, 1);
    }
  EXPECT_GE(cat_instructions, kN);
  EXPECT_LE(max_dst(p), kMaxDstBarriers);

  // And the reused slots are safe: the interpreter (race checks on) gives the eager values in any order.
  std::vector<std::vector<uint16_t>> mem;
  for (const TensorMeta& m : p.slots) mem.emplace_back(m.numel(), 0x7fc0);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int s : p.input_slots)
    for (auto& x : mem[s]) x = float_to_bf16(nd(rng));
  std::vector<SlotBuffer> bufs;
  for (auto& m : mem) bufs.push_back({m.data()});
  for (uint64_t seed : {0, 1, 2, 3}) {
    InterpretOptions io;
    io.seed = seed;
    interpret(p, bufs, io);
    const auto& C = mem[p.output_slots[0]];
    for (int i = 0; i < kN; ++i) {
      const auto& X = mem[p.input_slots[i]];
      const auto& S = mem[p.output_slots[2 + i]];
      for (int e = 0; e < 64 * 64; e += 97) {
        EXPECT_EQ(C[i * 64 * 64 + e], X[e] ^ 0x8000) << i << "," << e;
        EXPECT_NEAR(bf16_to_float(S[e]), std::sin(bf16_to_float(X[e])), 1e-2) << i << "," << e;
      }
    }
  }
}

}  // namespace
