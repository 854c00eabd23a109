#pragma once
// Tensor: a non-owning view of contiguous row-major memory (data pointer, shape, dtype, device).
// Buffer: owned memory on one device. OwnedTensor: a Buffer with one Tensor view over all of it.
// Ops take Tensors and allocate nothing; whoever calls them owns the Buffers.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/error.h"

namespace hai {

enum class DeviceKind : uint8_t { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index) { return {DeviceKind::cuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  bool operator==(const Device&) const = default;
};
std::string to_string(Device device);

// The stream an op is queued on: a cudaStream_t for CUDA tensors (nullptr = the default stream); ignored on CPU.
struct Stream {
  void* handle = nullptr;
};

class Shape {
 public:
  static constexpr int kMaxRank = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int rank() const { return rank_; }
  int64_t operator[](int dim) const;  // negative dims count from the end
  int64_t numel() const;
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }
  std::string str() const;
  bool operator==(const Shape& other) const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<bf16>() { return DType::bf16; }
template <> constexpr DType dtype_of<fp16>() { return DType::f16; }
template <> constexpr DType dtype_of<e4m3>() { return DType::e4m3; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::u16; }

class Tensor {
 public:
  Tensor() = default;
  Tensor(void* data, Shape shape, DType dtype, Device device = Device::cpu())
      : data_(data), shape_(shape), dtype_(dtype), device_(device) {}

  // Typed access; throws if T does not match the dtype.
  template <typename T>
  T* data() const {
    HAI_CHECK(dtype_of<T>() == dtype_, "tensor of dtype {} accessed as {}", dtype_name(dtype_),
              dtype_name(dtype_of<T>()));
    return static_cast<T*>(data_);
  }
  void* raw() const { return data_; }

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int rank() const { return shape_.rank(); }
  int64_t size(int dim) const { return shape_[dim]; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool defined() const { return data_ != nullptr || numel() == 0; }

  // The same memory with another shape of equal numel.
  Tensor reshape(Shape shape) const;
  // Rows [begin, end) of dim 0 (contiguous, so still a view).
  Tensor slice(int64_t begin, int64_t end) const;
  std::string str() const;  // "[2, 3] fp32 cpu"

 private:
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_;
};

// a and b as one tensor, b's rows after a's ([A + B, ...]), when b's memory starts where a's ends (same dtype,
// device and trailing dims); nullopt otherwise. E.g. two adjacent weights [F, H] of the parameter store as [2F, H].
std::optional<Tensor> rows_stacked_in_place(const Tensor& a, const Tensor& b);

// Throws hai::Error naming `what` unless the tensor has this shape / dtype / device.
void check_shape(const Tensor& tensor, const Shape& shape, const char* what);
void check_dtype(const Tensor& tensor, DType dtype, const char* what);
void check_same_device(const Tensor& a, const Tensor& b, const char* what);

// Memory of one device. CUDA memory comes from the device's stream-ordered caching pool (device_memory.h):
// allocating and freeing queue on the default stream and reuse memory the pool already holds.
class Buffer {
 public:
  Buffer() = default;
  // Zero-filled on the CPU; uninitialised on CUDA.
  Buffer(size_t bytes, Device device);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  // A view of `shape` x `dtype` starting at byte_offset; throws if it does not fit.
  Tensor view(Shape shape, DType dtype, size_t byte_offset = 0) const;

 private:
  void release();

  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
};

class OwnedTensor {
 public:
  OwnedTensor() = default;
  OwnedTensor(Shape shape, DType dtype, Device device = Device::cpu());

  const Tensor& tensor() const { return view_; }
  operator const Tensor&() const { return view_; }  // NOLINT: an owned tensor is usable wherever a view is
  template <typename T>
  T* data() const {
    return view_.data<T>();
  }
  const Shape& shape() const { return view_.shape(); }
  int64_t numel() const { return view_.numel(); }
  // Views the same elements with another shape of as many elements (Tensor::reshape), keeping ownership.
  void reshape(Shape shape) { view_ = view_.reshape(std::move(shape)); }

 private:
  Buffer buffer_;
  Tensor view_;
};

// A zero-filled tensor on any device (Buffer zero-fills only host memory; device memory is cleared on the stream).
OwnedTensor zero_tensor(Shape shape, DType dtype, Device device = Device::cpu());

// Sets every byte of the tensor to zero: at once on the CPU, queued on `stream` on CUDA.
void zero_fill(const Tensor& tensor, Stream stream = {});

// Host <-> device copies of whole tensors of equal shape and dtype (synchronous; tests and set-up only).
void copy_tensor(const Tensor& destination, const Tensor& source);

// A host copy of a tensor on any device (synchronous).
OwnedTensor host_copy(const Tensor& tensor);

// The same copy queued on `stream` (cudaMemcpyAsync) when a CUDA tensor is involved; host to host at once.
// Device to device does not wait for the host. From pageable host memory the source is read before the call
// returns (so it may be released then); into pageable host memory the call returns once the copy is done.
void copy_tensor_async(const Tensor& destination, const Tensor& source, Stream stream = {});

}  // namespace hai
