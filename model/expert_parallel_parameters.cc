#include "model/expert_parallel_parameters.h"

#include <charconv>
#include <string_view>

#include "framework/core/error.h"
#include "model/parameters.h"

namespace hai {

int64_t routed_expert_of(const std::string& name) {
  constexpr std::string_view kMarker = ".mlp.experts.";
  size_t at = name.find(kMarker);
  if (at == std::string::npos) return -1;
  const char* digits = name.data() + at + kMarker.size();
  int64_t expert = -1;
  auto [end, error] = std::from_chars(digits, name.data() + name.size(), expert);
  return error == std::errc() && end != digits && *end == '.' ? expert : -1;
}

std::vector<ParameterSpec> expert_parallel_parameters(const ModelConfig& model, int ep_rank, int ep) {
  const int64_t experts = model.moe.routed_experts;
  HAI_CHECK(ep >= 1 && ep_rank >= 0 && ep_rank < ep && experts % ep == 0,
            "expert parallelism: rank {} of {} cannot own an equal share of {} routed experts", ep_rank, ep, experts);
  const int64_t first = ep_rank * (experts / ep), last = first + experts / ep;
  std::vector<ParameterSpec> specs;
  for (ParameterSpec& spec : deepseek_v3_parameters(model)) {
    int64_t expert = routed_expert_of(spec.name);
    HAI_CHECK((expert >= 0) == (spec.group == ParameterGroup::expert),
              "parameter {}: the expert group and the routed-expert name disagree", spec.name);
    if (expert < 0 || (expert >= first && expert < last)) specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace hai
