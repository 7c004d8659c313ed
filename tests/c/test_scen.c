/* test_scen.c: a scenario's picks and body check: weights kept within 2%
 * over 100,000 picks, the same picks for the same seed, variants cycled
 * exactly, and the expected bytes found across every split of a body.
 *
 *   cc -O1 -g -Wall -Wextra -o test_scen tests/c/test_scen.c csrc/scen.c
 *   ./test_scen            prints "N passed, N failed"
 */
#include "../../csrc/scen.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Whether needle is found in body fed whole, byte by byte, and split once
 * at every offset, each way agreeing with want. */
static void needle_case(const char *needle, const char *body, int want)
{
    uint32_t fail[64], state;
    hb_scen_needle k;
    size_t n = strlen(body);
    hb_scen_needle_init(&k, (const unsigned char *)needle, (uint32_t)strlen(needle), fail);
    char what[160];
    state = 0;
    snprintf(what, sizeof what, "whole: %s in %s", needle, body);
    check(what, hb_scen_needle_feed(&k, &state, body, n) == want);
    state = 0;
    int got = 0;
    for (size_t i = 0; i < n; i++)
        got |= hb_scen_needle_feed(&k, &state, body + i, 1);
    snprintf(what, sizeof what, "byte by byte: %s in %s", needle, body);
    check(what, got == want);
    for (size_t cut = 0; cut <= n; cut++) {
        state = 0;
        got = hb_scen_needle_feed(&k, &state, body, cut);
        got |= hb_scen_needle_feed(&k, &state, body + cut, n - cut);
        snprintf(what, sizeof what, "split at %zu: %s in %s", cut, needle, body);
        check(what, got == want);
    }
}

int main(void)
{
    needle_case("\"id\"", "{\"id\": 7}", 1);
    needle_case("aab", "aaab", 1);
    needle_case("abab", "abacababx", 1);
    needle_case("abab", "abaabax", 0);
    needle_case("xyz", "xy", 0);
    needle_case("end", "the end", 1);
    needle_case("a", "", 0);
    needle_case("aaaa", "aaabaaaa", 1);

    /* Weights 8, 4, 1 over 100,000 picks. */
    double cumulative[] = {8, 12, 13};
    int counts[3] = {0, 0, 0};
    hb_scen_rng g;
    hb_scen_rng_seed(&g, 42, 0);
    for (int i = 0; i < 100000; i++)
        counts[hb_scen_pick(&g, cumulative, 3)]++;
    double want[] = {8 / 13.0, 4 / 13.0, 1 / 13.0};
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof what, "weight %d: %d of 100000", i, counts[i]);
        check(what, fabs(counts[i] / 100000.0 - want[i]) <= 0.02 * want[i]);
    }
    /* The same seed and thread: the same picks; another thread: others. */
    hb_scen_rng a, b, c;
    hb_scen_rng_seed(&a, 7, 1);
    hb_scen_rng_seed(&b, 7, 1);
    hb_scen_rng_seed(&c, 7, 2);
    int same = 1, differ = 0;
    for (int i = 0; i < 1000; i++) {
        int x = hb_scen_pick(&a, cumulative, 3), y = hb_scen_pick(&b, cumulative, 3);
        same &= x == y;
        differ |= x != hb_scen_pick(&c, cumulative, 3);
    }
    check("same seed, same picks", same);
    check("another thread, other picks", differ);
    /* Variants cycled: the n-th use takes n mod count. */
    uint64_t uses = 0;
    int cycled = 1;
    for (uint32_t i = 0; i < 10; i++)
        cycled &= hb_scen_variant(&uses, 3, 0, &g) == i % 3;
    check("cycled", cycled && uses == 10);
    check("one variant", hb_scen_variant(&uses, 1, 0, &g) == 0);
    int in_range = 1;
    for (int i = 0; i < 1000; i++)
        in_range &= hb_scen_variant(&uses, 5, 1, &g) < 5;
    check("drawn", in_range);
    return checks_done();
}
