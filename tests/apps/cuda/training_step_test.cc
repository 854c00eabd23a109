// The whole training step on the GPU against the CPU: the tiny model of configs/tiny.yaml (MLA, 1 dense + 2 MoE
// layers with group-limited routing, MTP) on synthetic tokens trains one step (2 micro-batches of 4 x 64 tokens)
// with runtime.device cpu and cuda from the same initial parameters and data. The step's losses (computed before
// the update) and gradient norm agree to 1e-4 relative in fp32 and 1e-2 in bf16 (the same bf16 rounding of the
// GEMM inputs on both devices; only the fp32 accumulation order differs) and in fp8 (the same e4m3 quantisation
// on both; the tiny widths, not multiples of 128, take the dense FP8 GEMM's dequantised path, and the routed experts'
// FP8 grouped GEMMs run the wgmma kernel on an sm_90a build, whose tensor-core block sums are not the CPU's
// bitwise: grouped_gemm_fp8.h). The run also writes its
// final checkpoint from device memory and reports the GPU pool's peak memory as mem_gib.
//
// Without a GPU the test skips; under HAI_REQUIRE_GPU=1 (scripts/gpu-test.sh) it fails instead.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "apps/hai-train/trainer.h"
#include "framework/config/load.h"
#include "tests/apps/metrics_file.h"
#include "tests/framework/data/temp_directory.h"
#include "tests/framework/device/cuda/parity.h"

namespace hai {
namespace {

using testing::read_metrics;
using testing::TempDirectory;

// The first step's record of a one-step run of configs/tiny.yaml on `device` in `precision`.
nlohmann::ordered_json first_step(const std::string& device, const std::string& precision) {
  TempDirectory dir;
  std::vector<std::string> overrides = {
      "data.source=synthetic",       "train.steps=1",
      "train.eval_interval=0",       "ema.enabled=false",
      "precision.mode=" + precision, "runtime.device=" + device,
      "checkpoint.dir=" + (dir.path() / "checkpoints").string(),
      "logging.run_dir=" + (dir.path() / "run").string()};
  Config config = load_config(std::string(HAI_SOURCE_DIR) + "/configs/tiny.yaml", overrides, 1);
  Trainer trainer(config);
  trainer.train();
  testing::MetricsFile metrics = read_metrics(dir.path() / "run");
  EXPECT_EQ(metrics.steps.size(), 1u);
  return metrics.steps.empty() ? nlohmann::ordered_json{} : metrics.steps.front();
}

void expect_relative(const nlohmann::ordered_json& gpu, const nlohmann::ordered_json& cpu, const char* key,
                     double tolerance) {
  double actual = gpu[key].get<double>(), expected = cpu[key].get<double>();
  std::printf("[ step ] %s: gpu %.9g, cpu %.9g, relative difference %.3g (bound %.1g)\n", key, actual, expected,
              std::fabs(actual - expected) / std::fabs(expected), tolerance);
  EXPECT_TRUE(std::isfinite(actual)) << key;
  EXPECT_LE(std::fabs(actual - expected), tolerance * std::fabs(expected)) << key << ": gpu " << actual << ", cpu "
                                                                          << expected;
}

void expect_step_agrees(const std::string& precision, double tolerance) {
  nlohmann::ordered_json cpu = first_step("cpu", precision);
  nlohmann::ordered_json gpu = first_step("cuda", precision);
  for (const char* key : {"loss", "lm_loss", "mtp_loss", "balance_loss", "grad_norm"}) {
    expect_relative(gpu, cpu, key, tolerance);
  }
  EXPECT_EQ(gpu["tokens"], cpu["tokens"]);
  EXPECT_GT(gpu["mem_gib"].get<double>(), 0.0);  // the GPU pool's peak
}

TEST(CudaTrainingStep, Fp32LossAgreesWithTheCpuTo1e4) {
  HAI_REQUIRE_CUDA_DEVICE();
  expect_step_agrees("fp32", 1e-4);
}

TEST(CudaTrainingStep, Bf16LossAgreesWithTheCpuTo1e2) {
  HAI_REQUIRE_CUDA_DEVICE();
  expect_step_agrees("bf16", 1e-2);
}

TEST(CudaTrainingStep, Fp8LossAgreesWithTheCpuTo1e2) {
  HAI_REQUIRE_CUDA_DEVICE();
  expect_step_agrees("fp8", 1e-2);
}

}  // namespace
}  // namespace hai
