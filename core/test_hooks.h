// test_hooks.h — the test hooks (fault injection for the suite): values that make rare events happen on cue (a NaN
// at a given step, a signal as the final save begins, a process killed, a
// memory limit), so that the tests can check what pelab does then. The
// tests set them in a child's environment as PELAB_TEST_*; they are read
// here, once, and production code asks test_hooks(), never the environment.
#ifndef PELAB_HOOKS_H
#define PELAB_HOOKS_H

typedef struct {
    long nan_at;            // PELAB_TEST_NAN_AT: step k's loss is NaN (-1: never)
    long step_sleep_ms;     // PELAB_TEST_STEP_SLEEP_MS: a pause after each step, so a signal lands mid-run
    long kill_rank;         // PELAB_TEST_KILL_RANK and _KILL_AT: that process SIGKILLs itself after step k
                            // (KILL_RANK alone: the one process the SIGNAL_AT_ hooks below signal; -1: every one)
    long kill_at;
    int signal_at_save;     // PELAB_TEST_SIGNAL_AT_SAVE: this signal is raised as the final save begins (0: none)
    int signal_at_output;   // PELAB_TEST_SIGNAL_AT_OUTPUT: this signal is raised as the outputs begin (0: none)
    double mem_available;   // PELAB_TEST_MEM_AVAILABLE: bytes, instead of /proc/meminfo (-1: read it)
    const char *cgroup_dir;   // PELAB_TEST_CGROUP_DIR: a folder of cgroup files instead of the process's group
    const char *cgroup_root;  // PELAB_TEST_CGROUP_ROOT: where the walk up from cgroup_dir stops
    long max_steps;         // PELAB_TEST_MAX_STEPS: a run's --steps capped at this (--stop-at scaled with it), so that
                            // the documents' example commands run in seconds (0: no cap)
} test_hooks_t;

// The hooks, read from the environment at the first call.
const test_hooks_t *test_hooks(void);

#endif
