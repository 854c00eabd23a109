#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/device/rope.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// The RoPE settings of DeepSeek-V3 (docs/deepseek-v3.md): 4096 x 40 positions, so YaRN is active.
RopeSettings deepseek_settings() {
  return {.rope_dim = 64,
          .max_positions = 163840,
          .theta = 10000.0,
          .yarn_factor = 40.0,
          .original_max_position = 4096,
          .beta_fast = 32.0,
          .beta_slow = 1.0,
          .mscale = 1.0};
}

struct OwnedRopeTable {
  OwnedTensor cos, sin;
  RopeTable table;

  explicit OwnedRopeTable(const RopeSettings& settings)
      : cos(Shape{settings.max_positions, settings.rope_dim / 2}, DType::f32),
        sin(Shape{settings.max_positions, settings.rope_dim / 2}, DType::f32),
        table{cos, sin} {
    fill_rope_table(table, settings);
  }
};

TEST(RopeTable, PlainFrequencies) {
  RopeSettings settings{.rope_dim = 8, .max_positions = 16, .theta = 10000.0};
  std::vector<double> frequencies = rope_inverse_frequencies(settings);
  ASSERT_EQ(frequencies.size(), 4u);
  EXPECT_DOUBLE_EQ(frequencies[0], 1.0);
  EXPECT_DOUBLE_EQ(frequencies[1], 0.1);    // 10000^(-2/8)
  EXPECT_DOUBLE_EQ(frequencies[2], 0.01);   // 10000^(-4/8)
  EXPECT_DOUBLE_EQ(frequencies[3], 0.001);  // 10000^(-6/8)
}

TEST(RopeTable, YarnFrequenciesOfDeepSeekV3) {
  // correction(32) = 64 ln(4096 / 64 pi) / (2 ln 10000) = 10.47 -> low 10; correction(1) = 22.51 -> high 23.
  std::vector<double> frequencies = rope_inverse_frequencies(deepseek_settings());
  ASSERT_EQ(frequencies.size(), 32u);
  auto plain = [](int pair) { return std::pow(10000.0, -2.0 * pair / 64); };
  for (int pair = 0; pair <= 10; ++pair) EXPECT_DOUBLE_EQ(frequencies[pair], plain(pair)) << pair;
  double ramp = (16.0 - 10.0) / 13.0;
  EXPECT_NEAR(frequencies[16], plain(16) * (1 - ramp) + plain(16) / 40 * ramp, 1e-15);
  for (int pair = 23; pair < 32; ++pair) EXPECT_NEAR(frequencies[pair], plain(pair) / 40, 1e-18) << pair;
}

TEST(RopeTable, YarnWithFactorOneIsPlainRope) {
  RopeSettings yarn = deepseek_settings();
  yarn.yarn_factor = 1.0;
  RopeSettings plain{.rope_dim = 64, .max_positions = 4096, .theta = 10000.0};
  EXPECT_EQ(rope_inverse_frequencies(yarn), rope_inverse_frequencies(plain));
  EXPECT_EQ(yarn_mscale(yarn), 1.0);
}

TEST(RopeTable, YarnIsInactiveWithinTheOriginalContext) {
  RopeSettings settings = deepseek_settings();
  settings.max_positions = 4096;
  RopeSettings plain{.rope_dim = 64, .max_positions = 4096, .theta = 10000.0};
  EXPECT_FALSE(yarn_active(settings));
  EXPECT_EQ(rope_inverse_frequencies(settings), rope_inverse_frequencies(plain));
  EXPECT_EQ(attention_softmax_scale(192, settings), 1.0 / std::sqrt(192.0));
}

TEST(RopeTable, YarnSoftmaxScale) {
  double mscale = 0.1 * std::log(40.0) + 1.0;  // 1.3689
  EXPECT_DOUBLE_EQ(yarn_mscale(deepseek_settings()), mscale);
  EXPECT_DOUBLE_EQ(attention_softmax_scale(192, deepseek_settings()), mscale * mscale / std::sqrt(192.0));
}

TEST(RopeTable, TableHoldsCosAndSinOfPositionTimesFrequency) {
  RopeSettings settings{.rope_dim = 6, .max_positions = 5, .theta = 100.0};
  OwnedRopeTable rope(settings);
  std::vector<double> frequencies = rope_inverse_frequencies(settings);
  for (int position = 0; position < 5; ++position) {
    for (int pair = 0; pair < 3; ++pair) {
      double angle = position * frequencies[pair];
      EXPECT_EQ(rope.cos.data<float>()[position * 3 + pair], static_cast<float>(std::cos(angle)));
      EXPECT_EQ(rope.sin.data<float>()[position * 3 + pair], static_cast<float>(std::sin(angle)));
    }
  }
}

TEST(RopeTable, RejectsBadSettings) {
  EXPECT_THROW(rope_inverse_frequencies({.rope_dim = 7}), Error);
  EXPECT_THROW(rope_inverse_frequencies({.rope_dim = 8, .yarn_factor = 0.5}), Error);
}

TEST(Rope, ForwardKnownValues) {
  // rope_dim 2: one pair at frequency 1, so position p turns (x0, x1) by p radians.
  OwnedRopeTable rope({.rope_dim = 2, .max_positions = 4, .theta = 10000.0});
  OwnedTensor x = testing::tensor_of(Shape{3, 2}, {1, 0, 1, 0, 2, 3});
  OwnedTensor positions = testing::indices_of({0, 1, 3});
  OwnedTensor out(Shape{3, 2}, DType::f32);
  rope_forward(out, x, positions, rope.table);
  EXPECT_EQ(out.data<float>()[0], 1.0f);
  EXPECT_EQ(out.data<float>()[1], 0.0f);
  EXPECT_FLOAT_EQ(out.data<float>()[2], std::cos(1.0f));
  EXPECT_FLOAT_EQ(out.data<float>()[3], std::sin(1.0f));
  EXPECT_FLOAT_EQ(out.data<float>()[4], 2 * std::cos(3.0f) - 3 * std::sin(3.0f));
  EXPECT_FLOAT_EQ(out.data<float>()[5], 2 * std::sin(3.0f) + 3 * std::cos(3.0f));
}

TEST(Rope, PositionZeroIsTheIdentity) {
  OwnedRopeTable rope({.rope_dim = 8, .max_positions = 3, .theta = 10000.0});
  OwnedTensor x = testing::random_tensor(Shape{2, 3, 8}, 1);
  OwnedTensor out(Shape{2, 3, 8}, DType::f32);
  rope_forward(out, x, testing::indices_of({0, 0}), rope.table);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(out.data<float>()[i], x.data<float>()[i]);
}

TEST(Rope, RotationPreservesPairNorms) {
  RopeSettings settings = deepseek_settings();
  settings.max_positions = 9000;
  OwnedRopeTable rope(settings);
  OwnedTensor x = testing::random_tensor(Shape{3, 5, 64}, 2);
  OwnedTensor out(Shape{3, 5, 64}, DType::f32);
  rope_forward(out, x, testing::indices_of({1, 4097, 8999}), rope.table);
  for (int64_t pair = 0; pair < x.numel() / 2; ++pair) {
    const float* in = x.data<float>() + 2 * pair;
    const float* rotated = out.data<float>() + 2 * pair;
    EXPECT_NEAR(std::hypot(rotated[0], rotated[1]), std::hypot(in[0], in[1]), 1e-5) << "pair " << pair;
  }
}

TEST(Rope, RotatesOnlyTheColumnSliceAndWorksInPlace) {
  // Head vectors of width 7 with the rope part at columns 3..6, as q_rope sits at 128..191 of a 192-wide head.
  OwnedRopeTable rope({.rope_dim = 4, .max_positions = 6, .theta = 50.0});
  Shape shape{2, 3, 7};
  OwnedTensor x = testing::random_tensor(shape, 3);
  OwnedTensor positions = testing::indices_of({5, 2});
  OwnedTensor out(shape, DType::f32);
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = 9.0f;
  rope_forward(out, x, positions, rope.table, 3);

  // The reference: the same rotation applied to a compact [2, 3, 4] copy of the slice.
  OwnedTensor compact(Shape{2, 3, 4}, DType::f32), compact_out(Shape{2, 3, 4}, DType::f32);
  for (int64_t row = 0; row < 6; ++row) {
    for (int64_t column = 0; column < 4; ++column) {
      compact.data<float>()[row * 4 + column] = x.data<float>()[row * 7 + 3 + column];
    }
  }
  rope_forward(compact_out, compact, positions, rope.table);
  for (int64_t row = 0; row < 6; ++row) {
    for (int64_t column = 0; column < 7; ++column) {
      float value = out.data<float>()[row * 7 + column];
      float expected = column < 3 ? 9.0f : compact_out.data<float>()[row * 4 + column - 3];
      EXPECT_EQ(value, expected) << "row " << row << " column " << column;
    }
  }

  rope_forward(x, x, positions, rope.table, 3);  // in place
  for (int64_t row = 0; row < 6; ++row) {
    for (int64_t column = 3; column < 7; ++column) {
      EXPECT_EQ(x.data<float>()[row * 7 + column], out.data<float>()[row * 7 + column]);
    }
  }
}

TEST(Rope, BackwardMatchesFiniteDifferences) {
  RopeSettings settings{.rope_dim = 6, .max_positions = 20, .theta = 10.0};
  OwnedRopeTable rope(settings);
  Shape shape{3, 2, 9};  // rope on columns 2..7 of width-9 head vectors
  OwnedTensor x = testing::random_tensor(shape, 4), d_out = testing::random_tensor(shape, 5);
  OwnedTensor positions = testing::indices_of({19, 0, 7});
  OwnedTensor out(shape, DType::f32), d_x(shape, DType::f32);
  rope_backward(d_x, d_out, positions, rope.table, 2);
  auto loss = [&] {
    rope_forward(out, x, positions, rope.table, 2);
    double sum = 0;
    for (int64_t row = 0; row < 6; ++row) {
      for (int64_t column = 2; column < 8; ++column) {
        sum += static_cast<double>(out.data<float>()[row * 9 + column]) * d_out.data<float>()[row * 9 + column];
      }
    }
    return sum;
  };
  std::vector<int64_t> rotated;
  for (int64_t row = 0; row < 6; ++row) {
    for (int64_t column = 2; column < 8; ++column) rotated.push_back(row * 9 + column);
  }
  testing::check_gradient(x, d_x, loss, 1e-3, 1e-3, 1e-3, rotated);
}

TEST(Rope, BackwardUndoesForward) {
  OwnedRopeTable rope({.rope_dim = 8, .max_positions = 100, .theta = 10000.0});
  OwnedTensor x = testing::random_tensor(Shape{4, 1, 8}, 6);
  OwnedTensor positions = testing::indices_of({3, 99, 50, 1});
  OwnedTensor rotated(Shape{4, 1, 8}, DType::f32), restored(Shape{4, 1, 8}, DType::f32);
  rope_forward(rotated, x, positions, rope.table);
  rope_backward(restored, rotated, positions, rope.table);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(restored.data<float>()[i], x.data<float>()[i], 1e-6);
}

// A bf16 out is the fp32 out-of-place result (rotated block) and x (other columns), each rounded once.
TEST(Rope, Bf16OutputIsTheRotatedVectorRoundedOnce) {
  OwnedRopeTable rope({.rope_dim = 4, .max_positions = 6, .theta = 50.0});
  Shape shape{2, 3, 7};
  OwnedTensor x = testing::random_tensor(shape, 7);
  OwnedTensor positions = testing::indices_of({5, 2});
  for (float sign : {1.0f, -1.0f}) {
    OwnedTensor wide(shape, DType::f32), narrow(shape, DType::bf16);
    std::copy_n(x.data<float>(), x.numel(), wide.data<float>());
    if (sign > 0) {
      rope_forward(wide, wide, positions, rope.table, 3);
      rope_forward(narrow, x, positions, rope.table, 3);
    } else {
      rope_backward(wide, wide, positions, rope.table, 3);
      rope_backward(narrow, x, positions, rope.table, 3);
    }
    for (int64_t i = 0; i < x.numel(); ++i) {
      ASSERT_EQ(narrow.data<bf16>()[i].bits, float_to_bf16(wide.data<float>()[i])) << "element " << i;
    }
  }
}

TEST(Rope, RejectsBadOperands) {
  OwnedRopeTable rope({.rope_dim = 4, .max_positions = 3, .theta = 10000.0});
  OwnedTensor x(Shape{2, 5}, DType::f32);
  EXPECT_THROW(rope_forward(x, x, testing::indices_of({0, 3}), rope.table), Error);     // position 3 >= 3
  EXPECT_THROW(rope_forward(x, x, testing::indices_of({0, 1}), rope.table, 2), Error);  // columns 2..5 > 5
  EXPECT_THROW(rope_forward(x, x, testing::indices_of({0}), rope.table), Error);        // 1 position, 2 tokens
  OwnedTensor narrow(Shape{2, 5}, DType::bf16);
  EXPECT_THROW(rope_forward(narrow, narrow, testing::indices_of({0, 1}), rope.table), Error);  // bf16 input
}

}  // namespace
}  // namespace hai
