/* SPDX-License-Identifier: BSD-3-Clause */
/* Work split over threads (split.h). */
#include "store/persist/split.h"

#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

/* Work is split over up to SPLIT_THREADS threads, one per core. */
uint32_t split_threads(uint32_t work)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t t = cores > 1 ? (uint32_t)(cores < SPLIT_THREADS ? cores : SPLIT_THREADS) : 1;
    return t > work ? (work ? work : 1) : t;
}

void split_run(void *(*fn)(void *), char *args, size_t size, uint32_t t)
{
    pthread_t th[SPLIT_THREADS];
    bool started[SPLIT_THREADS] = {false};
    for (uint32_t i = 1; i < t; i++)
        started[i] = pthread_create(&th[i], NULL, fn, args + i * size) == 0;
    fn(args);
    for (uint32_t i = 1; i < t; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            fn(args + i * size);
    }
}
