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

/* Weight data buffers (so_weight.data and every buffer that may become one: initializers, import-time
   constants, folded and layout-made weights) start at a multiple of SO_WEIGHT_ALIGN bytes so that the
   kernels' speed on a weight does not follow the heap's placement (malloc gives 16; a gemv on a weight
   at 48 mod 64 was timed 1.5x slower than at 0). Size rounded up to the alignment; zero != 0 clears it.
   Free with free(). so_weight_alloc returns NULL when memory runs out (sizes from input: the caller
   reports it); so_weight_xalloc aborts like so_xmalloc (internal sizes). */
#define SO_WEIGHT_ALIGN 64
void *so_weight_alloc(size_t bytes, int zero);
void *so_weight_xalloc(size_t bytes, int zero);
/* Buffers an executor reads on every run (activations, kernel scratch, packed weights): 64-byte aligned; one of
   2 MB or more is 2 MB aligned and advised to transparent huge pages (madvise MADV_HUGEPAGE, where the system
   leaves THP to madvise), so streaming it does not walk the page table every 4 KB. Free with free(); NULL when
   memory runs out. */
void *so_big_alloc(size_t bytes);
/* Moves the process heap's 2 MB-aligned ranges onto transparent huge pages now (madvise MADV_HUGEPAGE +
   MADV_COLLAPSE, Linux >= 6.1; nothing where refused or unsupported): the many small packed weights and
   parameters an executor allocates at load live there. A one-time copy at load, for callers that then run the
   model many times (superopt run; API sessions only with the "hugepages" key, since the heap is the host's
   too; kernels/exec.h opts.hugepages). Counts its calls in so_heap_hugepages_calls (tests). */
void so_heap_hugepages(void);
extern long so_heap_hugepages_calls;

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
/* Opens `path` for reading if it is a regular file: opened non-blocking (a FIFO never hangs
   the open), refused unless fstat says regular (FIFO, device, directory, socket), then
   switched back to blocking reads. *sb (may be NULL) receives the fstat. Returns the stream
   (caller fcloses) or NULL with "<path>: cannot open: ..." set. Every input file that must be
   a regular file (model, rules, external data, cost cache) is opened through this. */
struct stat;
FILE *so_open_regular(const char *path, struct stat *sb);
/* Reads the whole regular file `path` (so_open_regular) into *out (malloc'd, NUL-terminated,
   caller frees); *len (may be NULL) is its length without the NUL. At most `max` bytes
   (so_read_file: so_max_alloc_bytes); a larger file is refused. Message: "<path>: cannot
   open: ...", "<path>: file ... exceeds the limit ..." or "<path>: read error". */
so_status so_read_file(const char *path, char **out, size_t *len);
so_status so_read_file_max(const char *path, size_t max, char **out, size_t *len);

/* Output files. What `path` is decides how it is written:
   - a new path or a regular file: atomically, to "<path>.tmp.<pid>" in the same directory,
     renamed into place on commit (a reader sees the old file or the new one; the replaced
     file's permission bits are kept);
   - a symbolic link: followed. A link to a regular file has its target replaced atomically
     as above (the link stays a link, the target stays a regular file); a link to a
     character device or pipe is written straight through; a dangling link is refused;
   - a character device (/dev/null, /dev/full, a terminal) or a pipe/FIFO (/dev/stdout on a
     pipe): opened and written straight, never replaced. A FIFO nobody reads is refused
     (no hang);
   - a directory, socket or block device: refused.
   so_atomic_open returns the open stream (mode "w" or "wb") in a->f, or SO_ERR with a
   message naming `path`; so_atomic_commit closes it and, for the atomic case, renames the
   temporary into place if nothing failed (ok != 0, no write or close error), else removes
   it. A temporary that exists is also removed if SIGINT, SIGTERM or SIGHUP arrives (the
   handler is installed on the first so_atomic_open unless the signal is already handled or
   ignored; it unlinks, then re-raises with the default action). Both free nothing the
   caller owns. */
typedef struct so_atomic {
    FILE *f;
    int direct; /* written straight to a device or pipe: nothing to rename */
    int slot;   /* the temporary's slot in the signal-cleanup table, or -1 */
    char dest[4096];
    char tmp[4096 + 32];
} so_atomic;
so_status so_atomic_open(so_atomic *a, const char *path, const char *mode);
so_status so_atomic_commit(so_atomic *a, const char *path, int ok);
/* Writes n bytes to path atomically (so_atomic_open + fwrite + so_atomic_commit). */
so_status so_write_file_atomic(const char *path, const void *data, size_t n);
/* Copies the regular file `src` to `dst` byte for byte, atomically (so_atomic_open/commit: never a
   half-written dst; src == dst is safe). `src` must still be the file described by `at_load` (its
   stat when it was read: device, inode, size, modification time), else nothing is written and the
   message says "<src>: the input file changed ...". Copied through a fixed 1 MiB buffer, so nothing is
   sized by the file. Used to write an input model unchanged (standard ONNX with no rewrite kept). */
so_status so_copy_file_unchanged(const char *src, const struct stat *at_load, const char *dst);

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

/* The folder of superopt's caches (measured costs, proofs): `given` if not NULL, else
   $XDG_CACHE_HOME/superopt, else $HOME/.cache/superopt. Returns 0 (buf untouched) when there is
   none: given == "" (caching disabled) or neither variable set. */
int so_cache_dir(const char *given, char *buf, size_t n);
/* mkdir -p: creates path and its missing parents (0755). Returns 0, or -1 with errno set. */
int so_mkdir_p(const char *path);

/* Wall-clock seconds from a monotonic clock. */
double so_now(void);
/* CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID): the searches' safety-net
   deadlines, which the machine's load barely moves (a wall-clock limit cut them at a different
   point every run when 20 jobs shared 2 cores). */
double so_cpu_now(void);

/* --max-memory (bytes, default 8 GiB): the limit on the memory a model makes the process hold.
   It bounds each allocation sized by a model (checked where it is made) and, through
   so_mem_charge, the total held at once: the imported weights, run's input/output buffers, the
   executor's activation arena, kernel scratch and packed weights, the numeric check's inputs
   and outputs, the cost model's timing buffers. Bookkeeping that does not grow with the
   model's tensors is not counted. */
extern size_t so_max_alloc_bytes;
/* Adds `bytes` to the total held for the model; SO_ERR (total unchanged) with "<what>: N more
   bytes would bring the memory held for the model to T bytes, over the --max-memory limit of
   L bytes" if the total would exceed so_max_alloc_bytes. so_mem_release gives back what a
   successful charge took, after the free. Thread-safe (an atomic counter). so_mem_charged: the
   current total. */
so_status so_mem_charge(size_t bytes, const char *what);
void so_mem_release(size_t bytes);
size_t so_mem_charged(void);

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
