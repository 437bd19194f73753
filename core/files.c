// files.c — see files.h.
#include "files.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

// A temporary's name: the target's, this tag, the writer's PID, "." and
// mkstemp's six characters. Distinct enough that no file of the user's
// is taken for one.
#define TMP_TAG ".pelab-tmp."

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = xmalloc(n);
    memcpy(c, s, n);
    return c;
}

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

// The file an output path will replace: the path itself, or a link's
// target. NULL with a message when that is not (or would not be) a regular file.
static char *resolve_target(const char *path, const char *what, int *usage, char *err, size_t errlen) {
    struct stat st;
    *usage = 1;
    if (!path[0]) {
        snprintf(err, errlen, "%s: the path is empty", what);
        return NULL;
    }
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return copy_string(path);
        *usage = 0;
        snprintf(err, errlen, "cannot write %s '%s': %s", what, path, strerror(errno));
        return NULL;
    }
    if (S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real) {
            snprintf(err, errlen, "cannot write %s '%s': it is a symbolic link to nothing (%s)", what, path, strerror(errno));
            return NULL;
        }
        if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
            snprintf(err, errlen, "cannot write %s '%s': it links to %s, %s; pelab writes only regular files", what, path,
                     real, file_kind(st.st_mode));
            free(real);
            return NULL;
        }
        return real;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot write %s '%s': it is %s; pelab writes only regular files",
                 what, path, file_kind(st.st_mode));
        return NULL;
    }
    return copy_string(path);
}

// The write under way, for atomic_abandon: a copy of its temporary's path.
// atomic_abandon runs on another thread than the writer (train's signal
// thread, or a handler on a library's thread), at the same time, so the two
// agree through sequentially consistent atomics: the writer announces
// WRITE_CREATING before it looks at `exiting`; atomic_abandon sets `exiting`
// before it looks at write_state. Whichever comes second sees the other:
// the writer creates nothing, or atomic_abandon waits out the creation (one
// open) and removes the file it made. (With a plain flag, a second signal
// between the writer's flag and its open() unlinked a name not yet created:
// the temporary made a microsecond later outlived the process, 1 CI run in
// many under the sanitizers.)
enum { WRITE_IDLE, WRITE_CREATING, WRITE_CREATED };
static char pending_path[PATH_MAX + 64];
static _Atomic int write_state = WRITE_IDLE;
static _Atomic int exiting;

// What a writer does once atomic_abandon has run: nothing, until the
// process exits (the thread that called it is about to).
static _Noreturn void wait_for_the_exit(void) {
    for (;;) sleep(60);
}

void atomic_abandon(void) {
    atomic_store(&exiting, 1);
    for (int i = 0; i < 1000 && atomic_load(&write_state) == WRITE_CREATING; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (atomic_load(&write_state) == WRITE_CREATED) unlink(pending_path);
}

int atomic_open(atomic_file *af, const char *path, const char *what, char *err, size_t errlen) {
    memset(af, 0, sizeof *af);
    int usage;
    af->target = resolve_target(path, what, &usage, err, errlen);
    if (!af->target) return -1;
    size_t n = strlen(af->target) + 48;
    af->tmp = xmalloc(n);
    snprintf(af->tmp, n, "%s" TMP_TAG "%ld.XXXXXX", af->target, (long)getpid());
    // mkstemp fills in the name where atomic_abandon can read it: from the
    // moment the file exists, atomic_abandon removes it
    int fd = -1;
    if (strlen(af->tmp) < sizeof pending_path) {
        atomic_store(&write_state, WRITE_CREATING);
        if (atomic_load(&exiting)) {  // the process is exiting at once: create nothing
            atomic_store(&write_state, WRITE_IDLE);
            wait_for_the_exit();
        }
        memcpy(pending_path, af->tmp, strlen(af->tmp) + 1);
        fd = mkstemp(pending_path);  // O_CREAT|O_EXCL: never follows a planted link
        if (fd >= 0) memcpy(af->tmp, pending_path, strlen(pending_path) + 1);
        atomic_store(&write_state, fd >= 0 ? WRITE_CREATED : WRITE_IDLE);
    } else {
        fd = mkstemp(af->tmp);
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s '%s': %s", what, path, strerror(errno));
        free(af->tmp), free(af->target);
        memset(af, 0, sizeof *af);
        return -1;
    }
    struct stat old;
    if (stat(af->target, &old) == 0 && S_ISREG(old.st_mode)) {
        // A replaced file keeps its owner and group where the process may
        // give them (root may; an ordinary user only a group of its own),
        // then its mode (a 0600 checkpoint stays 0600) without setuid and
        // setgid: they were set on other contents, and fchown clears them
        // anyway. The sticky bit means nothing on a file; kept as it was.
        // (Where neither is allowed, the new file is the process's own, as a fresh create is.)
        if (fchown(fd, old.st_uid, old.st_gid) != 0) (void)!fchown(fd, (uid_t)-1, old.st_gid);
        fchmod(fd, old.st_mode & 01777);
    } else {
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);  // as an ordinary create would (mkstemp makes 0600)
    }
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        snprintf(err, errlen, "cannot write %s '%s': %s", what, path, strerror(errno));
        close(fd);
        atomic_abort(af);
        return -1;
    }
    return 0;
}

void atomic_abort(atomic_file *af) {
    if (af->f) fclose(af->f);
    if (af->tmp) unlink(af->tmp);
    atomic_store(&write_state, WRITE_IDLE);  // after the unlink: atomic_abandon before it still removes the file
    free(af->tmp);
    free(af->target);
    memset(af, 0, sizeof *af);
}

// 1 when name is exactly what atomic_open makes for base: BASE TMP_TAG PID
// "." and mkstemp's six letters or digits; *pid gets PID.
static int is_own_temporary(const char *name, const char *base, long *pid) {
    size_t blen = strlen(base), tlen = strlen(TMP_TAG);
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, TMP_TAG, tlen) != 0) return 0;
    const char *p = name + blen + tlen;
    if (*p < '0' || *p > '9') return 0;
    char *end;
    *pid = strtol(p, &end, 10);
    if (*end != '.' || strlen(end + 1) != 6) return 0;
    for (const char *c = end + 1; *c; c++)
        if (!isalnum((unsigned char)*c)) return 0;
    return *pid > 0;
}

// The inputs of the run, by device and inode (files_protect).
#define MAX_PROTECTED 16
static struct {
    dev_t dev;
    ino_t ino;
} protected_files[MAX_PROTECTED];
static int n_protected;

void files_protect(const char *path) {
    struct stat st;
    if (n_protected < MAX_PROTECTED && stat(path, &st) == 0)
        protected_files[n_protected].dev = st.st_dev, protected_files[n_protected++].ino = st.st_ino;
}

static int is_protected(const char *path) {
    struct stat st;
    if (n_protected == 0 || stat(path, &st) != 0) return 0;
    for (int i = 0; i < n_protected; i++)
        if (protected_files[i].dev == st.st_dev && protected_files[i].ino == st.st_ino) return 1;
    return 0;
}

// Removes temporaries in dir that a killed writer left behind: only names of
// exactly atomic_open's pattern, and only those whose process no longer
// exists. A live PID keeps its file; any other file is never touched (a
// corpus called "r.ck.tmp.99999.txt" is not pelab's). Stale files were
// never read, so this only tidies.
static void remove_stale_temporaries(const char *target, const char *dir) {
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        long pid;
        if (!is_own_temporary(name, base, &pid) || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        size_t n = strlen(dir) + strlen(name) + 2;
        char *full = xmalloc(n);
        snprintf(full, n, "%s/%s", dir, name);
        if (!is_protected(full)) unlink(full);  // an input named like a temporary is the run's, not a leftover
        free(full);
    }
    closedir(d);
}

int atomic_commit(atomic_file *af, const char *what, char *err, size_t errlen) {
    int bad = fflush(af->f) != 0 || ferror(af->f);
    int saved = errno;
    if (!bad && fsync(fileno(af->f)) != 0) bad = 1, saved = errno;
    if (fclose(af->f) != 0 && !bad) bad = 1, saved = errno;
    af->f = NULL;
    if (!bad && rename(af->tmp, af->target) != 0) {
        if (atomic_load(&exiting)) wait_for_the_exit();  // atomic_abandon removed the temporary: not a failure to report
        bad = 1, saved = errno;
    }
    if (!bad) atomic_store(&write_state, WRITE_IDLE);  // renamed: nothing of ours is left under the temporary's name
    if (bad) {
        snprintf(err, errlen, "cannot write %s '%s': %s (the previous file, if any, is unchanged)", what, af->target,
                 strerror(saved ? saved : EIO));
        atomic_abort(af);
        return -1;
    }
    // make the rename itself durable, and tidy what killed writers left
    char *dir = copy_string(af->target);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    else snprintf(dir, strlen(dir) + 1, ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    remove_stale_temporaries(af->target, dir);
    free(dir);
    free(af->tmp);
    free(af->target);
    memset(af, 0, sizeof *af);
    return 0;
}

// 0 with err filled when renaming a new file over the existing target would
// be refused: the target is immutable or append-only (chattr), or it sits in
// a sticky folder (/tmp) and belongs to someone else. Both pass the creation
// of a temporary, so only this tells before training.
static int rename_allowed(const char *target, const char *what, char *err, size_t errlen) {
    struct stat st, dst;
    if (stat(target, &st) != 0) return 1;  // nothing to replace
    int fd = open(target, O_RDONLY | O_NONBLOCK);
    if (fd >= 0) {
        int flags = 0;
        int got = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
        close(fd);
        if (got && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL))) {
            snprintf(err, errlen, "cannot write %s '%s': it is %s (chattr), so it cannot be replaced", what, target,
                     flags & FS_IMMUTABLE_FL ? "immutable" : "append-only");
            return 0;
        }
    }
    char *dir = copy_string(target);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    int ok = stat(slash ? dir : ".", &dst) != 0 || !(dst.st_mode & S_ISVTX) || geteuid() == 0 ||
             geteuid() == st.st_uid || geteuid() == dst.st_uid;
    if (!ok)
        snprintf(err, errlen, "cannot write %s '%s': the folder is sticky and the file belongs to another user, so it "
                 "cannot be replaced; write elsewhere", what, target);
    free(dir);
    return ok;
}

int check_output_path(const char *path, const char *what, int *usage, char *err, size_t errlen) {
    char *target = resolve_target(path, what, usage, err, errlen);
    if (!target) return 0;
    *usage = 0;
    int ok = rename_allowed(target, what, err, errlen);
    free(target);
    if (!ok) return 0;
    atomic_file af;
    *usage = 0;
    if (atomic_open(&af, path, what, err, errlen) != 0) return 0;
    // A file system already full takes the temporary (no blocks) but not a
    // byte of the output: say so now, not after training.
    struct statvfs vs;
    int full = fstatvfs(fileno(af.f), &vs) == 0 && (geteuid() == 0 ? vs.f_bfree : vs.f_bavail) == 0;
    atomic_abort(&af);
    if (full) snprintf(err, errlen, "cannot write %s '%s': its file system is full", what, path);
    return !full;
}

int check_input_file(const char *path, const char *what, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot open %s '%s': %s", what, path, strerror(errno));
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s '%s' is %s; give a regular file", what, path, file_kind(st.st_mode));
        return 0;
    }
    return 1;
}

// The path with its folder resolved (the file itself may not exist yet).
static char *resolved_path(const char *path) {
    char *real = realpath(path, NULL);
    if (real) return real;
    char *dir = copy_string(path);
    char *slash = strrchr(dir, '/');
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;  // in path: dir is freed below
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    char *rdir = realpath(slash ? dir : ".", NULL);
    free(dir);
    if (!rdir) return copy_string(path);
    size_t n = strlen(rdir) + strlen(base) + 2;
    char *out = xmalloc(n);
    snprintf(out, n, "%s/%s", rdir, base);
    free(rdir);
    return out;
}

int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ra = resolved_path(a), *rb = resolved_path(b);
    int same = strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}
