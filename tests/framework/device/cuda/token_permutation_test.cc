#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "framework/device/fp8_quantize.h"
#include "framework/device/token_permutation.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

// A routing plan's sizes (T tokens, K experts a token, E experts) and the rows' width D.
struct PlanShape {
  int64_t tokens, experts_per_token, experts, width;
  int64_t assignments() const { return tokens * experts_per_token; }
  std::string name() const { return fmt::format("T{}_K{}_D{}", tokens, experts_per_token, width); }
};

// Width 129 takes the kernels' element loops; 128 and 2048 their 16-byte pieces (8 bf16 or 4 fp32 elements), as does
// 136, whose row leaves some lanes without a piece on the warp's last step; 12 takes them for fp32 rows only, 8 is one
// bf16 piece. 6 and 9 experts a token take two and three of the kernels' passes (4 experts each).
constexpr PlanShape kShapes[] = {{77, 4, 13, 129}, {77, 4, 13, 128}, {24, 4, 32, 2048},
                                 {33, 6, 13, 136}, {9, 9, 13, 12},   {9, 9, 13, 8}};
constexpr PlanShape kE4m3Shape{77, 4, 13, 129};
// Smaller still for the combine's addend: one token with one expert and one element; 4 elements, one fp32 piece
// (lane 0 alone) and the element loop for bf16 rows.
constexpr PlanShape kTinyShapes[] = {{1, 1, 2, 1}, {5, 3, 7, 4}};

// Copies, and sums in ascending k with each operation rounded: bit-identical.
constexpr Tolerance kExact{};

// d_topk_weights is a dot product over D terms summed in another order: on normal terms the orders differ by at most
// ~1e-7 D, plus a share of the sum.
Tolerance dot_tolerance(int64_t width) { return {.atol = 1e-7 * static_cast<double>(width), .rtol = 1e-5}; }

// A routing plan built by the CPU op; its three tensors are operands 0..2 of every case.
void add_plan(ParityCase& parity, const PlanShape& shape) {
  OwnedTensor topk = testing::random_indices(shape.assignments(), shape.experts, 1);
  OwnedRoutingPlan plan(shape.tokens, shape.experts_per_token, shape.experts);
  build_routing_plan(plan, topk.tensor().reshape(Shape{shape.tokens, shape.experts_per_token}));
  parity.input(testing::copy_to(plan.plan().positions, Device::cpu()));
  parity.input(testing::copy_to(plan.plan().sources, Device::cpu()));
  parity.input(testing::copy_to(plan.plan().expert_offsets, Device::cpu()));
}

RoutingPlan plan_of(const std::vector<Tensor>& t) { return {t[0], t[1], t[2]}; }

// [T, width] e4m3: random rows quantised 1x128 (no NaN bytes, so the parity compares every element).
OwnedTensor e4m3_rows(int64_t tokens, int64_t width) {
  OwnedTensor x = testing::random_tensor(Shape{tokens, width}, 8);
  OwnedTensor values(x.shape(), DType::e4m3), scales(Shape{tokens, (width + 127) / 128}, DType::f32);
  quantize_1x128(values, scales, x);
  return values;
}

// A random operand of rows * width + 1 elements, for shifted_rows.
OwnedTensor padded_rows(int64_t rows, int64_t width, uint64_t seed, DType dtype) {
  return testing::converted(testing::random_tensor(Shape{rows * width + 1}, seed), dtype);
}

// [rows, width] from element 1 of a padded_rows operand: rows whose start is not 16-byte aligned.
Tensor shifted_rows(const Tensor& padded, int64_t rows, int64_t width) {
  return padded.slice(1, padded.size(0)).reshape(Shape{rows, width});
}

TEST(CudaTokenPermutation, PermuteAndItsBackwardAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const PlanShape& shape : kShapes) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      ParityCase permute;
      add_plan(permute, shape);
      permute.output(OwnedTensor(Shape{shape.assignments(), shape.width}, dtype), kExact);
      permute.input(testing::converted(testing::random_tensor(Shape{shape.tokens, shape.width}, 2), dtype));
      permute.run([](const std::vector<Tensor>& t) { permute_tokens(t[3], t[4], plan_of(t)); },
                  fmt::format("permute_tokens {} {}", dtype_name(dtype), shape.name()));
    }

    ParityCase backward;
    add_plan(backward, shape);
    backward.output(testing::random_tensor(Shape{shape.tokens, shape.width}, 3), kExact);  // overwritten
    backward.input(testing::random_tensor(Shape{shape.assignments(), shape.width}, 4));
    backward.run([](const std::vector<Tensor>& t) { permute_tokens_backward(t[3], t[4], plan_of(t)); },
                 "permute_tokens_backward " + shape.name());
  }

  // e4m3 rows (the FP8 experts' input): 16-byte pieces at width 128, 2-byte at 130, 1-byte at 129.
  for (int64_t width : {kE4m3Shape.width - 1, kE4m3Shape.width + 1, kE4m3Shape.width}) {
    PlanShape shape = kE4m3Shape;
    shape.width = width;
    ParityCase e4m3_permute;
    add_plan(e4m3_permute, shape);
    e4m3_permute.output(OwnedTensor(Shape{shape.assignments(), width}, DType::e4m3), kExact);
    e4m3_permute.input(e4m3_rows(shape.tokens, width));
    e4m3_permute.run([](const std::vector<Tensor>& t) { permute_tokens(t[3], t[4], plan_of(t)); },
                     "permute_tokens e4m3 " + shape.name());
  }
}

// unpermute_tokens of the shape's tokens with y_sorted in fp32 and in bf16 (widened exactly: the same sums), from a
// random addend [T, D] with with_addend (compared too: read only). Takes its inputs' seeds from seed on, and
// advances it.
void expect_unpermute_matches_cpu(const PlanShape& shape, uint64_t& seed, bool with_addend) {
  for (DType y_dtype : {DType::f32, DType::bf16}) {
    ParityCase unpermute;
    add_plan(unpermute, shape);
    unpermute.output(testing::random_tensor(Shape{shape.tokens, shape.width}, seed++), kExact);  // overwritten
    unpermute.input(
        testing::converted(testing::random_tensor(Shape{shape.assignments(), shape.width}, seed++), y_dtype));
    unpermute.input(testing::random_tensor(Shape{shape.tokens, shape.experts_per_token}, seed++));
    if (with_addend) unpermute.output(testing::random_tensor(Shape{shape.tokens, shape.width}, seed++), kExact);
    unpermute.run(
        [with_addend](const std::vector<Tensor>& t) {
          unpermute_tokens(t[3], t[4], t[5], plan_of(t), with_addend ? t[6] : Tensor{});
        },
        fmt::format("unpermute_tokens{} {} rows {}", with_addend ? " with addend" : "", dtype_name(y_dtype),
                    shape.name()));
  }
}

TEST(CudaTokenPermutation, UnpermuteAndItsBackwardMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const PlanShape& shape : kShapes) {
    uint64_t seed = 5;
    expect_unpermute_matches_cpu(shape, seed, /*with_addend=*/false);

    // y_sorted and d_y_sorted in fp32, then as the MoE layer keeps them in bf16 training: bf16 expert outputs, and
    // bf16 gradients for bf16 experts (one rounding of the same product).
    const std::pair<DType, DType> row_dtypes[] = {
        {DType::f32, DType::f32}, {DType::bf16, DType::f32}, {DType::bf16, DType::bf16}};
    for (auto [y_dtype, d_y_dtype] : row_dtypes) {
      ParityCase backward;
      add_plan(backward, shape);
      backward.output(OwnedTensor(Shape{shape.assignments(), shape.width}, d_y_dtype), kExact);
      backward.output(OwnedTensor(Shape{shape.tokens, shape.experts_per_token}, DType::f32),
                      dot_tolerance(shape.width));
      backward.input(testing::random_tensor(Shape{shape.tokens, shape.width}, seed++));
      backward.input(
          testing::converted(testing::random_tensor(Shape{shape.assignments(), shape.width}, seed++), y_dtype));
      backward.input(testing::random_tensor(Shape{shape.tokens, shape.experts_per_token}, seed++));
      backward.run(
          [](const std::vector<Tensor>& t) { unpermute_tokens_backward(t[3], t[4], t[5], t[6], t[7], plan_of(t)); },
          fmt::format("unpermute_tokens_backward y_sorted {} d_y_sorted {} {}", dtype_name(y_dtype),
                      dtype_name(d_y_dtype), shape.name()));
    }
  }
}

// The combine starting from an addend (the MoE layer's residual): the first of a token's passes reads it, later
// ones (6 and 9 experts a token) the sums in out; through the kernels' pieces and element loops as in
// UnpermuteAndItsBackwardMatchCpu, and at the tiny shapes.
TEST(CudaTokenPermutation, UnpermuteWithAnAddendMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 40;
  for (const PlanShape& shape : kShapes) expect_unpermute_matches_cpu(shape, seed, /*with_addend=*/true);
  for (const PlanShape& shape : kTinyShapes) expect_unpermute_matches_cpu(shape, seed, /*with_addend=*/true);
}

// Rows of a width that takes 16-byte pieces, but not 16-byte aligned: the kernels' element loops (2-byte pieces for
// the permutation), on the same sums.
TEST(CudaTokenPermutation, UnalignedRowsMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  static constexpr PlanShape kShape{24, 6, 32, 2048};
  const int64_t tokens = kShape.tokens, rows = kShape.assignments(), width = kShape.width;
  for (DType dtype : {DType::f32, DType::bf16}) {
    ParityCase permute;
    add_plan(permute, kShape);
    permute.output(padded_rows(rows, width, 20, dtype), kExact);
    permute.input(padded_rows(tokens, width, 21, dtype));
    permute.run(
        [&](const std::vector<Tensor>& t) {
          permute_tokens(shifted_rows(t[3], rows, width), shifted_rows(t[4], tokens, width), plan_of(t));
        },
        fmt::format("permute_tokens unaligned {} {}", dtype_name(dtype), kShape.name()));

    ParityCase unpermute;
    add_plan(unpermute, kShape);
    unpermute.output(padded_rows(tokens, width, 22, DType::f32), kExact);  // overwritten past element 0
    unpermute.input(padded_rows(rows, width, 23, dtype));
    unpermute.input(testing::random_tensor(Shape{tokens, kShape.experts_per_token}, 24));
    unpermute.run(
        [&](const std::vector<Tensor>& t) {
          unpermute_tokens(shifted_rows(t[3], tokens, width), shifted_rows(t[4], rows, width), t[5], plan_of(t));
        },
        fmt::format("unpermute_tokens unaligned {} rows {}", dtype_name(dtype), kShape.name()));

    // Only the addend unaligned, beside aligned out and y_sorted: the element loop too.
    ParityCase unpermute_addend;
    add_plan(unpermute_addend, kShape);
    unpermute_addend.output(testing::random_tensor(Shape{tokens, width}, 31), kExact);  // overwritten
    unpermute_addend.input(testing::converted(testing::random_tensor(Shape{rows, width}, 32), dtype));
    unpermute_addend.input(testing::random_tensor(Shape{tokens, kShape.experts_per_token}, 33));
    unpermute_addend.output(padded_rows(tokens, width, 34, DType::f32), kExact);  // the addend past element 0
    unpermute_addend.run(
        [&](const std::vector<Tensor>& t) {
          unpermute_tokens(t[3], t[4], t[5], plan_of(t), shifted_rows(t[6], tokens, width));
        },
        fmt::format("unpermute_tokens unaligned addend {} rows {}", dtype_name(dtype), kShape.name()));

    ParityCase backward;
    add_plan(backward, kShape);
    backward.output(padded_rows(rows, width, 25, dtype), kExact);  // d_y_sorted, overwritten past element 0
    backward.output(OwnedTensor(Shape{tokens, kShape.experts_per_token}, DType::f32), dot_tolerance(width));
    backward.input(padded_rows(tokens, width, 26, DType::f32));
    backward.input(padded_rows(rows, width, 27, dtype));
    backward.input(testing::random_tensor(Shape{tokens, kShape.experts_per_token}, 28));
    backward.run(
        [&](const std::vector<Tensor>& t) {
          unpermute_tokens_backward(shifted_rows(t[3], rows, width), t[4], shifted_rows(t[5], tokens, width),
                                    shifted_rows(t[6], rows, width), t[7], plan_of(t));
        },
        fmt::format("unpermute_tokens_backward unaligned {} rows {}", dtype_name(dtype), kShape.name()));
  }

  ParityCase permute_backward;
  add_plan(permute_backward, kShape);
  permute_backward.output(padded_rows(tokens, width, 29, DType::f32), kExact);  // overwritten past element 0
  permute_backward.input(padded_rows(rows, width, 30, DType::f32));
  permute_backward.run(
      [&](const std::vector<Tensor>& t) {
        permute_tokens_backward(shifted_rows(t[3], tokens, width), shifted_rows(t[4], rows, width), plan_of(t));
      },
      "permute_tokens_backward unaligned " + kShape.name());
}

}  // namespace
}  // namespace hai
