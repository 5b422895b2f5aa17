/* A periodic loop rtick attach is pointed at: the ground truth of its tests.
 *
 *   periodic OUT CYCLES PERIOD_US fifo|other [realtime]
 *
 * Sleeps until each absolute deadline on CLOCK_MONOTONIC (CLOCK_REALTIME
 * with "realtime") with clock_nanosleep TIMER_ABSTIME, reads the clock just
 * after, and at the end writes one line per cycle to OUT: "planned_ns
 * actual_ns", in CLOCK_MONOTONIC time (a CLOCK_REALTIME time less the
 * offset read at the start, so only the matching, not the lateness, rests
 * on that read). With "fifo" it runs SCHED_FIFO 50
 * (no timer slack); with "other" it stays SCHED_OTHER with the kernel's
 * default 50 us slack. It waits 300 ms before its first cycle. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

/* CLOCK_REALTIME − CLOCK_MONOTONIC, read between two monotonic reads. */
static long long realtime_offset(void) {
    struct timespec a, r, b;
    long long best = -1, off = 0;
    for (int i = 0; i < 10; i++) {
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        long long span = ns(&b) - ns(&a);
        if (best < 0 || span < best) {
            best = span;
            off = ns(&r) - ns(&a) - span / 2;
        }
    }
    return off;
}

int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "realtime") == 0)) {
        fprintf(stderr, "usage: periodic OUT CYCLES PERIOD_US fifo|other [realtime]\n");
        return 2;
    }
    clockid_t clock = argc == 6 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    long long offset = argc == 6 ? realtime_offset() : 0;
    long cycles = atol(argv[2]);
    long long period = atoll(argv[3]) * 1000LL;
    if (strcmp(argv[4], "fifo") == 0) {
        struct sched_param sp = {.sched_priority = 50};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            perror("sched_setscheduler");
            return 1;
        }
    } else {
        prctl(PR_SET_TIMERSLACK, 50000UL, 0, 0, 0);
    }
    long long *planned = calloc(cycles, sizeof *planned), *actual = calloc(cycles, sizeof *actual);
    struct timespec now;
    clock_gettime(clock, &now);
    long long next = ns(&now) + 300000000LL;
    for (long i = 0; i < cycles; i++) {
        next += period;
        struct timespec t = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        while (clock_nanosleep(clock, TIMER_ABSTIME, &t, NULL) != 0) {
        }
        clock_gettime(clock, &now);
        planned[i] = next - offset;
        actual[i] = ns(&now) - offset;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    for (long i = 0; i < cycles; i++)
        fprintf(f, "%lld %lld\n", planned[i], actual[i]);
    return fclose(f) == 0 ? 0 : 1;
}
