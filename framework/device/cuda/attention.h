#pragma once
// CUDA implementation of framework/device/attention.h (operands already checked by the dispatcher): bf16 q, k, v
// run on tensor cores, fp32 ones on CUDA cores.

#include "framework/device/rope_table.h"
#include "framework/tensor/tensor.h"

namespace hai::cuda {

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale, Stream stream);
void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale, Stream stream);

// framework/device/attention_mla.h's op where the wgmma kernels write MLA's layout themselves (q, k, v, d_q and d_kv
// bf16, the wgmma kernels apply); false, having done nothing, elsewhere.
bool attention_backward_mla(const Tensor& d_q, const Tensor& d_kv, const Tensor& d_k_rope, const Tensor& d_out,
                            const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                            float softmax_scale, const Tensor& positions, const RopeTable& table, Stream stream);

}  // namespace hai::cuda
