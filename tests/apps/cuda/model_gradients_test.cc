// One micro-batch of the tiny model (configs/tiny.yaml) on the GPU against the CPU, parameter by parameter: the
// same initial values and tokens give the same losses and, for every parameter, the same gradient (fp32: 1e-4 of
// the gradient's largest magnitude). A failure names the first parameters that differ, so a broken kernel is
// found by the layer it belongs to rather than by a NaN gradient norm.
//
// Without a GPU the test skips; under HAI_REQUIRE_GPU=1 (scripts/gpu-test.sh) it fails instead.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "framework/config/load.h"
#include "framework/core/rng.h"
#include "model/deepseek_v3_model.h"
#include "model/parameters.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/model/model_test_inputs.h"

namespace hai {
namespace {

struct DeviceRun {
  std::unique_ptr<ParameterStore> store;
  MicroBatchLosses losses;
};

DeviceRun run_micro_batch(const Config& config, const Tensor& tokens, Device device) {
  DeviceRun run;
  run.store = std::make_unique<ParameterStore>(deepseek_v3_parameters(config.model), device);
  run.store->initialize(static_cast<uint64_t>(config.train.seed), config.model.init_std);
  run.store->zero_grads();
  DeepseekV3Model model(config.model, *run.store);
  run.losses = model.train_micro_batch(tokens, 1.0f);
  run.store->zero_unwritten_grads();
  return run;
}

// The largest |gpu - cpu| over the parameter's gradient, relative to the CPU gradient's largest magnitude; NaN
// when the GPU gradient has a non-finite element.
double gradient_difference(const Parameter& cpu, const Parameter& gpu) {
  OwnedTensor gpu_grad = host_copy(gpu.grad);
  double largest = 0, difference = 0;
  for (int64_t i = 0; i < cpu.grad.numel(); ++i) {
    float expected = cpu.grad.data<float>()[i], actual = gpu_grad.data<float>()[i];
    if (!std::isfinite(actual)) return std::nan("");
    largest = std::max(largest, std::fabs(double(expected)));
    difference = std::max(difference, std::fabs(double(actual) - double(expected)));
  }
  return largest > 0 ? difference / largest : difference;
}

// The CPU model with its heads in one chunk against the GPU model with them in chunks of gpu_head_chunk_tokens
// (0: automatic, one chunk here).
void expect_gpu_gradients_match_cpu(int64_t gpu_head_chunk_tokens) {
  Config config = load_config(std::string(HAI_SOURCE_DIR) + "/configs/tiny.yaml", {"precision.mode=fp32"}, 1);
  OwnedTensor tokens = testing::random_tokens(4, 64, config.model.vocab_size, CounterRng(11, 0));  // [4, 65]
  DeviceRun cpu = run_micro_batch(config, tokens, Device::cpu());
  config.model.head_chunk_tokens = gpu_head_chunk_tokens;
  DeviceRun gpu = run_micro_batch(config, tokens, Device::cuda(0));
  std::printf("[ model ] lm loss cpu %.9g gpu %.9g, balance cpu %.9g gpu %.9g\n", cpu.losses.lm.mean(),
              gpu.losses.lm.mean(), cpu.losses.balance, gpu.losses.balance);
  EXPECT_NEAR(gpu.losses.lm.mean(), cpu.losses.lm.mean(), 1e-4 * std::fabs(cpu.losses.lm.mean()));
  int reported = 0;
  for (const Parameter& parameter : cpu.store->parameters()) {
    if (!parameter.spec.trainable) continue;
    double difference = gradient_difference(parameter, (*gpu.store)[parameter.spec.name]);
    bool agrees = difference <= 1e-4;  // false for NaN
    if (!agrees && reported++ < 25) {
      std::printf("[ model ] %s: relative gradient difference %.3g\n", parameter.spec.name.c_str(), difference);
    }
    EXPECT_TRUE(agrees) << parameter.spec.name << ": " << difference;
  }
}

TEST(CudaModelGradients, EveryParameterMatchesTheCpuInFp32) {
  HAI_REQUIRE_CUDA_DEVICE();
  expect_gpu_gradients_match_cpu(0);
}

TEST(CudaModelGradients, HeadsInChunksOf100Of256TokensMatchTheCpuInFp32) {
  HAI_REQUIRE_CUDA_DEVICE();
  expect_gpu_gradients_match_cpu(100);
}

}  // namespace
}  // namespace hai
