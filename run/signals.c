// signals.c — see signals.h.
#include "signals.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/files.h"

// SIGINT, SIGTERM and SIGHUP (a closed terminal): the first one lets the
// current step (or the save under way) finish, then the run saves (with
// --save) and exits 128+signal; a second one exits at once. A checkpoint is
// only ever replaced by rename, so neither can corrupt it. A signal the
// parent set to be ignored (nohup, a script's background job) stays ignored.
// SIGPIPE is ignored: a closed stdout (./train | head) makes printing fail,
// not the run; training and saving go on, and the exit status is 1 (see
// check_stdout). SIGXFSZ is ignored: a file past `ulimit -f` fails to write
// (EFBIG) like a full disk, and the save reports it and removes its
// temporary, instead of the signal killing the process mid-save.
static volatile sig_atomic_t stop_signal = 0;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static int ignored_at_start[3];  // the parent's SIG_IGN, per stop_signals entry
// MPI: the stop request every process agreed on in the last step's sum. A
// process stops on it, never on its own flag alone, which a signal may have
// set after the sum (the others would then wait in the next sum forever).
static int agreed_stop;

// A second request exits at once, removing the temporary of a save under
// way (the previous checkpoint stays). The same signal again within
// DUPLICATE_WINDOW is not a second request: a hang-up or `timeout` delivers
// it to the process and to its group within milliseconds.
#define DUPLICATE_WINDOW 0.5
static struct timespec first_signal_at;

static void take_signal(int sig) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!stop_signal) {
        first_signal_at = now;
        stop_signal = sig;
        return;
    }
    double since = (double)(now.tv_sec - first_signal_at.tv_sec) + 1e-9 * (double)(now.tv_nsec - first_signal_at.tv_nsec);
    if (sig == stop_signal && since < DUPLICATE_WINDOW) return;
    atomic_abandon();
    static const char msg[] = "train: a second signal: stopped at once; the checkpoint on disk is the last one saved\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(128 + sig);
}

static void on_signal(int sig) { take_signal(sig); }

// The stop signals are blocked in every thread but delivered to one of its
// own, which waits for them (sigwait) and takes them as on_signal does: a
// computing thread is never interrupted by a handler. (On the AMD EPYC, a
// handler run on a thread inside oneDNN's AVX-512 kernels corrupted the heap
// now and then: 1 run in 20 of SIGINT then SIGTERM aborted with "corrupted
// size vs. prev_size"; the same with OpenBLAS's AVX2 kernels, or with the
// signals taken here, never.) A thread that a library starts with the
// signals unblocked still has on_signal. After training the signals take
// their default action: the thread restores it and raises the signal.
static sigset_t waited;
static volatile sig_atomic_t signals_default;

static void *signal_thread(void *arg) {
    (void)arg;
    for (;;) {
        int sig;
        if (sigwait(&waited, &sig) != 0) continue;
        if (signals_default) {
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            signal(sig, SIG_DFL);
            pthread_sigmask(SIG_UNBLOCK, &one, NULL);
            raise(sig);
        }
        take_signal(sig);
    }
    return NULL;
}

const char *signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP"; }

void signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;  // reads and writes under way carry on
    sigemptyset(&sa.sa_mask);
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction was;
        sigaction(stop_signals[i], NULL, &was);
        ignored_at_start[i] = was.sa_handler == SIG_IGN;
        if (!ignored_at_start[i]) sigaction(stop_signals[i], &sa, NULL);
        sigaddset(&set, stop_signals[i]);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    // a parent may hand them down blocked (some shells do for background jobs):
    // blocked they stay, in every thread, and the signal thread takes them
    sigemptyset(&waited);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        if (!ignored_at_start[i]) sigaddset(&waited, stop_signals[i]);
    pthread_sigmask(SIG_BLOCK, &waited, NULL);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, signal_thread, NULL) != 0) {
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);  // no thread: the handler takes them, as before
    }
    pthread_attr_destroy(&attr);
}

// After training nothing is left to save: a signal ends the program at once.
void signals_to_default(void) {
    signals_default = 1;
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        signal(stop_signals[i], ignored_at_start[i] ? SIG_IGN : SIG_DFL);
}

int signals_stop(void) { return stop_signal; }

void signals_adopt(int sig) {
    if (!stop_signal) stop_signal = sig;
}

int signals_agreed(void) { return agreed_stop; }

void signals_set_agreed(int sig) { agreed_stop = sig; }
