/* args.c - the one argument parser of the command line (see args.h), and the library's options as its client. */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "../api/superopt.h"
#include "../src/common.h"

int so_args_usage(const char *text, const char *msg)
{
    if (msg) fprintf(stderr, "superopt: %s\n", msg);
    fputs(text, msg ? stderr : stdout);
    return 2;
}

int so_args_config_pins(superopt_config *cfg, const char *const *pins, int n_pins)
{
    for (int i = 0; i < n_pins; i++)
        if (superopt_config_set(cfg, pins[i][0] == 's' ? "input_shape" : "dim", pins[i] + 2) != SUPEROPT_OK) {
            fprintf(stderr, "superopt: %s\n", superopt_config_error(cfg));
            return 1;
        }
    return 0;
}

/* The library's options the command line spells itself (see args.h). */
static int cli_own(const char *key)
{
    static const char *const own[] = {"input_shape", "dim", "max_memory", "progress"};
    for (size_t i = 0; i < SO_ARRAY_LEN(own); i++)
        if (!strcmp(key, own[i])) return 1;
    return 0;
}

static int in_scope(const superopt_option *o, int scope) { return o->scope == SUPEROPT_SCOPE_BOTH || (int)o->scope == scope; }

/* A 0|1 option whose default is 1 is spelled --no-KEY (and sets 0). */
static int negated(const superopt_option *o) { return o->type == SUPEROPT_OPTION_FLAG && o->default_value && !strcmp(o->default_value, "1"); }

/* The command-line spelling of library option i, built once into static storage (the command line is single-threaded). */
#define MAX_CONFIG_OPTS 64
static const char *spelling(size_t i)
{
    static char names[MAX_CONFIG_OPTS][48];
    const superopt_option *o = superopt_config_option(i);
    if (i >= MAX_CONFIG_OPTS || !o) return NULL;
    if (!names[i][0]) {
        int len = snprintf(names[i], sizeof names[i], "--%s%s", negated(o) ? "no-" : "", o->key);
        for (int k = 2; k < len && names[i][k]; k++)
            if (names[i][k] == '_') names[i][k] = '-';
    }
    return names[i];
}

int so_args_config_opts(so_arg *opts, int *n, int cap, superopt_config *cfg, int scope)
{
    for (size_t i = 0; superopt_config_option(i); i++) {
        const superopt_option *o = superopt_config_option(i);
        if (!in_scope(o, scope) || cli_own(o->key)) continue;
        if (*n >= cap || !spelling(i)) return -1;
        so_arg a = {spelling(i), SO_ARG_CONFIG, cfg, 0, 0, 0, 0, NULL, NULL, o->key, NULL};
        if (o->type == SUPEROPT_OPTION_FLAG) a.set = negated(o) ? "0" : "1";
        opts[(*n)++] = a;
    }
    return 0;
}

void so_args_config_items(FILE *f, int scope, const char *indent)
{
    int col = 0;
    for (size_t i = 0; superopt_config_option(i); i++) {
        const superopt_option *o = superopt_config_option(i);
        if (!in_scope(o, scope) || cli_own(o->key) || !spelling(i)) continue;
        char item[160];
        int len = o->type == SUPEROPT_OPTION_FLAG ? snprintf(item, sizeof item, "[%s]", spelling(i))
                                                  : snprintf(item, sizeof item, "[%s %s]", spelling(i), o->value);
        if (col && col + 1 + len > 100) {
            fputc('\n', f);
            col = 0;
        }
        col += col ? fprintf(f, " %s", item) : fprintf(f, "%s%s", indent, item);
    }
    if (col) fputc('\n', f);
}

int so_args_config_usage(const char *head, int scope, const char *tail, const char *msg)
{
    FILE *f = msg ? stderr : stdout;
    if (msg) fprintf(stderr, "superopt: %s\n", msg);
    fputs(head, f);
    so_args_config_items(f, scope, "         ");
    fputs(tail, f);
    return 2;
}

int so_args_parse(const so_arg *opts, int argc, char **argv, const char **pos, int max_pos, int *n_pos, int (*usage)(const char *msg))
{
    char msg[160];
    *n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (*n_pos >= max_pos) {
                snprintf(msg, sizeof msg, "unexpected argument '%.60s'", a);
                return usage(msg);
            }
            pos[(*n_pos)++] = a;
            continue;
        }
        const so_arg *o = opts;
        while (o->name && strcmp(o->name, a)) o++;
        if (!o->name && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            usage(NULL);
            return -1;
        }
        if (!o->name) {
            snprintf(msg, sizeof msg, "unknown option '%.60s'", a);
            return usage(msg);
        }
        if (o->kind == SO_ARG_FLAG) {
            *(int *)o->dst = 1;
            continue;
        }
        if (o->kind == SO_ARG_CONFIG && o->set) {
            if (superopt_config_set(o->dst, o->key, o->set) != SUPEROPT_OK) return usage(superopt_config_error(o->dst));
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) {
            snprintf(msg, sizeof msg, "%s needs a value", o->name);
            return usage(o->bad ? o->bad : msg);
        }
        int bad = 0;
        if (o->kind == SO_ARG_INT) bad = so_parse_int(v, o->ilo, o->ihi, (long long *)o->dst);
        else if (o->kind == SO_ARG_DOUBLE) bad = so_parse_double(v, o->dlo, o->dhi, (double *)o->dst);
        else if (o->kind == SO_ARG_CONFIG) {
            if (superopt_config_set(o->dst, o->key, v) != SUPEROPT_OK) return usage(superopt_config_error(o->dst));
        } else if (o->kind == SO_ARG_CHOICE) {
            int k = 0;
            while (o->choices[k] && strcmp(o->choices[k], v)) k++;
            if (o->choices[k]) *(int *)o->dst = k;
            else bad = 1;
        } else *(const char **)o->dst = v;
        if (bad) {
            snprintf(msg, sizeof msg, "%s: bad value '%.60s'", o->name, v);
            return usage(o->bad ? o->bad : msg);
        }
    }
    return 0;
}
