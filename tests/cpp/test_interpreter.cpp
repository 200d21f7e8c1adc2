// The CPU reference interpreter on hand-built Programs (no tracer, no scheduler): barriers order
// producer -> consumer, races and deadlocks are reported, per-SM order holds, dtypes round right.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ir/error.h"
#include "reference/interpreter.h"
#include "reference/memory.h"

namespace mk {
namespace {

// Test-only IType: out = in + 1 over one box. Indices: in.b in.d in.r in.c | out.b out.d out.r out.c |
// rows cols. Optionally logs the order in which instructions execute.
std::vector<int64_t>* g_log = nullptr;

class AddOne final : public IType {
 public:
  std::string name() const override { return "AddOne"; }
  void validate(const NodeInfo&) const override {}
  int64_t num_instructions(const NodeInfo&) const override { return 0; }
  InstrDesc instruction(const NodeInfo&, int64_t) const override { return {}; }
  void execute(const Instruction& in, ExecContext& ctx) const override {
    if (g_log) g_log->push_back(ctx.instruction_index);
    const int* x = in.indices;
    auto box = [&](const int* o) { return Box{{o[0], o[1], o[2], o[3]}, {o[0] + 1, o[1] + 1, o[2] + x[8], o[3] + x[9]}}; };
    std::vector<float> v = ctx.load(in.src_slot(0), box(x));
    for (float& f : v) f += 1.0f;
    ctx.store(in.dst_slot(0), box(x + 4), v);
  }
};

constexpr int64_t R = 64, C = 16;
constexpr int kInputNode = 0;

Instruction add_one(int src, int dst, int64_t r0_in, int64_t r0_out, int64_t rows) {
  Instruction in;
  in.icode = 1;
  in.set_src_slot(0, src);
  in.set_dst_slot(0, dst);
  const int32_t idx[10] = {0, 0, static_cast<int32_t>(r0_in), 0, 0, 0, static_cast<int32_t>(r0_out), 0,
                           static_cast<int32_t>(rows), C};
  std::copy(idx, idx + 10, in.indices);
  return in;
}
void wait_on(Instruction& in, uint32_t b, int32_t target, bool reuse = false) {
  const int k = in.num_src_barriers();
  in.src_barriers[k] = b, in.src_targets[k] = target;
  (reuse ? in.num_src_reuse : in.num_src_input)++;
}
void arrive_on(Instruction& in, uint32_t b, bool reuse = false) {
  in.dst_barriers[in.num_dst_barriers()] = b;
  (reuse ? in.num_dst_reuse : in.num_dst_input)++;
}
int add_node(Program& p, int dag_id, const char* name, int src, int dst, int src_producer, int64_t count) {
  NodeSchedule n;
  n.node = dag_id, n.name = name, n.itype = p.icodes[1];
  n.start = static_cast<int64_t>(p.instructions.size()), n.count = n.padded = count, n.icode = 1;
  n.src_slots = {src}, n.dst_slots = {dst}, n.src_producers = {src_producer};
  p.nodes.push_back(n);
  return static_cast<int>(p.nodes.size()) - 1;
}

// T0 (bf16 input) --a: +1, 16 tiles of 4 rows--> T1 (f32) --b: +1, 8 tiles of 8 rows--> T2 (bf16).
// Consumer tile j of b waits on barrier j (target 2: producer tiles 2j, 2j+1).
// With `reuse`, a third node c (T0 + 1 -> T1 again, 16 tiles) reuses T1 after b's reads: every b
// instruction arrives on reuse barrier 8, every c instruction waits for 8 arrivals.
// `drop`: a barrier id that consumers no longer wait on (the scheduler's drop_barrier test hook).
Program chain(int num_sms, bool reuse = false, int drop = -1) {
  Program p;
  p.name = "chain";
  p.profile.name = "test";
  p.profile.num_sms = num_sms;
  p.cluster_size = 2;
  p.slots = {{DType::bf16, {R, C}}, {DType::f32, {R, C}}, {DType::bf16, {R, C}}};
  p.input_slots = {0};
  p.output_slots = {2};
  p.slot_producer = {kInputNode, 1, 2};
  p.icodes = {std::make_shared<Noop>(), std::make_shared<AddOne>()};
  const int a = add_node(p, 1, "a", 0, 1, kInputNode, 16);
  for (int t = 0; t < 16; ++t) {
    Instruction in = add_one(0, 1, 4 * t, 4 * t, 4);
    arrive_on(in, t / 2);
    p.instructions.push_back(in), p.instruction_node.push_back(a);
  }
  for (int j = 0; j < 8; ++j) p.barriers.push_back({2, a, false});
  const int b = add_node(p, 2, "b", 1, 2, 1, 8);
  for (int j = 0; j < 8; ++j) {
    Instruction in = add_one(1, 2, 8 * j, 8 * j, 8);
    if (j != drop) wait_on(in, j, 2);
    if (reuse) arrive_on(in, 8, true);
    p.instructions.push_back(in), p.instruction_node.push_back(b);
  }
  if (reuse) {
    p.barriers.push_back({8, -1, true});
    const int c = add_node(p, 3, "c", 0, 1, kInputNode, 16);
    for (int t = 0; t < 16; ++t) {
      Instruction in = add_one(0, 1, 4 * t, 4 * t, 4);
      if (drop != 8) wait_on(in, 8, 8, true);
      p.instructions.push_back(in), p.instruction_node.push_back(c);
    }
    p.output_slots = {2, 1};
  }
  return p;
}

struct Buffers {
  std::vector<uint16_t> t0, t2;
  std::vector<float> t1;
  std::vector<SlotBuffer> slots;
  Buffers() : t0(R * C), t2(R * C, 0xffff), t1(R * C, -1.0f) {
    for (int64_t i = 0; i < R * C; ++i) t0[i] = float_to_bf16(static_cast<float>(i % 97));
    slots = {{t0.data()}, {t1.data()}, {t2.data()}};
  }
  bool chain_ok() const {  // T2 = T0 + 2
    for (int64_t i = 0; i < R * C; ++i)
      if (bf16_to_float(t2[i]) != bf16_to_float(t0[i]) + 2.0f) return false;
    return true;
  }
};

InterpretOptions opts(uint64_t seed, bool global) { return {seed, global, true}; }

TEST(Interp, ChainCorrectOverSeedsAndModes) {
  for (int sms : {1, 3, 4, 132})
    for (bool global : {false, true})
      for (uint64_t seed = 0; seed < 20; ++seed) {
        Program p = chain(sms);
        Buffers buf;
        const InterpretStats st = interpret(p, buf.slots, opts(seed, global));
        EXPECT_EQ(st.instructions, 24);
        EXPECT_TRUE(buf.chain_ok()) << "sms " << sms << " global " << global << " seed " << seed;
      }
}

TEST(Interp, ReuseChainCorrect) {
  for (bool global : {false, true})
    for (uint64_t seed = 0; seed < 20; ++seed) {
      Program p = chain(4, true);
      Buffers buf;
      EXPECT_EQ(interpret(p, buf.slots, opts(seed, global)).instructions, 40);
      EXPECT_TRUE(buf.chain_ok()) << "seed " << seed;
      for (int64_t i = 0; i < R * C; ++i) ASSERT_EQ(buf.t1[i], bf16_to_float(buf.t0[i]) + 1.0f);
    }
}

// A consumer that no longer waits on its producers must be caught for some seed, as a RaceError
// (with race checks) or as wrong data (without). Global mode claims in index order, so it can only
// overtake a producer less than num_sms instructions back: give it 16 SMs.
TEST(Interp, MissingInputBarrierIsCaught) {
  for (bool global : {false, true}) {
    const int sms = global ? 16 : 4;
    int races = 0, wrong = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      Program p = chain(sms, false, /*drop=*/3);
      Buffers buf;
      try {
        interpret(p, buf.slots, opts(seed, global));
      } catch (const RaceError& e) {
        ++races;
        const std::string msg = e.what();
        EXPECT_NE(msg.find("node 'b'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("slot T1"), std::string::npos) << msg;
        EXPECT_NE(msg.find("never written"), std::string::npos) << msg;
      }
      Buffers raw;
      interpret(chain(sms, false, 3), raw.slots, {seed, global, false});
      wrong += !raw.chain_ok();
    }
    EXPECT_GT(races, 0) << "global " << global;
    EXPECT_GT(wrong, 0) << "global " << global;
  }
}

// Without the reuse barrier, c overwrites T1 before b has read it (write-after-read).
TEST(Interp, MissingReuseBarrierIsCaught) {
  int races = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Program p = chain(4, true, /*drop=*/8);
    Buffers buf;
    try {
      interpret(p, buf.slots, opts(seed, false));
    } catch (const RaceError& e) {
      ++races;
      EXPECT_NE(std::string(e.what()).find("last written by node 3 ('c')"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(races, 0);
}

TEST(Interp, UnreachedTargetDeadlocks) {
  for (bool global : {false, true}) {
    Program p = chain(4);
    p.instructions[16 + 3].src_targets[0] = 5;  // b's tile 3 waits for 5 arrivals; only 2 come
    p.barriers[3].target = 5;
    Buffers buf;
    try {
      interpret(p, buf.slots, opts(1, global));
      FAIL() << "no deadlock";
    } catch (const DeadlockError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("instruction 19"), std::string::npos) << msg;
      EXPECT_NE(msg.find("node 'b'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("AddOne"), std::string::npos) << msg;
      EXPECT_NE(msg.find("barrier 3 (input) at 2/5"), std::string::npos) << msg;
    }
  }
}

TEST(Interp, ExtraArrivalIsInternalError) {
  Program p = chain(4);
  p.barriers[0].target = 1;  // two producers arrive on it
  Buffers buf;
  EXPECT_THROW(interpret(p, buf.slots, opts(0, false)), std::logic_error);
}

TEST(Interp, PerSmOrderRespected) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<int64_t> log;
    g_log = &log;
    Program p = chain(3, true);
    Buffers buf;
    interpret(p, buf.slots, opts(seed, false));
    g_log = nullptr;
    ASSERT_EQ(log.size(), 40u);
    std::vector<int64_t> last(3, -1);
    for (int64_t i : log) {
      EXPECT_GT(i, last[i % 3]) << "SM " << i % 3 << " ran " << i << " after " << last[i % 3] << ", seed " << seed;
      last[i % 3] = i;
    }
  }
}

// Different seeds give different interleavings (the point of sweeping them).
TEST(Interp, SeedsVaryTheOrder) {
  std::set<std::vector<int64_t>> orders;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<int64_t> log;
    g_log = &log;
    Program p = chain(8);
    Buffers buf;
    interpret(p, buf.slots, opts(seed, seed % 2));
    g_log = nullptr;
    orders.insert(log);
  }
  EXPECT_GT(orders.size(), 5u);
}

TEST(Interp, NoopPaddingAndSkew) {
  Program p = chain(4);
  // Pad a with two Noops, as the scheduler pads node ranges to the cluster size.
  Program q = p;
  q.instructions.insert(q.instructions.begin() + 16, 2, Instruction{});
  q.instruction_node.insert(q.instruction_node.begin() + 16, 2, -1);
  q.nodes[1].start += 2;
  Buffers buf;
  const InterpretStats st = interpret(q, buf.slots, opts(2, false));
  EXPECT_EQ(st.instructions, 24);  // Noops are not counted
  EXPECT_TRUE(buf.chain_ok());
  EXPECT_GE(st.max_in_flight_skew, 3);
}

TEST(Interp, OutOfBoundsBoxNamesInstruction) {
  Program p = chain(4);
  p.instructions[5].indices[2] = R - 2;  // a 4-row tile starting 2 rows from the end
  Buffers buf;
  try {
    interpret(p, buf.slots, opts(0, false));
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("instruction 5 (node 'a'"), std::string::npos) << e.what();
  }
}

TEST(Interp, BufferCountChecked) {
  Program p = chain(4);
  Buffers buf;
  buf.slots.pop_back();
  EXPECT_THROW(interpret(p, buf.slots, opts(0, false)), std::invalid_argument);
}

TEST(InterpMemory, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the largest bf16
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7f800001u)))));  // NaN kept
  EXPECT_EQ(bf16_to_float(float_to_bf16(-3.5f)), -3.5f);
}

TEST(InterpMemory, F16RoundsToNearestEven) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);       // tie to even (0)
  EXPECT_EQ(float_to_f16(std::ldexp(3.0f, -25)), 0x0002);       // tie to even (2)
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie, odd rounds up
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(std::nanf("")))));
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every non-NaN half round-trips
    const float f = f16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16(f), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace mk
