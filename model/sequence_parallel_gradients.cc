#include "model/sequence_parallel_gradients.h"

#include "model/gradient_buckets.h"

namespace hai {

std::vector<ReplicatedGradientSum::Gradient> sequence_parallel_summed_gradients(
    const std::vector<HeldParameter>& share, const ParameterStore& store) {
  std::vector<ReplicatedGradientSum::Gradient> gradients;
  for (const HeldParameter& held : share) {
    const ParameterSpec& spec = held.spec;
    if (held.split_over_tp || spec.group == ParameterGroup::expert || !spec.trainable) continue;
    gradients.push_back({.bucket = gradient_bucket(spec.name), .grad = store[spec.name].grad});
  }
  return gradients;
}

}  // namespace hai
