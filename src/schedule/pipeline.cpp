// schedule(): phase 0 (split-K, a DAG rewrite), then the four phases of seed §04, in order. Each phase
// consumes the previous one's output.
#include <chrono>
#include <optional>

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
  std::vector<std::pair<std::string, double>> phase_ms;
  const auto timed = [&phase_ms](const char* name, const auto& run) {
    const auto t0 = clock::now();
    run();
    phase_ms.emplace_back(name, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  };
  std::optional<DAG> split;
  timed("phase 0: split-K", [&] { split = phase0_split_k(dag, opt); });
  ScheduleState st(split ? *split : dag, opt);
  st.prog.name = dag.name;
  st.prog.profile = opt.profile;
  st.prog.cluster_size = opt.cluster_size;
  using Phase = std::pair<const char*, void (*)(ScheduleState&)>;
  for (const auto& [name, phase] : {Phase{"phase 1: count and place", phase1_count_and_place},
                                    Phase{"phase 2: tensor slots", phase2_assign_slots},
                                    Phase{"phase 3: barriers", phase3_barriers}, Phase{"phase 4: emit", phase4_emit}})
    timed(name, [&] { phase(st); });
  st.prog.phase_ms = std::move(phase_ms);
  return std::move(st.prog);
}

}  // namespace mk
