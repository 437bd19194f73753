// test_hooks.c — the test hooks, read once from PELAB_TEST_* (see test_hooks.h).
#include "test_hooks.h"

#include <stdlib.h>

static long env_long(const char *name, long none) {
    const char *v = getenv(name);
    return v ? atol(v) : none;
}

const test_hooks_t *test_hooks(void) {
    static test_hooks_t h;
    static int read;
    if (!read) {
        const char *mem = getenv("PELAB_TEST_MEM_AVAILABLE");
        h = (test_hooks_t){
            .nan_at = env_long("PELAB_TEST_NAN_AT", -1),
            .step_sleep_ms = env_long("PELAB_TEST_STEP_SLEEP_MS", 0),
            .kill_rank = env_long("PELAB_TEST_KILL_RANK", -1),
            .kill_at = env_long("PELAB_TEST_KILL_AT", -1),
            .signal_at_save = (int)env_long("PELAB_TEST_SIGNAL_AT_SAVE", 0),
            .signal_at_output = (int)env_long("PELAB_TEST_SIGNAL_AT_OUTPUT", 0),
            .mem_available = mem ? atof(mem) : -1,
            .cgroup_dir = getenv("PELAB_TEST_CGROUP_DIR"),
            .cgroup_root = getenv("PELAB_TEST_CGROUP_ROOT"),
            .max_steps = env_long("PELAB_TEST_MAX_STEPS", 0),
        };
        read = 1;
    }
    return &h;
}
