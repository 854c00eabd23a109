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

// framework/device/attention_mla.h's ops (operands already checked) where the wgmma kernels read MLA's kv and k_rope
// and write its gradients themselves: q, kv, k_rope (and d_q, d_kv) bf16, N a multiple of 64, the wgmma kernels
// apply. Elsewhere false, having done nothing.
bool attention_forward_mla(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& kv,
                           const Tensor& k_rope, float softmax_scale, Stream stream);
bool attention_backward_mla(const Tensor& d_q, const Tensor& d_kv, const Tensor& d_k_rope, const Tensor& d_out,
                            const Tensor& q, const Tensor& kv, const Tensor& k_rope, const Tensor& out,
                            const Tensor& lse, float softmax_scale, const Tensor& positions, const RopeTable& table,
                            Stream stream);

}  // namespace hai::cuda
