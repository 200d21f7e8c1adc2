// Builds FX graphs by hand for the C++ tests (what megakittens/fx_export.py sends from Python).
#pragma once
#include <string>
#include <vector>

#include "ir/fx.h"

namespace mk::test {

inline FxArg ref(int node) { FxArg a; a.kind = FxArg::Kind::Node; a.i = node; return a; }
inline FxArg num(int64_t v) { FxArg a; a.kind = FxArg::Kind::Int; a.i = v; return a; }
inline FxArg real(double v) { FxArg a; a.kind = FxArg::Kind::Float; a.f = v; return a; }
inline FxArg str(const std::string& s) { FxArg a; a.kind = FxArg::Kind::Str; a.s = s; return a; }
inline FxArg list(std::vector<FxArg> items) { FxArg a; a.kind = FxArg::Kind::List; a.items = std::move(items); return a; }

inline FxTensor contiguous(std::vector<int64_t> shape, const std::string& dtype = "bfloat16") {
  FxTensor t;
  t.shape = shape;
  t.stride.assign(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) t.stride[k - 1] = t.stride[k] * shape[k];
  t.dtype = dtype;
  t.device = "cpu";
  return t;
}

struct GraphBuilder {
  FxGraph g;
  int placeholder(const std::string& name, std::vector<int64_t> shape, const std::string& dtype = "bfloat16") {
    return add(name, "placeholder", name, {}, contiguous(shape, dtype));
  }
  // A call_function node with one tensor output.
  int call(const std::string& name, const std::string& target, std::vector<FxArg> args, std::vector<int64_t> shape,
           const std::string& dtype = "bfloat16") {
    return add(name, "call_function", target, std::move(args), contiguous(shape, dtype));
  }
  int output(std::vector<int> results) {
    std::vector<FxArg> refs;
    for (int r : results) refs.push_back(ref(r));
    FxNode n;
    n.name = "output";
    n.op = "output";
    n.target = "output";
    n.args = {list(refs)};
    g.nodes.push_back(n);
    return static_cast<int>(g.nodes.size()) - 1;
  }
  int add(const std::string& name, const std::string& op, const std::string& target, std::vector<FxArg> args,
          FxTensor out) {
    FxNode n;
    n.name = name;
    n.op = op;
    n.target = target;
    n.args = std::move(args);
    n.outputs = {out};
    g.nodes.push_back(n);
    return static_cast<int>(g.nodes.size()) - 1;
  }
};

// The seed's MLP (§02): x = relu(x @ W[i] + b[i]) for `layers` layers; W (L,H,H), x (M,H), b (L,M,H).
inline FxGraph seed_mlp(int64_t M, int64_t H, int layers = 3) {
  GraphBuilder b;
  b.g.name = "mlp";
  const int W = b.placeholder("arg0_1", {layers, H, H});
  int x = b.placeholder("arg1_1", {M, H});
  const int B = b.placeholder("arg2_1", {layers, M, H});
  for (int i = 0; i < layers; ++i) {
    const std::string s = i ? "_" + std::to_string(i) : "";
    const std::string s1 = "_" + std::to_string(2 * i + 1), s0 = i ? "_" + std::to_string(2 * i) : "";
    const int w = b.call("select" + s0, "aten.select.int", {ref(W), num(0), num(i)}, {H, H});
    const int mm = b.call("mm" + s, "aten.mm.default", {ref(x), ref(w)}, {M, H});
    const int bi = b.call("select" + s1, "aten.select.int", {ref(B), num(0), num(i)}, {M, H});
    const int add = b.call("add" + s, "aten.add.Tensor", {ref(mm), ref(bi)}, {M, H});
    x = b.call("relu" + s, "aten.relu.default", {ref(add)}, {M, H});
  }
  b.output({x});
  return b.g;
}

}  // namespace mk::test
