#include "apps/hai-train/comm_plan_report.h"

#include <fmt/format.h>

namespace hai {
namespace {

std::string assumptions_line(const Config& config) {
  const RuntimeConfig& r = config.runtime;
  return fmt::format("communication per rank and step: NVLink {:g} GB/s and InfiniBand {:g} GB/s per GPU "
                     "(runtime.nvlink_gbps, runtime.infiniband_gbps), {} GPUs per node (runtime.gpus_per_node); "
                     "compute at an assumed {:g} model TFLOP/s per GPU (runtime.achieved_tflops)",
                     r.nvlink_gbps, r.infiniband_gbps, r.gpus_per_node, r.achieved_tflops);
}

std::string moe_layer_line(const MoeLayerCommunication& layer) {
  if (layer.forward_seconds == 0) return "MoE layer: no expert all-to-all (ep 1 or no MoE layer)";
  return fmt::format("MoE layer, one micro-batch: forward compute {:.2f} ms; expert all-to-all {:.2f} ms forward "
                     "(dispatch + combine, {:.1f} MB NVLink + {:.1f} MB InfiniBand), {:.2f} ms backward; "
                     "computation:communication {:.2f}:1 forward, {:.2f}:1 for an FB pair (F + full B)",
                     1e3 * layer.forward_compute_seconds, 1e3 * layer.forward_seconds,
                     layer.forward_nvlink_bytes / 1e6, layer.forward_infiniband_bytes / 1e6,
                     1e3 * layer.backward_seconds, layer.forward_ratio(), layer.pair_ratio());
}

// A rank's rows without the rank column.
std::vector<std::string> rank_rows(const RankCommunication& rank) {
  std::vector<std::string> rows;
  for (const Traffic& t : rank.traffic) {
    rows.push_back(fmt::format("{} | {} | {} | {} | {:.4g} | {:.4g} | {:.4g} |", t.group, t.name, t.payload,
                               to_string(t.link), (t.nvlink_bytes + t.infiniband_bytes) / 1e9, t.seconds,
                               t.exposed_seconds));
  }
  double exposed = rank.exposed_seconds();
  rows.push_back(fmt::format("all | compute {:.4g} s in {} chunks | traffic {:.4g} s | | | | {:.4g} ({:.1f}% of "
                             "compute) |",
                             rank.compute_seconds, rank.chunks, rank.traffic_seconds(), exposed,
                             rank.compute_seconds > 0 ? 100 * exposed / rank.compute_seconds : 0.0));
  return rows;
}

std::string rank_range(int first, int last) {
  return first == last ? std::to_string(first) : fmt::format("{}-{}", first, last);
}

}  // namespace

std::vector<std::string> comm_plan_table(const Config& config, const CommPlan& plan) {
  std::vector<std::string> lines = {assumptions_line(config), moe_layer_line(plan.moe_layer),
                                    "| pipeline ranks | group | traffic | payload | link | GB | seconds | exposed "
                                    "seconds |",
                                    "|---|---|---|---|---|---|---|---|"};
  for (size_t first = 0; first < plan.ranks.size();) {
    std::vector<std::string> rows = rank_rows(plan.ranks[first]);
    size_t last = first;
    while (last + 1 < plan.ranks.size() && rank_rows(plan.ranks[last + 1]) == rows) ++last;
    std::string ranks = rank_range(plan.ranks[first].pipeline_rank, plan.ranks[last].pipeline_rank);
    for (const std::string& row : rows) lines.push_back("| " + ranks + " | " + row);
    first = last + 1;
  }
  return lines;
}

nlohmann::ordered_json comm_plan_json(const Config& config, const CommPlan& plan) {
  const RuntimeConfig& r = config.runtime;
  const MoeLayerCommunication& layer = plan.moe_layer;
  nlohmann::ordered_json json;
  json["assumptions"] = {{"nvlink_gbps", r.nvlink_gbps}, {"infiniband_gbps", r.infiniband_gbps},
                         {"gpus_per_node", r.gpus_per_node}, {"achieved_tflops", r.achieved_tflops}};
  json["moe_layer"] = {{"forward_compute_seconds", layer.forward_compute_seconds},
                       {"forward_seconds", layer.forward_seconds},
                       {"backward_seconds", layer.backward_seconds},
                       {"forward_nvlink_bytes", layer.forward_nvlink_bytes},
                       {"forward_infiniband_bytes", layer.forward_infiniband_bytes},
                       {"forward_ratio", layer.forward_ratio()},
                       {"pair_ratio", layer.pair_ratio()}};
  json["per_pipeline_rank"] = nlohmann::ordered_json::array();
  for (const RankCommunication& rank : plan.ranks) {
    nlohmann::ordered_json entry = {{"pipeline_rank", rank.pipeline_rank},
                                    {"chunks", rank.chunks},
                                    {"compute_seconds", rank.compute_seconds},
                                    {"traffic_seconds", rank.traffic_seconds()},
                                    {"exposed_seconds", rank.exposed_seconds()},
                                    {"traffic", nlohmann::ordered_json::array()}};
    for (const Traffic& t : rank.traffic) {
      entry["traffic"].push_back({{"group", t.group},
                                  {"name", t.name},
                                  {"payload", t.payload},
                                  {"link", to_string(t.link)},
                                  {"nvlink_bytes", t.nvlink_bytes},
                                  {"infiniband_bytes", t.infiniband_bytes},
                                  {"seconds", t.seconds},
                                  {"exposed_seconds", t.exposed_seconds}});
    }
    json["per_pipeline_rank"].push_back(entry);
  }
  return json;
}

}  // namespace hai
