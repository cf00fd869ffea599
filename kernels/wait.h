/* wait.h - adaptive OpenMP wait policy: libgomp's long spin while the machine is quiet, its short spin while our threads wait for a CPU. */
#ifndef SO_WAIT_H
#define SO_WAIT_H

#include "../src/common.h"

/* Why (kernels/README.md "Wait policy"): at 2 threads a run enters ~50-120 OpenMP regions. A waiting thread spins
   GOMP_SPINCOUNT pause instructions, then sleeps on a futex; waking it costs a system call and, in a VM, an IPI to a
   halted vCPU. On a quiet machine a long spin (the CLI's 200,000, ~6 ms) keeps both threads awake through a run; under
   load the same spin holds a core while the thread it waits for sits in the run queue (3-10x slower runs). libgomp
   reads the spin count once, at load, but switches every wait to a short spin (its "throttled" count: 100, or
   GOMP_SPINCOUNT if lower) while it manages more threads than there are CPUs (libgomp's documentation of
   GOMP_SPINCOUNT). The executor measures, per run, how long its calling thread sat runnable in the run queue
   (/proc/thread-self/schedstat); while that share is high, a parked thread of ours holds an idle OpenMP pool of
   omp_get_num_procs() threads (they sleep on a futex, using no CPU), which makes libgomp spin short everywhere in the
   process (ours and oneDNN's regions). Results do not depend on it: only how threads wait changes. */

/* The decision, a pure function of the measured windows (tested alone). A window closes once it covers at least
   SO_WAIT_WINDOW_S of wall time; its share = run-queue delay / wall. Quiet -> throttled when a window's share is over
   SO_WAIT_LOAD_HI; throttled -> quiet after SO_WAIT_QUIET_WINDOWS windows in a row under SO_WAIT_LOAD_LO. */
#define SO_WAIT_WINDOW_S 0.002
#define SO_WAIT_LOAD_HI 0.10
#define SO_WAIT_LOAD_LO 0.04
#define SO_WAIT_QUIET_WINDOWS 4

typedef struct so_wait_window {
    double wall_s, delay_s; /* accumulated over the open window */
    int throttled;          /* the decision after the last closed window */
    int quiet_run;          /* consecutive closed windows under SO_WAIT_LOAD_LO while throttled */
} so_wait_window;

/* Adds wall_s seconds of wall time during which the thread waited delay_s seconds for a CPU; returns w->throttled
   (changed only when a window closes). Negative or non-finite inputs are ignored. */
int so_wait_window_add(so_wait_window *w, double wall_s, double delay_s);

/* Called by the executor after each run (and each plan-time timing repetition) at >= 2 threads: reads the calling
   thread's run-queue delay since its last call and applies the window's decision. Cheap (one pread). Does nothing
   when the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT (their policy stands) or SUPEROPT_ADAPTIVE_WAIT=0; when the
   thread's schedstat cannot be read, the spin stays throttled (the load-safe choice). Thread-safe. */
void so_wait_tick(void);

/* Whether the short spin is in force now (the idle pool is held). */
int so_wait_throttled(void);

/* Sets the throttle directly (tests, benchmarks); returns SO_ERR when the holding thread cannot be started. The
   adaptive ticks may change it again. */
so_status so_wait_set_throttled(int on);

/* Process-wide counts of so_wait_tick calls that adapted (runs, timing repetitions) and of those after which the short
   spin was in force (what `superopt run --json` reports as short_spin_runs / wait_runs). */
void so_wait_counts(long *ticks, long *short_ticks);

/* Whether so_wait_tick adapts in this process (see above). */
int so_wait_adaptive(void);

#endif
