/* common.c - thread-local error messages, checked allocation and a growing text buffer. */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static _Thread_local char err_buf[1024];

size_t so_max_alloc_bytes = (size_t)8 << 30; /* 8 GiB default */
static atomic_size_t mem_charged;

so_status so_mem_charge(size_t bytes, const char *what)
{
    size_t cur = atomic_load(&mem_charged);
    do {
        if (bytes > so_max_alloc_bytes || cur > so_max_alloc_bytes - bytes)
            return so_errorc(SO_ERR_LIMIT, "%s: %zu more bytes would bring the memory held for the model to %.0f bytes, over the --max-memory limit of %zu bytes",
                             what, bytes, (double)cur + (double)bytes, so_max_alloc_bytes);
    } while (!atomic_compare_exchange_weak(&mem_charged, &cur, cur + bytes));
    return SO_OK;
}

void so_mem_release(size_t bytes) { atomic_fetch_sub(&mem_charged, bytes); }

size_t so_mem_charged(void) { return atomic_load(&mem_charged); }

static _Thread_local so_status err_code;

static so_status set_error(so_status code, const char *fmt, va_list ap)
{
    /* formatted aside first: callers pass so_error() (err_buf itself) as an argument */
    char tmp[sizeof err_buf];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(err_buf, tmp, sizeof tmp);
    err_code = code;
    return code;
}

so_status so_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    so_status st = set_error(SO_ERR, fmt, ap);
    va_end(ap);
    return st;
}

so_status so_errorc(so_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    so_status st = set_error(code == SO_OK ? SO_ERR : code, fmt, ap);
    va_end(ap);
    return st;
}

so_status so_error_code(void) { return err_code; }

const char *so_status_name(so_status st)
{
    static const char *const names[SO_STATUS_COUNT] = {"ok", "error", "unsupported", "parse error", "over a limit", "i/o error"};
    return (unsigned)st < SO_STATUS_COUNT ? names[st] : "unknown status";
}

so_status so_error_prefix(const char *prefix)
{
    char tmp[sizeof err_buf];
    size_t n = strlen(prefix);
    if (n > sizeof tmp / 2) n = sizeof tmp / 2;
    memcpy(tmp, prefix, n);
    memcpy(tmp + n, ": ", 2);
    size_t m = strlen(err_buf);
    if (m > sizeof tmp - n - 3) m = sizeof tmp - n - 3;
    memcpy(tmp + n + 2, err_buf, m);
    tmp[n + 2 + m] = 0;
    memcpy(err_buf, tmp, sizeof err_buf);
    return err_code == SO_OK ? SO_ERR : err_code;
}

const char *so_error(void) { return err_buf; }

static void oom(size_t n)
{
    fprintf(stderr, "superopt: out of memory (allocating %zu bytes)\n", n);
    exit(1);
}

void *so_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *so_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size);
    return p;
}

void *so_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

#define HUGE_PAGE ((size_t)2 << 20)

void *so_big_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE) return aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
    if (bytes > SIZE_MAX - HUGE_PAGE) return NULL;
    const size_t n = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = aligned_alloc(HUGE_PAGE, n);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

long so_heap_hugepages_calls;

void so_heap_hugepages(void)
{
    so_heap_hugepages_calls++;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (!strstr(line, "[heap]") || sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
        const uintptr_t a = ((uintptr_t)lo + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1), b = (uintptr_t)hi & ~(uintptr_t)(HUGE_PAGE - 1);
        if (b <= a) continue;
        (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
        (void)madvise((void *)a, b - a, 25); /* MADV_COLLAPSE (Linux 6.1; older kernels: EINVAL, nothing done) */
    }
    fclose(f);
#endif
}

void *so_weight_alloc(size_t bytes, int zero)
{
    if (bytes > SIZE_MAX - SO_WEIGHT_ALIGN) return NULL;
    size_t n = bytes ? (bytes + SO_WEIGHT_ALIGN - 1) / SO_WEIGHT_ALIGN * SO_WEIGHT_ALIGN : SO_WEIGHT_ALIGN;
    void *p = aligned_alloc(SO_WEIGHT_ALIGN, n);
    if (p && zero) memset(p, 0, n);
    return p;
}

void *so_weight_xalloc(size_t bytes, int zero)
{
    void *p = so_weight_alloc(bytes, zero);
    if (!p) oom(bytes);
    return p;
}

char *so_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = so_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void so_sbuf_printf(so_sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->s && (size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        b->s = so_xrealloc(b->s, cap);
        b->cap = cap;
    }
}

int so_size_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return 1;
    *out = a * b;
    return 0;
}

int so_i64_mul(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

so_status so_read_file_exact(const char *path, void *buf, size_t n)
{
    /* O_NONBLOCK so that opening a FIFO does not wait for a writer; refused below anyway. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return so_errorc(SO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    so_status st = SO_OK;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = so_errorc(SO_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    if (sb.st_size < 0 || (unsigned long long)sb.st_size != (unsigned long long)n) {
        st = so_errorf("%s: expected %zu bytes (float32 model inputs back to back), file has %lld", path, n,
                       (long long)sb.st_size);
        goto done;
    }
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r <= 0) {
            st = so_errorc(SO_ERR_IO, "%s: read error after %zu of %zu bytes: %s", path, got, n, r < 0 ? strerror(errno) : "file shrank");
            goto done;
        }
        got += (size_t)r;
    }
done:
    close(fd);
    return st;
}

FILE *so_open_regular(const char *path, struct stat *sb)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway);
       on a regular file the flag changes nothing, it is cleared all the same */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        so_errorc(SO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (!sb) sb = &st;
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
        close(fd);
        so_errorc(SO_ERR_IO, "%s: cannot open: not a regular file", path);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        so_errorc(SO_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    return f;
}

so_status so_read_file(const char *path, char **out, size_t *len) { return so_read_file_max(path, so_max_alloc_bytes, out, len); }

so_status so_read_file_max(const char *path, size_t max, char **out, size_t *len)
{
    struct stat sb;
    FILE *f = so_open_regular(path, &sb);
    if (!f) return so_error_code();
    if (sb.st_size > 0 && (unsigned long long)sb.st_size > max) {
        fclose(f);
        return so_errorc(SO_ERR_LIMIT, "%s: file of %lld bytes exceeds the limit of %zu bytes", path, (long long)sb.st_size, max);
    }
    size_t cap = 4096, n = 0;
    char *buf = so_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) buf = so_xrealloc(buf, cap *= 2);
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0) break;
        if (n > max) { /* grew while read, or a size-0 /proc-style file */
            fclose(f);
            free(buf);
            return so_errorc(SO_ERR_LIMIT, "%s: file exceeds the limit of %zu bytes", path, max);
        }
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return so_errorc(SO_ERR_IO, "%s: read error", path);
    }
    buf[n] = 0;
    *out = buf;
    if (len) *len = n;
    return SO_OK;
}

int so_parse_bytes(const char *s, size_t *out)
{
    if (!s || *s < '0' || *s > '9') return 1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0) return 1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b')) end += 2;
    else if (end[0] == 'B' || end[0] == 'b') end++;
    if (*end) return 1;
    if (v > (SIZE_MAX >> shift)) return 1;
    *out = (size_t)v << shift;
    return 0;
}

double so_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double so_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t so_rng_next(uint64_t *state) { return so_mix64(*state += 0x9E3779B97F4A7C15ull); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void so_sort_doubles(double *v, size_t n)
{
    if (n > 1) qsort(v, n, sizeof *v, cmp_double);
}

double so_median(const double *v, size_t n)
{
    if (!n) return NAN;
    double *t = so_xmalloc(n * sizeof *t);
    memcpy(t, v, n * sizeof *t);
    so_sort_doubles(t, n);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return m;
}

float so_rng_uniform(uint64_t *state)
{
    /* 24 random bits -> [0,1) exactly representable, then to [-1,1) */
    return (float)(so_rng_next(state) >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}

void so_rng_fill(uint64_t *state, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = so_rng_uniform(state);
}

/* ---- output files (see common.h) ---- */

/* Temporaries that exist right now, for the signal handler: tmp_paths[i] is valid while
   tmp_used[i] is 1. Slots are claimed under tmp_lock (ordinary code); the handler only reads
   the flags and calls unlink, which is async-signal-safe. */
enum { TMP_SLOTS = 16 };
static char tmp_paths[TMP_SLOTS][sizeof ((so_atomic *)0)->tmp];
static atomic_int tmp_used[TMP_SLOTS];
static pthread_mutex_t tmp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t tmp_once = PTHREAD_ONCE_INIT;

static void tmp_cleanup_signal(int sig)
{
    int saved = errno;
    for (int i = 0; i < TMP_SLOTS; i++)
        if (atomic_load(&tmp_used[i])) unlink(tmp_paths[i]);
    errno = saved;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void tmp_install_handlers(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < SO_ARRAY_LEN(sigs); k++) {
        struct sigaction old;
        if (sigaction(sigs[k], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue; /* handled or ignored: leave it */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = tmp_cleanup_signal;
        sigfillset(&sa.sa_mask);
        sigaction(sigs[k], &sa, NULL);
    }
}

static int tmp_register(const char *tmp)
{
    pthread_once(&tmp_once, tmp_install_handlers);
    int slot = -1;
    pthread_mutex_lock(&tmp_lock);
    for (int i = 0; i < TMP_SLOTS && slot < 0; i++)
        if (!atomic_load(&tmp_used[i])) {
            snprintf(tmp_paths[i], sizeof tmp_paths[i], "%s", tmp);
            atomic_store(&tmp_used[i], 1); /* seq_cst: the path is written before the flag */
            slot = i;
        }
    pthread_mutex_unlock(&tmp_lock);
    return slot; /* -1 (table full): still written, just not cleaned up on a signal */
}

static void tmp_unregister(int slot)
{
    if (slot >= 0) atomic_store(&tmp_used[slot], 0);
}

so_status so_atomic_open(so_atomic *a, const char *path, const char *mode)
{
    a->f = NULL;
    a->direct = 0;
    a->slot = -1;
    a->dest[0] = a->tmp[0] = 0;
    if (!path[0]) return so_errorf("output path is empty");
    const char *dest = path;
    struct stat sb;
    int fd = -1;
    mode_t keep_mode = 0;
    if (lstat(path, &sb) == 0) {
        int link = S_ISLNK(sb.st_mode);
        if (link && stat(path, &sb) != 0) return so_errorc(SO_ERR_IO, "%s: cannot write through symbolic link: %s", path, strerror(errno));
        if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)) {
            /* straight to the device or pipe; O_NONBLOCK so that a FIFO without a reader fails
               (ENXIO) instead of waiting, then cleared for the writes */
            fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
            if (fd < 0)
                return so_errorc(SO_ERR_IO, "%s: cannot write: %s", path, errno == ENXIO ? "a FIFO with no reader" : strerror(errno));
            int fl = fcntl(fd, F_GETFL);
            if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            a->f = fdopen(fd, mode);
            if (!a->f) {
                int e = errno;
                close(fd);
                return so_errorc(SO_ERR_IO, "%s: cannot write: %s", path, strerror(e));
            }
            a->direct = 1;
            snprintf(a->dest, sizeof a->dest, "%s", path);
            return SO_OK;
        }
        if (S_ISDIR(sb.st_mode)) return so_errorc(SO_ERR_IO, "%s: cannot write: is a directory", path);
        if (!S_ISREG(sb.st_mode)) return so_errorc(SO_ERR_IO, "%s: cannot write: not a regular file, character device or pipe", path);
        keep_mode = sb.st_mode & 07777;
        if (link) { /* replace the link's target, not the link */
            char real[PATH_MAX];
            if (!realpath(path, real)) return so_errorc(SO_ERR_IO, "%s: cannot resolve symbolic link: %s", path, strerror(errno));
            if (snprintf(a->dest, sizeof a->dest, "%s", real) >= (int)sizeof a->dest) return so_errorf("%s: path too long", path);
            dest = a->dest;
        }
    } else if (errno != ENOENT) {
        return so_errorc(SO_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    }
    if (dest != a->dest && snprintf(a->dest, sizeof a->dest, "%s", path) >= (int)sizeof a->dest) return so_errorf("%s: path too long", path);
    if (snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", a->dest, (long)getpid()) >= (int)sizeof a->tmp)
        return so_errorf("%s: path too long", path);
    a->slot = tmp_register(a->tmp);
    unlink(a->tmp); /* a leftover of an earlier process with this pid */
    fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        tmp_unregister(a->slot);
        a->slot = -1;
        return so_errorc(SO_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    if (keep_mode) fchmod(fd, keep_mode); /* best effort: the replaced file's permissions */
    a->f = fdopen(fd, mode);
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(a->tmp);
        tmp_unregister(a->slot);
        a->slot = -1;
        return so_errorc(SO_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return SO_OK;
}

so_status so_atomic_commit(so_atomic *a, const char *path, int ok)
{
    if (!a->f) return so_errorc(SO_ERR_IO, "%s: not open for writing", path);
    if (ferror(a->f)) ok = 0;
    int saved = errno;
    if (fclose(a->f) != 0) ok = 0, saved = errno;
    a->f = NULL;
    if (a->direct) {
        if (!ok) return so_errorc(SO_ERR_IO, "%s: write error: %s", path, strerror(saved));
        return SO_OK;
    }
    so_status st = SO_OK;
    if (!ok) {
        unlink(a->tmp);
        st = so_errorc(SO_ERR_IO, "%s: write error: %s", path, strerror(saved));
    } else if (rename(a->tmp, a->dest) != 0) {
        saved = errno;
        unlink(a->tmp);
        st = so_errorc(SO_ERR_IO, "%s: cannot rename into place: %s", path, strerror(saved));
    }
    tmp_unregister(a->slot);
    a->slot = -1;
    return st;
}

so_status so_write_file_atomic(const char *path, const void *data, size_t n)
{
    so_atomic a;
    so_status st = so_atomic_open(&a, path, "wb");
    if (st != SO_OK) return st;
    int ok = fwrite(data, 1, n, a.f) == n;
    return so_atomic_commit(&a, path, ok);
}

static uint64_t exe_hash;
static pthread_once_t exe_once = PTHREAD_ONCE_INIT;

static void exe_hash_init(void)
{
    FILE *f = fopen("/proc/self/exe", "rb");
    if (!f) return;
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset(s);
    char *buf = so_xmalloc(65536);
    size_t n;
    while ((n = fread(buf, 1, 65536, f)) > 0) XXH3_64bits_update(s, buf, n);
    exe_hash = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    free(buf);
    fclose(f);
}

int so_cache_dir(const char *given, char *buf, size_t n)
{
    if (given) {
        if (!given[0]) return 0;
        snprintf(buf, n, "%s", given);
        return 1;
    }
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (x && x[0]) snprintf(buf, n, "%s/superopt", x);
    else if (h && h[0]) snprintf(buf, n, "%s/.cache/superopt", h);
    else return 0;
    return 1;
}

int so_mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

uint64_t so_exe_hash(void)
{
    pthread_once(&exe_once, exe_hash_init);
    return exe_hash;
}

int so_parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 1;
    *out = v;
    return 0;
}

int so_parse_doubles(const char *s, double *out, int max, double lo, double hi)
{
    int n = 0;
    while (*s) {
        char *e;
        errno = 0;
        double v = strtod(s, &e);
        if (errno || e == s || !(v >= lo && v <= hi) || n == max) return -1;
        out[n++] = v;
        if (*e == ',') e++;
        else if (*e) return -1;
        s = e;
    }
    return n;
}

int so_parse_double(const char *s, double lo, double hi, double *out)
{
    double v;
    if (strchr(s, ',') || so_parse_doubles(s, &v, 1, lo, hi) != 1) return 1;
    *out = v;
    return 0;
}

/* so_copy_file_unchanged: see common.h. src == dst is safe: the open input keeps the old file while the
   temporary is renamed over it. */
so_status so_copy_file_unchanged(const char *src, const struct stat *at_load, const char *dst)
{
    struct stat st;
    FILE *in = so_open_regular(src, &st);
    if (!in) return SO_ERR_IO; /* the message names src */
    if (st.st_dev != at_load->st_dev || st.st_ino != at_load->st_ino || st.st_size != at_load->st_size ||
        st.st_mtim.tv_sec != at_load->st_mtim.tv_sec || st.st_mtim.tv_nsec != at_load->st_mtim.tv_nsec) {
        fclose(in);
        return so_errorc(SO_ERR_IO, "%s: the input file changed while it was being optimized; nothing written", src);
    }
    so_atomic out;
    if (so_atomic_open(&out, dst, "wb") != SO_OK) {
        fclose(in);
        return SO_ERR_IO;
    }
    enum { CHUNK = 1 << 20 };
    char *buf = so_xmalloc(CHUNK);
    long long total = 0;
    int ok = 1;
    for (;;) {
        size_t k = fread(buf, 1, CHUNK, in);
        if (k && fwrite(buf, 1, k, out.f) != k) ok = 0;
        total += (long long)k;
        if (k < CHUNK || !ok) break;
    }
    const int read_err = ferror(in) || total != (long long)st.st_size;
    free(buf);
    fclose(in);
    if (read_err) {
        so_atomic_commit(&out, dst, 0);
        return so_errorc(SO_ERR_IO, "%s: cannot read the input to write it unchanged (%lld of %lld bytes); nothing written", src, total,
                         (long long)st.st_size);
    }
    return so_atomic_commit(&out, dst, ok); /* a write error: the message names dst and the errno */
}
