// all_reduce, reduce_scatter, all_gather, broadcast and all_to_all_v across ranks, with values that depend on
// the rank (rank r contributes r + 1 + i), for every dtype each operation applies to.

#include <cstring>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/core/rng.h"
#include "tests/framework/comm/comm_test_util.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

using testing::make_tensor;
using testing::values_of;

using Collectives = testing::World;

TEST_F(Collectives, AllReduceSumsMaxesAndMins) {
  const double ranks = size();
  for (DType dtype : testing::kReducibleDtypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      OwnedTensor tensor = make_tensor(Shape{2, 5}, dtype, [&](int64_t i) { return rank() + 1.0 + i; });
      world_->all_reduce(tensor, op);
      for (int64_t i = 0; i < 10; ++i) {
        double expected = op == ReduceOp::sum ? ranks * (ranks + 1) / 2 + ranks * i
                          : op == ReduceOp::max ? ranks + i
                                                : 1.0 + i;
        EXPECT_EQ(testing::value_at(tensor, i), expected)
            << dtype_name(dtype) << " " << reduce_op_name(op) << " element " << i;
      }
    }
  }
  EXPECT_EQ(world_->last_operation().name, "all_reduce");
  EXPECT_EQ(world_->last_operation().sequence, 15u);
}

TEST_F(Collectives, AllReduceKeepsSixtyFourBitIntegers) {
  constexpr double kTwoPow33 = 8589934592.0;
  OwnedTensor tensor = make_tensor(Shape{3}, DType::i64, [&](int64_t i) { return (rank() + 1) * kTwoPow33 + i; });
  world_->all_reduce(tensor, ReduceOp::sum);
  const int64_t ranks = size();
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(tensor.data<int64_t>()[i], ranks * (ranks + 1) / 2 * (int64_t{1} << 33) + ranks * i);
  }
}

// Rank 0 holds a large value, every other rank a small one that the half-precision spacing there would swallow
// if the sum were rounded after every addition: reducing in fp32 and rounding once keeps their total.
TEST_F(Collectives, HalfPrecisionSumsInFp32AndRoundsOnce) {
  struct Case {
    DType dtype;
    double large;  // where the dtype's spacing is 2
  };
  for (Case test : {Case{DType::bf16, 256.0}, Case{DType::f16, 2048.0}}) {
    OwnedTensor tensor = make_tensor(Shape{4}, test.dtype, [&](int64_t) { return rank() == 0 ? test.large : 0.75; });
    world_->all_reduce(tensor, ReduceOp::sum);
    float exact = static_cast<float>(test.large + 0.75 * (size() - 1));
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(testing::value_at(tensor, i), round_to_dtype(exact, test.dtype)) << dtype_name(test.dtype);
    }
  }
}

TEST_F(Collectives, AllReduceIsBitwiseIdenticalOnEveryRank) {
  constexpr int64_t kCount = 1000;
  OwnedTensor tensor = make_tensor(Shape{kCount}, DType::f32,
                                   [&](int64_t i) { return CounterRng(7, rank()).normal(static_cast<uint64_t>(i)); });
  world_->all_reduce(tensor, ReduceOp::sum);
  for (int64_t i = 0; i < kCount; ++i) {
    double expected = 0.0;
    for (int r = 0; r < size(); ++r) expected += CounterRng(7, r).normal(static_cast<uint64_t>(i));
    EXPECT_NEAR(tensor.data<float>()[i], expected, 1e-5);
  }
  OwnedTensor every_rank(Shape{size(), kCount}, DType::f32);
  world_->all_gather(every_rank, tensor);
  for (int r = 0; r < size(); ++r) {
    EXPECT_EQ(std::memcmp(every_rank.tensor().slice(r, r + 1).raw(), tensor.tensor().raw(), tensor.tensor().bytes()), 0)
        << "rank " << r << " reduced to other bits";
  }
}

TEST_F(Collectives, ReduceScatterGivesEachRankItsChunk) {
  constexpr int64_t kChunk = 5;
  const double ranks = size();
  for (DType dtype : testing::kReducibleDtypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      OwnedTensor in = make_tensor(Shape{size(), kChunk}, dtype, [&](int64_t j) { return rank() + 1.0 + j; });
      OwnedTensor out(Shape{kChunk}, dtype);
      world_->reduce_scatter(out, in, op);
      // In place: into this rank's own chunk of the input.
      Tensor own_chunk = in.tensor().slice(rank(), rank() + 1).reshape(Shape{kChunk});
      world_->reduce_scatter(own_chunk, in, op);
      for (int64_t k = 0; k < kChunk; ++k) {
        double j = static_cast<double>(rank() * kChunk + k);
        double expected = op == ReduceOp::sum ? ranks * (ranks + 1) / 2 + ranks * j
                          : op == ReduceOp::max ? ranks + j
                                                : 1.0 + j;
        EXPECT_EQ(testing::value_at(out, k), expected) << dtype_name(dtype) << " " << reduce_op_name(op);
        EXPECT_EQ(testing::value_at(own_chunk, k), expected) << dtype_name(dtype) << " " << reduce_op_name(op)
                                                             << " in place";
      }
    }
  }
}

TEST_F(Collectives, AllGatherConcatenatesInRankOrder) {
  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor in = make_tensor(Shape{3}, dtype, [&](int64_t i) { return rank() * 10.0 + i + 1; });
    OwnedTensor out(Shape{size(), 3}, dtype);
    world_->all_gather(out, in);
    OwnedTensor in_place = make_tensor(Shape{size(), 3}, dtype, [&](int64_t j) {
      return j / 3 == rank() ? rank() * 10.0 + j % 3 + 1 : 0.0;
    });
    world_->all_gather(in_place, in_place.tensor().slice(rank(), rank() + 1));
    for (int64_t j = 0; j < 3 * size(); ++j) {
      double expected = (j / 3) * 10.0 + j % 3 + 1;
      EXPECT_EQ(testing::value_at(out, j), expected) << dtype_name(dtype) << " element " << j;
      EXPECT_EQ(testing::value_at(in_place, j), expected) << dtype_name(dtype) << " in place, element " << j;
    }
  }
}

TEST_F(Collectives, BroadcastCopiesTheRootsValues) {
  for (int root : {0, size() - 1}) {
    for (DType dtype : testing::kAllDtypes) {
      OwnedTensor tensor =
          make_tensor(Shape{2, 4}, dtype, [&](int64_t i) { return rank() == root ? 7.0 * i + 1 : 0.0; });
      world_->broadcast(tensor, root);
      for (int64_t i = 0; i < 8; ++i) {
        EXPECT_EQ(testing::value_at(tensor, i), 7.0 * i + 1) << dtype_name(dtype) << " from root " << root;
      }
    }
  }
}

// Row c of the rows rank `source` sends rank `target` (row k of that block): every value names all four.
double dispatched_value(int source, int target, int64_t k, int64_t column) {
  return source * 64.0 + target * 16.0 + k * 2.0 + column;
}

// Uneven rows, zeros included: rank r sends (r + 2p) % 3 rows to rank p.
int64_t rows_sent(int source, int target) { return (source + 2 * target) % 3; }

TEST_F(Collectives, AllToAllVMovesUnevenRowsIncludingNone) {
  std::vector<int64_t> send_counts(size());
  for (int p = 0; p < size(); ++p) send_counts[p] = rows_sent(rank(), p);

  // The receive counts come from an all_to_all_v of one row per rank, as expert dispatch exchanges them.
  OwnedTensor counts_out = make_tensor(Shape{size(), 1}, DType::i64, [&](int64_t p) { return send_counts[p]; });
  OwnedTensor counts_in(Shape{size(), 1}, DType::i64);
  std::vector<int64_t> ones(size(), 1);
  world_->all_to_all_v(counts_out, ones, counts_in, ones);
  std::vector<int64_t> recv_counts(counts_in.data<int64_t>(), counts_in.data<int64_t>() + size());
  for (int p = 0; p < size(); ++p) EXPECT_EQ(recv_counts[p], rows_sent(p, rank()));

  int64_t send_rows = 0, recv_rows = 0;
  for (int p = 0; p < size(); ++p) send_rows += send_counts[p], recv_rows += recv_counts[p];
  constexpr double kUntouched = 250.0;
  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor send(Shape{send_rows, 2}, dtype);
    int64_t row = 0;
    for (int p = 0; p < size(); ++p) {
      for (int64_t k = 0; k < send_counts[p]; ++k, ++row) {
        for (int64_t c = 0; c < 2; ++c) testing::set_value(send, row * 2 + c, dispatched_value(rank(), p, k, c));
      }
    }
    OwnedTensor recv = make_tensor(Shape{recv_rows + 2, 2}, dtype, [](int64_t) { return kUntouched; });
    world_->all_to_all_v(send, send_counts, recv, recv_counts);
    row = 0;
    for (int p = 0; p < size(); ++p) {
      for (int64_t k = 0; k < recv_counts[p]; ++k, ++row) {
        for (int64_t c = 0; c < 2; ++c) {
          EXPECT_EQ(testing::value_at(recv, row * 2 + c), dispatched_value(p, rank(), k, c))
              << dtype_name(dtype) << " from rank " << p << " row " << k;
        }
      }
    }
    for (int64_t j = recv_rows * 2; j < recv.numel(); ++j) EXPECT_EQ(testing::value_at(recv, j), kUntouched);
  }
}

TEST_F(Collectives, SequenceNumbersAgreeAcrossRanks) {
  OwnedTensor tensor = make_tensor(Shape{2}, DType::f32, [](int64_t) { return 1.0; });
  world_->all_reduce(tensor, ReduceOp::sum);
  world_->barrier();
  world_->broadcast(tensor, 0);
  EXPECT_EQ(world_->last_operation().name, "broadcast");
  EXPECT_EQ(world_->last_operation().sequence, 3u);
  OwnedTensor mine = make_tensor(Shape{1}, DType::i64, [&](int64_t) { return world_->last_operation().sequence; });
  OwnedTensor everyone(Shape{size()}, DType::i64);
  world_->all_gather(everyone, mine);
  EXPECT_EQ(world_->last_operation().sequence, 4u);
  for (int r = 0; r < size(); ++r) EXPECT_EQ(everyone.data<int64_t>()[r], 3) << "rank " << r;
}

}  // namespace
}  // namespace hai
