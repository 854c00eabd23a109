#pragma once
// hai-data verify PREFIX --vocab-size N [--threads T]: checks a Megatron-LM indexed dataset before a run reads it:
// the index against both files (IndexedDataset) and every token id against [0, N) (token_id_check.h), in parallel.
// Prints a summary and exits 0, or prints the file, the document, the token offset and the id, and exits 1.

namespace hai {

// argv[0] is "verify".
int run_verify_command(int argc, char** argv);

}  // namespace hai
