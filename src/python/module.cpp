#include "python/bind.h"

NB_MODULE(_C, m) {
  m.doc() = "megakittens core: tracer, scheduler and CPU reference interpreter (C++)";
  bind_ir(m);
  bind_schedule(m);
  bind_reference(m);
  bind_runtime(m);
  bind_fallback(m);
}
