#include "framework/device/dispatch.h"

namespace hai {

void throw_no_backend(const char* op, Device device) {
  HAI_THROW("{} has no implementation for tensors on {}", op, to_string(device));
}

}  // namespace hai
