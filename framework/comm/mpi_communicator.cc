#include "framework/comm/mpi_communicator.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "framework/comm/f32_staging.h"
#include "framework/comm/mpi_types.h"
#include "framework/core/check.h"

namespace hai {
namespace {

void check_host(const Tensor& tensor, std::string_view operation) {
  HAI_CHECK(tensor.device().is_cpu(),
            "{}: the MPI communicator moves host tensors only, got {} (device tensors go through NCCL)",
            operation, tensor.str());
}

// all_to_all_v counts and offsets, in rows, as MPI's ints.
struct RowLayout {
  std::vector<int> counts;
  std::vector<int> offsets;
};

RowLayout row_layout(std::span<const int64_t> counts) {
  RowLayout layout;
  int64_t offset = 0;
  for (int64_t count : counts) {
    layout.counts.push_back(mpi::checked_count(count, "all_to_all_v rows"));
    layout.offsets.push_back(mpi::checked_count(offset, "all_to_all_v row offset"));
    offset += count;
  }
  return layout;
}

int64_t row_elements(const Tensor& tensor) {
  int64_t elements = 1;
  for (int dim = 1; dim < tensor.rank(); ++dim) elements *= tensor.size(dim);
  return elements;
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  int initialized = 0;
  HAI_MPI_CHECK(MPI_Initialized(&initialized));
  HAI_CHECK(initialized, "MpiCommunicator needs MPI: create an MpiRuntime first");
  HAI_CHECK(comm != MPI_COMM_NULL, "MpiCommunicator of MPI_COMM_NULL");
  HAI_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  HAI_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  HAI_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  int* tag_upper_bound = nullptr;
  int found = 0;
  HAI_MPI_CHECK(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_upper_bound, &found));
  constexpr int kGuaranteedTagUpperBound = 32767;  // the least MPI_TAG_UB the standard allows
  tag_upper_bound_ = found ? *tag_upper_bound : kGuaranteedTagUpperBound;
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // NOTE: not checked: a destructor must not throw, and a failed free leaves nothing to do
  if (!finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(comm_, code);
  std::abort();  // NOTE: MPI_Abort does not return; this only keeps the [[noreturn]] promise if it did
}

void MpiCommunicator::run_all_reduce(const Tensor& tensor, ReduceOp op) {
  check_host(tensor, "all_reduce");
  int count = mpi::checked_count(tensor.numel(), "all_reduce");
  if (needs_f32_staging(tensor.dtype())) {
    std::vector<float> values = widen_to_f32(tensor);
    HAI_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, MPI_FLOAT, mpi::reduce_operation(op), comm_));
    narrow_from_f32(tensor, values);
    return;
  }
  HAI_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, tensor.raw(), count, mpi::element_type(tensor.dtype()),
                              mpi::reduce_operation(op), comm_));
}

void MpiCommunicator::run_reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) {
  check_host(in, "reduce_scatter");
  mpi::checked_count(in.numel(), "reduce_scatter");
  int count = mpi::checked_count(out.numel(), "reduce_scatter");
  if (needs_f32_staging(in.dtype())) {
    std::vector<float> in_values = widen_to_f32(in);  // [size * n]
    std::vector<float> out_values(static_cast<size_t>(count));  // [n]
    HAI_MPI_CHECK(MPI_Reduce_scatter_block(in_values.data(), out_values.data(), count, MPI_FLOAT,
                                           mpi::reduce_operation(op), comm_));
    narrow_from_f32(out, out_values);
    return;
  }
  MPI_Datatype type = mpi::element_type(in.dtype());
  const char* in_begin = static_cast<const char*>(in.raw());
  const char* out_begin = static_cast<const char*>(out.raw());
  bool in_place = out_begin >= in_begin && out_begin < in_begin + in.bytes();  // out is this rank's chunk of in
  if (!in_place) {
    HAI_MPI_CHECK(MPI_Reduce_scatter_block(in.raw(), out.raw(), count, type, mpi::reduce_operation(op), comm_));
    return;
  }
  // NOTE: MPI's own in-place form leaves the result at the start of the buffer, not at this rank's chunk.
  OwnedTensor reduced(out.shape(), out.dtype());  // [n]
  HAI_MPI_CHECK(MPI_Reduce_scatter_block(in.raw(), reduced.tensor().raw(), count, type, mpi::reduce_operation(op),
                                         comm_));
  copy_tensor(out, reduced);
}

void MpiCommunicator::run_all_gather(const Tensor& out, const Tensor& in) {
  check_host(in, "all_gather");
  mpi::checked_count(out.numel(), "all_gather");
  int count = mpi::checked_count(in.numel(), "all_gather");
  MPI_Datatype type = mpi::element_type(in.dtype());
  void* own_chunk = static_cast<char*>(out.raw()) + in.bytes() * static_cast<size_t>(rank_);
  void* source = in.raw() == own_chunk ? MPI_IN_PLACE : in.raw();
  HAI_MPI_CHECK(MPI_Allgather(source, count, type, out.raw(), count, type, comm_));
}

void MpiCommunicator::run_broadcast(const Tensor& tensor, int root) {
  check_host(tensor, "broadcast");
  int count = mpi::checked_count(tensor.numel(), "broadcast");
  HAI_MPI_CHECK(MPI_Bcast(tensor.raw(), count, mpi::element_type(tensor.dtype()), root, comm_));
}

void MpiCommunicator::run_all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts,
                                       const Tensor& recv, std::span<const int64_t> recv_counts) {
  check_host(send, "all_to_all_v");
  mpi::ContiguousType row(mpi::checked_count(row_elements(send), "all_to_all_v row"),
                          mpi::element_type(send.dtype()));
  RowLayout sent = row_layout(send_counts);
  RowLayout received = row_layout(recv_counts);
  HAI_MPI_CHECK(MPI_Alltoallv(send.raw(), sent.counts.data(), sent.offsets.data(), row.get(), recv.raw(),
                              received.counts.data(), received.offsets.data(), row.get(), comm_));
}

void MpiCommunicator::run_send(const Tensor& tensor, int peer, int tag) {
  check_host(tensor, "send");
  check_tag(tag, "send");
  PendingTransfer transfer{false, peer, tag, mpi::checked_count(tensor.numel(), "send"),
                           mpi::element_type(tensor.dtype())};
  if (!in_group()) {
    HAI_MPI_CHECK(MPI_Send(tensor.raw(), transfer.count, transfer.type, peer, tag, comm_));
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  HAI_MPI_CHECK(MPI_Isend(tensor.raw(), transfer.count, transfer.type, peer, tag, comm_, &request));
  pending_transfers_.push_back(transfer);
  pending_requests_.push_back(request);
}

void MpiCommunicator::run_recv(const Tensor& tensor, int peer, int tag) {
  check_host(tensor, "recv");
  check_tag(tag, "recv");
  PendingTransfer transfer{true, peer, tag, mpi::checked_count(tensor.numel(), "recv"),
                           mpi::element_type(tensor.dtype())};
  if (!in_group()) {
    MPI_Status status;
    HAI_MPI_CHECK(MPI_Recv(tensor.raw(), transfer.count, transfer.type, peer, tag, comm_, &status));
    check_received_count(status, transfer);
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  HAI_MPI_CHECK(MPI_Irecv(tensor.raw(), transfer.count, transfer.type, peer, tag, comm_, &request));
  pending_transfers_.push_back(transfer);
  pending_requests_.push_back(request);
}

int64_t MpiCommunicator::run_post_send(const Tensor& tensor, int peer, int tag) {
  check_host(tensor, "post_send");
  check_tag(tag, "post_send");
  PendingTransfer transfer{false, peer, tag, mpi::checked_count(tensor.numel(), "post_send"),
                           mpi::element_type(tensor.dtype())};
  MPI_Request request = MPI_REQUEST_NULL;
  HAI_MPI_CHECK(MPI_Isend(tensor.raw(), transfer.count, transfer.type, peer, tag, comm_, &request));
  posted_sends_.push_back(transfer);
  posted_send_requests_.push_back(request);
  posted_send_tickets_.push_back(next_ticket_);
  return next_ticket_++;
}

bool MpiCommunicator::run_posted_send_done(int64_t ticket) {
  HAI_CHECK(ticket < next_ticket_, "posted_send_done: ticket {} was never given", ticket);
  auto found = std::lower_bound(posted_send_tickets_.begin(), posted_send_tickets_.end(), ticket);
  if (found == posted_send_tickets_.end() || *found != ticket) return true;  // seen complete, or waited for
  auto i = found - posted_send_tickets_.begin();
  int done = 0;
  MPI_Status status;
  int result = MPI_Test(&posted_send_requests_[static_cast<size_t>(i)], &done, &status);
  HAI_CHECK(result == MPI_SUCCESS, "posted_send_done: send to rank {} with tag {} failed: {}",
            posted_sends_[static_cast<size_t>(i)].peer, posted_sends_[static_cast<size_t>(i)].tag,
            detail::mpi_error_string(result));
  if (!done) return false;
  posted_sends_.erase(posted_sends_.begin() + i);
  posted_send_requests_.erase(posted_send_requests_.begin() + i);
  posted_send_tickets_.erase(found);
  return true;
}

void MpiCommunicator::run_wait_posted_sends() {
  posted_send_tickets_.clear();
  wait_all(std::exchange(posted_sends_, {}), std::exchange(posted_send_requests_, {}), "wait_posted_sends");
}

void MpiCommunicator::run_group_end() {
  wait_all(std::exchange(pending_transfers_, {}), std::exchange(pending_requests_, {}), "group_end");
}

void MpiCommunicator::wait_all(const std::vector<PendingTransfer>& transfers, std::vector<MPI_Request> requests,
                               std::string_view operation) const {
  std::vector<MPI_Status> statuses(requests.size());
  int result = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
  for (size_t i = 0; result == MPI_ERR_IN_STATUS && i < transfers.size(); ++i) {
    int error = statuses[i].MPI_ERROR;
    HAI_CHECK(error == MPI_SUCCESS || error == MPI_ERR_PENDING, "{}: {} rank {} with tag {} failed: {}", operation,
              transfers[i].is_receive ? "recv from" : "send to", transfers[i].peer, transfers[i].tag,
              detail::mpi_error_string(error));
  }
  HAI_CHECK(result == MPI_SUCCESS, "{}: MPI_Waitall failed: {}", operation, detail::mpi_error_string(result));
  for (size_t i = 0; i < transfers.size(); ++i) {
    if (transfers[i].is_receive) check_received_count(statuses[i], transfers[i]);
  }
}

void MpiCommunicator::run_barrier() { HAI_MPI_CHECK(MPI_Barrier(comm_)); }

std::unique_ptr<Communicator> MpiCommunicator::run_split(int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  HAI_MPI_CHECK(MPI_Comm_split(comm_, color, key, &part));
  return std::make_unique<MpiCommunicator>(part);
}

void MpiCommunicator::check_tag(int tag, std::string_view operation) const {
  HAI_CHECK(tag <= tag_upper_bound_, "{}: tag {} exceeds MPI's limit {}", operation, tag, tag_upper_bound_);
}

void MpiCommunicator::check_received_count(const MPI_Status& status, const PendingTransfer& transfer) const {
  int received = 0;
  HAI_MPI_CHECK(MPI_Get_count(&status, transfer.type, &received));
  HAI_CHECK(received == transfer.count, "recv from rank {} with tag {}: expected {} elements, {} arrived",
            transfer.peer, transfer.tag, transfer.count, received);
}

}  // namespace hai
