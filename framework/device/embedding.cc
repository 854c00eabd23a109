#include "framework/device/embedding.h"

#include "framework/device/cpu/embedding.h"
#include "framework/device/dispatch.h"
#include "framework/device/index_check.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/embedding.h"
#endif

namespace hai {
namespace {

// rows: [T, D], table: [V, D], ids: [T]
void check_operands(const Tensor& rows, const Tensor& table, const Tensor& ids) {
  HAI_CHECK(table.rank() == 2, "embedding table must be [V, D], got {}", table.str());
  HAI_CHECK(ids.rank() == 1, "embedding ids must be [T], got {}", ids.str());
  check_shape(rows, Shape{ids.size(0), table.size(1)}, "embedding rows");
  check_dtype(table, DType::f32, "embedding table");
  check_dtype(rows, DType::f32, "embedding rows");
  check_same_device(rows, table, "embedding");
  check_same_device(ids, table, "embedding");
  check_indices_in_range(ids, table.size(0), "embedding id");
}

}  // namespace

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids, [[maybe_unused]] Stream stream) {
  check_operands(out, table, ids);
  if (out.device().is_cpu()) return cpu::embedding_forward(out, table, ids);
#ifdef HAI_WITH_CUDA
  return cuda::embedding_forward(out, table, ids, stream);
#else
  throw_no_backend("embedding_forward", out.device());
#endif
}

void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, [[maybe_unused]] Stream stream) {
  check_operands(d_out, d_table, ids);
  if (d_table.device().is_cpu()) return cpu::embedding_backward(d_table, d_out, ids);
#ifdef HAI_WITH_CUDA
  return cuda::embedding_backward(d_table, d_out, ids, stream);
#else
  throw_no_backend("embedding_backward", d_table.device());
#endif
}

}  // namespace hai
