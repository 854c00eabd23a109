#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "framework/core/error.h"
#include "framework/device/elementwise.h"
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

// Every gradient element equals `value`.
void expect_grad_filled(const Parameter& parameter, float value) {
  for (int64_t i = 0; i < parameter.grad.numel(); ++i) {
    ASSERT_EQ(parameter.grad.data<float>()[i], value) << parameter.spec.name << " element " << i;
  }
}

TEST(ParameterStore, NewGradientsAreZeroAndWritten) {
  ParameterStore store(small_specs(), Device::cpu());
  expect_grad_filled(store["a.weight"], 0.0f);
  EXPECT_EQ(store["a.weight"].take_grad_beta(), 1.0f);  // already written: a producer adds
}

TEST(ParameterStore, ZeroGradsMarksGradientsUnwrittenWithoutAPass) {
  ParameterStore store(small_specs(), Device::cpu());
  fill_tensor(store.grads(), 3.0f);
  store.zero_grads();
  expect_grad_filled(store["a.weight"], 3.0f);          // untouched
  EXPECT_EQ(store["a.weight"].take_grad_beta(), 0.0f);  // the first producer overwrites
  EXPECT_EQ(store["a.weight"].take_grad_beta(), 1.0f);  // later ones add
  EXPECT_EQ(store["a.norm"].take_grad_beta(), 0.0f);    // each parameter for itself
  EXPECT_THROW(store["a.bias"].take_grad_beta(), Error);  // not trainable
}

TEST(ParameterStore, GradToAddToZeroesAnUnwrittenGradientOnce) {
  ParameterStore store(small_specs(), Device::cpu());
  fill_tensor(store.grads(), 3.0f);
  store.zero_grads();
  const Parameter& weight = store["a.weight"];
  expect_grad_filled(weight, 3.0f);
  weight.grad_to_add_to().data<float>()[0] += 2.0f;
  expect_grad_filled(store["a.norm"], 3.0f);  // only the parameter asked for
  EXPECT_EQ(weight.grad.data<float>()[0], 2.0f);
  EXPECT_EQ(weight.grad.data<float>()[1], 0.0f);
  weight.grad_to_add_to().data<float>()[0] += 2.0f;  // written: no second zero fill
  EXPECT_EQ(weight.grad.data<float>()[0], 4.0f);
  EXPECT_EQ(weight.take_grad_beta(), 1.0f);
}

TEST(ParameterStore, ZeroUnwrittenGradsZeroesOnlyTheUnwritten) {
  ParameterStore store(small_specs(), Device::cpu());
  fill_tensor(store.grads(), 3.0f);
  store.zero_grads();
  store["a.norm"].take_grad_beta();  // a.norm written (as 3s here)
  store.zero_unwritten_grads(0, 13);  // the gradient layout: a.weight [0, 12), a.norm [12, 16), experts [16, 20)
  expect_grad_filled(store["a.weight"], 0.0f);
  expect_grad_filled(store["a.norm"], 3.0f);
  expect_grad_filled(store["b.experts.0.weight"], 3.0f);  // outside the range
  EXPECT_EQ(store["a.weight"].take_grad_beta(), 1.0f);  // zeroed counts as written
  store.zero_unwritten_grads();
  expect_grad_filled(store["b.experts.0.weight"], 0.0f);
  expect_grad_filled(store["a.norm"], 3.0f);

  fill_tensor(store.grads(), 3.0f);  // adjacent unwritten gradients (a.bias between them has none): one run
  store.zero_grads();
  store.zero_unwritten_grads();
  for (int64_t i = 0; i < store.grads().numel(); ++i) ASSERT_EQ(store.grads().data<float>()[i], 0.0f) << i;
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

// Sharded masters (a.weight and the expert here): no values of their own, their value views alias their gradients;
// values(begin, end) finds held and staged values by value offset; read_values / write_values cover both; the
// compute copy is rounded from the staged values. Only trainable parameters ahead of the others, in mixed precision.
TEST(ParameterStore, ShardedMastersAreStagedInTheirGradients) {
  std::vector<ParameterSpec> specs = small_specs();
  std::swap(specs[2], specs[3]);  // trainable first: a.weight, a.norm, the expert, a.bias
  auto sharded = [](const ParameterSpec& spec) { return spec.name != "a.norm" && spec.trainable; };
  ParameterStore store(specs, Device::cpu(), DType::bf16, {}, sharded);
  EXPECT_EQ(store.numel(), 22);
  EXPECT_EQ(store.values().numel(), 4 + 2);  // a.norm and a.bias
  EXPECT_TRUE(store.has_sharded_masters());
  EXPECT_TRUE(store["a.weight"].sharded_master);
  EXPECT_EQ(store["a.weight"].value.raw(), store["a.weight"].grad.raw());
  EXPECT_EQ(store.values(16, 20).raw(), store["b.experts.0.weight"].grad.raw());
  EXPECT_EQ(store.values(12, 16).raw(), store["a.norm"].value.raw());
  EXPECT_THROW(store.values(10, 14), Error);  // staged and held: not one piece
  store.initialize(5, 0.5);
  OwnedTensor whole(Shape{22}, DType::f32);
  store.read_values(whole);
  EXPECT_EQ(whole.tensor().data<float>()[12], 1.0f);  // a.norm's ones
  EXPECT_EQ(whole.tensor().data<float>()[3], store["a.weight"].value.data<float>()[3]);
  fill_tensor(whole, 0.25f);
  store.write_values(whole);
  store.refresh_compute_copy();
  for (const Parameter& parameter : store.parameters()) {
    EXPECT_EQ(parameter.value.data<float>()[0], 0.25f) << parameter.spec.name;
    EXPECT_EQ(bf16_to_float(parameter.compute.data<bf16>()[0].bits), 0.25f) << parameter.spec.name;
  }
  EXPECT_THROW(ParameterStore(specs, Device::cpu(), DType::f32, {}, sharded), Error);  // fp32: values are the copy
  EXPECT_THROW(ParameterStore(small_specs(), Device::cpu(), DType::bf16, {}, sharded), Error);  // a.bias before
}

TEST(ParameterStream, StableHash) {
  EXPECT_EQ(parameter_stream(""), 0xcbf29ce484222325ull);  // FNV-1a offset basis
  EXPECT_EQ(parameter_stream("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace hai
