// files.h — files written whole or not at all, and which paths name the
// same file.
//
// Every file pelab writes (checkpoints, --json, pictures) goes through an
// atomic_file: a fresh temporary beside the target, created with
// O_CREAT|O_EXCL|O_NOFOLLOW (so a planted file or symbolic link cannot
// redirect the write), named PATH.pelab-tmp.PID.XXXXXX; written, flushed, fsynced
// and renamed over the target, or removed on any failure. A target that
// exists must be a regular file (or a symbolic link to one, which is then
// written through: the link stays).
#ifndef PELAB_FILES_H
#define PELAB_FILES_H

#include <stdio.h>

typedef struct {
    char *target;  // the regular file that will be replaced (links resolved)
    char *tmp;     // the temporary beside it
    FILE *f;       // open on tmp for writing
} atomic_file;

// Opens a temporary for `path`; 0, or -1 with a message naming `what`
// (e.g. "--json") in err.
int atomic_open(atomic_file *af, const char *path, const char *what, char *err, size_t errlen);
// Flushes, fsyncs, closes and renames the temporary over the target, then
// fsyncs the folder and removes temporaries that killed processes left for
// the same target. 0, or -1 with err (the temporary is removed; the target
// is untouched).
int atomic_commit(atomic_file *af, const char *what, char *err, size_t errlen);
// Closes and removes the temporary.
void atomic_abort(atomic_file *af);
// For a thread (or a signal handler) about to _exit during a save: removes
// the temporary of the write under way, if any, waiting out its creation
// (at most a second), and makes every later atomic_open wait for the exit.
// Async-signal-safe; the caller must exit.
void atomic_abandon(void);

// Checks before any work that `path` can be written as `what`: it is absent
// or a regular file (through links), and a temporary can be created beside
// it (folder exists and is writable, the temporary's name is not too long).
// 0 with a message otherwise; *usage is set to 1 when the fault is the
// user's choice of path (a device, a folder), 0 for a runtime failure.
int check_output_path(const char *path, const char *what, int *usage, char *err, size_t errlen);

// An input that must be a regular file (a FIFO or device would block or
// never end): 0 with a message otherwise.
int check_input_file(const char *path, const char *what, char *err, size_t errlen);

// 1 when a and b name the same file: the same device and inode when both
// exist, else the same resolved path.
int same_file(const char *a, const char *b);
// An input of the run: the tidying of stale temporaries (atomic_commit)
// never removes it, whatever its name (up to 16 files).
void files_protect(const char *path);

#endif
