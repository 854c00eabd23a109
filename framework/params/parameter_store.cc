#include "framework/params/parameter_store.h"

#include <cstring>

#include "framework/core/rng.h"
#include "framework/device/cast.h"

namespace hai {

int64_t total_numel(const std::vector<ParameterSpec>& specs) {
  int64_t total = 0;
  for (const ParameterSpec& spec : specs) total += spec.shape.numel();
  return total;
}

uint64_t parameter_stream(const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

namespace {

int64_t trainable_numel(const std::vector<ParameterSpec>& specs) {
  int64_t total = 0;
  for (const ParameterSpec& spec : specs) total += spec.trainable ? spec.shape.numel() : 0;
  return total;
}

}  // namespace

ParameterStore::ParameterStore(std::vector<ParameterSpec> specs, Device device, DType compute_dtype)
    : values_(Shape{total_numel(specs)}, DType::f32, device),
      grads_(Shape{trainable_numel(specs)}, DType::f32, device) {
  if (compute_dtype != DType::f32) compute_values_ = OwnedTensor(values_.shape(), compute_dtype, device);
  Tensor compute_buffer = compute_dtype == DType::f32 ? values() : compute_values_.tensor();
  int64_t offset = 0, grad_offset = 0;
  parameters_.reserve(specs.size());
  for (ParameterSpec& spec : specs) {
    HAI_CHECK(index_by_name_.emplace(spec.name, parameters_.size()).second, "parameter {} declared twice",
              spec.name);
    Parameter parameter;
    int64_t numel = spec.shape.numel();
    parameter.offset = offset;
    parameter.value = values().slice(offset, offset + numel).reshape(spec.shape);
    parameter.compute = compute_buffer.slice(offset, offset + numel).reshape(spec.shape);
    offset += numel;
    if (spec.trainable) {
      parameter.grad_offset = grad_offset;
      parameter.grad = grads().slice(grad_offset, grad_offset + numel).reshape(spec.shape);
      grad_offset += numel;
    }
    parameter.spec = std::move(spec);
    parameters_.push_back(std::move(parameter));
  }
}

void ParameterStore::initialize(uint64_t seed, double init_std) {
  HAI_CHECK(values_.tensor().device().is_cpu(), "initialize runs on host parameters");
  for (Parameter& parameter : parameters_) {
    float* data = parameter.value.data<float>();
    int64_t numel = parameter.value.numel();
    CounterRng rng(seed, parameter_stream(parameter.spec.name));
    for (int64_t i = 0; i < numel; ++i) {
      switch (parameter.spec.init) {
        case ParameterInit::normal:
          data[i] = static_cast<float>(init_std) * rng.normal(static_cast<uint64_t>(i));
          break;
        case ParameterInit::ones: data[i] = 1.0f; break;
        case ParameterInit::zeros: data[i] = 0.0f; break;
      }
    }
  }
}

void ParameterStore::zero_grads() {
  HAI_CHECK(grads_.tensor().device().is_cpu(), "zero_grads on host parameters");
  if (grads_.numel() > 0) std::memset(grads_.tensor().raw(), 0, grads_.tensor().bytes());
}

void ParameterStore::refresh_compute_copy() {
  // NOTE: in fp32 compute_values_ is an empty OwnedTensor, whose rank-0 shape has numel 1, hence raw().
  if (compute_values_.tensor().raw() != nullptr) cast_tensor(compute_values_, values());
}

const Parameter& ParameterStore::operator[](const std::string& name) const {
  auto found = index_by_name_.find(name);
  HAI_CHECK(found != index_by_name_.end(), "no parameter named {}", name);
  return parameters_[found->second];
}

}  // namespace hai
