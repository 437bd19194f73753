// test_cli.c — the command line as a user meets it: every bad option, value,
// combination or file exits with status 2 (usage) or 1 (runtime), names the
// problem on stderr, and is never killed by a signal; and the good paths
// (resume, load, json, refusal per length) do what docs/ says.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cli/options.h"
#include "../core/files.h"
#include "../core/json.h"
#include "test.h"

static char tmpdir[64];
static int child_keeps_repeats;  // run_train passes a repeated option as written
static const char *child_env;        // "NAME=value" for the next run, or NULL
static int child_signal_after_ms;    // > 0: send child_signal that long after starting
static int child_signal = SIGINT;
static const char *child_stdout;     // stdout to this file instead ("/dev/full"), or "closed-pipe"
static long child_fsize;             // > 0: RLIMIT_FSIZE, a disk that fills up at this many bytes a file
static int child_ignores_hup;        // start the child with SIGHUP and SIGINT ignored, as nohup does
static int child_as_nobody;          // run as uid/gid 65534 (when the tests run as root)
static int child_keeps_other_runs;   // no --overwrite added to a run with --save (see run_train)
static long ckpt_numbers(const char *path, unsigned char *buf, long cap);
static char out_buf[1 << 16], err_buf[1 << 16];

static const char *tmp_path(const char *name) {
    static char bufs[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(bufs[k], sizeof bufs[k], "%s/%s", tmpdir, name);
    return bufs[k];
}

static void ensure_tmpdir(void) {
    if (tmpdir[0]) return;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pelab-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

// Runs ./train with the space-separated args ("{T}" stands for the temp
// dir); returns the raw wait status; stdout and stderr land in the buffers.
static int run_train(const char *args) {
    ensure_tmpdir();
    static char line[8192], expanded[8192];
    expanded[0] = 0;
    snprintf(line, sizeof line, "%s", args);
    for (char *p = line; *p;) {
        char *hit = strstr(p, "{T}");
        if (!hit) {
            strncat(expanded, p, sizeof expanded - strlen(expanded) - 1);
            break;
        }
        *hit = '\0';
        strncat(expanded, p, sizeof expanded - strlen(expanded) - 1);
        strncat(expanded, tmpdir, sizeof expanded - strlen(expanded) - 1);
        p = hit + 3;
    }
    char *argv[64];
    int argc = 0;
    argv[argc++] = "./train";
    for (char *tok = strtok(expanded, " "); tok && argc < 63; tok = strtok(NULL, " ")) argv[argc++] = tok;
    // The tests reuse their files' names from run to run (full.ck, r.ck …):
    // a run with --save may replace another run's checkpoint, as if each
    // said --overwrite, unless a test of that refusal says otherwise.
    int saves = 0, loads = 0;
    for (int i = 1; i < argc; i++) saves |= !strcmp(argv[i], "--save"), loads |= !strcmp(argv[i], "--load") || !strcmp(argv[i], "--overwrite");
    if (saves && !loads && !child_keeps_other_runs && argc < 63) argv[argc++] = "--overwrite";
    argv[argc] = NULL;
    // The tests write a base (SMALL) then what they vary: an option given
    // again replaces the base's (./train itself refuses an option given
    // twice; child_keeps_repeats passes them as written).
    if (!child_keeps_repeats) {
        int keep = 1;
        for (int i = 1; i < argc; i++) {
            const setting *st = strncmp(argv[i], "--", 2) ? NULL : settings_find(argv[i] + 2);
            int valued = st && st->type != SET_FLAG && st->type != SET_ACTION;
            int later = 0;
            for (int j = i + 1 + valued; st && j < argc; j++)
                if (!strcmp(argv[j], argv[i])) later = 1;
            if (later) {
                i += valued;
                continue;
            }
            argv[keep++] = argv[i];
            if (valued && i + 1 < argc) argv[keep++] = argv[++i];
        }
        argc = keep;
        argv[argc] = NULL;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(tmp_path("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(tmp_path("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (child_stdout && strcmp(child_stdout, "closed-pipe") == 0) {
            int p[2];
            if (pipe(p) == 0) close(p[0]), o = p[1];
        } else if (child_stdout) {
            o = open(child_stdout, O_WRONLY);
        }
        dup2(o, 1), dup2(e, 2);
        if (child_env) putenv((char *)child_env);
        if (child_ignores_hup) signal(SIGHUP, SIG_IGN), signal(SIGINT, SIG_IGN);
        if (child_fsize > 0) {
            struct rlimit rl = {(rlim_t)child_fsize, (rlim_t)child_fsize};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        if (child_as_nobody && getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(126);
        // a hang guard, not a time limit: the slowest run here takes seconds on an idle machine, so 20
        // minutes is far past what a loaded machine needs; a run that truly hangs fails the test
        alarm(1200);
        execv("./train", argv);
        _exit(127);
    }
    int status = 0;
    if (child_signal_after_ms > 0) {
        usleep((useconds_t)child_signal_after_ms * 1000);
        kill(pid, child_signal);
    }
    waitpid(pid, &status, 0);
    slurp(tmp_path("stdout"), out_buf, sizeof out_buf);
    slurp(tmp_path("stderr"), err_buf, sizeof err_buf);
    return status;
}

#define SMALL "--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --quiet --threads 2"
#define LOUD "--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --threads 2"  // SMALL with its progress lines

typedef struct {
    const char *args;
    int code;            // expected exit status
    const char *names;   // stderr must contain this
} bad_case;

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

// {T}/fox.txt: n bytes of one sentence over and over (a text learned fast).
static void write_fox(size_t n) {
    static char text[30000];
    for (size_t i = 0; i < n && i < sizeof text; i++) text[i] = "the quick brown fox jumps over the lazy dog\n"[i % 44];
    write_file(tmp_path("fox.txt"), text, n < sizeof text ? n : sizeof text);
}

// An llm.c token shard (docs/data.md): header of 256 int32 (magic,
// version, count) and n uint16 tokens from a small cycle, with the header's
// version and count as given and `cut` bytes left off the end.
static void write_shard(const char *path, int version, int count, int n, int cut, int bad_token) {
    static unsigned char buf[1024 + 2 * 20000];
    memset(buf, 0, 1024);
    int head[3] = {20240520, version, count};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 4; b++) buf[4 * i + b] = (unsigned char)((unsigned)head[i] >> (8 * b));
    static const int cycle[] = {464, 3797, 318, 257, 13, 50256};
    for (int i = 0; i < n; i++) {
        int t = i == n / 2 && bad_token ? bad_token : cycle[i % 6];
        buf[1024 + 2 * i] = (unsigned char)(t & 255), buf[1024 + 2 * i + 1] = (unsigned char)(t >> 8);
    }
    write_file(path, buf, 1024 + 2 * (size_t)n - (size_t)cut);
}

// llm.c's tokenizer file for GPT-2's 50257 tokens, token t's text "<t>" (a
// few bytes left off the end with cut, or a wrong magic with bad_magic).
static void write_tokenizer(const char *path, int cut, int bad_magic) {
    static unsigned char buf[1024 + 50257 * 9];
    memset(buf, 0, 1024);
    int head[4] = {bad_magic ? 20240329 : 20240328, 2, 50257, 50256};
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 4; b++) buf[4 * i + b] = (unsigned char)((unsigned)head[i] >> (8 * b));
    size_t n = 1024;
    for (int t = 0; t < 50257; t++) {
        int len = sprintf((char *)buf + n + 1, "<%d>", t);
        buf[n] = (unsigned char)len;
        n += 1 + (size_t)len;
    }
    write_file(path, buf, n - (size_t)cut);
}

// Training on a shard: the vocabulary comes from the data (GPT-2's 50257),
// the cycle of six tokens is learned, and the sample is token ids, or text
// with llm.c's tokenizer file.
static int test_llmc_shard(void) {
    int fails = 0;
    ensure_tmpdir();
    write_shard(tmp_path("tokens.bin"), 1, 6000, 6000, 0, 0);
    int s = run_train("--data {T}/tokens.bin --d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --steps 150 --lr 1e-2 "
                      "--quiet --threads 2 --json {T}/shard.json --sample 4 --prompt 464");
    static char json[1 << 14];
    slurp(tmp_path("shard.json"), json, sizeof json);
    double loss = 99;
    const char *l = strstr(out_buf, "eval ctx=16 loss=");
    if (l) sscanf(l, "eval ctx=16 loss=%lf", &loss);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(json, "\"vocab\": 50257"), "shard run: exit %d, %s", WEXITSTATUS(s), err_buf);
    EXPECT(loss < 1.0, "a cycle of six tokens should be learned: eval loss %.3f (log 50257 = 10.8)", loss);
    EXPECT(strstr(out_buf, "sample: 464 3797 318 257 13") != NULL, "the sample should continue the cycle: %s", out_buf);
    write_shard(tmp_path("tokens.bin"), 1, 6000, 6000, 0, 0);
    write_tokenizer(tmp_path("tok.bin"), 0, 0);
    write_tokenizer(tmp_path("tok_cut.bin"), 3, 0);
    write_tokenizer(tmp_path("tok_magic.bin"), 0, 1);
    s = run_train("--data {T}/tokens.bin --d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --steps 150 --lr 1e-2 "
                  "--quiet --threads 2 --sample 4 --prompt 464 --tokenizer {T}/tok.bin");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample: <464><3797><318><257><13>"),
           "--tokenizer: the sample should be the tokens' texts: exit %d, %s %s", WEXITSTATUS(s), out_buf, err_buf);
    s = run_train("--data {T}/tokens.bin --quiet --steps 1 --sample 2 --prompt 464 --tokenizer {T}/tok_cut.bin");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(err_buf, "truncated"), "a truncated tokenizer: exit %d, %s",
           WEXITSTATUS(s), err_buf);
    s = run_train("--data {T}/tokens.bin --quiet --steps 1 --sample 2 --prompt 464 --tokenizer {T}/tok_magic.bin");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(err_buf, "magic"), "a tokenizer with another magic: exit %d, %s",
           WEXITSTATUS(s), err_buf);
    s = run_train(SMALL " --steps 1 --tokenizer {T}/tok.bin");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "token shard"), "--tokenizer on cats: exit %d, %s",
           WEXITSTATUS(s), err_buf);
    // a 1 GB (sparse) file with the tokenizer's header is refused by its size,
    // not read whole first (which took 1 GB of memory before its checks)
    write_tokenizer(tmp_path("tok_big.bin"), 0, 0);
    EXPECT(truncate(tmp_path("tok_big.bin"), 1L << 30) == 0, "cannot make a sparse 1 GB file");
    s = run_train("--data {T}/tokens.bin --quiet --steps 1 --sample 2 --prompt 464 --tokenizer {T}/tok_big.bin");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(err_buf, "larger than a GPT-2 tokenizer can be"),
           "a 1 GB tokenizer file: exit %d, %s", WEXITSTATUS(s), err_buf);
    remove(tmp_path("tok_big.bin"));
    return fails;
}

static int test_bad_input_table(void) {
    int fails = 0;
    ensure_tmpdir();
    write_shard(tmp_path("trunc.bin"), 1, 3000, 3000, 7, 0);
    write_shard(tmp_path("long.bin"), 1, 2000, 3000, 0, 0);
    write_shard(tmp_path("v2.bin"), 2, 3000, 3000, 0, 0);
    write_shard(tmp_path("badtok.bin"), 1, 3000, 3000, 0, 60000);
    write_shard(tmp_path("head.bin"), 1, 3000, 0, 1024 - 100, 0);
    write_file(tmp_path("foreign.bin"), "hello, a text file that calls itself .bin", 41);
    write_file(tmp_path("empty.txt"), "", 0);
    write_file(tmp_path("short.txt"), "hello world", 11);
    write_file(tmp_path("garbage.ck"), "this is not a checkpoint at all", 31);
    mkdir(tmp_path("adir"), 0755);
    // a good checkpoint, then damaged copies of it
    int st = run_train(SMALL " --steps 3 --save {T}/good.ck");
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "making a checkpoint failed: %s", err_buf);
    FILE *f = fopen(tmp_path("good.ck"), "rb");
    static unsigned char ck[1 << 22];
    size_t n = f ? fread(ck, 1, sizeof ck, f) : 0;
    if (f) fclose(f);
    EXPECT(n > 1000, "checkpoint has %zu bytes", n);
    write_file(tmp_path("trunc.ck"), ck, n / 2);
    write_file(tmp_path("header.ck"), ck, 40);
    ck[n / 2] ^= 0x10;
    write_file(tmp_path("flip.ck"), ck, n);
    ck[n / 2] ^= 0x10;
    ck[8] = 99;  // version
    write_file(tmp_path("version.ck"), ck, n);

    static const bad_case cases[] = {
        {"--data {T}/trunc.bin", 1, "truncated"},
        {"--data {T}/long.bin", 1, "longer than its header says"},
        {"--data {T}/v2.bin", 1, "version 2"},
        {"--data {T}/badtok.bin", 1, "not a GPT-2 token"},
        {"--data {T}/head.bin", 1, "inside its 1024-byte header"},
        {"--data {T}/foreign.bin", 1, "not an llm.c token shard"},
        {"--data task:nosuch", 2, "no such task"},
        // a size too large even to count (the sanitizer build leaked the model measured for it)
        {"--d-model 16384 --heads 16 --ctx 1048576 --batch 65536 --layers 256", 2, "too large to allocate"},
        {"--data task:copy --task-len 5", 2, "--task-len"},
        {"--data task:copy --task-len 0:3", 2, "--task-len"},
        {"--data task:copy --task-len 1:4 --test-len 3:8", 2, "overlaps"},
        {"--data task:copy --task-len 1:1000", 2, "leaves no larger size to test on"},
        {"--data task:copy --task-len 1:4 --test-len 5:8,x", 2, "--test-len"},
        {"--task-len 1:4", 2, "needs --data task:"},
        {"--data task:copy --task-len 1:16", 2, "--ctx 16 is shorter"},
        {"--data task:copy --task-len 1:4 --sample 5", 2, "--prompt"},
        {"--ctx abc", 2, "--ctx"},
        {"--ctx 0", 2, "--ctx"},
        {"--ctx -5", 2, "--ctx"},
        {"--ctx 8", 2, "--ctx"},
        {"--steps x", 2, "--steps"},
        {"--lr nan", 2, "--lr"},
        {"--lr -1", 2, "--lr"},
        {"--lr 1e-3x", 2, "--lr"},
        {"--pe foo", 2, "foo"},
        {"--pe learned+sinusoidal", 2, "absolute"},
        {"--pe rope+alibi", 2, "relative"},
        {"--pe learned+rope+alibi", 2, "--pe"},
        {"--pe none+rope", 2, "none"},
        {"--attn sideways", 2, "--attn"},
        {"--d-model 64 --heads 3", 2, "divisible"},
        {"--d-model 0", 2, "--d-model"},
        {"--layers 0", 2, "--layers"},
        {"--batch 0", 2, "--batch"},
        {"--heads 0", 2, "--heads"},
        {"--pe learned --rope-scale pi", 2, "--rope-scale"},
        {"--rope-scale bogus", 2, "--rope-scale"},
        {"--rope-factor 2", 2, "--rope-factor"},
        {"--rope-factor 0.5 --rope-scale pi", 2, "--rope-factor"},
        {"--pe rope --d-model 12 --heads 4", 2, "even"},
        {"--rel-clip 0", 2, "--rel-clip"},
        {"--t5-buckets 2", 2, "--t5-buckets"},
        {"--no-such-flag", 2, "--no-such-flag"},
        {"--eval_ctx 64", 2, "did you mean --eval-ctx?"},  // an underscore spelling: suggested, never taken
        {"--stesp 5", 2, "did you mean --steps?"},
        {"--rope_base 500", 2, "did you mean --rope-base?"},  // an encoding's option too
        {"--attn casual", 2, "did you mean causal?"},          // and values: a choice,
        {"--keep bets", 2, "did you mean best?"},              // two letters swapped as one edit,
        {"--pe learned+alibbi", 2, "did you mean alibi?"},     // an encoding,
        {"--rope-scale yran", 2, "did you mean yarn?"},        // an encoding's choice,
        {"--data task:cpy", 2, "did you mean task:copy?"},     // a task
        {"--ctx", 2, "--ctx"},
        {"stray", 2, "stray"},
        {"--eval-ctx 64,,x", 2, "--eval-ctx"},
        {"--temperature -1", 2, "--temperature"},
        {"-heads 4", 2, "unknown option '-heads'"},  // -h alone is --help; not the start of a mistyped option
        {"--threads 0", 2, "--threads"},
        {"--seed -1", 2, "--seed"},
        {"--warmup -1", 2, "--warmup"},
        {"--clip -1", 2, "--clip"},
        {"--sin-scale 0", 2, "--sin-scale"},
        {"--save-every 5 --out none", 2, "--save"},
        {"--load {T}/good.ck --resume {T}/good.ck", 2, "--load"},
        {"--attn bidir --sample 5", 2, "--sample"},
        {"--attn bidir --eval-window 8", 2, "--eval-window"},
        {"--data task:copy --task-ignore 0.5", 2, "task copy has no ignored tokens"},
        {"--data task:flipflop --task-ignore 1.5", 2, "below 1"},
        {"--data task:selective-copy --task-ignore 0.7", 2, "at most 0.67"},
        {"--data task:flipflop --task-ignore x", 2, "expected a probability"},
        {"--task-ignore 0.5", 2, "--task-ignore"},
        {"--eval-window -1", 2, "--eval-window"},
        {"--prompt the", 2, "--sample"},
        {"--temperature 0.5", 2, "--sample"},
        {"--warmup 500", 2, "--warmup 500 is longer than --steps 2"},
        {"--resume {T}/good.ck --steps 1", 2, "has done 3 steps"},
        {"--data {T}/nonexistent.txt", 1, "nonexistent.txt"},
        {"--data {T}/adir", 1, "directory"},
        {"--data {T}/empty.txt", 1, "empty"},
        {"--data {T}/short.txt --ctx 64", 2, "short.txt"},
        {"--load {T}/missing.ck", 1, "missing.ck"},
        {"--load {T}/garbage.ck", 1, "not a pelab checkpoint"},
        {"--load {T}/trunc.ck", 1, "truncated"},
        {"--load {T}/header.ck", 1, "truncated"},
        {"--load {T}/flip.ck", 1, "checksum"},
        {"--load {T}/version.ck", 1, "version"},
        {"--load {T}/adir", 1, "directory"},
        {"--resume {T}/garbage.ck", 1, "not a pelab checkpoint"},
        {"--load {T}/good.ck --data {T}/short.txt", 2, "vocabulary"},
        {"--steps 2 --save {T}/no/such/dir/x.ck", 1, "x.ck"},
        {"--steps 2 --json {T}/no/such/dir/x.json", 1, "x.json"},
    };
    int ncases = sizeof cases / sizeof cases[0];
    for (int i = 0; i < ncases; i++) {
        char args[1024];
        // a checkpoint brings its own shape and schedule: no SMALL with it
        int from = strstr(cases[i].args, "--load") || strstr(cases[i].args, "--resume");
        snprintf(args, sizeof args, "%s %s", from ? "--quiet --threads 2" : SMALL " --steps 2", cases[i].args);
        int s = run_train(args);
        if (WIFSIGNALED(s)) {
            printf("    '%s' was killed by signal %d\n", cases[i].args, WTERMSIG(s));
            fails++;
            continue;
        }
        int code = WEXITSTATUS(s);
        EXPECT(code == cases[i].code, "'%s' exited %d, expected %d (stderr: %.200s)", cases[i].args, code, cases[i].code, err_buf);
        EXPECT(strstr(err_buf, cases[i].names) != NULL, "'%s': stderr does not name '%s': %.300s", cases[i].args, cases[i].names, err_buf);
    }
    // the environment's bound on a parallel region's size (core/startup.c)
    const char *bad_min[] = {"abc", "-1", "", "1e400", "5x"};
    for (size_t i = 0; i < sizeof bad_min / sizeof bad_min[0]; i++) {
        setenv("PELAB_PARALLEL_MIN", bad_min[i], 1);
        int s = run_train(SMALL " --steps 2");
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "PELAB_PARALLEL_MIN"),
               "PELAB_PARALLEL_MIN='%s': exit %d, stderr %.200s", bad_min[i], WEXITSTATUS(s), err_buf);
    }
    setenv("PELAB_PARALLEL_MIN", "1e9", 1);
    int s = run_train(SMALL " --steps 2");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "PELAB_PARALLEL_MIN=1e9 (every region on one thread): %s", err_buf);
    unsetenv("PELAB_PARALLEL_MIN");
    printf("    %d bad-input cases\n", ncases + (int)(sizeof bad_min / sizeof bad_min[0]));
    return fails;
}

// --help, --list-pe and docs/options.md's table list every option of the
// table and of every encoding, and every encoding of the registry: all read
// from the same tables, so a new option or encoding cannot be left out.
static int test_help_lists_every_option(void) {
    int fails = 0;
    int s = run_train("--help");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--help exit");
    static char help[1 << 16], readme[1 << 18];
    snprintf(help, sizeof help, "%s", out_buf);
    for (const char *line = help; *line;) {  // 80 columns (counted in characters: UTF-8 continuation bytes skipped)
        size_t len = strcspn(line, "\n"), cols = 0;
        for (size_t i = 0; i < len; i++) cols += ((unsigned char)line[i] & 0xC0) != 0x80;
        EXPECT(cols <= 80, "--help has a line of %zu columns: %.*s", cols, (int)len, line);
        line += len + (line[len] == '\n');
    }
    FILE *f = fopen("docs/options.md", "r");
    size_t n = f ? fread(readme, 1, sizeof readme - 1, f) : 0;
    readme[n] = '\0';
    if (f) fclose(f);
    const char *table = strstr(readme, "## Options");
    const char *table_end = table ? strstr(table + 1, "\n## ") : NULL;
    EXPECT(table != NULL, "docs/options.md has no '## Options' section");
    char names[128][48];
    int count = 0;
    for (int i = 0; i < settings_count && count < 128; i++)
        if (settings_schema[i].name) snprintf(names[count++], 48, "--%s", settings_schema[i].name);
    for (int e = 0; e < pe_registry_count; e++)
        for (int k = 0; pe_registry[e]->options && pe_registry[e]->options[k].name && count < 128; k++)
            snprintf(names[count++], 48, "--%s", pe_registry[e]->options[k].name);
    for (int i = 0; i < count; i++) {
        char word[64];
        snprintf(word, sizeof word, "%.40s ", names[i]);
        EXPECT(strstr(help, word) || strstr(help, names[i]), "--help lacks %s", names[i]);
        // the row's own option: "`--log " or "`--log`", not the start of "`--log-every"
        snprintf(word, sizeof word, "`%.40s", names[i]);
        const char *at = table ? strstr(table, word) : NULL;
        while (at && at[strlen(word)] != ' ' && at[strlen(word)] != '`') at = strstr(at + 1, word);
        EXPECT(at && (!table_end || at < table_end), "docs/options.md's table lacks %s", names[i]);
    }
    // the table's default column says each row's default (the schema's text)
    for (int i = 0; table && i < settings_count; i++) {
        const setting *r = &settings_schema[i];
        if (!r->name || !r->def || r->type == SET_FLAG) continue;
        char word[64];
        snprintf(word, sizeof word, "| `--%.40s ", r->name);
        const char *row = strstr(table, word);
        const char *cell = row ? strstr(row + 2, "| ") : NULL;
        const char *end = cell ? strstr(cell + 2, " |") : NULL;
        char text[256] = "";
        if (end) snprintf(text, sizeof text, "%.*s", (int)(end - cell - 2), cell + 2);
        EXPECT(end && strstr(text, r->def), "docs/options.md's table: --%s's default is '%s', the schema's %s", r->name, text,
               r->def);
    }
    s = run_train("--list-pe");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--list-pe exit");
    for (int e = 0; e < n_test_encodings; e++) {  // a line that starts with the name
        char line[80];
        snprintf(line, sizeof line, "\n%s ", test_encodings[e]);
        EXPECT(strncmp(out_buf, line + 1, strlen(line + 1)) == 0 || strstr(out_buf, line), "--list-pe lacks %s", test_encodings[e]);
    }
    s = run_train("-h");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "usage: ./train"), "-h: exit %d", WEXITSTATUS(s));
    s = run_train("--version");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "pelab"), "--version");
    return fails;
}

// Every environment variable the trainer's sources read (a literal
// getenv("NAME") in train.c and the Makefile's LIB_SRC and HEADERS, given as
// PELAB_TRAIN_SOURCES; the PELAB_TEST_ hooks excepted) is named in --help's environment section and in docs/options.md's
// Environment section, so a new variable cannot go unmentioned.
static int test_help_lists_every_variable(void) {
    int fails = 0, found = 0;
    int s = run_train("--help");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--help exit");
    static char help[1 << 16], doc[1 << 18], src[1 << 20];
    const char *from = strstr(out_buf, "\nenvironment\n"), *to = from ? strstr(from, "\nexamples\n") : NULL;
    EXPECT(from && to, "--help has no environment section before its examples");
    snprintf(help, sizeof help, "%.*s", from && to ? (int)(to - from) : 0, from ? from : "");
    slurp("docs/options.md", doc, sizeof doc);
    char *sec = strstr(doc, "\n## Environment\n"), *end = sec ? strstr(sec + 1, "\n## ") : NULL;
    EXPECT(sec != NULL, "docs/options.md has no '## Environment' section");
    if (end) *end = '\0';
    const char *list = PELAB_TRAIN_SOURCES;
    for (size_t n; (n = strcspn(list += strspn(list, " "), " ")) > 0; list += n) {
        char path[512];
        snprintf(path, sizeof path, "%.*s", (int)n, list);
        slurp(path, src, sizeof src);
        EXPECT(src[0], "cannot read %s (the suite runs from the repository)", path);
        for (const char *p = strstr(src, "getenv(\""); p; p = strstr(p + 1, "getenv(\"")) {
            char name[64];
            if (sscanf(p + 8, "%63[A-Z0-9_]", name) != 1 || !strncmp(name, "PELAB_TEST_", 11)) continue;
            found++;
            char word[72];
            snprintf(word, sizeof word, "`%s", name);
            EXPECT(strstr(help, name), "--help's environment section lacks %s (read in %s)", name, path);
            EXPECT(sec && strstr(sec, word), "docs/options.md's Environment section lacks %s (read in %s)", name, path);
        }
    }
    EXPECT(found >= 5, "found %d getenv calls in the sources; expected at least the 5 of core/ and plot/", found);
    return fails;
}

// Every ```c block of docs/*.md (the extension guide's worked examples) is
// compiled against the real headers with the build's own compiler and flags
// and -Werror: a hook whose signature changes in pe.h (or corpus.h) fails
// here, not in the hands of the reader who copies the example.
static int test_docs_code_compiles(void) {
    int fails = 0, blocks = 0;
    ensure_tmpdir();
    static char doc[1 << 18];
    static const char *pages[] = {"docs/extending.md", "docs/model.md", "docs/encodings.md", "docs/data.md",
                                  "docs/checkpoint.md", "docs/options.md", "docs/code.md", "docs/workflow.md"};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        slurp(pages[i], doc, sizeof doc);
        for (char *p = strstr(doc, "\n```c\n"); p; p = strstr(p, "\n```c\n")) {
            char *code = p + 6, *end = strstr(code, "\n```");
            EXPECT(end != NULL, "%s: a ```c block is not closed", pages[i]);
            if (!end) break;
            char src[256], cmd[4096];
            snprintf(src, sizeof src, "%s/doc_block_%d.c", tmpdir, blocks);
            FILE *f = fopen(src, "w");
            EXPECT(f != NULL, "cannot write %s", src);
            if (!f) break;
            fwrite(code, 1, (size_t)(end - code + 1), f);
            fclose(f);
            snprintf(cmd, sizeof cmd,
                     "%s %s -Werror -Icore -Idata -Iplot -Imodel -Imodel/pe -Irun -Ieval -Icli -c %s -o %s.o 2>%s/doc_cc.log",
                     PELAB_CC, PELAB_CFLAGS, src, src, tmpdir);
            int s = system(cmd);
            char log[4096];
            snprintf(cmd, sizeof cmd, "%s/doc_cc.log", tmpdir);
            slurp(cmd, log, sizeof log);
            int line = 2;   // the line of the block's first code line
            for (const char *c = doc; c < p; c++) line += *c == '\n';
            EXPECT(s == 0, "%s: the C block at line %d does not compile with -Werror:\n%s", pages[i], line, log);
            blocks++;
            p = end;
        }
    }
    EXPECT(blocks >= 2, "found %d C blocks in docs/; the extension guide has at least 2", blocks);
    return fails;
}

// An option is refused with an encoding that does not take it, naming the
// encodings that do; with a checkpoint only evaluation options are taken.
static int test_options_belong_to_encodings(void) {
    int fails = 0;
    static const struct {
        const char *args, *names[2];
    } cases[] = {
        {"--pe alibi --rope-base 500", {"--rope-base", "rope"}},
        {"--pe xl --sin-base 500", {"--sin-base", "sinusoidal"}},
        {"--pe alibi --rel-clip 4", {"--rel-clip", "shaw"}},
        {"--pe learned --rope-scale yarn", {"--rope-scale", "rope"}},
        {"--pe none --t5-buckets 8", {"--t5-buckets", "t5"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char a[256];
        snprintf(a, sizeof a, SMALL " --steps 2 %s", cases[i].args);
        int s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2, "'%s' exited %d, expected 2", cases[i].args, WEXITSTATUS(s));
        for (int k = 0; k < 2; k++)
            EXPECT(strstr(err_buf, cases[i].names[k]), "'%s': stderr does not name %s: %s", cases[i].args, cases[i].names[k], err_buf);
    }
    int s = run_train(SMALL " --pe alibi --steps 2 --save {T}/alibi.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "alibi run: %s", err_buf);
    s = run_train("--quiet --threads 2 --load {T}/alibi.ck --rope-scale yarn");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--rope-scale") && strstr(err_buf, "rope"),
           "--rope-scale with an alibi checkpoint: exit %d, %s", WEXITSTATUS(s), err_buf);
    s = run_train(SMALL " --pe rope --steps 2 --save {T}/rope.ck");
    s = run_train("--quiet --threads 2 --load {T}/rope.ck --rope-base 500");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--rope-base") && strstr(err_buf, "checkpoint"),
           "--rope-base with --load: exit %d, %s", WEXITSTATUS(s), err_buf);
    s = run_train("--quiet --threads 2 --load {T}/rope.ck --rope-scale yarn --eval-ctx 16,32");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "eval ctx=32 loss="), "--rope-scale with --load: %s", err_buf);
    return fails;
}

// Version 1 checkpoints (tests/fixtures, made by the code before format 2)
// load and give the losses they gave then; resumed, they finish the run as
// the current code does from scratch. Losses are compared to 4 decimals with
// a tolerance of 2e-3 (another machine's BLAS kernels change the last bits).
static int test_v1_checkpoints_still_load(void) {
    int fails = 0;
    static const char *const names[] = {"rope", "learned_shaw", "sinusoidal_xl", "t5", "alibi_bidir"};
    static const char *const pes[] = {"rope", "learned+shaw", "sinusoidal+xl", "t5", NULL};
    for (int i = 0; i < 5; i++) {
        char a[512], want[256] = "";
        snprintf(a, sizeof a, "tests/fixtures/v1_%s.load.txt", names[i]);
        slurp(a, want, sizeof want);
        double want_loss = -1, got_loss = -2;
        sscanf(want, "eval ctx=16 loss=%lf", &want_loss);
        snprintf(a, sizeof a, "--quiet --threads 1 --load tests/fixtures/v1_%s.ck%s", names[i], pes[i] ? " --eval-ctx 16" : "");
        int s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "v1 %s does not load: %s", names[i], err_buf);
        const char *l = strstr(out_buf, "eval ctx=16 loss=");
        if (l) sscanf(l, "eval ctx=16 loss=%lf", &got_loss);
        EXPECT(fabs(got_loss - want_loss) <= 2e-3, "v1 %s: loss %.4f, it gave %.4f", names[i], got_loss, want_loss);
        if (!pes[i]) continue;
        // resume the step-10 file to 20 steps, and compare with a fresh 20-step run
        snprintf(a, sizeof a, "--quiet --threads 1 --resume tests/fixtures/v1_%s.ck --save {T}/resumed.ck --overwrite --eval-ctx 16", names[i]);
        s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "v1 %s does not resume: %s", names[i], err_buf);
        double resumed = -1, fresh = -2;
        if ((l = strstr(out_buf, "eval ctx=16 loss="))) sscanf(l, "eval ctx=16 loss=%lf", &resumed);
        snprintf(a, sizeof a,
                 "--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --quiet --threads 1 --seed 5 --lr 6e-3 --warmup 20 --pe %s --steps 20",
                 pes[i]);
        s = run_train(a);
        if ((l = strstr(out_buf, "eval ctx=16 loss="))) sscanf(l, "eval ctx=16 loss=%lf", &fresh);
        EXPECT(fabs(resumed - fresh) <= 2e-3, "v1 %s resumed to step 20: loss %.4f, a fresh run %.4f", names[i], resumed, fresh);
        // the resumed run saved format 2, little-endian
        unsigned char head[16] = {0};
        FILE *f = fopen(tmp_path("resumed.ck"), "rb");
        if (f) {
            if (fread(head, 1, 16, f) != 16) head[8] = 0;
            fclose(f);
        }
        EXPECT(!memcmp(head, "PELABCK1", 8) && head[8] == 2 && !head[9] && !head[10] && !head[11],
               "v1 %s resumed: the new file's version bytes are %d %d %d %d", names[i], head[8], head[9], head[10], head[11]);
    }
    return fails;
}

// --resume refuses a corpus whose bytes changed since the save; a --data path
// of 2,000 bytes is kept whole and resumes.
static int test_resume_checks_the_corpus(void) {
    int fails = 0;
    ensure_tmpdir();
    char text[6000];
    for (int i = 0; i < 6000; i++) text[i] = "the quick brown fox jumps over the lazy dog\n"[i % 44];
    // a path of about 2,000 bytes: 8 nested folders of 240-character names
    char path[2200];
    snprintf(path, sizeof path, "%s", tmpdir);
    for (int k = 0; k < 8; k++) {
        size_t n = strlen(path);
        path[n] = '/';
        memset(path + n + 1, 'a' + k, 240);
        path[n + 241] = '\0';
        mkdir(path, 0755);
    }
    strcat(path, "/corpus.txt");
    EXPECT(strlen(path) >= 1950, "path of %zu bytes", strlen(path));
    write_file(path, text, sizeof text);
    char a[4096];
    snprintf(a, sizeof a, SMALL " --steps 20 --stop-at 10 --save {T}/c.ck --data %s", path);
    int s = run_train(a);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "run on a long path: %s", err_buf);
    s = run_train("--quiet --threads 2 --resume {T}/c.ck --save {T}/c2.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "eval ctx=16"), "resume on a long path: %s", err_buf);
    text[100] = 'X';  // one byte changed
    write_file(path, text, sizeof text);
    s = run_train("--quiet --threads 2 --resume {T}/c.ck --save {T}/c3.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(err_buf, "changed"), "resume on a changed corpus: exit %d, %s",
           WEXITSTATUS(s), err_buf);
    return fails;
}

// docs/checkpoint.md names every tensor of every encoding (by the name the
// parameter table gives it, in backquotes) and every encoding: a new
// encoding's tensors cannot go undocumented.
static int test_checkpoint_page_lists_every_tensor(void) {
    int fails = 0;
    static char page[1 << 17];
    slurp("docs/checkpoint.md", page, sizeof page);
    EXPECT(page[0], "cannot read docs/checkpoint.md");
    for (int k = 0; k < pe_registry_count && page[0]; k++) {
        const char *name = pe_registry[k]->name;
        char want[64];
        snprintf(want, sizeof want, "`%s`", name);
        EXPECT(strstr(page, want), "docs/checkpoint.md does not name the encoding %s", want);
        model_config c;
        test_tiny_config(&c, name, test_mode_allowed(name, 0) ? 0 : 1);
        model_t m;
        model_create(&m, &c);
        for (int t = 0; t < m.tab.n; t++) {
            snprintf(want, sizeof want, "`%s`", m.tab.t[t].name);
            EXPECT(strstr(page, want), "docs/checkpoint.md does not list %s's tensor %s", name, want);
        }
        model_free(&m);
    }
    return fails;
}

// The sampler never emits [MASK] or cats' padding, even from an untrained model.
static int test_sampler_emits_only_text(void) {
    int fails = 0;
    int s = run_train("--quiet --threads 2 --steps 0 --sample 400 --seed 3");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample: the"), "sampling: %s", err_buf);
    EXPECT(!strstr(out_buf, "<mask>") && !strstr(out_buf, "<pad>"), "the sample holds a special token: %.300s", strstr(out_buf, "sample:"));
    // --probe-positions says what each number is
    s = run_train("--quiet --threads 2 --steps 20 --probe-positions --eval-tokens 512");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "probe ctx=64 position R² (held out): input ") &&
               strstr(out_buf, ", block 1 ") && strstr(out_buf, ", block 2 "),
           "the probe line is not labelled: %s", out_buf);
    // --temperature 0 is greedy: the same text whatever the seed, and only text
    static char first[1 << 16];
    s = run_train("--quiet --threads 2 --steps 0 --sample 100 --temperature 0 --seed 3");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample: the"), "greedy sampling: %s", err_buf);
    memcpy(first, out_buf, sizeof first);
    s = run_train("--quiet --threads 2 --steps 0 --sample 100 --temperature 0 --seed 4");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && !strcmp(strstr(first, "sample:") ? strstr(first, "sample:") : first,
                                                          strstr(out_buf, "sample:") ? strstr(out_buf, "sample:") : out_buf),
           "greedy samples differ between seeds:\n%s\n%s", first, out_buf);
    EXPECT(!strstr(out_buf, "<mask>") && !strstr(out_buf, "<pad>"), "the greedy sample holds a special token");
    // --top-k 1 draws the most likely token: greedy's text
    s = run_train("--quiet --threads 2 --steps 0 --sample 100 --top-k 1 --seed 3");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample:") && !strcmp(strstr(first, "sample:"), strstr(out_buf, "sample:")),
           "--top-k 1 is not greedy:\n%s\n%s", first, out_buf);
    // --samples N: N texts from one stream, the first the single sample's
    s = run_train("--quiet --threads 2 --steps 0 --sample 60 --seed 3");
    memcpy(first, out_buf, sizeof first);
    s = run_train("--quiet --threads 2 --steps 0 --sample 60 --samples 3 --top-k 5 --seed 3");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample 1: the") && strstr(out_buf, "sample 3: the"),
           "--samples 3: %s", out_buf);
    s = run_train("--quiet --threads 2 --steps 0 --sample 60 --samples 3 --seed 3");
    const char *one = strstr(first, "sample: "), *many = strstr(out_buf, "sample 1: ");
    EXPECT(one && many && !strncmp(one + 8, many + 10, strcspn(one + 8, "\n") + 1), "the first of --samples is not the sample");
    s = run_train("--quiet --threads 2 --steps 5 --samples 2");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--sample N"), "--samples without --sample: %s", err_buf);
    // --sample-every: samples during training, from their own stream (the weights' bits stay)
    s = run_train("--threads 2 --steps 40 --sample 20 --sample-every 20 --out none --save {T}/se.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample at step 20: the") &&
           strstr(out_buf, "sample at step 40: the"), "--sample-every: %s", out_buf);
    EXPECT(strstr(out_buf, " eta ≤"), "an --until-solved run's eta is not marked as the cap's bound: %s", out_buf);
    s = run_train("--quiet --threads 2 --steps 40 --out none --save {T}/nose.ck");
    static unsigned char a[1 << 20], b[1 << 20];
    long na = ckpt_numbers(tmp_path("se.ck"), a, sizeof a), nb = ckpt_numbers(tmp_path("nose.ck"), b, sizeof b);
    EXPECT(na > 0 && na == nb && !memcmp(a, b, (size_t)na), "--sample-every changed the trained weights");
    return fails;
}

// A run stopped at step k and resumed ends with the same bytes — weights,
// moments, data position — as one that never stopped.
static int test_resume_equals_uninterrupted(void) {
    int fails = 0;
    const char *pes[] = {"rope", "learned+shaw"};
    for (int i = 0; i < 2; i++) {
        char a[512];
        snprintf(a, sizeof a, SMALL " --pe %s --steps 24 --save {T}/full.ck", pes[i]);
        int s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "full run: %s", err_buf);
        snprintf(a, sizeof a, SMALL " --pe %s --steps 24 --stop-at 10 --save {T}/part.ck", pes[i]);
        s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "--resume"), "stopped run: %s %s", out_buf, err_buf);
        EXPECT(!test_ckpt_same_run(tmp_path("full.ck"), tmp_path("part.ck")), "the stopped run should differ before resuming");
        s = run_train("--quiet --threads 2 --resume {T}/part.ck --save {T}/part.ck");
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "resume: %s", err_buf);
        EXPECT(test_ckpt_same_run(tmp_path("full.ck"), tmp_path("part.ck")), "pe=%s: resumed checkpoint differs from the uninterrupted one", pes[i]);
    }
    return fails;
}

// 1 when the n bytes at p hold the text w.
static int memmem_text(const char *p, size_t n, const char *w) {
    size_t k = strlen(w);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, w, k) == 0) return 1;
    return 0;
}

// The "curve" array of a --json file into out ("" when it has none).
static void json_curve(const char *path, char *out, size_t cap) {
    static char json[1 << 16];
    slurp(tmp_path(path), json, sizeof json);
    const char *a = strstr(json, "\"curve\": ["), *b = a ? strchr(a, ']') : NULL;
    snprintf(out, cap, "%.*s", b ? (int)(b - a + 1) : 0, a ? a : "");
}

// A run stopped and resumed continues its record: its --json curve is the
// uninterrupted run's (points where that run measured, none at --stop-at),
// and its training time, in --log and --json, goes on from the first part's.
static int test_resumed_run_continues_its_record(void) {
    int fails = 0;
    remove(tmp_path("rec.log"));
    int s = run_train(SMALL " --steps 24 --eval-every 4 --until-solved 0 --json {T}/whole.json");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "uninterrupted run: %s", err_buf);
    s = run_train(SMALL " --steps 24 --eval-every 4 --until-solved 0 --stop-at 10 --save {T}/rec.ck --log {T}/rec.log");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "first part: %s", err_buf);
    static char log[1 << 14];
    slurp(tmp_path("rec.log"), log, sizeof log);
    const char *last = strstr(log, "{\"step\": 10, \"loss\"");  // a progress point, not a curve point
    const char *nl = last ? strchr(last, '\n') : NULL;
    EXPECT(strstr(log, "\"step\": 8, \"loss\"") && nl && !memmem_text(last, (size_t)(nl - last), "val_loss"),
           "--log of the first part: %s", log);
    const char *e1 = last ? strstr(last, "\"elapsed\": ") : NULL;
    double t1 = e1 ? atof(e1 + 11) : -1;
    // (without --eval-every: the checkpoint keeps it, as it keeps --until-solved)
    s = run_train("--quiet --threads 2 --resume {T}/rec.ck --save {T}/rec.ck --json {T}/rest.json "
                  "--log {T}/rec.log");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "resumed part: %s", err_buf);
    static char whole[1 << 14], rest[1 << 14];
    json_curve("whole.json", whole, sizeof whole);
    json_curve("rest.json", rest, sizeof rest);
    EXPECT(strstr(whole, "\"step\": 24") && !strcmp(whole, rest), "curves: uninterrupted %s, resumed %s", whole, rest);
    static char j[1 << 14];
    slurp(tmp_path("rest.json"), j, sizeof j);
    EXPECT(strstr(j, "\"until_solved\": 0,") && strstr(j, "\"eval_every\": 4,"),
           "the resumed cats run should keep --until-solved 0 and --eval-every 4 (not cats' 0.99 and 100): %.2000s", j);
    const char *p2 = strstr(j, "\"seconds\": ");
    double t2 = p2 ? atof(p2 + 11) : -1;
    slurp(tmp_path("rec.log"), log, sizeof log);
    const char *r = strstr(log, "\"resumed\": true");
    const char *e2 = r ? strstr(r, "\"elapsed\": ") : NULL;
    double t3 = e2 ? atof(e2 + 11) : -1;
    // (--log has the time to the millisecond, and the two steps from the stop
    // to the resumed run's first point can take less than one: that point may
    // equal the stop's, but a count that started again would be below it)
    EXPECT(t1 > 0 && t2 > t1 && t3 >= t1, "training seconds: %g at the stop, %g in the resumed --json, %g at the "
           "resumed run's first --log point (both should count the first part)", t1, t2, t3);
    // an evaluation of the checkpoint trains nothing: none of the run's record is its own
    s = run_train("--quiet --load {T}/rec.ck --eval-tokens 256 --json {T}/eval.json");
    slurp(tmp_path("eval.json"), j, sizeof j);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(j, "\"seconds\": 0.000") && !strstr(j, "\"curve\""),
           "--load's --json reports the checkpoint's training as its own: %s", j);
    return fails;
}

// --load reproduces the trained model's evaluation; --json holds the keys docs/options.md lists;
// a learned model refuses the long length but runs the others.
static int test_load_json_and_refusal(void) {
    int fails = 0;
    int s = run_train(SMALL " --pe learned --steps 5 --save {T}/l.ck --eval-ctx 16,32 --json {T}/r.json");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "training run exit %d: %s", WEXITSTATUS(s), err_buf);
    EXPECT(strstr(out_buf, "eval ctx=16 loss="), "no eval line: %s", out_buf);
    EXPECT(strstr(out_buf, "order_acc="), "no order_acc line: %s", out_buf);
    EXPECT(strstr(err_buf, "ctx=32") && strstr(err_buf, "learned"), "ctx 32 refusal not explained: %s", err_buf);
    char first[256] = "";
    const char *line = strstr(out_buf, "eval ctx=16");
    if (line) sscanf(line, "%255[^\n]", first);
    static char json[1 << 14];
    slurp(tmp_path("r.json"), json, sizeof json);
    const char *keys[] = {"\"config\"", "\"params\"", "\"train\"", "\"steps\"", "\"final_loss\"", "\"tokens_per_s\"",
                          "\"seconds\"", "\"eval\"", "\"ctx\"", "\"loss\"", "\"ppl\"", "\"order\"", "\"acc\"", "\"n\"",
                          "\"pelab\": {\"version\": ", "\"commit\": ", "\"started\": \"20", "\"machine\": {\"cpu\": ",
                          "\"kind\": \"family ", "\"blas_kernel\": ", "\"gemm\": "};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) EXPECT(strstr(json, keys[i]), "json lacks %s", keys[i]);
    s = run_train("--quiet --threads 2 --load {T}/l.ck --eval-ctx 16");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--load exit: %s", err_buf);
    EXPECT(first[0] && strstr(out_buf, first), "--load gives '%.60s', training gave '%s'", out_buf, first);
    s = run_train("--quiet --threads 2 --load {T}/l.ck --sample 8 --prompt the");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample: the"), "sampling: %s %s", out_buf, err_buf);
    return fails;
}

// An evaluation whose loss is not a number (xPos's scales overflow a float
// far past a tiny --xpos-scale-base) is a failure: said, recorded in --json
// as an error, and the exit status is 1 — never "loss=-nan" and 0.
static int test_nonfinite_eval_fails(void) {
    int fails = 0;
    static char json[1 << 14];
    int s = run_train(SMALL " --pe xpos --xpos-scale-base 1 --steps 2 --eval-ctx 16,512 --json {T}/nf.json");
    slurp(tmp_path("nf.json"), json, sizeof json);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1, "exit %d, expected 1: %s", WEXITSTATUS(s), err_buf);
    EXPECT(strstr(out_buf, "eval ctx=512 failed") && strstr(err_buf, "not a number"), "not said: %s %s", out_buf, err_buf);
    EXPECT(!strstr(out_buf, "nan") && strstr(out_buf, "eval ctx=16 loss="), "%s", out_buf);
    EXPECT(strstr(json, "\"ctx\": 512, \"error\": \"the loss at ctx=512 is not a number"), "json: %.600s", json);
    return fails;
}

// What the evaluation after training will refuse is said before training:
// a length a learned table cannot reach (the others still run), and a run
// where no length or no learning-curve window can be evaluated is refused
// before the first step (nothing is saved).
static int test_evaluations_checked_before_training(void) {
    int fails = 0;
    ensure_tmpdir();
    int s = run_train(SMALL " --steps 3 --pe learned --eval-ctx 16,32");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(err_buf, "--eval-ctx 32 will be refused after training") &&
               strstr(out_buf, "eval ctx=16 loss="), "learned at 32: exit %d: %s", WEXITSTATUS(s), err_buf);
    char tiny[150];
    for (int i = 0; i < 150; i++) tiny[i] = "the quick brown fox\n"[i % 20];
    write_file(tmp_path("tiny.txt"), tiny, sizeof tiny);   // a validation split of 15 bytes: no window of 16
    const char *cases[] = {SMALL " --steps 3 --data {T}/tiny.txt --save {T}/tiny.ck",
                           SMALL " --steps 3 --data {T}/tiny.txt --eval-ctx 16 --eval-every 1 --save {T}/tiny.ck"};
    for (int i = 0; i < 2; i++) {
        s = run_train(cases[i]);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2, "'%s' exited %d: %s", cases[i], WEXITSTATUS(s), err_buf);
        EXPECT(strstr(err_buf, "can be evaluated") && access(tmp_path("tiny.ck"), F_OK) != 0, "'%s': %s", cases[i], err_buf);
    }
    return fails;
}

// Starts ./train with argv in the background, stdout and stderr into out
// (NULL: /dev/null), env (NULL: none) added to its environment.
static pid_t spawn_train(const char *out, const char *env, char *const argv[]) {
    ensure_tmpdir();
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1), dup2(o, 2);
        if (env) putenv((char *)env);
        execv("./train", argv);
        _exit(127);
    }
    return pid;
}

// The progress line says when throughput falls far below the run's best:
// the run is stopped (SIGSTOP) for 4 s mid-way, as a machine
// whose cores other processes take would stall it. The windows between lines
// are short (300 steps, well under a second even in the sanitizer build), so
// the window with the stall is several times slower whatever the machine.
static int test_progress_warns_when_slow(void) {
    int fails = 0;
    ensure_tmpdir();
    char out[512];
    snprintf(out, sizeof out, "%s", tmp_path("slow.out"));
    char *argv[] = {"./train", "--d-model", "16", "--layers", "1", "--heads", "2", "--ctx", "16", "--batch", "4",
                    "--threads", "1", "--steps", "6000", "--log-every", "300", "--until-solved", "0", "--eval-every", "0",
                    NULL};
    pid_t pid = spawn_train(out, "PELAB_TEST_STEP_SLEEP_MS=1", argv);
    usleep(1500000);
    kill(pid, SIGSTOP);
    usleep(4000000);
    kill(pid, SIGCONT);
    int st;
    waitpid(pid, &st, 0);
    static char text[1 << 14];
    slurp(out, text, sizeof text);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(text, "[slow: "), "no warning after a 4 s stall: %s", text);
    return fails;
}

static long file_size(const char *path);
// A side output that fails never costs the model: a --log on a disk that
// fills (RLIMIT_FSIZE) is reported, dropped, and the run still trains,
// saves its checkpoint and writes its JSON, then exits 1 (before: it ended
// at the failing step with no checkpoint). A log whose last line was cut
// off gets the next run's first line on a line of its own.
static int test_side_outputs_never_cost_the_model(void) {
    int fails = 0;
    ensure_tmpdir();
    static char big[200000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\n';
    write_file(tmp_path("full.log"), big, sizeof big);
    remove(tmp_path("full.ck"));
    remove(tmp_path("full.json"));
    child_fsize = (long)sizeof big + 100;  // the log's first line fits, its progress lines do not
    int s = run_train(SMALL " --steps 30 --log-every 1 --log {T}/full.log --save {T}/full.ck --json {T}/full.json");
    child_fsize = 0;
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(err_buf, "goes on without its log"),
           "a --log past the disk's room: exit %d (%s)", WEXITSTATUS(s), err_buf);
    EXPECT(file_size(tmp_path("full.ck")) > 0 && file_size(tmp_path("full.json")) > 0,
           "the checkpoint (%ld bytes) and the JSON (%ld bytes) should be written", file_size(tmp_path("full.ck")),
           file_size(tmp_path("full.json")));
    s = run_train("--quiet --threads 2 --load {T}/full.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "the checkpoint saved beside a failed log does not load: %s", err_buf);
    write_file(tmp_path("torn.log"), "{\"step\": 1, \"lo", 15);
    s = run_train(SMALL " --steps 2 --log {T}/torn.log");
    static char log[1 << 14];
    slurp(tmp_path("torn.log"), log, sizeof log);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && !strncmp(log, "{\"step\": 1, \"lo\n{\"start\"", 24),
           "a torn last line: the appended log starts '%.40s'", log);
    return fails;
}

// PELAB_FONT is not trusted (stb_truetype is not safe on a damaged font): a
// file of random bytes, a truncated DejaVu, a collection whose font offset
// points past the end, a file too short for a header, a FIFO and a folder
// each cost a warning and the pixel font, never the picture, the JSON or the
// exit status (before: SIGSEGV after training, or a hang on the FIFO).
static int test_untrusted_font_never_costs_the_picture(void) {
    int fails = 0;
    static const struct {
        const char *name;
        const char *bytes;
        size_t n;
    } fonts[] = {
        {"ttc.ttf", "ttcf\0\1\0\0\0\0\0\1\x7f\xff\xff\xff", 16},
        {"ttc-self.ttf", "ttcf\0\1\0\0\0\0\0\1\0\0\0\x10", 16},
        {"short.ttf", "\0\1\0", 3},
    };
    char path[4096];
    for (size_t i = 0; i < sizeof fonts / sizeof fonts[0]; i++) {
        FILE *f = fopen(tmp_path(fonts[i].name), "wb");
        fwrite(fonts[i].bytes, 1, fonts[i].n, f);
        fclose(f);
    }
    unsigned char noise[5000];
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < sizeof noise; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, noise[i] = (unsigned char)x;
    FILE *f = fopen(tmp_path("noise.ttf"), "wb");
    fwrite(noise, 1, sizeof noise, f);
    fclose(f);
    const char *names[16] = {"ttc.ttf", "ttc-self.ttf", "short.ttf", "noise.ttf", "fifo", "folder"};
    int n = 6;
    remove(tmp_path("fifo"));
    mkfifo(tmp_path("fifo"), 0600);
    mkdir(tmp_path("folder"), 0700);
    static char dejavu[1 << 16];
    FILE *d = fopen("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "rb");
    if (d) {  // the first 64 KiB of a real font: its tables point past the end
        size_t got = fread(dejavu, 1, sizeof dejavu, d);
        fclose(d);
        f = fopen(tmp_path("truncated.ttf"), "wb");
        fwrite(dejavu, 1, got, f);
        fclose(f);
        names[n++] = "truncated.ttf";
    }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s", tmp_path(names[i]));
        setenv("PELAB_FONT", path, 1);
        remove(tmp_path("font.png"));
        remove(tmp_path("font.json"));
        int s = run_train(SMALL " --steps 2 --attn-png {T}/font.png --json {T}/font.json");
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && file_size(tmp_path("font.png")) > 0 &&
                   file_size(tmp_path("font.json")) > 0 && strstr(err_buf, "built-in pixel font"),
               "PELAB_FONT=%s: status %d, picture %ld bytes, JSON %ld bytes: %s", names[i], s,
               file_size(tmp_path("font.png")), file_size(tmp_path("font.json")), err_buf);
    }
    unsetenv("PELAB_FONT");
    return fails;
}

// A file pelab replaces keeps its mode: a checkpoint or JSON the user made
// private (0600) stays private, one made group-readable stays so.
static int test_replaced_files_keep_their_mode(void) {
    int fails = 0;
    ensure_tmpdir();
    const char *outs[][2] = {{"m.ck", "--save"}, {"m.json", "--json"}};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            mode_t want = k ? 0640 : 0600;
            write_file(tmp_path(outs[i][0]), "x", 1);
            chmod(tmp_path(outs[i][0]), want);
            char a[256];
            snprintf(a, sizeof a, SMALL " --steps 2 %s {T}/%s", outs[i][1], outs[i][0]);
            int s = run_train(a);
            struct stat st;
            EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && stat(tmp_path(outs[i][0]), &st) == 0 &&
                       (st.st_mode & 07777) == want && st.st_size > 1,
                   "%s over a %03o file: mode %03o, exit %d: %s", outs[i][1], (unsigned)want,
                   (unsigned)(st.st_mode & 07777), WEXITSTATUS(s), err_buf);
        }
    // as root: a file of another user's keeps its owner and group, and a
    // setuid or setgid bit is never carried onto the new contents (before: the
    // new file was root's, with the old setuid mode)
    if (getuid() == 0) {
        write_file(tmp_path("own.json"), "x", 1);
        EXPECT(chown(tmp_path("own.json"), 65534, 65534) == 0 && chmod(tmp_path("own.json"), 06755) == 0,
               "cannot give own.json to nobody with mode 6755");
        int s = run_train(SMALL " --steps 2 --json {T}/own.json");
        struct stat st;
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && stat(tmp_path("own.json"), &st) == 0 && st.st_uid == 65534 &&
                   st.st_gid == 65534 && (st.st_mode & 07777) == 0755,
               "--json over nobody's 6755 file: owner %d:%d, mode %04o (want 65534:65534, 0755), exit %d: %s",
               (int)st.st_uid, (int)st.st_gid, (unsigned)(st.st_mode & 07777), WEXITSTATUS(s), err_buf);
    }
    return fails;
}

// --until-solved (docs/experiments.md): on cats training stops at the first
// --eval-every point where order_acc reaches the threshold, and --json says
// at which step; a run that reaches --steps first is recorded as censored.
// Refused where there is no order probe or no curve to check it on.
static int test_until_solved(void) {
    int fails = 0;
    static char json[1 << 14];
    // the default model passes order_acc 0.2 within a few hundred steps; the step itself is the BLAS's to decide
    int s = run_train("--quiet --threads 2 --steps 1000 --eval-every 50 --until-solved 0.2 --json {T}/us.json");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "exit %d: %s", WEXITSTATUS(s), err_buf);
    slurp(tmp_path("us.json"), json, sizeof json);
    long trained = -1, solved = -2, cap = -1;
    double acc = -1;
    const char *t = strstr(json, "\"train\": {\"steps\": "), *o = strstr(json, "\"order\": {\"acc\": ");
    if (t) sscanf(t, "\"train\": {\"steps\": %ld", &trained);
    if (o) sscanf(o, "\"order\": {\"acc\": %lf, \"n\": %*d, \"until_solved\": %*f, \"solved_step\": %ld, \"cap\": %ld", &acc,
                  &solved, &cap);
    EXPECT(solved == trained && solved > 0 && solved < 1000 && solved % 50 == 0 && cap == 1000 && acc >= 0.2,
           "solved_step %ld, train.steps %ld, cap %ld, order acc %g: %.700s", solved, trained, cap, acc, o ? o : json);
    EXPECT(strstr(out_buf, "training stops (--until-solved)"), "no solve line: %s", out_buf);
    s = run_train(SMALL " --steps 10 --eval-every 5 --until-solved 1 --json {T}/us.json");
    slurp(tmp_path("us.json"), json, sizeof json);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(json, "\"solved_step\": null, \"cap\": 10"),
           "a run that never reaches 1.0 is not censored at 10: %.600s", json);
    EXPECT(strstr(json, "\"train\": {\"steps\": 10,"), "train.steps is not 10: %.300s", json);
    s = run_train(SMALL " --steps 10 --until-solved 0 --json {T}/us.json");  // off: no curve and no solve fields
    slurp(tmp_path("us.json"), json, sizeof json);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && !strstr(json, "solved_step") && strstr(json, "\"steps\": 10,"),
           "--until-solved 0 still records a solve: %.600s", json);
    const char *refused[][2] = {{SMALL " --steps 10 --eval-every 0", "--eval-every"},
                                {"--d-model 16 --layers 1 --heads 2 --quiet --steps 10 --data task:copy --until-solved 0.9 "
                                 "--eval-every 0", "task_acc"},
                                {SMALL " --steps 10 --data {T}/us-text.txt --until-solved 0.9", "--data cats"}};
    static char text[4000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = "hello world, a text corpus "[i % 27];
    write_file(tmp_path("us-text.txt"), text, sizeof text);
    // --until-solved 0 (train every step, the lab's fixed budgets) is fine on any data
    s = run_train(SMALL " --steps 2 --data {T}/us-text.txt --ctx 8 --until-solved 0");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--until-solved 0 on text refused: %s", err_buf);
    for (int i = 0; i < 3; i++) {
        s = run_train(refused[i][0]);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, refused[i][1]), "'%s' not refused: %s",
               refused[i][0], err_buf);
    }
    // on a task: off unless given; given, it stops where task_acc reaches it and records the step
#define SMALL_TASK "--d-model 16 --layers 1 --heads 2 --batch 4 --quiet --threads 2"  // --ctx: the task's
    // parity: once the model ends its answers, a guessed bit is right half the time
    s = run_train(SMALL_TASK " --data task:parity --steps 400 --until-solved 0.4 --eval-every 20 --json {T}/ts.json");
    slurp(tmp_path("ts.json"), json, sizeof json);
    long tstep = 0, tcap = 0;
    const char *ts = strstr(json, "\"task_solve\"");
    if (ts) sscanf(ts, "\"task_solve\": {\"until_solved\": %*f, \"solved_step\": %ld, \"cap\": %ld", &tstep, &tcap);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && tstep > 0 && tstep % 20 == 0 && tstep < 400 && tcap == 400 &&
           strstr(out_buf, "task_acc") && strstr(json, "\"train\": {\"steps\": "),
           "a task run did not stop where task_acc reached 0.4 (step %ld, cap %ld): %.400s", tstep, tcap, json);
    s = run_train(SMALL_TASK " --data task:copy --steps 10 --json {T}/ts.json");
    slurp(tmp_path("ts.json"), json, sizeof json);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && !strstr(json, "task_solve"), "a task run solves by default: %.300s", json);
    return fails;
}

// --load of a task checkpoint evaluates at the sizes it trained on (from
// the checkpoint; --task-len is refused with --load), and its default test
// sizes follow from them, not from the default 1:16.
static int test_load_task_keeps_training_sizes(void) {
    int fails = 0;
    int s = run_train("--d-model 16 --layers 1 --heads 2 --quiet --threads 2 --data task:copy --task-len 2:6 --steps 5 "
                      "--task-eval 20 --save {T}/c26.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "training: %s", err_buf);
    s = run_train("--load {T}/c26.ck --data task:copy --threads 2 --quiet --task-eval 20");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "task=copy len=2-6 ") &&
           strstr(out_buf, "task=copy len=7-12 ") && strstr(out_buf, "task=copy len=13-24 "),
           "--load evaluated at other sizes: %s%s", out_buf, err_buf);
    return fails;
}

// --init: fine-tuning from a checkpoint's weights. With --steps 0 it is the
// same model as --load; a fine-tuned model keeps its RoPE extension (--load
// reproduces the run's own evaluation); what cannot change is refused.
static int test_init_fine_tunes(void) {
    int fails = 0;
    int s = run_train(SMALL " --steps 5 --save {T}/base.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "base run: %s", err_buf);
    s = run_train("--quiet --threads 2 --load {T}/base.ck --eval-ctx 16");
    char want[256] = "", got[256] = "";
    const char *l = strstr(out_buf, "eval ctx=16");
    if (l) sscanf(l, "%255[^\n]", want);
    s = run_train("--quiet --threads 2 --init {T}/base.ck --steps 0 --eval-ctx 16 --seed 1");
    l = strstr(out_buf, "eval ctx=16");
    if (l) sscanf(l, "%255[^\n]", got);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && want[0] && !strcmp(want, got),
           "--init --steps 0 gives '%s', --load gives '%s' (%s)", got, want, err_buf);
    s = run_train("--quiet --threads 2 --init {T}/base.ck --ctx 32 --steps 4 --rope-scale yarn --save {T}/ft.ck "
                  "--eval-ctx 32,64");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "fine-tuning run: %s", err_buf);
    char ran[512] = "";
    l = strstr(out_buf, "eval ctx=32");
    if (l) sscanf(l, "%511[^o]", ran);  // both eval lines, up to order_acc
    s = run_train("--quiet --threads 2 --load {T}/ft.ck --eval-ctx 32,64");
    l = strstr(out_buf, "eval ctx=32");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && ran[0] && l && !strncmp(l, ran, strlen(ran)),
           "--load of the fine-tuned model: '%.200s', the run: '%s'", l ? l : out_buf, ran);
    static const bad_case refused[] = {
        {"--init {T}/base.ck --pe alibi", 2, "--pe cannot be given with --init"},
        {"--init {T}/base.ck --d-model 32", 2, "--d-model cannot be given with --init"},
        {"--init {T}/base.ck --rope-base 500", 2, "come from the checkpoint"},
        {"--init {T}/base.ck --resume {T}/base.ck", 2, "--init cannot be combined"},
        {"--init {T}/nothing.ck", 1, "nothing.ck"},
        {"--init {T}/base.ck --data cats --ctx 8", 2, "--ctx"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char a[256];
        snprintf(a, sizeof a, "--quiet --threads 2 --steps 2 %s", refused[i].args);
        s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == refused[i].code && strstr(err_buf, refused[i].names),
               "'%s': exit %d (expected %d), stderr '%s'", refused[i].args, WEXITSTATUS(s), refused[i].code, err_buf);
    }
    s = run_train(SMALL " --pe learned --steps 2 --save {T}/learned.ck");
    s = run_train("--quiet --init {T}/learned.ck --ctx 32 --steps 2");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "pe_learned"),
           "learned positions at a new ctx: exit %d, '%s'", WEXITSTATUS(s), err_buf);
    return fails;
}

// The first "eval ctx=" line of out_buf into buf.
static void first_eval_line(char *buf, size_t cap) {
    const char *l = strstr(out_buf, "eval ctx=");
    buf[0] = '\0';
    if (l) snprintf(buf, cap, "%.*s", (int)strcspn(l, "\n"), l);
}

// --rand-pos: MAX = ctx (the identity is the only subset) is the plain run;
// a run stopped and resumed draws the same positions as one that was not;
// what cannot work is refused.
static int test_rand_pos(void) {
    int fails = 0;
    char plain[256], same[256], whole[256], resumed[256];
    int s = run_train(SMALL " --steps 6 --pe learned+alibi");
    first_eval_line(plain, sizeof plain);
    s = run_train(SMALL " --steps 6 --pe learned+alibi --rand-pos 16");
    first_eval_line(same, sizeof same);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && plain[0] && !strcmp(plain, same),
           "--rand-pos 16 at ctx 16: '%s', plain: '%s' (%s)", same, plain, err_buf);
    s = run_train(SMALL " --steps 6 --rand-pos 64 --eval-ctx 16");
    first_eval_line(whole, sizeof whole);
    s = run_train(SMALL " --steps 6 --rand-pos 64 --stop-at 3 --save {T}/rp.ck");
    s = run_train("--quiet --threads 2 --resume {T}/rp.ck --eval-ctx 16");
    first_eval_line(resumed, sizeof resumed);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && whole[0] && !strcmp(whole, resumed),
           "--rand-pos resumed: '%s', uninterrupted: '%s' (%s)", resumed, whole, err_buf);
    EXPECT(strcmp(whole, plain) != 0, "--rand-pos 64 should change the run ('%s')", whole);
    s = run_train("--quiet --threads 2 --load {T}/rp.ck --eval-ctx 16,128");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(err_buf, "ctx=128") && strstr(err_buf, "larger --rand-pos") &&
               !strstr(err_buf, "training ctx") && !strstr(err_buf, "relative or sinusoidal"),
           "evaluating past --rand-pos 64 should be refused naming --rand-pos, not the ctx: %s", err_buf);
    // a task run resumes with the sizes it was trained with (the checkpoint
    // keeps --task-len), and one resumed with other sizes is told them
    s = run_train(SMALL " --data task:copy --task-len 2:6 --steps 4 --stop-at 2 --save {T}/tk.ck");
    s = run_train("--quiet --threads 2 --resume {T}/tk.ck --task-len 1:16 --save {T}/tk.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "trained with --task-len 2:6"),
           "resuming a task run with other sizes: exit %d: %s", WEXITSTATUS(s), err_buf);
    s = run_train("--quiet --threads 2 --resume {T}/tk.ck --save {T}/tk.ck --json {T}/tk.json");
    static char tk[1 << 14];
    slurp(tmp_path("tk.json"), tk, sizeof tk);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(tk, "\"task_len\": \"2:6\""),
           "resuming a task run without --task-len keeps its sizes: exit %d: %s / %.300s", WEXITSTATUS(s), err_buf, tk);
    static const bad_case refused[] = {
        {"--rand-pos 8", 2, "--rand-pos 8"},
        {"--pe cope --rand-pos 64", 2, "not supported by --pe cope"},
        {"--pe none --rand-pos 64", 2, "reads no positions"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char a[256];
        snprintf(a, sizeof a, SMALL " --steps 2 %s", refused[i].args);
        s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == refused[i].code && strstr(err_buf, refused[i].names),
               "'%s': exit %d (expected %d), stderr '%s'", refused[i].args, WEXITSTATUS(s), refused[i].code, err_buf);
    }
    s = run_train("--quiet --threads 2 --load {T}/rp.ck --rand-pos 64");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--rand-pos cannot be given with --load"),
           "--rand-pos with --load: exit %d, '%s'", WEXITSTATUS(s), err_buf);
    return fails;
}

// A task end to end: a tiny model learns copy at its training sizes (the
// loss falls, the accuracy line and the JSON agree), and a learned table
// refuses the longer sizes with a message while the others are scored.
static int test_task_copy_learned(void) {
    int fails = 0;
    const char *base = "--data task:copy --task-len 1:5 --d-model 32 --layers 2 --heads 2 --batch 16 --warmup 50 "
                       "--quiet --threads 2 --task-eval 200";
    char a[512], json[1 << 14];
    snprintf(a, sizeof a, "%s --steps 800 --json {T}/task.json", base);
    int s = run_train(a);
    double acc = -1;
    const char *l = strstr(out_buf, "task=copy len=1-5 acc=");
    if (l) sscanf(l, "task=copy len=1-5 acc=%lf", &acc);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && acc >= 0.95, "copy at sizes 1-5 after 800 steps: acc %.3f (%s)", acc, err_buf);
    EXPECT(strstr(out_buf, "task=copy len=6-10 acc=") && strstr(out_buf, "task=copy len=11-20 acc="), "test ranges: %s", out_buf);
    slurp(tmp_path("task.json"), json, sizeof json);
    double loss = 99;
    const char *fl = strstr(json, "\"final_loss\": ");
    if (fl) sscanf(fl, "\"final_loss\": %lf", &loss);
    EXPECT(loss < 0.3, "final training loss %.3f (log 20 = 3.0 at the start)", loss);
    EXPECT(strstr(json, "\"task\": [{\"len\": \"1-5\", \"lo\": 1, \"hi\": 5, \"train\": true, \"acc\": "),
           "--json lacks the task results: %.400s", json);
    snprintf(a, sizeof a, "%s --steps 5 --warmup 5 --pe learned --json {T}/task.json", base);
    s = run_train(a);
    slurp(tmp_path("task.json"), json, sizeof json);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "task=copy len=6-10 refused") &&
           strstr(err_buf, "no positions past 12") && strstr(json, "\"acc\": null, \"error\": "),
           "learned at sizes past its table: exit %d, out '%s', err '%s'", WEXITSTATUS(s), out_buf, err_buf);
    return fails;
}

// A selective-copy checkpoint read at a sparser density than it was trained
// at (--load --task-ignore 0.67: twice as many noise tokens as digits): its
// training-size instances outgrow the checkpoint's ctx, so the loss at that
// ctx is refused and the accuracies still run (RoPE), or are refused too
// (the learned table has no positions past its ctx); a --eval-ctx the user
// gives that cannot run is still an error.
static int test_task_density_on_load(void) {
    int fails = 0;
    const char *base = "--data task:selective-copy --task-len 1:4 --d-model 32 --layers 2 --heads 2 --quiet --threads 1 "
                       "--steps 3 --warmup 2";
    char a[512];
    const char *pes[] = {"rope", "learned"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s --pe %s --save {T}/sel.ck", base, pes[i]);
        int s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "training selective copy (%s): %s", pes[i], err_buf);
        s = run_train("--load {T}/sel.ck --data task:selective-copy --task-ignore 0.67 --task-eval 20 --threads 1");
        int code = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
        EXPECT(strstr(out_buf, "eval ctx=14 refused") && strstr(err_buf, "shorter than the longest training instance (18"),
               "%s at 0.67: the loss at ctx 14 not refused: out '%s' err '%s'", pes[i], out_buf, err_buf);
        if (i == 0)
            EXPECT(code == 0 && strstr(out_buf, "task=selective-copy len=1-4 acc="), "rope at 0.67: exit %d, out '%s' err '%s'",
                   code, out_buf, err_buf);
        else
            EXPECT(code == 1 && strstr(out_buf, "task=selective-copy len=1-4 refused") && strstr(err_buf, "no positions past 14"),
                   "learned at 0.67: exit %d, out '%s' err '%s'", code, out_buf, err_buf);
    }
    int s = run_train("--load {T}/sel.ck --data task:selective-copy --task-ignore 0.67 --task-eval 20 --threads 1 --eval-ctx 14");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "no length of --eval-ctx can be evaluated"),
           "--eval-ctx 14 given at 0.67: exit %d, err '%s'", WIFEXITED(s) ? WEXITSTATUS(s) : -1, err_buf);
    return fails;
}

// The thread count does not change a single bit: the matrix products split
// their rows into fixed blocks, attention runs a head per thread, and every
// sum has one order (docs/performance.md). Checkpoints after 12 steps at one
// and at two threads are byte for byte the same, for every kind of encoding.
// One and two threads give the same checkpoint, with the matrix engine
// `gemm` (an engine not built in: skipped). The models are small, so the runs
// are told to run every region in parallel however small (PELAB_PARALLEL_MIN=0;
// by default regions this small run on one thread whatever --threads says).
static int threads_same_bits(const char *gemm) {
    int fails = 0;
    setenv("PELAB_PARALLEL_MIN", "0", 1);
    char probe[128];
    snprintf(probe, sizeof probe, "--steps 1 --quiet --gemm %s", gemm);
    int s0 = run_train(probe);
    if (!(WIFEXITED(s0) && WEXITSTATUS(s0) == 0) && (strstr(err_buf, "not built") || strstr(err_buf, "no bf16"))) {
        printf("    --gemm %s: %s", gemm, err_buf);
        unsetenv("PELAB_PARALLEL_MIN");
        return TEST_SKIPPED;
    }
    const char *specs[] = {"rope", "learned+alibi", "sinusoidal+xl", "shaw", "t5", "cope", "fire", "kerple"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        for (int bidir = 0; bidir < 2; bidir++) {
            if (bidir && (!strcmp(specs[i], "cope") || !strcmp(specs[i], "fire"))) continue;
            char a[256], path[2][64];
            for (int t = 1; t <= 2; t++) {
                snprintf(path[t - 1], sizeof path[0], "{T}/threads%d.ck", t);
                snprintf(a, sizeof a, "--d-model 16 --layers 2 --heads 2 --ctx 40 --batch 6 --quiet --steps 12 --pe %s "
                         "--attn %s --threads %d --gemm %s --save %s", specs[i], bidir ? "bidir" : "causal", t, gemm, path[t - 1]);
                int s = run_train(a);
                EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "%s: %s", a, err_buf);
            }
            EXPECT(test_ckpt_same_run(tmp_path("threads1.ck"), tmp_path("threads2.ck")),
                   "--pe %s %s --gemm %s: the checkpoints of one and two threads differ", specs[i],
                   bidir ? "bidir" : "causal", gemm);
        }
    unsetenv("PELAB_PARALLEL_MIN");
    return fails;
}

static int test_threads_same_bits(void) { return threads_same_bits("openblas"); }
static int test_threads_same_bits_onednn(void) { return threads_same_bits("onednn"); }

// bf16 mixed precision: the same bits at one and two threads; a checkpoint
// of the same format (fp32 weights), which an fp32 run loads; refused
// without the engine that computes it.
static int test_bf16(void) {
    int fails = 0;
    int f = threads_same_bits("onednn --precision bf16");
    if (f == TEST_SKIPPED) return f;
    fails += f;
    int s = run_train("--load {T}/threads1.ck --gemm openblas --eval-tokens 256 --quiet");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "eval ctx=40"),
           "a bf16 run's checkpoint does not load in fp32: %s", err_buf);
    s = run_train("--steps 1 --quiet --gemm openblas --precision bf16");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "needs the oneDNN engine"),
           "bf16 under OpenBLAS: exit %d, %s", WEXITSTATUS(s), err_buf);
    s = run_train("--steps 1 --quiet --gemm onednn --precision bf16 --json {T}/bf16.json");
    static char j[1 << 16];
    slurp(tmp_path("bf16.json"), j, sizeof j);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(j, "\"precision\": \"bf16\""),
           "--json does not record the precision: %s", err_buf);
    // A resumed bf16 run continues in bf16 (it once went on in fp32: the
    // checkpoint's precision was read after the products' was set).
    s = run_train(SMALL " --steps 12 --gemm onednn --precision bf16 --save {T}/bf16full.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "bf16 full run: %s", err_buf);
    s = run_train(SMALL " --steps 12 --stop-at 5 --gemm onednn --precision bf16 --save {T}/bf16part.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "bf16 stopped run: %s", err_buf);
    s = run_train("--quiet --gemm onednn --resume {T}/bf16part.ck --save {T}/bf16part.ck --json {T}/bf16resumed.json");
    slurp(tmp_path("bf16resumed.json"), j, sizeof j);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && !strstr(j, "\"precision\": \"fp32\""),
           "a resumed bf16 run records fp32: %s", err_buf);
    EXPECT(test_ckpt_same_run(tmp_path("bf16full.ck"), tmp_path("bf16part.ck")),
           "a resumed bf16 run differs from the uninterrupted one");
    s = run_train("--quiet --gemm openblas --resume {T}/bf16part.ck --save {T}/bf16part.ck --steps 14");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "the run's products are bf16"),
           "a bf16 run resumed under OpenBLAS: exit %d, %s", WEXITSTATUS(s), err_buf);
    // --precision auto: under oneDNN bf16 where the CPU has AVX512_BF16
    // (oneDNN may emulate it on other AVX-512 CPUs: there fp32), fp32 under
    // OpenBLAS; --json records the precision used, never "auto".
    __builtin_cpu_init();
    const char *want = __builtin_cpu_supports("avx512bf16") ? "\"precision\": \"bf16\"" : "\"precision\": \"fp32\"";
    s = run_train("--steps 1 --quiet --gemm onednn --precision auto --json {T}/auto.json");
    slurp(tmp_path("auto.json"), j, sizeof j);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(j, want) && !strstr(j, "\"auto\""),
           "--precision auto under oneDNN: want %s; %s %s", want, err_buf, j);
    s = run_train("--steps 1 --quiet --gemm openblas --precision auto --json {T}/auto32.json");
    slurp(tmp_path("auto32.json"), j, sizeof j);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(j, "\"precision\": \"fp32\"") && !strstr(j, "\"bf16\""),
           "--precision auto under OpenBLAS: %s %s", err_buf, j);
    return fails;
}

// A text file: byte-level tokens, causal and bidirectional.
static int test_text_file(void) {
    int fails = 0;
    ensure_tmpdir();
    char text[6000];
    for (int i = 0; i < 6000; i++) text[i] = "the quick brown fox jumps over the lazy dog\n"[i % 44];
    write_file(tmp_path("fox.txt"), text, sizeof text);
    int s = run_train(SMALL " --steps 60 --lr 1e-2 --data {T}/fox.txt");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "text causal: %s", err_buf);
    double loss = 99;
    const char *l = strstr(out_buf, "eval ctx=16 loss=");
    if (l) sscanf(l, "eval ctx=16 loss=%lf", &loss);
    EXPECT(loss < 2.0, "a periodic text should be learned quickly; loss %g", loss);
    s = run_train(SMALL " --steps 5 --attn bidir --data {T}/fox.txt");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "eval ctx=16"), "text bidir: %s", err_buf);
    return fails;
}

// The file's bytes from offset `from` to its end into buf (at most cap):
// their count, or -1.
static long file_tail(const char *path, long from, unsigned char *buf, long cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = fseek(f, from, SEEK_SET) == 0 ? (long)fread(buf, 1, (size_t)cap, f) : -1;
    fclose(f);
    return n;
}

// A checkpoint's weights and moments, with its closing CRC (the settings
// text, which holds the curve and the seconds, left out): the run's numbers.
static long ckpt_numbers(const char *path, unsigned char *buf, long cap) {
    unsigned char head[28];
    if (file_tail(path, 0, head, sizeof head) != sizeof head) return -1;
    long settings = head[24] | head[25] << 8 | head[26] << 16 | (long)head[27] << 24;
    long n = file_tail(path, 28 + settings, buf, cap);
    return n > 4 ? n - 4 : -1;
}

// Issue 59: text gets a validation loss by default (about 20 points a run),
// which changes none of the training's bits; a validation loss that rises
// at 3 points in a row is said once, and the best point's model is kept
// beside the last (--keep both), or alone (best), or not (last).
static int test_validation_by_default(void) {
    int fails = 0;
    ensure_tmpdir();
    static char text[30000];  // the noise below
    write_fox(30000);
    // 512 tokens a step: a point at most every 32 steps (16384 training tokens), so here every 640/20
    int s = run_train(LOUD " --ctx 32 --batch 16 --steps 640 --data {T}/fox.txt --save {T}/val.ck --json {T}/val.json");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "default validation: %s", err_buf);
    EXPECT(strstr(out_buf, "step 32/640 ") && strstr(out_buf, " val "), "no validation loss on the step lines:\n%s", out_buf);
    slurp(tmp_path("val.json"), out_buf, sizeof out_buf);
    EXPECT(strstr(out_buf, "\"eval_every\": 32,") && strstr(out_buf, "\"curve\""), "--json has no curve every 32 steps");
    s = run_train(SMALL " --ctx 32 --batch 16 --steps 640 --data {T}/fox.txt --save {T}/none.ck --eval-every 0");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--eval-every 0: %s", err_buf);
    static unsigned char a[1 << 20], b[1 << 20];
    long na = ckpt_numbers(tmp_path("val.ck"), a, sizeof a), nb = ckpt_numbers(tmp_path("none.ck"), b, sizeof b);
    EXPECT(na > 0 && na == nb && memcmp(a, b, (size_t)na) == 0,
           "the validation points changed the trained weights (%ld and %ld bytes)", na, nb);
    EXPECT(access(tmp_path("val.best.ck"), F_OK) == 0 && access(tmp_path("none.best.ck"), F_OK) != 0,
           "the best model is kept only where there is a validation loss");

    // noise: the training split is memorised, the held-out one cannot be
    unsigned x = 12345;
    for (int i = 0; i < 1000; i++) text[i] = (char)('a' + ((x = x * 1103515245u + 12345u) >> 16) % 26);
    write_file(tmp_path("noise.txt"), text, 1000);
    const char *keep[] = {"both", "last", "best"};
    for (int k = 0; k < 3; k++) {
        char args[512];
        snprintf(args, sizeof args, "--d-model 32 --layers 1 --heads 2 --ctx 16 --batch 8 --threads 2 --steps 400 "
                 "--lr 1e-2 --eval-every 20 --data {T}/noise.txt --save {T}/%s.ck --json {T}/%s.json --keep %s",
                 keep[k], keep[k], keep[k]);
        s = run_train(args);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--keep %s: %s", keep[k], err_buf);
        EXPECT(strstr(out_buf, "overfitting since step "), "memorised noise is not called overfitting:\n%s", out_buf);
        char last[64], best[64];
        snprintf(last, sizeof last, "%s.ck", keep[k]), snprintf(best, sizeof best, "%s.best.ck", keep[k]);
        EXPECT((access(tmp_path(last), F_OK) == 0) == (k != 2), "--keep %s: the last model %s", keep[k], k != 2 ? "is missing" : "is kept");
        EXPECT((access(tmp_path(best), F_OK) == 0) == (k != 1), "--keep %s: the best model %s", keep[k], k != 1 ? "is missing" : "is kept");
    }
    slurp(tmp_path("both.json"), out_buf, sizeof out_buf);
    long best_step = 0, overfit = 0;
    const char *p = strstr(out_buf, "\"best_step\": "), *q = strstr(out_buf, "\"overfit_step\": ");
    if (p) best_step = strtol(p + 13, NULL, 10);
    if (q) overfit = strtol(q + 16, NULL, 10);
    EXPECT(best_step > 0 && best_step < 400 && overfit == best_step, "--json: best_step %ld, overfit_step %ld", best_step, overfit);
    snprintf(text, sizeof text, "--quiet --threads 2 --load {T}/both.best.ck --json {T}/best_load.json");
    s = run_train(text);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "the best model does not load: %s", err_buf);
    return fails;
}

// The folder a run printed ("run folder: DIR"), into dir; 1 when there is one.
static int printed_folder(char *dir, size_t cap) {
    const char *p = strstr(out_buf, "run folder: ");
    if (!p) return 0;
    p += 12;
    size_t n = strcspn(p, "\n");
    snprintf(dir, cap, "%.*s", (int)n, p);
    return 1;
}

static int folder_has(const char *dir, const char *name) {
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return file_size(path) > 0;
}

// Issue 59: every run keeps its record — a folder (PELAB_RUNS, here the
// temp dir's runs/, or --out) with the checkpoint, the best one, run.json,
// log.jsonl and curve.png, its path printed; --out none keeps nothing; a
// resumed run continues in its folder; a refused run leaves no folder; a
// checkpoint of another run is not replaced without --overwrite.
static int test_run_folder(void) {
    int fails = 0;
    ensure_tmpdir();
    static char dir[512], env[300];
    write_fox(20000);
    snprintf(env, sizeof env, "PELAB_RUNS=%s/runs", tmpdir);
    child_env = env;
    int s = run_train("--d-model 16 --layers 1 --heads 2 --ctx 32 --batch 16 --threads 2 --steps 64 --data {T}/fox.txt");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "a plain run: %s", err_buf);
    EXPECT(printed_folder(dir, sizeof dir) && strstr(dir, "/runs/") && strstr(dir, "-rope"), "no run folder printed:\n%s", out_buf);
    const char *files[] = {"model.ck", "model.best.ck", "run.json", "log.jsonl", "curve.png"};
    for (int k = 0; k < 5; k++) EXPECT(folder_has(dir, files[k]), "the run folder %s lacks %s", dir, files[k]);
    // a second run in the same second gets a folder of its own
    char first[512];
    snprintf(first, sizeof first, "%s", dir);
    s = run_train("--d-model 16 --layers 1 --heads 2 --ctx 32 --batch 16 --threads 2 --steps 2 --data {T}/fox.txt --quiet");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && printed_folder(dir, sizeof dir) && strcmp(dir, first) != 0,
           "two runs share the folder %s", dir);
    // a run from the record's checkpoint continues in its folder
    char args[1024];
    snprintf(args, sizeof args, "--threads 2 --quiet --resume %s/model.ck --steps 96", first);
    s = run_train(args);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && printed_folder(dir, sizeof dir) && !strcmp(dir, first),
           "the resumed run went to '%s', not its folder %s: %s", dir, first, err_buf);
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out {T}/named");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && folder_has(tmp_path("named"), "model.ck") &&
           folder_has(tmp_path("named"), "run.json"), "--out {T}/named: %s", err_buf);
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out {T}/named2 --json {T}/mine.json");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && file_size(tmp_path("mine.json")) > 0 &&
           !folder_has(tmp_path("named2"), "run.json") && folder_has(tmp_path("named2"), "model.ck"),
           "an output named goes where it is named, the rest into the folder");
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out none");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && !strstr(out_buf, "run folder"), "--out none made a folder");
    child_env = "PELAB_RUNS=none";  // a script's environment
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && !strstr(out_buf, "run folder"), "PELAB_RUNS=none made a folder");
    child_env = env;
    s = run_train(SMALL " --steps 4 --data {T}/missing.txt --out {T}/refused");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) != 0 && access(tmp_path("refused"), F_OK) != 0,
           "a refused run left its folder behind");
    child_env = NULL;

    // replacing a checkpoint: this run's own (again, or resumed) yes; another's only with --overwrite
    child_keeps_other_runs = 1;
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out none --save {T}/mine.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "first save: %s", err_buf);
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out none --save {T}/mine.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "the same run again may replace its checkpoint: %s", err_buf);
    s = run_train("--threads 2 --quiet --out none --resume {T}/mine.ck --steps 8 --save {T}/mine.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "a resume in place: %s", err_buf);
    long before = file_size(tmp_path("mine.ck"));
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out none --seed 2 --save {T}/mine.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "another run's model") && strstr(err_buf, "--seed") &&
           strstr(err_buf, "--overwrite"), "another run's checkpoint replaced (exit %d): %s", WEXITSTATUS(s), err_buf);
    EXPECT(file_size(tmp_path("mine.ck")) == before, "the refused run touched the checkpoint");
    s = run_train(SMALL " --steps 4 --data cats --out none --save {T}/mine.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "the corpus"), "another corpus: %s", err_buf);
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out none --seed 2 --save {T}/mine.ck --overwrite");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--overwrite: %s", err_buf);
    write_file(tmp_path("notes.ck"), "my notes", 8);
    s = run_train(SMALL " --steps 4 --data {T}/fox.txt --out none --save {T}/notes.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && file_size(tmp_path("notes.ck")) == 8, "a file that is not a checkpoint replaced");
    child_keeps_other_runs = 0;
    return fails;
}

// The text of a JSON file's number after `key` ("\"final_loss\": "), into buf.
static void json_number_text(const char *path, const char *key, char *buf, size_t cap) {
    static char text[1 << 16];
    slurp(path, text, sizeof text);
    const char *p = strstr(text, key);
    snprintf(buf, cap, "%.*s", p ? (int)strcspn(p + strlen(key), ",}") : 0, p ? p + strlen(key) : "");
}

// Issue 59: --config FILE reruns a run from its record (run.json) bit for
// bit — a learning rate with more digits than %g keeps, a derived budget
// (cats' cap and solve point), the encoding's options — with the command
// line over it; "key = value" lines too; a bad file is refused.
static int test_rerun_from_record(void) {
    int fails = 0;
    ensure_tmpdir();
    write_fox(20000);
    const char *firsts[] = {
        "--d-model 16 --layers 1 --heads 2 --ctx 32 --batch 8 --steps 60 --lr 0.0017320508 --pe alibi --seed 5 "
        "--data {T}/fox.txt --eval-ctx 32,64 --quiet --threads 2",
        "--d-model 16 --layers 1 --heads 2 --steps 200 --pe rope --rope-base 500 --quiet --threads 2",  // cats
    };
    for (int k = 0; k < 2; k++) {
        char args[1024];
        snprintf(args, sizeof args, "%s --out none --json {T}/orig%d.json --save {T}/orig%d.ck", firsts[k], k, k);
        int s = run_train(args);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "first run %d: %s", k, err_buf);
        snprintf(args, sizeof args, "--config {T}/orig%d.json --out none --threads 1 --json {T}/re%d.json --save {T}/re%d.ck", k, k, k);
        s = run_train(args);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "rerun %d: %s", k, err_buf);
        char a[64], b[64], na[64], nb[64];
        snprintf(na, sizeof na, "orig%d.json", k), snprintf(nb, sizeof nb, "re%d.json", k);
        json_number_text(tmp_path(na), "\"final_loss\": ", a, sizeof a);
        json_number_text(tmp_path(nb), "\"final_loss\": ", b, sizeof b);
        EXPECT(a[0] && !strcmp(a, b), "run %d: final loss %s, its rerun %s", k, a, b);
        json_number_text(tmp_path(na), "\"steps\": ", a, sizeof a);
        json_number_text(tmp_path(nb), "\"steps\": ", b, sizeof b);
        EXPECT(a[0] && !strcmp(a, b), "run %d: %s steps, its rerun %s", k, a, b);
        static unsigned char x[1 << 20], y[1 << 20];
        snprintf(na, sizeof na, "orig%d.ck", k), snprintf(nb, sizeof nb, "re%d.ck", k);
        long nx = ckpt_numbers(tmp_path(na), x, sizeof x), ny = ckpt_numbers(tmp_path(nb), y, sizeof y);
        EXPECT(nx > 0 && nx == ny && memcmp(x, y, (size_t)nx) == 0, "run %d: the rerun's weights differ", k);
    }
    slurp(tmp_path("re1.json"), out_buf, sizeof out_buf);
    EXPECT(strstr(out_buf, "\"rope_base\": 500"), "the encoding's option was not rerun");
    int s = run_train("--config {T}/orig0.json --out none --seed 6 --steps 2 --json {T}/over.json");
    slurp(tmp_path("over.json"), out_buf, sizeof out_buf);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "\"seed\": 6,") && strstr(out_buf, "\"pe\": \"alibi\""),
           "the command line over --config: %s", err_buf);
    const char *lines = "# a run by hand\npe = sinusoidal\nd_model = 16\n--layers = 1\nheads=2   # two\nsteps = 4\n"
                        "attn-stats = true\nquiet = true\n";
    write_file(tmp_path("by_hand.conf"), lines, strlen(lines));
    s = run_train("--config {T}/by_hand.conf --out none --data {T}/fox.txt --json {T}/hand.json --threads 2");
    slurp(tmp_path("hand.json"), out_buf, sizeof out_buf);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "\"pe\": \"sinusoidal\"") && strstr(out_buf, "\"d_model\": 16,") &&
           strstr(out_buf, "attn_sink"), "key = value lines: %s", err_buf);
    struct {
        const char *text, *says;
    } bad[] = {{"d_modle = 16\n", "line 1: 'd_modle' is not a setting"},
               {"pe rope\n", "line 1 is not 'key = value'"},
               {"steps = many\n", "--steps"},
               {"help = 1\n", "cannot be set from a file"},
               {"{\"config\": {\"pe\": \"rope\", \"steps\": 4", "not JSON"},
               {"{\"config\": {\"pe\": \"rope\", \"steps\": 4}, \"train\": {\"steps\": [1, {\"x\": 2}]}}", NULL}};
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        write_file(tmp_path("bad.conf"), bad[i].text, strlen(bad[i].text));
        s = run_train(SMALL " --config {T}/bad.conf --out none --data {T}/fox.txt");
        if (bad[i].says)
            EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--config") && strstr(err_buf, bad[i].says),
                   "bad --config '%s': exit %d: %s", bad[i].text, WEXITSTATUS(s), err_buf);
        else EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "a record whose other members nest: %s", err_buf);
    }
    s = run_train(SMALL " --config {T}/missing.json --out none");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "missing.json"), "a missing --config: %s", err_buf);
    return fails;
}

// Issue 59: lab/compare-pe compares encodings on a text in one command —
// a table of per-length perplexity over seeds with intervals, ranked, its
// runs kept and not trained again; a missing file is refused. (Python's
// standard library only.)
static int test_compare_pe_runs(void) {
    int fails = 0;
    ensure_tmpdir();
    static char cmd[1024];
    write_fox(20000);
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "lab/compare-pe %s/fox.txt --pe rope,learned --seeds 2 --steps 20 --ctx 16 --out %s/cmp -j 2 "
                 "-- --d-model 16 --layers 1 --heads 2 --batch 4 > %s/cmp.out 2>&1", tmpdir, tmpdir, tmpdir);
        int s = system(cmd);
        slurp(tmp_path("cmp.out"), out_buf, sizeof out_buf);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "compare-pe exited %d:\n%s", WEXITSTATUS(s), out_buf);
        EXPECT(strstr(out_buf, "ppl at 16") && strstr(out_buf, "ppl at 256") && strstr(out_buf, " ± ") &&
               strstr(out_buf, "\n1     ") && strstr(out_buf, " rope ") && strstr(out_buf, " learned "),
               "no ranked table with intervals:\n%s", out_buf);
        EXPECT(k == 0 || strstr(out_buf, "4 already there, 0 to train"), "the second time trained again:\n%s", out_buf);
    }
    EXPECT(file_size(tmp_path("cmp/summary.md")) > 0 && file_size(tmp_path("cmp/rope/seed2/run.json")) > 0,
           "the table and the runs' folders are not kept");
    snprintf(cmd, sizeof cmd, "lab/compare-pe %s/nothing.txt > %s/cmp.out 2>&1", tmpdir, tmpdir);
    int s = system(cmd);
    slurp(tmp_path("cmp.out"), out_buf, sizeof out_buf);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(out_buf, "nothing.txt: no such file"), "a missing text: %s", out_buf);
    return fails;
}

// Issue 59: the lab's Python tools without the lab's packages say what to
// install, not a traceback (a pandas that cannot be imported stands in for
// a machine without it).
static int test_lab_tools_say_what_to_install(void) {
    int fails = 0;
    ensure_tmpdir();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/nopandas/pandas && echo 'raise ModuleNotFoundError(\"No module named pandas\", "
             "name=\"pandas\")' > %s/nopandas/pandas/__init__.py", tmpdir, tmpdir);
    EXPECT(system(cmd) == 0, "%s", cmd);
    const char *tools[] = {"analyse", "compare"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "PYTHONPATH=%s/nopandas lab/%s --help > %s/tool.out 2>&1", tmpdir, tools[k], tmpdir);
        int s = system(cmd);
        slurp(tmp_path("tool.out"), out_buf, sizeof out_buf);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(out_buf, "scripts/install-deps.sh --lab") &&
               strstr(out_buf, "pandas") && !strstr(out_buf, "Traceback"), "lab/%s without pandas:\n%s", tools[k], out_buf);
    }
    return fails;
}

// The README's example commands run as written (issue 59), each in a
// folder of its own where the earlier ones' files are (7 loads what 6
// saved), with the steps capped (PELAB_TEST_MAX_STEPS=40: the commands, their
// options and files are what is checked here; their numbers are the
// README's, from the machine it names).
static int test_readme_examples_run(void) {
    int fails = 0;
    ensure_tmpdir();
    static char readme[1 << 17], cmd[4096], line[2048];
    slurp("README.md", readme, sizeof readme);
    const char *p = strstr(readme, "\n## Examples\n");
    EXPECT(p != NULL, "README.md has no Examples section");
    if (!p) return fails;
    const char *end = strstr(p + 1, "\n## ");
    char cwd[1024];
    EXPECT(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    snprintf(cmd, sizeof cmd, "mkdir -p %s/ex && ln -sf %s/train %s/ex/train", tmpdir, cwd, tmpdir);
    EXPECT(system(cmd) == 0, "%s", cmd);
    int n = 0;
    line[0] = 0;
    for (const char *q = p; q && (!end || q < end); q = strchr(q, '\n')) {
        q++;
        size_t len = strcspn(q, "\n");
        if (len < 4 || strncmp(q, "    ", 4) != 0) continue;
        char part[1024];
        snprintf(part, sizeof part, "%.*s", (int)(len - 4), q + 4);
        char *hash = strstr(part, "  #");  // the comment that says what to expect
        if (hash) *hash = 0;
        size_t k = strlen(part);
        while (k && part[k - 1] == ' ') part[--k] = 0;
        int more = k && part[k - 1] == '\\';
        if (more) part[--k] = 0;
        strncat(line, part, sizeof line - strlen(line) - 1);
        if (more) continue;
        if (!strncmp(line, "./train", 7)) {
            snprintf(cmd, sizeof cmd, "cd %s/ex && PELAB_TEST_MAX_STEPS=40 PELAB_RUNS=%s/ex/runs sh -c '%s' > %s/ex.out 2>&1",
                     tmpdir, tmpdir, line, tmpdir);
            int s = system(cmd);
            slurp(tmp_path("ex.out"), out_buf, sizeof out_buf);
            EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "README example `%s`: exit %d:\n%.1500s", line, WEXITSTATUS(s), out_buf);
            n++;
        }
        line[0] = 0;
    }
    EXPECT(n >= 9, "%d example commands found in the README", n);
    printf("    %d README examples ran\n", n);
    return fails;
}

// A NaN injected at step 8 stops the run with exit 1, names the step, and
// leaves the step-5 checkpoint loadable.
static int test_nan_keeps_last_checkpoint(void) {
    int fails = 0;
    child_env = "PELAB_TEST_NAN_AT=8";
    int s = run_train(SMALL " --steps 20 --save-every 5 --save {T}/nan.ck");
    child_env = NULL;
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1, "NaN run exited %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "step 8") && strstr(err_buf, "non-finite"), "stderr: %s", err_buf);
    s = run_train("--quiet --threads 2 --load {T}/nan.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "eval ctx="), "the step-5 checkpoint does not load: %s", err_buf);
    return fails;
}

// A size that does not fit in the memory available is refused before any
// allocation (Linux would overcommit and the OOM killer strike later):
// training exits 1 with a message; an evaluation length is refused alone.
// PELAB_TEST_MEM_AVAILABLE stands in for /proc/meminfo.
static int test_memory_refusal(void) {
    int fails = 0;
    child_env = "PELAB_TEST_MEM_AVAILABLE=4000000";
    int s = run_train(SMALL " --steps 5 --batch 512");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1, "oversized training exited %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "memory available") && strstr(err_buf, "--batch"), "stderr: %s", err_buf);
    child_env = "PELAB_TEST_MEM_AVAILABLE=10000000";
    s = run_train(SMALL " --steps 5 --eval-ctx 32,16384");
    child_env = NULL;
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "run with one oversized eval length exited %d: %s", WEXITSTATUS(s), err_buf);
    EXPECT(strstr(out_buf, "eval ctx=32 loss=") && strstr(out_buf, "eval ctx=16384 refused"), "stdout: %s", out_buf);
    EXPECT(strstr(err_buf, "ctx=16384") && strstr(err_buf, "memory available"), "stderr: %s", err_buf);
    return fails;
}

// SIGINT mid-run: exit 130 after saving the checkpoint and --json (marked
// interrupted); resuming gives the same bytes as a run that was never
// interrupted.
static int test_sigint_then_resume(void) {
    int fails = 0;
    const char *args = "--d-model 32 --layers 2 --heads 2 --ctx 32 --batch 8 --quiet --threads 2 --steps 600";
    char a[512];
    snprintf(a, sizeof a, "%s --save {T}/whole.ck", args);
    int s = run_train(a);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "uninterrupted run: %s", err_buf);
    snprintf(a, sizeof a, "%s --save {T}/int.ck --json {T}/int.json", args);
    child_signal_after_ms = 400;
    child_env = "PELAB_TEST_STEP_SLEEP_MS=5";  // 600 steps take at least 3 s: the signal lands mid-run
    s = run_train(a);
    child_env = NULL;
    child_signal_after_ms = 0;
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 130, "interrupted run exited %d (signal %d)", WEXITSTATUS(s), WIFSIGNALED(s) ? WTERMSIG(s) : 0);
    EXPECT(strstr(out_buf, "interrupted by SIGINT") && strstr(out_buf, "int.ck"), "no message on stdout: %s", out_buf);
    long at = -1;
    const char *p = strstr(out_buf, "after step ");
    if (p) at = atol(p + 11);
    EXPECT(at > 0 && at < 600, "stopped after step %ld", at);
    static char json[1 << 14];  // the record of the training so far, marked, without evaluations
    slurp(tmp_path("int.json"), json, sizeof json);
    char mark[96];
    snprintf(mark, sizeof mark, "\"interrupted\": {\"signal\": \"SIGINT\", \"step\": %ld}", at);
    EXPECT(strstr(json, mark) && strstr(json, "\"eval\": []"), "--json of the interrupted run: %.400s", json);
    s = run_train("--quiet --threads 2 --resume {T}/int.ck --save {T}/int.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "resume: %s", err_buf);
    EXPECT(test_ckpt_same_run(tmp_path("whole.ck"), tmp_path("int.ck")), "interrupted at step %ld and resumed: differs from the uninterrupted run", at);
    return fails;
}

// --log: a line per progress point as training goes; a run stopped with
// --stop-at and resumed appends to the same file, so the curve continues.
static int test_log_continues_over_resume(void) {
    int fails = 0;
    ensure_tmpdir();
    remove(tmp_path("run.log"));
    int s = run_train(SMALL " --steps 40 --log-every 10 --until-solved 0 --stop-at 20 --save {T}/lg.ck --log {T}/run.log");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "first part: %s", err_buf);
    s = run_train("--quiet --threads 2 --log-every 10 --resume {T}/lg.ck --save {T}/lg.ck --log {T}/run.log");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "resumed part: %s", err_buf);
    static char log[1 << 14];
    slurp(tmp_path("run.log"), log, sizeof log);
    const char *want[] = {"{\"start\": \"20", "\"step\": 0, \"steps\": 40", "\"resumed\": false", "{\"step\": 10, \"loss\": ",
                          "{\"step\": 20, \"loss\": ", "\"step\": 20, \"steps\": 40", "\"resumed\": true",
                          "{\"step\": 30, \"loss\": ", "{\"step\": 40, \"loss\": "};
    const char *at = log;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *p = strstr(at, want[i]);
        EXPECT(p, "--log lacks %s after what came before it: %.600s", want[i], log);
        if (p) at = p;
    }
    int lines = 0;
    for (const char *c = log; *c; c++) lines += *c == '\n';
    EXPECT(lines == 6, "--log has %d lines, not 2 starts and 4 points: %.600s", lines, log);
    return fails;
}

// Starts, in the background, a long run that saves {T}/name every step.
static pid_t start_saving_run_to(const char *name, const char *threads, const char *d_model, const char *out) {
    ensure_tmpdir();
    char save[512];
    snprintf(save, sizeof save, "%s", tmp_path(name));
    char *argv[] = {"./train", "--d-model", (char *)d_model, "--layers", "2", "--heads", "2", "--ctx", "32", "--batch", "4",
                    "--threads", (char *)threads, "--quiet", "--steps", "100000", "--save-every", "1", "--save", save, NULL};
    return spawn_train(out, NULL, argv);
}

static pid_t start_saving_run(const char *name, const char *threads) {
    return start_saving_run_to(name, threads, "32", NULL);
}

// SIGKILL at random moments of a run that saves every step: whatever the
// moment, the checkpoint on disk loads (saves are temporary file + rename).
static int test_kill_during_save(void) {
    int fails = 0, loaded = 0;
    ensure_tmpdir();
    rng_t r = {2024};
    for (int round = 0; round < 12; round++) {
        pid_t pid = start_saving_run("kill.ck", "1");
        usleep(150000 + rng_below(&r, 400000));
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "round %d: the run ended before the kill", round);
        if (access(tmp_path("kill.ck"), F_OK) != 0) continue;  // killed before the first save
        int s = run_train("--quiet --threads 1 --load {T}/kill.ck --eval-tokens 64");
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "round %d: checkpoint does not load after SIGKILL: %s", round, err_buf);
        loaded++;
    }
    EXPECT(loaded >= 6, "only %d of 12 rounds had a checkpoint to check", loaded);
    printf("    %d checkpoints loaded after SIGKILL mid-run\n", loaded);
    // The next save tidies the killed runs' temporary files, and a planted
    // one of a finished process, but not one whose process is alive.
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    // Files of the user's that merely look like one (the round-3 repro: a
    // corpus named r.ck.tmp.<dead pid>.txt) are never touched.
    char stale[64], live[64], user1[64], user2[64];
    snprintf(stale, sizeof stale, "kill.ck.pelab-tmp.%ld.a1B2c3", (long)gone);
    snprintf(live, sizeof live, "kill.ck.pelab-tmp.%ld.a1B2c3", (long)getpid());
    snprintf(user1, sizeof user1, "kill.ck.tmp.%ld.txt", (long)gone);
    snprintf(user2, sizeof user2, "kill.ck.pelab-tmp.%ld.notes.txt", (long)gone);
    char stale_path[512], live_path[512], user1_path[512], user2_path[512];
    snprintf(stale_path, sizeof stale_path, "%s", tmp_path(stale));
    snprintf(live_path, sizeof live_path, "%s", tmp_path(live));
    snprintf(user1_path, sizeof user1_path, "%s", tmp_path(user1));
    snprintf(user2_path, sizeof user2_path, "%s", tmp_path(user2));
    const char *planted[] = {stale_path, live_path, user1_path, user2_path};
    for (int i = 0; i < 4; i++) fclose(fopen(planted[i], "w"));
    int s = run_train(SMALL " --steps 2 --save {T}/kill.ck --overwrite");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "saving run: %s", err_buf);
    EXPECT(access(stale_path, F_OK) != 0, "%s was not removed", stale);
    EXPECT(access(live_path, F_OK) == 0, "%s (a live process's) was removed", live);
    EXPECT(access(user1_path, F_OK) == 0 && access(user2_path, F_OK) == 0, "a file of the user's was removed");
    unlink(live_path), unlink(user1_path), unlink(user2_path);
    int left = 0;
    DIR *d = opendir(tmp_path(""));
    for (struct dirent *e; d && (e = readdir(d));) left += strncmp(e->d_name, "kill.ck.pelab-tmp.", 18) == 0;
    if (d) closedir(d);
    EXPECT(left == 0, "%d temporary files left after the next save", left);
    return fails;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int count_temporaries(const char *prefix) {
    int n = 0;
    DIR *d = opendir(tmp_path(""));
    for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 && strstr(e->d_name, ".pelab-tmp.");
    if (d) closedir(d);
    return n;
}

// Two SIGINTs within milliseconds (a hang-up or `timeout` delivers one to
// the process and one to its group) are one request: the run says it is
// saving, saves and exits 130. A second request (SIGTERM after SIGINT,
// landing at random, often in a save: checkpoints of d 256 every step)
// exits at once and leaves no temporary, and the checkpoint on disk loads.
static int test_second_signal_exits_at_once(void) {
    int fails = 0;
    ensure_tmpdir();
    char out[512];
    snprintf(out, sizeof out, "%s", tmp_path("twice.out"));
    pid_t pid = start_saving_run_to("twice.ck", "2", "32", out);
    usleep(500000);
    kill(pid, SIGINT);
    kill(pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    static char text[4096];
    slurp(out, text, sizeof text);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 130 && strstr(text, "saving") && strstr(text, "saved "),
           "two SIGINTs at once: exit %d, signal %d: %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           WIFSIGNALED(st) ? WTERMSIG(st) : 0, text);
    int s = run_train("--quiet --threads 1 --load {T}/twice.ck --eval-tokens 64");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "checkpoint does not load after two SIGINTs: %s", err_buf);
    rng_t r = {77};
    int rounds = 10, at_once = 0;
    for (int round = 0; round < rounds; round++) {
        pid = start_saving_run_to("second.ck", "1", "256", NULL);
        usleep(400000 + rng_below(&r, 300000));
        kill(pid, SIGINT);
        usleep(rng_below(&r, 20000));
        kill(pid, SIGTERM);
        waitpid(pid, &st, 0);
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        at_once += code == 143;
        EXPECT(code == 143 || code == 130, "round %d: exit %d, signal %d", round, code, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        EXPECT(count_temporaries("second.ck") == 0, "round %d: a temporary left behind", round);
        if (access(tmp_path("second.ck"), F_OK) == 0) {
            s = run_train("--quiet --threads 1 --load {T}/second.ck --eval-tokens 64");
            EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "round %d: the checkpoint does not load: %s", round, err_buf);
        }
    }
    printf("    %d rounds of SIGINT then SIGTERM: %d stopped at once, %d had finished the save first\n", rounds, at_once,
           rounds - at_once);
    return fails;
}

// The exit at once runs on train's signal thread while the main thread
// saves: whatever moment atomic_abandon lands at in atomic_open, atomic_abort
// or atomic_commit, no temporary outlives the process. A child process opens
// and drops temporaries in a loop on one thread while another calls
// atomic_abandon and exits, at a random moment. (Before write_state, the
// abandon could unlink a name mkstemp had yet to create: 1 CI run in many.)
static const char *abandon_target;

static void *write_forever(void *arg) {
    (void)arg;
    for (unsigned i = 0;; i++) {
        atomic_file af;
        char err[256];
        if (atomic_open(&af, abandon_target, "test", err, sizeof err) != 0) _exit(3);
        fputs("x", af.f);
        if (i % 8 == 7) {
            if (atomic_commit(&af, "test", err, sizeof err) != 0) _exit(4);
        } else {
            atomic_abort(&af);
        }
    }
    return NULL;
}

static int test_abandon_during_writes(void) {
    int fails = 0, rounds = 300, bad_exits = 0;
    ensure_tmpdir();
    rng_t r = {4242};
    static char target[256];
    snprintf(target, sizeof target, "%s", tmp_path("abandon.out"));
    for (int round = 0; round < rounds; round++) {
        unsigned wait_us = (unsigned)rng_below(&r, 2000);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            abandon_target = target;
            pthread_t t;
            if (pthread_create(&t, NULL, write_forever, NULL) != 0) _exit(5);
            usleep(wait_us);
            atomic_abandon();
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && bad_exits++ < 3)
            printf("    round %d: writer exit %d signal %d\n", round, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                   WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        int left = count_temporaries("abandon.out");
        EXPECT(left == 0, "round %d (abandon after %u us): %d temporaries left", round, wait_us, left);
        if (left) break;
    }
    EXPECT(bad_exits == 0, "%d of %d writer processes did not exit 0", bad_exits, rounds);
    printf("    %d processes abandoned their writes at random moments\n", rounds);
    return fails;
}

// ---- reliability, round 2: each class of fault a hostile user found ----


#define EXPECT_EXIT(st, code, ...) EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == (code), __VA_ARGS__)

// 1. No output may overwrite an input, or another output (exit 2, nothing
// written); --resume and --save of one file continue a run in place.
static int test_outputs_never_overwrite_inputs(void) {
    int fails = 0;
    ensure_tmpdir();
    char text[3000];
    for (int i = 0; i < 3000; i++) text[i] = "a quick brown fox\n"[i % 18];
    write_file(tmp_path("c.txt"), text, sizeof text);
    int s = run_train(SMALL " --steps 2 --save {T}/g.ck");
    symlink(tmp_path("c.txt"), tmp_path("c-link.txt"));
    static const char *const cases[] = {
        "--data {T}/c.txt --save {T}/c.txt", "--data {T}/c.txt --json {T}/c.txt", "--data {T}/c.txt --save {T}/c-link.txt",
        "--save {T}/o.ck --json {T}/o.ck", "--save {T}/o.ck --attn-png {T}/o.ck", "--save {T}/g.ck --attn-png {T}/g.ck",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char a[512];
        snprintf(a, sizeof a, SMALL " --steps 2 %s", cases[i]);
        s = run_train(a);
        EXPECT_EXIT(s, 2, "'%s' exited %d, expected 2: %s", cases[i], WEXITSTATUS(s), err_buf);
        EXPECT(strstr(err_buf, "same file"), "'%s': %s", cases[i], err_buf);
    }
    s = run_train("--quiet --threads 2 --load {T}/g.ck --json {T}/g.ck");
    EXPECT_EXIT(s, 2, "--load g.ck --json g.ck exited %d", WEXITSTATUS(s));
    long base = file_size(tmp_path("g.ck"));
    static const char *const init_cases[] = {"--json {T}/g.ck", "--save {T}/g.ck", "--attn-png {T}/g.ck"};
    for (size_t i = 0; i < sizeof init_cases / sizeof init_cases[0]; i++) {  // --init is an input like the others
        char a[512];
        snprintf(a, sizeof a, "--quiet --threads 2 --init {T}/g.ck --steps 2 %s", init_cases[i]);
        s = run_train(a);
        EXPECT_EXIT(s, 2, "'--init g.ck %s' exited %d, expected 2: %s", init_cases[i], WEXITSTATUS(s), err_buf);
        EXPECT(strstr(err_buf, "same file"), "'--init g.ck %s': %s", init_cases[i], err_buf);
    }
    EXPECT(file_size(tmp_path("g.ck")) == base, "a refused --init run changed the base checkpoint");
    EXPECT(file_size(tmp_path("c.txt")) == 3000 && access(tmp_path("o.ck"), F_OK) != 0, "a refused run wrote a file");
    return fails;
}

// 2. Outputs are regular files: a device or FIFO is refused (never replaced);
// a symbolic link to a regular file is written through and stays a link.
static int test_outputs_are_regular_files(void) {
    int fails = 0;
    ensure_tmpdir();
    mkfifo(tmp_path("fifo"), 0644);
    int s = run_train(SMALL " --steps 2 --json /dev/null");
    struct stat st;
    EXPECT_EXIT(s, 2, "--json /dev/null exited %d: %s", WEXITSTATUS(s), err_buf);
    EXPECT(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null is no longer a device");
    s = run_train(SMALL " --steps 2 --save {T}/fifo");
    EXPECT_EXIT(s, 2, "--save FIFO exited %d: %s", WEXITSTATUS(s), err_buf);
    EXPECT(lstat(tmp_path("fifo"), &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    write_file(tmp_path("real.json"), "old", 3);
    symlink(tmp_path("real.json"), tmp_path("link.json"));
    s = run_train(SMALL " --steps 2 --json {T}/link.json");
    EXPECT_EXIT(s, 0, "--json through a link: %s", err_buf);
    EXPECT(lstat(tmp_path("link.json"), &st) == 0 && S_ISLNK(st.st_mode), "the link was replaced by a file");
    EXPECT(file_size(tmp_path("real.json")) > 100, "the link's target was not written");
    return fails;
}

// 3. Temporaries are fresh files: a link planted at a predictable name is
// never followed; a write that fails (a disk that fills: RLIMIT_FSIZE)
// leaves no temporary behind and the previous file intact.
static int test_temporaries_are_safe(void) {
    int fails = 0;
    ensure_tmpdir();
    write_file(tmp_path("victim"), "keep", 4);
    symlink(tmp_path("victim"), tmp_path("r.json.tmp"));
    char planted[64];
    snprintf(planted, sizeof planted, "r.json.tmp.%d", (int)getpid() + 1);
    symlink(tmp_path("victim"), tmp_path(planted));
    int s = run_train(SMALL " --steps 2 --json {T}/r.json");
    EXPECT_EXIT(s, 0, "json run: %s", err_buf);
    EXPECT(file_size(tmp_path("victim")) == 4, "the planted link redirected the write");
    unlink(tmp_path("r.json.tmp"));
    unlink(tmp_path(planted));
    s = run_train(SMALL " --steps 2 --save {T}/full.ck");
    long before = file_size(tmp_path("full.ck"));
    child_fsize = 2000;
    s = run_train(SMALL " --steps 2 --seed 9 --keep last --overwrite --save {T}/full.ck");
    EXPECT_EXIT(s, 1, "a save on a full disk exited %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "full.ck"), "no message naming the file: %s", err_buf);
    child_fsize = 300;  // the JSON is longer; the two lines on stdout are not
    s = run_train(SMALL " --steps 2 --json {T}/full.json");
    child_fsize = 0;
    EXPECT_EXIT(s, 1, "a --json on a full disk exited %d", WEXITSTATUS(s));
    EXPECT(count_temporaries("full") == 0, "%d temporaries left after failed writes", count_temporaries("full"));
    EXPECT(file_size(tmp_path("full.ck")) == before, "the previous checkpoint changed (%ld -> %ld bytes)", before,
           file_size(tmp_path("full.ck")));
    return fails;
}

// 4 and 6. Standard output that fails (full, or a closed pipe): the run
// still trains and saves, and exits 1 saying the printed results are lost.
static int test_stdout_failures(void) {
    int fails = 0;
    child_stdout = "/dev/full";
    int s = run_train(SMALL " --steps 2");
    EXPECT_EXIT(s, 1, ">/dev/full exited %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "standard output"), "stderr: %s", err_buf);
    static const char *const actions[] = {"--help", "--version", "--list-pe"};
    for (int i = 0; i < 3; i++) {  // what was asked for is lost: not a success
        s = run_train(actions[i]);
        EXPECT_EXIT(s, 1, "%s >/dev/full exited %d", actions[i], WEXITSTATUS(s));
        EXPECT(strstr(err_buf, "standard output"), "%s: stderr: %s", actions[i], err_buf);
    }
    child_stdout = "closed-pipe";
    s = run_train("--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --threads 2 --steps 30 --log-every 1 --save {T}/pipe.ck");
    child_stdout = NULL;
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1, "a closed stdout: exit %d, signal %d", WIFEXITED(s) ? WEXITSTATUS(s) : -1,
           WIFSIGNALED(s) ? WTERMSIG(s) : 0);
    s = run_train("--quiet --threads 2 --load {T}/pipe.ck");
    EXPECT_EXIT(s, 0, "the run with a closed stdout did not save: %s", err_buf);
    return fails;
}

// 5 and 6. SIGTERM as the final save begins loses nothing (the save
// completes, exit 143); SIGHUP mid-run saves like SIGTERM (exit 129).
static int test_signals_at_the_wrong_moment(void) {
    int fails = 0;
    child_env = "PELAB_TEST_SIGNAL_AT_SAVE=15";
    int s = run_train(SMALL " --steps 12 --save {T}/last.ck");
    EXPECT_EXIT(s, 143, "SIGTERM at the final save: exit %d", WEXITSTATUS(s));
    child_env = "PELAB_TEST_STEP_SLEEP_MS=5";
    child_signal = SIGHUP, child_signal_after_ms = 300;
    s = run_train("--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --quiet --threads 2 --steps 2000 --save {T}/hup.ck");
    child_signal = SIGINT, child_signal_after_ms = 0, child_env = NULL;
    EXPECT_EXIT(s, 129, "SIGHUP: exit %d (signal %d)", WEXITSTATUS(s), WIFSIGNALED(s) ? WTERMSIG(s) : 0);
    EXPECT(strstr(out_buf, "interrupted by SIGHUP"), "stdout: %s", out_buf);
    // under nohup (SIGHUP ignored by the parent) a hang-up does not stop the run
    child_env = "PELAB_TEST_STEP_SLEEP_MS=5", child_ignores_hup = 1;
    child_signal = SIGHUP, child_signal_after_ms = 300;
    s = run_train("--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --quiet --threads 2 --steps 200 --save {T}/nohup.ck");
    child_signal = SIGINT, child_signal_after_ms = 0, child_env = NULL, child_ignores_hup = 0;
    EXPECT_EXIT(s, 0, "SIGHUP under nohup: exit %d (signal %d): %s", WEXITSTATUS(s), WIFSIGNALED(s) ? WTERMSIG(s) : 0, out_buf);
    EXPECT(!strstr(out_buf, "interrupted"), "a run under nohup stopped at SIGHUP: %s", out_buf);
    s = run_train("--quiet --threads 2 --load {T}/hup.ck");
    EXPECT_EXIT(s, 0, "the SIGHUP checkpoint does not load: %s", err_buf);
    // the final save happened: the checkpoint is at the last step
    FILE *f = fopen(tmp_path("last.ck"), "rb");
    char head[600] = "";
    if (f) head[fread(head, 1, sizeof head - 1, f)] = '\0', fclose(f);
    EXPECT(strstr(head + 28, "step=12\n"), "the checkpoint after SIGTERM at the save is not at step 12");
    // SIGTERM as the outputs begin: they are written whole (the signal thread
    // keeps the signals until the last one; before, the default handler was
    // back and killed the process mid-write, leaving the temporary)
    child_env = "PELAB_TEST_SIGNAL_AT_OUTPUT=15";
    remove(tmp_path("late.json"));
    s = run_train(SMALL " --steps 4 --json {T}/late.json --attn-png {T}/late.png --sample 20");
    child_env = NULL;
    static char js[1 << 14];
    slurp(tmp_path("late.json"), js, sizeof js);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(js, "\"eval\"") && file_size(tmp_path("late.png")) > 0 &&
               strstr(out_buf, "they are complete") && count_temporaries("late.") == 0,
           "SIGTERM as the outputs begin: exit %d, JSON %zu bytes, stdout %s", WEXITSTATUS(s), strlen(js), out_buf);
    return fails;
}

// 7. A FIFO as an input, given or stored in a checkpoint, is refused at once.
static int test_fifo_inputs(void) {
    int fails = 0;
    ensure_tmpdir();
    mkfifo(tmp_path("in.fifo"), 0644);
    int s = run_train(SMALL " --steps 2 --data {T}/in.fifo");
    EXPECT_EXIT(s, 1, "--data FIFO: exit %d", WEXITSTATUS(s));
    s = run_train("--quiet --threads 2 --load {T}/in.fifo");
    EXPECT_EXIT(s, 1, "--load FIFO: exit %d", WEXITSTATUS(s));
    char text[3000];
    for (int i = 0; i < 3000; i++) text[i] = "to be or not to be\n"[i % 19];
    write_file(tmp_path("t.txt"), text, sizeof text);
    s = run_train(SMALL " --steps 4 --stop-at 2 --save {T}/t.ck --data {T}/t.txt");
    unlink(tmp_path("t.txt"));
    mkfifo(tmp_path("t.txt"), 0644);
    s = run_train("--quiet --threads 2 --resume {T}/t.ck");
    EXPECT_EXIT(s, 1, "a stored data path that became a FIFO: exit %d", WEXITSTATUS(s));
    unlink(tmp_path("t.txt"));
    return fails;
}

// Rewrites a format-2 checkpoint's settings text, setting key's value to
// value, and fixes the lengths and the CRC so that only the contents are wrong.
static void rewrite_settings(const char *path, const char *out, const char *key, const char *value) {
    static unsigned char ck[1 << 22], res[1 << 22];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(ck, 1, sizeof ck, f) : 0;
    if (f) fclose(f);
    if (n < 40) return;
    uint32_t tl = ck[24] | ck[25] << 8 | ck[26] << 16 | (uint32_t)ck[27] << 24;
    char text[8192];
    memcpy(text, ck + 28, tl);
    text[tl] = '\0';
    char line[64];
    snprintf(line, sizeof line, "\n%s=", key);
    char *at = strstr(text, line);
    if (!at) return;
    at += strlen(line);
    char fixed[8192];
    snprintf(fixed, sizeof fixed, "%.*s%s%s", (int)(at - text), text, value, strchr(at, '\n'));
    uint32_t nl = (uint32_t)strlen(fixed);
    memcpy(res, ck, 24);
    for (int k = 0; k < 4; k++) res[24 + k] = (unsigned char)(nl >> (8 * k));
    memcpy(res + 28, fixed, nl);
    size_t rest = n - 28 - tl - 4;
    memcpy(res + 28 + nl, ck + 28 + tl, rest);
    size_t m = 28 + nl + rest;
    uint32_t crc = crc32_update(0, res, m);
    for (int k = 0; k < 4; k++) res[m + k] = (unsigned char)(crc >> (8 * k));
    write_file(out, res, m + 4);
}

// 8. A checkpoint with a valid CRC over bad contents is refused (exit 1):
// NaN weights, and run settings the command line would refuse. JSON never
// holds NaN.
static int test_checkpoints_that_lie(void) {
    int fails = 0;
    int s = run_train(SMALL " --steps 3 --save {T}/ok.ck");
    static const char *const lies[][2] = {{"lr", "-1"}, {"clip", "nan"}, {"wd", "1e30"}, {"batch", "0"}, {"ctx", "0"},
                                          {"ctx", "16.5"}, {"steps", "2"}, {"data", ""}, {"batch", "4e0"}};
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        rewrite_settings(tmp_path("ok.ck"), tmp_path("lie.ck"), lies[i][0], lies[i][1]);
        s = run_train("--quiet --threads 2 --resume {T}/lie.ck");
        EXPECT_EXIT(s, 1, "a checkpoint with %s=%s: exit %d (%s)", lies[i][0], lies[i][1], WEXITSTATUS(s), err_buf);
        EXPECT(strstr(err_buf, "corrupt"), "%s=%s: %s", lies[i][0], lies[i][1], err_buf);
    }
    // an encoding's choice is stored as its index: any other number is refused, never used as an index
    // (-100000000 crashed the header's printing, -1 printed "(null)")
    s = run_train(SMALL " --pe rope --steps 2 --save {T}/rope.ck");
    s = run_train("--quiet --threads 2 --init {T}/rope.ck --rope-scale yarn --steps 2 --save {T}/yarn.ck");
    EXPECT_EXIT(s, 0, "fine-tuning with --rope-scale yarn: %s", err_buf);
    static const char *const choices[] = {"-100000000", "-1", "6", "1.5", "nan"};  // 6: one past longrope
    for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++) {
        rewrite_settings(tmp_path("yarn.ck"), tmp_path("lie.ck"), "opt.rope-scale", choices[i]);
        s = run_train("--threads 2 --load {T}/lie.ck");
        EXPECT_EXIT(s, 1, "a checkpoint with opt.rope-scale=%s: exit %d (%s)", choices[i], WEXITSTATUS(s), err_buf);
        EXPECT(strstr(err_buf, "corrupt") && !strstr(out_buf, "(null)"), "opt.rope-scale=%s: %s", choices[i], err_buf);
    }
    // a value that breaks a rule between settings is the file's fault, not the
    // command line's: exit 1, "corrupt", naming the key (before: exit 2 and
    // advice to give options that were never given, or accepted)
    s = run_train(SMALL " --steps 4 --stop-at 2 --save {T}/half.ck");
    s = run_train(SMALL_TASK " --data task:flipflop --steps 2 --save {T}/ff.ck");
    static const struct {
        const char *file, *key, *value, *how, *names;
    } rules[] = {
        {"half.ck", "ctx", "1", "--resume", "'ctx'"},
        {"half.ck", "data", "task:copy", "--resume", "'data'"},
        {"half.ck", "data", "task:copy", "--load", "'data'"},
        {"ok.ck", "data_crc32", "0\ntask_ignore=0.5", "--load", "'task_ignore'"},   // a task option in a cats checkpoint
        {"ff.ck", "data_crc32", "0\ntask_ignore=nan", "--load", "'task_ignore'"},   // not a probability
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        char a[512];
        rewrite_settings(tmp_path(rules[i].file), tmp_path("rule.ck"), rules[i].key, rules[i].value);
        snprintf(a, sizeof a, "--quiet --threads 2 %s {T}/rule.ck%s", rules[i].how,
                 strcmp(rules[i].how, "--resume") ? "" : " --save {T}/rule.ck");
        s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(err_buf, "corrupt") && strstr(err_buf, rules[i].names),
               "%s of a checkpoint with %s=%s: exit %d (%s)", rules[i].how, rules[i].key, rules[i].value,
               WEXITSTATUS(s), err_buf);
    }
    // a field with a terminal escape sequence is shown escaped, never raw
    rewrite_settings(tmp_path("ok.ck"), tmp_path("esc.ck"), "data", "\033[31mred.txt");
    s = run_train("--quiet --threads 2 --resume {T}/esc.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) != 0 && strstr(err_buf, "\\x1b[31mred.txt") && !strchr(err_buf, 033),
           "an escape sequence from a checkpoint: exit %d: %s", WEXITSTATUS(s), err_buf);
    // A version 1 file's values meet the same parser and ranges as version
    // 2's (they loaded with exit 0 before: lr -1, wd -1, clip NaN, a causal
    // flag of 2, a step past its steps; steps 2^63-1 asked for 92 PB).
    static unsigned char v1[1 << 17];
    FILE *vf = fopen("tests/fixtures/v1_rope.ck", "rb");
    size_t vn = vf ? fread(v1, 1, sizeof v1, vf) : 0;
    if (vf) fclose(vf);
    static const struct {
        const char *what;
        size_t at, bytes;
        uint64_t value;
    } v1_lies[] = {{"lr -1", 120, 4, 0xbf800000u},     {"wd -1", 124, 4, 0xbf800000u},
                   {"clip NaN", 128, 4, 0x7fc00000u},  {"causal 2", 36, 4, 2},
                   {"step 21 of 20", 96, 8, 21},       {"steps 2^63-1", 104, 8, 0x7fffffffffffffffull},
                   {"batch 0", 112, 4, 0},             {"heads 3 of d 16", 32, 4, 3}};
    for (size_t i = 0; i < sizeof v1_lies / sizeof v1_lies[0] && vn > 700; i++) {
        static unsigned char lie[1 << 17];
        memcpy(lie, v1, vn);
        for (size_t k = 0; k < v1_lies[i].bytes; k++) lie[v1_lies[i].at + k] = (unsigned char)(v1_lies[i].value >> (8 * k));
        uint32_t c = crc32_update(0, lie, vn - 4);
        for (int k = 0; k < 4; k++) lie[vn - 4 + k] = (unsigned char)(c >> (8 * k));
        write_file(tmp_path("v1lie.ck"), lie, vn);
        s = run_train("--quiet --threads 2 --resume {T}/v1lie.ck --save {T}/v1lie.ck");
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && strstr(err_buf, "corrupt") &&
                   (strstr(err_buf, "bad settings value") || strstr(err_buf, "past the end") || strstr(err_buf, "config is invalid")),
               "a v1 checkpoint with %s (under a valid CRC): exit %d (%s)", v1_lies[i].what, WEXITSTATUS(s), err_buf);
    }
    // a NaN weight under a valid CRC
    static unsigned char ck[1 << 22];
    FILE *f = fopen(tmp_path("ok.ck"), "rb");
    size_t n = f ? fread(ck, 1, sizeof ck, f) : 0;
    if (f) fclose(f);
    uint32_t tl = ck[24] | ck[25] << 8 | ck[26] << 16 | (uint32_t)ck[27] << 24;
    float nan = NAN;
    memcpy(ck + 28 + tl + 40, &nan, 4);
    uint32_t crc = crc32_update(0, ck, n - 4);
    for (int k = 0; k < 4; k++) ck[n - 4 + k] = (unsigned char)(crc >> (8 * k));
    write_file(tmp_path("nan.ck"), ck, n);
    s = run_train("--quiet --threads 2 --load {T}/nan.ck");
    EXPECT_EXIT(s, 1, "NaN weights: exit %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "non-finite"), "stderr: %s", err_buf);
    char buf[64] = "";
    FILE *m = tmpfile();
    if (m) {
        json_number(m, "%.6f", NAN), fputc(' ', m), json_number(m, "%.6f", INFINITY), fputc(' ', m), json_number(m, "%.1f", 2.5);
        rewind(m);
        buf[fread(buf, 1, sizeof buf - 1, m)] = '\0';
        fclose(m);
    }
    EXPECT(strcmp(buf, "null null 2.5") == 0, "json numbers: '%s'", buf);
    return fails;
}

// 9–12. Nothing truncated, conflicting or ignored options refused, every
// check made before the first step, an evaluation that scores nothing refused.
static int test_options_checked_up_front(void) {
    int fails = 0;
    char zeros[400] = "--eval-ctx 16,";
    for (int i = 0; i < 250; i++) strcat(zeros, "0");
    strcat(zeros, "1024");
    char a[1024];
    snprintf(a, sizeof a, SMALL " --steps 2 %s", zeros);
    int s = run_train(a);
    EXPECT_EXIT(s, 2, "a 250-zero length: exit %d", WEXITSTATUS(s));
    s = run_train(SMALL " --steps 4 --stop-at 2 --save {T}/r.ck");
    static const char *const refused[] = {
        "--quiet --threads 2 --resume {T}/r.ck --pe learned", "--quiet --threads 2 --resume {T}/r.ck --d-model 128",
        "--quiet --threads 2 --resume {T}/r.ck --lr 0.1", "--quiet --threads 2 --load {T}/r.ck --save {T}/y.ck",
        SMALL " --steps 10 --stop-at 5 --save {T}/s.ck --json {T}/s.json",
        SMALL " --steps 400 --prompt the_zebra --sample 5 --save {T}/late.ck", SMALL " --steps 400 --prompt= --sample 5",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        double t0 = now_seconds();
        s = run_train(refused[i]);
        EXPECT_EXIT(s, 2, "'%s' exited %d, expected 2 (%s)", refused[i], WEXITSTATUS(s), err_buf);
        EXPECT(!strstr(out_buf, "step ") && now_seconds() - t0 < 10, "'%s' trained before refusing", refused[i]);
    }
    EXPECT(access(tmp_path("late.ck"), F_OK) != 0, "a late refusal left a checkpoint");
    s = run_train(SMALL " --steps 2 --attn bidir --save {T}/bi.ck");
    s = run_train("--quiet --threads 2 --load {T}/bi.ck --sample 5");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && !strstr(out_buf, "eval"), "--sample on a bidirectional checkpoint: %d %s",
           WEXITSTATUS(s), out_buf);
    s = run_train(SMALL " --steps 2 --attn bidir --eval-ctx 1,16");
    EXPECT(strstr(out_buf, "eval ctx=1 refused") && !strstr(out_buf, "loss=0.0000"), "ctx=1 with nothing to score: %s", out_buf);
    // a prompt of 1,200 bytes is used whole (it was cut at 1,023)
    char text[3000], prompt[1300] = "";
    for (int i = 0; i < 3000; i++) text[i] = "abcdefgh"[i % 8];
    write_file(tmp_path("p.txt"), text, sizeof text);
    for (int i = 0; i < 1200; i++) prompt[i] = "abcdefgh"[i % 8];
    prompt[1199] = 'Z';
    s = run_train(SMALL " --steps 2 --data {T}/p.txt --save {T}/p.ck");
    static char b[2048];
    snprintf(b, sizeof b, "--quiet --threads 2 --load {T}/p.ck --data {T}/p.txt --sample 3 --prompt %s", prompt);
    s = run_train(b);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, prompt), "a 1,200-byte prompt was not used whole: %s", err_buf);
    return fails;
}

// 13. The memory check reads the cgroup limit and counts the weights and
// both AdamW moments.
static int test_memory_counts_cgroup_and_weights(void) {
    int fails = 0;
    ensure_tmpdir();
    mkdir(tmp_path("cg"), 0755);
    write_file(tmp_path("cg/memory.max"), "3000000\n", 8);
    write_file(tmp_path("cg/memory.current"), "0\n", 2);
    static char env[600];
    snprintf(env, sizeof env, "PELAB_TEST_CGROUP_DIR=%s", tmp_path("cg"));
    child_env = env;
    // activations of batch 1 x ctx 16 are small; 4 copies of ~1.3M parameters are not
    int s = run_train("--d-model 192 --layers 3 --heads 2 --ctx 16 --batch 1 --quiet --threads 2 --steps 2");
    child_env = NULL;
    EXPECT_EXIT(s, 1, "a run over the cgroup limit exited %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "memory available") && strstr(err_buf, "AdamW"), "stderr: %s", err_buf);
    // the limit on a parent group holds its children: none on the run's own group
    mkdir(tmp_path("cgp"), 0755);
    mkdir(tmp_path("cgp/child"), 0755);
    write_file(tmp_path("cgp/memory.max"), "3000000\n", 8);
    write_file(tmp_path("cgp/memory.current"), "0\n", 2);
    write_file(tmp_path("cgp/child/memory.max"), "max\n", 4);
    snprintf(env, sizeof env, "PELAB_TEST_CGROUP_DIR=%s", tmp_path("cgp/child"));
    static char env2[600];
    snprintf(env2, sizeof env2, "PELAB_TEST_CGROUP_ROOT=%s", tmp_path(""));
    putenv(env2);   // the parent process's environment, which the child inherits
    child_env = env;
    s = run_train("--d-model 192 --layers 3 --heads 2 --ctx 16 --batch 1 --quiet --threads 2 --steps 2");
    child_env = NULL;
    unsetenv("PELAB_TEST_CGROUP_ROOT");
    EXPECT_EXIT(s, 1, "a run over its parent group's limit exited %d: %s", WEXITSTATUS(s), err_buf);
    EXPECT(strstr(err_buf, "memory available"), "stderr: %s", err_buf);
    // the page cache's inactive part is room (the kernel gives it back): 10 MB
    // unused of 1 GB but 900 MB of it inactive file pages, the run fits
    mkdir(tmp_path("cgc"), 0755);
    write_file(tmp_path("cgc/memory.max"), "1000000000\n", 11);
    write_file(tmp_path("cgc/memory.current"), "990000000\n", 10);
    static const char stat[] = "anon 80000000\nfile 900000000\nactive_file 0\ninactive_file 900000000\n";
    write_file(tmp_path("cgc/memory.stat"), stat, sizeof stat - 1);
    snprintf(env, sizeof env, "PELAB_TEST_CGROUP_DIR=%s", tmp_path("cgc"));
    child_env = env;
    s = run_train("--d-model 192 --layers 3 --heads 2 --ctx 16 --batch 1 --quiet --threads 2 --steps 2");
    child_env = NULL;
    EXPECT_EXIT(s, 0, "a run that fits beside 900 MB of inactive page cache exited %d: %s", WEXITSTATUS(s), err_buf);
    return fails;
}

// 5 (round 3). One memory estimate before anything large is read or
// allocated: a checkpoint's weights count before they are loaded (an
// evaluation took no account of them), and a corpus before it is read (here
// a 64 MiB sparse file, refused under 40 MB without being read). --load reads
// the optimiser moments only for the checksum: one changed byte in them is
// still found.
static int test_memory_estimate_first(void) {
    int fails = 0;
    ensure_tmpdir();
    int s = run_train("--d-model 128 --layers 2 --heads 2 --ctx 16 --batch 1 --quiet --threads 2 --steps 1 --save {T}/mem.ck");
    EXPECT_EXIT(s, 0, "making the checkpoint exited %d: %s", WEXITSTATUS(s), err_buf);
    child_env = "PELAB_TEST_MEM_AVAILABLE=1000000";  // its ~0.4M weights take 1.6 MB
    s = run_train("--quiet --threads 2 --load {T}/mem.ck --eval-tokens 256");
    child_env = NULL;
    EXPECT_EXIT(s, 1, "evaluating a model larger than the memory available exited %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "memory available") && strstr(err_buf, "weights"), "stderr: %s", err_buf);
    int fd = open(tmp_path("big.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT(fd >= 0 && ftruncate(fd, 64 << 20) == 0, "cannot make a sparse file");
    if (fd >= 0) close(fd);
    child_env = "PELAB_TEST_MEM_AVAILABLE=40000000";
    s = run_train(SMALL " --steps 2 --data {T}/big.txt");
    child_env = NULL;
    EXPECT_EXIT(s, 1, "a corpus larger than the memory available exited %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "memory available") && strstr(err_buf, "corpus"), "stderr: %s", err_buf);
    unlink(tmp_path("big.txt"));
    struct stat sb;
    EXPECT(stat(tmp_path("mem.ck"), &sb) == 0, "no checkpoint");
    fd = open(tmp_path("mem.ck"), O_RDWR);
    unsigned char byte = 0;
    off_t at = sb.st_size - 4 - 1000;  // inside the second moments
    EXPECT(fd >= 0 && pread(fd, &byte, 1, at) == 1, "cannot read the checkpoint");
    byte ^= 0x40;
    EXPECT(fd >= 0 && pwrite(fd, &byte, 1, at) == 1, "cannot change the checkpoint");
    if (fd >= 0) close(fd);
    s = run_train("--quiet --threads 2 --load {T}/mem.ck --eval-tokens 256");
    EXPECT_EXIT(s, 1, "a checkpoint with a changed moment loaded: exit %d", WEXITSTATUS(s));
    EXPECT(strstr(err_buf, "checksum mismatch"), "stderr: %s", err_buf);
    return fails;
}

// 14. An output that cannot be written fails before training: a file name
// too long for a temporary beside it, a folder the user cannot write.
static int test_outputs_checked_before_training(void) {
    int fails = 0;
    ensure_tmpdir();
    char a[1024], name[256];
    memset(name, 'n', 240);
    snprintf(name + 240, sizeof name - 240, ".ck");
    snprintf(a, sizeof a, SMALL " --steps 300 --log-every 1 --save {T}/%s", name);
    int s = run_train(a);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && !strstr(out_buf, "step "), "a too-long name: exit %d, %s", WEXITSTATUS(s), err_buf);
    if (getuid() == 0) {  // root writes anywhere: run as nobody, in a folder nobody may write
        mkdir(tmp_path("ro"), 0755);
        chmod(tmpdir, 0755);
        child_as_nobody = 1;
        s = run_train(SMALL " --steps 300 --log-every 1 --save {T}/ro/x.ck");
        child_as_nobody = 0;
        chmod(tmpdir, 0700);
    } else {
        mkdir(tmp_path("ro"), 0555);
        s = run_train(SMALL " --steps 300 --log-every 1 --save {T}/ro/x.ck");
    }
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && !strstr(out_buf, "step "), "an unwritable folder: exit %d, %s", WEXITSTATUS(s),
           err_buf);
    // A target the final rename may not replace: another user's file in a
    // sticky folder (as /tmp), or an immutable one. Creating the temporary
    // works in both, so only checking the rename itself tells before training.
    if (getuid() == 0) {
        mkdir(tmp_path("sticky"), 01777);
        chmod(tmp_path("sticky"), 01777);
        write_file(tmp_path("sticky/theirs.json"), "{}", 2);   // root's, in a folder root owns
        chmod(tmpdir, 0755);
        child_as_nobody = 1;
        s = run_train(LOUD " --steps 300 --log-every 1 --json {T}/sticky/theirs.json");
        child_as_nobody = 0;
        chmod(tmpdir, 0700);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && !strstr(out_buf, "step ") && strstr(err_buf, "the folder is sticky"),
               "another user's file in a sticky folder: exit %d, %s", WEXITSTATUS(s), err_buf);
        write_file(tmp_path("frozen.json"), "{}", 2);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "chattr +i '%s' 2>/dev/null", tmp_path("frozen.json"));
        if (system(cmd) == 0) {  // a file system that has the flag
            s = run_train(LOUD " --steps 300 --log-every 1 --json {T}/frozen.json");
            snprintf(cmd, sizeof cmd, "chattr -i '%s'", tmp_path("frozen.json"));
            if (system(cmd) != 0) printf("    could not clear the immutable flag of %s\n", tmp_path("frozen.json"));
            EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 1 && !strstr(out_buf, "step ") && strstr(err_buf, "immutable"),
                   "an immutable target: exit %d, %s", WEXITSTATUS(s), err_buf);
        } else {
            printf("    this file system has no immutable flag (chattr +i): that case not checked\n");
        }
    }
    return fails;
}

// 15. JSON is valid UTF-8 whatever the bytes of a path or prompt.
static int test_json_is_utf8(void) {
    int fails = 0;
    ensure_tmpdir();
    char text[3000];
    for (int i = 0; i < 3000; i++) text[i] = "abc def\n"[i % 8];
    char path[256];
    snprintf(path, sizeof path, "%s/caf\xc3\xa9-\xff.txt", tmpdir);
    write_file(path, text, sizeof text);
    char a[1024];
    snprintf(a, sizeof a, SMALL " --steps 2 --data %s --json {T}/u.json", path);
    int s = run_train(a);
    EXPECT_EXIT(s, 0, "run: %s", err_buf);
    static char json[1 << 14];
    slurp(tmp_path("u.json"), json, sizeof json);
    EXPECT(strstr(json, "caf\xc3\xa9-\\u00ff.txt") && !strchr(json, '\xff'), "the path in JSON: %.200s", strstr(json, "\"data\""));
    return fails;
}

// The --json of a few fixed runs (tests/golden_json.sh: a text run with every
// evaluation output, a --load evaluation, cats, a task) against the bytes
// kept in tests/fixtures/golden_json.txt, with what varies between machines
// masked: a change to --json's keys, their order or their formatting fails
// here until the fixture is regenerated on purpose.
static int test_json_golden(void) {
    int fails = 0;
    ensure_tmpdir();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "tests/golden_json.sh > %s 2>&1 && diff tests/fixtures/golden_json.txt %s > %s 2>&1",
             tmp_path("golden.txt"), tmp_path("golden.txt"), tmp_path("golden.diff"));
    int rc = system(cmd);
    static char diff[4096];
    slurp(tmp_path("golden.diff"), diff, sizeof diff);
    if (rc != 0) slurp(tmp_path("golden.txt"), diff + strlen(diff), sizeof diff - strlen(diff));
    EXPECT(rc == 0, "--json differs from tests/fixtures/golden_json.txt (regenerate it with tests/golden_json.sh "
           "> tests/fixtures/golden_json.txt if the change is meant):\n%.1500s", diff);
    return fails;
}

// A JSON string at *p (after its opening quote) into out, unescaped; *p past its closing quote.
static void read_json_string(const char **p, char *out, size_t cap) {
    size_t n = 0;
    const char *q = *p;
    for (; *q && *q != '"'; q++) {
        if (*q == '\\' && q[1]) q++;
        if (n + 1 < cap) out[n++] = *q;
    }
    out[n] = 0;
    *p = *q ? q + 1 : q;
}

// docs/options.md's table of --json's fields is the results schema's, row
// for row (the row a new field needs is printed).
static int test_results_schema_in_docs(void) {
    int fails = 0, rows = 0;
    int s = run_train("--list-results");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--list-results exit: %s", err_buf);
    static char doc[1 << 18], schema[1 << 16];
    snprintf(schema, sizeof schema, "%s", out_buf);
    slurp("docs/options.md", doc, sizeof doc);
    static const char *const keys[] = {"\"path\": \"", "\"type\": \"", "\"unit\": \"", "\"when\": \"", "\"doc\": \""};
    for (const char *line = strstr(schema, "{\"path\""); line; line = strstr(line + 1, "{\"path\"")) {
        char v[5][512];
        const char *p = line;
        for (int k = 0; k < 5; k++) {
            p = strstr(p, keys[k]);
            if (!p) break;
            p += strlen(keys[k]);
            read_json_string(&p, v[k], sizeof v[k]);
        }
        EXPECT(p != NULL, "--list-results: a field without its five keys: %.120s", line);
        if (!p) break;
        for (char *t = v[1]; (t = strstr(t, "|"));) memmove(t + 4, t + 1, strlen(t)), memcpy(t, " or ", 4);
        char row[2700];
        snprintf(row, sizeof row, "| `%s` | %s | %s | %s | %s |\n", v[0], v[1], v[2], v[3], v[4]);
        EXPECT(strstr(doc, row), "docs/options.md's table of --json fields lacks (or differs from) the row\n%s", row);
        rows++;
    }
    EXPECT(rows > 40, "--list-results gave %d fields", rows);
    EXPECT(strstr(schema, "\"attn_distances\": [16, 64, 256]"), "--list-results: the distances: %.200s", schema);
    return fails;
}

// Every field the runs below write is one the schema names, of its type,
// and every field the schema says is always there is (the lab's check,
// lab/pelab_lab/schema.py, run on them): a refused length, a window, the
// attention statistics, the probe, a curve, cats, a task. Skipped without
// python3.
static int test_results_schema_covers_outputs(void) {
    int fails = 0;
    if (system("python3 -c 1 >/dev/null 2>&1") != 0) {
        printf("    no python3: the lab's check of the runs against the schema did not run\n");
        return TEST_SKIPPED;
    }
    ensure_tmpdir();
    static const char *const runs[] = {
        "--data cats --pe learned --ctx 16 --steps 3 --eval-ctx 8,64 --eval-every 2 --json {T}/r0.json",
        "--data cats --pe rope --steps 3 --ctx 32 --eval-ctx 32,128 --eval-window 16 --attn-stats --probe-positions "
        "--json {T}/r1.json",
        "--data task:copy --pe alibi --steps 3 --eval-every 3 --until-solved 0.5 --task-eval 5 --json {T}/r2.json",
    };
    char files[1024] = "";
    for (int i = 0; i < 3; i++) {
        char args[512];
        snprintf(args, sizeof args, "--threads 1 --quiet --d-model 16 --layers 1 --heads 2 %s", runs[i]);
        int s = run_train(args);
        EXPECT(WIFEXITED(s) && (WEXITSTATUS(s) == 0 || WEXITSTATUS(s) == 1), "%s: %s", args, err_buf);
        snprintf(files + strlen(files), sizeof files - strlen(files), " %s/r%d.json", tmpdir, i);
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "PYTHONPATH=lab PELAB_TRAIN=./train python3 -c '"
             "import json, sys\nfrom pelab_lab import schema\nbad = 0\n"
             "for p in sys.argv[1:]:\n"
             "    d = json.load(open(p))\n"
             "    for e in schema.check(d): print(p, e); bad = 1\n"
             "keys = set()\n"
             "for p in sys.argv[1:]:\n"
             "    d = json.load(open(p)); e = d[\"eval\"]\n"
             "    keys |= {k for x in e for k in x}\n"
             "want = {\"error\", \"window\", \"window_loss\", \"attn_sink\", \"attn_far\", \"probe_r2\"}\n"
             "if want - keys: print(\"the runs did not write\", want - keys); bad = 1\n"
             "sys.exit(bad)' %s > %s 2>&1", files, tmp_path("schema.log"));
    int rc = system(cmd);
    static char log[4096];
    slurp(tmp_path("schema.log"), log, sizeof log);
    EXPECT(rc == 0, "the runs against the results schema:\n%s", log);
    return fails;
}

// Every option whose value is a file declares how the run uses it (the
// schema's .path), and the protections walk those rows: each input against
// each output or appended file, named the same, is refused before anything
// is written (exit 2, "the same file"; or the refusal of a combination the
// schema forbids anyway), and the input is left as it was. The options come
// from the table, so a new path option is covered without a list here; one
// with a file metavar and no role fails.
static int test_every_path_option_has_a_role(void) {
    int fails = 0, pairs = 0;
    for (int i = 0; i < settings_count; i++) {
        const setting *s = &settings_schema[i];
        if (s->name && s->metavar && (!strcmp(s->metavar, "FILE") || !strcmp(s->metavar, "SPEC")))
            EXPECT(s->path, "--%s takes a file but declares no path role (.path in run/settings.c)", s->name);
    }
    int s0 = run_train(SMALL " --steps 2 --save {T}/base.ck");
    EXPECT_EXIT(s0, 0, "the base checkpoint: %s", err_buf);
    static unsigned char before[1 << 20], after[1 << 20];
    for (int i = 0; i < settings_count; i++) {
        const setting *in = &settings_schema[i];
        if (in->path != PATH_INPUT) continue;
        unsigned with = !strcmp(in->name, "load") ? WITH_LOAD : !strcmp(in->name, "resume") ? WITH_RESUME
                        : !strcmp(in->name, "init") ? WITH_INIT : 0;
        for (int j = 0; j < settings_count; j++) {
            const setting *out = &settings_schema[j];
            if (out->path != PATH_OUTPUT && out->path != PATH_APPEND) continue;
            if (!strcmp(in->name, "resume") && !strcmp(out->name, "save")) continue;  // continues the run in place
            char cp[512], args[512];
            snprintf(cp, sizeof cp, "cp %s %s", tmp_path("base.ck"), tmp_path("same.ck"));
            EXPECT(system(cp) == 0, "%s", cp);
            FILE *f = fopen(tmp_path("same.ck"), "rb");
            size_t nb = f ? fread(before, 1, sizeof before, f) : 0;
            if (f) fclose(f);
            snprintf(args, sizeof args, "--quiet --threads 1 %s --%s {T}/same.ck --%s {T}/same.ck",
                     with == WITH_LOAD ? "" : with == WITH_RESUME ? "--steps 4" : "--steps 2", in->name, out->name);
            int s = run_train(args);
            int forbidden = (out->refused & with) != 0;
            EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && (forbidden || strstr(err_buf, "are the same file")),
                   "--%s and --%s naming one file: exit %d: %s", in->name, out->name, WEXITSTATUS(s), err_buf);
            f = fopen(tmp_path("same.ck"), "rb");
            size_t na = f ? fread(after, 1, sizeof after, f) : 0;
            if (f) fclose(f);
            EXPECT(na == nb && !memcmp(before, after, nb), "--%s and --%s naming one file: the input changed", in->name,
                   out->name);
            pairs++;
        }
    }
    EXPECT(pairs >= 15, "only %d pairs of path options", pairs);
    // an input named exactly like a stale temporary of an output is the run's, never tidied away
    char cp[512];
    snprintf(cp, sizeof cp, "printf 'the quick brown fox jumps over the lazy dog. %%.0s' $(seq 400) > %s",
             tmp_path("r.ck.pelab-tmp.99999.AbCdEf"));
    EXPECT(system(cp) == 0, "%s", cp);
    int s = run_train(SMALL " --steps 2 --data {T}/r.ck.pelab-tmp.99999.AbCdEf --save {T}/r.ck");
    EXPECT_EXIT(s, 0, "a corpus named like a temporary: %s", err_buf);
    EXPECT(access(tmp_path("r.ck.pelab-tmp.99999.AbCdEf"), F_OK) == 0, "the run removed its own --data, named like a "
           "stale temporary of its --save");
    return fails;
}

// An option that would do nothing, or be overridden without a word, is
// refused (exit 2) and named: a valued option given twice (the last used to
// win: --save a.ck --save b.ck wrote only b.ck), --tokenizer without
// --sample, --attn-stats without --json, and every option of what follows
// training (the schema's SET_AFTER_TRAINING rows) with a --stop-at before
// the end.
static int test_ignored_options_refused(void) {
    int fails = 0;
    child_keeps_repeats = 1;
    int s = run_train(SMALL " --steps 2 --save {T}/a.ck --save {T}/b.ck");
    child_keeps_repeats = 0;
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--save is given twice") &&
           access(tmp_path("a.ck"), F_OK) != 0 && access(tmp_path("b.ck"), F_OK) != 0,
           "--save twice: exit %d: %s", WEXITSTATUS(s), err_buf);
    s = run_train(SMALL " --steps 2 --tokenizer {T}/tok.bin");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--sample"), "--tokenizer without --sample: %s", err_buf);
    s = run_train(SMALL " --steps 2 --attn-stats --out none");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "--json"), "--attn-stats without --json: %s", err_buf);
    int n = 0;
    for (int i = 0; i < settings_count; i++) {
        const setting *st = &settings_schema[i];
        if (!(st->flags & SET_AFTER_TRAINING)) continue;
        char args[512], value[64];
        snprintf(value, sizeof value, "%s", st->type == SET_FLAG ? "" : st->path ? "{T}/out.x"
                                            : st->type == SET_LIST ? "16" : st->type == SET_REAL ? "0.5" : "8");
        if (!strcmp(st->name, "test-len")) snprintf(value, sizeof value, "40:50");
        snprintf(args, sizeof args, SMALL " --steps 4 --stop-at 2 --save {T}/early.ck --%s %s", st->name, value);
        s = run_train(args);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2, "--stop-at with --%s: exit %d: %s", st->name, WEXITSTATUS(s), err_buf);
        n++;
    }
    EXPECT(n >= 10, "only %d options act after training", n);
    return fails;
}

// A list option (--rope-factors, LongRoPE's): kept by a fine-tune's
// checkpoint as [a,b,...], written as a JSON array, overridden at --load and
// then refused with the wrong count; malformed lists, values out of range and
// a list given to a one-value option are refused with the option's name.
static int test_list_option(void) {
    int fails = 0;
    int s = run_train(SMALL " --data cats --pe rope --steps 2 --save {T}/lr0.ck");
    EXPECT_EXIT(s, 0, "base run: %s", err_buf);
    s = run_train("--quiet --threads 2 --init {T}/lr0.ck --ctx 32 --steps 2 --rope-scale longrope "
                  "--rope-factors 1,1.5,3,6.25 --save {T}/lr.ck --json {T}/lr.json");
    EXPECT_EXIT(s, 0, "fine-tune with longrope: %s", err_buf);
    static char text[1 << 16];
    slurp(tmp_path("lr.ck"), text, sizeof text);
    size_t n = 0;
    for (size_t i = 0; i + 40 < sizeof text && !n; i++)
        if (memcmp(text + i, "opt.rope-factors=[1,1.5,3,6.25]\n", 32) == 0) n = 1;
    EXPECT(n, "the checkpoint's settings lack opt.rope-factors=[1,1.5,3,6.25]");
    slurp(tmp_path("lr.json"), text, sizeof text);
    EXPECT(strstr(text, "\"rope_factors\": [1,1.5,3,6.25]"), "--json lacks the list as an array");
    s = run_train("--threads 2 --load {T}/lr.ck --eval-ctx 32");
    EXPECT_EXIT(s, 0, "--load of the fine-tune: %s", err_buf);
    EXPECT(strstr(out_buf, "rope-factors=[1,1.5,3,6.25]"), "the header does not name the list: %.300s", out_buf);
    s = run_train("--threads 2 --load {T}/lr.ck --rope-factors 1,2");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, "4 values, 2 given"), "two factors of four: %s", err_buf);
    static const struct {
        const char *args, *says;
    } bad[] = {
        {"--rope-scale longrope --rope-factors 1,,2,3", "not a list"},
        {"--rope-scale longrope --rope-factors [1,2,3,4", "not a list"},
        {"--rope-scale longrope --rope-factors 1,2,3,0", "value 4 of the list"},
        {"--rope-scale longrope --rope-factors 1,2,inf,4", "not a list"},
        {"--rope-scale longrope", "4 values, 0 given"},
        {"--rope-factors 1,2,3,4", "longrope's"},
        {"--rope-base 1,2", "not a number"},
        {"--rope-scale yarn --rope-high-freq-factor 8", "llama3's"},
        {"--rope-scale llama3 --rope-low-freq-factor 4 --rope-high-freq-factor 2", "must be below"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, SMALL " --data cats --pe rope --steps 1 %s", bad[i].args);
        s = run_train(args);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 2 && strstr(err_buf, bad[i].says), "'%s': exit %d, %s", bad[i].args,
               WEXITSTATUS(s), err_buf);
    }
    return fails;
}

const test_case cli_tests[] = {
    {"cli/ignored_options_refused", test_ignored_options_refused},
    {"cli/every_path_option_has_a_role", test_every_path_option_has_a_role},
    {"cli/results_schema_in_docs", test_results_schema_in_docs},
    {"cli/results_schema_covers_outputs", test_results_schema_covers_outputs},
    {"cli/json_golden", test_json_golden},
    {"cli/validation_by_default", test_validation_by_default},
    {"cli/run_folder", test_run_folder},
    {"cli/rerun_from_record", test_rerun_from_record},
    {"cli/compare_pe_runs", test_compare_pe_runs},
    {"cli/lab_tools_say_what_to_install", test_lab_tools_say_what_to_install},
    {"docs/readme_examples_run", test_readme_examples_run},
    {"cli/list_option", test_list_option},
    {"cli/second_sigint_exits_at_once", test_second_signal_exits_at_once},
    {"files/abandon_leaves_no_temporary", test_abandon_during_writes},
    {"cli/kill_during_save_leaves_loadable_checkpoint", test_kill_during_save},
    {"cli/nan_keeps_last_checkpoint", test_nan_keeps_last_checkpoint},
    {"cli/memory_refusal", test_memory_refusal},
    {"cli/sigint_then_resume_equals_uninterrupted", test_sigint_then_resume},
    {"cli/log_continues_over_resume", test_log_continues_over_resume},
    {"cli/bad_input_table", test_bad_input_table},
    {"cli/help_lists_every_option", test_help_lists_every_option},
    {"cli/help_lists_every_variable", test_help_lists_every_variable},
    {"docs/checkpoint_page_lists_every_tensor", test_checkpoint_page_lists_every_tensor},
    {"docs/code_compiles", test_docs_code_compiles},
    {"cli/options_belong_to_encodings", test_options_belong_to_encodings},
    {"cli/v1_checkpoints_still_load", test_v1_checkpoints_still_load},
    {"cli/resume_checks_the_corpus", test_resume_checks_the_corpus},
    {"cli/sampler_emits_only_text", test_sampler_emits_only_text},
    {"cli/outputs_never_overwrite_inputs", test_outputs_never_overwrite_inputs},
    {"cli/outputs_are_regular_files", test_outputs_are_regular_files},
    {"cli/temporaries_are_safe", test_temporaries_are_safe},
    {"cli/stdout_failures", test_stdout_failures},
    {"cli/signals_at_the_wrong_moment", test_signals_at_the_wrong_moment},
    {"cli/fifo_inputs", test_fifo_inputs},
    {"cli/checkpoints_that_lie", test_checkpoints_that_lie},
    {"cli/options_checked_up_front", test_options_checked_up_front},
    {"cli/memory_counts_cgroup_and_weights", test_memory_counts_cgroup_and_weights},
    {"cli/memory_estimate_first", test_memory_estimate_first},
    {"cli/outputs_checked_before_training", test_outputs_checked_before_training},
    {"cli/json_is_utf8", test_json_is_utf8},
    {"cli/resume_equals_uninterrupted", test_resume_equals_uninterrupted},
    {"cli/resumed_run_continues_its_record", test_resumed_run_continues_its_record},
    {"cli/load_json_and_learned_refusal", test_load_json_and_refusal},
    {"cli/until_solved", test_until_solved},
    {"cli/load_task_keeps_training_sizes", test_load_task_keeps_training_sizes},
    {"cli/nonfinite_eval_fails", test_nonfinite_eval_fails},
    {"cli/replaced_files_keep_their_mode", test_replaced_files_keep_their_mode},
    {"cli/untrusted_font_never_costs_the_picture", test_untrusted_font_never_costs_the_picture},
    {"cli/side_outputs_never_cost_the_model", test_side_outputs_never_cost_the_model},
    {"cli/progress_warns_when_slow", test_progress_warns_when_slow},
    {"cli/evaluations_checked_before_training", test_evaluations_checked_before_training},
    {"cli/text_file", test_text_file},
    {"cli/init_fine_tunes", test_init_fine_tunes},
    {"cli/rand_pos", test_rand_pos},
    {"cli/threads_do_not_change_the_bits", test_threads_same_bits},
    {"cli/threads_do_not_change_the_bits_onednn", test_threads_same_bits_onednn},
    {"cli/bf16_same_bits_same_format", test_bf16},
    {"cli/task_copy_is_learned", test_task_copy_learned},
    {"cli/task_density_on_load", test_task_density_on_load},
    {"cli/llmc_token_shard", test_llmc_shard},
};
const int n_cli_tests = sizeof cli_tests / sizeof cli_tests[0];
