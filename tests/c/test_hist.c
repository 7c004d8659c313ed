/* test_hist.c: the histogram's percentiles against the nearest rank of the
 * values sorted, one record at a time, at every count from 1 to 200,000,
 * for every percentile the report prints.
 *
 * Two value sets. Values below 256 have a bucket each, so the percentile
 * must equal the sorted value exactly. Wider values (up to 2^24) share
 * buckets, so the percentile must fall in the sorted value's bucket (and
 * equal it exactly at the first and last rank). The sorted order is kept
 * by a Fenwick tree of counts over the values, so the k-th smallest is a
 * walk down the tree rather than a sort each time.
 *
 *   cc -O1 -g -Wall -Wextra -o test_hist tests/c/test_hist.c csrc/hist.c -lm
 *   ./test_hist           prints "N passed, N failed"
 */
#include "../../csrc/hist.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long passed, failed;

#define RECORDS 200000
#define SPAN_BITS 24
#define SPAN (1u << SPAN_BITS)

/* The report's percentiles (result.PERCENTILES), in parts per million. */
static const uint32_t PRINTED[] = {500000, 660000, 750000, 800000, 900000, 950000,
                                   980000, 990000, 999000, 999900, 1000000};
#define NPRINTED (sizeof PRINTED / sizeof PRINTED[0])

static uint32_t fenwick[SPAN + 1];

static void fen_add(uint32_t v)
{
    for (uint32_t i = v + 1; i <= SPAN; i += i & (~i + 1))
        fenwick[i]++;
}

/* The k-th smallest value recorded, k from 1. */
static uint64_t fen_kth(uint64_t k)
{
    uint32_t pos = 0;
    for (uint32_t step = SPAN; step > 0; step >>= 1) {
        if (pos + step <= SPAN && fenwick[pos + step] < k) {
            pos += step;
            k -= fenwick[pos];
        }
    }
    return pos; /* index pos + 1 in the tree is value pos */
}

/* The nearest rank stated as its definition: the least r with
 * r / n >= ppm / 10^6, at least 1. */
static uint64_t nearest_rank(uint64_t n, uint32_t ppm)
{
    uint64_t r = (uint64_t)ppm * n / HB_HIST_PPM;
    while (r * HB_HIST_PPM < (uint64_t)ppm * n)
        r++;
    return r < 1 ? 1 : r;
}

static uint64_t state = 88172645463325252ull;

static uint64_t next_random(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* One pass: RECORDS values below 2^bits, drawn with a heavy tail so that
 * the high percentiles land on rare values. */
static void pass(int bits, int exact)
{
    static hb_hist h;
    hb_hist_init(&h);
    for (uint32_t i = 0; i <= SPAN; i++)
        fenwick[i] = 0;
    long bad = 0;
    for (uint64_t n = 1; n <= RECORDS; n++) {
        uint64_t r = next_random();
        /* Wide values: 1 in 64 from the whole span, the rest from its lowest
         * 1/256. */
        uint32_t v = (uint32_t)(r >> 40) & ((1u << bits) - 1);
        if ((r & 63) != 0 && bits > 8)
            v >>= 8;
        hb_hist_record(&h, v);
        fen_add(v);
        for (size_t k = 0; k < NPRINTED; k++) {
            uint64_t rank = nearest_rank(n, PRINTED[k]);
            uint64_t want = fen_kth(rank), got = hb_hist_percentile(&h, PRINTED[k]);
            int ok = exact || rank == 1 || rank == n ? got == want
                                                     : hb_hist_index(got) == hb_hist_index(want);
            if (hb_hist_rank(n, PRINTED[k]) != rank)
                ok = 0;
            if (!ok && bad++ < 5)
                printf("FAIL bits %d n %llu ppm %u: got %llu, want %llu (rank %llu)\n", bits,
                       (unsigned long long)n, PRINTED[k], (unsigned long long)got,
                       (unsigned long long)want, (unsigned long long)rank);
        }
    }
    if (bad)
        failed += bad;
    else
        passed++;
}

static void check(const char *what, uint64_t got, uint64_t want)
{
    if (got == want) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s: got %llu, want %llu\n", what, (unsigned long long)got,
               (unsigned long long)want);
    }
}

int main(void)
{
    pass(8, 1);
    pass(SPAN_BITS, 0);

    /* The case that was one rank too high: 999 of 1 ms and one of 1 s. */
    static hb_hist h;
    hb_hist_init(&h);
    for (int i = 0; i < 1000; i++)
        hb_hist_record(&h, i < 999 ? 1000000 : 1000000000);
    check("p99.9 of 1,000", hb_hist_index(hb_hist_percentile(&h, 999000)), hb_hist_index(1000000));
    check("p100 of 1,000", hb_hist_percentile(&h, 1000000), 1000000000);
    check("rank p99.9 of 1,000", hb_hist_rank(1000, 999000), 999);
    check("rank p99.99 of 10,000", hb_hist_rank(10000, 999900), 9999);
    check("rank p50 of 1", hb_hist_rank(1, 500000), 1);
    check("rank p0", hb_hist_rank(7, 0), 1);
    check("rank past 100%", hb_hist_rank(7, 2000000), 7);
    check("rank of none", hb_hist_rank(0, 500000), 0);
    check("rank of 2^64-1", hb_hist_rank(UINT64_MAX, 999000), UINT64_MAX - UINT64_MAX / 1000);
    hb_hist_init(&h);
    check("empty", hb_hist_percentile(&h, 500000), 0);
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed != 0;
}
