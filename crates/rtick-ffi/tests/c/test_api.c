/* The C API from C: every entry point, bad input included. Exit 0 when all
 * checks pass; prints the first failure otherwise. */
#include <errno.h>
#include <linux/capability.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* A loop and an rt guard used from a thread that did not create them, while
 * the loop's thread is blocked in rtick_periodic_wait (holding the loop):
 * every call is refused with RTICK_ERR_THREAD and changes nothing. Then a
 * signal handler interrupts that wait and calls into the same loop: refused
 * the same way, since the loop is in use further up the thread's stack. */
struct foreign_args {
    rtick_periodic *p;
    rtick_rt_guard *g;
    pthread_t owner;
    pid_t owner_tid;
    atomic_int waiting; /* the owner is about to call rtick_periodic_wait */
};

/* The state letter of a thread in /proc ('R' running, 'S' sleeping …). */
static char thread_state(pid_t tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f) return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *close = strrchr(buf, ')');
    return close && close[1] == ' ' ? close[2] : '?';
}

static rtick_periodic *sig_loop;
static volatile sig_atomic_t sig_in_wait, sig_ran, sig_message_ok;
static volatile int sig_status[6];

static void on_usr1(int sig) {
    (void)sig;
    int saved = errno;
    rtick_telemetry tel;
    rtick_tick t;
    int64_t corr = 0;
    if (!sig_in_wait) {
        sig_ran = -1; /* too late: the wait had returned */
        errno = saved;
        return;
    }
    sig_status[0] = rtick_periodic_set_period(sig_loop, 2000000);
    sig_status[1] = rtick_periodic_shift(sig_loop, 1000);
    sig_status[2] = rtick_periodic_sync(sig_loop, 0, &corr);
    sig_status[3] = rtick_periodic_telemetry(sig_loop, &tel);
    sig_status[4] = rtick_periodic_wait(sig_loop, &t);
    sig_status[5] = rtick_periodic_free(sig_loop);
    sig_message_ok = strstr(rtick_last_error_message(), "inside another rtick call on the loop") != NULL;
    sig_ran = 1;
    errno = saved;
}

static void *foreign(void *arg) {
    struct foreign_args *a = arg;
    /* Wait until the owner sleeps inside rtick_periodic_wait: the flag says
     * it is about to call it, the kernel says when it sleeps. */
    while (!atomic_load(&a->waiting)) sched_yield();
    while (thread_state(a->owner_tid) != 'S') sched_yield();
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
    /* Still asleep in the wait: now the signal handler's turn. */
    CHECK(thread_state(a->owner_tid) == 'S');
    CHECK(pthread_kill(a->owner, SIGUSR1) == 0);
    return NULL;
}

/* Drops CAP_IPC_LOCK from the calling process, so RLIMIT_MEMLOCK applies. */
static int drop_ipc_lock(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0) return -1;
    d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
    return (int)syscall(SYS_capset, &h, d);
}

/* The process's mapped memory in bytes (VmSize): what mlockall locks. */
static size_t vm_size(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
    }
    if (f) fclose(f);
    return kb * 1024;
}

/* A heap prefault beyond RLIMIT_MEMLOCK, without CAP_IPC_LOCK: mlockall
 * succeeds, the prefault's allocation cannot, and that is an error naming
 * the limit (it was an abort). In a child, as it changes the process. */
static void heap_prefault_beyond_memlock(void) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit lim;
        if (drop_ipc_lock() != 0 || getrlimit(RLIMIT_MEMLOCK, &lim) != 0) _exit(3);
        /* Room for what is mapped now and a little more (at least 1 MiB, at
         * most 4 MiB, as the hard limit allows), not for the prefault. */
        size_t mapped = vm_size(), want = mapped + (4u << 20);
        if (mapped == 0) _exit(3);
        /* Room for what is mapped now and 4 MiB more, as the hard limit
         * allows (raising it needs CAP_SYS_RESOURCE, which even root may
         * lack in a container). When not even what is mapped fits, mlockall
         * itself fails: an error naming the limit all the same. */
        if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < want) want = lim.rlim_max;
        lim.rlim_cur = want;
        if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0) _exit(4);
        rtick_rt_config rt;
        rtick_rt_config_init(&rt);
        rt.lock_memory = 1;
        rt.heap_prefault = want;
        rt.stack_prefault = 0;
        rtick_rt_guard *g = NULL;
        int s = rtick_rt_apply(&rt, &g);
        const char *msg = rtick_last_error_message();
        if (s != RTICK_OK && g == NULL && strstr(msg, "RLIMIT_MEMLOCK") != NULL) _exit(0);
        fprintf(stderr, "heap prefault beyond RLIMIT_MEMLOCK: status %d, message: %s\n", s, msg);
        _exit(1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "heap prefault child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    CHECK(rtick_block_timer_signals() == RTICK_OK);
    /* First, while this is the only thread (it forks). */
    heap_prefault_beyond_memlock();

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
    /* Every number is checked, with a message naming the field: a negative
     * hybrid slack is an error, not auto (which is RTICK_HYBRID_SLACK_AUTO). */
    CHECK(cfg.hybrid_slack_ns == RTICK_HYBRID_SLACK_AUTO);
    cfg.hybrid_slack_ns = -5;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID && p == NULL);
    CHECK(strstr(rtick_last_error_message(), "hybrid_slack_ns -5 is negative") != NULL);
    cfg.mechanism = RTICK_MECH_HYBRID;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID && p == NULL);
    cfg.mechanism = RTICK_MECH_CLOCK_NANOSLEEP;
    cfg.hybrid_slack_ns = RTICK_HYBRID_SLACK_AUTO;
    cfg.period_ns = INT64_MAX;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID && p == NULL);
    CHECK(strstr(rtick_last_error_message(), "period_ns 9223372036854775807 is out of range") != NULL);
    cfg.period_ns = 500000;
    cfg.start = RTICK_START_AT;
    cfg.start_ns = -1;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "start_ns -1") != NULL);
    cfg.start_ns = INT64_MAX;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    cfg.start = RTICK_START_NOW;
    cfg.start_ns = 0;
    cfg.sync_kp = NAN;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "sync_kp") != NULL);
    cfg.sync_kp = -0.5;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    cfg.sync_kp = 0.1;
    cfg.sync_ki = INFINITY;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "sync_ki") != NULL);
    cfg.sync_ki = 0.01;
    cfg.sync_max_step_ns = -1;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "sync_max_step_ns -1") != NULL);
    cfg.sync_max_step_ns = 5000;
    cfg.sync_offset_ns = INT64_MIN;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_ERR_INVALID && p == NULL);
    CHECK(strstr(rtick_last_error_message(), "sync_offset_ns") != NULL);
    cfg.sync_offset_ns = 0;
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
    rt.priority = 5; /* a priority without a policy */
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID && g == NULL);
    CHECK(strstr(rtick_last_error_message(), "priority 5 without a policy") != NULL);
    rt.priority = 0;
    uint32_t cpu0 = 0;
    rt.cpus = &cpu0;
    rt.n_cpus = SIZE_MAX; /* more than any affinity: never read */
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID && g == NULL);
    CHECK(strstr(rtick_last_error_message(), "n_cpus") != NULL);
    rt.cpus = NULL;
    rt.n_cpus = 0;
    /* Prefaults are bounded: the heap by physical memory, the stack by this
     * thread's stack (it was an abort and a stack overflow). */
    rt.lock_memory = 1;
    rt.heap_prefault = SIZE_MAX;
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID && g == NULL);
    CHECK(strstr(rtick_last_error_message(), "MiB of physical memory") != NULL);
    rt.heap_prefault = 8u << 20;
    rt.stack_prefault = SIZE_MAX;
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_ERR_INVALID && g == NULL);
    CHECK(strstr(rtick_last_error_message(), "left on this thread's stack") != NULL);
    rt.stack_prefault = 256u << 10;
    rt.lock_memory = 0;
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

    /* Thread-bound: a loop and a guard refuse every call from another thread
     * and from a signal handler while this thread waits on the loop (a long
     * period: the other thread has a second to make its calls), and still
     * work in their own thread afterwards. */
    CHECK(rtick_rt_apply(&rt, &g) == RTICK_OK);
    cfg.period_ns = 1000000000;
    CHECK(rtick_periodic_create(&cfg, NULL, &p) == RTICK_OK);
    cfg.period_ns = 500000;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    sig_loop = p;
    struct foreign_args fa = {p, g, pthread_self(), getpid(), 0};
    pthread_t ft;
    CHECK(pthread_create(&ft, NULL, foreign, &fa) == 0);
    sig_in_wait = 1;
    atomic_store(&fa.waiting, 1);
    rtick_tick own;
    CHECK(rtick_periodic_wait(p, &own) == RTICK_OK && own.cycle == 0);
    sig_in_wait = 0;
    CHECK(pthread_join(ft, NULL) == 0);
    CHECK(sig_ran == 1); /* -1: the signal came after the wait */
    for (int i = 0; i < 6; i++) CHECK(sig_status[i] == RTICK_ERR_THREAD);
    CHECK(sig_message_ok);
    signal(SIGUSR1, SIG_DFL);
    CHECK(rtick_periodic_set_period(p, 500000) == RTICK_OK);
    CHECK(rtick_periodic_wait(p, &own) == RTICK_OK && own.cycle == 1);
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
    CHECK(rtick_periodic_set_period(p, INT64_MAX) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "period_ns") != NULL);
    CHECK(rtick_periodic_shift(p, INT64_MAX) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "would move the next deadline") != NULL);
    CHECK(rtick_periodic_shift(p, INT64_MIN) == RTICK_ERR_INVALID);
    CHECK(rtick_periodic_sync(p, INT64_MIN, NULL) == RTICK_ERR_INVALID);
    CHECK(strstr(rtick_last_error_message(), "reference_ns") != NULL);

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
    /* The first wait may itself overrun on a loaded machine (the host can
     * stall this VM for longer than a period): that is reported the same
     * way, and a later wait is on time. */
    int rc_wait, tries = 0;
    while ((rc_wait = rtick_periodic_wait(p, &t)) == RTICK_ERR_OVERRUN && ++tries < 100) {
    }
    CHECK(rc_wait == RTICK_OK);
    struct timespec late = {0, 35000000};
    nanosleep(&late, NULL);
    CHECK(rtick_periodic_wait(p, &t) == RTICK_ERR_OVERRUN);
    CHECK(strstr(rtick_last_error_message(), "overrun") != NULL);
    tries = 0;
    while ((rc_wait = rtick_periodic_wait(p, &t)) == RTICK_ERR_OVERRUN && ++tries < 100) {
    }
    CHECK(rc_wait == RTICK_OK && t.missed >= 1);
    rtick_periodic_free(p);

    printf("c_api: %d checks passed\n", checks);
    return 0;
}
