#include "framework/comm/mpi_types.h"

#include <limits>

#include "framework/core/check.h"

namespace hai::mpi {

MPI_Datatype element_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::bf16:
    case DType::f16:
    case DType::u16: return MPI_UINT16_T;
    case DType::e4m3:
    case DType::u8: return MPI_UINT8_T;
  }
  HAI_THROW("no MPI type for dtype {}", static_cast<int>(dtype));
}

MPI_Op reduce_operation(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  HAI_THROW("unknown ReduceOp {}", static_cast<int>(op));
}

int checked_count(int64_t count, std::string_view operation) {
  HAI_CHECK(count <= std::numeric_limits<int>::max(), "{}: {} elements exceed MPI's int count", operation,
            count);
  return static_cast<int>(count);
}

ContiguousType::ContiguousType(int count, MPI_Datatype element) {
  HAI_MPI_CHECK(MPI_Type_contiguous(count, element, &type_));
  HAI_MPI_CHECK(MPI_Type_commit(&type_));
}

ContiguousType::~ContiguousType() {
  MPI_Type_free(&type_);  // NOTE: not checked: a destructor must not throw, and a failed free leaves nothing to do
}

}  // namespace hai::mpi
