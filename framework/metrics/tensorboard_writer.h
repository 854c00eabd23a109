#pragma once
// TensorBoardWriter: the scalars of metrics.jsonl's records as a TensorBoard event file (tensorboard_event.h),
// <run_dir>/tensorboard/events.out.tfevents.<unix time>.<host>.<pid>, one file per invocation; `tensorboard
// --logdir <run_dir>/tensorboard` reads them all. Flushed after every record. Rank 0 writes it. Tags:
//   train/loss train/lm_loss train/mtp_loss train/balance_loss train/lr train/grad_norm train/loss_scale
//   perf/tokens_per_s perf/step_ms perf/mfu (left out where it is not known: on the CPU) perf/mem_gib
//   eval/loss   expert_load/cv/layer_<L> (the coefficient of variation of a MoE layer's expert load)

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "framework/metrics/metrics_records.h"
#include "framework/metrics/tensorboard_event.h"

namespace hai {

class TensorBoardWriter {
 public:
  // A new file under run_dir/tensorboard (created if needed). resumed_step > 0: the run resumes from the
  // checkpoint of that step, and TensorBoard is told to drop the later events of earlier files (a SessionLog START).
  TensorBoardWriter(const std::filesystem::path& run_dir, int64_t resumed_step);

  void write(const StepRecord& record);
  void write(const EvalRecord& record);
  void write(const ExpertLoadRecord& record);

  const std::string& path() const { return path_; }

 private:
  void append(const Bytes& event);

  std::string path_;
  std::ofstream stream_;
};

}  // namespace hai
