// plot.c — the plotting helper the experiment scripts call:
//   ./pelab-plot --out FILE.png [--title T] [--xlabel X] [--ylabel Y] [--logx] [--logy] [--panels | --heatmap] DATA.csv
// --panels draws small multiples: series named "panel|series", a chart each.
// --heatmap draws a grid instead: DATA.csv lines "row,column,value", value in
// [0, 1] (plot/heatmap.h).
// DATA.csv has lines "series,x,y" or "series,x,y,lo,hi" (a shaded band
// from lo to hi, e.g. the spread over seeds). Exit 2 on bad options, 1 on
// bad data.
#include <stdio.h>
#include <string.h>

#include "../plot/heatmap.h"
#include "../plot/plot.h"

int main(int argc, char **argv) {
    plot_opts o = {0};
    const char *out = NULL, *in = NULL;
    int heatmap = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--logx")) o.logx = 1;
        else if (!strcmp(a, "--logy")) o.logy = 1;
        else if (!strcmp(a, "--panels")) o.panels = 1;
        else if (!strcmp(a, "--heatmap")) heatmap = 1;
        else if (i + 1 < argc && !strcmp(a, "--out")) out = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--title")) o.title = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--xlabel")) o.xlabel = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--ylabel")) o.ylabel = argv[++i];
        else if (a[0] != '-' && !in) in = a;
        else {
            fprintf(stderr, "plot: unexpected argument '%s'\nusage: pelab-plot --out FILE.png [--title T] [--xlabel X] [--ylabel Y] [--logx] [--logy] [--panels | --heatmap] DATA.csv\n", a);
            return 2;
        }
    }
    if (!out || !in) {
        fprintf(stderr, "plot: need --out FILE.png and a DATA.csv\n");
        return 2;
    }
    char err[512];
    if ((heatmap ? heatmap_csv(in, out, o.title, err, sizeof err) : plot_csv(in, out, &o, err, sizeof err)) != 0) {
        fprintf(stderr, "plot: %s\n", err);
        return 1;
    }
    return 0;
}
