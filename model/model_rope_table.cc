#include "model/model_rope_table.h"

#include "model/mla_attention.h"

namespace hai {

ModelRopeTable::ModelRopeTable(const ModelConfig& model, Device device) {
  RopeSettings settings = mla_rope_settings(model);
  Shape table_shape{settings.max_positions, settings.rope_dim / 2};
  OwnedTensor host_cos(table_shape, DType::f32), host_sin(table_shape, DType::f32);  // [positions, rope_dim / 2]
  fill_rope_table(RopeTable{host_cos, host_sin}, settings);
  cos_ = OwnedTensor(table_shape, DType::f32, device);
  sin_ = OwnedTensor(table_shape, DType::f32, device);
  copy_tensor(cos_, host_cos);
  copy_tensor(sin_, host_sin);
  table_ = RopeTable{cos_, sin_};
}

}  // namespace hai
