/* args.h - the one argument parser of the command line: each command declares its options in a table. */
#ifndef SO_ARGS_H
#define SO_ARGS_H

#include <stdio.h>

typedef enum so_arg_kind {
    SO_ARG_FLAG,   /* no value: *(int *)dst = 1 */
    SO_ARG_INT,    /* integer in [lo, hi]: *(long long *)dst */
    SO_ARG_DOUBLE, /* number in [lo, hi]: *(double *)dst */
    SO_ARG_STR,    /* any value: *(const char **)dst (borrowed from argv) */
    SO_ARG_CHOICE, /* one of the words choices[] (NULL-terminated): *(int *)dst = its index */
    SO_ARG_CONFIG, /* an option of the library: superopt_config_set((superopt_config *)dst, key, set or the value) */
} so_arg_kind;

typedef struct so_arg {
    const char *name;     /* "--iters"; NULL ends the table */
    so_arg_kind kind;
    void *dst;
    long long ilo, ihi;   /* SO_ARG_INT: accepted range */
    double dlo, dhi;      /* SO_ARG_DOUBLE: accepted range */
    const char *bad;      /* usage message when the value is missing or out of range (NULL: a generic one) */
    const char *const *choices; /* SO_ARG_CHOICE */
    const char *key, *set;      /* SO_ARG_CONFIG: the library's key; the value a flag sets (NULL: takes a value) */
} so_arg;

/* Table entries. */
#define SO_ARG_FLAG_(name, dst) {name, SO_ARG_FLAG, dst, 0, 0, 0, 0, NULL, NULL, NULL, NULL}
#define SO_ARG_INT_(name, dst, lo, hi, bad) {name, SO_ARG_INT, dst, lo, hi, 0, 0, bad, NULL, NULL, NULL}
#define SO_ARG_DOUBLE_(name, dst, lo, hi, bad) {name, SO_ARG_DOUBLE, dst, 0, 0, lo, hi, bad, NULL, NULL, NULL}
#define SO_ARG_STR_(name, dst) {name, SO_ARG_STR, dst, 0, 0, 0, 0, NULL, NULL, NULL, NULL}
#define SO_ARG_CHOICE_(name, dst, choices, bad) {name, SO_ARG_CHOICE, dst, 0, 0, 0, 0, bad, choices, NULL, NULL}
#define SO_ARG_END {NULL, SO_ARG_FLAG, NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL}

/* Parses argv[1..argc) against opts. Arguments that do not start with '-' (or are exactly "-")
   are positional and go to pos[0..max_pos) in order; *n_pos receives their count. On a usage
   error (unknown option, bad value, too many positional arguments) returns usage(message), the
   command's own usage printer (it returns the exit status, 2); for --help or -h (unless the table
   has them) prints usage(NULL) and returns -1: the caller exits 0. Else returns 0. */
int so_args_parse(const so_arg *opts, int argc, char **argv, const char **pos, int max_pos, int *n_pos, int (*usage)(const char *msg));

/* A command's usage printer: msg NULL (--help) prints text on stdout; else "superopt: msg" and text on
   stderr. Returns 2 (so_args_parse turns the --help case into exit 0). */
int so_args_usage(const char *text, const char *msg);

/* The library's options on the command line (the run and optimize commands are clients of api/): the
   command line declares none of them; it spells each option of superopt_config_option() in `scope` and
   in SUPEROPT_SCOPE_BOTH as "--" + its key with '-' for '_' ("time_limit": --time-limit VALUE); a 0|1
   option is a flag: "--KEY" sets 1, or "--no-KEY" sets 0 when its default is 1. Left out: the ones the
   command line spells itself (input_shape, dim, max_memory: every command, cli/main.c; progress: -q).
   so_args_config_opts appends these entries (SO_ARG_CONFIG, values set into cfg as they are parsed; a
   refused value is a usage error with the library's message) to opts[*n..cap) and returns 0, or -1 when
   cap is too small (the command then fails). so_args_config_usage prints a command's usage: head, the options as
   "[--alpha A] [--search backtrack|greedy|none] ..." wrapped, then tail (as so_args_usage: msg NULL on
   stdout, else "superopt: msg" and the text on stderr; returns 2). */
struct superopt_config;
int so_args_config_opts(so_arg *opts, int *n, int cap, struct superopt_config *cfg, int scope);
int so_args_config_usage(const char *head, int scope, const char *tail, const char *msg);
/* Prints just the options' items, wrapped at 100 columns, each line starting with indent. */
void so_args_config_items(FILE *f, int scope, const char *indent);

/* so_args_config_pins applies the command line's --input-shape / --dim pins ("s:NAME=D0,..." /
   "d:SYMBOL=N", cli/main.c) to cfg. On a refused value prints "superopt: <the library's message>" and
   returns 1; else 0. */
int so_args_config_pins(struct superopt_config *cfg, const char *const *pins, int n_pins);

#endif
