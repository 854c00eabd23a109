// The observer hooks of Communicator (what the collective watchdog sees): every operation is reported when it
// starts, with its name and sequence number, and when it returns, also when it throws; communicators split later
// report to the same observer. A watchdog whose timeout is never reached lets operations run and stops cleanly.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "framework/comm/collective_watchdog.h"
#include "framework/comm/single_rank_communicator.h"
#include "framework/core/error.h"

namespace hai {
namespace {

class RecordingObserver final : public OperationObserver {
 public:
  void operation_started(Communicator& communicator, OperationRecord operation) override {
    events.push_back(fmt::format("start {} #{} of {}", operation.name, operation.sequence, name_of(communicator)));
  }
  void operation_finished(Communicator& communicator) override {
    events.push_back("finish " + name_of(communicator));
  }

  std::string name_of(const Communicator& communicator) const { return &communicator == world ? "world" : "part"; }

  const Communicator* world = nullptr;
  std::vector<std::string> events;
};

TEST(OperationObserver, SeesEachOperationStartAndFinishWithItsSequenceNumber) {
  SingleRankCommunicator world;
  auto observer = std::make_shared<RecordingObserver>();
  observer->world = &world;
  world.barrier();  // #1, before the observer
  world.set_observer(observer);
  OwnedTensor value(Shape{2}, DType::f32);  // [2]
  world.all_reduce(value, ReduceOp::sum);
  std::unique_ptr<Communicator> part = world.split(0, 0);
  part->barrier();
  EXPECT_EQ(observer->events, (std::vector<std::string>{"start all_reduce #2 of world", "finish world",
                                                        "start split #3 of world", "finish world",
                                                        "start barrier #1 of part", "finish part"}));
}

TEST(OperationObserver, IsToldOfTheFinishOfAnOperationThatThrows) {
  SingleRankCommunicator world;
  auto observer = std::make_shared<RecordingObserver>();
  observer->world = &world;
  world.set_observer(observer);
  OwnedTensor out(Shape{2}, DType::f32);  // [2]
  // The backend fails in group_end: the grouped recv has no matching send.
  world.group_start();
  world.recv(out, 0, 5);
  EXPECT_THROW(world.group_end(), Error);
  EXPECT_EQ(observer->events, (std::vector<std::string>{"start group_start #1 of world", "finish world",
                                                        "start recv #2 of world", "finish world",
                                                        "start group_end #3 of world", "finish world"}));
}

TEST(CollectiveWatchdog, FastOperationsRunAndTheWatchdogStops) {
  SingleRankCommunicator world;
  world.set_observer(std::make_shared<CollectiveWatchdog>(0, std::chrono::milliseconds(5000), 1));
  OwnedTensor value(Shape{4}, DType::f32);  // [4]
  for (int i = 0; i < 100; ++i) world.all_reduce(value, ReduceOp::sum);
  EXPECT_EQ(world.last_operation().sequence, 100u);
  world.set_observer(nullptr);  // joins the watchdog's thread
}

TEST(CollectiveWatchdog, RefusesATimeoutThatIsNotPositive) {
  EXPECT_THROW(CollectiveWatchdog(0, std::chrono::milliseconds(0), 1), Error);
}

}  // namespace
}  // namespace hai
