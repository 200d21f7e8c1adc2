#include "reference/interpreter.h"

#include <algorithm>
#include <random>
#include "ir/strings.h"
#include <stdexcept>

#include "ir/error.h"
#include "reference/memory.h"

namespace mk {

namespace {

// How the next SM is picked among those that can move. The policy is fixed per run by seed % 4 so
// that a sweep over seeds covers all of them:
//   0 Highest: the candidate with the highest instruction index (ties uniform). Consumers and
//     reusers run as early as their barriers allow, before their producers / old readers where
//     nothing forbids it: the adversarial order that turns a missing barrier into a RaceError.
//   1 Uniform: any candidate, uniformly.
//   2 Sticky: keep running the last SM while it can move, then a uniform one. SMs drift far apart
//     (large skew), as when one SM is fast and the others are stalled.
//   3 Mixed: Highest three steps out of four, Uniform otherwise.
enum class Policy { Highest, Uniform, Sticky, Mixed };

struct Candidate {
  int sm;
  int64_t index;  // the instruction it would run (in global mode an idle SM's next claim)
};

class Simulator {
 public:
  Simulator(const Program& p, const std::vector<SlotBuffer>& bufs, const InterpretOptions& o)
      : p_(p), o_(o), mem_(p, bufs, o.check_races), rng_(o.seed), policy_(static_cast<Policy>(o.seed % 4)),
        S_(p.profile.num_sms), N_(static_cast<int64_t>(p.instructions.size())), counters_(p.barriers.size(), 0),
        next_(S_, -1) {
    if (!o.global_work_queue)
      for (int s = 0; s < S_ && s < N_; ++s) next_[s] = s;  // SM s runs s, s+S, s+2S, ...
  }

  InterpretStats run() {
    std::vector<Candidate> cands;
    while (true) {
      cands.clear();
      int64_t lo = N_, hi = -1;
      bool pending = ticket_ < N_ && o_.global_work_queue;
      for (int s = 0; s < S_; ++s) {
        const int64_t i = next_[s];
        if (i >= 0) {
          pending = true, lo = std::min(lo, i), hi = std::max(hi, i);
          if (ready(i)) cands.push_back({s, i});
        } else if (o_.global_work_queue && ticket_ < N_) {
          cands.push_back({s, claim(ticket_)});  // an idle SM takes the next ticket
        }
      }
      if (hi >= 0) stats_.max_in_flight_skew = std::max(stats_.max_in_flight_skew, hi - lo);
      if (!pending) return stats_;
      if (cands.empty()) deadlock();
      const Candidate c = pick(cands);
      last_sm_ = c.sm;
      // A claim is a step of its own: the SM then holds the instruction, and running it competes with
      // every other move (claiming and running at once would let producers always finish first).
      if (next_[c.sm] < 0) {
        next_[c.sm] = claim(ticket_++);
        continue;
      }
      execute(next_[c.sm]);
      ++executed_;
      const int64_t after = next_[c.sm] + S_;
      next_[c.sm] = !o_.global_work_queue && after < N_ ? after : -1;
    }
  }

 private:
  // The instruction in row t of the global queue's table ([Note: global claim order]).
  int64_t claim(int64_t t) const { return p_.global_order.empty() ? t : p_.global_order[t]; }
  bool ready(int64_t i) const {
    const Instruction& in = p_.instructions[i];
    for (int k = 0; k < in.num_src_barriers(); ++k)
      if (counters_[in.src_barriers[k]] < in.src_targets[k]) return false;
    return true;
  }

  Candidate pick(const std::vector<Candidate>& cands) {
    auto uniform = [&] { return cands[std::uniform_int_distribution<size_t>(0, cands.size() - 1)(rng_)]; };
    auto highest = [&] {
      int64_t top = -1;
      for (const auto& c : cands) top = std::max(top, c.index);
      std::vector<Candidate> best;
      for (const auto& c : cands)
        if (c.index == top) best.push_back(c);
      return best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(rng_)];
    };
    switch (policy_) {
      case Policy::Highest: return highest();
      case Policy::Uniform: return uniform();
      case Policy::Sticky:
        for (const auto& c : cands)
          if (c.sm == last_sm_) return c;
        return uniform();
      case Policy::Mixed: return std::uniform_int_distribution<int>(0, 3)(rng_) ? highest() : uniform();
    }
    return uniform();
  }

  // Instructions are atomic here: the seed's loads-after-input-barriers / stores-after-reuse-barriers
  // split (§11) only matters for overlap, not for which data an instruction sees.
  void execute(int64_t i) {
    const Instruction& in = p_.instructions[i];
    if (in.icode != 0) {
      mem_.begin(i);
      p_.icodes[in.icode]->execute(in, mem_);
      ++stats_.instructions;
    }
    for (int k = 0; k < in.num_dst_barriers(); ++k) {
      const uint32_t b = in.dst_barriers[k];
      if (++counters_[b] > p_.barriers[b].target)
        fail<std::logic_error>("internal error: instruction ", i, " raises barrier ", b, " to ", counters_[b],
                               ", above its target ", p_.barriers[b].target, " (more arrivals than producers)");
    }
  }

  [[noreturn]] void deadlock() const {
    StrBuf os;
    os << "deadlock: " << (N_ - executed_) << " of " << N_ << " instructions left and no SM can move ("
       << (o_.global_work_queue ? "global work queue" : "per-SM") << " mode, " << S_ << " SMs, seed " << o_.seed
       << "); stuck:";
    int shown = 0, stuck = 0;
    for (int s = 0; s < S_; ++s) {
      const int64_t i = next_[s];
      if (i < 0) continue;
      if (++stuck > 8) continue;
      ++shown;
      const Instruction& in = p_.instructions[i];
      const int n = p_.instruction_node[i];
      os << "\n  SM " << s << ": instruction " << i << " " << p_.icodes[in.icode]->str() << " of node '"
         << (n >= 0 ? p_.nodes[n].name : "<padding>") << "' waits on";
      for (int k = 0; k < in.num_src_barriers(); ++k) {
        const uint32_t b = in.src_barriers[k];
        if (counters_[b] < in.src_targets[k])
          os << " barrier " << b << " (" << (k < in.num_src_input ? "input" : "reuse") << ") at " << counters_[b]
             << "/" << in.src_targets[k];
      }
    }
    if (stuck > shown) os << "\n  ... and " << (stuck - shown) << " more SMs";
    throw DeadlockError(os.str());
  }

  const Program& p_;
  const InterpretOptions& o_;
  SlotMemory mem_;
  std::mt19937_64 rng_;
  Policy policy_;
  int S_;
  int64_t N_;
  std::vector<int32_t> counters_;
  std::vector<int64_t> next_;  // per SM: the instruction it runs next (global mode: holds), -1 none
  int64_t ticket_ = 0;         // global mode: the next unclaimed instruction
  int64_t executed_ = 0;
  int last_sm_ = -1;
  InterpretStats stats_;
};

// Structural checks, so that a malformed Program fails with a message rather than out-of-range reads.
void check_program(const Program& p, const std::vector<SlotBuffer>& bufs) {
  const int64_t n = static_cast<int64_t>(p.instructions.size());
  if (bufs.size() != p.slots.size())
    fail<std::invalid_argument>("interpret: got ", bufs.size(), " slot buffers for ", p.slots.size(), " slots");
  for (size_t s = 0; s < bufs.size(); ++s)
    if (!bufs[s].data && p.slots[s].numel() > 0)
      fail<std::invalid_argument>("interpret: slot T", s, " (", p.slots[s].str(), ") has a null buffer");
  if (p.profile.num_sms <= 0) fail<std::logic_error>("program has num_sms = ", p.profile.num_sms);
  if (p.cluster_size <= 0) fail<std::logic_error>("program has cluster_size = ", p.cluster_size);
  if (p.icodes.empty() || !p.icodes[0]) fail<std::logic_error>("program has no Noop icode 0");
  if (static_cast<int64_t>(p.instruction_node.size()) != n)
    fail<std::logic_error>("program has ", p.instruction_node.size(), " instruction_node entries for ", n, " instructions");
  const size_t nb = p.barriers.size();
  for (int64_t i = 0; i < n; ++i) {
    const Instruction& in = p.instructions[i];
    const int node = p.instruction_node[i];
    if (in.icode >= static_cast<int>(p.icodes.size()) || !p.icodes[in.icode])
      fail<std::logic_error>("instruction ", i, " has icode ", in.icode, " of ", p.icodes.size());
    if (node < -1 || node >= static_cast<int>(p.nodes.size()) || (node < 0 && in.icode != 0))
      fail<std::logic_error>("instruction ", i, " has node ", node, " of ", p.nodes.size());
    if (in.num_src_barriers() > kMaxSrcBarriers || in.num_dst_barriers() > kMaxDstBarriers)
      fail<std::logic_error>("instruction ", i, " has too many barriers");
    for (int k = 0; k < in.num_src_barriers(); ++k)
      if (in.src_barriers[k] >= nb) fail<std::logic_error>("instruction ", i, " waits on barrier ", in.src_barriers[k], " of ", nb);
    for (int k = 0; k < in.num_dst_barriers(); ++k)
      if (in.dst_barriers[k] >= nb) fail<std::logic_error>("instruction ", i, " arrives on barrier ", in.dst_barriers[k], " of ", nb);
  }
}

}  // namespace

InterpretStats interpret(const Program& program, const std::vector<SlotBuffer>& slots, const InterpretOptions& opts) {
  check_program(program, slots);
  return Simulator(program, slots, opts).run();
}

}  // namespace mk
