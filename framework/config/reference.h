#pragma once
// The key reference of docs/config.md, generated from the schema: one table per top-level section with every
// key's type, default, rule and description. A test keeps docs/config.md equal to it.

#include <string>

namespace hai {

std::string config_reference_markdown();

}  // namespace hai
