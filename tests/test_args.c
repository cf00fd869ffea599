/* test_args.c - the command line's one argument parser (cli/args.c): flags, bounded numbers, choices, positional arguments, usage errors, --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../api/api_priv.h"
#include "../cli/args.h"

static char last_msg[200];
static int usage_calls;

static int usage(const char *msg)
{
    usage_calls++;
    snprintf(last_msg, sizeof last_msg, "%s", msg ? msg : "(help)");
    return 2;
}

typedef struct opts {
    int json;
    long long iters;
    double alpha;
    const char *out;
    int mode;
} opts;

static int parse(opts *o, const char **pos, int *n_pos, int argc, char **argv)
{
    static const char *const modes[] = {"fast", "slow", NULL};
    const so_arg args[] = {
        SO_ARG_FLAG_("--json", &o->json),
        SO_ARG_INT_("--iters", &o->iters, 1, 100, "--iters needs 1..100"),
        SO_ARG_DOUBLE_("--alpha", &o->alpha, 1.0, 2.0, NULL),
        SO_ARG_STR_("-o", &o->out),
        SO_ARG_CHOICE_("--mode", &o->mode, modes, "--mode takes fast or slow"),
        SO_ARG_END,
    };
    memset(o, 0, sizeof *o);
    usage_calls = 0;
    last_msg[0] = 0;
    return so_args_parse(args, argc, argv, pos, 2, n_pos, usage);
}

static void test_values(void **state)
{
    (void)state;
    opts o;
    const char *pos[2];
    int n;
    char *argv[] = {"cmd", "a.onnx", "--json", "--iters", "7", "--alpha", "1.5", "-o", "x", "--mode", "slow", "b", NULL};
    assert_int_equal(parse(&o, pos, &n, 12, argv), 0);
    assert_int_equal(usage_calls, 0);
    assert_int_equal(o.json, 1);
    assert_int_equal(o.iters, 7);
    assert_true(o.alpha == 1.5);
    assert_string_equal(o.out, "x");
    assert_int_equal(o.mode, 1);
    assert_int_equal(n, 2);
    assert_string_equal(pos[0], "a.onnx");
    assert_string_equal(pos[1], "b");
}

static void test_errors(void **state)
{
    (void)state;
    opts o;
    const char *pos[2];
    int n;
    char *bad_int[] = {"cmd", "--iters", "0"};
    assert_int_equal(parse(&o, pos, &n, 3, bad_int), 2);
    assert_string_equal(last_msg, "--iters needs 1..100");
    char *not_num[] = {"cmd", "--alpha", "1.5x"};
    assert_int_equal(parse(&o, pos, &n, 3, not_num), 2);
    assert_string_equal(last_msg, "--alpha: bad value '1.5x'");
    char *missing[] = {"cmd", "-o"};
    assert_int_equal(parse(&o, pos, &n, 2, missing), 2);
    assert_string_equal(last_msg, "-o needs a value");
    char *unknown[] = {"cmd", "--bogus"};
    assert_int_equal(parse(&o, pos, &n, 2, unknown), 2);
    assert_string_equal(last_msg, "unknown option '--bogus'");
    char *choice[] = {"cmd", "--mode", "medium"};
    assert_int_equal(parse(&o, pos, &n, 3, choice), 2);
    assert_string_equal(last_msg, "--mode takes fast or slow");
    char *extra[] = {"cmd", "a", "b", "c"};
    assert_int_equal(parse(&o, pos, &n, 4, extra), 2);
    assert_string_equal(last_msg, "unexpected argument 'c'");
    char *help[] = {"cmd", "a", "--help"};
    assert_int_equal(parse(&o, pos, &n, 3, help), -1);
    assert_string_equal(last_msg, "(help)");
}

/* The library's options on the command line: spelled from superopt_config_option(), values set into the
   config as parsed, flags (--no-reverse sets 0), scope (run takes --profile, optimize does not), the ones
   the command line spells itself left out, a refused value reported with the library's message. */
static void test_config_options(void **state)
{
    (void)state;
    superopt_config *cfg = NULL;
    assert_int_equal(superopt_config_new(&cfg), SUPEROPT_OK);
    int quiet = 0, n = 1, n_pos;
    so_arg args[64] = {SO_ARG_FLAG_("-q", &quiet)};
    assert_int_equal(so_args_config_opts(args, &n, 63, cfg, SUPEROPT_SCOPE_OPTIMIZE), 0);
    args[n] = (so_arg)SO_ARG_END;
    const char *pos[1];
    char *argv[] = {"cmd", "m.onnx", "--time-limit", "3.5", "--no-reverse", "--search", "greedy", "--threads", "4",
                    "--allow-unverified", "--report", "r.json", "-q", NULL};
    usage_calls = 0;
    assert_int_equal(so_args_parse(args, 13, argv, pos, 1, &n_pos, usage), 0);
    assert_int_equal(usage_calls, 0);
    assert_true(cfg->time_limit == 3.5);
    assert_int_equal(cfg->reverse, 0);
    assert_int_equal(cfg->search, 1);
    assert_int_equal(cfg->threads, 4);
    assert_int_equal(cfg->allow_unverified, 1);
    assert_string_equal(cfg->report, "r.json");
    assert_int_equal(quiet, 1);
    char *bad[] = {"cmd", "--alpha", "0.5"};
    assert_int_equal(so_args_parse(args, 3, bad, pos, 1, &n_pos, usage), 2);
    assert_string_equal(last_msg, "option alpha=0.5: expected a number in [1, 100]");
    assert_true(cfg->alpha == 1.05);
    const char *not_here[] = {"--profile", "--progress", "--max-memory", "--input-shape", "--dim", "--reverse"};
    for (size_t i = 0; i < sizeof not_here / sizeof not_here[0]; i++) {
        char *a[] = {"cmd", (char *)not_here[i], "1"};
        assert_int_equal(so_args_parse(args, 3, a, pos, 1, &n_pos, usage), 2);
        assert_non_null(strstr(last_msg, "unknown option"));
    }
    n = 0;
    assert_int_equal(so_args_config_opts(args, &n, 63, cfg, SUPEROPT_SCOPE_SESSION), 0);
    args[n] = (so_arg)SO_ARG_END;
    char *run[] = {"cmd", "--profile", "--reference", "--threads", "2"};
    assert_int_equal(so_args_parse(args, 5, run, pos, 1, &n_pos, usage), 0);
    assert_int_equal(cfg->profile, 1);
    assert_int_equal(cfg->reference, 1);
    assert_int_equal(cfg->threads, 2);
    assert_int_equal(so_args_config_opts(args, &n, n + 1, cfg, SUPEROPT_SCOPE_SESSION), -1);
    superopt_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_values), cmocka_unit_test(test_errors), cmocka_unit_test(test_config_options)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
