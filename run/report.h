// report.h — what a run reports: the header line, --log as it trains,
// --json (the settings, the training, every evaluation, the provenance),
// and the exit status of what it printed.
#ifndef PELAB_REPORT_H
#define PELAB_REPORT_H

#include "run.h"

// The line that says what runs (not with --quiet).
void report_header(const options *o, const run_t *r);
// --log: its first line (process 0; a resumed run appends), then a line per
// logged step, flushed as it goes; c: the curve point measured then, or NULL.
void report_log_open(const options *o, run_t *r);
void report_log_point(run_t *r, long step, double loss, double lr, const train_report *tr, const curve_point *c);
// --json, written atomically: 0, or -1 with the reason in err (the previous
// file, if any, unchanged).
int report_json(const char *path, const options *o, const model_t *m, const train_report *tr, const eval_report *er,
                char *err, size_t errlen);
// status, or EXIT_RUNTIME when standard output failed (its results are lost).
int report_stdout_status(const options *o, int status);

#endif
