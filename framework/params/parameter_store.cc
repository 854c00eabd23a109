#include "framework/params/parameter_store.h"

#include <algorithm>

#include "framework/core/rng.h"
#include "framework/device/cast.h"
#include "framework/device/cpu/parallel.h"
#include "framework/device/fp8_quantize.h"

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

int64_t blocks(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

// The 128x128 block scales of a [out, in] weight.
int64_t fp8_scale_count(const Shape& shape) { return blocks(shape[0]) * blocks(shape[1]); }

bool has_fp8_copy(const ParameterSpec& spec, const Fp8WeightOptions& fp8) {
  if (!fp8.enabled || !spec.fp8_gemm) return false;
  HAI_CHECK(spec.shape.rank() == 2, "FP8 weight {} must be a matrix, got {}", spec.name, spec.shape.str());
  return true;
}

// Whether the store keeps a compute copy of the parameter apart from its values (not in fp32, where the values are
// the compute copy, nor for an fp8_only parameter with FP8 copies).
bool has_compute_copy(const ParameterSpec& spec, DType compute_dtype, const Fp8WeightOptions& fp8) {
  return compute_dtype != DType::f32 && !(spec.fp8_only && has_fp8_copy(spec, fp8));
}

int64_t compute_copy_numel(const std::vector<ParameterSpec>& specs, DType compute_dtype,
                           const Fp8WeightOptions& fp8) {
  int64_t total = 0;
  for (const ParameterSpec& spec : specs) total += has_compute_copy(spec, compute_dtype, fp8) ? spec.shape.numel() : 0;
  return total;
}

// Elements and scales of every FP8 copy.
struct Fp8Sizes {
  int64_t values = 0, scales = 0;
};

Fp8Sizes fp8_sizes(const std::vector<ParameterSpec>& specs, const Fp8WeightOptions& fp8) {
  Fp8Sizes sizes;
  for (const ParameterSpec& spec : specs) {
    if (!has_fp8_copy(spec, fp8)) continue;
    sizes.values += spec.shape.numel();
    sizes.scales += fp8_scale_count(spec.shape);
  }
  return sizes;
}

Tensor flat_slice(const Tensor& buffer, int64_t offset, Shape shape) {
  return buffer.slice(offset, offset + shape.numel()).reshape(shape);
}

// The elements of the parameters whose values the store holds itself (not sharded masters).
int64_t held_numel(const std::vector<ParameterSpec>& specs, const std::function<bool(const ParameterSpec&)>& sharded) {
  int64_t total = 0;
  for (const ParameterSpec& spec : specs) total += sharded && sharded(spec) ? 0 : spec.shape.numel();
  return total;
}

}  // namespace

ParameterStore::ParameterStore(std::vector<ParameterSpec> specs, Device device, DType compute_dtype,
                               Fp8WeightOptions fp8, const std::function<bool(const ParameterSpec&)>& sharded_master)
    : compute_dtype_(compute_dtype),
      fp8_options_(fp8),
      numel_(total_numel(specs)),
      values_(Shape{held_numel(specs, sharded_master)}, DType::f32, device),
      grads_(zero_tensor(Shape{trainable_numel(specs)}, DType::f32, device)),
      grad_written_(std::make_unique<bool[]>(specs.size())) {
  std::fill(grad_written_.get(), grad_written_.get() + specs.size(), true);  // zero gradients, as written
  if (compute_dtype != DType::f32) {
    compute_values_ = OwnedTensor(Shape{compute_copy_numel(specs, compute_dtype, fp8)}, compute_dtype, device);
  }
  Fp8Sizes fp8_total = fp8_sizes(specs, fp8);
  if (fp8_total.values > 0) {
    fp8_values_ = OwnedTensor(Shape{fp8_total.values}, DType::e4m3, device);
    fp8_transposed_values_ = OwnedTensor(Shape{fp8_total.values}, DType::e4m3, device);
    fp8_scales_ = OwnedTensor(Shape{fp8_total.scales}, DType::f32, device);
    fp8_transposed_scales_ = OwnedTensor(Shape{fp8_total.scales}, DType::f32, device);
  }
  int64_t offset = 0, grad_offset = 0, compute_offset = 0, held_offset = 0;
  Fp8Sizes fp8_offset;
  parameters_.reserve(specs.size());
  for (ParameterSpec& spec : specs) {
    HAI_CHECK(index_by_name_.emplace(spec.name, parameters_.size()).second, "parameter {} declared twice",
              spec.name);
    Parameter parameter;
    int64_t numel = spec.shape.numel();
    parameter.offset = offset;
    bool staged = sharded_master && sharded_master(spec);
    HAI_CHECK(!staged || (spec.trainable && compute_dtype != DType::f32 && offset == grad_offset),
              "parameter {}: only a trainable parameter in mixed precision, placed before every non-trainable one, "
              "may keep its fp32 master in shards", spec.name);
    // NOTE: a staged value is its gradient's view (the class comment).
    parameter.sharded_master = staged;
    int64_t buffer_offset = staged ? grad_offset : held_offset;
    parameter.value = flat_slice(staged ? grads() : values(), buffer_offset, spec.shape);
    const ValueRun* last = value_runs_.empty() ? nullptr : &value_runs_.back();
    bool continues_values = last != nullptr && last->staged == staged &&
                            last->buffer_begin + (offset - last->value_begin) == buffer_offset;
    if (!continues_values) value_runs_.push_back({offset, offset, staged, buffer_offset});
    value_runs_.back().value_end += numel;
    if (!staged) held_offset += numel;
    parameter.compute_dtype = compute_dtype;
    if (compute_dtype == DType::f32) {
      parameter.compute = parameter.value;
    } else if (has_compute_copy(spec, compute_dtype, fp8)) {
      parameter.compute = flat_slice(compute_values_, compute_offset, spec.shape);
      bool continues_run = !compute_runs_.empty() && compute_runs_.back().value_end == offset;
      if (!continues_run) compute_runs_.push_back({offset, offset, compute_offset});
      compute_runs_.back().value_end += numel;
      compute_offset += numel;
    }
    offset += numel;
    if (spec.trainable) {
      parameter.grad_offset = grad_offset;
      parameter.grad = flat_slice(grads(), grad_offset, spec.shape);
      parameter.grad_written_ = &grad_written_[parameters_.size()];
      grad_offset += numel;
    }
    if (has_fp8_copy(spec, fp8)) {
      const Shape& shape = spec.shape;
      Shape transposed{shape[1], shape[0]};
      parameter.fp8 = {.values = flat_slice(fp8_values_, fp8_offset.values, shape),
                       .scales = flat_slice(fp8_scales_, fp8_offset.scales, {blocks(shape[0]), blocks(shape[1])}),
                       .transposed_values = flat_slice(fp8_transposed_values_, fp8_offset.values, transposed),
                       .transposed_scales = flat_slice(fp8_transposed_scales_, fp8_offset.scales,
                                                       {blocks(shape[1]), blocks(shape[0])}),
                       .pow2_activation_scales = fp8.pow2_activation_scales};
      fp8_offset.values += numel;
      fp8_offset.scales += fp8_scale_count(shape);
    }
    parameter.spec = std::move(spec);
    parameters_.push_back(std::move(parameter));
  }
  fp8_weights_ = fp8_weight_batch([](const Parameter&) { return true; });
}

Fp8WeightBatch ParameterStore::fp8_weight_batch(const std::function<bool(const Parameter&)>& include) const {
  std::vector<Fp8WeightCopy> fp8_copies;
  for (const Parameter& parameter : parameters_) {
    if (!parameter.fp8.defined() || !include(parameter)) continue;
    const Fp8Weight& fp8_copy = parameter.fp8;
    fp8_copies.push_back({parameter.value, fp8_copy.values, fp8_copy.scales, fp8_copy.transposed_values,
                          fp8_copy.transposed_scales});
  }
  return Fp8WeightBatch(std::move(fp8_copies));
}

namespace {

// The index in the global tensor (row-major) of element `index` of the box of `extents` at box.offsets.
int64_t global_index(int64_t index, const Shape& extents, const GlobalBox& box) {
  int64_t global = 0, stride = 1;
  for (int dim = extents.rank() - 1; dim >= 0; --dim) {
    int64_t coordinate = index % extents[dim] + box.offsets[static_cast<size_t>(dim)];
    index /= extents[dim];
    global += coordinate * stride;
    stride *= box.global_shape[dim];
  }
  return global;
}

}  // namespace

void ParameterStore::initialize(uint64_t seed, double init_std,
                                const std::function<std::optional<GlobalBox>(const Parameter&)>& box_of) {
  // NOTE: the draws are made on the host; device values are filled from a host copy of each parameter.
  bool on_host = values_.tensor().device().is_cpu();
  for (Parameter& parameter : parameters_) {
    OwnedTensor host_value = on_host ? OwnedTensor() : OwnedTensor(parameter.spec.shape, DType::f32);
    float* data = on_host ? parameter.value.data<float>() : host_value.data<float>();
    int64_t numel = parameter.value.numel();
    CounterRng rng(seed, parameter_stream(parameter.spec.name));
    ParameterInit init = parameter.spec.init;
    std::optional<GlobalBox> box = box_of ? box_of(parameter) : std::nullopt;
    // NOTE: the draw of element i depends on i only (counter-based), so the values are the same for any split.
    cpu::parallel_for(numel, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        switch (init) {
          case ParameterInit::normal:
            data[i] = static_cast<float>(init_std) *
                      rng.normal(static_cast<uint64_t>(box ? global_index(i, parameter.spec.shape, *box) : i));
            break;
          case ParameterInit::ones: data[i] = 1.0f; break;
          case ParameterInit::zeros: data[i] = 0.0f; break;
        }
      }
    });
    if (!on_host) copy_tensor(parameter.value, host_value);
  }
}

float Parameter::take_grad_beta() const {
  HAI_CHECK(grad_written_ != nullptr, "parameter {} is not trainable: it has no gradient", spec.name);
  bool first = !*grad_written_;
  *grad_written_ = true;
  return first ? 0.0f : 1.0f;
}

const Tensor& Parameter::grad_to_add_to(Stream stream) const {
  if (take_grad_beta() == 0.0f) zero_fill(grad, stream);
  return grad;
}

void ParameterStore::zero_grads() {
  std::fill(grad_written_.get(), grad_written_.get() + parameters_.size(), false);
}

void ParameterStore::zero_unwritten_grads(Stream stream) { zero_unwritten_grads(0, grads_.numel(), stream); }

void ParameterStore::zero_unwritten_grads(int64_t grad_begin, int64_t grad_end, Stream stream) {
  // NOTE: adjacent unwritten gradients are filled as one run (another pipeline stage's are thousands).
  int64_t run_begin = -1, run_end = -1;  // the pending run of grads(), none while negative
  auto fill_run = [&] {
    if (run_begin >= 0) zero_fill(grads().slice(run_begin, run_end), stream);
    run_begin = run_end = -1;
  };
  for (const Parameter& parameter : parameters_) {
    if (parameter.grad_written_ == nullptr) continue;  // no gradient: its neighbours' stay adjacent
    int64_t begin = parameter.grad_offset, end = begin + parameter.grad.numel();
    if (*parameter.grad_written_ || end <= grad_begin || grad_end <= begin) {
      fill_run();
      continue;
    }
    *parameter.grad_written_ = true;
    if (begin != run_end) {
      fill_run();
      run_begin = begin;
    }
    run_end = end;
  }
  fill_run();
}

void ParameterStore::refresh_compute_copy() {
  refresh_compute_copy(0, numel());
  refresh_fp8_copies();
}

void ParameterStore::refresh_compute_copy(int64_t value_begin, int64_t value_end) {
  HAI_CHECK(0 <= value_begin && value_begin <= value_end && value_end <= numel(),
            "compute copy refresh of values [{}, {}) outside the {} values", value_begin, value_end, numel());
  // NOTE: one cast per run of compute copies and values (one run unless fp8_only parameters or sharded masters cut
  // it); none in fp32.
  for (const ComputeRun& run : compute_runs_) {
    for (const ValueRun& values_run : value_runs_) {
      int64_t begin = std::max({value_begin, run.value_begin, values_run.value_begin});
      int64_t end = std::min({value_end, run.value_end, values_run.value_end});
      if (begin >= end) continue;
      int64_t compute_begin = run.compute_begin + (begin - run.value_begin);
      cast_tensor(compute_values_.tensor().slice(compute_begin, compute_begin + (end - begin)), values(begin, end));
    }
  }
}

void ParameterStore::read_values(const Tensor& whole) const {
  HAI_CHECK(whole.numel() == numel(), "the store's {} values read into {}", numel(), whole.str());
  for (const ValueRun& run : value_runs_) {
    copy_tensor(whole.slice(run.value_begin, run.value_end), values(run.value_begin, run.value_end));
  }
}

void ParameterStore::write_values(const Tensor& whole) {
  HAI_CHECK(whole.numel() == numel(), "the store's {} values written from {}", numel(), whole.str());
  for (const ValueRun& run : value_runs_) {
    copy_tensor(values(run.value_begin, run.value_end), whole.slice(run.value_begin, run.value_end));
  }
}

Tensor ParameterStore::values(int64_t value_begin, int64_t value_end) const {
  HAI_CHECK(0 <= value_begin && value_begin <= value_end && value_end <= numel(),
            "values [{}, {}) outside the {} values", value_begin, value_end, numel());
  if (value_begin == value_end) return values().slice(0, 0);
  for (const ValueRun& run : value_runs_) {
    if (run.value_end <= value_begin) continue;
    HAI_CHECK(run.value_begin <= value_begin && value_end <= run.value_end,
              "values [{}, {}) do not lie in one piece (held and staged sharded masters)", value_begin, value_end);
    int64_t begin = run.buffer_begin + (value_begin - run.value_begin);
    return (run.staged ? grads() : values()).slice(begin, begin + (value_end - value_begin));
  }
  HAI_THROW("values [{}, {}) past the last parameter", value_begin, value_end);
}

const ParameterStore::ComputeRun* ParameterStore::first_compute_run(int64_t value_begin, int64_t value_end) const {
  for (const ComputeRun& run : compute_runs_) {
    if (run.value_begin < value_end && value_begin < run.value_end) return &run;
  }
  return nullptr;
}

Tensor ParameterStore::compute_values(int64_t value_begin, int64_t value_end) const {
  HAI_CHECK(0 <= value_begin && value_begin <= value_end && value_end <= numel(),
            "compute copy of values [{}, {}) outside the {} values", value_begin, value_end, numel());
  const ComputeRun* run = first_compute_run(value_begin, value_end);
  if (run == nullptr) return Tensor();
  HAI_CHECK(compute_copy_in_one_piece(value_begin, value_end),
            "values [{}, {}) have a compute copy only in part, or not in one piece", value_begin, value_end);
  int64_t compute_begin = run->compute_begin + (value_begin - run->value_begin);
  return compute_values_.tensor().slice(compute_begin, compute_begin + (value_end - value_begin));
}

bool ParameterStore::compute_copy_in_one_piece(int64_t value_begin, int64_t value_end) const {
  const ComputeRun* run = first_compute_run(value_begin, value_end);
  return run == nullptr || (run->value_begin <= value_begin && value_end <= run->value_end);
}

void ParameterStore::refresh_fp8_copies() { fp8_weights_.quantize(); }

const Parameter& ParameterStore::operator[](const std::string& name) const {
  auto found = index_by_name_.find(name);
  HAI_CHECK(found != index_by_name_.end(), "no parameter named {}", name);
  return parameters_[found->second];
}

}  // namespace hai
