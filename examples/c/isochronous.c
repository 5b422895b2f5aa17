/* A sample isochronous application in C, done right with rtick:
 * 1 ms period, SCHED_FIFO 80 (falling back with a warning without
 * privilege), memory locked, absolute deadlines, overruns counted,
 * statistics printed on exit and on Ctrl-C.
 *
 * Build: gcc -Wall -Werror -O2 isochronous.c $(pkg-config --cflags --libs rtick)
 * Usage: isochronous [--cycles N]                                              */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtick.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

/* The real-time task: a little computation standing for the real work. */
static uint64_t real_time_task(uint64_t cycle) {
    uint64_t a = cycle;
    for (int i = 0; i < 100; i++) a = a * 31 + (uint64_t)i;
    return a;
}

int main(int argc, char **argv) {
    long long cycles = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) {
            char *end;
            cycles = strtoll(argv[++i], &end, 10);
            if (*end || cycles <= 0) {
                fprintf(stderr, "isochronous: --cycles needs a positive whole number\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: isochronous [--cycles N]\n");
            return 2;
        }
    }
    /* Before any thread exists; harmless for clock_nanosleep, needed for signal timers. */
    if (rtick_block_timer_signals() != RTICK_OK) {
        fprintf(stderr, "isochronous: %s\n", rtick_last_error_message());
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rtick_periodic_config cfg;
    rtick_periodic_config_init(&cfg);
    cfg.period_ns = 1000000;
    cfg.start = RTICK_START_ALIGNED;
    rtick_rt_config rt;
    rtick_rt_config_init(&rt);
    rt.policy = RTICK_POLICY_FIFO;
    rt.priority = 80;
    rt.lock_memory = 1;

    rtick_periodic *loop = NULL;
    rtick_status s = rtick_periodic_create(&cfg, &rt, &loop);
    if (s == RTICK_ERR_PERMISSION) {
        fprintf(stderr, "warning: %s; running as SCHED_OTHER without locked memory\n", rtick_last_error_message());
        s = rtick_periodic_create(&cfg, NULL, &loop);
    }
    if (s != RTICK_OK) {
        fprintf(stderr, "isochronous: %s\n", rtick_last_error_message());
        return 1;
    }

    uint64_t sink = 0;
    long long run = 0;
    rtick_tick tick;
    while (!stop && (cycles < 0 || run < cycles)) {
        s = rtick_periodic_wait(loop, &tick);
        if (s != RTICK_OK && s != RTICK_ERR_OVERRUN) {
            fprintf(stderr, "isochronous: %s\n", rtick_last_error_message());
            break;
        }
        sink ^= real_time_task(tick.cycle);
        run++;
    }

    rtick_telemetry t;
    rtick_periodic_telemetry(loop, &t);
    printf("isochronous: %llu cycles of 1 ms; latency min %lld ns, avg %.0f ns, p99 %lld ns, max %lld ns; "
           "execution p99 %lld ns; %llu overruns, %llu missed periods%s (%llx)\n",
           (unsigned long long)t.cycles, (long long)t.latency.min_ns, t.latency.mean_ns,
           (long long)t.latency.p99_ns, (long long)t.latency.max_ns, (long long)t.execution.p99_ns,
           (unsigned long long)t.overruns, (unsigned long long)t.missed, stop ? " (interrupted)" : "",
           (unsigned long long)(sink & 0xf));
    rtick_periodic_free(loop);
    return s == RTICK_OK || s == RTICK_ERR_OVERRUN ? 0 : 1;
}
