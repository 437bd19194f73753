// fuzz_ckpt.c — libFuzzer harness for the checkpoint reader: any bytes must
// give either a loaded model or a clear refusal, never a crash, a hang or a
// huge allocation. Built and run by `make fuzz`.
#include <setjmp.h>
#include <stdio.h>
#include <unistd.h>

#include "../../run/ckpt.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/pelab-fuzz-ckpt-%ld", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    jmp_buf jb;
    die_jump = &jb;
    if (setjmp(jb) == 0) {
        model_t m;
        static options file;
        run_state st;
        char err[1024];
        if (ckpt_load(path, NULL, 0, &m, &file, &st, size & 1, err, sizeof err) == 0) model_free(&m);
    }
    die_jump = NULL;
    return 0;
}
