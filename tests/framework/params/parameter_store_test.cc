#include <gtest/gtest.h>

#include <cmath>

#include "framework/params/parameter_store.h"

namespace hai {
namespace {

std::vector<ParameterSpec> small_specs() {
  return {
      {"a.weight", Shape{3, 4}, ParameterGroup::dense, ParameterInit::normal, true, true},
      {"a.norm", Shape{4}, ParameterGroup::dense, ParameterInit::ones, false, true},
      {"a.bias", Shape{2}, ParameterGroup::dense, ParameterInit::zeros, false, false},
      {"b.experts.0.weight", Shape{2, 2}, ParameterGroup::expert, ParameterInit::normal, true, true},
  };
}

TEST(ParameterStore, FlatBuffersAndViews) {
  ParameterStore store(small_specs(), Device::cpu());
  EXPECT_EQ(store.numel(), 12 + 4 + 2 + 4);
  EXPECT_EQ(store.grads().numel(), 12 + 4 + 4);  // the non-trainable bias has no gradient
  EXPECT_EQ(store["a.norm"].offset, 12);
  EXPECT_EQ(store["b.experts.0.weight"].offset, 18);
  EXPECT_EQ(store["b.experts.0.weight"].grad_offset, 16);
  EXPECT_FALSE(store["a.bias"].grad.defined() && store["a.bias"].grad.numel() > 0);
  EXPECT_EQ(store["a.weight"].value.shape(), (Shape{3, 4}));
  EXPECT_EQ(store["a.norm"].value.raw(), static_cast<float*>(store.values().raw()) + 12);
  EXPECT_THROW(store["missing"], Error);
  auto duplicated = small_specs();
  duplicated.push_back(duplicated.front());
  EXPECT_THROW(ParameterStore(duplicated, Device::cpu()), Error);
}

TEST(ParameterStore, InitialisationIsAPureFunctionOfSeedAndName) {
  ParameterStore store(small_specs(), Device::cpu());
  store.initialize(7, 0.02);
  EXPECT_EQ(store["a.norm"].value.data<float>()[3], 1.0f);
  EXPECT_EQ(store["a.bias"].value.data<float>()[1], 0.0f);
  // The same parameter declared alone (another layout) gets the same values.
  ParameterStore alone({small_specs()[3]}, Device::cpu());
  alone.initialize(7, 0.02);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(alone["b.experts.0.weight"].value.data<float>()[i],
              store["b.experts.0.weight"].value.data<float>()[i]);
  }
  double sum_squares = 0;
  for (int i = 0; i < 12; ++i) sum_squares += std::pow(store["a.weight"].value.data<float>()[i], 2);
  EXPECT_GT(sum_squares, 0.0);
  EXPECT_LT(std::sqrt(sum_squares / 12), 0.06);
  ParameterStore reseeded(small_specs(), Device::cpu());
  reseeded.initialize(8, 0.02);
  EXPECT_NE(reseeded["a.weight"].value.data<float>()[0], store["a.weight"].value.data<float>()[0]);
}

TEST(ParameterStore, ZeroGrads) {
  ParameterStore store(small_specs(), Device::cpu());
  store["a.weight"].grad.data<float>()[5] = 3.0f;
  store.zero_grads();
  EXPECT_EQ(store["a.weight"].grad.data<float>()[5], 0.0f);
}

TEST(ParameterStore, ComputeCopy) {
  ParameterStore fp32_store(small_specs(), Device::cpu());
  EXPECT_EQ(fp32_store["a.weight"].compute.raw(), fp32_store["a.weight"].value.raw());
  ParameterStore store(small_specs(), Device::cpu(), DType::bf16);
  store.initialize(3, 0.02);
  store.refresh_compute_copy();
  const Parameter& weight = store["a.weight"];
  EXPECT_EQ(weight.compute.dtype(), DType::bf16);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(weight.compute.data<bf16>()[i].bits, float_to_bf16(weight.value.data<float>()[i]));
  }
}

TEST(ParameterStream, StableHash) {
  EXPECT_EQ(parameter_stream(""), 0xcbf29ce484222325ull);  // FNV-1a offset basis
  EXPECT_EQ(parameter_stream("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace hai
