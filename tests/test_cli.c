// test_cli.c — the command line as a user meets it: every bad option, value,
// combination or file exits with status 2 (usage) or 1 (runtime), names the
// problem on stderr, and is never killed by a signal; and the good paths
// (resume, load, json, refusal per length) do what the README says.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cli/options.h"
#include "test.h"

static char tmpdir[64];
static const char *child_env;        // "NAME=value" for the next run, or NULL
static int child_signal_after_ms;    // > 0: send SIGINT that long after starting
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
    argv[argc] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(tmp_path("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(tmp_path("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1), dup2(e, 2);
        if (child_env) putenv((char *)child_env);
        execv("./train", argv);
        _exit(127);
    }
    int status = 0;
    if (child_signal_after_ms > 0) {
        usleep((useconds_t)child_signal_after_ms * 1000);
        kill(pid, SIGINT);
    }
    waitpid(pid, &status, 0);
    slurp(tmp_path("stdout"), out_buf, sizeof out_buf);
    slurp(tmp_path("stderr"), err_buf, sizeof err_buf);
    return status;
}

#define SMALL "--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --quiet --threads 2"

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

static int test_bad_input_table(void) {
    int fails = 0;
    ensure_tmpdir();
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
        {"--ctx", 2, "--ctx"},
        {"stray", 2, "stray"},
        {"--eval-ctx 64,,x", 2, "--eval-ctx"},
        {"--temperature 0", 2, "--temperature"},
        {"--threads 0", 2, "--threads"},
        {"--seed -1", 2, "--seed"},
        {"--warmup -1", 2, "--warmup"},
        {"--clip -1", 2, "--clip"},
        {"--sin-scale 0", 2, "--sin-scale"},
        {"--save-every 5", 2, "--save"},
        {"--load {T}/good.ck --resume {T}/good.ck", 2, "--load"},
        {"--attn bidir --sample 5", 2, "--sample"},
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
        snprintf(args, sizeof args, SMALL " --steps 2 %s", cases[i].args);
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
    printf("    %d bad-input cases\n", ncases);
    return fails;
}

// --help, --list-pe and the README's options table list every option of the
// table and of every encoding, and every encoding of the registry: all read
// from the same tables, so a new option or encoding cannot be left out.
static int test_help_lists_every_option(void) {
    int fails = 0;
    int s = run_train("--help");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--help exit");
    static char help[1 << 16], readme[1 << 18];
    snprintf(help, sizeof help, "%s", out_buf);
    FILE *f = fopen("README.md", "r");
    size_t n = f ? fread(readme, 1, sizeof readme - 1, f) : 0;
    readme[n] = '\0';
    if (f) fclose(f);
    const char *table = strstr(readme, "### Options");
    const char *table_end = table ? strstr(table + 1, "\n## ") : NULL;
    EXPECT(table != NULL, "README.md has no '### Options' section");
    char names[128][48];
    int count = 0;
    for (int i = 0; i < cli_option_count && count < 128; i++) snprintf(names[count++], 48, "--%s", cli_options[i].name);
    for (int e = 0; e < pe_registry_count; e++)
        for (int k = 0; pe_registry[e]->options && pe_registry[e]->options[k].name && count < 128; k++)
            snprintf(names[count++], 48, "--%s", pe_registry[e]->options[k].name);
    for (int i = 0; i < count; i++) {
        char word[64];
        snprintf(word, sizeof word, "%.40s ", names[i]);
        EXPECT(strstr(help, word) || strstr(help, names[i]), "--help lacks %s", names[i]);
        snprintf(word, sizeof word, "`%.40s", names[i]);
        const char *at = table ? strstr(table, word) : NULL;
        EXPECT(at && (!table_end || at < table_end), "README's options table lacks %s", names[i]);
    }
    s = run_train("--list-pe");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--list-pe exit");
    for (int e = 0; e < n_test_encodings; e++) {  // a line that starts with the name
        char line[80];
        snprintf(line, sizeof line, "\n%s ", test_encodings[e]);
        EXPECT(strncmp(out_buf, line + 1, strlen(line + 1)) == 0 || strstr(out_buf, line), "--list-pe lacks %s", test_encodings[e]);
    }
    s = run_train("--version");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "pelab"), "--version");
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
        snprintf(a, sizeof a, "--quiet --threads 1 --resume tests/fixtures/v1_%s.ck --save {T}/resumed.ck --eval-ctx 16", names[i]);
        s = run_train(a);
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "v1 %s does not resume: %s", names[i], err_buf);
        double resumed = -1, fresh = -2;
        if ((l = strstr(out_buf, "eval ctx=16 loss="))) sscanf(l, "eval ctx=16 loss=%lf", &resumed);
        snprintf(a, sizeof a, "--d-model 16 --layers 1 --heads 2 --ctx 16 --batch 4 --quiet --threads 1 --seed 5 --pe %s --steps 20",
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

// The sampler never emits [MASK] or cats' padding, even from an untrained model.
static int test_sampler_emits_only_text(void) {
    int fails = 0;
    int s = run_train("--quiet --threads 2 --steps 0 --sample 400 --seed 3");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample: the"), "sampling: %s", err_buf);
    EXPECT(!strstr(out_buf, "<mask>") && !strstr(out_buf, "<pad>"), "the sample holds a special token: %.300s", strstr(out_buf, "sample:"));
    return fails;
}

static int file_equal(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
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
        EXPECT(!file_equal(tmp_path("full.ck"), tmp_path("part.ck")), "the stopped run should differ before resuming");
        s = run_train("--quiet --threads 2 --resume {T}/part.ck --save {T}/part.ck");
        EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "resume: %s", err_buf);
        EXPECT(file_equal(tmp_path("full.ck"), tmp_path("part.ck")), "pe=%s: resumed checkpoint differs from the uninterrupted one", pes[i]);
    }
    return fails;
}

// --load reproduces the trained model's evaluation; --json holds the README's keys;
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
                          "\"seconds\"", "\"eval\"", "\"ctx\"", "\"loss\"", "\"ppl\"", "\"order\"", "\"acc\"", "\"n\""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) EXPECT(strstr(json, keys[i]), "json lacks %s", keys[i]);
    s = run_train("--quiet --threads 2 --load {T}/l.ck --eval-ctx 16");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "--load exit: %s", err_buf);
    EXPECT(first[0] && strstr(out_buf, first), "--load gives '%.60s', training gave '%s'", out_buf, first);
    s = run_train("--quiet --threads 2 --load {T}/l.ck --sample 8 --prompt the");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0 && strstr(out_buf, "sample: the"), "sampling: %s %s", out_buf, err_buf);
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

// SIGINT mid-run: exit 130 after saving; resuming gives the same bytes as a
// run that was never interrupted.
static int test_sigint_then_resume(void) {
    int fails = 0;
    const char *args = "--d-model 32 --layers 2 --heads 2 --ctx 32 --batch 8 --quiet --threads 2 --steps 600";
    char a[512];
    snprintf(a, sizeof a, "%s --save {T}/whole.ck", args);
    int s = run_train(a);
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "uninterrupted run: %s", err_buf);
    snprintf(a, sizeof a, "%s --save {T}/int.ck", args);
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
    s = run_train("--quiet --threads 2 --resume {T}/int.ck --save {T}/int.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "resume: %s", err_buf);
    EXPECT(file_equal(tmp_path("whole.ck"), tmp_path("int.ck")), "interrupted at step %ld and resumed: differs from the uninterrupted run", at);
    return fails;
}

// Starts, in the background, a long run that saves {T}/name every step.
static pid_t start_saving_run(const char *name, const char *threads) {
    ensure_tmpdir();
    pid_t pid = fork();
    if (pid == 0) {
        int o = open("/dev/null", O_WRONLY);
        dup2(o, 1), dup2(o, 2);
        execl("./train", "./train", "--d-model", "32", "--layers", "2", "--heads", "2", "--ctx", "32", "--batch", "4",
              "--threads", threads, "--quiet", "--steps", "100000", "--save-every", "1", "--save", tmp_path(name),
              (char *)NULL);
        _exit(127);
    }
    return pid;
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
    char stale[64], live[64];
    snprintf(stale, sizeof stale, "kill.ck.tmp.%ld", (long)gone);
    snprintf(live, sizeof live, "kill.ck.tmp.%ld", (long)getpid());
    char stale_path[512], live_path[512];
    snprintf(stale_path, sizeof stale_path, "%s", tmp_path(stale));
    snprintf(live_path, sizeof live_path, "%s", tmp_path(live));
    fclose(fopen(stale_path, "w"));
    fclose(fopen(live_path, "w"));
    int s = run_train(SMALL " --steps 2 --save {T}/kill.ck");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "saving run: %s", err_buf);
    EXPECT(access(stale_path, F_OK) != 0, "%s was not removed", stale);
    EXPECT(access(live_path, F_OK) == 0, "%s (a live process's) was removed", live);
    unlink(live_path);
    int left = 0;
    DIR *d = opendir(tmp_path(""));
    for (struct dirent *e; d && (e = readdir(d));) left += strncmp(e->d_name, "kill.ck.tmp.", 12) == 0;
    if (d) closedir(d);
    EXPECT(left == 0, "%d temporary files left after the next save", left);
    return fails;
}

// Two SIGINTs in quick succession: the second exits at once (130), and the
// checkpoint on disk, saved every step, still loads.
static int test_second_signal_exits_at_once(void) {
    int fails = 0;
    ensure_tmpdir();
    pid_t pid = start_saving_run("twice.ck", "2");
    usleep(500000);
    kill(pid, SIGINT);
    kill(pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 130, "exit %d, signal %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    int s = run_train("--quiet --threads 1 --load {T}/twice.ck --eval-tokens 64");
    EXPECT(WIFEXITED(s) && WEXITSTATUS(s) == 0, "checkpoint does not load after two SIGINTs: %s", err_buf);
    return fails;
}

const test_case cli_tests[] = {
    {"cli/second_sigint_exits_at_once", test_second_signal_exits_at_once},
    {"cli/kill_during_save_leaves_loadable_checkpoint", test_kill_during_save},
    {"cli/nan_keeps_last_checkpoint", test_nan_keeps_last_checkpoint},
    {"cli/memory_refusal", test_memory_refusal},
    {"cli/sigint_then_resume_equals_uninterrupted", test_sigint_then_resume},
    {"cli/bad_input_table", test_bad_input_table},
    {"cli/help_lists_every_option", test_help_lists_every_option},
    {"cli/options_belong_to_encodings", test_options_belong_to_encodings},
    {"cli/v1_checkpoints_still_load", test_v1_checkpoints_still_load},
    {"cli/resume_checks_the_corpus", test_resume_checks_the_corpus},
    {"cli/sampler_emits_only_text", test_sampler_emits_only_text},
    {"cli/resume_equals_uninterrupted", test_resume_equals_uninterrupted},
    {"cli/load_json_and_learned_refusal", test_load_json_and_refusal},
    {"cli/text_file", test_text_file},
};
const int n_cli_tests = sizeof cli_tests / sizeof cli_tests[0];
