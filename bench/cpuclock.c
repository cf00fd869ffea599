/* cpuclock.c - LD_PRELOAD shim for benchmarks (bench/avx2_vs_before.sh CLOCK=cpu): CLOCK_MONOTONIC readings become the calling thread's CPU time, so `superopt run`'s own per-inference median (any build, old or new) is the CPU time of the thread that runs the inference. Meaningful at --threads 1 only (other threads' work is not counted); it does not see time the process waits, which on a loaded machine is the point. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "clock_gettime");
    if (!real) return -1;
    return real(clk == CLOCK_MONOTONIC ? CLOCK_THREAD_CPUTIME_ID : clk, ts);
}
