// Bounds on every number (docs/reliability.md "Config"): the out-of-range numbers that crashed hai-train (SIGFPE,
// SIGSEGV), grew it without a message or made it misbehave are config errors naming the key; a plan that does not
// fit in memory is a config error before anything is allocated; and a fuzz of mutated configs never ends in a
// signal, a hang or a runaway allocation.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "framework/config/config_error.h"
#include "framework/config/load.h"
#include "framework/config/schema.h"
#include "tests/apps/faults/fault_tools.h"

namespace hai {
namespace {

using testing::hai_train_command;
using testing::ProcessResult;
using testing::run_shell;
using testing::TempDirectory;

// The key that loading the tiny config with `overrides` names in its ConfigError ("" when it loads).
std::string config_error_key(const std::vector<std::string>& overrides) {
  TempDirectory dir;
  try {
    testing::tiny_config(dir.path(), overrides);
  } catch (const ConfigError& error) {
    return error.key_path();
  }
  return "";
}

TEST(ConfigBoundsFaultTest, TheNumbersThatCrashedAreConfigErrorsNamingTheKey) {
  const std::string huge = "4611686018427387904";  // 2^62
  struct Case {
    std::vector<std::string> overrides;
    std::string key;
  };
  const std::vector<Case> cases = {
      {{"model.vocab_size=" + huge}, "model.vocab_size"},  // was SIGFPE
      {{"model.moe.expert_ffn_size=2305843009213693952"}, "model.moe.expert_ffn_size"},
      {{"model.max_seq_len=" + huge}, "model.max_seq_len"},
      {{"model.rope.yarn.original_max_position=" + huge}, "model.rope.yarn.original_max_position"},
      {{"train.micro_batch_size=" + huge, "train.global_batch_size=" + huge}, "train.micro_batch_size"},  // SIGSEGV
      {{"model.num_layers=100000000"}, "model.num_layers"},  // grew to 10 GB
      {{"runtime.collective_timeout_s=18446744073709552"}, "runtime.collective_timeout_s"},  // wrapped to 0.38 s
      {{"train.eval_batches=" + huge}, "train.eval_batches"},  // scored 0 windows
      {{"optimizer.lr=1e39"}, "optimizer.lr"},  // inf in fp32
      // Products of keys each within its own range.
      {{"model.num_layers=16384", "model.moe.routed_experts=65536", "model.moe.expert_ffn_size=4096"},
       "model.num_layers"},
      {{"model.vocab_size=2147483647", "model.hidden_size=1048576"}, "model.vocab_size"},
      {{"model.max_seq_len=16777216", "train.seq_len=16777216", "train.micro_batch_size=16777216",
        "train.global_batch_size=16777216"},
       "train.micro_batch_size"},
      {{"train.global_batch_size=2147483648"}, "train.global_batch_size"},
      {{"train.global_batch_size=1073741824"}, "train.global_batch_size"},  // 2^29 micro-batches per step
      {{"train.steps=1099511627776", "train.global_batch_size=1048576", "train.micro_batch_size=16"}, "train.steps"},
  };
  for (const Case& item : cases) {
    EXPECT_EQ(config_error_key(item.overrides), item.key) << ::testing::PrintToString(item.overrides);
  }
}

TEST(ConfigBoundsFaultTest, EveryNumberKeyHasAnUpperBound) {
  for (const ConfigKey& key : config_schema()) {
    bool number = key.type == "int" || key.type == "float" || key.type == "int | auto" || key.type == "[int, ...]";
    if (!number || key.path == "train.seed") continue;  // any non-negative seed is fine
    EXPECT_NE(key.rule.find(", "), std::string::npos) << key.path << ": " << key.rule;
  }
}

// A plan that cannot fit (~2 TiB, on a rank limited to 2 GiB) is a config error before anything is allocated.
TEST(ConfigBoundsFaultTest, APlanThatDoesNotFitInMemoryIsAConfigErrorBeforeAllocating) {
  TempDirectory dir;
  ProcessResult result = run_shell(
      "ulimit -v 2097152; timeout -s KILL 60 " + hai_train_command(dir.path(), {"model.hidden_size=262144"}),
      dir.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("config error: memory: the plan needs"), std::string::npos) << result.err;
}

// One mutated config: --set overrides and text appended to the tiny config's YAML.
struct Mutation {
  std::vector<std::string> overrides;
  std::string yaml_tail;
};

std::vector<Mutation> mutations(int count) {
  const std::vector<std::string> hostile = {
      "-1", "0", "1", "2", "3", "7", "2147483648", "4611686018427387904", "9223372036854775807",
      "9223372036854775808", "18446744073709551616", "1e308", "-1e308", "1e39", "1e-320", ".nan", ".inf", "-.inf",
      "abc", "[]", "{}", "[1, 2]", "true", "0.5", "~", "\"\"", "0x10", "1_000"};
  const std::vector<std::string> sizes = {"model.vocab_size", "model.hidden_size", "model.num_layers",
                                          "model.dense_ffn_size", "model.num_heads", "model.moe.routed_experts",
                                          "model.moe.expert_ffn_size", "model.max_seq_len", "train.seq_len",
                                          "train.micro_batch_size", "train.global_batch_size", "train.eval_batches",
                                          "model.q_lora_rank", "model.kv_lora_rank", "model.head_chunk_tokens"};
  const std::vector<std::string> yaml_tails = {
      "train:\n  steps: 3\n",                               // a duplicate top-level key
      "extra: &anchor {steps: 2}\ntrainer: *anchor\n",      // an alias and an unknown section
      "model:\n  <<: {vocab_size: 9223372036854775807}\n",  // a merge key
      "model: [1, 2, 3]\n",                                 // a section of the wrong type
      "train:\n\tsteps: 2\n",                               // a tab
      "runtime: {collective_timeout_s: 1e100}\n",           // a float for an integer
      "data: {source: indexed}\n",                          // no data.path
      "optimizer: {betas: [0.9, .nan]}\n"};
  // NOTE: the path keys (strings) are left out: a path that does not exist is found when it is opened, an error
  // naming the key (exit 1; EvalFaultTest, the checkpoint tests).
  std::vector<std::string> keys;
  for (const ConfigKey& key : config_schema()) {
    if (key.type != "string") keys.push_back(key.path);
  }
  std::mt19937_64 random(20261207);
  auto pick = [&](const std::vector<std::string>& list) { return list[random() % list.size()]; };
  std::vector<Mutation> result;
  for (int trial = 0; trial < count; ++trial) {
    Mutation mutation;
    switch (trial % 4) {
      case 0: mutation.overrides = {pick(keys) + "=" + pick(hostile)}; break;
      case 1: mutation.overrides = {pick(keys) + "=" + pick(hostile), pick(keys) + "=" + pick(hostile)}; break;
      case 2: mutation.yaml_tail = pick(yaml_tails); break;
      default:  // products: two sizes at large powers of two
        for (int i = 0; i < 2; ++i) {
          mutation.overrides.push_back(pick(sizes) + "=" + std::to_string(int64_t{1} << (16 + random() % 32)));
        }
    }
    result.push_back(mutation);
  }
  return result;
}

// The fuzz: 220 mutated configs (hostile values of every key but the paths, several keys at once, overflowing
// products, YAML duplicates, aliases, merge keys, tabs and wrong types). Each is loaded in process as hai-train loads
// it: a ConfigError or a config, never another exception or a crash. Through the binary, under a time limit and a
// 4 GiB address-space limit: every one that loads must train cleanly (3 profiled steps: bounded work whatever
// train.steps says), even one it cannot fit must exit 2 (memory), and every 8th config error must exit 2 with its
// "config error:" line; never a signal, a hang or a runaway allocation.
TEST(ConfigBoundsFaultTest, TwoHundredMutatedConfigsGiveAConfigErrorOrACleanRun) {
  int config_errors = 0, clean_runs = 0, binary_runs = 0;
  std::vector<Mutation> trials = mutations(220);
  for (size_t trial = 0; trial < trials.size(); ++trial) {
    const Mutation& mutation = trials[trial];
    TempDirectory dir;
    std::string config = testing::write_tiny_config(dir.path());
    if (!mutation.yaml_tail.empty()) {
      testing::write_text(config, testing::tiny_config_yaml(dir.path()) + mutation.yaml_tail);
    }
    std::string what = "trial " + std::to_string(trial) + ": " + ::testing::PrintToString(mutation.overrides) +
                       "\n" + mutation.yaml_tail;
    bool loads = true;
    try {
      load_config(config, mutation.overrides, 1);
    } catch (const ConfigError&) {
      loads = false;
      ++config_errors;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "not a config error: " << error.what() << "\n" << what;
      continue;
    }
    if (!loads && trial % 8 != 0) continue;
    ++binary_runs;
    std::string command = std::string(HAI_TRAIN_BINARY) + " --config " + config +
                          testing::set_flags(mutation.overrides) + " --profile-steps 1";
    ProcessResult result = run_shell("ulimit -v 4194304; timeout -s KILL 120 " + command, dir.path());
    what += "\n" + result.err;
    ASSERT_EQ(result.signal, 0) << "killed by signal " << result.signal << " (9: the time limit): " << what;
    if (result.exit_code == 2) {
      EXPECT_NE(result.err.find("config error: "), std::string::npos) << what;
    } else {
      EXPECT_TRUE(loads) << what;
      EXPECT_EQ(result.exit_code, 0) << what;
      ++clean_runs;
    }
  }
  std::printf("config fuzz: %zu configs, %d config errors, %d run through hai-train, %d clean runs\n", trials.size(),
              config_errors, binary_runs, clean_runs);
  EXPECT_GT(clean_runs, 0);
  EXPECT_GT(config_errors, 150);
}

}  // namespace
}  // namespace hai
