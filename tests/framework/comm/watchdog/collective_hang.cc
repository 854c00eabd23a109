// A two-rank job that hangs in a collective, for the watchdog test: `collective_hang TIMEOUT_MS SLEEP_S` installs
// a CollectiveWatchdog with TIMEOUT_MS on the world, runs a barrier (#1) and an all_reduce (#2) on every rank, then
// rank 1 sleeps SLEEP_S seconds before the next all_reduce (#3), in which the other ranks wait. Exits 0 only if
// nothing aborted it.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "framework/comm/collective_watchdog.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/logging.h"
#include "framework/tensor/tensor.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::chrono::milliseconds timeout(std::stoll(argv[1]));
  std::chrono::seconds sleep(std::stoll(argv[2]));
  hai::MpiRuntime runtime;
  std::unique_ptr<hai::Communicator> world = runtime.world();
  hai::init_logging(world->rank(), true);
  world->set_observer(std::make_shared<hai::CollectiveWatchdog>(world->rank(), timeout, 1));
  hai::OwnedTensor value(hai::Shape{1}, hai::DType::f32);  // [1]
  value.tensor().data<float>()[0] = 1.0f;
  world->barrier();
  world->all_reduce(value, hai::ReduceOp::sum);
  if (world->rank() == 1) std::this_thread::sleep_for(sleep);
  world->all_reduce(value, hai::ReduceOp::sum);
  world->set_observer(nullptr);
  return 0;
}
