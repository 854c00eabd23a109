#pragma once
// Where the model stages of a pipeline schedule sit. Every micro-batch flows through the S model stages in order
// (stage 0 holds the embedding, stage S-1 the head and MTP); each pipeline rank holds one or two of them, its
// chunks. Chunk 0 always passes its activations to the next higher rank, chunk 1 to the next lower one.
//   1f1b:      S = pp. Rank r holds stage r as chunk 0.
//   dualpipe:  S = pp, every stage twice. Micro-batches [0, m/2) flow down (rank 0 -> pp-1) through chunk 0,
//              where rank r holds stage r; micro-batches [m/2, m) flow up through chunk 1, where rank r holds
//              stage pp-1-r. Rank 0 holds stage 0 and stage pp-1, so do rank pp-1.
//   dualpipev: S = 2 pp, folded into a V. Rank r holds stage r as chunk 0 (flowing down) and stage 2pp-1-r as
//              chunk 1 (flowing up); every micro-batch goes down, turns on rank pp-1 and comes back up, so stage 0
//              and stage S-1 both sit on rank 0.

#include "framework/config/config.h"

namespace hai {

struct PipelineShape {
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int ranks = 1;          // pp
  int micro_batches = 1;  // per optimizer step
};

// The rules of docs/deepseek-v3.md "DualPipe", checked before a schedule is built; throws hai::Error naming
// the broken rule. All: ranks >= 1, micro_batches >= 1. dualpipe: even ranks, even micro_batches >= 2 x ranks.
// dualpipev: micro_batches >= 2 x ranks.
void check_pipeline_shape(const PipelineShape& shape);

int stage_count(const PipelineShape& shape);  // S
int chunk_count(const PipelineShape& shape);  // chunks per rank: 1 (1f1b) or 2

// The rank that runs `stage` for `microbatch` (dualpipe: the copy of the micro-batch's direction).
int rank_of_stage(const PipelineShape& shape, int stage, int microbatch);
// The chunk of that rank that holds it.
int chunk_of_stage(const PipelineShape& shape, int stage, int microbatch);
// The stage that chunk `chunk` of `rank` holds.
int stage_of_chunk(const PipelineShape& shape, int rank, int chunk);

}  // namespace hai
