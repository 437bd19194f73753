// common.h — checked allocation and I/O, error exits, the shape legend.
//
// Shape legend used in comments throughout pelab:
//   B batch, T time (context), C channels (d_model), NH heads, hs head size
//   (C / NH), V vocabulary, L layers, OC output channels.
#ifndef PELAB_COMMON_H
#define PELAB_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Exit statuses (docs/reliability.md): 2 for a bad option or value, 1 for a runtime
// failure. Both print a message on stderr first.
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

// The fuzz harnesses set die_jump: the two functions below then longjmp
// there (after printing) instead of exiting.
#include <setjmp.h>
extern jmp_buf *die_jump;

// The length of the valid UTF-8 sequence at s (1 to 4 bytes; overlongs,
// surrogates and code points past U+10FFFF are not valid), or 0.
int utf8_length(const unsigned char *s);
// Writes s with every control byte (but newline and tab) and every byte
// that is not part of valid UTF-8 as \xNN: text from a file (a checkpoint's
// fields, a path) never reaches a terminal raw. Every message goes through it.
void put_printable(FILE *f, const char *s);
// "train: MESSAGE" on stderr, made printable, and carry on.
void warn_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void die_runtime(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
// The refusal a library function returned: die_usage for EXIT_USAGE, else
// die_runtime, with its message.
void die_status(int status, const char *msg) __attribute__((noreturn));

// Whether a parallel region that takes one core about `ns` nanoseconds is
// worth a team of threads. A region costs its threads a wake-up and a
// barrier: a few microseconds on an idle machine, but on a busy one a thread
// the scheduler has given away waits for its next time slice, milliseconds
// per region (docs/performance.md). Regions under PAR_MIN_NS run on the
// calling thread alone: on 2 busy cores that took a d_model 32 model's 300
// steps from up to 19 s to under 1 s, and at the reference shape only the
// smallest tensors' updates fall under it. The bits do not change: every
// region splits its work in fixed blocks, so any thread count computes the
// same (tests/ checks 1 and 2 threads). The environment's PELAB_PARALLEL_MIN
// replaces the bound, in nanoseconds (core/startup.c); 0 makes every region
// parallel.
#define PAR_MIN_NS 5e4
extern double par_min_ns;
static inline int par_worth(double ns) { return ns >= par_min_ns; }

// Each region estimates its time from its size with these: one core's
// nanoseconds per unit of work, measured on the 2-core Zen 2 EPYC (one thread,
// each op alone at 2048 rows of 256).
#define PAR_NS_MAC 0.03          // a matrix product's multiply-add (measured 0.028)
#define PAR_NS_LAYERNORM 0.5     // LayerNorm, forward or the input gradient, per element
#define PAR_NS_COLUMN_SUM 0.2    // LayerNorm's dw and db, summed down the rows, per element
#define PAR_NS_GELU 1.2          // GELU per element
#define PAR_NS_GELU_BACK 1.5     // GELU's gradient per element
#define PAR_NS_ZERO 0.15         // zeroing, per float
#define PAR_NS_SUM_SQUARES 1.0   // the gradient norm's sum of squares (in double), per float
#define PAR_NS_ADD 0.3           // adding one array to another (residual, learned positions), per element
#define PAR_NS_XENT 3.0          // softmax and cross-entropy, per logit
#define PAR_NS_XENT_BACK 0.2     // their gradient, per logit
#define PAR_NS_ADAMW 0.5         // AdamW's update, per parameter
#define PAR_NS_ROPE 1.5          // RoPE's rotation, per channel of q and k
#define PAR_NS_SINUSOID 30.0     // a sinusoidal position's sin or cos, per element
#define PAR_NS_ATTN 0.06         // attention forward, per B·heads·T²·head size
#define PAR_NS_ATTN_BACK 0.12    // attention backward, the same
#define PAR_NS_FIRE 0.05         // FIRE's MLP forward, per query-key pair and MLP float
#define PAR_NS_FIRE_BACK 0.1     // its backward, the same

// malloc/calloc that name the caller's file and line and the size on failure.
void *xmalloc_at(size_t n, const char *file, int line);
void *xcalloc_at(size_t count, size_t size, const char *file, int line);
#define xmalloc(n) xmalloc_at((n), __FILE__, __LINE__)
#define xcalloc(c, s) xcalloc_at((c), (s), __FILE__, __LINE__)

// Memory that can be allocated without swapping or being killed, in bytes:
// MemAvailable in /proc/meminfo, or the room left under the process's cgroup
// memory limit when that is less (a container); -1 when unknown.
// PELAB_TEST_MEM_AVAILABLE (bytes) and PELAB_TEST_CGROUP_DIR stand in for
// them in the tests.
double mem_available_bytes(void);

// Multiplies sizes, refusing (exit 2) a product that overflows size_t.
size_t size_mul(size_t a, size_t b, const char *what);

// Deterministic random numbers (splitmix64): every stream in pelab is one of
// these, so a checkpoint can store its whole state in one word.
typedef struct { uint64_t s; } rng_t;
uint64_t rng_next(rng_t *r);
uint32_t rng_below(rng_t *r, uint32_t n);  // uniform in [0, n)
float rng_uniform(rng_t *r);               // uniform in [0, 1)
float rng_normal(rng_t *r);                // N(0, 1), Box-Muller

// CRC-32 (IEEE 802.3 polynomial, zlib's crc32), incremental: start with crc = 0.
uint32_t crc32_update(uint32_t crc, const void *data, size_t n);

// "Did you mean …?": the name nearest to what was typed, within two edits.
// Start with NEAREST_INIT, offer each valid name, then use .best (NULL: none close).
typedef struct {
    const char *best;
    int distance;
} nearest_name;
#define NEAREST_INIT {NULL, 3}
void nearest_offer(nearest_name *n, const char *typed, const char *name);
// Edit distance (Levenshtein) between a and b; 99 when b is longer than 32 characters.
int edit_distance(const char *a, const char *b);

double now_seconds(void);

#endif
