// fuzz_cli.c — libFuzzer harness for the command-line parser: the input,
// split at newlines, is an argument list; parsing must accept it or refuse it
// with a message (die_usage, caught here), never crash. Built by `make fuzz`.
#include <setjmp.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/options.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    static char buf[4096];
    if (size >= sizeof buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[64];
    int argc = 0;
    argv[argc++] = "train";
    for (char *p = buf; argc < 63;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    jmp_buf jb;
    die_jump = &jb;
    if (setjmp(jb) == 0) {
        options o;
        options_defaults(&o);
        optind = 0;  // GNU getopt: reinitialise for a new argument list
        // --help (and -h), --version and --list-pe (or any abbreviation
        // getopt accepts, like --ve) print and exit(0) by design: not what
        // this harness tests
        for (int i = 1; i < argc; i++) {
            size_t n = strcspn(argv[i], "=");
            if ((n >= 3 && (!strncmp(argv[i], "--help", n) || !strncmp(argv[i], "--version", n) || !strncmp(argv[i], "--list-pe", n))) ||
                !strcmp(argv[i], "-h"))
                argv[i] = "--quiet";
        }
        options_parse(&o, argc, argv);
    }
    die_jump = NULL;
    fclose(stderr);
    stderr = saved;
    return 0;
}
