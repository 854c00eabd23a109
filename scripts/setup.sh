#!/usr/bin/env bash
# Installs what hai-train needs to build, test and run its demo on Debian 12 (apt-get, non-interactive).
# Idempotent: a machine that already has everything (including one without apt or network, like the GPU
# machine) is left untouched. The CUDA toolkit is optional and not installed here: the build detects nvcc
# (HAI_CUDA=AUTO) and the CPU backend always builds.
set -euo pipefail

# Each line: a file that proves the dependency is present, and the Debian package that provides it.
requirements=(
  "/usr/bin/g++ g++"
  "/usr/bin/cmake cmake"
  "/usr/bin/ninja ninja-build"
  "/usr/bin/git git"
  "/usr/include/yaml-cpp/yaml.h libyaml-cpp-dev"
  "/usr/include/spdlog/spdlog.h libspdlog-dev"
  "/usr/include/fmt/format.h libfmt-dev"
  "/usr/include/CLI/CLI.hpp libcli11-dev"
  "/usr/include/nlohmann/json.hpp nlohmann-json3-dev"
  "/usr/include/gtest/gtest.h libgtest-dev"
  "/usr/bin/mpirun openmpi-bin"
  "/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h libopenmpi-dev"
  "/usr/share/games/fortunes/fortunes fortunes-min"
  "/usr/share/games/fortunes/literature fortunes"
  "/usr/include/pcre2.h libpcre2-dev"
  "/usr/include/unicode/normalizer2.h libicu-dev"
  "/usr/bin/node nodejs"
  "/usr/bin/npm npm"
)

missing=()
for requirement in "${requirements[@]}"; do
  read -r path package <<<"$requirement"
  # NOTE: headers may live under a multiarch or /usr/local prefix on other distributions; accept any match.
  if [[ -e "$path" ]] || { [[ "$path" == /usr/include/* ]] && [[ -e "/usr/local/include/${path#/usr/include/}" ]]; }; then
    continue
  fi
  if [[ "$package" == libopenmpi-dev ]] && command -v mpicxx >/dev/null 2>&1; then continue; fi
  if [[ "$package" == nodejs || "$package" == npm ]] && command -v "${path##*/}" >/dev/null 2>&1; then continue; fi
  missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all dependencies present"
else
  echo "setup: installing ${missing[*]}"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: apt-get not found; install these packages by hand: ${missing[*]}" >&2
    exit 1
  fi
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "setup: done"
fi

"$(dirname "${BASH_SOURCE[0]}")/setup-tokenizer-reference.sh"
