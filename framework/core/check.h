#pragma once
// Checked calls into MPI, CUDA, cuBLAS(Lt) and NCCL: a failure throws hai::Error with the library's own message,
// the call's text, the rank and file:line. The CUDA/NCCL macros exist only in CUDA builds.

#include <mpi.h>

#include "framework/core/error.h"

namespace hai::detail {
std::string mpi_error_string(int code);
}  // namespace hai::detail

#define HAI_MPI_CHECK(call)                                                                           \
  do {                                                                                                \
    int hai_mpi_status_ = (call);                                                                     \
    if (hai_mpi_status_ != MPI_SUCCESS) {                                                             \
      throw ::hai::Error(::fmt::format("MPI error in {}: {}", #call,                                  \
                                       ::hai::detail::mpi_error_string(hai_mpi_status_)),             \
                         __FILE__, __LINE__);                                                         \
    }                                                                                                 \
  } while (0)

#ifdef HAI_WITH_CUDA
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#define HAI_CUDA_CHECK(call)                                                                          \
  do {                                                                                                \
    cudaError_t hai_cuda_status_ = (call);                                                            \
    if (hai_cuda_status_ != cudaSuccess) {                                                            \
      throw ::hai::Error(::fmt::format("CUDA error in {}: {} ({})", #call,                            \
                                       cudaGetErrorString(hai_cuda_status_),                          \
                                       cudaGetErrorName(hai_cuda_status_)),                           \
                         __FILE__, __LINE__);                                                         \
    }                                                                                                 \
  } while (0)

// Checks the last kernel launch (launch configuration errors surface here, not at the next sync).
#define HAI_CUDA_CHECK_LAUNCH() HAI_CUDA_CHECK(cudaGetLastError())

#define HAI_CUBLAS_CHECK(call)                                                                        \
  do {                                                                                                \
    cublasStatus_t hai_cublas_status_ = (call);                                                       \
    if (hai_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                                \
      throw ::hai::Error(::fmt::format("cuBLAS error in {}: {} ({})", #call,                          \
                                       cublasLtGetStatusString(hai_cublas_status_),                   \
                                       static_cast<int>(hai_cublas_status_)),                         \
                         __FILE__, __LINE__);                                                         \
    }                                                                                                 \
  } while (0)

#define HAI_NCCL_CHECK(call)                                                                          \
  do {                                                                                                \
    ncclResult_t hai_nccl_status_ = (call);                                                           \
    if (hai_nccl_status_ != ncclSuccess && hai_nccl_status_ != ncclInProgress) {                      \
      throw ::hai::Error(::fmt::format("NCCL error in {}: {}", #call,                                 \
                                       ncclGetErrorString(hai_nccl_status_)),                         \
                         __FILE__, __LINE__);                                                         \
    }                                                                                                 \
  } while (0)
#endif  // HAI_WITH_CUDA
