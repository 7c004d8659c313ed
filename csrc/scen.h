/* scen.h: hb_scen_*, a scenario's choices made in C: which request next
 * (by weight, or in order), which of its variants, and whether a body
 * holds the bytes a check expects. Plain arithmetic and byte scanning: no
 * allocation (the caller gives the failure function's room), no system
 * calls.
 */
#ifndef HB_SCEN_H
#define HB_SCEN_H

#include <stddef.h>
#include <stdint.h>

/* A thread's generator (xorshift64*), seeded from the scenario's seed and
 * the thread's index, so a seed repeats the same picks per thread. */
typedef struct {
    uint64_t x;
} hb_scen_rng;

void hb_scen_rng_seed(hb_scen_rng *g, uint64_t seed, uint64_t thread);
uint64_t hb_scen_rng_next(hb_scen_rng *g);

/* Picks an index by weight: cumulative[i] is the sum of the weights of
 * requests 0..i (increasing, the last the total). Returns 0..n-1. */
int hb_scen_pick(hb_scen_rng *g, const double *cumulative, int n);

/* The variant of a request's next use: cycled (the n-th use of the request,
 * over all threads, takes variant n mod count: `uses` is the request's
 * shared counter) or drawn (random nonzero). */
uint32_t hb_scen_variant(uint64_t *uses, uint32_t count, int random, hb_scen_rng *g);

/* A streaming substring search (Knuth-Morris-Pratt) for the bytes a check
 * expects in a body, fed the body as it arrives, in any pieces. */
typedef struct {
    const unsigned char *needle;
    uint32_t len;
    const uint32_t *fail; /* len entries: the failure function */
} hb_scen_needle;

/* Fills fail (len entries) for needle; len at least 1. */
void hb_scen_needle_init(hb_scen_needle *k, const unsigned char *needle, uint32_t len,
                         uint32_t *fail);

/* Feeds n body bytes; *state (0 at the body's start) carries a partial
 * match across calls. Returns 1 once the needle has been seen (and leaves
 * *state at len, so later calls return 1 at once), else 0. */
int hb_scen_needle_feed(const hb_scen_needle *k, uint32_t *state, const char *p, size_t n);

#endif
