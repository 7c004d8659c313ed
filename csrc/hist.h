/* hist.h: hb_hist_*, a log-linear latency histogram (HdrHistogram's shape).
 *
 * Values are nanoseconds. Below 256 ns each value has its own bucket; above,
 * each power of two is split into 128 buckets, so a bucket is at most 1/128
 * of its values wide and any percentile read back is within 0.4% of a value
 * recorded (reported at the bucket's middle). Values up to 2^41 ns (about 36
 * minutes) are kept; larger ones land in the last bucket and count as
 * clamped. Two histograms merge exactly by adding counts, so per-thread
 * histograms, and later per-process ones, combine without loss.
 */
#ifndef HB_HIST_H
#define HB_HIST_H

#include <stdint.h>

#define HB_HIST_SUB 128
#define HB_HIST_MAX_EXP 41
#define HB_HIST_BUCKETS (256 + (HB_HIST_MAX_EXP - 8) * HB_HIST_SUB)

typedef struct {
    uint64_t count;
    uint64_t min, max; /* exact; min is UINT64_MAX while empty */
    double sum, sumsq; /* for mean and standard deviation */
    uint64_t clamped;  /* values above the range */
    uint64_t counts[HB_HIST_BUCKETS];
} hb_hist;

void hb_hist_init(hb_hist *h);

/* The bucket of v, and the lowest and one-past-highest value it holds. */
int hb_hist_index(uint64_t v);
uint64_t hb_hist_lower(int index);
uint64_t hb_hist_upper(int index);

static inline void hb_hist_record(hb_hist *h, uint64_t v)
{
    if (v >> HB_HIST_MAX_EXP)
        h->clamped++;
    h->counts[hb_hist_index(v)]++;
    h->count++;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->sum += (double)v;
    h->sumsq += (double)v * (double)v;
}

/* Adds src's counts into dst. */
void hb_hist_merge(hb_hist *dst, const hb_hist *src);

/* Parts per million of the recorded values: HB_HIST_PPM is all of them, so
 * p99.9 is 999000. A percentile crosses into C in these units so that its
 * rank is integer arithmetic: 99.9 / 100 in binary is 0.99900000000000011,
 * and ceil() of that times 1,000 is 1,000, one rank too high. */
#define HB_HIST_PPM 1000000u

/* The nearest-rank percentile: the value of rank ceil(ppm x count / 10^6)
 * among the recorded values sorted, counted from 1 (rank 1 for ppm 0),
 * reported as the middle of the bucket holding that rank and clipped to
 * [min, max], so the value of rank `count` is the exact max. ppm above
 * HB_HIST_PPM reads as HB_HIST_PPM. 0 when empty. */
uint64_t hb_hist_percentile(const hb_hist *h, uint32_t ppm);

/* The rank hb_hist_percentile reads for ppm among n values: from 1 to n,
 * 0 when n is 0. Exact for every n (128-bit product). */
uint64_t hb_hist_rank(uint64_t n, uint32_t ppm);

double hb_hist_mean(const hb_hist *h);
double hb_hist_stdev(const hb_hist *h);

/* The timeline's coarse buckets: 8 an octave from 1 us (within 12.5%), 224
 * of them, one counter each: small enough for one set per second of a
 * run. hb_tl_index is the bucket of a value, hb_tl_upper a bucket's upper
 * bound in ns. */
#define HB_TL_BUCKETS 224
int hb_tl_index(uint64_t ns);
uint64_t hb_tl_upper(int bucket);

#endif
