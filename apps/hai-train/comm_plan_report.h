#pragma once
// hai-train --dry-run's view of the communication plan (model/comm_plan.h): a plain-text table, one row per
// traffic of each pipeline rank (consecutive ranks with the same rows share them), and the same numbers as JSON.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/config/config.h"
#include "model/comm_plan.h"

namespace hai {

// The table's lines, without '\n': the assumptions, the MoE layer's computation-to-communication ratio, then a
// markdown table (pipeline ranks | group | traffic | payload | link | GB | seconds | exposed seconds) with a summary
// row per pipeline rank.
std::vector<std::string> comm_plan_table(const Config& config, const CommPlan& plan);

// {"assumptions": {...}, "moe_layer": {...}, "per_pipeline_rank": [{"pipeline_rank", "compute_seconds", "chunks",
// "traffic_seconds", "exposed_seconds", "traffic": [{"group", "name", "payload", "link", "nvlink_bytes",
// "infiniband_bytes", "seconds", "exposed_seconds"}]}]}
nlohmann::ordered_json comm_plan_json(const Config& config, const CommPlan& plan);

}  // namespace hai
