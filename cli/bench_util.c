/* bench_util.c - bench harness helpers: bounded formatting, files and directories, progress notes, failures. */
#include "bench_priv.h"

const char *const strat_name[N_STRAT] = {"none", "greedy", "backtrack"};

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* printf into a fixed buffer; SO_ERR (with a message) if it does not fit. */
so_status bn_sfmt(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) return so_errorf("path or text too long: '%.60s...'", buf);
    return SO_OK;
}

int bn_is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int bn_is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 if the two files have the same bytes. */
int bn_files_equal(const char *a, const char *c)
{
    struct stat sa, sc;
    if (stat(a, &sa) != 0 || stat(c, &sc) != 0 || sa.st_size != sc.st_size) return 0;
    FILE *fa = fopen(a, "rb"), *fc = fopen(c, "rb");
    int eq = fa && fc;
    static char ba[1 << 16], bc[1 << 16];
    while (eq) {
        size_t ka = fread(ba, 1, sizeof ba, fa), kc = fread(bc, 1, sizeof bc, fc);
        if (ka != kc || memcmp(ba, bc, ka)) eq = 0;
        if (ka == 0) break;
    }
    if (fa) fclose(fa);
    if (fc) fclose(fc);
    return eq;
}

int bn_in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i])) return 1;
    return 0;
}

void bn_sb_xml_str(so_sbuf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '&') so_sbuf_printf(b, "&amp;");
        else if (*s == '<') so_sbuf_printf(b, "&lt;");
        else if (*s == '>') so_sbuf_printf(b, "&gt;");
        else if (*s == '"') so_sbuf_printf(b, "&quot;");
        else so_sbuf_printf(b, "%c", *s);
    }
}

/* Removes a directory tree that this command created (files and subdirectories). */
void bn_rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[PATH_MAX];
            if (bn_sfmt(p, sizeof p, "%s/%s", path, e->d_name) != SO_OK) continue;
            if (bn_is_dir(p)) bn_rm_tree(p);
            else unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}


void bn_note(const bench *b, const char *fmt, ...)
{
    if (b->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench [%5.0fs] ", so_now() - b->t_start);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void bn_record_failure(bench *b, const char *msg)
{
    if (!b->failures) snprintf(b->first_failure, sizeof b->first_failure, "%s", msg);
    b->failures++;
    if (!b->quiet) fprintf(stderr, "bench: FAILED: %s\n", msg);
}

long bn_table_entries(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long n = 0;
    int c, start = 1;
    while ((c = fgetc(f)) != EOF) {
        if (start && c != '#') n++;
        start = c == '\n';
    }
    fclose(f);
    return n;
}
