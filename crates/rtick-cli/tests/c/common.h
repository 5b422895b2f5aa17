/* What the test programs share: the monotonic clock in ns, their usage
 * check, and the calling thread pinned to a CPU and made SCHED_FIFO.
 * Included after `#define _GNU_SOURCE` (cpu_set_t); the tests compile
 * these programs with `-I tests/c`. */
#ifndef RTICK_TESTS_COMMON_H
#define RTICK_TESTS_COMMON_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Exits 2 with "usage: TEXT" unless the program has ARGS arguments. */
static inline void usage(int argc, int args, const char *text) {
    if (argc != args + 1) {
        fprintf(stderr, "usage: %s\n", text);
        exit(2);
    }
}

/* Pins the calling thread to CPU: 0, or -1 with errno set. */
static inline int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

/* Pins the calling thread to CPU, or exits 1 saying why. */
static inline void pin_or_exit(int cpu) {
    if (pin(cpu)) {
        perror("sched_setaffinity");
        exit(1);
    }
}

/* Makes the calling thread SCHED_FIFO PRIO, or exits 1 saying why. */
static inline void fifo_or_exit(int prio) {
    struct sched_param p = {.sched_priority = prio};
    if (sched_setscheduler(0, SCHED_FIFO, &p)) {
        perror("sched_setscheduler");
        exit(1);
    }
}

#endif
