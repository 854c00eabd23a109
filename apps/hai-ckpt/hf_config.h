#pragma once
// config.json of an HF DeepSeek-V3 export: the fields of the released DeepSeek-V3 config.json
// (DeepseekV3ForCausalLM) filled from a hai-train model config.

#include <nlohmann/json.hpp>

#include "apps/hai-ckpt/hf_layout.h"
#include "framework/config/config.h"

namespace hai {

nlohmann::ordered_json hf_config_json(const ModelConfig& model, HfDtype dtype);

}  // namespace hai
