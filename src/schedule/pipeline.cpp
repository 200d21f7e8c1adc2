// schedule(): phase 0 (split-K, a DAG rewrite), then the four phases of seed §04, in order. Each phase
// consumes the previous one's output.
#include <chrono>

#include "ir/error.h"
#include "schedule/phases.h"

namespace mk {

Program schedule(const DAG& dag, const ScheduleOptions& opt) {
  if (opt.cluster_size != 1 && opt.cluster_size != 2)
    fail("schedule: cluster_size must be 1 or 2, got ", opt.cluster_size);
  if (opt.profile.num_sms % opt.cluster_size != 0)
    fail("schedule: the SM count (", opt.profile.num_sms, ") must be a multiple of cluster_size (",
         opt.cluster_size, ") so that cluster pairs line up in the per-SM table");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const DAG split = phase0_split_k(dag, opt);
  const double split_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  ScheduleState st(split, opt);
  st.prog.name = dag.name;
  st.prog.profile = opt.profile;
  st.prog.cluster_size = opt.cluster_size;
  st.prog.phase_ms.emplace_back("phase 0: split-K", split_ms);
  auto timed = [&](const char* name, void (*phase)(ScheduleState&)) {
    const auto t0 = clock::now();
    phase(st);
    st.prog.phase_ms.emplace_back(name, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  };
  timed("phase 1: count and place", phase1_count_and_place);
  timed("phase 2: tensor slots", phase2_assign_slots);
  timed("phase 3: barriers", phase3_barriers);
  timed("phase 4: emit", phase4_emit);
  return std::move(st.prog);
}

}  // namespace mk
