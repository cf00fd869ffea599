/* common.h - status codes, the thread-local error message, small helpers shared by every module. */
#ifndef SO_COMMON_H
#define SO_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Every function that can fail returns so_status: SO_OK, or a code that says what happened,
   with a one-line message (no trailing newline) kept per thread and read with so_error().
   Callers that only need "failed" test != SO_OK; every code but SO_OK is a failure. */
typedef enum so_status {
    SO_OK = 0,
    SO_ERR = 1,             /* failure without a more specific code (invalid model, internal error) */
    SO_ERR_UNSUPPORTED = 2, /* valid input we do not handle: an operator, a form, a dtype */
    SO_ERR_PARSE = 3,       /* malformed input text or bytes: rule files, protobuf, JSON */
    SO_ERR_LIMIT = 4,       /* over a limit: --max-memory, sizes, counts */
    SO_ERR_IO = 5,          /* a file could not be opened, read, written or renamed */
    SO_STATUS_COUNT
} so_status;

/* Sets the thread's error message (printf format) and returns SO_ERR. */
so_status so_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same with a specific code: sets the message and returns code. */
so_status so_errorc(so_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The code of the thread's last message (SO_ERR after so_errorf); SO_OK if none was set. */
so_status so_error_code(void);
/* Name of a code: "ok", "error", "unsupported", "parse error", "over a limit", "i/o error". */
const char *so_status_name(so_status st);
/* Prefixes the current message with "prefix: " (e.g. the file name). Returns its code. */
so_status so_error_prefix(const char *prefix);
/* The last message set on this thread; "" if none. Valid until the next so_errorf. */
const char *so_error(void);

/* malloc/calloc/realloc that abort with a message on exhaustion of memory.
   Use for internal bookkeeping only; sizes derived from input must be checked
   (so_size_mul) and allocated with the plain functions so that failure is an error. */
void *so_xmalloc(size_t n);
void *so_xcalloc(size_t n, size_t size);
void *so_xrealloc(void *p, size_t n);
char *so_xstrdup(const char *s);

/* A growing text buffer: zero-initialise it ({0}); s is NUL-terminated once anything has been
   printed, n is its length; the owner frees s. Aborts (as so_xrealloc) when memory runs out. */
typedef struct so_sbuf {
    char *s;
    size_t n, cap;
} so_sbuf;
void so_sbuf_printf(so_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Overflow-checked arithmetic: return 0 on success, 1 on overflow. */
int so_size_mul(size_t a, size_t b, size_t *out);
int so_i64_mul(int64_t a, int64_t b, int64_t *out);

/* Reads exactly n bytes of the regular file `path` into buf (caller owns buf). Fails with a
   one-line message naming the path if the file cannot be opened, is not a regular file
   (directory, FIFO, device) or does not hold exactly n bytes. */
so_status so_read_file_exact(const char *path, void *buf, size_t n);
/* Reads the whole file `path` into *out (malloc'd, NUL-terminated, caller frees); *len (may be
   NULL) is its length without the NUL. Message: "<path>: cannot open: ..." or "<path>: read error". */
so_status so_read_file(const char *path, char **out, size_t *len);

/* Atomic output: every file superopt writes goes to "<path>.tmp.<pid>" in the same
   directory and is renamed into place, so a reader sees the old file or the new one.
   so_atomic_open returns the open temporary (mode "w" or "wb") or NULL with a message;
   so_atomic_commit closes it, and renames it over `path` if nothing failed (ok != 0, no
   write or close error), else removes it. Both free nothing the caller owns. */
typedef struct so_atomic {
    FILE *f;
    char tmp[4096 + 32];
} so_atomic;
so_status so_atomic_open(so_atomic *a, const char *path, const char *mode);
so_status so_atomic_commit(so_atomic *a, const char *path, int ok);
/* Writes n bytes to path atomically (so_atomic_open + fwrite + so_atomic_commit). */
so_status so_write_file_atomic(const char *path, const void *data, size_t n);

/* Parses a byte count for --max-memory: a positive integer with an optional K, M, G or T
   suffix (powers of 1024, optionally followed by "B" or "iB"). Returns 0 on success. */
int so_parse_bytes(const char *s, size_t *out);
/* The number parsers of every command line and file reader. Each accepts the whole string (no
   trailing characters) and returns 0 on success, 1 if s is not a number in [lo, hi] (out
   untouched). so_parse_doubles reads a comma-separated list of at most max numbers and returns
   their count, or -1. */
int so_parse_int(const char *s, long long lo, long long hi, long long *out);
int so_parse_double(const char *s, double lo, double hi, double *out);
int so_parse_doubles(const char *s, double *out, int max, double lo, double hi);

/* Sorts v[0..n) ascending in place. */
void so_sort_doubles(double *v, size_t n);
/* Median of v[0..n) (the mean of the middle two for even n), v left unchanged; NaN when n == 0. */
double so_median(const double *v, size_t n);

/* XXH3 of the running executable (/proc/self/exe), computed once; 0 if it cannot be read.
   Keys what depends on the build: measured costs, generator checkpoints. */
uint64_t so_exe_hash(void);

/* Wall-clock seconds from a monotonic clock. */
double so_now(void);

/* Largest activation/weight allocation we accept from a model (bytes); set by --max-memory. */
extern size_t so_max_alloc_bytes;

#define SO_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SO_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SO_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Deterministic pseudo-random numbers (splitmix64): the same seed gives the same
   stream on every machine. so_rng_uniform returns a float in [-1, 1). */
uint64_t so_rng_next(uint64_t *state);
/* splitmix64's output function: a bijective 64-bit mixer (hashing small integers). */
static inline uint64_t so_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
float so_rng_uniform(uint64_t *state);
/* Fills n floats with so_rng_uniform from state. */
void so_rng_fill(uint64_t *state, float *x, size_t n);

#endif
