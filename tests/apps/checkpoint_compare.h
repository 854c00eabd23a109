#pragma once
// Comparing two checkpoints byte for byte in the hai-train tests: the same tensors (parameters, router biases,
// AdamW moments, EMA) with identical bytes, and the same step and data position.

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

// The same dtype, shape and bytes.
inline void expect_same_bytes(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  EXPECT_EQ(std::memcmp(actual.raw(), expected.raw(), expected.bytes()), 0) << what << " differs";
}

inline OwnedTensor read_checkpoint_tensor(const CheckpointReader& reader, const TensorRecord& record) {
  OwnedTensor tensor(Shape(record.shape), record.dtype);  // the global shape, the stored dtype
  reader.read(record.name, tensor);
  return tensor;
}

inline void expect_same_checkpoint(const std::string& expected_dir, const std::string& actual_dir) {
  CheckpointReader expected(expected_dir), actual(actual_dir);
  EXPECT_EQ(actual.state().step, expected.state().step);
  EXPECT_EQ(actual.state().consumed_samples, expected.state().consumed_samples);
  EXPECT_EQ(actual.state().data_position, expected.state().data_position);
  ASSERT_EQ(actual.tensors().size(), expected.tensors().size());
  for (const TensorRecord& record : expected.tensors()) {
    ASSERT_TRUE(actual.contains(record.name)) << record.name;
    OwnedTensor want = read_checkpoint_tensor(expected, record);
    OwnedTensor got = read_checkpoint_tensor(actual, actual.tensor(record.name));
    expect_same_bytes(want, got, record.name);
  }
}

}  // namespace hai::testing
