/*
 * jitter_probe: how long a CPU is taken away from a tight loop.
 *
 *   jitter_probe CPU SECONDS [FIFO_PRIORITY]
 *
 * Pins itself to CPU (optionally at SCHED_FIFO FIFO_PRIORITY), then reads the
 * time stamp counter in a tight loop for SECONDS and histograms the deltas
 * between consecutive reads: on a quiet CPU every delta is the loop's own
 * cost; anything longer is time the kernel, an interrupt or the hypervisor
 * took. The TSC is calibrated against CLOCK_MONOTONIC_RAW over the run itself
 * (the seed hard-codes 3.0 GHz). Where there is no TSC (not x86-64) the loop
 * reads CLOCK_MONOTONIC_RAW directly, in ns.
 *
 * Prints one JSON object: samples, ticks_per_ns, the calibration intervals,
 * a sparse histogram [[delta_ticks, count], ...] up to HIST_TICKS, and the
 * deltas beyond it listed one by one (up to MAX_OVERFLOW).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HIST_TICKS (1u << 20)
#define MAX_OVERFLOW 100000

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ticks(void) { return __rdtsc(); }
static const char *clock_name = "tsc";
#else
static inline uint64_t ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static const char *clock_name = "clock_monotonic_raw";
#endif

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s CPU SECONDS [FIFO_PRIORITY]\n", argv[0]);
        return 2;
    }
    int cpu = atoi(argv[1]);
    double seconds = atof(argv[2]);
    int priority = argc > 3 ? atoi(argv[3]) : 0;
    if (cpu < 0 || seconds <= 0 || priority < 0 || priority > 99) {
        fprintf(stderr, "bad arguments: CPU >= 0, SECONDS > 0, 0 <= FIFO_PRIORITY <= 99\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr, "cannot pin to CPU %d: %s\n", cpu, strerror(errno));
        return 3;
    }
    if (priority > 0) {
        struct sched_param sp = {.sched_priority = priority};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            fprintf(stderr, "cannot use SCHED_FIFO %d: %s\n", priority, strerror(errno));
            return 4;
        }
    }
    uint64_t *hist = calloc(HIST_TICKS, sizeof(uint64_t));
    uint64_t *overflow = malloc(MAX_OVERFLOW * sizeof(uint64_t));
    if (!hist || !overflow) {
        fprintf(stderr, "out of memory\n");
        return 5;
    }
    /* Touch and lock the buffers so no page fault lands inside the loop. */
    memset(overflow, 0, MAX_OVERFLOW * sizeof(uint64_t));
    mlockall(MCL_CURRENT | MCL_FUTURE);

    uint64_t n_overflow = 0, lost = 0, samples = 0;
    int64_t raw0 = clock_ns(CLOCK_MONOTONIC_RAW), mono0 = clock_ns(CLOCK_MONOTONIC);
    uint64_t t0 = ticks(), prev = t0, now;
    int64_t end = raw0 + (int64_t)(seconds * 1e9);
    for (;;) {
        /* Check the clock only every 4096 iterations: the loop stays tight. */
        for (int i = 0; i < 4096; i++) {
            now = ticks();
            uint64_t delta = now - prev;
            prev = now;
            if (delta < HIST_TICKS)
                hist[delta]++;
            else if (n_overflow < MAX_OVERFLOW)
                overflow[n_overflow++] = delta;
            else
                lost++;
        }
        samples += 4096;
        if (clock_ns(CLOCK_MONOTONIC_RAW) >= end)
            break;
    }
    uint64_t t1 = ticks();
    int64_t raw1 = clock_ns(CLOCK_MONOTONIC_RAW), mono1 = clock_ns(CLOCK_MONOTONIC);
    double ticks_per_ns = (double)(t1 - t0) / (double)(raw1 - raw0);

    printf("{\"cpu\": %d, \"seconds\": %.3f, \"fifo_priority\": %d, \"clock\": \"%s\", "
           "\"samples\": %llu, \"ticks_per_ns\": %.9f, \"elapsed_ticks\": %llu, "
           "\"elapsed_raw_ns\": %lld, \"elapsed_monotonic_ns\": %lld, \"lost\": %llu, \"hist\": [",
           cpu, seconds, priority, clock_name, (unsigned long long)samples, ticks_per_ns,
           (unsigned long long)(t1 - t0), (long long)(raw1 - raw0), (long long)(mono1 - mono0),
           (unsigned long long)lost);
    int first = 1;
    for (uint64_t d = 0; d < HIST_TICKS; d++) {
        if (hist[d]) {
            printf("%s[%llu, %llu]", first ? "" : ", ", (unsigned long long)d,
                   (unsigned long long)hist[d]);
            first = 0;
        }
    }
    printf("], \"overflow\": [");
    for (uint64_t i = 0; i < n_overflow; i++)
        printf("%s%llu", i ? ", " : "", (unsigned long long)overflow[i]);
    printf("]}\n");
    return 0;
}
