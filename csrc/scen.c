/* scen.c: a scenario's picks and its body check. */
#include "scen.h"

void hb_scen_rng_seed(hb_scen_rng *g, uint64_t seed, uint64_t thread)
{
    /* splitmix64 of the pair: distinct, well-mixed, never 0. */
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (thread + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    g->x = z ? z : 1;
}

uint64_t hb_scen_rng_next(hb_scen_rng *g)
{
    uint64_t x = g->x;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    g->x = x;
    return x * 2685821657736338717ULL;
}

int hb_scen_pick(hb_scen_rng *g, const double *cumulative, int n)
{
    /* 53 random bits as a fraction of the total. */
    double r = (double)(hb_scen_rng_next(g) >> 11) * (1.0 / 9007199254740992.0) * cumulative[n - 1];
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (r < cumulative[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

uint32_t hb_scen_variant(uint64_t *uses, uint32_t count, int random, hb_scen_rng *g)
{
    if (count <= 1)
        return 0;
    if (random)
        return (uint32_t)(hb_scen_rng_next(g) % count);
    return (uint32_t)(__atomic_fetch_add(uses, 1, __ATOMIC_RELAXED) % count);
}

void hb_scen_needle_init(hb_scen_needle *k, const unsigned char *needle, uint32_t len,
                         uint32_t *fail)
{
    k->needle = needle;
    k->len = len;
    k->fail = fail;
    fail[0] = 0;
    uint32_t m = 0;
    for (uint32_t i = 1; i < len; i++) {
        while (m > 0 && needle[i] != needle[m])
            m = fail[m - 1];
        if (needle[i] == needle[m])
            m++;
        fail[i] = m;
    }
}

int hb_scen_needle_feed(const hb_scen_needle *k, uint32_t *state, const char *p, size_t n)
{
    uint32_t m = *state;
    if (m == k->len)
        return 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        while (m > 0 && c != k->needle[m])
            m = k->fail[m - 1];
        if (c == k->needle[m] && ++m == k->len) {
            *state = m;
            return 1;
        }
    }
    *state = m;
    return 0;
}
