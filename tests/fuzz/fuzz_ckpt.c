// fuzz_ckpt.c — libFuzzer harness for the checkpoint reader: any bytes must
// give either a loaded model or a clear refusal, never a crash, a hang or a
// huge allocation; a model that loads has its header line printed (to
// /dev/null), as ./train --load prints it: every encoding's options decoded
// and formatted (issue 56: a choice of -100000000 crashed there). Built and
// run by `make fuzz`.
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../run/ckpt.h"
#include "../../run/report.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    static char path[64];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/pelab-fuzz-ckpt-%ld", (long)getpid());
        if (!freopen("/dev/null", "w", stdout)) return 0;  // the header lines
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    jmp_buf jb;
    die_jump = &jb;
    static run_t r;  // static: what a die inside the header printing leaves is still freed below
    static run_state st;
    static int loaded;
    loaded = 0;
    if (setjmp(jb) == 0) {
        static options file;
        char err[1024];
        memset(&r, 0, sizeof r);
        if (ckpt_load(path, NULL, 0, &r.m, &file, &st, size & 1, err, sizeof err) == 0) {
            loaded = 1;
            r.start_step = st.step;
            report_header(&file, &r);
        }
    }
    if (loaded) {
        model_free(&r.m);
        run_state_release(&st);  // the learning curve the file held
    }
    die_jump = NULL;
    return 0;
}
