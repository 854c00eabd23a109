#pragma once
// Trainer: single-rank training of the DeepSeek-V3 model on the CPU backend. A step accumulates the gradients of
// parallel.micro_batches micro-batches, clips them by global norm, applies AdamW with the scheduled learning
// rate, moves the routing biases (auxiliary-loss-free balancing) and feeds the EMA; logging, metrics,
// evaluation and checkpoints follow the config (DESIGN.md "Outputs", "Checkpoints").

#include <memory>
#include <optional>
#include <string>

#include "framework/config/config.h"
#include "framework/data/data_loader.h"
#include "framework/metrics/metrics_writer.h"
#include "framework/metrics/progress.h"
#include "framework/optim/adamw.h"
#include "framework/optim/ema.h"
#include "framework/params/parameter_store.h"
#include "apps/hai-train/training_data.h"
#include "model/deepseek_v3_model.h"

namespace hai {

struct EvalResult {
  double lm_loss = 0;   // mean over counted tokens, main head
  double mtp_loss = 0;  // mean over the MTP depths of their token means
  int64_t tokens = 0;
  int64_t windows = 0;
};

class Trainer {
 public:
  explicit Trainer(const Config& config);
  ~Trainer();

  // Resumes per checkpoint.resume; returns the step it resumes after (0 for a fresh start).
  int64_t resume();
  // Trains from the current step to train.steps, then saves the final checkpoint.
  void train();
  // The evaluation source's first `max_windows` windows in order (all of them when max_windows < 0), with the
  // EMA weights when ema.eval is set.
  EvalResult evaluate(int64_t max_windows);

  int64_t step() const { return step_; }
  const ParameterStore& parameters() const { return store_; }

 private:
  void train_step();
  EvalResult evaluate_current(int64_t max_windows);
  void log_startup() const;
  void save_checkpoint();
  void run_evaluation();

  Config config_;
  ParameterStore store_;
  DeepseekV3Model model_;
  AdamW optimizer_;
  std::unique_ptr<ParameterEma> ema_;
  TrainingData data_;
  DataLoader loader_;
  std::optional<MetricsWriter> metrics_;
  StepTimeAverage step_time_;
  double flops_per_token_;
  int64_t step_ = 0;
};

}  // namespace hai
