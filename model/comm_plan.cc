#include "model/comm_plan.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "model/parameters.h"
#include "model/pipeline_stage.h"
#include "model/rank_share.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_report.h"

namespace hai {
namespace {

constexpr double kGigabyte = 1e9;
constexpr double kTera = 1e12;

// ---- the shape of the model ------------------------------------------------------------------------------------

// The decoder layer (MTP module k: num_layers + k - 1) a parameter belongs to, or none.
std::optional<int64_t> layer_of(std::string_view name) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  int64_t layer = 0;
  std::from_chars(name.data() + kPrefix.size(), name.data() + name.size(), layer);
  return layer;
}

bool is_matmul(const ParameterSpec& spec) {
  return spec.shape.rank() == 2 && spec.name != "model.embed_tokens.weight";
}

// Forward FLOPs per token of every block (decoder layers, then MTP modules) and of the output head (one use).
struct BlockFlops {
  std::vector<double> blocks;
  double head = 0;
};

BlockFlops block_forward_flops(const Config& config) {
  const ModelConfig& m = config.model;
  BlockFlops flops;
  double attention = static_cast<double>(m.num_heads) * static_cast<double>(config.train.seq_len) *
                     static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim);  // causal
  flops.blocks.assign(static_cast<size_t>(m.num_layers + m.mtp_depth), attention);
  double routed_share = static_cast<double>(m.moe.experts_per_token) / static_cast<double>(m.moe.routed_experts);
  for (const ParameterSpec& spec : deepseek_v3_parameters(m)) {
    if (!is_matmul(spec)) continue;
    double used = static_cast<double>(spec.shape.numel()) * (spec.group == ParameterGroup::expert ? routed_share : 1);
    std::optional<int64_t> layer = layer_of(spec.name);
    (layer ? flops.blocks[static_cast<size_t>(*layer)] : flops.head) += 2 * used;
  }
  return flops;
}

int64_t moe_blocks(const ModelConfig& m, const StageLayers& stage) {
  int64_t dense = std::clamp<int64_t>(m.first_dense_layers - stage.first_layer, 0, stage.layers);
  return stage.layers - dense + (stage.last ? m.mtp_depth : 0);
}

std::vector<StageLayers> model_stages(const Config& config) {
  return pipeline_stages(config.model, stage_count(pipeline_shape(config.parallel)), config.parallel.stage_layers);
}

// ---- where the ranks sit -----------------------------------------------------------------------------------------

// Rank numbering of parallel/topology.h: rank = s + S p, s = tp_rank + tp dp_rank the rank's place in its stage.
struct Layout {
  int64_t stage_ranks;  // S = dp x tp
  int64_t ep;
  int64_t gpus_per_node;
  int64_t global(int64_t stage_rank, int64_t pipeline_rank) const { return stage_rank + stage_ranks * pipeline_rank; }
  int64_t node(int64_t rank) const { return rank / gpus_per_node; }
};

Layout layout_of(const Config& config) {
  const ParallelConfig& p = config.parallel;
  return {.stage_ranks = p.dp.value() * p.tp, .ep = p.ep, .gpus_per_node = config.runtime.gpus_per_node};
}

// Whether every group of `groups` x `size` stage ranks (member i of group g: first(g) + stride i) of pipeline rank
// p lies inside one node.
bool groups_within_nodes(const Layout& layout, int64_t p, int64_t groups, int64_t size, int64_t stride,
                         const std::function<int64_t(int64_t)>& first) {
  for (int64_t g = 0; g < groups; ++g) {
    int64_t node = layout.node(layout.global(first(g), p));
    for (int64_t i = 1; i < size; ++i) {
      if (layout.node(layout.global(first(g) + stride * i, p)) != node) return false;
    }
  }
  return true;
}

// The fewest EP peers that share a node with a rank of pipeline rank p: that rank sends the most over InfiniBand.
int64_t fewest_node_peers(const Layout& layout, int64_t p) {
  int64_t fewest = layout.ep - 1;
  for (int64_t first = 0; first < layout.stage_ranks; first += layout.ep) {
    std::map<int64_t, int64_t> per_node;
    for (int64_t i = 0; i < layout.ep; ++i) ++per_node[layout.node(layout.global(first + i, p))];
    for (const auto& [node, ranks] : per_node) fewest = std::min(fewest, ranks - 1);
  }
  return fewest;
}

// Whether every stage rank's copy at pipeline ranks `a` and `b` shares a node.
bool pipeline_pair_within_nodes(const Layout& layout, int64_t a, int64_t b) {
  for (int64_t s = 0; s < layout.stage_ranks; ++s) {
    if (layout.node(layout.global(s, a)) != layout.node(layout.global(s, b))) return false;
  }
  return true;
}

// ---- traffic -------------------------------------------------------------------------------------------------

struct Bandwidths {
  double nvlink, infiniband;  // bytes per second
  // The time of one collective sending these bytes: the two links run at once.
  double seconds(double nvlink_bytes, double infiniband_bytes) const {
    return std::max(nvlink_bytes / nvlink, infiniband_bytes / infiniband);
  }
};

Traffic make_traffic(std::string group, std::string name, std::string payload, double bytes, Link link,
                     const Bandwidths& bandwidths) {
  Traffic traffic{.group = std::move(group), .name = std::move(name), .payload = std::move(payload), .link = link};
  (link == Link::nvlink ? traffic.nvlink_bytes : traffic.infiniband_bytes) = bytes;
  traffic.seconds = bandwidths.seconds(traffic.nvlink_bytes, traffic.infiniband_bytes);
  return traffic;
}

std::string billions(double parameters) { return fmt::format("{:.3g}B", parameters / 1e9); }

// The bytes of an all-gathered element: the compute copy, or the fp32 value where there is none.
double gathered_bytes(PrecisionMode mode, const ParameterSpec& spec) {
  if (mode == PrecisionMode::fp32 || (mode == PrecisionMode::fp8 && spec.fp8_only)) return 4;
  return 2;
}

// The ZeRO-1 reduce-scatter and all-gather of the parameters `held` that reduce over `over`, on a ring of `ranks`.
void add_zero1_traffic(const Config& config, const std::vector<HeldParameter>& held, ReplicaGroup over,
                       int64_t ranks, Link link, const Bandwidths& bandwidths, std::vector<Traffic>& traffic) {
  if (ranks < 2) return;
  double parameters = 0, gathered = 0;
  for (const HeldParameter& parameter : held) {
    if (parameter.reduce_over != over) continue;
    auto numel = static_cast<double>(parameter.box_extents.numel());
    parameters += numel;
    gathered += numel * gathered_bytes(config.precision.mode, parameter.spec);
  }
  if (parameters == 0) return;
  double ring = static_cast<double>(ranks - 1) / static_cast<double>(ranks);
  std::string group = over == ReplicaGroup::data_parallel ? "dp" : "expert_dp";
  traffic.push_back(make_traffic(group, "reduce-scatter",
                                 fmt::format("fp32 gradients of {} parameters", billions(parameters)),
                                 4 * parameters * ring, link, bandwidths));
  traffic.push_back(make_traffic(group, "all-gather",
                                 fmt::format("updated weights of {} parameters ({:.2g} bytes each)",
                                             billions(parameters), gathered / parameters),
                                 gathered * ring, link, bandwidths));
}

// The sums of the gradients of parameters held by several pipeline ranks, one ring all-reduce per replica set.
void add_replica_traffic(const Layout& layout, int64_t p, const std::vector<HeldParameter>& held,
                         const Bandwidths& bandwidths, std::vector<Traffic>& traffic) {
  std::map<std::vector<int>, double> per_set;
  for (const HeldParameter& parameter : held) {
    if (parameter.pipeline_ranks.size() > 1) {
      per_set[parameter.pipeline_ranks] += static_cast<double>(parameter.box_extents.numel());
    }
  }
  if (per_set.empty()) return;
  Traffic sums{.group = "pp_replicas", .name = "all-reduce", .payload = "", .link = Link::nvlink};
  double parameters = 0;
  for (const auto& [set, numel] : per_set) {  // one all-reduce after another
    auto n = static_cast<double>(set.size());
    double bytes = 4 * numel * 2 * (n - 1) / n;
    bool local = std::ranges::all_of(set, [&](int q) { return pipeline_pair_within_nodes(layout, p, q); });
    (local ? sums.nvlink_bytes : sums.infiniband_bytes) += bytes;
    sums.seconds += local ? bandwidths.seconds(bytes, 0) : bandwidths.seconds(0, bytes);
    if (!local) sums.link = Link::infiniband;
    parameters += numel;
  }
  sums.payload = fmt::format("fp32 gradients of {} replicated parameters", billions(parameters));
  sums.exposed_seconds = sums.seconds;  // after the schedule, before the optimizer
  traffic.push_back(sums);
}

// ---- the tp group ----------------------------------------------------------------------------------------------

// The bytes one tp rank sends in the tp group's collectives of one micro-batch of a stage, by traffic name
// ("all-reduce forward", "all-gather backward", ...): forward (F) and backward (B and W) apart.
struct TpStageBytes {
  std::map<std::string, double> forward, backward;
};

// The collectives of comm_plan.h's tp rules, in elements a token of each kind of use; added to `bytes` as one rank
// sends them: 2 (n - 1) / n of an all-reduce's payload, (n - 1) / n of the gathered or scattered [T, ...] one.
class TpCollectives {
 public:
  TpCollectives(const Config& config, TpStageBytes& bytes)
      : m_(config.model), sequence_parallel_(config.parallel.sequence_parallel), recompute_(config.train.recompute),
        fp8_(config.precision.mode == PrecisionMode::fp8),
        activation_(config.precision.mode == PrecisionMode::bf16 ? 2 : 4),
        tokens_(static_cast<double>(config.train.micro_batch_size * config.train.seq_len)),
        share_(static_cast<double>(config.parallel.tp - 1) / static_cast<double>(config.parallel.tp)), bytes_(bytes) {}

  void embedding() {
    double h = static_cast<double>(m_.hidden_size);
    if (!sequence_parallel_) return add(bytes_.forward, "all-reduce forward", 4 * h, 2);
    add(bytes_.forward, "reduce-scatter forward", 4 * h, 1);
    add(bytes_.backward, "all-gather backward", 4 * h, 1);
  }

  // A decoder layer or MTP block: MLA, then a dense FFN or the MoE's shared expert (if any) and router.
  void block(bool moe) {
    bool ffn = !moe || m_.moe.shared_experts > 0;
    block_forward(moe, ffn, bytes_.forward);
    if (recompute_ == RecomputeMode::full) block_forward(moe, ffn, bytes_.backward);
    double h = static_cast<double>(m_.hidden_size);
    double latents = static_cast<double>(m_.q_lora_rank + m_.kv_lora_rank + m_.qk_rope_head_dim);
    if (!sequence_parallel_) return add(bytes_.backward, "all-reduce backward", 4 * (latents + (ffn ? h : 0)), 2);
    if (recompute_ == RecomputeMode::selective) {
      add(bytes_.backward, "all-gather backward", activation_ * static_cast<double>(m_.q_lora_rank + m_.kv_lora_rank),
          1);
      if (ffn && fp8_) add(bytes_.backward, "all-gather backward", activation_ * h, 1);
    }
    // d_out of MLA's exit; of the FFN's, and its input gathered again for the weight gradient (not under FP8)
    add(bytes_.backward, "all-gather backward", activation_ * h * (ffn ? (fp8_ ? 2 : 3) : 1), 1);
    add(bytes_.backward, "reduce-scatter backward", 4 * (latents + (ffn ? h : 0)), 1);
    if (moe) add(bytes_.backward, "all-gather backward", 4 * static_cast<double>(m_.moe.routed_experts), 1);
  }

  // One use of the output head: the vocabulary-parallel loss (max and sum statistics) and d(normed).
  void head() {
    double h = static_cast<double>(m_.hidden_size);
    if (!sequence_parallel_) return add(bytes_.forward, "all-reduce forward", 4 * (h + 4), 2);
    add(bytes_.forward, "all-gather forward", 4 * h, 1);
    add(bytes_.forward, "all-reduce forward", 4 * 4, 2);
    add(bytes_.forward, "reduce-scatter forward", 4 * h, 1);
  }

 private:
  void block_forward(bool moe, bool ffn, std::map<std::string, double>& pass) {
    double h = static_cast<double>(m_.hidden_size);
    if (!sequence_parallel_) return add(pass, "all-reduce forward", 4 * h * (ffn ? 2 : 1), 2);
    add(pass, "all-gather forward",
        activation_ * static_cast<double>(m_.q_lora_rank + m_.kv_lora_rank + m_.qk_rope_head_dim + (ffn ? h : 0)), 1);
    add(pass, "reduce-scatter forward", 4 * h * (ffn ? 2 : 1), 1);
    // the balance loss's scores (fp32) and choices (i32)
    if (moe) add(pass, "all-gather forward", 4 * static_cast<double>(m_.moe.routed_experts + m_.moe.experts_per_token), 1);
  }

  // bytes_per_token of a payload; rounds: 2 for an all-reduce (reduce-scatter + all-gather), else 1.
  void add(std::map<std::string, double>& pass, const std::string& name, double bytes_per_token, double rounds) {
    pass[name] += rounds * share_ * bytes_per_token * tokens_;
  }

  const ModelConfig& m_;
  bool sequence_parallel_;
  RecomputeMode recompute_;
  bool fp8_;
  double activation_;  // bytes of a gathered activation or output gradient
  double tokens_;      // T of a micro-batch
  double share_;       // (tp - 1) / tp
  TpStageBytes& bytes_;
};

TpStageBytes tp_stage_bytes(const Config& config, const StageLayers& stage) {
  TpStageBytes bytes;
  if (config.parallel.tp == 1) return bytes;
  const ModelConfig& m = config.model;
  TpCollectives collectives(config, bytes);
  if (stage.first_layer == 0) collectives.embedding();
  for (int64_t layer = stage.first_layer; layer < stage.first_layer + stage.layers; ++layer) {
    collectives.block(layer >= m.first_dense_layers);
  }
  if (!stage.last) return bytes;
  collectives.head();
  for (int64_t depth = 1; depth <= m.mtp_depth; ++depth) {
    collectives.embedding();
    collectives.block(true);
    collectives.head();
  }
  return bytes;
}

std::string tp_payload(const std::string& name, bool sequence_parallel) {
  if (name == "all-reduce forward" && sequence_parallel) return "the loss's [T] max and [3, T] sums, fp32";
  if (name == "all-reduce forward") return "[T, H] fp32 region outputs, the loss's [T] max and [3, T] sums";
  if (name == "all-reduce backward") return "fp32 region input gradients ([T, H], MLA's latents)";
  if (name == "all-gather forward") return "rows of region inputs (latents, k_rope, x, normed), router scores";
  if (name == "reduce-scatter forward") return "[T, H] fp32 region outputs, d(normed)";
  if (name == "all-gather backward") return "rows of output gradients, inputs gathered again, router scores";
  return "fp32 region input gradients ([T, H], MLA's latents)";
}

// The four all-to-alls of one MoE block and micro-batch, for a rank with `node_peers` EP peers on its node.
struct ExpertExchangeBytes {
  double dispatch_row, return_row;  // bytes of a forward dispatch row, of every other row
  double rows_nvlink, rows_infiniband;
};

ExpertExchangeBytes expert_exchange_bytes(const Config& config, int64_t node_peers) {
  const ModelConfig& m = config.model;
  int64_t hidden = m.hidden_size;
  double rows = static_cast<double>(config.train.micro_batch_size * config.train.seq_len * m.moe.experts_per_token);
  double per_rank = rows / static_cast<double>(config.parallel.ep);
  double row = static_cast<double>(hidden) * (config.precision.mode == PrecisionMode::fp32 ? 4 : 2);
  double dispatch = config.precision.mode == PrecisionMode::fp8
                        ? static_cast<double>(hidden + 4 * ((hidden + 127) / 128))  // e4m3 + 1x128 fp32 scales
                        : row;
  return {.dispatch_row = dispatch, .return_row = row, .rows_nvlink = per_rank * static_cast<double>(node_peers),
          .rows_infiniband = per_rank * static_cast<double>(config.parallel.ep - 1 - node_peers)};
}

// ---- the program of a rank -----------------------------------------------------------------------------------

// Traffic indices and their seconds beside one chunk's compute.
struct Window {
  double compute = 0;
  std::map<size_t, double> beside;
};

// Shares what `window`'s compute leaves uncovered among the traffic beside it.
void expose(const Window& window, std::vector<Traffic>& traffic) {
  double demand = 0;
  for (const auto& [index, seconds] : window.beside) demand += seconds;
  if (demand <= window.compute) return;
  double uncovered = demand - window.compute;
  for (const auto& [index, seconds] : window.beside) traffic[index].exposed_seconds += uncovered * seconds / demand;
}

int group_order(const std::string& group) {
  const std::vector<std::string> order = {"dp", "expert_dp", "ep", "pp", "pp_replicas", "tp"};
  return static_cast<int>(std::ranges::find(order, group) - order.begin());
}

class RankPlanner {
 public:
  RankPlanner(const Config& config, int p)
      : config_(config), layout_(layout_of(config)), p_(p),
        bandwidths_{config.runtime.nvlink_gbps * kGigabyte, config.runtime.infiniband_gbps * kGigabyte},
        expert_bytes_(expert_exchange_bytes(config, fewest_node_peers(layout_, p))) {
    for (const StageLayers& stage : model_stages(config)) tp_bytes_.push_back(tp_stage_bytes(config, stage));
    int64_t tp = config.parallel.tp;
    tp_link_ = link(groups_within_nodes(layout_, p, config.parallel.dp.value(), tp, 1,
                                        [tp](int64_t d) { return d * tp; }));
  }

  RankCommunication plan(const std::vector<Instruction>& program, const std::vector<double>& stage_seconds,
                         const std::vector<int64_t>& stage_moe_blocks) {
    RankCommunication rank;
    rank.pipeline_rank = p_;
    std::vector<Traffic>& traffic = rank.traffic;
    std::vector<HeldParameter> held =
        rank_share(config_.model, config_.parallel, {.dp = 0, .pp = p_, .tp = 0});
    const ParallelConfig& par = config_.parallel;
    bool dp_local = groups_within_nodes(layout_, p_, par.tp, par.dp.value(), par.tp, [](int64_t t) { return t; });
    int64_t expert_dp = layout_.stage_ranks / layout_.ep;
    bool expert_dp_local =
        groups_within_nodes(layout_, p_, layout_.ep, expert_dp, layout_.ep, [](int64_t e) { return e; });
    add_zero1_traffic(config_, held, ReplicaGroup::data_parallel, par.dp.value(), link(dp_local), bandwidths_,
                      traffic);
    add_zero1_traffic(config_, held, ReplicaGroup::expert_data_parallel, expert_dp, link(expert_dp_local),
                      bandwidths_, traffic);
    add_replica_traffic(layout_, p_, held, bandwidths_, traffic);
    walk(program, stage_seconds, stage_moe_blocks, rank);
    std::ranges::stable_sort(traffic, {}, [](const Traffic& t) { return group_order(t.group); });
    return rank;
  }

 private:
  static Link link(bool local) { return local ? Link::nvlink : Link::infiniband; }

  size_t index_of(std::vector<Traffic>& traffic, const std::string& group, const std::string& name,
                  const std::string& payload, Link link) {
    for (size_t i = 0; i < traffic.size(); ++i) {
      if (traffic[i].group == group && traffic[i].name == name) return i;
    }
    traffic.push_back(make_traffic(group, name, payload, 0, link, bandwidths_));
    return traffic.size() - 1;
  }

  // Adds one collective's bytes to a traffic; returns its seconds.
  double add(Traffic& traffic, double nvlink_bytes, double infiniband_bytes) const {
    traffic.nvlink_bytes += nvlink_bytes;
    traffic.infiniband_bytes += infiniband_bytes;
    double seconds = bandwidths_.seconds(nvlink_bytes, infiniband_bytes);
    traffic.seconds += seconds;
    return seconds;
  }

  // The expert all-to-alls of one chunk of a stage with `blocks` MoE blocks, into `window` (or exposed).
  void expert_traffic(std::vector<Traffic>& traffic, int64_t blocks, bool forward, Window* window) {
    if (config_.parallel.ep < 2 || blocks == 0) return;
    const ExpertExchangeBytes& bytes = expert_bytes_;
    Link over = bytes.rows_infiniband > 0 ? Link::infiniband : Link::nvlink;
    bool fp8 = config_.precision.mode == PrecisionMode::fp8;
    std::string dtype = config_.precision.mode == PrecisionMode::fp32 ? "fp32" : "bf16";
    auto b = static_cast<double>(blocks);
    struct Exchange {
      const char* name;
      std::string payload;
      double row;
    };
    std::vector<Exchange> exchanges;
    if (forward) {
      exchanges = {{"dispatch forward", fp8 ? "routed rows, e4m3 + 1x128 scales" : "routed rows, " + dtype,
                    bytes.dispatch_row},
                   {"combine forward", "expert outputs, " + dtype, bytes.return_row}};
    } else {
      exchanges = {{"dispatch backward", "output gradients, " + dtype, bytes.return_row},
                   {"combine backward", "input gradients, " + dtype, bytes.return_row}};
      if (config_.train.recompute == RecomputeMode::selective) {
        // NOTE: selective recomputation returns the recomputed outputs and dispatches the rows again for W.
        exchanges.push_back({"combine again", "recomputed expert outputs, " + dtype, bytes.return_row});
        std::string rows = fp8 ? "e4m3 + 1x128 scales" : dtype;
        exchanges.push_back({"dispatch again", "routed rows for W, " + rows, bytes.dispatch_row});
      }
    }
    for (const Exchange& exchange : exchanges) {
      size_t index = index_of(traffic, "ep", exchange.name, exchange.payload, over);
      double seconds =
          add(traffic[index], b * bytes.rows_nvlink * exchange.row, b * bytes.rows_infiniband * exchange.row);
      if (window != nullptr) {
        window->beside[index] += seconds;
      } else {
        traffic[index].exposed_seconds += seconds;
      }
    }
  }

  // The tp group's collectives of one chunk of `stage` (forward, or B and W), on the compute stream: exposed.
  void tp_traffic(std::vector<Traffic>& traffic, size_t stage, bool forward) {
    for (const auto& [name, bytes] : forward ? tp_bytes_[stage].forward : tp_bytes_[stage].backward) {
      size_t index = index_of(traffic, "tp", name, tp_payload(name, config_.parallel.sequence_parallel), tp_link_);
      bool local = tp_link_ == Link::nvlink;
      traffic[index].exposed_seconds += add(traffic[index], local ? bytes : 0, local ? 0 : bytes);
    }
  }

  void walk(const std::vector<Instruction>& program, const std::vector<double>& stage_seconds,
            const std::vector<int64_t>& blocks, RankCommunication& rank) {
    std::vector<Traffic>& traffic = rank.traffic;
    std::vector<Window> windows;
    std::map<size_t, double> pending;  // pp sends waiting for the next chunk
    double boundary = 4.0 * static_cast<double>(config_.train.micro_batch_size * config_.train.seq_len *
                                                config_.model.hidden_size);
    for (const Instruction& instruction : program) {
      auto stage = static_cast<size_t>(instruction.stage);
      switch (instruction.kind) {
        case InstructionKind::send_activation:
        case InstructionKind::send_gradient: {
          bool forward = instruction.kind == InstructionKind::send_activation;
          bool local = pipeline_pair_within_nodes(layout_, p_, instruction.peer);
          size_t index = index_of(traffic, "pp", forward ? "send activations" : "send gradients",
                                  forward ? "[T, H] fp32 hidden states" : "[T, H] fp32 gradients", link(local));
          pending[index] += add(traffic[index], local ? boundary : 0, local ? 0 : boundary);
          if (!local) traffic[index].link = Link::infiniband;
          continue;
        }
        case InstructionKind::receive_activation:
        case InstructionKind::receive_gradient: continue;
        default: break;
      }
      Window window{.beside = pending};
      pending.clear();
      switch (instruction.kind) {
        case InstructionKind::forward:
          window.compute = stage_seconds[stage];
          expert_traffic(traffic, blocks[stage], true, nullptr);
          tp_traffic(traffic, stage, true);
          break;
        case InstructionKind::backward_input:
          window.compute = stage_seconds[stage];
          expert_traffic(traffic, blocks[stage], false, nullptr);
          tp_traffic(traffic, stage, false);
          break;
        case InstructionKind::backward_weight: window.compute = stage_seconds[stage]; break;
        case InstructionKind::forward_backward: {
          auto backward = static_cast<size_t>(instruction.backward_stage);
          window.compute = stage_seconds[stage] + 2 * stage_seconds[backward];
          expert_traffic(traffic, blocks[stage], true, &window);
          expert_traffic(traffic, blocks[backward], false, &window);
          tp_traffic(traffic, stage, true);
          tp_traffic(traffic, backward, false);
          break;
        }
        default: break;
      }
      rank.compute_seconds += window.compute;
      windows.push_back(std::move(window));
    }
    for (const auto& [index, seconds] : pending) traffic[index].exposed_seconds += seconds;
    rank.chunks = static_cast<int64_t>(windows.size());
    for (size_t i = 0; i < traffic.size() && !windows.empty(); ++i) {
      if (traffic[i].group != "dp" && traffic[i].group != "expert_dp") continue;
      Window& beside = traffic[i].name == "reduce-scatter" ? windows.back() : windows.front();
      beside.beside[i] += traffic[i].seconds;
    }
    for (const Window& window : windows) expose(window, traffic);
  }

  const Config& config_;
  Layout layout_;
  int p_;
  Bandwidths bandwidths_;
  ExpertExchangeBytes expert_bytes_;  // of the rank with the fewest EP peers on its node
  std::vector<TpStageBytes> tp_bytes_;  // by stage, one micro-batch's
  Link tp_link_ = Link::nvlink;
};

}  // namespace

std::string to_string(Link link) { return link == Link::nvlink ? "nvlink" : "infiniband"; }

double RankCommunication::traffic_seconds() const {
  double total = 0;
  for (const Traffic& t : traffic) total += t.seconds;
  return total;
}

double RankCommunication::exposed_seconds() const {
  double total = 0;
  for (const Traffic& t : traffic) total += t.exposed_seconds;
  return total;
}

double MoeLayerCommunication::pair_ratio() const {
  double seconds = forward_seconds + backward_seconds;
  return seconds > 0 ? 3 * forward_compute_seconds / seconds : 0;
}

std::vector<double> stage_forward_flops_per_token(const Config& config) {
  BlockFlops flops = block_forward_flops(config);
  const ModelConfig& m = config.model;
  std::vector<double> stages;
  for (const StageLayers& stage : model_stages(config)) {
    double total = 0;
    for (int64_t layer = stage.first_layer; layer < stage.first_layer + stage.layers; ++layer) {
      total += flops.blocks[static_cast<size_t>(layer)];
    }
    if (stage.last) {
      for (int64_t k = 0; k < m.mtp_depth; ++k) total += flops.blocks[static_cast<size_t>(m.num_layers + k)];
      total += static_cast<double>(1 + m.mtp_depth) * flops.head;
    }
    stages.push_back(total);
  }
  return stages;
}

CommPlan plan_communication(const Config& config) {
  double tokens = static_cast<double>(config.train.micro_batch_size * config.train.seq_len);
  double rate = config.runtime.achieved_tflops * kTera;
  std::vector<double> stage_seconds;
  for (double flops : stage_forward_flops_per_token(config)) stage_seconds.push_back(flops * tokens / rate);
  std::vector<int64_t> blocks;
  for (const StageLayers& stage : model_stages(config)) blocks.push_back(moe_blocks(config.model, stage));

  Schedule schedule = build_schedule(pipeline_shape(config.parallel));
  CommPlan plan;
  for (int p = 0; p < static_cast<int>(config.parallel.pp); ++p) {
    plan.ranks.push_back(RankPlanner(config, p).plan(schedule.ranks[static_cast<size_t>(p)], stage_seconds, blocks));
  }

  const ModelConfig& m = config.model;
  if (m.first_dense_layers < m.num_layers && config.parallel.ep > 1) {
    Layout layout = layout_of(config);
    int64_t peers = layout.ep - 1;
    for (int64_t p = 0; p < config.parallel.pp; ++p) peers = std::min(peers, fewest_node_peers(layout, p));
    ExpertExchangeBytes bytes = expert_exchange_bytes(config, peers);
    Bandwidths bandwidths{config.runtime.nvlink_gbps * kGigabyte, config.runtime.infiniband_gbps * kGigabyte};
    MoeLayerCommunication& layer = plan.moe_layer;
    layer.forward_compute_seconds =
        block_forward_flops(config).blocks[static_cast<size_t>(m.first_dense_layers)] * tokens / rate;
    layer.forward_nvlink_bytes = bytes.rows_nvlink * (bytes.dispatch_row + bytes.return_row);
    layer.forward_infiniband_bytes = bytes.rows_infiniband * (bytes.dispatch_row + bytes.return_row);
    for (double row : {bytes.dispatch_row, bytes.return_row}) {
      layer.forward_seconds += bandwidths.seconds(bytes.rows_nvlink * row, bytes.rows_infiniband * row);
    }
    layer.backward_seconds = 2 * bandwidths.seconds(bytes.rows_nvlink * bytes.return_row,
                                                    bytes.rows_infiniband * bytes.return_row);
    if (config.train.recompute == RecomputeMode::selective) {  // the combine and the dispatch again (expert_traffic)
      for (double row : {bytes.return_row, bytes.dispatch_row}) {
        layer.backward_seconds += bandwidths.seconds(bytes.rows_nvlink * row, bytes.rows_infiniband * row);
      }
    }
  }
  return plan;
}

}  // namespace hai
