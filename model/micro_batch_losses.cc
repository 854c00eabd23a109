#include "model/micro_batch_losses.h"

namespace hai {

double MicroBatchLosses::mtp_mean() const {
  if (mtp.empty()) return 0.0;
  double sum = 0;
  for (const TokenLoss& loss : mtp) sum += loss.mean();
  return sum / static_cast<double>(mtp.size());
}

double MicroBatchLosses::objective(double mtp_loss_weight) const {
  return lm.mean() + mtp_loss_weight * mtp_mean() + balance;
}

namespace {

constexpr int64_t kLmSlot = 0;
constexpr int64_t kBalanceSlot = 1;
constexpr int64_t kFirstMtpSlot = 2;

// Slot `slot` of the loss sums, as [1].
Tensor loss_slot(const Tensor& loss_sums, int64_t slot) { return loss_sums.slice(slot, slot + 1); }

}  // namespace

int64_t loss_slots(int64_t mtp_depth) { return kFirstMtpSlot + mtp_depth; }

Tensor lm_loss_slot(const Tensor& loss_sums) { return loss_slot(loss_sums, kLmSlot); }
Tensor balance_loss_slot(const Tensor& loss_sums) { return loss_slot(loss_sums, kBalanceSlot); }
Tensor mtp_loss_slot(const Tensor& loss_sums, int64_t depth) {
  return loss_slot(loss_sums, kFirstMtpSlot + depth - 1);
}

MicroBatchLosses read_losses(const Tensor& sums, const CountedTokens& counted) {
  check_shape(sums, Shape{loss_slots(static_cast<int64_t>(counted.mtp.size()))}, "loss sums");
  HAI_CHECK(sums.device().is_cpu(), "read_losses reads a host copy of the loss sums, got {}", sums.str());
  const float* values = sums.data<float>();
  MicroBatchLosses losses;
  losses.lm = {.sum = values[kLmSlot], .tokens = counted.lm};
  losses.balance = values[kBalanceSlot];
  for (size_t depth = 0; depth < counted.mtp.size(); ++depth) {
    losses.mtp.push_back({.sum = values[kFirstMtpSlot + static_cast<int64_t>(depth)], .tokens = counted.mtp[depth]});
  }
  return losses;
}

}  // namespace hai
