/* The program bench/attach-overhead.py attaches rtick to: a periodic loop
 * that records its own latency, the ground truth rtick is measured against.
 *
 *   attach_target OUT PERIOD_NS MAX_SECONDS PRIORITY CPU
 *
 * Pinned to CPU, SCHED_FIFO PRIORITY, memory locked and its record
 * pre-faulted (no page fault in the loop), it sleeps until each absolute
 * deadline on CLOCK_MONOTONIC with clock_nanosleep(TIMER_ABSTIME) and reads
 * the clock just after. A wake-up later than the next deadline skips the
 * deadlines already past (each stall counts once, not once per period
 * missed). It runs until SIGTERM or SIGINT, or MAX_SECONDS, then writes OUT:
 * one record per wake-up, two native-endian int64 (planned_ns, actual_ns,
 * CLOCK_MONOTONIC). It starts 100 ms after it is ready.
 *
 * tests/c/periodic.c runs a cycle count fixed in advance; the script's runs
 * end when its last traced stretch does, which it cannot know beforehand. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

static int setup(int priority, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "attach_target: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
        return -1;
    }
    struct sched_param sp = {.sched_priority = priority};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        fprintf(stderr, "attach_target: cannot set SCHED_FIFO %d: %s (run as root)\n", priority, strerror(errno));
        return -1;
    }
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        fprintf(stderr, "attach_target: mlockall: %s\n", strerror(errno));
        return -1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: attach_target OUT PERIOD_NS MAX_SECONDS PRIORITY CPU\n");
        return 2;
    }
    long long period = atoll(argv[2]);
    long long max_secs = atoll(argv[3]);
    int priority = atoi(argv[4]), cpu = atoi(argv[5]);
    if (period <= 0 || max_secs <= 0 || priority < 1 || priority > 99 || cpu < 0) {
        fprintf(stderr, "attach_target: PERIOD_NS and MAX_SECONDS must be positive, PRIORITY 1-99, CPU >= 0\n");
        return 2;
    }
    if (setup(priority, cpu) != 0)
        return 1;
    size_t cap = (size_t)(max_secs * 1000000000LL / period);
    int64_t *rec = malloc(cap * 2 * sizeof *rec);
    if (!rec) {
        fprintf(stderr, "attach_target: no memory for %zu wake-ups\n", cap);
        return 1;
    }
    memset(rec, 0, cap * 2 * sizeof *rec); /* pre-faulted, and locked */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long next = ns(&now) + 100000000LL;
    size_t n = 0;
    while (!stop && n < cap) {
        struct timespec t = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        int e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        if (e == EINTR)
            continue; /* a signal: the loop condition decides */
        clock_gettime(CLOCK_MONOTONIC, &now);
        rec[2 * n] = next;
        rec[2 * n + 1] = ns(&now);
        n++;
        next += period;
        if (next <= ns(&now)) /* overran: the next deadline still ahead */
            next += ((ns(&now) - next) / period + 1) * period;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        fprintf(stderr, "attach_target: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    size_t w = fwrite(rec, 2 * sizeof *rec, n, f);
    if (fclose(f) != 0 || w != n) {
        fprintf(stderr, "attach_target: %s: write failed\n", argv[1]);
        return 1;
    }
    return 0;
}
