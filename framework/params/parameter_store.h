#pragma once
// ParameterStore: all parameters of a rank in flat contiguous buffers: FP32 master values [N], FP32 gradients
// [N_trainable], and the compute copy [N] that GEMMs read (bf16 or fp16 in mixed precision, refreshed once per
// step from the master values; in fp32 it is the master buffer itself). With FP8 weights (precision.mode fp8),
// every parameter whose spec says fp8_gemm is also kept quantised in 128x128 blocks, as stored and transposed
// (forward and dgrad read one each, framework/device/fp8_gemm.h), refreshed with the compute copy: weights are
// quantised once per step, not per micro-batch. A parameter whose spec also says fp8_only then has no compute copy
// (its GEMMs read only the FP8 copies): the compute buffer holds the other parameters, in value order, so it is
// smaller than the values by those parameters. Each parameter is a view into these buffers. Initialisation is a
// pure function of (seed, parameter name, element index) through the counter RNG, so any layout of the same model
// starts from the same values.
//
// Gradients are written, not zero-filled then added to: zero_grads() only marks every gradient unwritten, the
// step's first producer of a parameter's gradient overwrites it (Parameter::take_grad_beta: a GEMM with beta 0)
// and the later ones (later micro-batches, a second producer such as MTP's shared embedding) add to it. Before
// anything reads the gradients (a reduction, the norm, the optimizer, a test), zero_unwritten_grads() zero-fills
// those that no producer wrote (parameters of another pipeline stage, say): only those. A new store's gradients are
// zero and count as written (a test may fill them by hand).
//
// Sharded masters (ZeRO-1 as DeepSeek-V3 runs it, parallel/zero1.h): the trainable parameters that the
// `sharded_master` predicate picks keep their fp32 master in the optimizer's shards, not here: the store allocates
// no values for them, and their `value` aliases their gradient, where the optimizer stages the whole fp32 values
// when something needs them (after each step's gather, Zero1Optimizer::gather_master_values, and initialize(),
// which leaves them there for the optimizer to take): valid from then until the next backward writes gradients.
// Only in mixed precision (in fp32 the values are the compute copy); such a store's trainable parameters must come
// before the others (zero1_store_order), so that a parameter's value offset is its gradient offset.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/device/fp8_weight_batch.h"
#include "framework/params/parameter_spec.h"
#include "framework/tensor/tensor.h"

namespace hai {

// A weight [out, in] quantised for FP8 GEMMs; undefined views when the parameter has no FP8 copy.
struct Fp8Weight {
  Tensor values;             // [out, in] e4m3
  Tensor scales;             // [ceil(out / 128), ceil(in / 128)] fp32
  Tensor transposed_values;  // [in, out] e4m3
  Tensor transposed_scales;  // [ceil(in / 128), ceil(out / 128)] fp32
  // How the GEMMs that read this weight quantise their activations (precision.fp8.pow2_scales).
  bool pow2_activation_scales = false;

  bool defined() const { return values.raw() != nullptr; }
};

struct Fp8WeightOptions {
  bool enabled = false;  // keep FP8 copies of the fp8_gemm parameters
  bool pow2_activation_scales = false;
};

struct Parameter {
  // For a producer of one of the step's contributions to grad: the beta of its GEMM, grad = product + beta * grad.
  // 0 for the step's first contribution (grad is overwritten: it holds anything until then), 1 for the later ones
  // (they add). Marks the gradient written. Only for trainable parameters.
  float take_grad_beta() const;
  // grad, zero-filled first when nothing wrote it this step (then marked written): for a producer that can only
  // add to it (a scatter-add). Only for trainable parameters.
  const Tensor& grad_to_add_to(Stream stream = {}) const;

  ParameterSpec spec;
  int64_t offset = 0;       // into the value buffer, in elements
  int64_t grad_offset = -1;  // into the gradient buffer; -1 for non-trainable parameters
  Tensor value;             // spec.shape, fp32
  Tensor compute;           // spec.shape, the compute dtype (aliases value in fp32); undefined for an fp8_only
                            // parameter with FP8 copies
  DType compute_dtype = DType::f32;  // the store's compute dtype (also for a parameter without a compute copy)
  Tensor grad;              // spec.shape, fp32; undefined for non-trainable parameters; see take_grad_beta()
  Fp8Weight fp8;            // defined with FP8 weights enabled and spec.fp8_gemm
  bool sharded_master = false;  // value aliases grad: the fp32 master is kept in shards (ParameterStore)

 private:
  friend class ParameterStore;
  // Whether grad was written since ParameterStore::zero_grads(): the store's flag of this parameter (null for
  // non-trainable ones), shared by copies of the view.
  bool* grad_written_ = nullptr;
};

// Where a parameter's values sit in its global tensor when the store holds one box of it (tensor parallelism):
// the global shape and the box's first index in each dim.
struct GlobalBox {
  Shape global_shape;
  std::vector<int64_t> offsets;
};

class ParameterStore {
 public:
  ParameterStore(std::vector<ParameterSpec> specs, Device device, DType compute_dtype = DType::f32,
                 Fp8WeightOptions fp8 = {}, const std::function<bool(const ParameterSpec&)>& sharded_master = {});

  // Fills every value from its init rule: normal draws use CounterRng(seed, stream = hash of the name), element i
  // of the global tensor drawing counter i (the sharded masters' where they are staged, above). box_of (optional)
  // tells where a parameter's values sit in its global tensor, so that a box gets the values of the same elements of
  // the whole tensor.
  void initialize(uint64_t seed, double init_std,
                  const std::function<std::optional<GlobalBox>(const Parameter&)>& box_of = nullptr);
  // Starts a step's gradients at zero without a memory pass: marks every gradient unwritten, so that its first
  // producer overwrites it (Parameter::take_grad_beta).
  void zero_grads();
  // Zero-fills the gradients that nothing wrote since zero_grads() and marks them written: call before reading
  // gradients. The range form covers the parameters whose gradients overlap [grad_begin, grad_end) of grads().
  void zero_unwritten_grads(Stream stream = {});
  void zero_unwritten_grads(int64_t grad_begin, int64_t grad_end, Stream stream = {});
  // Rounds the master values into the compute copy (a no-op in fp32) and quantises the FP8 copies. Call after
  // every change of the values.
  void refresh_compute_copy();
  // The compute copy of values [value_begin, value_end) only (a no-op in fp32 and for values without a compute
  // copy), for an update that changed those.
  void refresh_compute_copy(int64_t value_begin, int64_t value_end);
  // The FP8 copies only (none without FP8 weights).
  void refresh_fp8_copies();
  // The FP8 copies of the parameters `include` picks, as a batch whose quantize(stream) refreshes only those: for
  // an update that changed only their values (a batch holds views: it must not outlive the store).
  Fp8WeightBatch fp8_weight_batch(const std::function<bool(const Parameter&)>& include) const;

  const Parameter& operator[](const std::string& name) const;
  const std::vector<Parameter>& parameters() const { return parameters_; }
  // Whether FP8 training is on (FP8 copies kept) and how activations are scaled, for layers that quantise without
  // an FP8 weight of their own (the routed rows before the experts).
  const Fp8WeightOptions& fp8_options() const { return fp8_options_; }
  DType compute_dtype() const { return compute_dtype_; }  // of every compute copy (fp32: the values)
  // [N_held] fp32: the values the store holds itself, in value order: every parameter's ([N]) but the sharded
  // masters' (above).
  Tensor values() const { return values_.tensor(); }
  // [value_end - value_begin] fp32: values [value_begin, value_end) (ParameterSpec offsets into the [N] values of
  // every parameter), held or staged; throws unless they lie in one piece of one buffer.
  Tensor values(int64_t value_begin, int64_t value_end) const;
  bool has_sharded_masters() const { return values_.numel() != numel(); }
  // Every parameter's value (held, or staged: valid only where the sharded masters are staged) into `whole`, or
  // from it: [N] fp32 in value order, on any device.
  void read_values(const Tensor& whole) const;
  void write_values(const Tensor& whole);
  Tensor grads() const { return grads_.tensor(); }    // [N_trainable] fp32
  // [N_compute] the compute dtype, the compute copies of every parameter that has one, in value order (N_compute
  // = N unless some have none); undefined in fp32 (the values are the compute copy).
  Tensor compute_values() const { return compute_values_.tensor(); }
  // [value_end - value_begin] the compute copy of values [value_begin, value_end), for an optimizer that writes
  // it as it updates those values (fused_adamw.h) and saves the refresh; undefined when none of them has one
  // (or in fp32). Throws when some of them have one and some not.
  Tensor compute_values(int64_t value_begin, int64_t value_end) const;
  // Whether compute_values(value_begin, value_end) is defined or undefined without throwing: the compute copies
  // of those values are one piece, or there are none.
  bool compute_copy_in_one_piece(int64_t value_begin, int64_t value_end) const;
  int64_t numel() const { return numel_; }  // N: every parameter's elements

 private:
  std::vector<Parameter> parameters_;
  DType compute_dtype_;
  Fp8WeightOptions fp8_options_;
  std::unordered_map<std::string, size_t> index_by_name_;
  int64_t numel_ = 0;
  OwnedTensor values_;  // [N_held]
  // Where the values lie: runs of values contiguous in one buffer (values_, or grads_ where staged), in value order.
  struct ValueRun {
    int64_t value_begin = 0, value_end = 0;
    bool staged = false;      // in grads_ (a sharded master), else in values_
    int64_t buffer_begin = 0;  // of value_begin's element
  };
  std::vector<ValueRun> value_runs_;
  OwnedTensor grads_;
  std::unique_ptr<bool[]> grad_written_;  // one flag per parameter (Parameter::grad_written_), a stable address
  OwnedTensor compute_values_;  // empty when the compute dtype is fp32
  // Where the compute copy lies: runs of values whose compute copies are contiguous, in value order.
  struct ComputeRun {
    int64_t value_begin = 0, value_end = 0;
    int64_t compute_begin = 0;  // into compute_values_, of value_begin's element
  };
  std::vector<ComputeRun> compute_runs_;
  // The first run holding a compute copy of some of values [value_begin, value_end), or null.
  const ComputeRun* first_compute_run(int64_t value_begin, int64_t value_end) const;
  // The FP8 copies, empty without FP8 weights: values [N_fp8] e4m3 and scales [S_fp8] fp32, as stored and transposed.
  OwnedTensor fp8_values_, fp8_transposed_values_;
  OwnedTensor fp8_scales_, fp8_transposed_scales_;
  // Every FP8 copy's quantisation from its master values (exact scales: precision.fp8.pow2_scales applies to
  // activations only), run by refresh_fp8_copies.
  Fp8WeightBatch fp8_weights_;
};

// The RNG stream of a parameter: a stable 64-bit hash (FNV-1a) of its name.
uint64_t parameter_stream(const std::string& name);

}  // namespace hai
