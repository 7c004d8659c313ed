/* srvshare.c: what an embedded server's connections share (srvshare.h). */
#define _GNU_SOURCE
#include "srvshare.h"

#include <time.h>

void hb_srv_fill_random(char *buf, size_t n, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i < n; i++) {
        /* xorshift64*: cheap and good enough for filler. */
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        buf[i] = (char)(33 + (x * 2685821657736338717ULL >> 58) % 94);
    }
}

int hb_srv_reserve(hb_srv_shared *sh, uint64_t *held, uint64_t n)
{
    uint64_t cur = __atomic_load_n(&sh->buffered, __ATOMIC_RELAXED);
    do {
        if (n > sh->max_buffered - cur)
            return -1;
    } while (!__atomic_compare_exchange_n(&sh->buffered, &cur, cur + n, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    *held += n;
    return 0;
}

void hb_srv_release(hb_srv_shared *sh, uint64_t *held)
{
    if (*held > 0)
        __atomic_sub_fetch(&sh->buffered, *held, __ATOMIC_RELAXED);
    *held = 0;
}

/* The Date field value, formatted once a second per thread (RFC 9110
 * section 6.6.1: an origin server with a clock sends Date). */
const char *hb_srv_http_date(void)
{
    static __thread time_t cached = -1;
    static __thread char text[40];
    time_t now = time(NULL);
    if (now != cached) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        cached = now;
    }
    return text;
}
