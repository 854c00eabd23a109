#include "parallel/pipeline_replicas.h"

#include <algorithm>

#include "framework/core/error.h"
#include "parallel/rank_values.h"

namespace hai {
namespace {

bool disjoint(const std::vector<int>& a, const std::vector<int>& b) {
  return std::ranges::none_of(a, [&](int rank) { return std::ranges::find(b, rank) != b.end(); });
}

// The sets in rounds of pairwise disjoint ones (greedy, in list order): each round is one split of the group.
std::vector<std::vector<size_t>> split_rounds(const std::vector<std::vector<int>>& sets) {
  std::vector<std::vector<size_t>> rounds;
  for (size_t set = 0; set < sets.size(); ++set) {
    auto fits = [&](const std::vector<size_t>& round) {
      return std::ranges::all_of(round, [&](size_t other) { return disjoint(sets[set], sets[other]); });
    };
    auto round = std::ranges::find_if(rounds, fits);
    if (round == rounds.end()) {
      rounds.push_back({set});
    } else {
      round->push_back(set);
    }
  }
  return rounds;
}

}  // namespace

PipelineReplicaGradients::PipelineReplicaGradients(
    const ParameterStore& store, Communicator& pipeline, const std::vector<std::vector<int>>& replica_sets,
    const std::function<std::vector<int>(const ParameterSpec&)>& replicas_of) {
  const int me = pipeline.rank();
  groups_.resize(replica_sets.size());
  for (const std::vector<size_t>& round : split_rounds(replica_sets)) {
    int color = static_cast<int>(replica_sets.size()) + me;  // alone, unless in one of the round's sets
    for (size_t set : round) {
      if (std::ranges::find(replica_sets[set], me) != replica_sets[set].end()) color = static_cast<int>(set);
    }
    std::unique_ptr<Communicator> group = pipeline.split(color, me);
    if (color < static_cast<int>(replica_sets.size())) groups_[static_cast<size_t>(color)] = std::move(group);
  }
  // Per set: its parameters in gradient order, and where each member's layout runs on to the next one.
  for (size_t set = 0; set < replica_sets.size(); ++set) {
    if (!groups_[set]) continue;
    std::vector<const Parameter*> held;
    for (const Parameter& parameter : store.parameters()) {
      if (!parameter.spec.trainable) continue;
      std::vector<int> replicas = replicas_of(parameter.spec);
      HAI_CHECK(std::ranges::find(replicas, me) != replicas.end(), "parameter {}: pipeline rank {} holds it but is "
                "not among its replicas", parameter.spec.name, me);
      if (replicas == replica_sets[set]) held.push_back(&parameter);
    }
    std::ranges::sort(held, {}, &Parameter::grad_offset);
    std::vector<double> contiguous(held.size(), 0.0);  // 1 where the next parameter's gradient follows at once
    for (size_t i = 0; i + 1 < held.size(); ++i) {
      contiguous[i] = held[i]->grad_offset + held[i]->spec.shape.numel() == held[i + 1]->grad_offset ? 1.0 : 0.0;
    }
    Communicator& group = *groups_[set];
    std::vector<double> everywhere = sum_over_ranks(group, contiguous);
    Tensor grads = store.grads();
    for (size_t i = 0; i < held.size();) {
      size_t last = i;
      while (last + 1 < held.size() && everywhere[last] == group.size()) ++last;
      int64_t begin = held[i]->grad_offset, end = held[last]->grad_offset + held[last]->spec.shape.numel();
      runs_.push_back({grads.slice(begin, end), &group});
      i = last + 1;
    }
  }
}

PipelineReplicaGradients::~PipelineReplicaGradients() = default;

void PipelineReplicaGradients::sum() {
  for (const Run& run : runs_) run.group->all_reduce(run.grads, ReduceOp::sum);
}

int64_t PipelineReplicaGradients::replicated_elements() const {
  int64_t elements = 0;
  for (const Run& run : runs_) elements += run.grads.numel();
  return elements;
}

}  // namespace hai
