/* hist.c: the log-linear latency histogram. */
#include "hist.h"

#include <math.h>
#include <string.h>

void hb_hist_init(hb_hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

int hb_hist_index(uint64_t v)
{
    if (v < 256)
        return (int)v;
    int e = 63 - __builtin_clzll(v);
    if (e >= HB_HIST_MAX_EXP)
        return HB_HIST_BUCKETS - 1;
    int shift = e - 7;
    return 256 + (e - 8) * HB_HIST_SUB + (int)((v >> shift) - HB_HIST_SUB);
}

uint64_t hb_hist_lower(int index)
{
    if (index < 256)
        return (uint64_t)index;
    int e = 8 + (index - 256) / HB_HIST_SUB, sub = (index - 256) % HB_HIST_SUB;
    return (uint64_t)(HB_HIST_SUB + sub) << (e - 7);
}

uint64_t hb_hist_upper(int index)
{
    if (index < 256)
        return (uint64_t)index + 1;
    int e = 8 + (index - 256) / HB_HIST_SUB;
    return hb_hist_lower(index) + ((uint64_t)1 << (e - 7));
}

void hb_hist_merge(hb_hist *dst, const hb_hist *src)
{
    for (int i = 0; i < HB_HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    dst->count += src->count;
    dst->clamped += src->clamped;
    dst->sum += src->sum;
    dst->sumsq += src->sumsq;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t hb_hist_rank(uint64_t n, uint32_t ppm)
{
    if (n == 0)
        return 0;
    if (ppm > HB_HIST_PPM)
        ppm = HB_HIST_PPM;
    unsigned __int128 scaled = (unsigned __int128)n * ppm;
    uint64_t rank = (uint64_t)((scaled + HB_HIST_PPM - 1) / HB_HIST_PPM);
    return rank < 1 ? 1 : rank;
}

uint64_t hb_hist_percentile(const hb_hist *h, uint32_t ppm)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = hb_hist_rank(h->count, ppm);
    if (rank == 1)
        return h->min;
    if (rank == h->count)
        return h->max;
    uint64_t seen = 0;
    for (int i = 0; i < HB_HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t lo = hb_hist_lower(i), hi = hb_hist_upper(i);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min)
                mid = h->min;
            if (mid > h->max)
                mid = h->max;
            return mid;
        }
    }
    return h->max;
}

double hb_hist_mean(const hb_hist *h)
{
    return h->count ? h->sum / (double)h->count : 0.0;
}

double hb_hist_stdev(const hb_hist *h)
{
    if (h->count < 2)
        return 0.0;
    double mean = hb_hist_mean(h);
    double var = (h->sumsq - (double)h->count * mean * mean) / (double)(h->count - 1);
    return var > 0 ? sqrt(var) : 0.0;
}

int hb_tl_index(uint64_t ns)
{
    if (ns < 1024)
        return 0;
    int e = 63 - __builtin_clzll(ns);
    int i = (e - 10) * 8 + (int)((ns >> (e - 3)) & 7) + 1;
    return i < HB_TL_BUCKETS ? i : HB_TL_BUCKETS - 1;
}

uint64_t hb_tl_upper(int bucket)
{
    if (bucket == 0)
        return 1024;
    int e = (bucket - 1) / 8 + 10, sub = (bucket - 1) % 8;
    return ((uint64_t)(8 + sub + 1)) << (e - 3);
}
