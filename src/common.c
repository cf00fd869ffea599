/* common.c - thread-local error messages, checked allocation and a growing text buffer. */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static _Thread_local char err_buf[1024];

size_t so_max_alloc_bytes = (size_t)8 << 30; /* 8 GiB default */

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

so_status so_read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return so_errorc(SO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = so_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) buf = so_xrealloc(buf, cap *= 2);
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0) break;
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

so_status so_atomic_open(so_atomic *a, const char *path, const char *mode)
{
    a->f = NULL;
    if (snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof a->tmp)
        return so_errorf("%s: path too long", path);
    a->f = fopen(a->tmp, mode);
    if (!a->f) return so_errorc(SO_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    return SO_OK;
}

so_status so_atomic_commit(so_atomic *a, const char *path, int ok)
{
    if (!a->f) return so_errorf("%s: not open for writing", path);
    if (ferror(a->f)) ok = 0;
    int saved = errno;
    if (fclose(a->f) != 0) ok = 0, saved = errno;
    a->f = NULL;
    if (!ok) {
        remove(a->tmp);
        return so_errorc(SO_ERR_IO, "%s: write error: %s", path, strerror(saved));
    }
    if (rename(a->tmp, path) != 0) {
        saved = errno;
        remove(a->tmp);
        return so_errorc(SO_ERR_IO, "%s: cannot rename into place: %s", path, strerror(saved));
    }
    return SO_OK;
}

so_status so_write_file_atomic(const char *path, const void *data, size_t n)
{
    so_atomic a;
    if (so_atomic_open(&a, path, "wb") != SO_OK) return SO_ERR;
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
