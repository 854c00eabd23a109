#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include "framework/device/adamw.h"
#include "framework/device/attention.h"
#include "framework/device/cast.h"
#include "framework/device/cpu/parallel.h"
#include "framework/device/cross_entropy.h"
#include "framework/device/gemm.h"
#include "framework/device/rmsnorm.h"
#include "framework/device/swiglu.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(ThreadPool, CoversEveryItemOnceInContiguousChunks) {
  cpu::ThreadPool pool(3);
  for (int64_t count : {1, 2, 3, 10, 1001}) {
    std::vector<std::atomic<int>> visits(count);
    std::atomic<int> chunks = 0;
    pool.run(count, [&](int64_t begin, int64_t end) {
      EXPECT_LT(begin, end);
      ++chunks;
      for (int64_t i = begin; i < end; ++i) ++visits[i];
    });
    EXPECT_EQ(chunks.load(), std::min<int64_t>(count, 3)) << count;
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(visits[i].load(), 1) << "item " << i << " of " << count;
  }
}

TEST(ThreadPool, LimitRunsFewerChunks) {
  cpu::ThreadPool pool(3);
  pool.limit_threads(1);
  EXPECT_EQ(pool.active_threads(), 1);
  std::atomic<int> chunks = 0;
  pool.run(100, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    ++chunks;
  });
  EXPECT_EQ(chunks.load(), 1);
  pool.limit_threads(7);
  EXPECT_EQ(pool.active_threads(), 3);
}

TEST(ThreadPool, RethrowsAChunksException) {
  cpu::ThreadPool pool(2);
  EXPECT_THROW(pool.run(2, [](int64_t begin, int64_t) {
    if (begin == 1) throw std::runtime_error("chunk 1 failed");
  }),
               std::runtime_error);
  std::atomic<int64_t> items = 0;
  pool.run(10, [&](int64_t begin, int64_t end) { items += end - begin; });  // still usable
  EXPECT_EQ(items.load(), 10);
}

TEST(ThreadPool, NestedRunIsInlineOnItsCaller) {
  cpu::ThreadPool pool(2);
  std::atomic<int64_t> inner_items = 0;
  pool.run(2, [&](int64_t, int64_t) {
    pool.run(5, [&](int64_t begin, int64_t end) {
      EXPECT_EQ(end - begin, 5);
      inner_items += end - begin;
    });
  });
  EXPECT_EQ(inner_items.load(), 10);
}

// Each op below runs once with one thread and once with every thread of the process's pool; every tensor it
// writes must come out equal bit for bit. The shapes are large enough for parallel_for to split them (into
// chunks that do not fall on the GEMM's 4-row micro-tiles).
class SameBitsForAnyThreadCount : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cpu::cpu_thread_pool().threads() < 2) GTEST_SKIP() << "the pool has one thread; set HAI_CPU_THREADS=3";
  }
  void TearDown() override { cpu::cpu_thread_pool().limit_threads(cpu::cpu_thread_pool().threads()); }

  // `op` must rewrite all of `outputs` from inputs it does not modify (or restores itself).
  static void expect_same_bits(const std::function<void()>& op, const std::vector<Tensor>& outputs) {
    std::vector<std::vector<char>> single_thread = run_with_threads(1, op, outputs);
    std::vector<std::vector<char>> all_threads = run_with_threads(cpu::cpu_thread_pool().threads(), op, outputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_TRUE(single_thread[i] == all_threads[i]) << "output " << i << " " << outputs[i].str();
    }
  }

 private:
  static std::vector<std::vector<char>> run_with_threads(int threads, const std::function<void()>& op,
                                                         const std::vector<Tensor>& outputs) {
    cpu::cpu_thread_pool().limit_threads(threads);
    for (const Tensor& output : outputs) std::memset(output.raw(), 0xff, output.bytes());  // NaN in fp32
    op();
    std::vector<std::vector<char>> bytes;
    for (const Tensor& output : outputs) {
      const char* begin = static_cast<const char*>(output.raw());
      bytes.emplace_back(begin, begin + output.bytes());
    }
    return bytes;
  }
};

OwnedTensor to_bf16(const Tensor& x) {
  OwnedTensor converted(x.shape(), DType::bf16);
  cast_tensor(converted, x);
  return converted;
}

TEST_F(SameBitsForAnyThreadCount, Gemm) {
  OwnedTensor a = testing::random_tensor(Shape{37, 300}, 1), b = testing::random_tensor(Shape{45, 300}, 2);
  OwnedTensor c(Shape{37, 45}, DType::f32);
  expect_same_bits([&] { gemm(c, a, b, {.transpose_b = true, .alpha = 0.5f}); }, {c});

  OwnedTensor a_t = to_bf16(testing::random_tensor(Shape{300, 70}, 3));
  OwnedTensor b_bf16 = to_bf16(testing::random_tensor(Shape{300, 45}, 4));
  OwnedTensor c_t(Shape{70, 45}, DType::f32);
  expect_same_bits([&] { gemm(c_t, a_t, b_bf16, {.transpose_a = true}); }, {c_t});
}

TEST_F(SameBitsForAnyThreadCount, AttentionForwardAndBackward) {
  Shape qk{2, 40, 3, 12}, values{2, 40, 3, 8};
  OwnedTensor q = testing::random_tensor(qk, 5), k = testing::random_tensor(qk, 6);
  OwnedTensor v = testing::random_tensor(values, 7), d_out = testing::random_tensor(values, 8);
  OwnedTensor out(values, DType::f32), lse(Shape{2, 3, 40}, DType::f32);
  expect_same_bits([&] { attention_forward(out, lse, q, k, v, 0.3f); }, {out, lse});

  OwnedTensor d_q(qk, DType::f32), d_k(qk, DType::f32), d_v(values, DType::f32);
  attention_forward(out, lse, q, k, v, 0.3f);
  expect_same_bits([&] { attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, 0.3f); }, {d_q, d_k, d_v});
}

TEST_F(SameBitsForAnyThreadCount, CrossEntropy) {
  OwnedTensor logits = testing::random_tensor(Shape{50, 300}, 9, 3.0f);
  OwnedTensor targets(Shape{50}, DType::i32);
  for (int32_t t = 0; t < 50; ++t) targets.data<int32_t>()[t] = t % 7 == 3 ? kIgnoreTarget : t * 5;
  OwnedTensor losses(Shape{50}, DType::f32), d_logits(Shape{50, 300}, DType::f32);
  expect_same_bits([&] { cross_entropy_forward(losses, logits, targets); }, {losses});
  expect_same_bits([&] { cross_entropy_backward(d_logits, logits, targets, 0.02f); }, {d_logits});
}

TEST_F(SameBitsForAnyThreadCount, SwigluAndRmsnorm) {
  OwnedTensor gate = testing::random_tensor(Shape{64, 300}, 10), up = testing::random_tensor(Shape{64, 300}, 11);
  OwnedTensor d_out = testing::random_tensor(Shape{64, 300}, 12);
  OwnedTensor out(Shape{64, 300}, DType::f32), d_gate(Shape{64, 300}, DType::f32), d_up(Shape{64, 300}, DType::f32);
  expect_same_bits([&] { swiglu_forward(out, gate, up); }, {out});
  expect_same_bits([&] { swiglu_backward(d_gate, d_up, d_out, gate, up); }, {d_gate, d_up});

  OwnedTensor weight = testing::random_tensor(Shape{300}, 13), rstd(Shape{64}, DType::f32);
  expect_same_bits([&] { rmsnorm_forward(out, rstd, gate, weight, 1e-6f); }, {out, rstd});
}

TEST_F(SameBitsForAnyThreadCount, AdamW) {
  OwnedTensor initial = testing::random_tensor(Shape{10007}, 14), grads = testing::random_tensor(Shape{10007}, 15);
  OwnedTensor initial_m = to_bf16(testing::random_tensor(Shape{10007}, 16, 0.1f));
  OwnedTensor initial_v = to_bf16(testing::random_tensor(Shape{10007}, 17, 0.1f));
  OwnedTensor params(Shape{10007}, DType::f32), m(Shape{10007}, DType::bf16), v(Shape{10007}, DType::bf16);
  AdamWSettings settings{.lr = 0.01f, .weight_decay = 0.1f, .step = 3};
  expect_same_bits(
      [&] {
        copy_tensor(params, initial);
        copy_tensor(m, initial_m);
        copy_tensor(v, initial_v);
        for (int64_t i = 0; i < v.numel(); ++i) v.data<bf16>()[i].bits &= 0x7fff;  // second moments >= 0
        adamw_step(params, grads, m, v, settings);
      },
      {params, m, v});
}

}  // namespace
}  // namespace hai
