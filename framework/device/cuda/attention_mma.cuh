#pragma once
// Warp-level tensor-core building blocks of the bf16 attention kernels (sm_80+): asynchronous tile copies into
// shared memory, ldmatrix fragment loads and mma.sync m16n8k16 (bf16 x bf16 -> fp32).
//
// Fragment layouts (PTX ISA, "mma.m16n8k16"), with group = lane / 4 and pair = 2 * (lane % 4):
//   A 16x16: a[0] = A[group][pair..+1], a[1] = A[group+8][pair..+1], a[2] = A[group][pair+8..+9],
//            a[3] = A[group+8][pair+8..+9]
//   B 16x8:  b[0] = B[pair..+1][group], b[1] = B[pair+8..+9][group]
//   C 16x8:  c[0..1] = C[group][pair..+1], c[2..3] = C[group+8][pair..+1]
// Shared-memory tiles are row-major bf16 with a row stride (in elements) that is a multiple of 8.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels::attention_mma {

struct FragmentA {
  uint32_t reg[4];
};
struct FragmentB {
  uint32_t reg[2];
};
struct Accumulator {  // one 16x8 fp32 tile
  float value[4];
};

__device__ inline uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Copies 16 bytes from global to shared memory asynchronously, or writes 16 zero bytes when !valid.
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

// Four 8x8 matrices; lane l gives the address of row l % 8 of matrix l / 8.
__device__ inline void load_matrix_x4(uint32_t (&reg)[4], const __nv_bfloat16* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(reg[0]), "=r"(reg[1]), "=r"(reg[2]), "=r"(reg[3])
               : "r"(shared_address(row_address)));
}
__device__ inline void load_matrix_x4_transposed(uint32_t (&reg)[4], const __nv_bfloat16* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(reg[0]), "=r"(reg[1]), "=r"(reg[2]), "=r"(reg[3])
               : "r"(shared_address(row_address)));
}

// A = M[row0.., col0..] (16x16) of a row-major tile M.
__device__ inline FragmentA load_a(const __nv_bfloat16* tile, int stride, int row0, int col0) {
  int lane = threadIdx.x % 32;
  int matrix = lane / 8;
  int row = row0 + lane % 8 + (matrix & 1) * 8;
  int col = col0 + (matrix >> 1) * 8;
  FragmentA a;
  load_matrix_x4(a.reg, tile + row * stride + col);
  return a;
}

// Two B fragments (n tiles n0 and n0 + 8) with B[k][n] = M[n0 + n][k0 + k]: M holds B transposed ([n][k]).
__device__ inline void load_b_pair_from_rows(FragmentB& first, FragmentB& second, const __nv_bfloat16* tile,
                                             int stride, int n0, int k0) {
  int lane = threadIdx.x % 32;
  int matrix = lane / 8;
  int row = n0 + lane % 8 + (matrix >> 1) * 8;
  int col = k0 + (matrix & 1) * 8;
  uint32_t reg[4];
  load_matrix_x4(reg, tile + row * stride + col);
  first.reg[0] = reg[0], first.reg[1] = reg[1], second.reg[0] = reg[2], second.reg[1] = reg[3];
}

// Two B fragments (n tiles n0 and n0 + 8) with B[k][n] = M[k0 + k][n0 + n]: M holds B as it is ([k][n]).
__device__ inline void load_b_pair_from_columns(FragmentB& first, FragmentB& second, const __nv_bfloat16* tile,
                                                int stride, int k0, int n0) {
  int lane = threadIdx.x % 32;
  int matrix = lane / 8;
  int row = k0 + lane % 8 + (matrix & 1) * 8;
  int col = n0 + (matrix >> 1) * 8;
  uint32_t reg[4];
  load_matrix_x4_transposed(reg, tile + row * stride + col);
  first.reg[0] = reg[0], first.reg[1] = reg[1], second.reg[0] = reg[2], second.reg[1] = reg[3];
}

// c += a @ b
__device__ inline void mma(Accumulator& c, const FragmentA& a, const FragmentB& b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c.value[0]), "+f"(c.value[1]), "+f"(c.value[2]), "+f"(c.value[3])
      : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]), "r"(b.reg[0]), "r"(b.reg[1]));
}

__device__ inline uint32_t pack_bf16(float low, float high) {
  __nv_bfloat162 packed = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<uint32_t*>(&packed);
}

// The A fragment of columns 16 c .. 16 c + 15 of a 16-row product held as accumulators (n tiles 2c and 2c + 1),
// rounded to bf16: a product's C layout is the next product's A layout.
__device__ inline FragmentA accumulators_as_a(const Accumulator& left, const Accumulator& right) {
  FragmentA a;
  a.reg[0] = pack_bf16(left.value[0], left.value[1]);
  a.reg[1] = pack_bf16(left.value[2], left.value[3]);
  a.reg[2] = pack_bf16(right.value[0], right.value[1]);
  a.reg[3] = pack_bf16(right.value[2], right.value[3]);
  return a;
}

template <int rows, int count>
__device__ inline void zero(Accumulator (&tiles)[rows][count]) {
#pragma unroll
  for (int r = 0; r < rows; ++r) {
#pragma unroll
    for (int i = 0; i < count; ++i) tiles[r][i].value[0] = tiles[r][i].value[1] = tiles[r][i].value[2] = tiles[r][i].value[3] = 0.0f;
  }
}

// out[16 m_tiles x 8 n_tiles] += A[16 m_tiles x 16 k_chunks] (row-major tile, rows row0..) @ B, B[k][n] =
// rows_tile[n][k] (both tiles in shared memory): the product of a tile with another tile's transpose, e.g. Q K^T.
// Each B fragment loaded serves all m_tiles row tiles.
template <int m_tiles, int k_chunks, int n_tiles>
__device__ inline void multiply_by_rows(Accumulator (&out)[m_tiles][n_tiles], const __nv_bfloat16* a_tile,
                                        int a_stride, int row0, const __nv_bfloat16* rows_tile, int rows_stride) {
  static_assert(n_tiles % 2 == 0, "n tiles come in pairs");
#pragma unroll
  for (int k = 0; k < k_chunks; ++k) {
    FragmentA a[m_tiles];
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) a[m] = load_a(a_tile, a_stride, row0 + 16 * m, 16 * k);
#pragma unroll
    for (int n = 0; n < n_tiles; n += 2) {
      FragmentB first, second;
      load_b_pair_from_rows(first, second, rows_tile, rows_stride, 8 * n, 16 * k);
#pragma unroll
      for (int m = 0; m < m_tiles; ++m) {
        mma(out[m][n], a[m], first);
        mma(out[m][n + 1], a[m], second);
      }
    }
  }
}

// out[16 m_tiles x 8 n_tiles] += P[16 m_tiles x 16 k_chunks] @ M[.., 0 .. 8 n_tiles], P given as accumulators
// (rounded to bf16) and M a row-major tile in shared memory: e.g. P V.
template <int m_tiles, int k_chunks, int n_tiles>
__device__ inline void multiply_accumulators_by_tile(Accumulator (&out)[m_tiles][n_tiles],
                                                     const Accumulator (&p)[m_tiles][2 * k_chunks],
                                                     const __nv_bfloat16* tile, int stride) {
  static_assert(n_tiles % 2 == 0, "n tiles come in pairs");
#pragma unroll
  for (int k = 0; k < k_chunks; ++k) {
    FragmentA a[m_tiles];
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) a[m] = accumulators_as_a(p[m][2 * k], p[m][2 * k + 1]);
#pragma unroll
    for (int n = 0; n < n_tiles; n += 2) {
      FragmentB first, second;
      load_b_pair_from_columns(first, second, tile, stride, 16 * k, 8 * n);
#pragma unroll
      for (int m = 0; m < m_tiles; ++m) {
        mma(out[m][n], a[m], first);
        mma(out[m][n + 1], a[m], second);
      }
    }
  }
}

}  // namespace hai::cuda::kernels::attention_mma
