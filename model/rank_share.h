#pragma once
// A rank's share of the DeepSeek-V3 model, decided once from the layout (docs/design/parameters.md "A rank's
// share"): which parameters the rank holds, which box of each, and which ranks hold a replica of that box and so
// reduce its gradient. The store, ZeRO-1, the gradient norm, the pipeline's replica sums, checkpoints and the
// --dry-run planner all read it; nothing else decides what a rank holds.
//   pipeline: pipeline rank p holds the stages of its chunks (parallel/pipeline/placement.h: one under 1f1b, two
//             under dualpipe and dualpipev): their decoder layers, the embedding with stage 0, the final norm,
//             output head and MTP modules with stage S-1, and the embedding with stage S-1 as well when MTP reads
//             it (mtp_depth > 0). A parameter held by several pipeline ranks (every stage under dualpipe; the
//             embedding under 1f1b with MTP) has its gradient summed over exactly those ranks.
//   experts:  EP rank i holds the routed experts [i E / ep, (i + 1) E / ep) of its MoE layers
//             (expert_parallel_parameters.h); their gradients reduce over the expert-DP group, the dense ones'
//             over the DP group.
//   tensors:  tp rank t holds the t-th tp_range (parallel/tensor_parallel.h) of the split dimension of the
//             parameters model/tensor_parallel_split.h splits (heads, FFN columns, vocabulary rows), and the others
//             whole. A replicated parameter's gradient is the same on every tp rank (the layers' tensor-parallel
//             regions sum the activation gradients entering them; under sequence parallelism the trainer first sums
//             each rank's tokens' part, model/sequence_parallel_gradients.h), so it is reduced like any other and
//             counted once.
// Names and shapes stay global ("model.layers.3.mlp.experts.17.up_proj.weight"), so checkpoints need no
// translation between layouts.

#include <cstdint>
#include <vector>

#include "framework/config/config.h"
#include "framework/params/parameter_spec.h"
#include "parallel/topology.h"

namespace hai {

// The data-parallel-like group whose ranks hold the same box and average its gradient (ZeRO-1 shards its state).
enum class ReplicaGroup { data_parallel, expert_data_parallel };

struct HeldParameter {
  ParameterSpec spec;                // global name and shape
  std::vector<int64_t> box_offsets;  // where the held box starts in the global shape (zeros: tp = 1)
  Shape box_extents;                 // the held box (the global shape: tp = 1)
  ReplicaGroup reduce_over = ReplicaGroup::data_parallel;
  std::vector<int> pipeline_ranks;   // the pipeline ranks holding a replica, ascending (this rank among them)
  bool split_over_tp = false;        // each tp rank holds another box (else every tp rank holds it whole)

  // Whether this rank is the replica that counts the parameter once (in the gradient norm, in checkpoints) among
  // the pipeline ranks holding it: the lowest; and there among the tp ranks: each, for a box split over them or a
  // routed expert (whose replicas are its expert-DP group, which spans the tp ranks), else tp rank 0.
  bool counts_here(int pipeline_rank, int tp_rank) const {
    bool tp_counts = split_over_tp || spec.group == ParameterGroup::expert || tp_rank == 0;
    return pipeline_ranks.front() == pipeline_rank && tp_counts;
  }
};

// The parameters of the rank at `coordinates` in the grid of `parallel` (dp and micro_batches resolved), in the
// order of deepseek_v3_parameters. Throws hai::Error for a layout the model cannot take (ep not dividing the
// routed experts, a stage split the model cannot have).
std::vector<HeldParameter> rank_share(const ModelConfig& model, const ParallelConfig& parallel,
                                      const RankCoordinates& coordinates);

// The specs of a share, for a ParameterStore: global names, the held boxes' shapes.
std::vector<ParameterSpec> share_specs(const std::vector<HeldParameter>& share);

// The sets of pipeline ranks (ascending, each of two ranks or more, distinct, in a fixed order) that hold a replica
// of some parameter, over every pipeline rank of the layout: the groups that sum replicated gradients.
std::vector<std::vector<int>> pipeline_replica_sets(const ModelConfig& model, const ParallelConfig& parallel);

}  // namespace hai
