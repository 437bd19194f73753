// signals.h — the stop signals of a run (SIGINT, SIGTERM, SIGHUP): the
// first lets the current step (or the save under way) finish, then the run
// saves and exits 128+signal; a second exits at once. They are taken by a
// thread of their own, never by a computing thread (signals.c says why).
#ifndef PELAB_SIGNALS_H
#define PELAB_SIGNALS_H

// The handlers and the signal thread, before any other thread exists (so
// that every thread inherits the blocked signals).
void signals_install(void);
// After training nothing is left to save: a signal ends the program at once.
void signals_to_default(void);
// The first stop signal received (0: none).
int signals_stop(void);
// MPI: a stop the processes agreed on, taken as if received here (when none was).
void signals_adopt(int sig);
// MPI: the stop every process agreed on in the last step's sum (0: none).
int signals_agreed(void);
void signals_set_agreed(int sig);
// "SIGINT", "SIGTERM" or "SIGHUP".
const char *signal_name(int sig);

#endif
