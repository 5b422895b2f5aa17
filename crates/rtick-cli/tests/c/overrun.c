/* A 1 kHz SCHED_FIFO 50 loop on a periodic timerfd that overruns: every
 * EVERY-th cycle (default 50) computes BUSY_US (default 1300) of its own CPU
 * time, so with more than the period the next expiry fires while it is busy
 * and its next read returns at once. Usage: overrun CYCLES [EVERY BUSY_US].
 * Prints the reads, the expiries they consumed and the reads that found
 * more than one. */
#define _GNU_SOURCE
#include "common.h"
#include <stdint.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* The calling thread's CPU time, ns: a preempted busy cycle still does all
 * its work (within 20 us). */
static long long cpu_time(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 4) usage(argc, 1, "overrun CYCLES [EVERY BUSY_US]");
    long every = argc == 4 ? atol(argv[2]) : 50, busy = (argc == 4 ? atol(argv[3]) : 1300) * 1000;
    fifo_or_exit(50);
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    long long start = now() + 300000000LL;
    struct itimerspec it = {{0, 1000000}, {start / 1000000000LL, start % 1000000000LL}};
    if (fd < 0 || timerfd_settime(fd, TFD_TIMER_ABSTIME, &it, 0) != 0) {
        perror("timerfd");
        return 1;
    }
    long n = atol(argv[1]), reads = 0, ticks = 0, more = 0;
    for (long i = 0; i < n; i++) {
        uint64_t k;
        if (read(fd, &k, 8) != 8) {
            perror("read");
            return 1;
        }
        reads++;
        ticks += k;
        more += k > 1;
        if (every > 0 && i % every == every - 1) {
            /* CPU time has no vDSO read: each is a system call (and an
             * event rtick attach records), so it is read every 20 us. */
            long long e = cpu_time() + busy;
            while (cpu_time() < e) {
                long long chunk = now() + 20000;
                while (now() < chunk)
                    ;
            }
        }
    }
    printf("reads %ld ticks %ld reads-with-more %ld\n", reads, ticks, more);
    return 0;
}
