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
    if (setjmp(jb) == 0) {
        model_t m;
        static options file;
        run_state st;
        char err[1024];
        if (ckpt_load(path, NULL, 0, &m, &file, &st, size & 1, err, sizeof err) == 0) {
            static run_t r;
            memset(&r, 0, sizeof r);
            r.m = m;
            r.start_step = st.step;
            report_header(&file, &r);
            model_free(&r.m);
        }
    }
    die_jump = NULL;
    return 0;
}
