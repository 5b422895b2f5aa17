/* Threads that come and go, for tests/attach_explain.rs.
 *
 * usage: churn
 *
 * Forever: starts 8 threads, each sleeping 100 us three times, and joins
 * them; a few thousand threads a second, each living a fraction of a
 * 100 ms poll of rtick attach.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static void *sleeper(void *arg) {
    (void)arg;
    struct timespec t = {0, 100000};
    for (int i = 0; i < 3; i++)
        nanosleep(&t, 0);
    return 0;
}

int main(void) {
    for (;;) {
        pthread_t th[8];
        for (int i = 0; i < 8; i++)
            pthread_create(&th[i], 0, sleeper, 0);
        for (int i = 0; i < 8; i++)
            pthread_join(th[i], 0);
    }
}
