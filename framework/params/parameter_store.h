#pragma once
// ParameterStore: all parameters of a rank in flat contiguous buffers: FP32 master values [N], FP32 gradients
// [N_trainable], and the compute copy [N] that GEMMs read (bf16 or fp16 in mixed precision, refreshed once per
// step from the master values; in fp32 it is the master buffer itself). Each parameter is a view into them. Initialisation is a pure function of (seed, parameter name,
// element index) through the counter RNG, so any layout of the same model starts from the same values.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/params/parameter_spec.h"
#include "framework/tensor/tensor.h"

namespace hai {

struct Parameter {
  ParameterSpec spec;
  int64_t offset = 0;       // into the value buffer, in elements
  int64_t grad_offset = -1;  // into the gradient buffer; -1 for non-trainable parameters
  Tensor value;             // spec.shape, fp32
  Tensor compute;           // spec.shape, the compute dtype (aliases value in fp32)
  Tensor grad;              // spec.shape, fp32; undefined for non-trainable parameters
};

class ParameterStore {
 public:
  ParameterStore(std::vector<ParameterSpec> specs, Device device, DType compute_dtype = DType::f32);

  // Fills every value from its init rule: normal draws use CounterRng(seed, stream = hash of the name).
  void initialize(uint64_t seed, double init_std);
  void zero_grads();
  // Rounds the master values into the compute copy (a no-op in fp32). Call after every change of the values.
  void refresh_compute_copy();

  const Parameter& operator[](const std::string& name) const;
  const std::vector<Parameter>& parameters() const { return parameters_; }
  Tensor values() const { return values_.tensor(); }  // [N] fp32, every parameter
  Tensor grads() const { return grads_.tensor(); }    // [N_trainable] fp32
  int64_t numel() const { return values_.numel(); }

 private:
  std::vector<Parameter> parameters_;
  std::unordered_map<std::string, size_t> index_by_name_;
  OwnedTensor values_;
  OwnedTensor grads_;
  OwnedTensor compute_values_;  // empty when the compute dtype is fp32
};

// The RNG stream of a parameter: a stable 64-bit hash (FNV-1a) of its name.
uint64_t parameter_stream(const std::string& name);

}  // namespace hai
