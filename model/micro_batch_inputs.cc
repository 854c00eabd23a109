#include "model/micro_batch_inputs.h"

#include "framework/core/error.h"
#include "framework/device/cross_entropy.h"

namespace hai {
namespace {

// Row `row` of a [rows, T] tensor, as [T].
Tensor row_of(const Tensor& rows, int64_t row) { return rows.slice(row, row + 1).reshape(Shape{rows.size(1)}); }

// The rows of the batch tensor: inputs, targets, positions, then ids and targets of each MTP depth.
constexpr int64_t kInputsRow = 0;
constexpr int64_t kTargetsRow = 1;
constexpr int64_t kPositionsRow = 2;
int64_t mtp_ids_row(int64_t depth) { return 3 + 2 * (depth - 1); }      // depth counts from 1
int64_t mtp_targets_row(int64_t depth) { return 4 + 2 * (depth - 1); }  // depth counts from 1
int64_t batch_rows(int64_t mtp_depth) { return 3 + 2 * mtp_depth; }

// Fills host rows [batch_rows(D), T] i32 from tokens [B, S + 1] and returns the counted targets.
CountedTokens split_tokens(const Tensor& rows, const Tensor& tokens, int64_t mtp_depth) {
  const int64_t batch = tokens.size(0), seq_len = tokens.size(1) - 1;
  const int32_t* window = tokens.data<int32_t>();  // [B, S + 1]
  CountedTokens counted;
  for (int64_t depth = 0; depth <= mtp_depth; ++depth) {
    int32_t* ids = row_of(rows, depth == 0 ? kInputsRow : mtp_ids_row(depth)).data<int32_t>();              // [T]
    int32_t* targets = row_of(rows, depth == 0 ? kTargetsRow : mtp_targets_row(depth)).data<int32_t>();  // [T]
    int64_t count = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < seq_len; ++i) {
        int64_t t = b * seq_len + i, id = i + depth, target = i + depth + 1;
        ids[t] = id <= seq_len ? window[b * (seq_len + 1) + id] : 0;
        targets[t] = target <= seq_len ? window[b * (seq_len + 1) + target] : kIgnoreTarget;
        count += targets[t] != kIgnoreTarget ? 1 : 0;
      }
    }
    if (depth == 0) {
      counted.lm = count;
    } else {
      counted.mtp.push_back(count);
    }
  }
  int32_t* positions = row_of(rows, kPositionsRow).data<int32_t>();  // [T]
  for (int64_t t = 0; t < batch * seq_len; ++t) positions[t] = static_cast<int32_t>(t % seq_len);
  return counted;
}

}  // namespace

MicroBatchInputs upload_micro_batch(const Tensor& tokens, int64_t mtp_depth, Device device) {
  HAI_CHECK(tokens.rank() == 2 && tokens.size(1) >= 2, "tokens must be [B, S + 1], got {}", tokens.str());
  HAI_CHECK(tokens.device().is_cpu(), "tokens are read on the host, got {}", tokens.str());
  check_dtype(tokens, DType::i32, "tokens");
  MicroBatchInputs inputs;
  inputs.seq_len = tokens.size(1) - 1;
  Shape rows{batch_rows(mtp_depth), tokens.size(0) * inputs.seq_len};
  OwnedTensor host_rows(rows, DType::i32);  // [3 + 2D, T]
  inputs.counted = split_tokens(host_rows, tokens, mtp_depth);
  if (device.is_cpu()) {
    inputs.batch = std::move(host_rows);
  } else {
    inputs.batch = OwnedTensor(rows, DType::i32, device);
    copy_tensor_async(inputs.batch, host_rows);  // NOTE: the pageable source is read before this returns
  }
  inputs.inputs = row_of(inputs.batch, kInputsRow);
  inputs.targets = row_of(inputs.batch, kTargetsRow);
  inputs.positions = row_of(inputs.batch, kPositionsRow);
  for (int64_t depth = 1; depth <= mtp_depth; ++depth) {
    inputs.mtp_ids.push_back(row_of(inputs.batch, mtp_ids_row(depth)));
    inputs.mtp_targets.push_back(row_of(inputs.batch, mtp_targets_row(depth)));
  }
  return inputs;
}

}  // namespace hai
