# hai-train end to end (ctest runs this with cmake -P): exit codes and stderr of the config path, and a short run.
# Inputs: HAI_TRAIN (the binary), RANKS (1 = run alone, else under mpirun -np RANKS), MPIRUN (the mpirun command
# with its flags, space-separated), SOURCE_DIR (the repository), WORK_DIR (a scratch directory).

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# run_hai_train(<args>...): runs hai-train RANKS times over, sets exit_code, out and err.
function(run_hai_train)
  set(command ${HAI_TRAIN} ${ARGN})
  if(RANKS GREATER 1)
    separate_arguments(mpirun UNIX_COMMAND "${MPIRUN}")
    set(command ${mpirun} ${RANKS} ${command})
  endif()
  execute_process(COMMAND ${command} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE code OUTPUT_VARIABLE stdout
                  ERROR_VARIABLE stderr)
  set(exit_code ${code} PARENT_SCOPE)
  set(out "${stdout}" PARENT_SCOPE)
  set(err "${stderr}" PARENT_SCOPE)
endfunction()

function(expect_exit_code expected what)
  if(NOT exit_code EQUAL expected)
    message(FATAL_ERROR "${what}: exit code ${exit_code}, expected ${expected}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
endfunction()

# 1. A misspelt key: exit 2 on every rank, the error printed once (by rank 0) with its line.
file(WRITE ${WORK_DIR}/bad.yaml "data:\n  source: synthetic\nmodel:\n  hidden_sise: 64\n")
run_hai_train(--config bad.yaml)
expect_exit_code(2 "bad config")
set(expected_error "config error: model.hidden_sise: unknown key; did you mean model.hidden_size? (line 4)\n")
string(FIND "${err}" "${expected_error}" first)
string(FIND "${err}" "config error:" last REVERSE)
if(first EQUAL -1 OR NOT first EQUAL last)
  message(FATAL_ERROR "bad config: expected the error once on stderr:\n${expected_error}got:\n${err}")
endif()
if(RANKS EQUAL 1 AND NOT err STREQUAL expected_error)
  message(FATAL_ERROR "bad config: expected exactly\n${expected_error}got:\n${err}")
endif()

# 2. A bad --set value: exit 2, no line (it did not come from the file).
run_hai_train(--config bad.yaml --set model.hidden_sise=1 --set model=5)
expect_exit_code(2 "bad override")
string(FIND "${err}" "config error: model: expected a section of keys (got \"5\")\n" found)
if(found EQUAL -1)
  message(FATAL_ERROR "bad override: unexpected stderr:\n${err}")
endif()

# 3. No --config: a usage error, exit 2.
run_hai_train(--set model.hidden_size=3)
expect_exit_code(2 "missing --config")

# 4. A good config on one rank: the effective config is written, 2 steps train on synthetic tokens, exit 0 with a
#    step record per step in metrics.jsonl and the final checkpoint.
if(RANKS EQUAL 1)
  file(WRITE ${WORK_DIR}/good.yaml "data:\n  source: synthetic\ntrain:\n  steps: 2\n  seq_len: 16\n"
                                   "logging:\n  run_dir: run\ncheckpoint:\n  dir: run/checkpoints\n")
  run_hai_train(--config good.yaml --set model.hidden_size=96)
  expect_exit_code(0 "good config")
  file(READ ${WORK_DIR}/run/config.yaml effective)
  string(FIND "${effective}" "  hidden_size: 96\n" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "good config: effective config:\n${effective}\nstderr:\n${err}")
  endif()
  file(STRINGS ${WORK_DIR}/run/metrics.jsonl step_records REGEX "\"loss\":")
  list(LENGTH step_records step_count)
  file(READ ${WORK_DIR}/run/checkpoints/latest latest)
  if(NOT step_count EQUAL 2 OR NOT latest STREQUAL "step_00000002\n")
    message(FATAL_ERROR "good config: ${step_count} step records, latest '${latest}'\nstderr:\n${err}")
  endif()
endif()
