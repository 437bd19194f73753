// common.c — see common.h.
#include "common.h"

#include "test_hooks.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

jmp_buf *die_jump;

int utf8_length(const unsigned char *s) {
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;  // overlong, surrogates
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;  // overlong, > U+10FFFF
    return n;
}

void put_printable(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_length(p);
        if (n == 1 && (*p >= 0x20 || *p == '\n' || *p == '\t') && *p != 0x7f) {
            fputc(*p++, f);
        } else if (n > 1) {
            fwrite(p, 1, (size_t)n, f), p += n;
        } else {
            fprintf(f, "\\x%02x", *p++);  // a control byte or one that is not UTF-8: never raw to a terminal
        }
    }
}

// "train: MESSAGE\n", escaped, in one write where memory allows: stderr is
// unbuffered, and written piece by piece the lines of processes sharing it
// (mpirun's ranks, a pipeline) interleave within a line.
static void vreport(const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char small[1024], *buf = n >= 0 && (size_t)n < sizeof small ? small : malloc(n > 0 ? (size_t)n + 1 : 1);
    char *line = NULL;
    size_t len = 0;
    FILE *out = buf ? open_memstream(&line, &len) : NULL;
    if (!out) out = stderr;
    fputs("train: ", out);
    if (buf) {
        vsnprintf(buf, n > 0 ? (size_t)n + 1 : 1, fmt, again);
        put_printable(out, buf);
        if (buf != small) free(buf);
    } else {
        vfprintf(out, fmt, again);  // no memory for a copy: the message unescaped rather than none
    }
    va_end(again);
    fputc('\n', out);
    if (out != stderr) {
        if (fclose(out) == 0)
            fwrite(line, 1, len, stderr);
        else
            fputs("train: (no memory to write the message)\n", stderr);
        free(line);
    }
}

void warn_msg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}

void die_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    fputs("train: see --help for the options and their ranges\n", stderr);
    if (die_jump) longjmp(*die_jump, EXIT_USAGE);
    exit(EXIT_USAGE);
}

void die_runtime(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    if (die_jump) longjmp(*die_jump, EXIT_RUNTIME);
    exit(EXIT_RUNTIME);
}

void die_status(int status, const char *msg) {
    if (status == EXIT_USAGE) die_usage("%s", msg);
    die_runtime("%s", msg);
}

void *xmalloc_at(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) die_runtime("out of memory: %zu bytes requested at %s:%d; try a smaller --batch, --ctx or --d-model", n, file, line);
    return p;
}

void *xcalloc_at(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die_runtime("out of memory: %zu x %zu bytes requested at %s:%d; try a smaller --batch, --ctx or --d-model", count, size, file, line);
    return p;
}

size_t size_mul(size_t a, size_t b, const char *what) {
    if (a != 0 && b > SIZE_MAX / a) die_usage("%s is too large to allocate", what);
    return a * b;
}

uint64_t rng_next(rng_t *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t rng_below(rng_t *r, uint32_t n) {
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

float rng_uniform(rng_t *r) {
    return (float)(rng_next(r) >> 40) / 16777216.0f;
}

float rng_normal(rng_t *r) {
    // Box-Muller with u1 in (0, 1] so the log is finite.
    double u1 = ((double)(rng_next(r) >> 11) + 1.0) / 9007199254740992.0;
    double u2 = (double)(rng_next(r) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n) {  // zlib takes the length as uInt
        uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
        crc = (uint32_t)crc32(crc, p, k);
        p += k;
        n -= k;
    }
    return crc;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The first number in a file, or -1 ("max" and unreadable files too).
static double read_number(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    double v = -1;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

// The value of a "key value" line of memory.stat in dir, or 0.
static double stat_value(const char *dir, const char *key) {
    char path[4096], name[64];
    snprintf(path, sizeof path, "%s/memory.stat", dir);
    FILE *f = fopen(path, "r");
    double v = 0, x;
    if (f) {
        while (fscanf(f, "%63s %lf", name, &x) == 2)
            if (strcmp(name, key) == 0) {
                v = x;
                break;
            }
        fclose(f);
    }
    return v > 0 ? v : 0;
}

// Room under a cgroup memory limit in dir: v2's memory.max − memory.current,
// or v1's memory.limit_in_bytes − memory.usage_in_bytes; -1 without a limit.
// The usage counts the page cache, of which the inactive part (memory.stat's
// inactive_file, v1's total_inactive_file) is given back on demand: a run
// that fits is not refused because a large file was read just before.
static double room_in(const char *dir) {
    double limit = read_number(dir, "memory.max"), used = read_number(dir, "memory.current");
    const char *cache = "inactive_file";
    if (limit < 0) {
        limit = read_number(dir, "memory.limit_in_bytes");
        used = read_number(dir, "memory.usage_in_bytes");
        cache = "total_inactive_file";
        if (limit >= 1e18) limit = -1;  // v1 says "no limit" with a huge number
    }
    if (limit < 0) return -1;
    used -= stat_value(dir, cache);
    return limit - (used > 0 ? used : 0);
}

// The least room under the limits of dir and of every group above it, up
// to root (a limit on a parent holds its children too); -1 without any.
static double room_up(const char *root, const char *dir) {
    char d[4096];
    snprintf(d, sizeof d, "%s", dir);
    size_t rlen = strlen(root);
    double least = -1;
    for (;;) {
        double room = room_in(d);
        if (room >= 0 && (least < 0 || room < least)) least = room;
        char *slash = strrchr(d, '/');
        if (strlen(d) <= rlen || !slash || slash < d + rlen) break;
        *slash = '\0';
    }
    return least;
}

// Room left under this process's cgroup memory limits (its group's and its
// ancestors'), or -1 without one. The group comes from /proc/self/cgroup
// ("0::/path" for cgroup v2, "N:memory:/path" for v1), or from the test
// hooks' cgroup_dir (and cgroup_root, where the walk stops).
static double cgroup_room_bytes(void) {
    const test_hooks_t *hk = test_hooks();
    if (hk->cgroup_dir) return room_up(hk->cgroup_root ? hk->cgroup_root : hk->cgroup_dir, hk->cgroup_dir);
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[2048], dir[4096];
    double room = -1;
    while (room < 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *path = NULL, *root = NULL;
        if (strncmp(line, "0::", 3) == 0) path = line + 3, root = "/sys/fs/cgroup";
        else if (strstr(line, ":memory:")) path = strstr(line, ":memory:") + 8, root = "/sys/fs/cgroup/memory";
        if (!path) continue;
        snprintf(dir, sizeof dir, "%s%s", root, path);
        room = room_up(root, dir);
        if (room < 0) room = room_in(root);  // inside a namespace the group is the root
    }
    fclose(f);
    return room;
}

double mem_available_bytes(void) {
    double have = test_hooks()->mem_available;
    if (have < 0) {
        FILE *f = fopen("/proc/meminfo", "r");
        if (f) {
            char line[256];
            double kib = -1;
            while (fgets(line, sizeof line, f))
                if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
            fclose(f);
            have = kib < 0 ? -1 : kib * 1024.0;
        }
    }
    double room = cgroup_room_bytes();
    if (room >= 0 && (have < 0 || room < have)) have = room;
    return have;
}

double par_min_ns = PAR_MIN_NS;

int edit_distance(const char *a, const char *b) {  // two neighbours swapped count as one edit ("bets" → "best")
    int lb = (int)strlen(b);
    if (lb > 32) return 99;
    int before[33], prev[33], row[33];
    for (int j = 0; j <= lb; j++) prev[j] = j;
    for (int i = 1; a[i - 1]; i++) {
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int best = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && before[j - 2] + 1 < best)
                best = before[j - 2] + 1;
            row[j] = best;
        }
        memcpy(before, prev, sizeof prev);
        memcpy(prev, row, sizeof row);
    }
    return prev[lb];
}

void nearest_offer(nearest_name *n, const char *typed, const char *name) {
    int d = edit_distance(typed, name);
    if (d < n->distance) n->distance = d, n->best = name;
}
