// gemm.h — the matrix engine. Every single-precision matrix product of the
// model (the linear layers, attention, the relative encodings' tables) goes
// through gemm_sgemm, which one of the engines below computes:
//   openblas  OpenBLAS's cblas_sgemm (always built)
//   onednn    oneDNN's sgemm (built when Debian's libdnnl-dev is present;
//             its kernels follow the CPU it runs on: AVX-512 where there is
//             one, where the project pins OpenBLAS to its Haswell kernel)
// The model calls it from inside its own OpenMP loops, one product per
// thread, so an engine never threads a product itself: a product's bits
// then depend on its shape only, never on --threads (tests/ checks it for
// each engine). The two engines' bits differ from each other; a checkpoint
// does not record which made it (the format is the same), the header and
// the JSON do.
#ifndef PELAB_GEMM_H
#define PELAB_GEMM_H

#include <stddef.h>

// C (M, N) = alpha · op(A) · op(B) + beta · C, row-major; op(A) is (M, K)
// (A itself (K, M) when trans_a), op(B) is (K, N) ((N, K) when trans_b);
// lda, ldb, ldc are the row strides of A, B, C as stored.
void gemm_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);

// The engines, one word each: everything else is derived from this list —
// the table below (each engine NAME defines NAME_what, NAME_available,
// NAME_sgemm, NAME_row_block and NAME_auto_prefers in gemm.c), --gemm's
// choices ("auto", then these in this order: GEMM_CHOICES), its error text
// and the engines the tests and the bench sweep.
#define GEMM_LIST(X) X(openblas) X(onednn)
#define GEMM_CHOICE_NAME(name) #name,
#define GEMM_CHOICES {"auto", GEMM_LIST(GEMM_CHOICE_NAME) NULL}

typedef struct {
    const char *name;
    const char *what;  // for --help and the header
    int (*available)(char *why, size_t whylen);  // 1, or 0 with why ("not built: …")
    void (*sgemm)(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc);
    int row_block;  // gemm_row_block
    // 1 where `auto` prefers this engine on this machine (it then also must be
    // available and pass the start-up check); auto takes the first engine of
    // the list that it prefers, else the list's first
    int (*auto_prefers)(void);
} gemm_engine;

extern const gemm_engine gemm_engines[];
extern const int gemm_engine_count;

// Selects the engine by name ("openblas", "onednn") or "auto": oneDNN when
// it is built, passes a start-up check against a double-precision product,
// and the CPU has AVX-512 (where it computes in wider registers than the
// OpenBLAS kernel pelab pins); OpenBLAS otherwise. The choice follows the
// machine, never a timing, so a run's bits do not depend on how busy the
// machine was when it started. Products are fp32 again after it. 1, or 0
// with err.
int gemm_use(const char *name, char *err, size_t errlen);
// The engine in use ("openblas" until gemm_use chooses another).
const char *gemm_name(void);
// Rows per block when the model splits a product's rows among its threads
// (ops.c): a size the engine in use runs near its best at, fixed per engine,
// never following --threads.
int gemm_row_block(void);

// The precision of every product: "fp32" (the engine's sgemm; the default)
// or "bf16" (mixed precision: A and B rounded to bfloat16, to nearest even,
// and multiplied by oneDNN's matmul primitive with fp32 accumulation and an
// fp32 C; needs the oneDNN engine, and refuses a CPU oneDNN has no bf16
// product for), or "auto": bf16 where the engine is oneDNN and the CPU has
// AVX512_BF16, fp32 elsewhere (gemm_precision says which; never refused).
// Weights, gradients, optimiser state and everything outside the products
// stay fp32. 1, or 0 with err.
int gemm_set_precision(const char *name, char *err, size_t errlen);
const char *gemm_precision(void);
// Frees what bf16 keeps (its primitives per shape, buffers and streams) and
// returns to fp32.
void gemm_release(void);

#endif
