#pragma once
// PipelineReplicaGradients: sums the gradients of the parameters that several pipeline ranks hold (every stage under
// DualPipe, which runs each stage on two ranks; the embedding under 1F1B when the last stage's MTP modules read it)
// over exactly the ranks holding them, so every replica ends with the gradient of the whole model. The other
// gradients, held by one pipeline rank, are not touched: a pipeline never all-reduces its whole store.
// Each set of ranks gets a communicator of its own, split from the pipeline group once; the parameters of one set
// are summed in runs of adjacent gradients, cut where any member's layout is not contiguous, so that every member
// issues the same all-reduces in the same order.

#include <functional>
#include <memory>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/params/parameter_store.h"

namespace hai {

class PipelineReplicaGradients {
 public:
  // pipeline: the pipeline group, ranked by pipeline rank. replica_sets: every set of two or more pipeline ranks
  // that holds a replica of some parameter, over the whole pipeline, the same list on every rank
  // (model/rank_share.h: pipeline_replica_sets). replicas_of(spec): the pipeline ranks holding a parameter of the
  // store (ascending; this rank alone for an unreplicated one). The store and the group must outlive this.
  // Collective over the pipeline group.
  PipelineReplicaGradients(const ParameterStore& store, Communicator& pipeline,
                           const std::vector<std::vector<int>>& replica_sets,
                           const std::function<std::vector<int>(const ParameterSpec&)>& replicas_of);
  ~PipelineReplicaGradients();

  // Sums every replicated gradient over its replicas (the store's gradients must all be written:
  // ParameterStore::zero_unwritten_grads). Collective over each set this rank belongs to.
  void sum();

  // The elements this rank sums (tests, logs).
  int64_t replicated_elements() const;

 private:
  struct Run {
    Tensor grads;  // [n] a run of the store's gradient buffer
    Communicator* group = nullptr;
  };
  std::vector<std::unique_ptr<Communicator>> groups_;  // by set index, null where this rank is not a member
  std::vector<Run> runs_;
};

}  // namespace hai
