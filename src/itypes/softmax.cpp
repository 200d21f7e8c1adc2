#include "itypes/softmax.h"

#include "ir/error.h"

namespace mk {

Softmax::Softmax(bool log, bool safe) : log_(log), safe_(safe) {}

std::string Softmax::params() const {
  if (log_ && safe_) return "log,safe";
  return log_ ? "log" : safe_ ? "safe" : "";
}

void Softmax::validate(const NodeInfo& n) const { require_row_operands(n, 1, true); }

int64_t Softmax::num_instructions(const NodeInfo& n) const { return num_page_row_tiles(n); }

InstrDesc Softmax::instruction(const NodeInfo& n, int64_t i) const {
  const PageRowTile t = page_row_tile(n, i);
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(t.tile.origin));
  push_origin(d.indices, t.tile.origin);
  d.indices.push_back(static_cast<int32_t>(t.tile.rows));
  d.indices.push_back(static_cast<int32_t>(t.box.hi[3]));
  d.reads = {{t.box}};
  d.writes = {{t.box}};
  return d;
}

}  // namespace mk
