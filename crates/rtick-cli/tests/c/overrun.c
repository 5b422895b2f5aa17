/* A 1 kHz SCHED_FIFO 50 loop on a periodic timerfd that overruns: every
 * 50th cycle computes 1.3 ms, so the next expiry fires while it is busy
 * and its next read returns at once. Usage: overrun CYCLES. Prints the
 * reads, the expiries they consumed and the reads that found more than one. */
#define _GNU_SOURCE
#include "common.h"
#include <stdint.h>
#include <sys/timerfd.h>
#include <unistd.h>

int main(int argc, char **argv) {
    usage(argc, 1, "overrun CYCLES");
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
        if (i % 50 == 49) {
            long long e = now() + 1300000;
            while (now() < e)
                ;
        }
    }
    printf("reads %ld ticks %ld reads-with-more %ld\n", reads, ticks, more);
    return 0;
}
