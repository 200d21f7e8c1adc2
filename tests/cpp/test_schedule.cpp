// The scheduler against the seed's own worked example (§04-§05): the 3-layer MLP on the b200 profile.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "fx_builder.h"
#include "itypes/itype.h"
#include "schedule/program.h"
#include "trace/tracer.h"

using namespace mk;

namespace {

Program schedule_mlp(int64_t M, int64_t H, const Profile& profile, int cluster, bool seed_icodes = false) {
  const DAG dag = trace(test::seed_mlp(M, H), /*fuse=*/false);  // the seed's own lowering
  ScheduleOptions o;
  o.profile = profile;
  o.cluster_size = cluster;
  o.icode_per_tensor_tuple = seed_icodes;
  return schedule(dag, o);
}

const NodeSchedule& node_named(const Program& p, const std::string& name) {
  for (const auto& n : p.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

std::set<int64_t> waits_on(const Program& p, int64_t consumer) {
  // The producer instructions whose dst barriers include one of `consumer`'s input barriers.
  const Instruction& c = p.instructions[consumer];
  std::set<int64_t> out;
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    for (int k = 0; k < in.num_dst_barriers(); ++k)
      for (int j = 0; j < c.num_src_input; ++j)
        if (in.dst_barriers[k] == c.src_barriers[j]) out.insert(static_cast<int64_t>(i));
  }
  return out;
}

}  // namespace

TEST(ScheduleGolden, SeedMlpCountsSlotsAndBarriers) {
  const Program p = schedule_mlp(1024, 1024, Profile::b200(), 2, /*seed_icodes=*/true);
  EXPECT_EQ(p.instructions.size(), 240u);

  // 11 slots: T0 = W, T1 = x, T2 = b, then intermediates.
  ASSERT_EQ(p.slots.size(), 11u);
  EXPECT_EQ(p.input_slots, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.slots[0].shape, (std::vector<int64_t>{3, 1024, 1024}));
  EXPECT_EQ(p.slots[1].shape, (std::vector<int64_t>{1024, 1024}));
  // The final ReLU reuses T3 (layer 1's GEMM output); layer 3's add gets a fresh slot.
  EXPECT_EQ(node_named(p, "mm").dst_slots, std::vector<int>{3});
  EXPECT_EQ(node_named(p, "relu_2").dst_slots, std::vector<int>{3});
  EXPECT_EQ(node_named(p, "relu_2").start, 208);
  EXPECT_EQ(node_named(p, "add_2").start, 176);
  EXPECT_NE(node_named(p, "add_2").dst_slots[0], 3);
  EXPECT_EQ(p.output_slots, std::vector<int>{3});

  // 125 barriers = 42 + 42 + 40 input barriers + 1 reuse barrier.
  EXPECT_EQ(p.barriers.size(), 125u);
  int reuse = 0;
  std::map<std::string, int> per_producer;
  for (const auto& b : p.barriers) {
    if (b.reuse) ++reuse;
    else per_producer[p.nodes[b.producer].name]++;
  }
  EXPECT_EQ(reuse, 1);
  EXPECT_EQ(per_producer["mm"], 8);      // GEMM -> add: one per 512x256 tile
  EXPECT_EQ(per_producer["add"], 32);    // add -> relu: one per instruction
  EXPECT_EQ(per_producer["relu"], 2);    // relu -> next GEMM: one per 512-row block
  EXPECT_EQ(per_producer["relu_2"], 0);  // feeds the output
  for (const auto& b : p.barriers)
    if (!b.reuse && p.nodes[b.producer].itype->name() == "Gemm") EXPECT_EQ(b.target, 2);

  // Layer 2's GEMM row block 0 is instructions 80-87 and waits only on the 16 ReLUs of rows 0-511.
  const NodeSchedule& mm1 = node_named(p, "mm_1");
  EXPECT_EQ(mm1.start, 80);
  const NodeSchedule& relu0 = node_named(p, "relu");
  for (int64_t i = 80; i < 88; ++i) {
    const std::set<int64_t> deps = waits_on(p, i);
    ASSERT_EQ(deps.size(), 16u) << "instruction " << i;
    for (int64_t d : deps) {
      const int32_t* idx = p.instructions[d].indices;
      EXPECT_GE(d, relu0.start);
      EXPECT_LT(d, relu0.end());
      EXPECT_LT(idx[6], 512) << "relu instruction " << d << " writes row " << idx[6];  // y.r
    }
    EXPECT_EQ(p.instructions[i].indices[10], (i % 2) * 256) << "row block 0, the rank's own half: D.r origin";
  }
  EXPECT_EQ(waits_on(p, 88).size(), 16u);

  // The seed's icode rule: 9 icodes besides Noop.
  EXPECT_EQ(p.icodes.size(), 10u);
  // Per-SM table [2, 148, 64], 56 zero-filled slots.
  EXPECT_EQ(p.waves(), 2);
  const std::vector<int32_t> table = p.table_per_sm();
  ASSERT_EQ(table.size(), 2u * 148 * 64);
  int zero_slots = 0;
  for (size_t s = 0; s < 2 * 148; ++s)
    zero_slots += std::all_of(table.begin() + s * 64, table.begin() + (s + 1) * 64, [](int32_t w) { return w == 0; });
  EXPECT_EQ(zero_slots, 56);
  EXPECT_EQ(p.table_global().size(), 240u * 64);
}

TEST(ScheduleGolden, OneIcodePerIType) {
  const Program p = schedule_mlp(1024, 1024, Profile::b200(), 2);
  EXPECT_EQ(p.icodes.size(), 4u);  // Noop, Gemm, add, relu: identical layers share instantiations
  EXPECT_EQ(p.icodes[0]->name(), "Noop");
  EXPECT_EQ(p.instructions.size(), 240u);
  EXPECT_EQ(p.barriers.size(), 125u);
}

TEST(Schedule, H200ProfileAndClusterPadding) {
  const Program p = schedule_mlp(1000, 512, Profile::h200(132), 2);
  for (const auto& n : p.nodes) {
    EXPECT_EQ(n.start % 2, 0) << n.name;
    EXPECT_EQ(n.padded % 2, 0) << n.name;
    EXPECT_GE(n.padded, n.count);
  }
  for (size_t i = 0; i < p.instructions.size(); ++i)
    if (p.instruction_node[i] < 0) {
      EXPECT_EQ(p.instructions[i].icode, 0);
      EXPECT_EQ(p.instructions[i].num_src_barriers() + p.instructions[i].num_dst_barriers(), 0);
    }
  // Every dependency points backwards in the list (the per-SM deadlock-freedom argument).
  for (size_t c = 0; c < p.instructions.size(); ++c)
    for (int64_t d : waits_on(p, static_cast<int64_t>(c))) EXPECT_LT(d, static_cast<int64_t>(c));
}

TEST(Schedule, RejectsOddSmCountWithClusters) {
  const DAG dag = trace(test::seed_mlp(512, 512), /*fuse=*/false);
  ScheduleOptions o;
  o.profile = Profile::h200(131);
  o.cluster_size = 2;
  EXPECT_THROW(schedule(dag, o), CompileError);
  o.cluster_size = 3;
  o.profile = Profile::h200(132);
  EXPECT_THROW(schedule(dag, o), CompileError);
}

TEST(Schedule, InstructionIsExactly256Bytes) {
  EXPECT_EQ(sizeof(Instruction), 256u);
}
