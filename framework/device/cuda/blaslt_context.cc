#include "framework/device/cuda/blaslt_context.h"

#include <cstdint>
#include <memory>
#include <utility>

#include "framework/core/check.h"

namespace hai::cuda {
namespace {

// cuBLASLt's recommended workspace for Hopper.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

BlasLtContext::BlasLtContext(Device device, size_t workspace_bytes) : workspace_(workspace_bytes, device) {
  HAI_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

std::optional<cublasLtMatmulAlgo_t> BlasLtContext::find_algorithm(const GemmProblem& problem) const {
  std::lock_guard lock(mutex_);
  auto found = algorithms_.find(problem);
  if (found == algorithms_.end()) return std::nullopt;
  return found->second;
}

void BlasLtContext::remember_algorithm(const GemmProblem& problem, const cublasLtMatmulAlgo_t& algorithm) {
  std::lock_guard lock(mutex_);
  algorithms_.insert_or_assign(problem, algorithm);
}

int operand_alignment(const void* pointer) {
  auto address = reinterpret_cast<uintptr_t>(pointer);
  int alignment = 1;
  while (alignment < 256 && address % (alignment * 2) == 0) alignment *= 2;
  return alignment;
}

BlasLtContext& blaslt_context(Device device, Stream stream) {
  using Key = std::pair<int, void*>;  // device index, stream handle
  struct Cache {
    std::mutex mutex;
    std::map<Key, std::unique_ptr<BlasLtContext>> contexts;
  };
  // NOTE: deliberately never destroyed: at static destruction the CUDA runtime may already be unloaded, and
  // freeing the workspaces then fails. The process's exit releases them.
  static Cache* cache = new Cache;
  std::lock_guard lock(cache->mutex);
  std::unique_ptr<BlasLtContext>& context = cache->contexts[Key{device.index, stream.handle}];
  if (!context) context = std::make_unique<BlasLtContext>(device, kWorkspaceBytes);
  return *context;
}

}  // namespace hai::cuda
