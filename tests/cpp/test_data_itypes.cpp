// The data-movement ITypes (issue 6) through the whole host pipeline (FX -> trace -> schedule -> CPU
// reference interpreter): Copy (casts, transposes, broadcasts, inserted for views an IType cannot
// read), Embedding, Cat, RowReduce (sum, mean, max), Softmax, LayerNorm; and the repeat_kv -> GQA rewrite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>

#include "fx_builder.h"
#include "ir/error.h"
#include "itypes/cat.h"
#include "itypes/copy.h"
#include "itypes/row_reduce.h"
#include "reference/interpreter.h"
#include "reference/memory.h"
#include "schedule/program.h"
#include "test_util.h"
#include "trace/fuse_repeat_kv.h"
#include "trace/tracer.h"

using namespace mk;
using namespace mk::test;

namespace {

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << "'" << (part) << "' not in: " << (msg)

FxArg ints(std::vector<int64_t> v) {
  std::vector<FxArg> items;
  for (int64_t x : v) items.push_back(num(x));
  return list(items);
}
FxArg flag(bool v) { FxArg a; a.kind = FxArg::Kind::Bool; a.i = v; return a; }

// Typed host buffers for every slot of a traced and scheduled graph; inputs set from float values.
struct GraphRun {
  Program prog;
  std::vector<std::vector<uint8_t>> mem;

  explicit GraphRun(const FxGraph& g, int cluster = 1) {
    ScheduleOptions o;
    o.profile = Profile::h200(8);
    o.cluster_size = cluster;
    prog = schedule(trace(g), o);
    for (const TensorMeta& m : prog.slots) mem.emplace_back(m.nbytes(), 0xff);  // NaN / -1 poison
  }
  void set(int arg, const std::vector<float>& v) {
    const int s = prog.input_slots.at(arg);
    const TensorMeta& m = prog.slots[s];
    ASSERT_EQ(static_cast<int64_t>(v.size()), m.numel());
    for (size_t i = 0; i < v.size(); ++i) {
      uint8_t* p = mem[s].data() + i * dtype_size(m.dtype);
      if (m.dtype == DType::bf16) { const uint16_t h = float_to_bf16(v[i]); std::memcpy(p, &h, 2); }
      else if (m.dtype == DType::f32) std::memcpy(p, &v[i], 4);
      else if (m.dtype == DType::i64) { const int64_t x = static_cast<int64_t>(v[i]); std::memcpy(p, &x, 8); }
      else FAIL() << "dtype " << dtype_name(m.dtype);
    }
  }
  void run(uint64_t seed = 0) {
    std::vector<SlotBuffer> bufs;
    for (auto& m : mem) bufs.push_back({m.data()});
    InterpretOptions io;
    io.seed = seed;
    interpret(prog, bufs, io);
  }
  std::vector<float> out(int k = 0) const {
    const int s = prog.output_slots.at(k);
    const TensorMeta& m = prog.slots[s];
    std::vector<float> v(m.numel());
    for (size_t i = 0; i < v.size(); ++i) {
      const uint8_t* p = mem[s].data() + i * dtype_size(m.dtype);
      if (m.dtype == DType::bf16) { uint16_t h; std::memcpy(&h, p, 2); v[i] = bf16_to_float(h); }
      else std::memcpy(&v[i], p, 4);
    }
    return v;
  }
  std::string itypes() const {
    std::string s;
    for (const auto& n : prog.nodes) s += (s.empty() ? "" : " ") + n.itype->str();
    return s;
  }
};

std::vector<float> values(int64_t n, uint32_t seed = 1) {  // bf16-exact, nonzero
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.25f, 2.f);
  std::vector<float> v(n);
  for (auto& x : v) x = bf16_to_float(float_to_bf16((rng() & 1) ? u(rng) : -u(rng)));
  return v;
}

TEST(CopyIType, SrcForViews) {
  const TensorRange x = TensorRange::full({6, 8});
  EXPECT_EQ(Copy(Copy::src_for(x)).str(), "Copy");
  EXPECT_EQ(Copy(Copy::src_for(x.transpose(0, 1))).str(), "Copy(src=32)");
  EXPECT_EQ(Copy(Copy::src_for(TensorRange::full({2, 3, 4, 5}).transpose(1, 2))).str(), "Copy(src=13)");
  EXPECT_EQ(Copy(Copy::src_for(TensorRange::full({1, 8}).expand({6, 8}))).str(), "Copy(src=-3)");
  EXPECT_EQ(Copy(Copy::src_for(TensorRange::full({6, 1}).expand({6, 8}))).str(), "Copy(src=2-)");
  EXPECT_EQ(Copy(Copy::src_for(x.select(0, 2))).str(), "Copy");  // a row: 1 x 8, straight
  EXPECT_HAS(error_of([] { Copy({3, 3}); }), "cannot run along one backing dim 3");
}

TEST(CopyIType, OpNamesOfTheCustomOps) {
  EXPECT_EQ(Copy().op_name(), "copy");
  EXPECT_EQ(Cat(3).op_name(), "cat");
  EXPECT_EQ(RowReduce("sum", false).op_name(), "row_reduce");
}

TEST(CopyIType, ConsumersOfOneViewShareItsCopy) {
  // [Note: view copies] relu and neg both read x.t(): one Copy; sigmoid reads another view: its own.
  GraphBuilder b;
  const int x = b.placeholder("x", {64, 32});
  const int t = b.call("t", "aten.t.default", {ref(x)}, {32, 64});
  const int r = b.call("relu", "aten.relu.default", {ref(t)}, {32, 64});
  const int n = b.call("neg", "aten.neg.default", {ref(t)}, {32, 64});
  const int s = b.call("slice", "aten.slice.Tensor", {ref(t), num(1), num(0), num(16)}, {32, 16});
  const int g = b.call("sigmoid", "aten.sigmoid.default", {ref(s)}, {32, 16});
  b.output({r, n, g});
  const DAG d = trace(b.g);
  std::vector<std::string> names;
  for (const Node& node : d.nodes)
    if (node.is_compute()) names.push_back(node.name + ":" + node.itype->str());
  EXPECT_EQ(names, (std::vector<std::string>{"relu_in0_copy:Copy(src=32)", "relu:ElementwiseUnary(ops=relu)",
                                             "neg:ElementwiseUnary(ops=neg)", "sigmoid_in0_copy:Copy(src=32)",
                                             "sigmoid:ElementwiseUnary(ops=sigmoid)"}));
}

TEST(CopyIType, CastTransposeAndBroadcastMatchNaive) {
  // y = relu(x.t()) + b.expand(...) in fp32, cast back to bf16: a Copy in front of relu (transpose), the
  // casts, and a broadcast read by the binary op directly.
  GraphBuilder b;
  const int x = b.placeholder("x", {40, 300});
  const int w = b.placeholder("w", {1, 40});
  const int t = b.call("t", "aten.t.default", {ref(x)}, {300, 40});
  const int r = b.call("relu", "aten.relu.default", {ref(t)}, {300, 40});
  const int f = b.call("_to_copy", "aten._to_copy.default", {ref(r)}, {300, 40}, "float32");
  b.g.nodes[f].kwargs = {{"dtype", str("torch.float32")}};
  const int e = b.call("expand", "aten.expand.default", {ref(w), ints({300, 40})}, {300, 40});
  const int a = b.call("add", "aten.add.Tensor", {ref(f), ref(e)}, {300, 40}, "float32");
  const int c = b.call("clone", "aten.clone.default", {ref(e)}, {300, 40});  // a materialised broadcast
  b.output({a, c});
  GraphRun run(b.g, 2);
  EXPECT_EQ(run.itypes(),
            "Copy(src=32) ElementwiseUnary(ops=relu) Copy ElementwiseBinary(op=add,alpha=1,bcast_b=0010) Copy(src=-3)");
  const auto xv = values(40 * 300), wv = values(40, 2);
  run.set(0, xv);
  run.set(1, wv);
  for (uint64_t seed : {0, 1, 2, 3}) {
    run.run(seed);
    const auto y = run.out(0), z = run.out(1);
    for (int64_t i = 0; i < 300; ++i)
      for (int64_t j = 0; j < 40; ++j) {
        const float relu = std::max(0.f, xv[j * 300 + i]);
        ASSERT_EQ(y[i * 40 + j], relu + wv[j]) << i << "," << j;  // fp32 add of bf16 values: exact here
        ASSERT_EQ(z[i * 40 + j], wv[j]);
      }
  }
}

TEST(CopyIType, IntegerOutputsAreRefused) {
  GraphBuilder b;
  const int x = b.placeholder("x", {4, 8});
  const int c = b.call("_to_copy", "aten._to_copy.default", {ref(x)}, {4, 8}, "int64");
  b.g.nodes[c].kwargs = {{"dtype", str("torch.int64")}};
  b.output({c});
  EXPECT_HAS(error_of([&] { GraphRun run(b.g); }), "node '_to_copy' (aten._to_copy.default): output must be a floating-point");
}

TEST(CopyIType, CrossDeviceCopyIsRefused) {
  GraphBuilder b;
  const int x = b.placeholder("x", {4, 8});
  const int c = b.call("_to_copy", "aten._to_copy.default", {ref(x)}, {4, 8});
  b.g.nodes[c].outputs[0]->device = "cuda:0";
  b.g.nodes[c].kwargs = {{"device", str("cuda:0")}};
  b.output({c});
  EXPECT_HAS(error_of([&] { trace(b.g); }), "copies between devices are not supported (cpu -> cuda:0)");
}

FxGraph embedding_graph(int64_t V, int64_t C, std::vector<int64_t> ids_shape) {
  GraphBuilder b;
  const int w = b.placeholder("w", {V, C});
  const int ids = b.placeholder("ids", ids_shape, "int64");
  std::vector<int64_t> out = ids_shape;
  out.push_back(C);
  b.output({b.call("embedding", "aten.embedding.default", {ref(w), ref(ids)}, out)});
  return b.g;
}

TEST(EmbeddingIType, GathersRows) {
  const int64_t V = 50, C = 4000;  // 4000 bf16 per row: 4 rows per instruction, ragged last tile
  GraphRun run(embedding_graph(V, C, {2, 9}));
  EXPECT_EQ(run.itypes(), "Embedding");
  EXPECT_EQ(run.prog.nodes[0].count, 2 * 3);
  const auto w = values(V * C);
  std::vector<float> ids(18);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<float>((i * 37 + 5) % V);
  run.set(0, w);
  run.set(1, ids);
  run.run();
  const auto y = run.out();
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < C; c += 97) ASSERT_EQ(y[i * C + c], w[static_cast<int64_t>(ids[i]) * C + c]);
}

TEST(EmbeddingIType, OutOfRangeIdsRaise) {
  for (float bad : {50.f, -1.f, 1e12f}) {
    GraphRun run(embedding_graph(50, 8, {6}));
    run.set(0, values(50 * 8));
    run.set(1, {0, 1, 2, bad, 4, 5});
    try {
      run.run();
      FAIL() << "no error for id " << bad;
    } catch (const std::out_of_range& e) {
      EXPECT_HAS(std::string(e.what()), "out of range for a table of 50 rows");
    }
  }
}

TEST(EmbeddingIType, FloatIdsAreRefused) {
  GraphBuilder b;
  const int w = b.placeholder("w", {10, 8});
  const int ids = b.placeholder("ids", {3}, "float32");
  b.output({b.call("embedding", "aten.embedding.default", {ref(w), ref(ids)}, {3, 8})});
  EXPECT_HAS(error_of([&] { GraphRun run(b.g); }), "node 'embedding' (aten.embedding.default): indices must be int64 or int32, got float32");
}

TEST(CatIType, JoinsAlongLastAndFirstDim) {
  GraphBuilder b;
  const int x = b.placeholder("x", {3, 130, 40});
  const int y = b.placeholder("y", {3, 130, 300});
  const int z = b.placeholder("z", {2, 130, 40});
  const int neg = b.call("neg", "aten.neg.default", {ref(y)}, {3, 130, 300});
  const int c1 = b.call("cat", "aten.cat.default", {list({ref(x), ref(neg)}), num(-1)}, {3, 130, 340});
  const int c0 = b.call("cat_1", "aten.cat.default", {list({ref(z), ref(x), ref(z)})}, {7, 130, 40});  // dim 0 default
  b.output({c1, c0});
  GraphRun run(b.g, 2);
  EXPECT_EQ(run.itypes(), "ElementwiseUnary(ops=neg) Cat(dim=3) Cat(dim=1)");
  const auto xv = values(3 * 130 * 40, 1), yv = values(3 * 130 * 300, 2), zv = values(2 * 130 * 40, 3);
  run.set(0, xv), run.set(1, yv), run.set(2, zv);
  for (uint64_t seed : {0, 1, 5}) {
    run.run(seed);
    const auto a = run.out(0), c = run.out(1);
    for (int64_t i = 0; i < 3 * 130; ++i)
      for (int64_t j = 0; j < 340; ++j)
        ASSERT_EQ(a[i * 340 + j], j < 40 ? xv[i * 40 + j] : -yv[i * 300 + j - 40]) << i << "," << j;
    const int64_t plane = 130 * 40;
    for (int64_t k = 0; k < 7 * plane; ++k) {
      const int64_t b0 = k / plane, r = k % plane;
      ASSERT_EQ(c[k], b0 < 2 ? zv[b0 * plane + r] : b0 < 5 ? xv[(b0 - 2) * plane + r] : zv[(b0 - 5) * plane + r]);
    }
  }
}

TEST(CatIType, ValidateNamesShapes) {
  GraphBuilder b;
  const int x = b.placeholder("x", {3, 40});
  const int y = b.placeholder("y", {4, 30});
  b.output({b.call("cat", "aten.cat.default", {list({ref(x), ref(y)}), num(1)}, {3, 70})});
  EXPECT_HAS(error_of([&] { GraphRun run(b.g); }),
             "node 'cat' (aten.cat.default): input 1 shape [4, 30] must equal the output shape [3, 70] except along dim 1");
  EXPECT_HAS(error_of([] { Cat(4); }), "Cat: dim 4 is not a padded dim 0..3");
}

TEST(RowReduceIType, MeanAndSumOverTheLastDim) {
  GraphBuilder b;
  const int x = b.placeholder("x", {2, 50, 3000});
  const int f = b.call("_to_copy", "aten._to_copy.default", {ref(x)}, {2, 50, 3000}, "float32");
  b.g.nodes[f].kwargs = {{"dtype", str("torch.float32")}};
  const int m = b.call("mean", "aten.mean.dim", {ref(f), ints({-1}), flag(true)}, {2, 50, 1}, "float32");
  const int s = b.call("sum", "aten.sum.dim_IntList", {ref(x), ints({2})}, {2, 50});
  b.output({m, s});
  GraphRun run(b.g, 2);
  EXPECT_EQ(run.itypes(), "Copy RowReduce(op=mean,keepdim) RowReduce(op=sum)");
  const auto xv = values(2 * 50 * 3000);
  run.set(0, xv);
  run.run(3);
  const auto mean = run.out(0), sum = run.out(1);
  for (int64_t r = 0; r < 100; ++r) {
    double acc = 0;
    for (int64_t c = 0; c < 3000; ++c) acc += xv[r * 3000 + c];
    EXPECT_NEAR(mean[r], acc / 3000, 1e-6 * std::max(1.0, std::fabs(acc / 3000))) << r;
    EXPECT_EQ(sum[r], bf16_to_float(float_to_bf16(static_cast<float>(acc)))) << r;
  }
}

TEST(RowReduceIType, OtherDimsAreRefused) {
  GraphBuilder b;
  const int x = b.placeholder("x", {4, 8});
  b.output({b.call("mean", "aten.mean.dim", {ref(x), ints({0}), flag(true)}, {1, 8})});
  EXPECT_HAS(error_of([&] { trace(b.g); }),
             "node 'mean' (aten.mean.dim): mean is supported over the last dim only (dim=[-1]), got dim=[0] on a rank-2 tensor");
  EXPECT_HAS(error_of([] { RowReduce("min", true); }), "unknown op 'min'");
}

TEST(RowReduceIType, MaxPropagatesNaN) {
  GraphBuilder b;
  const int x = b.placeholder("x", {6, 40}, "float32");
  b.output({b.call("amax", "aten.amax.default", {ref(x), ints({-1}), flag(true)}, {6, 1}, "float32")});
  GraphRun run(b.g, 2);
  EXPECT_EQ(run.itypes(), "RowReduce(op=max,keepdim)");
  auto xv = values(6 * 40);
  xv[2 * 40 + 7] = std::nanf("");
  for (int c = 0; c < 40; ++c) xv[4 * 40 + c] = -std::numeric_limits<float>::infinity();
  run.set(0, xv);
  run.run(3);
  const auto m = run.out(0);
  for (int r = 0; r < 6; ++r) {
    float want = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < 40; ++c) want = std::max(want, xv[r * 40 + c]);
    if (r == 2) EXPECT_TRUE(std::isnan(m[r]));
    else EXPECT_EQ(m[r], want) << r;
  }
}

TEST(SoftmaxIType, SoftmaxLogAndSafeRows) {
  GraphBuilder b;
  const int x = b.placeholder("x", {5, 33}, "float32");
  const FxArg dt = str("float32");
  const int p = b.call("sm", "megakittens.softmax.default", {ref(x), flag(false), flag(false), dt}, {5, 33}, "float32");
  const int l = b.call("lsm", "megakittens.softmax.default", {ref(x), flag(true), flag(false), dt}, {5, 33}, "float32");
  const int z = b.call("ssm", "megakittens.softmax.default", {ref(x), flag(false), flag(true), dt}, {5, 33}, "float32");
  b.output({p, l, z});
  GraphRun run(b.g, 2);
  EXPECT_EQ(run.itypes(), "Softmax Softmax(log) Softmax(safe)");
  auto xv = values(5 * 33);
  for (int c = 0; c < 33; ++c) xv[3 * 33 + c] = -std::numeric_limits<float>::infinity();  // a fully masked row
  xv[4 * 33 + 5] = std::nanf("");
  run.set(0, xv);
  run.run(3);
  const auto sm = run.out(0), lsm = run.out(1), ssm = run.out(2);
  for (int r = 0; r < 5; ++r) {
    double m = -INFINITY, sum = 0;
    for (int c = 0; c < 33; ++c) m = std::max(m, static_cast<double>(xv[r * 33 + c]));
    for (int c = 0; c < 33; ++c) sum += std::exp(xv[r * 33 + c] - m);
    for (int c = 0; c < 33; ++c) {
      const int i = r * 33 + c;
      if (r == 3) {  // softmax and log-softmax NaN (as torch), the safe one 0
        EXPECT_TRUE(std::isnan(sm[i]) && std::isnan(lsm[i])) << c;
        EXPECT_EQ(ssm[i], 0.f) << c;
      } else if (r == 4) {
        EXPECT_TRUE(std::isnan(sm[i]) && std::isnan(lsm[i]) && std::isnan(ssm[i])) << c;
      } else {
        EXPECT_NEAR(sm[i], std::exp(xv[i] - m) / sum, 1e-6) << r << " " << c;
        EXPECT_NEAR(lsm[i], xv[i] - m - std::log(sum), 1e-5) << r << " " << c;
        EXPECT_EQ(ssm[i], sm[i]) << r << " " << c;
      }
    }
  }
}

TEST(LayerNormIType, MatchesTheFormulaWithWeightAndBias) {
  GraphBuilder b;
  const int x = b.placeholder("x", {30, 200}, "float32");
  const int w = b.placeholder("w", {200}, "float32");
  const int bias = b.placeholder("b", {200}, "float32");
  b.output({b.call("ln", "megakittens.layer_norm.default", {ref(x), ref(w), ref(bias), real(1e-3)}, {30, 200}, "float32")});
  GraphRun run(b.g, 2);
  EXPECT_EQ(run.itypes(), "LayerNorm(eps=0.001)");
  auto xv = values(30 * 200);
  for (auto& v : xv) v = v * 3 + 2;  // a mean away from 0: the centring matters
  const auto wv = values(200), bv = values(200);
  run.set(0, xv);
  run.set(1, wv);
  run.set(2, bv);
  run.run(3);
  const auto y = run.out(0);
  for (int r = 0; r < 30; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 200; ++c) mean += xv[r * 200 + c];
    mean /= 200;
    for (int c = 0; c < 200; ++c) var += (xv[r * 200 + c] - mean) * (xv[r * 200 + c] - mean);
    const double rstd = 1 / std::sqrt(var / 200 + 1e-3);
    for (int c = 0; c < 200; ++c)
      EXPECT_NEAR(y[r * 200 + c], (xv[r * 200 + c] - mean) * rstd * wv[c] + bv[c], 1e-4) << r << " " << c;
  }
  GraphBuilder g;
  const int x2 = g.placeholder("x", {4, 8}, "float32");
  const int w2 = g.placeholder("w", {6}, "float32");
  g.output({g.call("ln", "megakittens.layer_norm.default", {ref(x2), ref(w2), FxArg{}, real(1e-5)}, {4, 8}, "float32")});
  EXPECT_HAS(error_of([&] { GraphRun bad(g.g); }),
             "node 'ln' (megakittens.layer_norm.default): weight shape must be [8] (C of x), got [6]");
}

// q (1, 4, S, 64) and k, v (1, 2, S, 64) repeated to 4 heads the way HF's repeat_kv does it.
FxGraph repeat_kv_graph(bool extra_user) {
  GraphBuilder b;
  const int q = b.placeholder("q", {1, 4, 64, 64});
  const int k = b.placeholder("k", {1, 2, 64, 64});
  int rep[2];
  for (int j = 0; j < 2; ++j) {
    const std::string s = std::to_string(j);
    const int u = b.call("unsqueeze_" + s, "aten.unsqueeze.default", {ref(k), num(2)}, {1, 2, 1, 64, 64});
    const int e = b.call("expand_" + s, "aten.expand.default", {ref(u), ints({1, 2, 2, 64, 64})}, {1, 2, 2, 64, 64});
    const int c = b.call("clone_" + s, "aten.clone.default", {ref(e)}, {1, 2, 2, 64, 64});
    b.g.nodes[c].kwargs = {{"memory_format", str("torch.contiguous_format")}};
    rep[j] = b.call("view_" + s, "aten._unsafe_view.default", {ref(c), ints({1, 4, 64, 64})}, {1, 4, 64, 64});
  }
  const int a = b.add("sdpa", "call_function", "aten._scaled_dot_product_flash_attention_for_cpu.default",
                      {ref(q), ref(rep[0]), ref(rep[1]), real(0.0), flag(true)}, contiguous({1, 4, 64, 64}));
  b.g.nodes[a].outputs.push_back(contiguous({1, 4, 64}, "float32"));
  b.g.nodes[a].multi_output = true;
  const int o = b.add("getitem", "call_function", "getitem", {ref(a), num(0)}, contiguous({1, 4, 64, 64}));
  std::vector<int> outs{o};
  if (extra_user) outs.push_back(b.call("neg", "aten.neg.default", {ref(rep[0])}, {1, 4, 64, 64}));
  b.output(outs);
  return b.g;
}

TEST(FuseRepeatKv, SdpaReadsTheUnrepeatedHeads) {
  FxGraph g = repeat_kv_graph(false);
  EXPECT_EQ(fuse_repeat_kv(g), 2);
  const DAG d = trace(repeat_kv_graph(false));
  int compute = 0;
  for (const Node& n : d.nodes)
    if (n.is_compute()) {
      ++compute;
      EXPECT_EQ(n.itype->name(), "Attention");
      EXPECT_EQ(d.nodes[n.inputs[1].node].name, "k");  // GQA: Hk = 2 heads read directly
      EXPECT_EQ(d.nodes[n.inputs[2].node].name, "k");
    }
  EXPECT_EQ(compute, 1);
}

TEST(FuseRepeatKv, OtherUsersKeepTheRepeat) {
  // Only the SDPA arguments are rewritten; the rank-5 repeat another op reads still has no instruction type.
  FxGraph g = repeat_kv_graph(true);
  EXPECT_EQ(fuse_repeat_kv(g), 2);
  EXPECT_HAS(error_of([] { trace(repeat_kv_graph(true)); }), "rank-5 tensors are not supported");
}

}  // namespace
