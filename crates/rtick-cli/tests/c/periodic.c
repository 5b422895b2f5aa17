/* A periodic program rtick attach is pointed at: the ground truth of its tests.
 *
 *   periodic OUT CYCLES PERIOD_US fifo|other [realtime | MECH[,MECH...]]
 *
 * Each MECH is a thread (named after it) that waits CYCLES times, each
 * wait due PERIOD_US after the last, with its mechanism:
 *
 *   abs            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) (the default)
 *   realtime       the same on CLOCK_REALTIME (alone: "realtime" as before)
 *   rel            clock_nanosleep relative, PERIOD_US each
 *   timerfd        read() on a periodic timerfd
 *   epoll-timerfd  epoll_wait(-1) on a periodic timerfd, then read()
 *   posix          sigwaitinfo() for a periodic POSIX timer's signal (SIGEV_THREAD_ID)
 *   itimer         sigwaitinfo() for SIGALRM of a periodic ITIMER_REAL
 *   futex          FUTEX_WAIT_BITSET with an absolute CLOCK_MONOTONIC timeout
 *   epoll-pipe     epoll_wait with a PERIOD_US/1000 ms timeout on a pipe that a
 *                  thread named "writer" writes every 7 ms
 *
 * One mechanism runs in the process's own thread (its tid is its pid);
 * several each in a thread of its own. "late-MECH" starts that thread 700
 * ms after the others (after an attach begun meanwhile). Each thread reads CLOCK_MONOTONIC just after its call
 * returns; at the end OUT gets a line per wake-up: "TID MECH PLANNED_NS
 * ACTUAL_NS" in CLOCK_MONOTONIC time (a CLOCK_REALTIME time less the offset
 * read at the start, so only the matching, not the lateness, rests on that
 * read). PLANNED is the time the program asked for; for rel and
 * epoll-pipe, whose request the kernel makes from its own clock read inside
 * the call, the program's read just before it plus the period; for itimer,
 * the expiry its grid (read back with getitimer, in whole us) puts next:
 * each a little earlier than the kernel's, never later. An epoll-pipe wake-up by data is "TID event WRITER_TID ACTUAL_NS".
 * With "fifo" the process runs SCHED_FIFO 50 (no timer slack); with
 * "other" it stays SCHED_OTHER with the kernel's default 50 us slack. The
 * first waits are due 300 ms after the start. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16

struct rec {
    long long planned, actual;
    int event;
};

struct thread {
    char mech[32];
    int late, index, tid;
    long n;
    struct rec *recs;
    pthread_t th;
};

static long cycles;
static long long period;
static int pipefd[2];
static volatile int writer_tid, epoll_done;

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }
static struct timespec ts(long long v) { return (struct timespec){.tv_sec = v / 1000000000LL, .tv_nsec = v % 1000000000LL}; }
static long long mono(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return ns(&t);
}
static void die(const char *what) {
    perror(what);
    exit(1);
}

/* CLOCK_REALTIME − CLOCK_MONOTONIC, read between two monotonic reads. */
static long long realtime_offset(void) {
    struct timespec a, r, b;
    long long best = -1, off = 0;
    for (int i = 0; i < 10; i++) {
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        long long span = ns(&b) - ns(&a);
        if (best < 0 || span < best) {
            best = span;
            off = ns(&r) - ns(&a) - span / 2;
        }
    }
    return off;
}

static void add(struct thread *t, long long planned, long long actual, int event) {
    t->recs[t->n++] = (struct rec){planned, actual, event};
}

static void nanosleep_loop(struct thread *t, long long next, int realtime) {
    clockid_t clock = realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    long long offset = realtime ? realtime_offset() : 0;
    next += offset;
    for (long i = 0; i < cycles; i++, next += period) {
        struct timespec d = ts(next), now;
        while (clock_nanosleep(clock, TIMER_ABSTIME, &d, NULL) != 0) {
        }
        clock_gettime(clock, &now);
        add(t, next - offset, ns(&now) - offset, 0);
    }
}

static void rel_loop(struct thread *t) {
    struct timespec d = ts(period);
    for (long i = 0; i < cycles; i++) {
        long long t0 = mono();
        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL) != 0) {
        }
        add(t, t0 + period, mono(), 0);
    }
}

static void timerfd_loop(struct thread *t, long long first, int with_epoll) {
    int fd = timerfd_create(CLOCK_MONOTONIC, 0), ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    struct itimerspec its = {.it_interval = ts(period), .it_value = ts(first)};
    if (fd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) die("timerfd");
    if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) die("timerfd_settime");
    long long done = 0; /* expiries counted so far */
    for (long i = 0; i < cycles; i++) {
        uint64_t ticks;
        long long now = 0;
        if (with_epoll) {
            while (epoll_wait(ep, &ev, 1, -1) != 1) {
            }
            now = mono();
        }
        if (read(fd, &ticks, sizeof ticks) != sizeof ticks) die("read timerfd");
        add(t, first + done * period, with_epoll ? now : mono(), 0);
        done += (long long)ticks;
    }
    close(ep);
    close(fd);
}

static void posix_loop(struct thread *t, long long first) {
    int sig = SIGRTMIN + t->index;
    struct sigevent se = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = sig};
    se._sigev_un._tid = t->tid;
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &se, &timer) != 0) die("timer_create");
    struct itimerspec its = {.it_interval = ts(period), .it_value = ts(first)};
    if (timer_settime(timer, TIMER_ABSTIME, &its, NULL) != 0) die("timer_settime");
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    long long done = 0;
    for (long i = 0; i < cycles; i++) {
        siginfo_t si;
        while (sigwaitinfo(&set, &si) != sig) {
        }
        add(t, first + done * period, mono(), 0);
        done += 1 + si.si_overrun;
    }
    timer_delete(timer);
}

/* The time left on the itimer (whole us, truncated) after `now` read
 * just before asking: the expiry is that or up to a few us later. */
static long long itimer_due(long long *rem) {
    struct itimerval left;
    long long before = mono();
    if (getitimer(ITIMER_REAL, &left) != 0) die("getitimer");
    *rem = left.it_value.tv_sec * 1000000000LL + left.it_value.tv_usec * 1000LL;
    return before + *rem;
}

static void itimer_loop(struct thread *t, long long first_due) {
    /* Armed one period before its first due time: its own phase. */
    struct timespec arm = ts(first_due - period);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &arm, NULL) != 0) {
    }
    struct itimerval v = {.it_interval = {0, period / 1000}, .it_value = {0, period / 1000}};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    long long rem;
    if (setitimer(ITIMER_REAL, &v, NULL) != 0) die("setitimer");
    long long first = itimer_due(&rem); /* its grid, to a us or two early */
    /* SIGALRM carries no overrun count, and the kernel re-arms the timer
     * as the signal is dequeued (to its first expiry after then), so the
     * expiry waited for is asked just before each wait and put on the
     * grid. When it has already expired (1 us left) the call will not
     * sleep: its grid point before now. */
    for (long i = 0; i < cycles; i++) {
        long long due = itimer_due(&rem), k = rem > 1000 ? (due - first + period / 2) / period : (due - first) / period;
        siginfo_t si;
        while (sigwaitinfo(&set, &si) != SIGALRM) {
        }
        add(t, first + k * period, mono(), 0);
    }
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
}

static void futex_loop(struct thread *t, long long next) {
    static uint32_t word; /* never woken: every wait times out */
    for (long i = 0; i < cycles; i++, next += period) {
        struct timespec d = ts(next);
        while (syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &d, NULL, FUTEX_BITSET_MATCH_ANY) == 0
               || errno != ETIMEDOUT) {
        }
        add(t, next, mono(), 0);
    }
}

static void *writer(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "writer");
    writer_tid = gettid();
    struct timespec d = ts(7000000);
    while (!epoll_done) {
        clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL);
        if (write(pipefd[1], "x", 1) != 1) die("write pipe");
    }
    return NULL;
}

static void epoll_pipe_loop(struct thread *t) {
    int ep = epoll_create1(0), ms = period / 1000000 > 0 ? period / 1000000 : 1;
    struct epoll_event ev = {.events = EPOLLIN};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev) != 0) die("epoll");
    pthread_t w;
    if (pthread_create(&w, NULL, writer, NULL) != 0) die("pthread_create writer");
    for (long i = 0; i < cycles; i++) {
        long long t0 = mono();
        int n = epoll_wait(ep, &ev, 1, ms);
        long long now = mono();
        if (n == 1) {
            char c;
            if (read(pipefd[0], &c, 1) != 1) die("read pipe");
            add(t, writer_tid, now, 1);
        } else {
            add(t, t0 + ms * 1000000LL, now, 0);
        }
    }
    epoll_done = 1;
    pthread_join(w, NULL);
}

static long long start_at; /* the first waits of the threads started at once */

static void *run(void *arg) {
    struct thread *t = arg;
    const char *m = t->mech;
    t->tid = gettid();
    if (t->tid != getpid()) prctl(PR_SET_NAME, m);
    /* Each thread its own phase in the period, the late ones from now. */
    long long first = (t->late ? mono() + period : start_at) + t->index * (period / 16);
    if (!strcmp(m, "abs") || !strcmp(m, "realtime"))
        nanosleep_loop(t, first, m[0] == 'r');
    else if (!strcmp(m, "rel"))
        rel_loop(t);
    else if (!strcmp(m, "timerfd") || !strcmp(m, "epoll-timerfd"))
        timerfd_loop(t, first, m[0] == 'e');
    else if (!strcmp(m, "posix"))
        posix_loop(t, first);
    else if (!strcmp(m, "itimer"))
        itimer_loop(t, first);
    else if (!strcmp(m, "futex"))
        futex_loop(t, first);
    else
        epoll_pipe_loop(t);
    return NULL;
}

static int known(const char *m) {
    const char *all[] = {"abs", "realtime", "rel", "timerfd", "epoll-timerfd", "posix", "itimer", "futex", "epoll-pipe"};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(m, all[i])) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: periodic OUT CYCLES PERIOD_US fifo|other [realtime | MECH[,MECH...]]\n");
        return 2;
    }
    struct thread threads[MAX_THREADS];
    int n = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", argc == 6 ? argv[5] : "abs");
    for (char *save, *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        int late = !strncmp(m, "late-", 5);
        if (n == MAX_THREADS || !known(m + 5 * late)) {
            fprintf(stderr, "periodic: unknown mechanism '%s' (or too many)\n", m);
            return 2;
        }
        threads[n] = (struct thread){.late = late, .index = n};
        snprintf(threads[n].mech, sizeof threads[n].mech, "%s", m + 5 * late);
        n++;
    }
    cycles = atol(argv[2]);
    period = atoll(argv[3]) * 1000LL;
    if (strcmp(argv[4], "fifo") == 0) {
        struct sched_param sp = {.sched_priority = 50};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) die("sched_setscheduler");
    } else {
        prctl(PR_SET_TIMERSLACK, 50000UL, 0, 0, 0);
    }
    /* Every thread inherits: the timers' signals blocked, waited for. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGALRM);
    for (int i = 0; i < MAX_THREADS; i++)
        sigaddset(&sigs, SIGRTMIN + i);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    if (pipe(pipefd) != 0) die("pipe");
    start_at = mono() + 300000000LL;
    for (int i = 0; i < n; i++)
        threads[i].recs = calloc(cycles, sizeof(struct rec));
    if (n == 1 && !threads[0].late)
        run(&threads[0]); /* one mechanism: in the process's own thread, as --tid PID expects */
    else
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1) usleep(700000);
            for (int i = 0; i < n; i++)
                if (threads[i].late == pass && pthread_create(&threads[i].th, NULL, run, &threads[i]) != 0)
                    die("pthread_create");
        }
    for (int i = 0; i < n && !(n == 1 && !threads[0].late); i++)
        pthread_join(threads[i].th, NULL);
    FILE *f = fopen(argv[1], "w");
    if (!f) die(argv[1]);
    for (int i = 0; i < n; i++)
        for (long j = 0; j < threads[i].n; j++) {
            struct rec *r = &threads[i].recs[j];
            fprintf(f, "%d %s %lld %lld\n", threads[i].tid, r->event ? "event" : threads[i].mech, r->planned, r->actual);
        }
    return fclose(f) == 0 ? 0 : 1;
}
