/* bench_proc.c - bench harness subprocesses: run a command with a timeout capturing its output; SIGINT/SIGTERM handling. */
#include "bench_priv.h"

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

/* ======================================================================================
   subprocesses
   ====================================================================================== */

/* Set by SIGINT/SIGTERM: the running child is killed, no new step starts, the work directory is removed. */
volatile sig_atomic_t bn_interrupted;

void bn_on_signal(int sig)
{
    (void)sig;
    bn_interrupted = 1;
}


void bn_proc_free(proc *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* The last non-empty line of s, trimmed, into buf. */
void bn_last_line(const char *s, char *buf, size_t n)
{
    buf[0] = 0;
    if (!s) return;
    const char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) end--;
    const char *beg = end;
    while (beg > s && beg[-1] != '\n') beg--;
    snprintf(buf, n, "%.*s", (int)(end - beg), beg);
}

static void drain(int fd, so_sbuf *b, int *open_)
{
    char tmp[8192];
    ssize_t k = read(fd, tmp, sizeof tmp);
    if (k > 0) so_sbuf_printf(b, "%.*s", (int)k, tmp);
    else if (k == 0 || (errno != EINTR && errno != EAGAIN)) *open_ = 0;
}

/* Runs argv (argv[0] is a path or a name looked up in PATH) with stdin from /dev/null,
   capturing stdout and stderr; kills it after timeout_s seconds. Fails only when the process
   cannot be started; a non-zero exit is reported in r->code (127: could not execute). */
so_status bn_run_proc(char *const *argv, double timeout_s, proc *r)
{
    memset(r, 0, sizeof *r);
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe(po) != 0 || pipe(pe) != 0) {
        if (po[0] >= 0) {
            close(po[0]);
            close(po[1]);
        }
        return so_errorf("cannot create a pipe: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    double t0 = so_now();
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        return so_errorf("cannot start '%s': %s", argv[0], strerror(errno));
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        execvp(argv[0], argv);
        dprintf(2, "cannot execute '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    so_sbuf out = {0}, err = {0};
    so_sbuf_printf(&out, "%s", "");
    so_sbuf_printf(&err, "%s", "");
    int oo = 1, eo = 1;
    while (oo || eo) {
        double left = timeout_s - (so_now() - t0);
        if (left <= 0 || bn_interrupted) {
            r->timed_out = !bn_interrupted;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd fds[2];
        int nf = 0, io_ = -1, ie = -1;
        if (oo) {
            fds[nf] = (struct pollfd){.fd = po[0], .events = POLLIN};
            io_ = nf++;
        }
        if (eo) {
            fds[nf] = (struct pollfd){.fd = pe[0], .events = POLLIN};
            ie = nf++;
        }
        int k = poll(fds, (nfds_t)nf, (int)(left * 1000 < 1000 ? left * 1000 + 1 : 1000));
        if (k < 0 && errno != EINTR) break;
        if (k <= 0) continue;
        if (io_ >= 0 && fds[io_].revents) drain(po[0], &out, &oo);
        if (ie >= 0 && fds[ie].revents) drain(pe[0], &err, &eo);
    }
    close(po[0]);
    close(pe[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r->seconds = so_now() - t0;
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->out = out.s;
    r->err = err.s;
    return SO_OK;
}

/* One-line description of a failed process into buf. */
void bn_proc_failure(const proc *r, const char *what, double timeout_s, char *buf, size_t n)
{
    char line[300];
    bn_last_line(r->err, line, sizeof line);
    if (r->timed_out) snprintf(buf, n, "%s: killed after %.0f s (timeout)", what, timeout_s);
    else if (r->code == -1) snprintf(buf, n, "%s: killed by a signal%s%s", what, line[0] ? ": " : "", line);
    else snprintf(buf, n, "%s: exit %d: %s", what, r->code, line[0] ? line : "(no message)");
}

int bn_add_pins(const bench *b, char **argv, int k)
{
    for (int i = 0; i < b->n_pins; i++) {
        argv[k++] = b->pins[i][0] == 's' ? "--input-shape" : "--dim";
        argv[k++] = (char *)b->pins[i] + 2;
    }
    return k;
}
