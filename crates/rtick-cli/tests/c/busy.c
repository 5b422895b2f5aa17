/* A thread that takes CPU time to order, for tests/noise.rs.
 *
 * usage: busy CPU fifo|other PRIO BUSY_US PERIOD_US CYCLES
 *
 * Pinned to CPU, as SCHED_FIFO PRIO (or SCHED_OTHER), it spins BUSY_US at
 * the start of each of CYCLES periods of PERIOD_US (absolute deadlines on
 * CLOCK_MONOTONIC) and sleeps the rest. At the end it prints its thread id
 * and the CPU time it ran meanwhile, from its own schedstat (first field,
 * ns): the ground truth a noise attribution is checked against. */
#define _GNU_SOURCE
#include "common.h"
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long long ran(void) {
    long long r = -1;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (f) {
        if (fscanf(f, "%lld", &r) != 1) r = -1;
        fclose(f);
    }
    return r;
}

int main(int argc, char **argv) {
    usage(argc, 6, "busy CPU fifo|other PRIO BUSY_US PERIOD_US CYCLES");
    int cpu = atoi(argv[1]), fifo = !strcmp(argv[2], "fifo"), prio = atoi(argv[3]), cycles = atoi(argv[6]);
    long long busy = atoll(argv[4]) * 1000, period = atoll(argv[5]) * 1000;
    pin_or_exit(cpu);
    if (fifo) fifo_or_exit(prio);
    long long before = ran(), next = now();
    for (int i = 0; i < cycles; i++) {
        long long end = next + busy;
        while (now() < end) {
        }
        next += period;
        struct timespec t = {next / 1000000000LL, next % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL)) {
        }
    }
    printf("%ld %lld\n", (long)syscall(SYS_gettid), ran() - before);
    return 0;
}
