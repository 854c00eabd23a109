#include "framework/comm/cuda/nccl_types.h"

namespace hai::nccl {

ncclDataType_t reduction_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    default: HAI_THROW("NCCL reductions do not apply to dtype {}", dtype_name(dtype));
  }
}

ncclRedOp_t reduce_operation(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  HAI_THROW("unknown ReduceOp {}", static_cast<int>(op));
}

}  // namespace hai::nccl
