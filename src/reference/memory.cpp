#include "reference/memory.h"

#include <bit>
#include <cmath>
#include <cstring>
#include "ir/strings.h"
#include <stdexcept>

#include "ir/error.h"

namespace mk {

uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // carries into exp: RNE, inf ok
}

float bf16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t float_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {
    // Below 2^-14: an f16 subnormal, a multiple of 2^-24. Scaling by 2^24 is exact; rint rounds
    // half to even in the default rounding mode (a carry to 0x400 is the smallest normal, as it should).
    const float units = std::bit_cast<float>(ax) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::rint(units)));
  }
  uint32_t r = ax - (112u << 23);      // rebias the exponent from 127 to 15
  r += 0xfffu + ((r >> 13) & 1u);      // round the 23-bit mantissa to 10 bits, ties to even
  return static_cast<uint16_t>(sign | (r >> 13));
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

namespace {

// Calls f(element offset, run length, position in the box) for each innermost row of `box` inside
// a contiguous tensor of padded shape `p`.
template <class F>
void for_runs(const Coord4& p, const Box& box, F f) {
  const int64_t n = box.extent(3);
  int64_t pos = 0;
  for (int64_t b = box.lo[0]; b < box.hi[0]; ++b)
    for (int64_t d = box.lo[1]; d < box.hi[1]; ++d)
      for (int64_t r = box.lo[2]; r < box.hi[2]; ++r, pos += n) f(((b * p[1] + d) * p[2] + r) * p[3] + box.lo[3], n, pos);
}

void read_run(DType t, const void* base, int64_t off, int64_t n, float* out) {
  switch (t) {
    case DType::bf16: for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(static_cast<const uint16_t*>(base)[off + i]); break;
    case DType::f16: for (int64_t i = 0; i < n; ++i) out[i] = f16_to_float(static_cast<const uint16_t*>(base)[off + i]); break;
    case DType::f32: std::memcpy(out, static_cast<const float*>(base) + off, n * sizeof(float)); break;
    case DType::i64: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<const int64_t*>(base)[off + i]); break;
    case DType::i32: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<const int32_t*>(base)[off + i]); break;
    case DType::b8: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<const uint8_t*>(base)[off + i] ? 1.0f : 0.0f; break;
  }
}

// Integers truncate toward zero like torch's float -> int cast; NaN becomes 0 rather than UB.
template <class I>
I to_int(float v) { return std::isnan(v) ? I(0) : static_cast<I>(v); }

void write_run(DType t, void* base, int64_t off, int64_t n, const float* in) {
  switch (t) {
    case DType::bf16: for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(base)[off + i] = float_to_bf16(in[i]); break;
    case DType::f16: for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(base)[off + i] = float_to_f16(in[i]); break;
    case DType::f32: std::memcpy(static_cast<float*>(base) + off, in, n * sizeof(float)); break;
    case DType::i64: for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(base)[off + i] = to_int<int64_t>(in[i]); break;
    case DType::i32: for (int64_t i = 0; i < n; ++i) static_cast<int32_t*>(base)[off + i] = to_int<int32_t>(in[i]); break;
    case DType::b8: for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(base)[off + i] = in[i] != 0.0f; break;
  }
}

Coord4 unflatten(const Coord4& p, int64_t off) {
  Coord4 c{};
  for (int d = 3; d >= 0; --d) c[d] = off % p[d], off /= p[d];
  return c;
}

}  // namespace

SlotMemory::SlotMemory(const Program& p, const std::vector<SlotBuffer>& bufs, bool check_races)
    : p_(p), bufs_(bufs), check_races_(check_races) {
  if (!check_races_) return;
  if (p.slot_producer.size() != p.slots.size())
    fail<std::logic_error>("program.slot_producer has ", p.slot_producer.size(), " entries for ", p.slots.size(), " slots");
  tags_.resize(p.slots.size());
  tag_slot_.resize(p.slots.size());
  tag_off_.assign(p.slots.size(), 0);
  for (size_t s = 0; s < p.slots.size(); ++s) {
    const bool alias = s < p.slot_base.size() && p.slot_base[s] >= 0;
    tag_slot_[s] = alias ? p.slot_base[s] : static_cast<int>(s);
    if (alias) tag_off_[s] = p.slot_offset[s];
    else tags_[s].assign(p.slots[s].numel(), -1);
  }
  // Graph inputs hold valid data from the start: their writer is the input node.
  auto defined = [&](int s) { tags_.at(s).assign(p.slots[s].numel(), p.slot_producer[s]); };
  for (int s : p.input_slots)
    if (s >= 0) defined(s);  // -1: a runtime argument the graph never reads
  for (const auto& [path, s] : p.attr_slots) defined(s);
}

void SlotMemory::begin(int64_t index) {
  instruction_index = index;
  cluster_rank = static_cast<int>(index % p_.cluster_size);
  inst_ = &p_.instructions[index];
  const int n = p_.instruction_node[index];
  node_ = n >= 0 ? &p_.nodes[n] : nullptr;
}

const TensorMeta& SlotMemory::meta(int slot) const {
  if (slot < 0 || slot >= static_cast<int>(p_.slots.size()))
    fail<std::logic_error>(where(), ": slot ", slot, " out of range (", p_.slots.size(), " slots)");
  return p_.slots[slot];
}

std::string SlotMemory::where() const {
  StrBuf os;
  os << "instruction " << instruction_index << " (node '" << (node_ ? node_->name : "<padding>") << "', "
     << (inst_ ? p_.icodes[inst_->icode]->str() : "?") << ")";
  return os.str();
}

std::string SlotMemory::writer(int id) const {
  if (id < 0) return "never written";
  for (const auto& n : p_.nodes)
    if (n.node == id) return "node " + std::to_string(id) + " ('" + n.name + "')";
  return "node " + std::to_string(id) + " (a graph input)";
}

void SlotMemory::check_box(int slot, const Box& box, const char* what) const {
  const Coord4 p = meta(slot).padded();
  for (int d = 0; d < 4; ++d)
    if (box.lo[d] < 0 || box.lo[d] > box.hi[d] || box.hi[d] > p[d])
      fail<std::logic_error>(where(), ": ", what, " box ", box.str(), " of slot T", slot, " is outside its shape ",
                             meta(slot).str());
  if (box.volume() > 0 && !bufs_[slot].data)
    fail<std::logic_error>(where(), ": slot T", slot, " has no buffer");
}

std::vector<float> SlotMemory::load(int slot, const Box& box) {
  check_box(slot, box, "load");
  if (check_races_) check_reads(slot, box);
  const TensorMeta& m = p_.slots[slot];
  std::vector<float> out(box.volume());
  for_runs(m.padded(), box, [&](int64_t off, int64_t n, int64_t pos) { read_run(m.dtype, base(slot), off, n, out.data() + pos); });
  return out;
}

void SlotMemory::store(int slot, const Box& box, const std::vector<float>& data) {
  check_box(slot, box, "store");
  if (static_cast<int64_t>(data.size()) != box.volume())
    fail<std::logic_error>(where(), ": stores ", data.size(), " values into box ", box.str(), " of ", box.volume());
  const TensorMeta& m = p_.slots[slot];
  const int32_t tag = node_ ? node_->node : -1;
  for_runs(m.padded(), box, [&](int64_t off, int64_t n, int64_t pos) {
    write_run(m.dtype, base(slot), off, n, data.data() + pos);
    if (check_races_) std::fill_n(tags_[tag_slot_[slot]].begin() + tag_off_[slot] + off, n, tag);
  });
}

// The instruction may read `slot` through several operands (x + x, or a view of each half): the
// read is fine when the whole box was written by the expected producer of one of them.
void SlotMemory::check_reads(int slot, const Box& box) const {
  if (!node_) fail<std::logic_error>(where(), ": loads slot T", slot, " but belongs to no node");
  const Coord4 p = p_.slots[slot].padded();
  const int32_t* tags = tags_[tag_slot_[slot]].data() + tag_off_[slot];
  const size_t nsrc = std::min(node_->src_slots.size(), node_->src_producers.size());
  int first = -1;          // first operand reading this slot, for the report
  int64_t bad_off = -1;    // first element that disagrees with it
  for (size_t k = 0; k < nsrc && k < static_cast<size_t>(kMaxSrcTensors); ++k) {
    if (inst_->src_slot(static_cast<int>(k)) != slot) continue;
    const int32_t want = node_->src_producers[k];
    int64_t bad = -1;
    for_runs(p, box, [&](int64_t off, int64_t n, int64_t) {
      for (int64_t i = 0; i < n && bad < 0; ++i)
        if (tags[off + i] != want) bad = off + i;
    });
    if (bad < 0) return;
    if (first < 0) first = static_cast<int>(k), bad_off = bad;
  }
  if (first < 0)
    fail<std::logic_error>(where(), ": loads slot T", slot, ", which is none of its input operands");
  const Coord4 c = unflatten(p, bad_off);
  fail<RaceError>("race: ", where(), " loads box ", box.str(), " of slot T", slot, " (input ", first,
                  ") expecting data written by ", writer(node_->src_producers[first]), ", but element (", c[0], ",",
                  c[1], ",", c[2], ",", c[3], ") was ", tags[bad_off] < 0 ? "" : "last written by ",
                  writer(tags[bad_off]));
}

}  // namespace mk
