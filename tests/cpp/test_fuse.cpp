// The FX-level RMSNorm fusion (trace/fuse_rms_norm): F.rms_norm's and LlamaRMSNorm's decompositions
// become one RMSNorm node; a decomposition whose intermediates are used elsewhere is left alone.
#include <gtest/gtest.h>

#include "fx_builder.h"
#include "ir/error.h"
#include "itypes/rms_norm.h"
#include "trace/fuse_rms_norm.h"
#include "trace/tracer.h"

using namespace mk;
using namespace mk::test;

namespace {

FxArg kw_dtype(const char* d) { return str(std::string("torch.") + d); }

// x (R, C) bf16 -> the decomposition up to m = h * rsqrt(mean(h^2) + eps); returns (builder, x, w, m, h).
struct Decomposed {
  GraphBuilder b;
  int x, w, h, m;
  explicit Decomposed(bool f_form, bool square_by_mul = false) {
    x = b.placeholder("x", {8, 64});
    w = b.placeholder("w", {64});
    h = b.call("_to_copy", "aten._to_copy.default", {ref(x)}, {8, 64}, "float32");
    b.g.nodes[h].kwargs = {{"dtype", kw_dtype("float32")}};
    const int p = square_by_mul ? b.call("mul_0", "aten.mul.Tensor", {ref(h), ref(h)}, {8, 64}, "float32")
                                : b.call("pow_1", "aten.pow.Tensor_Scalar", {ref(h), num(2)}, {8, 64}, "float32");
    const int mean = b.call("mean", "aten.mean.dim", {ref(p), list({num(f_form ? 1 : -1)}), FxArg{FxArg::Kind::Bool, 1}},
                            {8, 1}, "float32");
    const int add = b.call("add", f_form ? "aten.add.Scalar" : "aten.add.Tensor", {ref(mean), real(1e-5)}, {8, 1},
                           "float32");
    const int r = b.call("rsqrt", "aten.rsqrt.default", {ref(add)}, {8, 1}, "float32");
    m = b.call("mul", "aten.mul.Tensor", {ref(h), ref(r)}, {8, 64}, "float32");
  }
  int cast(int src, const std::string& name) {
    const int c = b.call(name, "aten._to_copy.default", {ref(src)}, {8, 64});
    b.g.nodes[c].kwargs = {{"dtype", kw_dtype("bfloat16")}};
    return c;
  }
};

void expect_one_rms_norm(const FxGraph& g, bool weight) {
  const DAG d = trace(g);
  int compute = 0;
  for (const Node& n : d.nodes)
    if (n.is_compute()) {
      ++compute;
      const auto* r = dynamic_cast<const RMSNorm*>(n.itype.get());
      ASSERT_NE(r, nullptr) << n.itype->str();
      EXPECT_FLOAT_EQ(static_cast<float>(r->eps()), 1e-5f);
      EXPECT_EQ(r->has_weight(), weight);
    }
  EXPECT_EQ(compute, 1);
}

}  // namespace

TEST(FuseRMSNorm, FunctionalForm) {  // mul by the weight in fp32, then cast back
  Decomposed d(true);
  const int y32 = d.b.call("mul_1", "aten.mul.Tensor", {ref(d.m), ref(d.w)}, {8, 64}, "float32");
  d.b.output({d.cast(y32, "_to_copy_1")});
  expect_one_rms_norm(d.b.g, true);
}

TEST(FuseRMSNorm, LlamaForm) {  // cast back, then the weight in bf16
  Decomposed d(false);
  const int c = d.cast(d.m, "_to_copy_1");
  d.b.output({d.b.call("mul_1", "aten.mul.Tensor", {ref(d.w), ref(c)}, {8, 64})});
  expect_one_rms_norm(d.b.g, true);
}

TEST(FuseRMSNorm, GptFastForm) {  // h * h instead of pow(h, 2), cast back, then the weight on the right
  Decomposed d(false, true);
  const int c = d.cast(d.m, "_to_copy_1");
  d.b.output({d.b.call("mul_1", "aten.mul.Tensor", {ref(c), ref(d.w)}, {8, 64})});
  expect_one_rms_norm(d.b.g, true);
}

TEST(FuseRMSNorm, SquareOfAnotherTensorIsLeftAlone) {  // h * x is no square: nothing fuses
  Decomposed d(false, true);
  d.b.g.nodes[d.h + 1].args[1] = ref(d.x);
  d.b.output({d.cast(d.m, "_to_copy_1")});
  FxGraph g = d.b.g;
  EXPECT_EQ(fuse_decomposed_rms_norm(g), 0);
}

TEST(FuseRMSNorm, WithoutWeight) {
  Decomposed d(true);
  d.b.output({d.cast(d.m, "_to_copy_1")});
  expect_one_rms_norm(d.b.g, false);
}

TEST(FuseRMSNorm, SharedIntermediateIsLeftAlone) {
  Decomposed d(true);
  const int c = d.cast(d.m, "_to_copy_1");
  const int h2 = d.cast(d.h, "_to_copy_2");  // a second use of the fp32 upcast
  d.b.output({c, h2});
  FxGraph g = d.b.g;
  EXPECT_EQ(fuse_decomposed_rms_norm(g), 0);
  // Unfused, every op still has an instruction type: the mean is a RowReduce, nothing is an RMSNorm.
  const DAG dag = trace(d.b.g);
  int reduce = 0;
  for (const Node& n : dag.nodes)
    if (n.is_compute()) {
      EXPECT_EQ(dynamic_cast<const RMSNorm*>(n.itype.get()), nullptr) << n.name;
      reduce += n.itype->str() == "RowReduce(op=mean,keepdim)";
    }
  EXPECT_EQ(reduce, 1);
}
