/* args.h - the one argument parser of the command line: each command declares its options in a table. */
#ifndef SO_ARGS_H
#define SO_ARGS_H

typedef enum so_arg_kind {
    SO_ARG_FLAG,   /* no value: *(int *)dst = 1 */
    SO_ARG_INT,    /* integer in [lo, hi]: *(long long *)dst */
    SO_ARG_DOUBLE, /* number in [lo, hi]: *(double *)dst */
    SO_ARG_STR,    /* any value: *(const char **)dst (borrowed from argv) */
    SO_ARG_CHOICE, /* one of the words choices[] (NULL-terminated): *(int *)dst = its index */
} so_arg_kind;

typedef struct so_arg {
    const char *name;     /* "--iters"; NULL ends the table */
    so_arg_kind kind;
    void *dst;
    long long ilo, ihi;   /* SO_ARG_INT: accepted range */
    double dlo, dhi;      /* SO_ARG_DOUBLE: accepted range */
    const char *bad;      /* usage message when the value is missing or out of range (NULL: a generic one) */
    const char *const *choices; /* SO_ARG_CHOICE */
} so_arg;

/* Table entries. */
#define SO_ARG_FLAG_(name, dst) {name, SO_ARG_FLAG, dst, 0, 0, 0, 0, NULL, NULL}
#define SO_ARG_INT_(name, dst, lo, hi, bad) {name, SO_ARG_INT, dst, lo, hi, 0, 0, bad, NULL}
#define SO_ARG_DOUBLE_(name, dst, lo, hi, bad) {name, SO_ARG_DOUBLE, dst, 0, 0, lo, hi, bad, NULL}
#define SO_ARG_STR_(name, dst) {name, SO_ARG_STR, dst, 0, 0, 0, 0, NULL, NULL}
#define SO_ARG_CHOICE_(name, dst, choices, bad) {name, SO_ARG_CHOICE, dst, 0, 0, 0, 0, bad, choices}
#define SO_ARG_END {NULL, SO_ARG_FLAG, NULL, 0, 0, 0, 0, NULL, NULL}

/* Parses argv[1..argc) against opts. Arguments that do not start with '-' (or are exactly "-")
   are positional and go to pos[0..max_pos) in order; *n_pos receives their count. On a usage
   error (unknown option, bad value, too many positional arguments) returns usage(message), the
   command's own usage printer (it returns the exit status, 2); for --help or -h (unless the table
   has them) prints usage(NULL) and returns -1: the caller exits 0. Else returns 0. */
int so_args_parse(const so_arg *opts, int argc, char **argv, const char **pos, int max_pos, int *n_pos, int (*usage)(const char *msg));

/* A command's usage printer: msg NULL (--help) prints text on stdout; else "superopt: msg" and text on
   stderr. Returns 2 (so_args_parse turns the --help case into exit 0). */
int so_args_usage(const char *text, const char *msg);

/* The library's options from the command line (the run and optimize commands, clients of api/):
   so_args_config_set sets key=value (value NULL: nothing), so_args_config_pins the command line's
   --input-shape / --dim pins ("s:NAME=D0,..." / "d:SYMBOL=N", cli/main.c). On a refused value both
   print "superopt: <the library's message>" and return 1; else 0. */
struct superopt_config;
int so_args_config_set(struct superopt_config *cfg, const char *key, const char *value);
int so_args_config_pins(struct superopt_config *cfg, const char *const *pins, int n_pins);

#endif
