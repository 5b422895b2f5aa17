/* The C API from C: every entry point, bad input included. Exit 0 when all
 * checks pass; prints the first failure otherwise. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "rtick.h"

static int checks;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, \
                    __LINE__, #cond, rtick_last_error_message());                    \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static void *reader(void *arg) {
    rtick_telemetry_handle *h = arg;
    rtick_telemetry t;
    for (int i = 0; i < 20; i++) {
        if (rtick_telemetry_snapshot(h, &t) != RTICK_OK) return (void *)1;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* A loop and an rt guard used from a thread that did not create them: every
 * call is refused with RTICK_ERR_THREAD and changes nothing. */
struct foreign_args {
    rtick_periodic *p;
    rtick_rt_guard *g;
};

static void *foreign(void *arg) {
    struct foreign_args *a = arg;
    rtick_tick t;
    rtick_telemetry tel;
    rtick_telemetry_handle *h = NULL;
    int64_t corr = 0;
    CHECK(rtick_periodic_wait(a->p, &t) == RTICK_ERR_THREAD);
    CHECK(strstr(rtick_last_error_message(), "rtick_periodic_wait: called from a thread other than") != NULL);
    CHECK(rtick_periodic_set_period(a->p, 2000000) == RTICK_ERR_THREAD);
    CHECK(rtick_periodic_shift(a->p, 1000) == RTICK_ERR_THREAD);
    CHECK(rtick_periodic_sync(a->p, 0, &corr) == RTICK_ERR_THREAD);
    CHECK(rtick_periodic_telemetry(a->p, &tel) == RTICK_ERR_THREAD);
    CHECK(rtick_periodic_telemetry_handle(a->p, &h) == RTICK_ERR_THREAD && h == NULL);
    CHECK(rtick_periodic_free(a->p) == RTICK_ERR_THREAD);
    CHECK(rtick_rt_restore(a->g) == RTICK_ERR_THREAD);
    CHECK(strstr(rtick_last_error_message(), "rt guard") != NULL);
    return NULL;
}

int main(void) {
    CHECK(rtick_block_timer_signals() == RTICK_OK);

    /* Bad input: NULLs and out-of-range values are errors with a message, never a crash. */
    CHECK(rtick_periodic_config_init(NULL) == RTICK_ERR_INVALID);
    CHECK(strlen(rtick_last_error_message()) > 0);
    rtick_periodic_config cfg;
    CHECK(rtick_periodic_config_init(&cfg) == RTICK_OK);
    CHECK(strlen(rtick_last_error_message()) == 0);
    rtick_periodic *p = NULL;
    CHECK(rtick_periodic_create(&cfg, NULL, NULL) == RTICK_ERR_INVALID);
    cfg.period_ns = 0;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID && p == NULL);
    CHECK(strstr(rtick_last_error_message(), "period") != NULL);
    cfg.period_ns = 500000;
    /* Every enumeration crosses as an int32_t: out of range is an error. */
    cfg.mechanism = 99;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    cfg.mechanism = -1;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "unknown mechanism -1") != NULL);
    cfg.mechanism = RTICK_MECH_CLOCK_NANOSLEEP;
    cfg.clock = 42;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "unknown clock 42") != NULL);
    cfg.clock = RTICK_CLOCK_MONOTONIC;
    cfg.overrun = 3;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "unknown overrun policy 3") != NULL);
    cfg.overrun = RTICK_OVERRUN_SKIP;
    cfg.start = 77;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID && p == NULL);
    CHECK(strstr(rtick_last_error_message(), "unknown start 77") != NULL);
    cfg.start = RTICK_START_NOW;
    CHECK(rtick_periodic_wait(NULL, NULL) == RTICK_ERR_INVALID);
    CHECK(rtick_periodic_set_period(NULL, 1) == RTICK_ERR_INVALID);
    CHECK(rtick_periodic_free(NULL) == RTICK_OK);
    int32_t m = -1;
    CHECK(rtick_mechanism_from_name("hybrid", &m) == RTICK_OK && m == RTICK_MECH_HYBRID);
    CHECK(rtick_mechanism_from_name("teleport", &m) == RTICK_ERR_INVALID);
    CHECK(rtick_mechanism_from_name(NULL, &m) == RTICK_ERR_INVALID);
    int64_t now = 0;
    CHECK(rtick_now_ns(RTICK_CLOCK_MONOTONIC, &now) == RTICK_OK && now > 0);
    CHECK(rtick_now_ns(77, &now) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "unknown clock 77") != NULL);
    CHECK(rtick_now_ns(-1, &now) == RTICK_ERR_INVALID);
    CHECK(rtick_now_ns(RTICK_CLOCK_MONOTONIC, NULL) == RTICK_ERR_INVALID);

    /* Real-time setup: invalid values change nothing; a valid one is restored
     * (as the kernel reports the thread's policy and timer slack). */
    int policy_before = sched_getscheduler(0);
    int slack_before = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    CHECK(policy_before >= 0 && slack_before > 1);
    rtick_rt_config rt;
    CHECK(rtick_rt_config_init(&rt) == RTICK_OK);
    rtick_rt_guard *g = NULL;
    rt.policy = RTICK_POLICY_FIFO;
    rt.priority = 150;
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID && g == NULL);
    rt.priority = 0;
    rt.policy = 4; /* between RTICK_POLICY_BATCH and RTICK_POLICY_IDLE: no such policy */
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID && g == NULL);
    CHECK(strstr(rtick_last_error_message(), "unknown policy 4") != NULL);
    rt.policy = 77;
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID && g == NULL);
    rt.policy = RTICK_POLICY_UNCHANGED;
    rt.n_cpus = 1; /* cpus NULL */
    rt.timer_slack_ns = 1;
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID);
    CHECK(sched_getscheduler(0) == policy_before && prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == slack_before);
    rt.n_cpus = 0;
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_OK && g != NULL);
    CHECK(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == 1);
    CHECK(rtick_rt_restore(g) == RTICK_OK);
    CHECK(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == slack_before);
    CHECK(rtick_rt_restore(NULL) == RTICK_OK);

    /* Thread-bound: a loop and a guard refuse every call from another thread,
     * and still work in their own afterwards. */
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_OK);
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_OK);
    struct foreign_args fa = {p, g};
    pthread_t ft;
    CHECK(pthread_create(&ft, NULL, foreign, &fa) == 0);
    CHECK(pthread_join(ft, NULL) == 0);
    rtick_tick own;
    CHECK(rtick_periodic_wait(p, &own) == RTICK_OK && own.cycle == 0);
    CHECK(rtick_periodic_free(p) == RTICK_OK);
    CHECK(rtick_rt_restore(g) == RTICK_OK);

    /* A real loop: ticks on the grid, period change, shift. It catches up
     * after an overrun, so a stall of a loaded machine leaves the grid exact. */
    cfg.overrun = RTICK_OVERRUN_CATCH_UP;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_OK && p != NULL);
    rtick_telemetry_handle *h = NULL;
    CHECK(rtick_periodic_telemetry_handle(p, &h) == RTICK_OK);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, reader, h) == 0);
    rtick_tick t, first;
    CHECK(rtick_periodic_wait(p, &first) == RTICK_OK && first.cycle == 0);
    uint64_t prev = first.cycle;
    for (int k = 1; k < 20; k++) {
        CHECK(rtick_periodic_wait(p, &t) == RTICK_OK);
        CHECK(t.cycle == prev + 1 && t.missed == 0 && t.clock_step_ns == 0);
        prev = t.cycle;
        CHECK(t.latency_ns == t.woke_ns - t.deadline_ns && t.latency_ns >= 0);
        CHECK((t.deadline_ns - first.deadline_ns) == (int64_t)t.cycle * 500000);
    }
    void *rc;
    CHECK(pthread_join(th, &rc) == 0 && rc == NULL);
    CHECK(rtick_periodic_set_period(p, 1000000) == RTICK_OK);
    rtick_tick a, b;
    CHECK(rtick_periodic_wait(p, &a) == RTICK_OK);
    CHECK(a.deadline_ns - t.deadline_ns == 1000000);
    CHECK(rtick_periodic_shift(p, -3000) == RTICK_OK);
    CHECK(rtick_periodic_wait(p, &b) == RTICK_OK);
    CHECK(b.deadline_ns - a.deadline_ns == 997000);
    CHECK(rtick_periodic_set_period(p, 0) == RTICK_ERR_INVALID);

    /* Sync: a reference reading 300 µs past its cycle boundary asks for more
     * than the 5 µs bound; one 200 µs before it, for the bound the other way. */
    int64_t corr = 0;
    CHECK(rtick_periodic_sync(p, 7 * 1000000LL + 300000, &corr) == RTICK_OK && corr == -5000);
    CHECK(rtick_periodic_sync(p, 9 * 1000000LL - 200000, &corr) == RTICK_OK && corr == 5000);

    rtick_telemetry tel;
    CHECK(rtick_periodic_telemetry(p, &tel) == RTICK_OK);
    CHECK(tel.cycles == 22 && tel.latency.count == 22 && tel.latency.min_ns >= 0);
    CHECK(tel.latency.p50_ns <= tel.latency.p99_ns && tel.latency.p99_ns <= tel.latency.max_ns);
    CHECK(rtick_telemetry_snapshot(h, &tel) == RTICK_OK && tel.cycles == 22);
    rtick_periodic_free(p);
    /* The handle outlives the loop. */
    CHECK(rtick_telemetry_snapshot(h, &tel) == RTICK_OK && tel.cycles == 22);
    rtick_telemetry_handle_free(h);

    /* Overrun with RTICK_OVERRUN_FAIL: being 3 periods late is reported, and
     * the loop goes on, skipping the missed deadlines. The periods are long so
     * that the wait after it is on time even on a loaded machine; should it
     * overrun too, that is reported the same way. */
    cfg.period_ns = 10000000;
    cfg.overrun = RTICK_OVERRUN_FAIL;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_OK);
    CHECK(rtick_periodic_wait(p, &t) == RTICK_OK);
    struct timespec late = {0, 35000000};
    nanosleep(&late, NULL);
    CHECK(rtick_periodic_wait(p, &t) == RTICK_ERR_OVERRUN);
    CHECK(strstr(rtick_last_error_message(), "overrun") != NULL);
    int rc_wait, tries = 0;
    while ((rc_wait = rtick_periodic_wait(p, &t)) == RTICK_ERR_OVERRUN && ++tries < 100) {
    }
    CHECK(rc_wait == RTICK_OK && t.missed >= 1);
    rtick_periodic_free(p);

    printf("c_api: %d checks passed\n", checks);
    return 0;
}
