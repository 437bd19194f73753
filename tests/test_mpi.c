// test_mpi.c — data-parallel training over MPI (docs/mpi.md), with
// ./train-mpi under mpirun: two processes with --batch 4 take the same steps
// as one with --batch 8, twice the same bytes, a checkpoint of two processes
// resumes in one, and one process dying ends the job with a non-zero status
// and a loadable checkpoint, and the evaluations sum over the processes.
// Skipped, with a message, without OpenMPI. The dead-process test, last,
// removes the folder.
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static char dir[] = "/tmp/pelab-mpi-XXXXXX";
static char out[1 << 14];

#define MPIRUN "mpirun -np %d --oversubscribe --bind-to none -x PELAB_TEST_KILL_RANK -x PELAB_TEST_KILL_AT -x PELAB_TEST_STEP_SLEEP_MS "
#define MODEL "--d-model 32 --layers 2 --heads 2 --ctx 32 --lr 1e-2 --quiet --overwrite "  // the model alone: --stop-at refuses evaluation options; the tests reuse their checkpoints' names
#define SHAPE MODEL "--threads 1 --eval-tokens 2048 "

static int have_mpi(void) {
    struct stat st;
    if (stat("./train-mpi", &st) != 0 || system("command -v mpirun >/dev/null 2>&1") != 0) return 0;
    if (geteuid() == 0) {  // OpenMPI refuses root unless told (docs/mpi.md)
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);  // containers often forbid the kernel's copy
    static int made;
    if (!made && !mkdtemp(dir)) return 0;
    made = 1;
    return 1;
}

// Runs a shell command; its stdout and stderr land in out. Returns the exit status.
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[2048], path[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd - 80, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/out", dir);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " > %s 2>&1", path);
    int s = system(cmd);
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[k] = 0;
    if (f) fclose(f);
    return WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
}

// The number after `key` in the file dir/name (a --json file), or NAN.
static double json_num(const char *name, const char *key) {
    char path[128], buf[1 << 14];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
    const char *p = strstr(buf, key);
    return p ? atof(p + strlen(key)) : NAN;
}

static int close_enough(double a, double b) { return fabs(a - b) <= 1e-5 * fabs(b); }

static int test_two_processes_one_step(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun (scripts/install-deps.sh --mpi; make train-mpi)\n"), TEST_SKIPPED;
    int s2 = sh(MPIRUN "./train-mpi " SHAPE "--steps 20 --batch 4 --json %s/two.json --save %s/two.ck", 2, dir, dir);
    int s1 = sh("./train " SHAPE "--steps 20 --batch 8 --json %s/one.json", dir);
    EXPECT(s2 == 0 && s1 == 0, "runs: exit %d and %d (%s)", s2, s1, out);
    double l2 = json_num("two.json", "\"final_loss\": "), l1 = json_num("one.json", "\"final_loss\": ");
    double e2 = json_num("two.json", "\"loss\": "), e1 = json_num("one.json", "\"loss\": ");
    EXPECT(close_enough(l2, l1), "final loss: 2 processes × batch 4 %.7f, 1 × batch 8 %.7f", l2, l1);
    EXPECT(close_enough(e2, e1), "eval loss: 2 processes %.7f, 1 process %.7f", e2, e1);
    // the same two-process run again: the same bytes
    sh(MPIRUN "./train-mpi " SHAPE "--steps 20 --batch 4 --save %s/again.ck", 2, dir);
    char two[512], again[512];
    snprintf(two, sizeof two, "%s/two.ck", dir);
    snprintf(again, sizeof again, "%s/again.ck", dir);
    EXPECT(test_ckpt_same_run(two, again), "two identical two-process runs saved different checkpoints");
    return fails;
}

static int test_resume_other_process_count(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun\n"), TEST_SKIPPED;
    int s = sh(MPIRUN "./train-mpi " MODEL "--threads 1 --steps 20 --stop-at 10 --batch 4 --save %s/half.ck", 2, dir);
    EXPECT(s == 0, "two processes, --stop-at 10: exit %d (%s)", s, out);
    s = sh("./train --resume %s/half.ck --save %s/half.ck --threads 1 --quiet --eval-tokens 2048 --json %s/resumed.json", dir, dir, dir);
    EXPECT(s == 0, "resumed in one process: exit %d (%s)", s, out);
    sh("./train " SHAPE "--steps 20 --batch 8 --json %s/one.json", dir);
    double a = json_num("resumed.json", "\"final_loss\": "), b = json_num("one.json", "\"final_loss\": ");
    EXPECT(close_enough(a, b), "2 processes then 1: final loss %.7f, 1 process throughout %.7f", a, b);
    s = sh(MPIRUN "./train-mpi " MODEL "--threads 1 --steps 20 --stop-at 10 --batch 3 --save %s/odd.ck", 2, dir);
    s = sh(MPIRUN "./train-mpi --resume %s/odd.ck --quiet --threads 1", 4, dir);
    EXPECT(s != 0 && strstr(out, "does not split over 4 processes"), "a batch of 6 over 4 processes: exit %d (%s)", s, out);
    return fails;
}

// The lines of a run's output that report results ("eval …", "probe …",
// "order_acc…"), in order: what another process count must print alike.
static void results_of(const char *text, char *keep) {
    size_t k = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (!strncmp(p, "eval ", 5) || !strncmp(p, "probe ", 6) || !strncmp(p, "order_acc", 9)) {
            memcpy(keep + k, p, n + (p[n] == '\n'));
            k += n + (p[n] == '\n');
        }
        p += n + (p[n] == '\n');
    }
    keep[k] = 0;
}

// The evaluations (sliding window, attention statistics, probes) sum over the processes' windows: the sliding
// window's loss, where attention goes and the position probe are the same
// with two processes as with one (standard output, which prints them all).
static int test_evaluations_split_over_processes(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun\n"), TEST_SKIPPED;
    int s = sh("./train " SHAPE "--steps 10 --save %s/ev.ck", dir);
    EXPECT(s == 0, "training: exit %d (%s)", s, out);
#define EVALS "--load %s/ev.ck --eval-ctx 32,128 --eval-window 16 --attn-stats --probe-positions --threads 1 " \
              "--eval-tokens 2048 --json %s/ev.json"
    static char one[sizeof out], two[sizeof out];
    sh("./train " EVALS, dir, dir);
    results_of(out, one);
    s = sh(MPIRUN "./train-mpi " EVALS, 2, dir, dir);
#undef EVALS
    results_of(out, two);
    EXPECT(s == 0 && strstr(one, "window=16") && strstr(one, "probe ctx=128") && strcmp(one, two) == 0,
           "one process:\n%s\ntwo processes (exit %d):\n%s", one, s, two);
    return fails;
}

static int test_dead_process_ends_the_job(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun\n"), TEST_SKIPPED;
    setenv("PELAB_TEST_KILL_RANK", "1", 1);
    setenv("PELAB_TEST_KILL_AT", "25", 1);
    int s = sh(MPIRUN "./train-mpi " SHAPE "--steps 60 --batch 4 --save %s/dead.ck --save-every 10", 2, dir);
    unsetenv("PELAB_TEST_KILL_RANK");
    unsetenv("PELAB_TEST_KILL_AT");
    EXPECT(s != 0, "process 1 was killed at step 25, yet mpirun exited 0");
    s = sh("./train --load %s/dead.ck --threads 1 --eval-tokens 512", dir);
    EXPECT(s == 0, "the checkpoint of step 20 should load: exit %d (%s)", s, out);
    sh("rm -rf %s", dir);
    return fails;
}

// The exit status a background job wrote into dir/name (-1: none).
static int exit_status_in(const char *name) {
    char path[128], rc[16] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(rc, sizeof rc, f)) rc[0] = 0;
        fclose(f);
    }
    return rc[0] ? atoi(rc) : -1;
}

// A signal that reaches one process only: every process
// stops after the same step, on the stop request they agreed on in that
// step's sum, saves one checkpoint and exits 130. Before, the process that
// got the signal stopped on its own flag while the others went on to the
// next sum (MPI_ERR_TRUNCATE or a hang). Repeated at random moments.
static int test_signal_to_one_process(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun\n"), TEST_SKIPPED;
    setenv("PELAB_TEST_STEP_SLEEP_MS", "3", 1);
    int rounds = 5, saved = 0;
    for (int round = 0; round < rounds; round++) {
        sh("rm -f %s/one.ck", dir);
        // in the background, under a generous hang guard; rank 1's pid is the larger of the two. The signal
        // goes some time after training began (--log's first line: both processes are set up), not after a
        // fixed time from the start, which a loaded machine can spend still starting.
        sh("rm -f %s/one.log", dir);
        int s = sh("(timeout 300 " MPIRUN "./train-mpi " SHAPE "--steps 5000 --until-solved 0 --batch 4 --save %s/one.ck "
                   "--log %s/one.log > %s/one.out 2>&1; echo $? > %s/one.rc) & "
                   "for i in $(seq 1200); do [ -s %s/one.log ] && break; sleep 0.05; done; sleep %.2f; "
                   "kill -INT $(pgrep -f '^./train-mpi .*%s/one.ck' | sort -n | tail -1); wait",
                   2, dir, dir, dir, dir, dir, 0.1 + 0.3 * round, dir);
        int rc = exit_status_in("one.rc");
        sh("cat %s/one.out", dir);
        EXPECT(s == 0 && rc == 130 && !strstr(out, "MPI_ERR") && !strstr(out, "TRUNCATE"),
               "round %d: mpirun exited %d (want 130): %.400s", round, rc, out);
        s = sh("./train --load %s/one.ck --threads 1 --eval-tokens 512", dir);
        EXPECT(s == 0, "round %d: the checkpoint does not load: %.300s", round, out);
        saved += s == 0;
    }
    unsetenv("PELAB_TEST_STEP_SLEEP_MS");
    printf("    %d rounds of SIGINT to one of two processes: %d saved and loaded\n", rounds, saved);
    return fails;
}

// Different stop signals to the two processes (SIGINT to one, SIGTERM to
// the other, within one step): they agree on one of the signals sent, by
// rank (SIGTERM before SIGINT before SIGHUP), never on a mean of their
// numbers (before: (2 + 15) / 2 = 8, "interrupted by SIGHUP"-like nonsense,
// exit 136, 4 times in 4). Where the two land in different steps the first
// one (SIGINT) is agreed first: 130 is right then too.
static int test_different_signals_agree_on_one(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun\n"), TEST_SKIPPED;
    setenv("PELAB_TEST_STEP_SLEEP_MS", "40", 1);
    int rounds = 4, term = 0;
    for (int round = 0; round < rounds; round++) {
        sh("rm -f %s/two.ck %s/two.log", dir, dir);
        int s = sh("(timeout 300 " MPIRUN "./train-mpi " SHAPE "--steps 5000 --until-solved 0 --batch 4 --save %s/two.ck "
                   "--log %s/two.log > %s/two.out 2>&1; echo $? > %s/two.rc) & "
                   "for i in $(seq 1200); do [ -s %s/two.log ] && break; sleep 0.05; done; sleep 0.3; "
                   "p=$(pgrep -f '^./train-mpi .*%s/two.ck' | sort -n); kill -INT $(echo $p | cut -d' ' -f1); "
                   "kill -TERM $(echo $p | cut -d' ' -f2); wait",
                   2, dir, dir, dir, dir, dir, dir);
        int rc = exit_status_in("two.rc");
        sh("cat %s/two.out", dir);
        EXPECT(s == 0 && (rc == 143 || rc == 130) && !strstr(out, "SIGHUP"),
               "round %d: mpirun exited %d (want 143, or 130 where the signals fell in two steps): %.400s", round, rc, out);
        term += rc == 143;
    }
    unsetenv("PELAB_TEST_STEP_SLEEP_MS");
    printf("    %d rounds of SIGINT to one process and SIGTERM to the other: %d agreed on SIGTERM, the rest on SIGINT\n",
           rounds, term);
    return fails;
}

// A stop signal to one process after the last step's agreement (as the
// final save begins: the hook PELAB_TEST_SIGNAL_AT_SAVE, on process 1
// only) is acted on by both, after the save, at the point they agree on:
// both exit 130 with the checkpoint saved (before: process 1 exited alone,
// and mpirun aborted the job).
static int test_signal_after_the_last_step(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun\n"), TEST_SKIPPED;
    setenv("PELAB_TEST_SIGNAL_AT_SAVE", "2", 1);
    setenv("PELAB_TEST_KILL_RANK", "1", 1);
    int s = sh("timeout 300 " MPIRUN "./train-mpi " SHAPE "--steps 6 --until-solved 0 --batch 4 --save %s/late.ck "
               "--json %s/late.json", 2, dir, dir);
    unsetenv("PELAB_TEST_SIGNAL_AT_SAVE");
    unsetenv("PELAB_TEST_KILL_RANK");
    EXPECT(s == 130 && strstr(out, "interrupted by SIGINT after training") && !strstr(out, "MPI_ABORT") &&
               !strstr(out, "MPI_ERR"),
           "SIGINT to process 1 at the final save: exit %d (want 130 from both): %.600s", s, out);
    s = sh("./train --load %s/late.ck --threads 1 --eval-tokens 512", dir);
    EXPECT(s == 0, "the checkpoint saved before the stop does not load: %.300s", out);
    return fails;
}

// Processes given different settings (mpirun's "A : B" form) are refused
// before training on every process, not left to train two models.
static int test_different_settings_refused(void) {
    int fails = 0;
    if (!have_mpi()) return printf("    no ./train-mpi or mpirun\n"), TEST_SKIPPED;
    int s = sh("timeout 120 mpirun --oversubscribe --bind-to none -np 1 ./train-mpi " SHAPE "--steps 5 --batch 4 --seed 1 : "
               "-np 1 ./train-mpi " SHAPE "--steps 5 --batch 4 --seed 2");
    EXPECT(s != 0 && s != 124 && strstr(out, "different settings: --seed differs"), "different --seed per process: exit %d: %.400s", s, out);
    s = sh("timeout 120 mpirun --oversubscribe --bind-to none -np 1 ./train-mpi " SHAPE "--steps 5 --batch 4 --eval-ctx 32 : "
           "-np 1 ./train-mpi " SHAPE "--steps 5 --batch 4 --eval-ctx 32,64");
    EXPECT(s != 0 && s != 124 && strstr(out, "--eval-ctx differs"), "different --eval-ctx per process: exit %d: %.400s", s, out);
    // an encoding's option is a setting too; the thread count changes no result, so it may differ
    s = sh("timeout 120 mpirun --oversubscribe --bind-to none -np 1 ./train-mpi " SHAPE "--steps 5 --batch 4 --rope-base 500 : "
           "-np 1 ./train-mpi " SHAPE "--steps 5 --batch 4");
    EXPECT(s != 0 && s != 124 && strstr(out, "an encoding's option differs"), "different --rope-base per process: exit %d: %.400s", s, out);
    s = sh("timeout 120 mpirun --oversubscribe --bind-to none -np 1 ./train-mpi " MODEL "--eval-tokens 2048 --steps 5 "
           "--batch 4 --threads 1 : -np 1 ./train-mpi " MODEL "--eval-tokens 2048 --steps 5 --batch 4 --threads 2");
    EXPECT(s == 0, "different --threads per process: exit %d: %.400s", s, out);
    // the same text naming different files (each process in its own folder): compared by what they name
    sh("(mkdir -p %s/w1 %s/w2 && head -c 6000 /usr/share/common-licenses/GPL-3 > %s/w1/c.txt && "
       "tail -c 6000 /usr/share/common-licenses/GPL-3 > %s/w2/c.txt)", dir, dir, dir, dir);
    s = sh("cd %s && timeout 120 mpirun --oversubscribe --bind-to none -np 1 -wdir %s/w1 $OLDPWD/train-mpi " SHAPE
           "--data c.txt --steps 2 --batch 4 : -np 1 -wdir %s/w2 $OLDPWD/train-mpi " SHAPE "--data c.txt --steps 2 --batch 4",
           dir, dir, dir);
    EXPECT(s != 0 && s != 124 && strstr(out, "read different corpora under --data c.txt"),
           "two different files named c.txt: exit %d: %.400s", s, out);
    // the same settings (one run stopped at two steps): only the weights and the step differ
    sh("(here=$PWD; cd %s/w1 && $here/train --d-model 32 --layers 2 --heads 2 --ctx 32 --quiet --threads 1 --data c.txt "
       "--steps 4 --stop-at 2 --batch 4 --save r.ck && cd %s/w2 && $here/train --d-model 32 --layers 2 --heads 2 --ctx 32 "
       "--quiet --threads 1 --data %s/w1/c.txt --steps 4 --stop-at 3 --batch 4 --save r.ck)", dir, dir, dir);
    s = sh("cd %s && timeout 120 mpirun --oversubscribe --bind-to none -np 1 -wdir %s/w1 $OLDPWD/train-mpi --load r.ck "
           "--data %s/w1/c.txt --threads 1 --quiet --eval-tokens 512 : -np 1 -wdir %s/w2 $OLDPWD/train-mpi --load r.ck "
           "--data %s/w1/c.txt --threads 1 --quiet --eval-tokens 512", dir, dir, dir, dir, dir);
    EXPECT(s != 0 && s != 124 && strstr(out, "start from different models") && !strstr(out, "MPI_ERR"),
           "two different checkpoints named r.ck: exit %d: %.400s", s, out);
    return fails;
}

const test_case mpi_tests[] = {
    {"mpi/different_settings_refused", test_different_settings_refused},
    {"mpi/a_signal_to_one_process_stops_all", test_signal_to_one_process},
    {"mpi/different_signals_agree_on_one", test_different_signals_agree_on_one},
    {"mpi/a_signal_after_the_last_step_stops_all", test_signal_after_the_last_step},
    {"mpi/two_processes_take_the_step_of_one", test_two_processes_one_step},
    {"mpi/resume_with_another_process_count", test_resume_other_process_count},
    {"mpi/evaluations_split_over_processes", test_evaluations_split_over_processes},
    {"mpi/a_dead_process_ends_the_job", test_dead_process_ends_the_job},
};
const int n_mpi_tests = sizeof mpi_tests / sizeof mpi_tests[0];
