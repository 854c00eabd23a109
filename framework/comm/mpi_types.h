#pragma once
// How hai's dtypes, reductions and counts map onto MPI for the MPI communicator.

#include <cstdint>
#include <string_view>

#include <mpi.h>

#include "framework/comm/communicator.h"

namespace hai::mpi {

// The MPI type that moves elements of `dtype` unchanged: MPI_FLOAT, MPI_INT32_T, MPI_INT64_T, and unsigned
// integers of the element's width for bf16, f16, u16, e4m3 and u8. Correct for reductions only where the
// dtype reduces natively (f32, i32, i64); bf16 and f16 are widened to fp32 first (f32_staging.h).
MPI_Datatype element_type(DType dtype);

MPI_Op reduce_operation(ReduceOp op);

// MPI counts are ints: throws naming the operation if `count` does not fit.
int checked_count(int64_t count, std::string_view operation);

// A committed MPI_Type_contiguous of `count` elements of `element`, freed on destruction.
class ContiguousType {
 public:
  ContiguousType(int count, MPI_Datatype element);
  ~ContiguousType();
  ContiguousType(const ContiguousType&) = delete;
  ContiguousType& operator=(const ContiguousType&) = delete;

  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace hai::mpi
