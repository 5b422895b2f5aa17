/* A polling thread of an application's, for tests/noise_attach.rs.
 *
 * usage: spin CPU PRIO SECONDS
 *
 * Pinned to CPU as SCHED_FIFO PRIO, it prints its thread id (flushed) and
 * then spins on CLOCK_MONOTONIC for SECONDS, never sleeping: what
 * `rtick noise --attach` follows. */
#define _GNU_SOURCE
#include "common.h"
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    usage(argc, 3, "spin CPU PRIO SECONDS");
    pin_or_exit(atoi(argv[1]));
    fifo_or_exit(atoi(argv[2]));
    printf("%ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    long long end = now() + atoll(argv[3]) * 1000000000LL;
    while (now() < end) {
    }
    return 0;
}
