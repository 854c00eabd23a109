#include "apps/hai-bench/elementwise_bench.h"

#include <algorithm>
#include <string>
#include <vector>

#include "apps/hai-bench/device_tensors.h"
#include "framework/device/column_copy.h"
#include "framework/device/cross_entropy.h"
#include "framework/device/rmsnorm.h"
#include "framework/device/rope.h"
#include "model/output_head.h"

namespace hai::bench {
namespace {

nlohmann::json timed(const std::function<void()>& op, double bytes, const TimingOptions& timing) {
  double ms = time_ms(op, timing);
  return {{"ms", ms}, {"gbps", bytes / (ms * 1e6)}};
}

// The forward at every width the model normalises: hidden (fp32 out, the fused residual add with and without a bf16
// copy, bf16 out) and MLA's q and kv latents (bf16 out).
nlohmann::json benchmark_rmsnorm(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  struct Case {
    int64_t width;
    DType out;
    bool add;
    bool bf16_copy = false;
  };
  int64_t hidden = model.hidden_size;
  std::vector<Case> cases = {{hidden, DType::f32, false},       {hidden, DType::f32, true},
                             {hidden, DType::f32, true, true},  {hidden, DType::bf16, false},
                             {hidden, DType::bf16, true},       {model.q_lora_rank, DType::bf16, false},
                             {model.kv_lora_rank, DType::bf16, false}};
  Device gpu = Device::cuda(0);
  auto eps = static_cast<float>(model.norm_eps);
  nlohmann::json result = nlohmann::json::array();
  for (const Case& c : cases) {
    if (c.width <= 0) continue;  // no q latent (q_lora_rank 0)
    Shape shape{tokens, c.width};
    OwnedTensor x = filled_device_tensor(shape, DType::f32);       // [T, D]
    OwnedTensor addend = filled_device_tensor(shape, DType::f32);  // [T, D]
    OwnedTensor weight = filled_device_tensor(Shape{c.width}, DType::f32);
    OwnedTensor out(shape, c.out, gpu), rstd(Shape{tokens}, DType::f32, gpu);
    OwnedTensor out_bf16 = c.bf16_copy ? OwnedTensor(shape, DType::bf16, gpu) : OwnedTensor();
    double element_bytes = (c.add ? 12.0 : 4.0) + static_cast<double>(dtype_size(c.out)) + (c.bf16_copy ? 2.0 : 0.0);
    nlohmann::json entry = timed(
        [&] {
          if (c.add) return add_rmsnorm_forward(x, out, rstd, x, addend, weight, eps, out_bf16);
          rmsnorm_forward(out, rstd, x, weight, eps);
        },
        static_cast<double>(shape.numel()) * element_bytes, timing);
    entry["op"] = std::string(c.add ? "add_rmsnorm_forward" : "rmsnorm_forward") + (c.bf16_copy ? " + bf16" : "");
    entry["shape"] = shape.str();
    entry["out"] = std::string(dtype_name(c.out));
    result.push_back(entry);
  }
  return result;
}

// The bf16 rotation of q [T, H, d_nope + d_rope] (columns from d_nope) and of the kv_a output
// [T, kv_lora + d_rope] (columns from kv_lora): fp32 read, bf16 written.
nlohmann::json benchmark_rope(const ModelConfig& model, int64_t tokens, int64_t positions,
                              const TimingOptions& timing) {
  Device gpu = Device::cuda(0);
  int64_t d_nope = model.qk_nope_head_dim, d_rope = model.qk_rope_head_dim;
  OwnedTensor position_ids = index_device_tensor(tokens, positions);                   // [T]
  OwnedTensor cos_table = filled_device_tensor(Shape{positions, d_rope / 2}, DType::f32);  // [P, d_rope / 2]
  OwnedTensor sin_table = filled_device_tensor(Shape{positions, d_rope / 2}, DType::f32);  // [P, d_rope / 2]
  RopeTable table{cos_table, sin_table};
  struct Case {
    const char* name;
    Shape shape;
    int64_t offset;
  };
  nlohmann::json result = nlohmann::json::array();
  for (const Case& c : {Case{"q", Shape{tokens, model.num_heads, d_nope + d_rope}, d_nope},
                        Case{"kv_a", Shape{tokens, model.kv_lora_rank + d_rope}, model.kv_lora_rank}}) {
    OwnedTensor x = filled_device_tensor(c.shape, DType::f32);
    OwnedTensor out(c.shape, DType::bf16, gpu);
    nlohmann::json entry = timed([&] { rope_forward(out, x, position_ids, table, c.offset); },
                                 6.0 * static_cast<double>(c.shape.numel()), timing);
    entry["name"] = c.name;
    entry["shape"] = c.shape.str();
    entry["offset"] = c.offset;
    result.push_back(entry);
  }
  return result;
}

// MLA's column moves (model/attention_mla.cc's): k and v out of the kv_b output, k_rope broadcast over the heads,
// and the gradients' way back.
nlohmann::json benchmark_column_copy(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  struct Case {
    const char* name;
    Shape dst;
    DType dst_dtype;
    Shape src;
    DType src_dtype;
    ColumnBlock block;
    bool sum = false;
  };
  int64_t h = model.num_heads, d_nope = model.qk_nope_head_dim, d_rope = model.qk_rope_head_dim;
  int64_t d_v = model.v_head_dim, kv_lora = model.kv_lora_rank, d_qk = d_nope + d_rope, d_kv = d_nope + d_v;
  std::vector<Case> cases = {
      {"k_nope_from_kv", Shape{tokens, h, d_qk}, DType::bf16, Shape{tokens, h, d_kv}, DType::bf16, {.width = d_nope}},
      {"v_from_kv", Shape{tokens, h, d_v}, DType::bf16, Shape{tokens, h, d_kv}, DType::bf16,
       {.src_offset = d_nope, .width = d_v}},
      {"k_rope_broadcast", Shape{tokens, h, d_qk}, DType::bf16, Shape{tokens, kv_lora + d_rope}, DType::f32,
       {.dst_offset = d_nope, .src_offset = kv_lora, .width = d_rope}},
      {"d_kv_from_d_k", Shape{tokens, h, d_kv}, DType::bf16, Shape{tokens, h, d_qk}, DType::f32, {.width = d_nope}},
      {"d_kv_from_d_v", Shape{tokens, h, d_kv}, DType::bf16, Shape{tokens, h, d_v}, DType::f32,
       {.dst_offset = d_nope, .width = d_v}},
      {"kv_latent_from_ckv", Shape{tokens, kv_lora}, DType::f32, Shape{tokens, kv_lora + d_rope}, DType::f32,
       {.width = kv_lora}},
      {"d_k_rope_sum", Shape{tokens, kv_lora + d_rope}, DType::f32, Shape{tokens, h, d_qk}, DType::f32,
       {.dst_offset = kv_lora, .src_offset = d_nope, .width = d_rope}, /*sum=*/true},
  };
  Device gpu = Device::cuda(0);
  nlohmann::json result = nlohmann::json::array();
  for (const Case& c : cases) {
    OwnedTensor dst(c.dst, c.dst_dtype, gpu);
    OwnedTensor src = filled_device_tensor(c.src, c.src_dtype);
    auto block_bytes = [&](const Shape& shape, DType dtype) {  // of `width` columns of every row
      return static_cast<double>(shape.numel() / shape[-1] * c.block.width * dtype_size(dtype));
    };
    nlohmann::json entry =
        timed([&] { c.sum ? sum_columns(dst, src, c.block) : copy_columns(dst, src, c.block); },
              block_bytes(c.dst, c.dst_dtype) + block_bytes(c.src, c.src_dtype), timing);
    entry["name"] = c.name;
    entry["dst"] = c.dst.str() + " " + std::string(dtype_name(c.dst_dtype));
    entry["src"] = c.src.str() + " " + std::string(dtype_name(c.src_dtype));
    result.push_back(entry);
  }
  return result;
}

// One head chunk's fp32 logits [C, V]: the training op (loss and bf16 gradient) and the forward alone; the bytes
// counted are the fewest: the logits read once, the bf16 gradient written.
nlohmann::json benchmark_cross_entropy(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  Device gpu = Device::cuda(0);
  int64_t rows = std::min(tokens, head_chunk_tokens(model)), classes = model.vocab_size;
  OwnedTensor logits = normal_device_tensor(Shape{rows, classes}, 21);  // [C, V]
  OwnedTensor targets = index_device_tensor(rows, classes);             // [C]
  OwnedTensor losses(Shape{rows}, DType::f32, gpu), d_logits(Shape{rows, classes}, DType::bf16, gpu);
  double logit_bytes = 4.0 * static_cast<double>(rows * classes);
  return {{"rows", rows},
          {"classes", classes},
          {"loss_and_grad", timed([&] { cross_entropy_loss_and_grad(losses, d_logits, logits, targets, 1.0f); },
                                  1.5 * logit_bytes, timing)},
          {"forward", timed([&] { cross_entropy_forward(losses, logits, targets); }, logit_bytes, timing)}};
}

}  // namespace

nlohmann::json benchmark_elementwise(const ModelConfig& model, int64_t tokens, const TimingOptions& timing) {
  return {{"tokens", tokens},
          {"rmsnorm", benchmark_rmsnorm(model, tokens, timing)},
          {"rope", benchmark_rope(model, tokens, model.max_seq_len, timing)},
          {"column_copy", benchmark_column_copy(model, tokens, timing)},
          {"cross_entropy", benchmark_cross_entropy(model, tokens, timing)}};
}

}  // namespace hai::bench
