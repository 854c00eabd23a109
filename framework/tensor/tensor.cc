#include "framework/tensor/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "framework/tensor/device_memory.h"

#ifdef HAI_WITH_CUDA
#include "framework/core/check.h"
#endif

namespace hai {

std::string to_string(Device device) {
  return device.is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", device.index);
}

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(const std::vector<int64_t>& dims) {
  HAI_CHECK(static_cast<int>(dims.size()) <= kMaxRank, "shape of rank {} exceeds {}", dims.size(), kMaxRank);
  rank_ = static_cast<int>(dims.size());
  for (int i = 0; i < rank_; ++i) {
    HAI_CHECK(dims[i] >= 0, "negative dimension {} in shape", dims[i]);
    dims_[i] = dims[i];
  }
}

int64_t Shape::operator[](int dim) const {
  int index = dim < 0 ? dim + rank_ : dim;
  HAI_CHECK(index >= 0 && index < rank_, "dim {} out of range for {}", dim, str());
  return dims_[index];
}

int64_t Shape::numel() const {
  int64_t count = 1;
  for (int i = 0; i < rank_; ++i) count *= dims_[i];
  return count;
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(to_vector(), ", ")); }

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

Tensor Tensor::reshape(Shape shape) const {
  HAI_CHECK(shape.numel() == numel(), "cannot reshape {} to {}", shape_.str(), shape.str());
  return Tensor(data_, shape, dtype_, device_);
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  HAI_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= size(0), "slice [{}, {}) of {}", begin, end,
            shape_.str());
  std::vector<int64_t> dims = shape_.to_vector();
  size_t row_bytes = bytes() / static_cast<size_t>(std::max<int64_t>(dims[0], 1));
  dims[0] = end - begin;
  return Tensor(static_cast<char*>(data_) + row_bytes * static_cast<size_t>(begin), Shape(dims), dtype_, device_);
}

std::optional<Tensor> rows_stacked_in_place(const Tensor& a, const Tensor& b) {
  if (a.rank() < 1 || a.rank() != b.rank() || a.dtype() != b.dtype() || a.device() != b.device()) return std::nullopt;
  std::vector<int64_t> dims = a.shape().to_vector(), b_dims = b.shape().to_vector();
  if (!std::equal(dims.begin() + 1, dims.end(), b_dims.begin() + 1)) return std::nullopt;
  if (static_cast<const char*>(a.raw()) + a.bytes() != b.raw()) return std::nullopt;
  dims[0] += b_dims[0];
  return Tensor(a.raw(), Shape(dims), a.dtype(), a.device());
}

std::string Tensor::str() const {
  return fmt::format("{} {} {}", shape_.str(), dtype_name(dtype_), to_string(device_));
}

void check_shape(const Tensor& tensor, const Shape& shape, const char* what) {
  HAI_CHECK(tensor.shape() == shape, "{} has shape {}, expected {}", what, tensor.shape().str(), shape.str());
}

void check_dtype(const Tensor& tensor, DType dtype, const char* what) {
  HAI_CHECK(tensor.dtype() == dtype, "{} has dtype {}, expected {}", what, dtype_name(tensor.dtype()),
            dtype_name(dtype));
}

void check_same_device(const Tensor& a, const Tensor& b, const char* what) {
  HAI_CHECK(a.device() == b.device(), "{}: tensors on {} and {}", what, to_string(a.device()),
            to_string(b.device()));
}

Buffer::Buffer(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (bytes == 0) return;
  if (device.is_cpu()) {
    constexpr size_t kAlignment = 64;
    data_ = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (data_ == nullptr) HAI_THROW("out of host memory allocating {} bytes", bytes);
    std::memset(data_, 0, bytes);
    detail::count_host_bytes(static_cast<std::ptrdiff_t>(bytes));
    return;
  }
  data_ = detail::allocate_device_memory(bytes, device);
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)), device_(other.device_) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = other.device_;
  }
  return *this;
}

void Buffer::release() {
  if (data_ == nullptr) return;
  if (device_.is_cpu()) {
    std::free(data_);
    detail::count_host_bytes(-static_cast<std::ptrdiff_t>(bytes_));
  } else {
    detail::free_device_memory(data_, device_);
  }
  data_ = nullptr;
}

Tensor Buffer::view(Shape shape, DType dtype, size_t byte_offset) const {
  size_t need = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  HAI_CHECK(byte_offset + need <= bytes_, "view of {} bytes at offset {} exceeds a buffer of {}", need,
            byte_offset, bytes_);
  return Tensor(static_cast<char*>(data_) + byte_offset, shape, dtype, device_);
}

OwnedTensor::OwnedTensor(Shape shape, DType dtype, Device device)
    : buffer_(static_cast<size_t>(shape.numel()) * dtype_size(dtype), device),
      view_(buffer_.view(shape, dtype)) {}

OwnedTensor zero_tensor(Shape shape, DType dtype, Device device) {
  OwnedTensor tensor(shape, dtype, device);
  if (!device.is_cpu()) zero_fill(tensor);
  return tensor;
}

void zero_fill(const Tensor& tensor, [[maybe_unused]] Stream stream) {
  if (tensor.bytes() == 0) return;
  if (tensor.device().is_cpu()) {
    std::memset(tensor.raw(), 0, tensor.bytes());
    return;
  }
#ifdef HAI_WITH_CUDA
  HAI_CUDA_CHECK(cudaSetDevice(tensor.device().index));
  HAI_CUDA_CHECK(cudaMemsetAsync(tensor.raw(), 0, tensor.bytes(), static_cast<cudaStream_t>(stream.handle)));
#else
  HAI_THROW("zero_fill: this build has no CUDA backend");
#endif
}

void copy_tensor(const Tensor& destination, const Tensor& source) {
  HAI_CHECK(destination.shape() == source.shape() && destination.dtype() == source.dtype(),
            "copy_tensor: {} <- {}", destination.str(), source.str());
  if (destination.device().is_cpu() && source.device().is_cpu()) {
    if (source.bytes() > 0) std::memcpy(destination.raw(), source.raw(), source.bytes());
    return;
  }
#ifdef HAI_WITH_CUDA
  HAI_CUDA_CHECK(cudaMemcpy(destination.raw(), source.raw(), source.bytes(), cudaMemcpyDefault));
#else
  HAI_THROW("copy_tensor: this build has no CUDA backend");
#endif
}

OwnedTensor host_copy(const Tensor& tensor) {
  OwnedTensor copy(tensor.shape(), tensor.dtype());
  copy_tensor(copy, tensor);
  return copy;
}

void copy_tensor_async(const Tensor& destination, const Tensor& source, [[maybe_unused]] Stream stream) {
  HAI_CHECK(destination.shape() == source.shape() && destination.dtype() == source.dtype(),
            "copy_tensor_async: {} <- {}", destination.str(), source.str());
  if (destination.device().is_cpu() && source.device().is_cpu()) {
    if (source.bytes() > 0) std::memcpy(destination.raw(), source.raw(), source.bytes());
    return;
  }
#ifdef HAI_WITH_CUDA
  if (source.bytes() == 0) return;
  Device device = destination.device().is_cuda() ? destination.device() : source.device();
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  HAI_CUDA_CHECK(cudaMemcpyAsync(destination.raw(), source.raw(), source.bytes(), cudaMemcpyDefault,
                                 static_cast<cudaStream_t>(stream.handle)));
#else
  HAI_THROW("copy_tensor_async: this build has no CUDA backend");
#endif
}

}  // namespace hai
