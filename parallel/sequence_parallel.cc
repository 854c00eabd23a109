#include "parallel/sequence_parallel.h"

#include <algorithm>
#include <utility>

#include "framework/core/error.h"
#include "framework/device/elementwise.h"

namespace hai {

int64_t sequence_rows(const TensorParallel& tp, int64_t tokens) {
  if (!tp.splits_sequence()) return tokens;
  HAI_CHECK(tokens % tp.size() == 0, "sequence parallelism: {} tokens cannot be split over {} tp ranks", tokens,
            tp.size());
  return tokens / tp.size();
}

Shape gathered_shape(const TensorParallel& tp, const Shape& local) {
  std::vector<int64_t> dims = local.to_vector();
  HAI_CHECK(!dims.empty(), "sequence parallelism: a scalar has no token rows");
  if (tp.splits_sequence()) dims[0] *= tp.size();
  return Shape(dims);
}

Tensor local_sequence_rows(const TensorParallel& tp, const Tensor& whole) {
  int64_t rows = sequence_rows(tp, whole.size(0));
  if (rows == whole.size(0)) return whole;
  return whole.slice(rows * tp.rank(), rows * (tp.rank() + 1));
}

OwnedTensor all_gather_sequence(const TensorParallel& tp, OwnedTensor&& local) {
  if (!tp.splits_sequence()) return std::move(local);
  OwnedTensor whole(gathered_shape(tp, local.shape()), local.tensor().dtype(), local.tensor().device());
  tp.all_gather(whole, local);
  return whole;
}

Tensor all_gather_sequence(const TensorParallel& tp, const Tensor& local, OwnedTensor& storage) {
  if (!tp.splits_sequence()) return local;
  storage = OwnedTensor(gathered_shape(tp, local.shape()), local.dtype(), local.device());
  tp.all_gather(storage, local);
  return storage.tensor();
}

void reduce_scatter_sequence(const TensorParallel& tp, const Tensor& out, const Tensor& whole, bool accumulate) {
  if (!tp.splits_sequence()) {
    HAI_CHECK(whole.shape() == out.shape(), "tensor parallelism: a sum of {} into {}", whole.str(), out.str());
    tp.sum(whole);
    if (accumulate) return add_scaled(out, whole);
    if (whole.raw() != out.raw()) copy_tensor_async(out, whole);
    return;
  }
  HAI_CHECK(whole.shape() == gathered_shape(tp, out.shape()), "sequence parallelism: {} reduce-scattered into {}",
            whole.str(), out.str());
  if (!accumulate) return tp.reduce_scatter(out, whole);
  OwnedTensor mine(out.shape(), out.dtype(), out.device());
  tp.reduce_scatter(mine, whole);
  add_scaled(out, mine);
}

ReplicatedGradientSum::ReplicatedGradientSum(TensorParallel tp, std::vector<Gradient> gradients) : tp_(tp) {
  for (Gradient& gradient : gradients) {
    HAI_CHECK(gradient.grad.dtype() == DType::f32, "ReplicatedGradientSum: a {} gradient", gradient.grad.str());
    auto known = std::ranges::find(buckets_, gradient.bucket, &Bucket::id);
    Bucket& bucket = known != buckets_.end() ? *known : buckets_.emplace_back(Bucket{.id = gradient.bucket});
    bucket.numel += gradient.grad.numel();
    bucket.grads.push_back(std::move(gradient.grad));
  }
}

void ReplicatedGradientSum::bucket_final(int bucket) {
  auto known = std::ranges::find(buckets_, bucket, &Bucket::id);
  if (known == buckets_.end() || known->summed) return;
  sum(*known);
  known->summed = true;
}

void ReplicatedGradientSum::finish_step() {
  for (Bucket& bucket : buckets_) {
    if (!bucket.summed) sum(bucket);
    bucket.summed = false;
  }
}

void ReplicatedGradientSum::sum(const Bucket& bucket) const {
  if (bucket.grads.size() == 1) return tp_.sum(bucket.grads.front());
  OwnedTensor flat(Shape{bucket.numel}, DType::f32, bucket.grads.front().device());  // [numel] the bucket's
  // Each gradient's elements [offset, offset + numel) of flat, viewed in the gradient's shape.
  auto part = [&flat](int64_t offset, const Tensor& grad) {
    return flat.tensor().slice(offset, offset + grad.numel()).reshape(grad.shape());
  };
  int64_t offset = 0;
  for (const Tensor& grad : bucket.grads) {
    copy_tensor_async(part(offset, grad), grad);
    offset += grad.numel();
  }
  tp_.sum(flat);
  offset = 0;
  for (const Tensor& grad : bucket.grads) {
    copy_tensor_async(grad, part(offset, grad));
    offset += grad.numel();
  }
}

}  // namespace hai
