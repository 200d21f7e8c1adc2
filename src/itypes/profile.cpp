#include "itypes/profile.h"

#include "ir/error.h"

namespace mk {

Profile Profile::b200() {
  Profile p;
  p.name = "b200";
  p.num_sms = 148;
  p.gemm_cta_m = 256;
  p.gemm_n = 256;
  p.gemm_pair_tiles = true;
  p.attn_cta_q = 256;
  p.attn_pair_tiles = true;
  p.attn_kv_block = 1;
  return p;
}

Profile Profile::h200(int num_sms) {
  Profile p;
  p.name = "h200";
  p.num_sms = num_sms;
  p.rms_norm_pages = 3;  // kernels/mk/itypes/rms_norm.cuh kXPages
  p.ew_max_pages = 4;    // kernels/mk/itypes/elementwise.cuh kMaxTiles * inputs
  p.gemm_n_narrow = 128; // kernels/mk/itypes/gemm.cuh: m64n128k16 for tiles of <= 128 columns
  p.gemm_split_k = 4;
  p.balance_costs = 3;   // [Note: cost-balanced placement]: every node of unequal costs, chunk by chunk
  return p;
}

Profile Profile::by_name(const std::string& name, int num_sms) {
  Profile p;
  if (name == "b200") p = b200();
  else if (name == "h200") p = h200();
  else fail("unknown target profile '", name, "': expected 'b200' or 'h200'");
  if (num_sms > 0) p.num_sms = num_sms;
  if (p.num_sms < 1) fail("target profile '", name, "': num_sms must be >= 1, got ", p.num_sms);
  return p;
}

}  // namespace mk
