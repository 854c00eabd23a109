#include "framework/comm/cuda/nccl_communicator.h"

#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "framework/comm/cuda/nccl_types.h"
#include "framework/comm/f32_staging.h"
#include "framework/core/check.h"
#include "framework/device/cast.h"

namespace hai {
namespace {

// Device memory that lives for one operation, allocated and freed in order on one stream.
class StreamOrderedBuffer {
 public:
  StreamOrderedBuffer(size_t bytes, Device device, cudaStream_t stream) : device_(device), stream_(stream) {
    if (bytes > 0) HAI_CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream));
  }
  ~StreamOrderedBuffer() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);  // NOTE: not checked: a destructor must not throw
  }
  StreamOrderedBuffer(const StreamOrderedBuffer&) = delete;
  StreamOrderedBuffer& operator=(const StreamOrderedBuffer&) = delete;

  Tensor f32_view(Shape shape) const { return Tensor(data_, shape, DType::f32, device_); }

 private:
  void* data_ = nullptr;
  Device device_;
  cudaStream_t stream_;
};

// The bf16/f16 sums that reduce fp32 copies (communicator.h: one rounding); max and min are exact in place.
bool reduces_in_f32(DType dtype, ReduceOp op) { return op == ReduceOp::sum && needs_f32_staging(dtype); }

size_t row_bytes(const Tensor& tensor) {
  size_t bytes = dtype_size(tensor.dtype());
  for (int dim = 1; dim < tensor.rank(); ++dim) bytes *= static_cast<size_t>(tensor.size(dim));
  return bytes;
}

std::vector<size_t> byte_offsets(std::span<const int64_t> row_counts, size_t bytes_per_row) {
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (int64_t rows : row_counts) {
    offsets.push_back(offset);
    offset += static_cast<size_t>(rows) * bytes_per_row;
  }
  return offsets;
}

char* byte_pointer(const Tensor& tensor, size_t offset) { return static_cast<char*>(tensor.raw()) + offset; }

ncclUniqueId shared_unique_id(MPI_Comm comm, int rank) {
  ncclUniqueId id{};
  if (rank == 0) HAI_NCCL_CHECK(ncclGetUniqueId(&id));
  HAI_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm));
  return id;
}

// NOTE: ncclCommAbort runs on a thread of its own and gets a few seconds: should it hang on a broken
// communicator, MPI_Abort must still end the job.
void abort_nccl_within_seconds(ncclComm_t comm) {
  constexpr std::chrono::seconds kGrace(10);
  auto aborted = std::make_shared<std::promise<void>>();
  std::future<void> finished = aborted->get_future();
  std::thread([comm, aborted] {
    ncclCommAbort(comm);  // NOTE: not checked: the job ends right after, whatever it returns
    aborted->set_value();
  }).detach();
  finished.wait_for(kGrace);
}

// A side stream's mark: an event of the communicator's GPU.
class EventMark : public SideStreamMark {
 public:
  EventMark() { HAI_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~EventMark() override { cudaEventDestroy(event_); }  // NOTE: unchecked: a destructor must not throw
  EventMark(const EventMark&) = delete;
  EventMark& operator=(const EventMark&) = delete;
  cudaEvent_t event() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, Device device, NcclOptions options)
    : mpi_comm_(comm), device_(device), options_(options) {
  HAI_CHECK(device.is_cuda(), "the NCCL communicator needs a GPU, got {}", to_string(device));
  HAI_CHECK(comm != MPI_COMM_NULL, "NcclCommunicator of MPI_COMM_NULL");
  HAI_MPI_CHECK(MPI_Comm_set_errhandler(mpi_comm_, MPI_ERRORS_RETURN));
  HAI_MPI_CHECK(MPI_Comm_rank(mpi_comm_, &rank_));
  HAI_MPI_CHECK(MPI_Comm_size(mpi_comm_, &size_));
  ncclUniqueId id = shared_unique_id(mpi_comm_, rank_);
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  HAI_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
  watchdog_ = std::make_unique<QueuedOperationWatchdog>(
      device_, options_.collective_timeout, [this] { return asynchronous_error(); },
      [this](const QueuedOperationWatchdog::Hang& hang) { abort_hung(hang); });
}

NcclCommunicator::~NcclCommunicator() {
  watchdog_.reset();
  // NOTE: not checked: a destructor must not throw, and a failed release leaves nothing to do. Destroying waits
  // for the operations still queued.
  ncclCommDestroy(comm_);
  if (side_stream_) {
    cudaStream_t stream = static_cast<cudaStream_t>(options_.stream.handle);
    cudaStreamSynchronize(stream);
    cudaEventDestroy(compute_mark_);
    cudaEventDestroy(side_mark_);
    cudaStreamDestroy(stream);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&mpi_comm_);
}

void NcclCommunicator::synchronize() {
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  HAI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(options_.stream.handle)));
}

void NcclCommunicator::abort(int code) {
  abort_nccl_within_seconds(comm_);
  MPI_Abort(mpi_comm_, code);
  std::abort();  // NOTE: MPI_Abort does not return; this only keeps the [[noreturn]] promise if it did
}

void NcclCommunicator::run_all_reduce(const Tensor& tensor, ReduceOp op) {
  cudaStream_t stream = prepare(tensor, "all_reduce");
  if (reduces_in_f32(tensor.dtype(), op)) {
    all_reduce_in_f32(tensor, stream);
  } else {
    HAI_NCCL_CHECK(ncclAllReduce(tensor.raw(), tensor.raw(), static_cast<size_t>(tensor.numel()),
                                 nccl::reduction_type(tensor.dtype()), nccl::reduce_operation(op), comm_, stream));
  }
  watch_queued_operation();
}

void NcclCommunicator::all_reduce_in_f32(const Tensor& tensor, cudaStream_t stream) {
  StreamOrderedBuffer staging(static_cast<size_t>(tensor.numel()) * sizeof(float), device_, stream);
  Tensor wide = staging.f32_view(tensor.shape());  // [tensor's shape] fp32
  cast_tensor(wide, tensor, Stream{stream});
  HAI_NCCL_CHECK(ncclAllReduce(wide.raw(), wide.raw(), static_cast<size_t>(wide.numel()), ncclFloat32, ncclSum,
                               comm_, stream));
  cast_tensor(tensor, wide, Stream{stream});
}

void NcclCommunicator::run_reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) {
  cudaStream_t stream = prepare(in, "reduce_scatter");
  if (reduces_in_f32(in.dtype(), op)) {
    reduce_scatter_in_f32(out, in, stream);
  } else {
    HAI_NCCL_CHECK(ncclReduceScatter(in.raw(), out.raw(), static_cast<size_t>(out.numel()),
                                     nccl::reduction_type(in.dtype()), nccl::reduce_operation(op), comm_, stream));
  }
  watch_queued_operation();
}

void NcclCommunicator::reduce_scatter_in_f32(const Tensor& out, const Tensor& in, cudaStream_t stream) {
  StreamOrderedBuffer staging(static_cast<size_t>(in.numel() + out.numel()) * sizeof(float), device_, stream);
  Tensor wide_in = staging.f32_view(Shape{in.numel()});  // [size * n] fp32
  Tensor wide_out(byte_pointer(wide_in, wide_in.bytes()), Shape{out.numel()}, DType::f32, device_);  // [n] fp32
  cast_tensor(wide_in, in, Stream{stream});
  HAI_NCCL_CHECK(ncclReduceScatter(wide_in.raw(), wide_out.raw(), static_cast<size_t>(out.numel()), ncclFloat32,
                                   ncclSum, comm_, stream));
  cast_tensor(out, wide_out, Stream{stream});
}

void NcclCommunicator::run_all_gather(const Tensor& out, const Tensor& in) {
  cudaStream_t stream = prepare(in, "all_gather");
  // NOTE: NCCL gathers in place when `in` is this rank's chunk of `out`, the one overlap communicator.h allows.
  HAI_NCCL_CHECK(ncclAllGather(in.raw(), out.raw(), in.bytes(), ncclUint8, comm_, stream));
  watch_queued_operation();
}

void NcclCommunicator::run_broadcast(const Tensor& tensor, int root) {
  cudaStream_t stream = prepare(tensor, "broadcast");
  HAI_NCCL_CHECK(ncclBroadcast(tensor.raw(), tensor.raw(), tensor.bytes(), ncclUint8, root, comm_, stream));
  watch_queued_operation();
}

void NcclCommunicator::run_all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts,
                                        const Tensor& recv, std::span<const int64_t> recv_counts) {
  cudaStream_t stream = prepare(send, "all_to_all_v");
  size_t bytes_per_row = row_bytes(send);
  std::vector<size_t> send_offsets = byte_offsets(send_counts, bytes_per_row);
  std::vector<size_t> recv_offsets = byte_offsets(recv_counts, bytes_per_row);
  auto bytes = [&](std::span<const int64_t> counts, int peer) {
    return static_cast<size_t>(counts[static_cast<size_t>(peer)]) * bytes_per_row;
  };
  size_t own = static_cast<size_t>(rank_);
  HAI_CUDA_CHECK(cudaMemcpyAsync(byte_pointer(recv, recv_offsets[own]), byte_pointer(send, send_offsets[own]),
                                 bytes(send_counts, rank_), cudaMemcpyDeviceToDevice, stream));
  HAI_NCCL_CHECK(ncclGroupStart());
  for (int peer = 0; peer < size_; ++peer) {
    size_t index = static_cast<size_t>(peer);
    if (peer == rank_) continue;
    if (send_counts[index] > 0) {
      HAI_NCCL_CHECK(ncclSend(byte_pointer(send, send_offsets[index]), bytes(send_counts, peer), ncclUint8, peer,
                              comm_, stream));
    }
    if (recv_counts[index] > 0) {
      HAI_NCCL_CHECK(ncclRecv(byte_pointer(recv, recv_offsets[index]), bytes(recv_counts, peer), ncclUint8, peer,
                              comm_, stream));
    }
  }
  HAI_NCCL_CHECK(ncclGroupEnd());
  watch_queued_operation();
}

void NcclCommunicator::run_send(const Tensor& tensor, int peer, int) {
  cudaStream_t stream = prepare(tensor, "send");
  HAI_NCCL_CHECK(ncclSend(tensor.raw(), tensor.bytes(), ncclUint8, peer, comm_, stream));
  if (!in_group()) watch_queued_operation();  // NOTE: a grouped send is queued by group_end(), watched there
}

void NcclCommunicator::run_recv(const Tensor& tensor, int peer, int) {
  cudaStream_t stream = prepare(tensor, "recv");
  HAI_NCCL_CHECK(ncclRecv(tensor.raw(), tensor.bytes(), ncclUint8, peer, comm_, stream));
  if (!in_group()) watch_queued_operation();
}

void NcclCommunicator::run_group_start() { HAI_NCCL_CHECK(ncclGroupStart()); }

void NcclCommunicator::run_group_end() {
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  HAI_NCCL_CHECK(ncclGroupEnd());
  watch_queued_operation();
}

void NcclCommunicator::run_barrier() {
  synchronize();
  HAI_MPI_CHECK(MPI_Barrier(mpi_comm_));
}

std::unique_ptr<Communicator> NcclCommunicator::run_split(int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  HAI_MPI_CHECK(MPI_Comm_split(mpi_comm_, color, key, &part));
  return std::make_unique<NcclCommunicator>(part, device_, compute_options());
}

NcclOptions NcclCommunicator::compute_options() const {
  NcclOptions options = options_;
  if (side_stream_) options.stream = compute_stream_;
  return options;
}

std::unique_ptr<Communicator> NcclCommunicator::side_stream_duplicate() {
  std::unique_ptr<Communicator> duplicate = split(0, rank_);
  // NOTE: run_split makes an NcclCommunicator; the cast only recovers its type.
  static_cast<NcclCommunicator&>(*duplicate).move_to_side_stream();
  return duplicate;
}

void NcclCommunicator::move_to_side_stream() {
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  // NOTE: at the highest priority, the block scheduler gives the collective's blocks the first multiprocessors
  // that the compute stream's kernels (the AdamW step, the backward) free, instead of queueing them after those.
  int lowest_priority = 0;
  int highest_priority = 0;
  HAI_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest_priority, &highest_priority));
  cudaStream_t stream = nullptr;
  HAI_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, highest_priority));
  HAI_CUDA_CHECK(cudaEventCreateWithFlags(&compute_mark_, cudaEventDisableTiming));
  HAI_CUDA_CHECK(cudaEventCreateWithFlags(&side_mark_, cudaEventDisableTiming));
  compute_stream_ = options_.stream;
  options_.stream = Stream{stream};
  side_stream_ = true;
}

void NcclCommunicator::join_side_stream() {
  if (!side_stream_) return;
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  HAI_CUDA_CHECK(cudaEventRecord(side_mark_, static_cast<cudaStream_t>(options_.stream.handle)));
  HAI_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(compute_stream_.handle), side_mark_, 0));
}

void NcclCommunicator::mark_side_stream(std::unique_ptr<SideStreamMark>& mark) {
  if (!side_stream_) return;
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  if (!mark) mark = std::make_unique<EventMark>();
  HAI_CUDA_CHECK(cudaEventRecord(static_cast<EventMark&>(*mark).event(),
                                 static_cast<cudaStream_t>(options_.stream.handle)));
}

void NcclCommunicator::join_side_stream_mark(const SideStreamMark* mark) {
  if (!side_stream_ || mark == nullptr) return;
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  // NOTE: the cast only recovers the type mark_side_stream made.
  HAI_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(compute_stream_.handle),
                                     static_cast<const EventMark*>(mark)->event(), 0));
}

cudaStream_t NcclCommunicator::prepare(const Tensor& tensor, std::string_view operation) const {
  HAI_CHECK(tensor.device() == device_, "{}: the NCCL communicator of {} moves tensors on that GPU only, got {}",
            operation, to_string(device_), tensor.str());
  HAI_CUDA_CHECK(cudaSetDevice(device_.index));
  cudaStream_t stream = static_cast<cudaStream_t>(options_.stream.handle);
  if (side_stream_) {  // after the work queued so far on the compute stream
    HAI_CUDA_CHECK(cudaEventRecord(compute_mark_, static_cast<cudaStream_t>(compute_stream_.handle)));
    HAI_CUDA_CHECK(cudaStreamWaitEvent(stream, compute_mark_, 0));
  }
  return stream;
}

void NcclCommunicator::watch_queued_operation() { watchdog_->queued(last_operation(), options_.stream); }

std::string NcclCommunicator::asynchronous_error() const {
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return "ncclCommGetAsyncError failed";
  if (state == ncclSuccess || state == ncclInProgress) return {};
  return fmt::format("{} ({})", ncclGetErrorString(state), ncclGetLastError(comm_));
}

void NcclCommunicator::abort_hung(const QueuedOperationWatchdog::Hang& hang) {
  double timeout_s = std::chrono::duration<double>(options_.collective_timeout).count();
  if (hang.error.empty()) {
    spdlog::error("collective timeout: rank {} waited {:.0f}s on the GPU in {} #{} (rank {} of an NCCL "
                  "communicator of {}; runtime.collective_timeout_s = {:g}); aborting the job",
                  process_rank(), hang.waited_s, hang.operation.name, hang.operation.sequence, rank_, size_,
                  timeout_s);
  } else {
    spdlog::error("NCCL error: rank {} in {} #{} (rank {} of an NCCL communicator of {}): {}; aborting the job",
                  process_rank(), hang.operation.name, hang.operation.sequence, rank_, size_, hang.error);
  }
  spdlog::default_logger()->flush();
  abort(options_.abort_exit_code);
}

}  // namespace hai
