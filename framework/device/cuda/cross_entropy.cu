#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

// One block of kRowThreads per row. Thread t takes float4 t, t + kRowThreads, ... of the row's 16-byte-aligned body
// and, for t < 6, one class of the row's unaligned edges. A row of up to kHeldClasses classes is held in registers
// (kHeldVectors float4 a thread) and read once; a longer one is streamed, kStreamBatch float4 a thread at a time.
constexpr int kRowThreads = 512;
constexpr int kHeldVectors = 16;
constexpr int64_t kHeldClasses = int64_t{4} * kRowThreads * kHeldVectors;  // 32768
constexpr int kStreamBatch = 4;

// A row [classes] split for 16-byte accesses: `head` classes before its first 16-byte boundary, `vectors` float4,
// then `tail` classes. The head and the tail are the row's edges (at most 6 classes).
struct RowLayout {
  int head;
  int64_t vectors;
  int tail;

  __device__ int edges() const { return head + tail; }
  __device__ int64_t vector_class(int64_t i) const { return head + 4 * i; }  // the first class of float4 i
  __device__ int64_t edge_class(int e) const { return e < head ? e : 4 * vectors + e; }  // e < edges()
  // The thread that takes class v.
  __device__ int64_t taker(int64_t v) const {
    int64_t in_body = v - head;
    if (in_body >= 0 && in_body < 4 * vectors) return in_body / 4 % kRowThreads;
    return v < head ? v : v - 4 * vectors;
  }
};

__device__ RowLayout layout_of(const float* row, int64_t classes) {
  auto misalignment = static_cast<int64_t>(reinterpret_cast<uintptr_t>(row) / sizeof(float) % 4);
  int64_t head = min((4 - misalignment) % 4, classes);
  return {static_cast<int>(head), (classes - head) / 4, static_cast<int>((classes - head) % 4)};
}

__device__ const float4* body_of(const float* row, const RowLayout& layout) {
  return reinterpret_cast<const float4*>(row + layout.head);
}

// The logits of a class beyond the row (or of no edge): they leave the maximum and the sum as they are.
__device__ float4 no_logits() { return make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }

__device__ float max_of(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }
__device__ float sum_of(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// exp(logit - maximum) as 2^(logit log2(e) + shift), shift = -maximum log2(e): one FMA and one MUFU.EX2 instead of
// expf's ten instructions. NOTE: ~2e-7 relative error near the maximum, ~1e-6 at 2^-40 of it. The rounding of shift
// scales every exponential of the row alike: the probabilities cancel it, the loss moves by at most 6e-8 |maximum|
// nats (as much as the loss's own rounding).
constexpr float kLog2e = 1.44269504f;
__device__ float shift_of(float maximum) { return -maximum * kLog2e; }
__device__ float exponential(float logit, float shift) { return exp2f(fmaf(logit, kLog2e, shift)); }
__device__ float4 exponentials(float4 logits, float shift) {
  return make_float4(exponential(logits.x, shift), exponential(logits.y, shift), exponential(logits.z, shift),
                     exponential(logits.w, shift));
}

// The max of `value` over the block, returned to every thread. scratch: 32 floats of shared memory that no thread
// has used yet (block_sum, which begins with a barrier, may use it next).
__device__ float block_max(float value, float* scratch) {
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < kRowThreads / 32 ? scratch[lane] : -INFINITY;
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// max_v logits[v] and sum_v exponential(logits[v], shift) of a row, the same in every thread of its block.
struct RowSoftmax {
  float maximum;
  float shift;  // shift_of(maximum)
  float sum;
};

// The softmax of a row from the threads' partial maxima, and their partial sums given the shift: the row's one
// reduction, shared by the forward and the backward (so their losses are the same bits).
template <typename PartialSum>
__device__ RowSoftmax reduce_row(float thread_maximum, PartialSum thread_sum, float* scratch) {
  float maximum = block_max(thread_maximum, scratch);
  float shift = shift_of(maximum);
  return {maximum, shift, block_sum(thread_sum(shift), scratch)};
}

__device__ float loss_of(RowSoftmax softmax, float target_logit) {
  return logf(softmax.sum) + softmax.maximum - target_logit;
}

// d_logits[v] = (exp(logits[v] - maximum) / sum - onehot(target)[v]) * scale: exponential * probability_scale,
// less scale at the target, which the thread that takes the target writes again after its share of the row.
struct GradientRow {
  float shift;
  float probability_scale;  // scale / sum
  int64_t target;
  float target_gradient;

  __device__ GradientRow(const RowSoftmax& softmax, int32_t target_class, float target_logit, float scale)
      : shift(softmax.shift),
        probability_scale(scale / softmax.sum),
        target(target_class),
        target_gradient(fmaf(exponential(target_logit, softmax.shift), probability_scale, -scale)) {}

  __device__ float4 of_exponentials(float4 e) const {
    return make_float4(e.x * probability_scale, e.y * probability_scale, e.z * probability_scale,
                       e.w * probability_scale);
  }
};

// Whether d_row's body (the classes of the logits' body) takes 16-byte fp32 / 8-byte bf16 stores.
template <typename Gradient>
__device__ bool vector_stores(const Gradient* d_row, const RowLayout& layout) {
  return reinterpret_cast<uintptr_t>(d_row + layout.head) % (4 * sizeof(Gradient)) == 0;
}

// Four values to out[0 .. 3]: one store when `aligned` (as vector_stores says), else four.
// NOTE: __stcg (st.global.cg, which caches in L2 as a plain store does) because the compiler split plain vector
// stores into scalar ones.
__device__ void store4(float* out, float4 values, bool aligned) {
  if (aligned) {
    __stcg(reinterpret_cast<float4*>(out), values);
    return;
  }
  out[0] = values.x, out[1] = values.y, out[2] = values.z, out[3] = values.w;
}
__device__ void store4(__nv_bfloat16* out, float4 values, bool aligned) {
  __nv_bfloat162 low = __floats2bfloat162_rn(values.x, values.y);
  __nv_bfloat162 high = __floats2bfloat162_rn(values.z, values.w);
  if (aligned) {
    __stcg(reinterpret_cast<uint2*>(out),
           make_uint2(*reinterpret_cast<uint32_t*>(&low), *reinterpret_cast<uint32_t*>(&high)));
    return;
  }
  out[0] = low.x, out[1] = low.y, out[2] = high.x, out[3] = high.y;
}

// The block's share of a row held in registers, read once: float4 threadIdx.x + k * kRowThreads of the body in
// vectors[k] and an edge class (-inf beyond the row).
class HeldRow {
 public:
  __device__ HeldRow(const float* row, const RowLayout& layout) : layout_(layout) {
    const float4* body = body_of(row, layout);
#pragma unroll
    for (int k = 0; k < kHeldVectors; ++k) {
      int i = threadIdx.x + k * kRowThreads;
      vectors_[k] = i < layout.vectors ? body[i] : no_logits();
    }
    edge_ = threadIdx.x < layout.edges() ? row[layout.edge_class(threadIdx.x)] : -INFINITY;
  }

  // The row's softmax; the held logits become their exponentials.
  __device__ RowSoftmax softmax(float* scratch) {
    float maximum = edge_;
#pragma unroll
    for (int k = 0; k < kHeldVectors; ++k) maximum = fmaxf(maximum, max_of(vectors_[k]));
    return reduce_row(
        maximum,
        [&](float shift) {
          float sum = 0.0f;
#pragma unroll
          for (int k = 0; k < kHeldVectors; ++k) {
            vectors_[k] = exponentials(vectors_[k], shift);
            sum += sum_of(vectors_[k]);
          }
          edge_ = exponential(edge_, shift);
          return sum + edge_;
        },
        scratch);
  }

  // After softmax().
  template <typename Gradient>
  __device__ void write_gradients(Gradient* d_row, bool aligned, const GradientRow& gradient) const {
#pragma unroll
    for (int k = 0; k < kHeldVectors; ++k) {
      int i = threadIdx.x + k * kRowThreads;
      if (i >= layout_.vectors) break;
      store4(d_row + layout_.vector_class(i), gradient.of_exponentials(vectors_[k]), aligned);
    }
    if (threadIdx.x < layout_.edges()) {
      store(d_row + layout_.edge_class(threadIdx.x), edge_ * gradient.probability_scale);
    }
    if (threadIdx.x == layout_.taker(gradient.target)) store(d_row + gradient.target, gradient.target_gradient);
  }

 private:
  RowLayout layout_;
  float4 vectors_[kHeldVectors];
  float edge_;
};

// Calls visit(i, body[i]) for the thread's float4 i < count, reading kStreamBatch of them before visiting any.
// NOTE: a float4 that visit writes to d_logits (which may alias the logits) is one that this thread has read.
template <typename Visit>
__device__ void stream_body(const float4* body, int64_t count, Visit visit) {
  for (int64_t first = threadIdx.x; first < count; first += int64_t{kStreamBatch} * kRowThreads) {
    float4 batch[kStreamBatch];
#pragma unroll
    for (int b = 0; b < kStreamBatch; ++b) {
      int64_t i = first + b * kRowThreads;
      batch[b] = i < count ? body[i] : no_logits();
    }
#pragma unroll
    for (int b = 0; b < kStreamBatch; ++b) {
      int64_t i = first + b * kRowThreads;
      if (i < count) visit(i, batch[b]);
    }
  }
}

// The block's share of a row too long to hold, read again by each pass (the same classes as HeldRow's, in the same
// order, kStreamBatch float4 at a time).
class StreamedRow {
 public:
  __device__ StreamedRow(const float* row, const RowLayout& layout)
      : body_(body_of(row, layout)),
        layout_(layout),
        edge_(threadIdx.x < layout.edges() ? row[layout.edge_class(threadIdx.x)] : -INFINITY) {}

  __device__ RowSoftmax softmax(float* scratch) const {
    float maximum = edge_;
    stream_body(body_, layout_.vectors, [&](int64_t, float4 logits) { maximum = fmaxf(maximum, max_of(logits)); });
    return reduce_row(
        maximum,
        [&](float shift) {
          float sum = 0.0f;
          stream_body(body_, layout_.vectors,
                      [&](int64_t, float4 logits) { sum += sum_of(exponentials(logits, shift)); });
          return sum + exponential(edge_, shift);
        },
        scratch);
  }

  template <typename Gradient>
  __device__ void write_gradients(Gradient* d_row, bool aligned, const GradientRow& gradient) const {
    stream_body(body_, layout_.vectors, [&](int64_t i, float4 logits) {
      store4(d_row + layout_.vector_class(i), gradient.of_exponentials(exponentials(logits, gradient.shift)),
             aligned);
    });
    if (threadIdx.x < layout_.edges()) {
      store(d_row + layout_.edge_class(threadIdx.x), exponential(edge_, gradient.shift) * gradient.probability_scale);
    }
    if (threadIdx.x == layout_.taker(gradient.target)) store(d_row + gradient.target, gradient.target_gradient);
  }

 private:
  const float4* body_;
  RowLayout layout_;
  float edge_;
};

// Every value of d_row set to `value`.
template <typename Gradient>
__device__ void fill_row(Gradient* d_row, const RowLayout& layout, bool aligned, float value) {
  float4 values = make_float4(value, value, value, value);
  for (int64_t i = threadIdx.x; i < layout.vectors; i += kRowThreads) {
    store4(d_row + layout.vector_class(i), values, aligned);
  }
  if (threadIdx.x < layout.edges()) store(d_row + layout.edge_class(threadIdx.x), value);
}

__device__ bool is_class(int32_t target, int64_t classes) { return target >= 0 && target < classes; }

// The loss and the gradients of a row whose target is not a class: 0 if ignored, else NaN (ignore_index is never a
// class).
__device__ float without_class(int32_t target, int32_t ignore_index) { return target == ignore_index ? 0.0f : NAN; }

// Row: HeldRow or StreamedRow.
template <typename Row>
__global__ void __launch_bounds__(kRowThreads)
    cross_entropy_forward_kernel(float* losses, const float* logits, const int32_t* targets, int32_t ignore_index,
                                 int64_t classes) {
  __shared__ float scratch[32];
  const float* row = logits + blockIdx.x * classes;  // [classes]
  Row share(row, layout_of(row, classes));           // read before the target, whose latency it then hides
  int32_t target = targets[blockIdx.x];
  if (!is_class(target, classes)) {
    if (threadIdx.x == 0) losses[blockIdx.x] = without_class(target, ignore_index);
    return;
  }
  RowSoftmax softmax = share.softmax(scratch);
  if (threadIdx.x == 0) losses[blockIdx.x] = loss_of(softmax, row[target]);
}

// The gradient rows, and the losses too unless losses is null (the forward kernel's reduction and expression, so
// the same bits).
template <typename Row, typename Gradient>
__global__ void __launch_bounds__(kRowThreads)
    cross_entropy_backward_kernel(float* losses, Gradient* d_logits, const float* logits, const int32_t* targets,
                                  float scale, int32_t ignore_index, int64_t classes) {
  __shared__ float scratch[32];
  const float* row = logits + blockIdx.x * classes;   // [classes]
  Gradient* d_row = d_logits + blockIdx.x * classes;  // [classes], may alias row
  RowLayout layout = layout_of(row, classes);
  Row share(row, layout);  // read before the target, whose latency it then hides
  int32_t target = targets[blockIdx.x];
  bool aligned = vector_stores(d_row, layout);
  if (!is_class(target, classes)) {
    float value = without_class(target, ignore_index);
    if (losses && threadIdx.x == 0) losses[blockIdx.x] = value;
    fill_row(d_row, layout, aligned, value);
    return;
  }
  // NOTE: read before the softmax's barriers, after which d_row (which may alias row) is written.
  float target_logit = row[target];
  RowSoftmax softmax = share.softmax(scratch);
  if (losses && threadIdx.x == 0) losses[blockIdx.x] = loss_of(softmax, target_logit);
  share.write_gradients(d_row, aligned, GradientRow(softmax, target, target_logit, scale));
}

bool held(int64_t classes) { return classes <= kHeldClasses; }

template <typename Gradient>
void launch_backward(float* losses, Gradient* d_logits, const float* logits, const int32_t* targets, float scale,
                     int32_t ignore_index, int64_t rows, int64_t classes, cudaStream_t stream) {
  auto blocks = static_cast<unsigned int>(rows);
  if (held(classes)) {
    cross_entropy_backward_kernel<HeldRow><<<blocks, kRowThreads, 0, stream>>>(losses, d_logits, logits, targets,
                                                                              scale, ignore_index, classes);
  } else {
    cross_entropy_backward_kernel<StreamedRow><<<blocks, kRowThreads, 0, stream>>>(
        losses, d_logits, logits, targets, scale, ignore_index, classes);
  }
}

}  // namespace

cudaError_t cross_entropy_forward(float* losses, const float* logits, const int32_t* targets, int32_t ignore_index,
                                  int64_t rows, int64_t classes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  auto blocks = static_cast<unsigned int>(rows);
  if (held(classes)) {
    cross_entropy_forward_kernel<HeldRow><<<blocks, kRowThreads, 0, stream>>>(losses, logits, targets, ignore_index,
                                                                             classes);
  } else {
    cross_entropy_forward_kernel<StreamedRow><<<blocks, kRowThreads, 0, stream>>>(losses, logits, targets,
                                                                                 ignore_index, classes);
  }
  return cudaGetLastError();
}

cudaError_t cross_entropy_backward(float* d_logits, const float* logits, const int32_t* targets, float scale,
                                   int32_t ignore_index, int64_t rows, int64_t classes, cudaStream_t stream) {
  return cross_entropy_loss_and_grad(nullptr, d_logits, false, logits, targets, scale, ignore_index, rows, classes,
                                     stream);
}

cudaError_t cross_entropy_loss_and_grad(float* losses, void* d_logits, bool bf16_gradient, const float* logits,
                                        const int32_t* targets, float scale, int32_t ignore_index, int64_t rows,
                                        int64_t classes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (bf16_gradient) {
    launch_backward(losses, static_cast<__nv_bfloat16*>(d_logits), logits, targets, scale, ignore_index, rows,
                    classes, stream);
  } else {
    launch_backward(losses, static_cast<float*>(d_logits), logits, targets, scale, ignore_index, rows, classes,
                    stream);
  }
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
