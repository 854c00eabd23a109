#pragma once
// A world of ranks (world_fixture.h) sharing one directory: rank 0 creates it with the tiny config (tiny_config.h)
// in it and tells every rank its path; barrier() keeps rank 0 from removing it before the others are done.

#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "framework/tensor/tensor.h"
#include "tests/apps/tiny_config.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai::testing {

class TinyConfigWorld : public World {
 protected:
  // Rank 0's temporary directory, with the tiny config written into it, known to every rank.
  std::filesystem::path shared_directory() {
    OwnedTensor path_bytes(Shape{4096}, DType::u8);  // [4096] rank 0's path, NUL-terminated
    std::memset(path_bytes.tensor().raw(), 0, 4096);
    if (rank() == 0) {
      directory_.emplace();
      write_tiny_config(directory_->path());
      std::string path = directory_->path().string();
      std::memcpy(path_bytes.tensor().raw(), path.c_str(), path.size());
    }
    world_->broadcast(path_bytes, 0);
    return std::filesystem::path(static_cast<const char*>(path_bytes.tensor().raw()));
  }

  // Waits for every rank, so that rank 0 removes the directory last.
  void barrier() {
    OwnedTensor token(Shape{1}, DType::i32);  // [1]
    token.data<int32_t>()[0] = 0;
    world_->all_reduce(token, ReduceOp::sum);
  }

 private:
  std::optional<TempDirectory> directory_;  // rank 0 only
};

}  // namespace hai::testing
