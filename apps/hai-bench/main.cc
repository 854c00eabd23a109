// hai-bench: op-level GPU benchmarks of the CUDA backend at a model's shapes (default configs/bench_moe_1p7b.yaml),
// one section each (--section NAME, may repeat; all by default):
//   gemm             the dense linear GEMMs;               gemm_ceiling  a square 8192^3 GEMM (the cuBLASLt ceiling);
//   attention        causal attention forward, backward;   grouped_gemm  the BF16 grouped expert GEMMs;
//   grouped_gemm_fp8 the FP8 grouped expert GEMMs (forward, weight gradient; each kernel) against BF16;
//   fp8              the FP8 linear layers (GEMMs, quantisations, whole layers) against BF16;
//   fp8_quantize     the FP8 activation quantisations (one-pass forms against the separate kernels);
//   elementwise      RMSNorm, RoPE, MLA's column moves, the fused cross-entropy (bandwidth).
// Prints one JSON object on stdout and writes it to --out.
// Exit codes: 0 all benchmarks ran, 1 some failed (their entries hold "error"), 2 no GPU, a bad config or an
// unknown section.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/hai-bench/attention_bench.h"
#include "apps/hai-bench/elementwise_bench.h"
#include "apps/hai-bench/fp8_bench.h"
#include "apps/hai-bench/fp8_quantize_bench.h"
#include "apps/hai-bench/gemm_bench.h"
#include "apps/hai-bench/grouped_gemm_bench.h"
#include "apps/hai-bench/grouped_gemm_fp8_bench.h"
#include "framework/config/config_error.h"
#include "framework/core/check.h"
#include "framework/config/load.h"

namespace {

constexpr int kExitBenchmarkFailed = 1;
constexpr int kExitNoGpuOrBadConfig = 2;
constexpr int64_t kCeilingSize = 8192;

// Why there is no usable GPU; empty when there is one.
std::string missing_gpu_reason() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return cudaGetErrorString(status);
  return count == 0 ? "no CUDA device" : "";
}

// {name, memory_gib, sm_count} of GPU 0.
nlohmann::json device_summary() {
  cudaDeviceProp properties{};
  HAI_CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  return {{"name", properties.name},
          {"memory_gib", static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)},
          {"sm_count", properties.multiProcessorCount}};
}

// Runs one benchmark into result[key]; a failure becomes {"error": message} there and counts in `failures`.
void run_section(nlohmann::json& result, const std::string& key, const std::function<nlohmann::json()>& benchmark,
                 int& failures) {
  std::fprintf(stderr, "hai-bench: %s\n", key.c_str());
  try {
    result[key] = benchmark();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hai-bench: %s failed: %s\n", key.c_str(), error.what());
    result[key] = {{"error", error.what()}};
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hai-bench: GPU op benchmarks (GEMM, attention, grouped GEMM, FP8) at a model's shapes, as JSON"};
  std::string config_path = "configs/bench_moe_1p7b.yaml";
  std::vector<std::string> overrides;
  std::vector<std::string> sections;
  std::string out_path;
  hai::bench::TimingOptions timing;
  app.add_option("--config", config_path, "experiment config whose model shapes are benchmarked")
      ->capture_default_str();
  app.add_option("--set", overrides, "config override a.b=value (may repeat)");
  app.add_option("--out", out_path, "also write the JSON to this file");
  app.add_option("--section", sections,
                 "run only this section (may repeat): gemm, gemm_ceiling, attention, grouped_gemm, grouped_gemm_fp8, "
                 "fp8, fp8_quantize, elementwise");
  app.add_option("--warmup", timing.warmup, "untimed calls before timing")->capture_default_str();
  app.add_option("--iterations", timing.iterations, "timed calls (the mean is reported)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::string no_gpu = missing_gpu_reason();
  if (!no_gpu.empty()) {
    std::fprintf(stderr, "hai-bench: needs a CUDA GPU: %s\n", no_gpu.c_str());
    return kExitNoGpuOrBadConfig;
  }
  hai::Config config;
  try {
    config = hai::load_config(config_path, overrides, 1, hai::FeatureCheck::plan_only);
  } catch (const hai::ConfigError& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return kExitNoGpuOrBadConfig;
  }
  int64_t tokens = config.train.micro_batch_size * config.train.seq_len;
  const hai::ModelConfig& model = config.model;

  nlohmann::json result = {{"tool", "hai-bench"},
                           {"config", config_path},
                           {"tokens", tokens},
                           {"timing", {{"warmup", timing.warmup}, {"iterations", timing.iterations}}},
                           {"device", device_summary()}};
  hai::bench::AttentionShape attention{.batch = config.train.micro_batch_size,
                                       .sequence = config.train.seq_len,
                                       .heads = model.num_heads,
                                       .qk_head_dim = model.qk_nope_head_dim + model.qk_rope_head_dim,
                                       .v_head_dim = model.v_head_dim};
  bool pow2_scales = config.precision.fp8.pow2_scales;
  const std::vector<std::pair<std::string, std::function<nlohmann::json()>>> benchmarks = {
      {"gemm", [&] { return hai::bench::benchmark_model_gemms(model, tokens, timing); }},
      {"gemm_ceiling", [&] { return hai::bench::benchmark_square_gemm(kCeilingSize, timing); }},
      {"attention", [&] { return hai::bench::benchmark_attention(attention, timing); }},
      {"grouped_gemm", [&] { return hai::bench::benchmark_grouped_gemm(model, tokens, timing); }},
      {"grouped_gemm_fp8", [&] { return hai::bench::benchmark_grouped_gemm_fp8(model, tokens, timing); }},
      {"fp8", [&] { return hai::bench::benchmark_fp8_linears(model, tokens, pow2_scales, timing); }},
      {"fp8_quantize", [&] { return hai::bench::benchmark_fp8_quantize(model, tokens, timing); }},
      {"elementwise", [&] { return hai::bench::benchmark_elementwise(model, tokens, timing); }},
  };
  for (const std::string& section : sections) {
    bool known = std::any_of(benchmarks.begin(), benchmarks.end(), [&](const auto& b) { return b.first == section; });
    if (!known) {
      std::fprintf(stderr, "hai-bench: --section: unknown section '%s'\n", section.c_str());
      return kExitNoGpuOrBadConfig;
    }
  }
  int failures = 0;
  for (const auto& [name, benchmark] : benchmarks) {
    bool wanted = sections.empty() || std::find(sections.begin(), sections.end(), name) != sections.end();
    if (wanted) run_section(result, name, benchmark, failures);
  }

  std::string text = result.dump(2);
  std::printf("%s\n", text.c_str());
  if (!out_path.empty()) {
    std::ofstream out(out_path);
    out << text << '\n';
    if (!out) {
      std::fprintf(stderr, "hai-bench: cannot write %s\n", out_path.c_str());
      return kExitBenchmarkFailed;
    }
  }
  return failures == 0 ? 0 : kExitBenchmarkFailed;
}
