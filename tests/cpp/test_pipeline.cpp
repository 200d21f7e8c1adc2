// The whole host pipeline without Python: FX graph -> trace -> schedule -> CPU reference interpreter,
// checked against a naive fp32 computation, and a schedule with a barrier removed must be caught.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "fx_builder.h"
#include "ir/error.h"
#include "reference/interpreter.h"
#include "schedule/program.h"
#include "trace/tracer.h"

using namespace mk;

namespace {

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct MlpRun {
  int64_t M, H;
  std::vector<std::vector<uint16_t>> slots;
  Program prog;

  MlpRun(int64_t m, int64_t h, const Profile& profile, int cluster, int drop_barrier = -1) : M(m), H(h) {
    ScheduleOptions o;
    o.profile = profile;
    o.cluster_size = cluster;
    o.drop_barrier = drop_barrier;
    prog = schedule(trace(test::seed_mlp(M, H)), o);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (const TensorMeta& m : prog.slots) slots.emplace_back(m.numel(), 0x7fc0);  // NaN poison
    for (int k = 0; k < 3; ++k) {
      const float scale = k == 0 ? 1.f / std::sqrt(float(H)) : 1.f;
      for (auto& v : slots[prog.input_slots[k]]) v = to_bf16(nd(rng) * scale);
    }
  }
  void run(uint64_t seed, bool global) {
    std::vector<SlotBuffer> bufs;
    for (auto& s : slots) bufs.push_back({s.data()});
    InterpretOptions io;
    io.seed = seed;
    io.global_work_queue = global;
    interpret(prog, bufs, io);
  }
  std::vector<float> expected() const {  // x = relu(x @ W[i] + b[i]), bf16 rounding after each op
    const auto& W = slots[prog.input_slots[0]];
    const auto& b = slots[prog.input_slots[2]];
    std::vector<float> x(M * H);
    for (int64_t i = 0; i < M * H; ++i) x[i] = from_bf16(slots[prog.input_slots[1]][i]);
    for (int l = 0; l < 3; ++l) {
      std::vector<float> y(M * H);
      for (int64_t r = 0; r < M; ++r)
        for (int64_t c = 0; c < H; ++c) {
          double acc = 0;
          for (int64_t k = 0; k < H; ++k) acc += double(x[r * H + k]) * from_bf16(W[(l * H + k) * H + c]);
          const float mm = from_bf16(to_bf16(float(acc)));
          const float add = from_bf16(to_bf16(mm + from_bf16(b[(l * M + r) * H + c])));
          y[r * H + c] = std::max(add, 0.f);
        }
      x = y;
    }
    return x;
  }
  double rel_err(const std::vector<float>& ref) const {
    const auto& out = slots[prog.output_slots[0]];
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double d = double(from_bf16(out[i])) - ref[i];
      num += d * d;
      den += double(ref[i]) * ref[i];
    }
    return std::isnan(num) ? INFINITY : std::sqrt(num / den);
  }
};

}  // namespace

TEST(Pipeline, MlpMatchesNaiveUnderRandomInterleavings) {
  for (int cluster : {1, 2})
    for (bool global : {false, true}) {
      MlpRun r(256, 256, Profile::h200(8), cluster);
      const std::vector<float> ref = r.expected();
      for (uint64_t seed = 0; seed < 20; ++seed) {
        r.run(seed, global);
        ASSERT_LE(r.rel_err(ref), 1e-2) << "cluster " << cluster << " global " << global << " seed " << seed;
      }
    }
}

TEST(Pipeline, MlpOnTheSeedProfileMatchesNaive) {
  MlpRun r(512, 512, Profile::b200(), 2);
  const std::vector<float> ref = r.expected();
  for (uint64_t seed : {0, 1, 2, 3}) {
    r.run(seed, seed % 2);
    EXPECT_LE(r.rel_err(ref), 1e-2) << "seed " << seed;
  }
}

TEST(Pipeline, EveryDroppedInputBarrierIsCaught) {
  // Each input barrier of the MLP removed on purpose: some interleaving must read unwritten data.
  const MlpRun probe(256, 256, Profile::h200(8), 2);
  const std::vector<float> ref = probe.expected();  // same seeded inputs in every run
  for (size_t b = 0; b < probe.prog.barriers.size(); ++b) {
    if (probe.prog.barriers[b].reuse) continue;
    MlpRun r(256, 256, Profile::h200(8), 2, static_cast<int>(b));
    bool caught = false;
    for (uint64_t seed = 0; seed < 8 && !caught; ++seed) {
      try {
        r.run(seed, false);
        caught = r.rel_err(ref) > 1e-2;
      } catch (const RaceError&) {
        caught = true;
      }
    }
    EXPECT_TRUE(caught) << "dropping barrier " << b << " went unnoticed";
  }
}
