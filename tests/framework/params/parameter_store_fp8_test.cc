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

// fp8_only (the routed experts): with FP8 copies the parameter has no compute copy; the compute buffer holds the
// others in value order, refreshed around the hole, and compute_values(range) maps a range that has one. Without
// FP8 (or in fp32) nothing changes.
TEST(ParameterStoreFp8, Fp8OnlyWeightsKeepNoComputeCopy) {
  std::vector<ParameterSpec> specs = fp8_specs();
  specs.insert(specs.begin() + 2, specs[3]);  // proj, norm, an expert, head, expert
  specs[2].name = "first_expert.weight";
  for (ParameterSpec& spec : specs) spec.fp8_only = spec.group == ParameterGroup::expert;
  ParameterStore without_fp8(specs, Device::cpu(), DType::bf16);
  EXPECT_EQ(without_fp8.compute_values().numel(), without_fp8.numel());
  EXPECT_NE(without_fp8["expert.weight"].compute.raw(), nullptr);

  ParameterStore store(specs, Device::cpu(), DType::bf16, {.enabled = true});
  EXPECT_EQ(store.compute_dtype(), DType::bf16);
  EXPECT_EQ(store["expert.weight"].compute.raw(), nullptr);
  EXPECT_EQ(store["first_expert.weight"].compute.raw(), nullptr);
  EXPECT_TRUE(store["expert.weight"].fp8.defined());
  const int64_t expert = 64 * 200, proj = 200 * 130, norm = 130, head = 5 * 130;
  EXPECT_EQ(store.compute_values().numel(), store.numel() - 2 * expert);
  store.initialize(3, 0.1);
  store.refresh_compute_copy();
  for (const char* name : {"proj.weight", "norm.weight", "head.weight"}) {
    const Parameter& parameter = store[name];
    for (int64_t i = 0; i < parameter.value.numel(); ++i) {
      ASSERT_EQ(parameter.compute.data<bf16>()[i].bits, float_to_bf16(parameter.value.data<float>()[i])) << name;
    }
  }
  // head's compute copy follows norm's in the buffer, though an expert lies between their values.
  EXPECT_EQ(store["head.weight"].compute.raw(), store["norm.weight"].compute.data<bf16>() + norm);
  Tensor head_copy = store.compute_values(proj + norm + expert, proj + norm + expert + head);
  EXPECT_EQ(head_copy.raw(), store["head.weight"].compute.raw());
  EXPECT_EQ(head_copy.numel(), head);
  EXPECT_EQ(store.compute_values(proj + norm, proj + norm + expert).raw(), nullptr);  // the expert: none
  EXPECT_THROW(store.compute_values(0, proj + norm + expert), Error);                 // in part
  EXPECT_THROW(store.compute_values(proj, proj + norm + expert + head), Error);        // not in one piece
}

TEST(ParameterStoreFp8, RefusesAnFp8CopyOfAVector) {
  std::vector<ParameterSpec> specs = {{"norm.weight", Shape{8}, ParameterGroup::dense, ParameterInit::ones, false,
                                       true}};
  specs[0].fp8_gemm = true;
  EXPECT_THROW(ParameterStore(specs, Device::cpu(), DType::bf16, {.enabled = true}), Error);
}

}  // namespace
}  // namespace hai
