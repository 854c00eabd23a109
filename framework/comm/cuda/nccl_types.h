#pragma once
// How hai's dtypes and reductions map onto NCCL for the NCCL communicator.

#include <nccl.h>

#include "framework/comm/communicator.h"

namespace hai::nccl {

// The NCCL type that reduces elements of `dtype` natively: f32, bf16, f16, i32, i64 (is_reducible). Data
// movement needs none: it moves bytes (ncclUint8) of any dtype.
ncclDataType_t reduction_type(DType dtype);

ncclRedOp_t reduce_operation(ReduceOp op);

}  // namespace hai::nccl
