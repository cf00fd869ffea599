/* args.c - the one argument parser of the command line (see args.h). */
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

int so_args_config_set(superopt_config *cfg, const char *key, const char *value)
{
    if (!value || superopt_config_set(cfg, key, value) == SUPEROPT_OK) return 0;
    fprintf(stderr, "superopt: %s\n", superopt_config_error(cfg));
    return 1;
}

int so_args_config_pins(superopt_config *cfg, const char *const *pins, int n_pins)
{
    for (int i = 0; i < n_pins; i++)
        if (so_args_config_set(cfg, pins[i][0] == 's' ? "input_shape" : "dim", pins[i] + 2)) return 1;
    return 0;
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
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) {
            snprintf(msg, sizeof msg, "%s needs a value", o->name);
            return usage(o->bad ? o->bad : msg);
        }
        int bad = 0;
        if (o->kind == SO_ARG_INT) bad = so_parse_int(v, o->ilo, o->ihi, (long long *)o->dst);
        else if (o->kind == SO_ARG_DOUBLE) bad = so_parse_double(v, o->dlo, o->dhi, (double *)o->dst);
        else if (o->kind == SO_ARG_CHOICE) {
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
