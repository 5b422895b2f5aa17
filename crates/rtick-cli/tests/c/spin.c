/* A polling thread of an application's, for tests/noise_attach.rs.
 *
 * usage: spin CPU PRIO SECONDS
 *
 * Pinned to CPU as SCHED_FIFO PRIO, it prints its thread id (flushed) and
 * then spins on CLOCK_MONOTONIC for SECONDS, never sleeping: what
 * `rtick noise --attach` follows. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: spin CPU PRIO SECONDS\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[1]), &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        perror("sched_setaffinity");
        return 1;
    }
    struct sched_param p = {.sched_priority = atoi(argv[2])};
    if (sched_setscheduler(0, SCHED_FIFO, &p)) {
        perror("sched_setscheduler");
        return 1;
    }
    printf("%ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    long long end = now() + atoll(argv[3]) * 1000000000LL;
    while (now() < end) {
    }
    return 0;
}
