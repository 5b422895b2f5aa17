/* TLB shootdowns to order, for tests/noise.rs.
 *
 * usage: shootdown TOUCH_CPU ZAP_CPU PRIO BUSY_US PERIOD_US CYCLES
 *
 * The main thread, pinned to TOUCH_CPU as SCHED_FIFO PRIO, reads every
 * page of a buffer for BUSY_US at the start of each of CYCLES periods of
 * PERIOD_US, and sleeps the rest. Meanwhile a thread pinned to ZAP_CPU
 * unmaps the buffer's pages again and again (madvise MADV_DONTNEED): each
 * time, the kernel flushes them from the TLB of every CPU the process has
 * run on lately, TOUCH_CPU's by an inter-processor interrupt. At the end it
 * prints the main thread's id, the number of zaps and the zapping thread's id. */
#define _GNU_SOURCE
#include "common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGES 16
static char *buf;
static size_t len;
static atomic_int done;
static long zaps;
static atomic_long zapper_tid;

static void *zapper(void *arg) {
    atomic_store(&zapper_tid, (long)syscall(SYS_gettid));
    if (pin(*(int *)arg)) {
        perror("sched_setaffinity (zapper)");
        exit(1);
    }
    while (!atomic_load(&done)) {
        if (madvise(buf, len, MADV_DONTNEED)) {
            perror("madvise");
            exit(1);
        }
        zaps++;
        usleep(20);
    }
    return NULL;
}

int main(int argc, char **argv) {
    usage(argc, 6, "shootdown TOUCH_CPU ZAP_CPU PRIO BUSY_US PERIOD_US CYCLES");
    int cpu = atoi(argv[1]), zap_cpu = atoi(argv[2]), prio = atoi(argv[3]), cycles = atoi(argv[6]);
    long long busy = atoll(argv[4]) * 1000, period = atoll(argv[5]) * 1000;
    len = PAGES * (size_t)sysconf(_SC_PAGESIZE);
    buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    /* Created first, so it stays SCHED_OTHER. */
    pthread_t t;
    if (pthread_create(&t, NULL, zapper, &zap_cpu)) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }
    pin_or_exit(cpu);
    fifo_or_exit(prio);
    volatile char sink = 0;
    long long next = now();
    for (int i = 0; i < cycles; i++) {
        long long end = next + busy;
        while (now() < end) {
            for (size_t o = 0; o < len; o += 4096) sink += buf[o];
        }
        next += period;
        struct timespec ts = {next / 1000000000LL, next % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) {
        }
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("%ld %ld %ld\n", (long)syscall(SYS_gettid), zaps, atomic_load(&zapper_tid));
    return 0;
}
