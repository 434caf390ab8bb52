/* A small CPU-bound program recorded with gperftools' CPU profiler (see SOURCES.md):
 *   cc -O1 -g -fno-omit-frame-pointer -o workload workload.c -Wl,--no-as-needed -lprofiler
 *   CPUPROFILE=gperftools.prof ./workload
 * main -> compute, then compute -> hash_range -> mix and compute -> sum_squares: two call
 * paths of different depths. noipa keeps each function a real call the compiler cannot fold. */
#include <stdint.h>
#include <stdio.h>

static volatile uint64_t sink;

__attribute__((noipa)) static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

__attribute__((noipa)) static uint64_t hash_range(uint64_t n) {
    uint64_t h = 0;
    for (uint64_t i = 0; i < n; i++) h += mix(i ^ h);
    return h;
}

__attribute__((noipa)) static uint64_t sum_squares(uint64_t n) {
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; i++) s += i * i;
    return s;
}

__attribute__((noipa)) static void compute(uint64_t rounds) {
    for (uint64_t r = 0; r < rounds; r++) {
        sink += hash_range(20000000);
        sink += sum_squares(30000000);
    }
}

int main(void) {
    compute(8);
    printf("%llu\n", (unsigned long long)sink);
    return 0;
}
