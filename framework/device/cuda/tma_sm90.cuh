#pragma once
// Hopper's bulk tensor copies (TMA) and what warp-specialised kernels build around them: shared-memory mbarriers
// that count arrivals and the bytes of copies in flight (a phase completes when both reach zero), copies of a 2D or
// 3D or 4D box of a tensor map (encoded on the host, tensor_map.h) into shared memory that complete on such a barrier,
// copies of a shared-memory box back to a 2D or 3D tensor (or added to it), named barriers, and setmaxnreg, which
// moves registers between warpgroups. Like wgmma_sm90.cuh, the functions exist only where nvcc compiles for sm_90a;
// callers guard their use with HAI_WGMMA_AVAILABLE.
//
// Barrier phases: a barrier starts in phase 0; wait(barrier, parity) returns once the phase of that parity has
// completed, so waiting for parity 1 on a fresh barrier returns at once (the phase "before" phase 0).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"

#if defined(HAI_WGMMA_AVAILABLE)

namespace hai::cuda::kernels::sm90 {

__device__ inline void barrier_init(uint64_t* barrier, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(sm80::shared_address(barrier)), "r"(arrivals)
               : "memory");
}

// Makes barrier_init's writes visible to the copy engine; the block's __syncthreads must follow.
__device__ inline void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  fence_shared_for_async_proxy();
}

__device__ inline void barrier_arrive(uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sm80::shared_address(barrier)) : "memory");
}

// Arrives and adds `bytes` to the bytes the current phase waits for (the copies that complete on it).
__device__ inline void barrier_arrive_expect_bytes(uint64_t* barrier, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(sm80::shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

__device__ inline void barrier_wait(uint64_t* barrier, uint32_t parity) {
  uint32_t address = sm80::shared_address(barrier);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(address), "r"(parity)
        : "memory");
  } while (done == 0);
}

// Fetches a tensor map (a __grid_constant__ kernel parameter) ahead of its first copy.
__device__ inline void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Copies the box at coordinates (c0 innermost, c1) of `map` to `destination` (shared, aligned as the map's swizzle
// needs: 1024 bytes for 128-byte swizzle); its bytes complete on `barrier`. Elements outside the tensor read as 0.
__device__ inline void copy_box_2d(void* destination, const CUtensorMap* map, int32_t c0, int32_t c1,
                                   uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(sm80::shared_address(destination)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(sm80::shared_address(barrier))
      : "memory");
}

__device__ inline void copy_box_3d(void* destination, const CUtensorMap* map, int32_t c0, int32_t c1, int32_t c2,
                                   uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(sm80::shared_address(destination)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(sm80::shared_address(barrier))
      : "memory");
}

__device__ inline void copy_box_4d(void* destination, const CUtensorMap* map, int32_t c0, int32_t c1, int32_t c2,
                                   int32_t c3, uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(sm80::shared_address(destination)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(sm80::shared_address(barrier))
      : "memory");
}

// Copies `source` (shared, 1024-byte aligned, laid out as the map's box) to the box at (c0 innermost, c1) of `map`,
// in the calling thread's current bulk group; elements outside the tensor are not written. The thread's writes to
// `source` must be made visible to the copy engine first (fence_shared_for_async_proxy).
__device__ inline void copy_box_to_global_2d(const CUtensorMap* map, int32_t c0, int32_t c1, const void* source) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(sm80::shared_address(source))
               : "memory");
}
// The same, adding the box to the tensor's fp32 elements (done at L2: the SM does not read them).
__device__ inline void add_box_to_global_2d(const CUtensorMap* map, int32_t c0, int32_t c1, const void* source) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(sm80::shared_address(source))
               : "memory");
}
// The same for the box at (c0 innermost, c1, c2) of a 3-d map.
__device__ inline void copy_box_to_global_3d(const CUtensorMap* map, int32_t c0, int32_t c1, int32_t c2,
                                             const void* source) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(sm80::shared_address(source))
               : "memory");
}
__device__ inline void add_box_to_global_3d(const CUtensorMap* map, int32_t c0, int32_t c1, int32_t c2,
                                            const void* source) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(c0), "r"(c1), "r"(c2), "r"(sm80::shared_address(source))
      : "memory");
}
__device__ inline void commit_bulk_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` of this thread's bulk groups still read their shared memory.
template <int pending>
__device__ inline void wait_bulk_groups_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(pending) : "memory");
}
// Waits until all of this thread's bulk groups have completed.
__device__ inline void wait_bulk_groups() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Synchronises the `threads` threads (a multiple of 32) that use named barrier `id` (1..15; 0 is __syncthreads').
__device__ inline void sync_named(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Arrives at named barrier `id` without waiting: the `threads` of a sync_named(id, threads) elsewhere count it.
__device__ inline void arrive_named(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The registers per thread of the calling warpgroup (every warp of it calls), a multiple of 8 in [24, 256). Takes
// effect only in a kernel whose register count is capped at entry (__launch_bounds__ with a minimum of blocks).
template <int kRegisters>
__device__ inline void lower_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ inline void raise_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

}  // namespace hai::cuda::kernels::sm90

#endif  // HAI_WGMMA_AVAILABLE
