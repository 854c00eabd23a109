#include "apps/hai-bench/fp8_quantize_bench.h"

#include <vector>

#include "apps/hai-bench/device_tensors.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/grouped_gemm_fp8_weight_grad.h"

namespace hai::bench {
namespace {

int64_t tiles(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

nlohmann::json timed(const std::function<void()>& op, double bytes, const TimingOptions& timing) {
  double ms = time_ms(op, timing);
  return {{"ms", ms}, {"gbps", bytes / (ms * 1e6)}};
}

double bytes_of(const std::vector<const OwnedTensor*>& tensors) {
  double bytes = 0;
  for (const OwnedTensor* t : tensors) bytes += static_cast<double>(t->tensor().bytes());
  return bytes;
}

// x [M, K] bf16 of normal draws on GPU 0.
OwnedTensor bf16_normal(int64_t m, int64_t k, uint64_t seed) {
  OwnedTensor x = normal_device_tensor(Shape{m, k}, seed);
  OwnedTensor result(Shape{m, k}, DType::bf16, Device::cuda(0));
  cast_tensor(result, x);
  return result;
}

nlohmann::json benchmark_rows_and_columns(int64_t m, int64_t k, const TimingOptions& timing) {
  Device gpu = Device::cuda(0);
  OwnedTensor x = bf16_normal(m, k, 31);  // [M, K]
  OwnedTensor q(Shape{m, k}, DType::e4m3, gpu), scales(Shape{m, tiles(k)}, DType::f32, gpu);
  OwnedTensor q_t(Shape{k, m}, DType::e4m3, gpu), scales_t(Shape{k, tiles(m)}, DType::f32, gpu);
  double read = bytes_of({&x});
  nlohmann::json result = {
      {"shape", Shape{m, k}.str()},
      {"one_pass", timed([&] { quantize_1x128_and_128x1_transposed(q, scales, q_t, scales_t, x); },
                         read + bytes_of({&q, &scales, &q_t, &scales_t}), timing)},
      {"rows", timed([&] { quantize_1x128(q, scales, x); }, read + bytes_of({&q, &scales}), timing)},
      {"columns",
       timed([&] { quantize_128x1_transposed(q_t, scales_t, x); }, read + bytes_of({&q_t, &scales_t}), timing)}};
  result["separate_over_one_pass"] =
      (result["rows"]["ms"].get<double>() + result["columns"]["ms"].get<double>()) /
      result["one_pass"]["ms"].get<double>();
  return result;
}

nlohmann::json benchmark_expert_tokens(int64_t experts, int64_t rows, int64_t cols, const TimingOptions& timing) {
  Device gpu = Device::cuda(0);
  OwnedTensor offsets = expert_offsets(uneven_expert_rows(experts, rows));  // [E + 1]
  OwnedTensor padded(offsets.shape(), DType::i32, gpu);                     // [E + 1]
  int64_t padded_rows = padded_expert_rows(rows, experts);
  OwnedTensor x = bf16_normal(rows, cols, 32);  // [R, C]
  OwnedTensor values(Shape{cols, padded_rows}, DType::e4m3, gpu);                    // [C, P]
  OwnedTensor scales(Shape{padded_rows / kFp8TileSize, cols}, DType::f32, gpu);      // [P / 128, C]
  OwnedTensor q_t(Shape{cols, rows}, DType::e4m3, gpu), scales_t(Shape{cols, tiles(rows)}, DType::f32, gpu);
  OwnedTensor q(Shape{rows, cols}, DType::e4m3, gpu), row_scales(Shape{rows, tiles(cols)}, DType::f32, gpu);
  Fp8ExpertTokens tokens{values, scales};
  double read = bytes_of({&x});
  nlohmann::json result = {{"shape", Shape{rows, cols}.str()}, {"experts", experts}, {"padded_rows", padded_rows}};
  result["padding_ms"] = time_ms([&] { pad_expert_offsets(padded, offsets); }, timing);
  result["tokens"] = timed([&] { quantize_expert_tokens(tokens, x, offsets, padded); },
                           read + bytes_of({&values, &scales}), timing);
  result["plain_128x1_transposed"] =
      timed([&] { quantize_128x1_transposed(q_t, scales_t, x); }, read + bytes_of({&q_t, &scales_t}), timing);
  result["rows_and_tokens"] =
      timed([&] { quantize_rows_and_expert_tokens(q, row_scales, tokens, x, offsets, padded); },
            read + bytes_of({&q, &row_scales, &values, &scales}), timing);
  result["rows"] = timed([&] { quantize_1x128(q, row_scales, x); }, read + bytes_of({&q, &row_scales}), timing);
  result["separate_over_one_pass"] =
      (result["rows"]["ms"].get<double>() + result["tokens"]["ms"].get<double>()) /
      result["rows_and_tokens"]["ms"].get<double>();
  return result;
}

}  // namespace

nlohmann::json benchmark_fp8_quantize(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  int64_t experts = model.moe.routed_experts, rows = tokens * model.moe.experts_per_token;
  int64_t hidden = model.hidden_size, ffn = model.moe.expert_ffn_size;
  nlohmann::json rows_and_columns = nlohmann::json::array();
  rows_and_columns.push_back(benchmark_rows_and_columns(tokens, hidden, timing));
  nlohmann::json expert_tokens = nlohmann::json::array();
  if (experts > 0) {
    rows_and_columns.push_back(benchmark_rows_and_columns(rows, ffn, timing));
    expert_tokens.push_back(benchmark_expert_tokens(experts, rows, hidden, timing));
    expert_tokens.push_back(benchmark_expert_tokens(experts, rows, ffn, timing));
  }
  return {{"rows_and_columns", rows_and_columns}, {"expert_tokens", expert_tokens}};
}

}  // namespace hai::bench
