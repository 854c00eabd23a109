// FP8 weight copies: kept only for fp8_gemm parameters when enabled, and refreshed as the exact 128x128
// quantisation of the master values, as stored and transposed.

#include <gtest/gtest.h>

#include <cstring>

#include "framework/device/fp8_quantize.h"
#include "framework/params/parameter_store.h"

namespace hai {
namespace {

std::vector<ParameterSpec> fp8_specs() {
  std::vector<ParameterSpec> specs = {
      {"proj.weight", Shape{200, 130}, ParameterGroup::dense, ParameterInit::normal, true, true},
      {"norm.weight", Shape{130}, ParameterGroup::dense, ParameterInit::ones, false, true},
      {"head.weight", Shape{5, 130}, ParameterGroup::dense, ParameterInit::normal, true, true},
      {"expert.weight", Shape{64, 200}, ParameterGroup::expert, ParameterInit::normal, true, true},
  };
  specs[0].fp8_gemm = true;
  specs[3].fp8_gemm = true;
  return specs;
}

void expect_same_bytes(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  EXPECT_EQ(std::memcmp(actual.raw(), expected.raw(), expected.bytes()), 0) << what;
}

TEST(ParameterStoreFp8, CopiesOnlyTheFp8GemmWeightsWhenEnabled) {
  ParameterStore disabled(fp8_specs(), Device::cpu(), DType::bf16);
  for (const Parameter& parameter : disabled.parameters()) EXPECT_FALSE(parameter.fp8.defined()) << parameter.spec.name;
  ParameterStore store(fp8_specs(), Device::cpu(), DType::bf16, {.enabled = true, .pow2_activation_scales = true});
  EXPECT_TRUE(store["proj.weight"].fp8.defined());
  EXPECT_TRUE(store["expert.weight"].fp8.defined());
  EXPECT_FALSE(store["head.weight"].fp8.defined());
  EXPECT_FALSE(store["norm.weight"].fp8.defined());
  const Fp8Weight& proj = store["proj.weight"].fp8;
  EXPECT_EQ(proj.values.shape(), (Shape{200, 130}));
  EXPECT_EQ(proj.scales.shape(), (Shape{2, 2}));
  EXPECT_EQ(proj.transposed_values.shape(), (Shape{130, 200}));
  EXPECT_EQ(proj.transposed_scales.shape(), (Shape{2, 2}));
  EXPECT_TRUE(proj.pow2_activation_scales);
  EXPECT_EQ(store["expert.weight"].fp8.scales.shape(), (Shape{1, 2}));
}

TEST(ParameterStoreFp8, RefreshQuantisesTheMasterValues) {
  ParameterStore store(fp8_specs(), Device::cpu(), DType::bf16, {.enabled = true});
  store.initialize(3, 0.02);
  store.refresh_compute_copy();
  for (const char* name : {"proj.weight", "expert.weight"}) {
    const Parameter& parameter = store[name];
    int64_t out = parameter.spec.shape[0], in = parameter.spec.shape[1];
    OwnedTensor values(Shape{out, in}, DType::e4m3), scales(parameter.fp8.scales.shape(), DType::f32);
    quantize_128x128(values, scales, parameter.value);
    expect_same_bytes(parameter.fp8.values, values, std::string(name) + " values");
    expect_same_bytes(parameter.fp8.scales, scales, std::string(name) + " scales");
    OwnedTensor transposed(Shape{in, out}, DType::e4m3), transposed_scales(parameter.fp8.transposed_scales.shape(),
                                                                           DType::f32);
    quantize_128x128_transposed(transposed, transposed_scales, parameter.value);
    expect_same_bytes(parameter.fp8.transposed_values, transposed, std::string(name) + " transposed values");
    expect_same_bytes(parameter.fp8.transposed_scales, transposed_scales, std::string(name) + " transposed scales");
  }
  // A changed master value reaches the FP8 copy at the next refresh only.
  store["proj.weight"].value.data<float>()[0] = 1.0f;
  EXPECT_NE(e4m3_to_float(store["proj.weight"].fp8.values.data<e4m3>()[0].bits) *
                store["proj.weight"].fp8.scales.data<float>()[0],
            1.0f);
  store.refresh_compute_copy();
  EXPECT_EQ(store["proj.weight"].fp8.scales.data<float>()[0], 1.0f / 448.0f);  // the new block amax is 1
  EXPECT_EQ(e4m3_to_float(store["proj.weight"].fp8.values.data<e4m3>()[0].bits), 448.0f);
}

TEST(ParameterStoreFp8, RefusesAnFp8CopyOfAVector) {
  std::vector<ParameterSpec> specs = {{"norm.weight", Shape{8}, ParameterGroup::dense, ParameterInit::ones, false,
                                       true}};
  specs[0].fp8_gemm = true;
  EXPECT_THROW(ParameterStore(specs, Device::cpu(), DType::bf16, {.enabled = true}), Error);
}

}  // namespace
}  // namespace hai
