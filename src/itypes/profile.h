// Target profiles: everything the schedule depends on besides the graph (DESIGN §5).
#pragma once
#include <string>

namespace mk {

struct Profile {
  std::string name;
  int num_sms = 0;
  int num_pages = 7;          // shared-memory pages per CTA
  int page_bytes = 32768;
  // Elementwise: tiles of tile_rows x tile_cols, tiles_per_instruction column-adjacent tiles. With
  // ew_max_pages > 0 the count adapts instead: as many tiles (at most ew_max_pages / inputs, one page
  // per tile and input) as still give every SM an instruction.
  int ew_tile_rows = 128, ew_tile_cols = 128, ew_tiles_per_instruction = 2;
  int ew_max_pages = 0;
  // GEMM: each CTA computes gemm_cta_m x gemm_n of the output, K in steps of gemm_k.
  // pair_tiles: the CTAs of a cluster split one tile of cluster_size * gemm_cta_m rows, and each CTA
  // gets its own copy of the instruction with identical access regions (seed §04 "target 2").
  int gemm_cta_m = 128, gemm_n = 256, gemm_k = 64;
  // > 0: a GEMM whose gemm_n-wide tiles fill fewer waves of SMs than gemm_n_narrow-wide ones would at
  // kGemmNarrowCost of the time each (src/itypes/gemm.cpp gemm_tile_n) uses gemm_n_narrow-wide tiles.
  int gemm_n_narrow = 0;
  bool gemm_pair_tiles = false;
  // At most this many splits of a Gemm's K (src/schedule/phase0_split_k.cpp; 1 = never split).
  int gemm_split_k = 1;
  // What each split after the first adds to the split-K cost model, in wide k-steps (~1 us on the
  // H200): its epilogue waits for the previous split's stores (src/itypes/gemm.cpp Gemm::split_k).
  int gemm_split_chain_steps = 8;
  // RMSNorm: up to rms_norm_pages pages of rows per instruction (fewer when that leaves SMs idle).
  int rms_norm_pages = 1;
  // 1: RMSNorm's row tiles are evened out so every SM gets as many ([Note: balanced row tiles]); 0: tiles of
  // rows_per_instruction rows, the last of each plane clipped.
  int rms_norm_balance = 1;
  // Attention: each CTA owns attn_cta_q query rows of one (batch, head); pair_tiles as for GEMM.
  int attn_cta_q = 128;
  bool attn_pair_tiles = false;
  // K/V rows are read in whole blocks of attn_kv_block (the device's kv block; 1 = exactly [0, kv_end)).
  int attn_kv_block = 128;
  // A node's instructions of unequal IType::cost (causal Attention) spread over the SMs by it
  // (src/schedule/phase1_place.cpp [Note: cost-balanced placement]): 1 the whole node at once; 3 (h200)
  // chunk by chunk of claim_chunk waves, so that few heads run side by side; 2 as 1 for nodes of at most
  // kBalanceMaxPerSm instructions per SM, else as 0; 0 the IType's order. H200, 2026-12-04, causal SDPA
  // per_sm, 3 with claim_chunk 4 against 1 in one process (benchmarks/notes.md Session 33): (4, 32, 8192,
  // D) +21% at D 128, +11% at D 64, (16, 16, 2048, D) +2-3%. HF 1B / 8B layers are one chunk: as 1.
  int balance_costs = 0;
  // Chunks of nodes of unequal costs, in waves (claim_chunk x num_sms / cluster groups of the IType's
  // order): the global queue claims each chunk longest first, and balance_costs = 3 balances each on its
  // own ([Note: global claim order]). 0: the whole node is one chunk; -1: the global queue claims in the
  // IType's order. 4: the best of 2, 4 and 8 over causal SDPA at S 2048 and 8192 (Session 33).
  int claim_chunk = 4;
  // At most this many tensor slots a program (src/schedule/phase2_slots.cpp); 0: kMaxSlots, what the
  // instruction's slot ids name ([Note: slot bits]). Lower only to test the split of a graph past it.
  int max_slots = 0;
  static constexpr int kBalanceMaxPerSm = 2;

  // The seed's B200: 148 SMs, 512x256 GEMM pair tiles (256 rows per CTA), 512-row attention pairs.
  static Profile b200();
  // Hopper (H100/H200): num_sms from the device (132 on H200), 128x256x64 GEMM CTA tiles.
  static Profile h200(int num_sms = 132);
  // "b200" or "h200"; num_sms > 0 overrides the SM count. Throws CompileError on an unknown name.
  static Profile by_name(const std::string& name, int num_sms = 0);
};

}  // namespace mk
