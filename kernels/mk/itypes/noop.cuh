// Noop (icode 0): pads node ranges and the per-SM table tail. It still passes every page token on.
#pragma once
#include "mk/vm.cuh"

namespace mk {

struct Noop {
  static constexpr int num_semaphores = 0;
  static __device__ int semaphore_count(int) { return 1; }
  static __device__ int lid_release_order(int query, const i32*) { return query; }
  static __device__ void load(Ctx& c) { release_unused(c, 0); }
  static __device__ void compute(Ctx&) {}
  static __device__ void store(Ctx&) {}
};

}  // namespace mk
