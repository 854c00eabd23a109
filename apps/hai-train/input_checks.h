#pragma once
// The files and directories the config names, checked before any communicator or memory exists, so that a user's
// mistake is reported as one line naming the key and the path (UserError, exit 3) instead of failing deep inside.

#include "framework/config/config.h"

namespace hai {

// data.path and data.eval_path (indexed data): PATH.idx and PATH.bin exist and are readable regular files;
// checkpoint.resume (a path, not auto or none): an existing directory. Throws UserError.
void check_input_files(const Config& config);

}  // namespace hai
