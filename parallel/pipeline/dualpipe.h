#pragma once
// DualPipe and DualPipeV (deepseek-ai/DualPipe): two pipelines run through every rank in opposite directions, so
// one micro-batch's forward overlaps another's backward (FB) in the steady state. Both schedules give each rank
// the same eight phases; they differ only in how many ranks one direction spans before its turn (n) and how many
// micro-batches each chunk sees (h):
//   dualpipe:  n = pp / 2, h = m / 2, d = min(r, pp-1-r); the near chunk is the one whose pipeline starts at the
//              rank's end of the pipe (chunk 0 for r < pp/2, chunk 1 otherwise).
//   dualpipev: n = pp, h = m, d = r; the near chunk is chunk 0 (the way down), the far chunk 1 (the way up).
// With near = N and far = R, rank r runs:
//   1. 2(n-d-1) x F(N)                     (warm up the near pipeline)
//   2. (d+1) x F(N) F(R)
//   3. (n-d-1) x B(R) W(R) F(R)            (zero bubble: W right after, off the critical path of the B)
//   4. (h-2n+d+1) x FB(F N, B R) FB(F R, B N); the first FB(F N, B R) of the rank with d = n-1 runs as F(N) then B(R)
//   5. (n-d-1) x B(R) FB(F R, B N)
//   6. (d+1) x B(R) B(N); from the middle of this phase on, the W of each B is deferred
//   7. (n-d-1) x W B(N) with W deferred    (each W runs the oldest deferred weight gradient)
//   8. (d+1) x W
// A B whose W is not deferred is followed by its W at once. Phase 4 is non-empty exactly when h >= 2n, which is
// the rule m >= 2 pp of both schedules.

#include <vector>

#include "parallel/pipeline/instruction.h"
#include "parallel/pipeline/placement.h"

namespace hai {

// The compute instructions (F, B, W, FB) of `rank` under shape.schedule = dualpipe or dualpipev, in order;
// communication.h adds the messages.
std::vector<Instruction> dualpipe_compute(const PipelineShape& shape, int rank);

}  // namespace hai
