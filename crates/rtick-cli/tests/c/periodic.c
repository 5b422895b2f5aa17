/* A periodic loop rtick attach is pointed at: the ground truth of its tests.
 *
 *   periodic OUT CYCLES PERIOD_US fifo|other
 *
 * Sleeps until each absolute deadline on CLOCK_MONOTONIC (clock_nanosleep
 * TIMER_ABSTIME), reads the clock just after, and at the end writes one line
 * per cycle to OUT: "planned_ns actual_ns". With "fifo" it runs SCHED_FIFO 50
 * (no timer slack); with "other" it stays SCHED_OTHER with the kernel's
 * default 50 us slack. It waits 300 ms before its first cycle. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: periodic OUT CYCLES PERIOD_US fifo|other\n");
        return 2;
    }
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
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long next = ns(&now) + 300000000LL;
    for (long i = 0; i < cycles; i++) {
        next += period;
        struct timespec t = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        planned[i] = next;
        actual[i] = ns(&now);
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
