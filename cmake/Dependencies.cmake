# Third-party libraries: the Debian 12 packages (scripts/setup.sh) and the GPU machine's newer ones.
find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  # Debian 12's libcli11-dev ships the header without a CMake package.
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
if(HAI_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# yaml-cpp 0.7 exports the target `yaml-cpp`, 0.8 exports `yaml-cpp::yaml-cpp` (and an alias).
if(TARGET yaml-cpp::yaml-cpp)
  set(HAI_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(HAI_YAML_TARGET yaml-cpp)
endif()

# PCRE2 (Unicode regexes) and ICU (Unicode normalization) for the tokenizer of framework/text, which hai-data's
# --tokenizer uses (scripts/setup.sh installs both). Without them framework/text is not built and hai-data only
# has its byte tokenizer.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
endif()
find_package(ICU QUIET COMPONENTS uc)
if(PCRE2_FOUND AND ICU_FOUND)
  set(HAI_WITH_TOKENIZER ON)
else()
  set(HAI_WITH_TOKENIZER OFF)
  message(WARNING "PCRE2 (libpcre2-dev) or ICU (libicu-dev) not found: hai-data is built without --tokenizer")
endif()
