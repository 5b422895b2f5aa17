/* The minimal hand-written loop that `rtick clocks` must agree with:
 * CLOCK_MONOTONIC read cost, median over 200 batches of 1000 reads, each
 * batch timed with a CLOCK_MONOTONIC read on either side. Prints ns. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCHES 200
#define READS 1000

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    static double per[BATCHES];
    struct timespec a, b, t;
    volatile long long sink = 0;
    for (int i = 0; i < BATCHES; i++) {
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int j = 0; j < READS; j++) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            sink += t.tv_nsec;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        per[i] = (double)(ns(&b) - ns(&a)) / READS;
    }
    qsort(per, BATCHES, sizeof per[0], cmp);
    printf("%.2f\n", per[BATCHES / 2 - 1]);
    return 0;
}
