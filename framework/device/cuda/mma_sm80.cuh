#pragma once
// Warp-level tensor-core instructions of sm_80+ shared by the attention and grouped GEMM kernels: asynchronous
// 16-byte copies global -> shared (cp.async), 8x8 matrix fragment loads from shared memory (ldmatrix, plain and
// transposed) and the bf16 product mma.sync m16n8k16 with fp32 accumulation.
//
// Fragment layouts of mma.m16n8k16 (PTX ISA), with group = lane / 4 and pair = 2 * (lane % 4):
//   A 16x16: a[0] = A[group][pair..+1], a[1] = A[group+8][pair..+1], a[2] = A[group][pair+8..+9],
//            a[3] = A[group+8][pair+8..+9]
//   B 16x8:  b[0] = B[pair..+1][group], b[1] = B[pair+8..+9][group]
//   C 16x8:  c[0..1] = C[group][pair..+1], c[2..3] = C[group+8][pair..+1]

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels::sm80 {

__device__ inline uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Copies 16 bytes from global to shared memory asynchronously, or writes 16 zero bytes when !valid (the source is
// then not read).
__device__ inline void copy_16_bytes_async(void* shared, const void* global, bool valid) {
  int source_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
               "r"(source_bytes));
}
__device__ inline void commit_async_copies() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `pending` committed groups of this thread are still in flight.
template <int pending>
__device__ inline void wait_async_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// Four 8x8 bf16 matrices; lane l gives the address of row l % 8 of matrix l / 8.
__device__ inline void load_matrix_x4(uint32_t (&reg)[4], const __nv_bfloat16* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(reg[0]), "=r"(reg[1]), "=r"(reg[2]), "=r"(reg[3])
               : "r"(shared_address(row_address)));
}
// The same, each matrix transposed.
__device__ inline void load_matrix_x4_transposed(uint32_t (&reg)[4], const __nv_bfloat16* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(reg[0]), "=r"(reg[1]), "=r"(reg[2]), "=r"(reg[3])
               : "r"(shared_address(row_address)));
}

// c += a (16x16, row-major) @ b (16x8, column-major; b0, b1 its two registers)
__device__ inline void mma_bf16_16x8x16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace hai::cuda::kernels::sm80
