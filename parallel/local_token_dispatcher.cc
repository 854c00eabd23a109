#include "parallel/local_token_dispatcher.h"

#include <vector>

namespace hai {

OwnedTensor LocalTokenDispatcher::tokens_to_local(Context& ctx, const Tensor& tokens) const {
  std::vector<int64_t> dims = tokens.shape().to_vector();
  dims[0] = ctx.plan->plan().sources.numel();
  OwnedTensor sorted(Shape(dims), tokens.dtype(), tokens.device());  // [T * K, ...row]
  permute_tokens(sorted, tokens, *ctx.plan);
  return sorted;
}

}  // namespace hai
