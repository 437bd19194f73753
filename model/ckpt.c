// ckpt.c — see ckpt.h.
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'P', 'E', 'L', 'A', 'B', 'C', 'K', '1'};

// The config block, field by field (no struct padding in the file).
#define FILE_CONFIG_BYTES (9 * 4 + 3 * 4 + 32)
#define FILE_STATE_BYTES (8 + 8 + 4 + 4 + 3 * 4 + 8 + 8 + 512)
#define HEADER_BYTES (8 + 4 + 4 + FILE_CONFIG_BYTES + FILE_STATE_BYTES + 8)


static void put(unsigned char **w, const void *src, size_t n) {
    memcpy(*w, src, n);
    *w += n;
}

static void encode_header(unsigned char *h, const model_t *m, const train_state *st, uint32_t flags) {
    const model_config *c = &m->cfg;
    unsigned char *w = h;
    uint32_t version = CKPT_VERSION;
    put(&w, MAGIC, 8);
    put(&w, &version, 4);
    put(&w, &flags, 4);
    int32_t ints[9] = {c->vocab, c->ctx, c->d_model, c->layers, c->heads, c->causal, c->rel_clip, c->t5_buckets, c->t5_max_distance};
    put(&w, ints, sizeof ints);
    float fl[3] = {c->sin_base, c->sin_scale, c->rope_base};
    put(&w, fl, sizeof fl);
    char pe[32] = {0};
    snprintf(pe, sizeof pe, "%s", c->pe);
    put(&w, pe, 32);
    put(&w, &st->step, 8);
    put(&w, &st->steps, 8);
    put(&w, &st->batch, 4);
    put(&w, &st->warmup, 4);
    put(&w, &st->lr, 4);
    put(&w, &st->wd, 4);
    put(&w, &st->clip, 4);
    put(&w, &st->seed, 8);
    put(&w, &st->data_rng, 8);
    char data[512] = {0};
    snprintf(data, sizeof data, "%s", st->data);
    put(&w, data, 512);
    uint64_t n = m->tab.total;
    put(&w, &n, 8);
}

static int write_all(int fd, const void *p, size_t n, uint32_t *crc) {
    const char *c = p;
    *crc = crc32_update(*crc, p, n);
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

// Removes temporary files "PATH.tmp.PID" that a killed save left behind:
// those whose process no longer exists. A live PID (another run saving to
// the same path, or an unrelated process that reused the number) keeps its
// file; stale files were never read, so this only tidies.
static void remove_stale_temporaries(const char *path, const char *dir) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0) continue;
        char *end;
        long pid = strtol(name + blen + 5, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[4096];
        if (snprintf(full, sizeof full, "%s/%s", dir, name) < (int)sizeof full) unlink(full);
    }
    closedir(d);
}

int ckpt_save(const char *path, const model_t *m, const train_state *st, int with_optimizer, char *err, size_t errlen) {
    size_t plen = strlen(path);
    char *tmp = xmalloc(plen + 32);
    snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write checkpoint '%s': %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    unsigned char header[HEADER_BYTES];
    encode_header(header, m, st, with_optimizer ? 1u : 0u);
    uint32_t crc = 0;
    size_t bytes = sizeof(float) * m->tab.total;
    int bad = write_all(fd, header, HEADER_BYTES, &crc) || write_all(fd, m->params, bytes, &crc);
    if (!bad && with_optimizer) bad = write_all(fd, m->m, bytes, &crc) || write_all(fd, m->v, bytes, &crc);
    uint32_t crc_copy = crc, dummy = 0;
    if (!bad) bad = write_all(fd, &crc_copy, 4, &dummy);
    if (!bad) bad = fsync(fd) != 0;
    int saved_errno = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved_errno = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        saved_errno = errno;
    }
    if (bad) {
        snprintf(err, errlen, "cannot write checkpoint '%s': %s (the previous file, if any, is unchanged)", path, strerror(saved_errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    // make the rename itself durable
    char *dir = xmalloc(plen + 2);
    snprintf(dir, plen + 2, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    else snprintf(dir, plen + 2, ".");
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    remove_stale_temporaries(path, dir);
    free(dir);
    return 0;
}

static void get(const unsigned char **r, void *dst, size_t n) {
    memcpy(dst, *r, n);
    *r += n;
}

// Reports a load failure: closes f, fills err, returns -1.
static int load_fail(FILE *f, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int load_fail(FILE *f, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (f) fclose(f);
    return -1;
}

int ckpt_load(const char *path, model_t *m, train_state *st, int with_optimizer, char *err, size_t errlen) {
    struct stat sb;
    if (stat(path, &sb) != 0) return load_fail(NULL, err, errlen, "cannot open checkpoint '%s': %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return load_fail(NULL, err, errlen, "checkpoint '%s' is a directory", path);
    FILE *f = fopen(path, "rb");
    if (!f) return load_fail(NULL, err, errlen, "cannot open checkpoint '%s': %s", path, strerror(errno));
    unsigned char header[HEADER_BYTES];
    size_t got = fread(header, 1, HEADER_BYTES, f);
    if (got >= 8 && memcmp(header, MAGIC, 8) != 0)
        return load_fail(f, err, errlen, "'%s' is not a pelab checkpoint (bad magic)", path);
    if (got != HEADER_BYTES)
        return load_fail(f, err, errlen, "checkpoint '%s' is truncated: shorter than its %d-byte header", path, HEADER_BYTES);
    const unsigned char *r = header;
    char magic[8];
    uint32_t version, flags;
    get(&r, magic, 8);
    get(&r, &version, 4);
    get(&r, &flags, 4);
    if (memcmp(magic, MAGIC, 8) != 0) return load_fail(f, err, errlen, "'%s' is not a pelab checkpoint (bad magic)", path);
    if (version != CKPT_VERSION)
        return load_fail(f, err, errlen, "checkpoint '%s' has format version %u; this pelab reads version %d", path, version, CKPT_VERSION);
    model_config c;
    memset(&c, 0, sizeof c);
    int32_t ints[9];
    get(&r, ints, sizeof ints);
    c.vocab = ints[0], c.ctx = ints[1], c.d_model = ints[2], c.layers = ints[3], c.heads = ints[4];
    c.causal = ints[5], c.rel_clip = ints[6], c.t5_buckets = ints[7], c.t5_max_distance = ints[8];
    float fl[3];
    get(&r, fl, sizeof fl);
    c.sin_base = fl[0], c.sin_scale = fl[1], c.rope_base = fl[2];
    get(&r, c.pe, 32);
    c.pe[31] = '\0';
    train_state s;
    memset(&s, 0, sizeof s);
    get(&r, &s.step, 8);
    get(&r, &s.steps, 8);
    get(&r, &s.batch, 4);
    get(&r, &s.warmup, 4);
    get(&r, &s.lr, 4);
    get(&r, &s.wd, 4);
    get(&r, &s.clip, 4);
    get(&r, &s.seed, 8);
    get(&r, &s.data_rng, 8);
    get(&r, s.data, 512);
    s.data[511] = '\0';
    uint64_t n;
    get(&r, &n, 8);
    char cerr[256] = "";
    if (!model_config_check(&c, cerr, sizeof cerr) || (c.causal != 0 && c.causal != 1))
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: its config is invalid (%s)", path, cerr);
    if ((flags & ~1u) || n == 0 || n > ((uint64_t)1 << 36) || s.step < 0 || s.steps < 0 || s.batch < 1 || s.warmup < 0)
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: bad flags, counts or training state", path);
    // The file size the header implies, checked before anything large is allocated.
    size_t per_tensor_bytes = sizeof(float) * n;
    uint64_t expect = (uint64_t)HEADER_BYTES + (uint64_t)per_tensor_bytes * ((flags & 1) ? 3 : 1) + 4;
    if ((uint64_t)sb.st_size != expect)
        return load_fail(f, err, errlen, "checkpoint '%s' is %s: %lld bytes, expected %llu for %llu parameters", path,
                         (uint64_t)sb.st_size < expect ? "truncated" : "corrupt (trailing bytes)",
                         (long long)sb.st_size, (unsigned long long)expect, (unsigned long long)n);
    if (model_param_count(&c) != n)
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: %llu parameters, but its config implies %zu", path,
                         (unsigned long long)n, model_param_count(&c));
    if (with_optimizer && !(flags & 1))
        return load_fail(f, err, errlen, "checkpoint '%s' holds no optimiser state, so it cannot be resumed; use --load to evaluate it", path);
    model_create(m, &c);
    uint32_t crc = crc32_update(0, header, HEADER_BYTES);
    float *bufs[3] = {m->params, m->m, m->v};
    int nb = (flags & 1) ? 3 : 1;
    for (int i = 0; i < nb; i++) {
        if (fread(bufs[i], 1, per_tensor_bytes, f) != per_tensor_bytes) {
            model_free(m);
            return load_fail(f, err, errlen, "checkpoint '%s' is truncated", path);
        }
        crc = crc32_update(crc, bufs[i], per_tensor_bytes);
    }
    uint32_t stored;
    if (fread(&stored, 1, 4, f) != 4 || stored != crc) {
        model_free(m);
        return load_fail(f, err, errlen, "checkpoint '%s' is corrupt: checksum mismatch (the file was damaged or changed)", path);
    }
    fclose(f);
    *st = s;
    return 0;
}
