#pragma once
// The model's RoPE table (mla_rope_settings) on a device: filled on the host once and copied there. Decoder layers
// and MTP modules keep a reference to table(), so it must outlive them and stay where it is (not movable).

#include "framework/config/config.h"
#include "framework/device/rope_table.h"
#include "framework/tensor/tensor.h"

namespace hai {

class ModelRopeTable {
 public:
  ModelRopeTable(const ModelConfig& model, Device device);
  ModelRopeTable(const ModelRopeTable&) = delete;
  ModelRopeTable& operator=(const ModelRopeTable&) = delete;

  const RopeTable& table() const { return table_; }

 private:
  OwnedTensor cos_, sin_;  // [positions, rope_dim / 2] fp32 on the device
  RopeTable table_;        // views of cos_ and sin_
};

}  // namespace hai
