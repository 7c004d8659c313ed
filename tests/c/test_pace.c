/* test_pace.c: the timing loop's pacing (csrc/bench_pace.c) without a
 * socket: tickets (exact under any interleaving of threads' takes, none
 * past a duration or a stop, a warmup's apart), the due instants of a
 * rate (request k at k/R over all connections), of a shape of arrivals
 * (its integral's, connection g taking requests g, g+C, ...), the turns
 * of a shape of connections, the one rule for when a lane may issue, and
 * the wake-ups' heap (earliest first through any moves and removals).
 *
 *   cc -O1 -g -Wall -Wextra -o test_pace tests/c/test_pace.c csrc/bench_pace.c \
 *       csrc/shape.c csrc/scen.c -lm
 *   ./test_pace            prints "N passed, N failed"
 */
#define _GNU_SOURCE
#include "../../csrc/bench_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int passed, failed;

static void within(const char *what, long long got, long long want, long long ns)
{
    if (llabs(got - want) <= ns) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s: got %lld, want %lld\n", what, got, want);
    }
}

static void check(const char *what, long long got, long long want)
{
    within(what, got, want, 0);
}

/* A run of conc connections over nt threads, as hb_bench_start shares
 * them out, scheduled from start 0. */
typedef struct {
    hb_bench b;
    bthread t[4];
    bconn conns[64];
    bconn *ready[64];
    bconn *wakes[64];
} run;

static void make(run *r, int conc, int nt, double rate, hb_shape *shape, hb_shape *vus)
{
    memset(r, 0, sizeof *r);
    r->b.cfg.concurrency = conc;
    r->b.cfg.rate = rate;
    r->b.shape = shape;
    r->b.vus = vus;
    r->b.paced = rate > 0 || shape != NULL;
    for (int i = 0, first = 0; i < nt; i++) {
        bthread *t = &r->t[i];
        t->b = &r->b;
        t->first_conn = first;
        t->nconns = conc / nt + (i < conc % nt);
        t->conns = &r->conns[first];
        t->ready = &r->ready[first];
        t->wakes = &r->wakes[first];
        first += t->nconns;
        hb_bp_schedule(t);
    }
}

/* The intended starts of the run's first n requests, in order: each
 * connection's in turn, sorted (every connection's schedule is its own). */
static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void starts(run *r, int nt, int per_conn, int64_t *out)
{
    int k = 0;
    for (int i = 0; i < nt; i++)
        for (int j = 0; j < r->t[i].nconns; j++) {
            bconn *c = &r->t[i].conns[j];
            for (int n = 0; n < per_conn; n++) {
                out[k++] = c->next_at;
                hb_bp_advance(&r->t[i], c);
            }
        }
    qsort(out, (size_t)k, sizeof *out, cmp);
}

static void tickets(void)
{
    run r;
    make(&r, 3, 1, 0, NULL, NULL);
    r.b.cfg.requests = 10;
    int got = 0;
    for (int i = 0; i < 50; i++)
        got += hb_bp_ticket(&r.b, 0);
    check("exactly requests tickets", got, 10);
    r.b.cfg.requests = 0;
    r.b.end = 100;
    check("by time, before the end", hb_bp_ticket(&r.b, 99), 1);
    check("none at the end", hb_bp_ticket(&r.b, 100), 0);
    r.b.end = 0;
    r.b.stopping = 1;
    check("none after a stop", hb_bp_ticket(&r.b, 0), 0);
    r.b.stopping = 0;
    r.b.warming = 1;
    got = 0;
    for (int i = 0; i < 10; i++)
        got += hb_bp_ticket(&r.b, 0);
    check("a warmup: one request per connection", got, 3);
    r.b.cfg.warmup_seconds = 1;
    r.b.warm_end = 50;
    check("a warmup by time, before its end", hb_bp_ticket(&r.b, 49), 1);
    check("a warmup by time, at its end", hb_bp_ticket(&r.b, 50), 0);
}

static void rate(void)
{
    /* 4 connections over 2 threads at 100/s: request k due at k/100 s. */
    run r;
    int64_t at[40];
    make(&r, 4, 2, 100, NULL, NULL);
    starts(&r, 2, 10, at);
    for (int k = 0; k < 40; k++) {
        char what[48];
        snprintf(what, sizeof what, "rate: request %d at k/R", k);
        check(what, at[k], (int64_t)k * 10000000);
    }
}

/* Rates whose interval is no whole number of nanoseconds (3000/s over 4
 * connections: 1,333,333.3 ns): every slot where k/R rounds to, over a
 * long run (no drift), and the slots due before a duration's end exactly
 * rate x duration (a stepped interval ran fast: 6,001 in 2 s). */
static void rate_uneven(void)
{
    struct {
        int conc, nt;
        double rate, secs;
    } cases[] = {{4, 2, 3000, 2}, {1, 1, 3, 1},         {1, 1, 300000, 1},
                 {3, 2, 7, 3},    {7, 2, 1e6 / 3, 1.5}, {64, 4, 99999.7, 10}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run r;
        make(&r, cases[i].conc, cases[i].nt, cases[i].rate, NULL, NULL);
        int64_t end = (int64_t)(cases[i].secs * 1e9 + 0.5);
        uint64_t due = 0;
        for (int j = 0; j < cases[i].nt; j++)
            due += hb_bp_due_before(&r.t[j], end);
        char what[96];
        snprintf(what, sizeof what, "rate %g x %g s: due exactly", cases[i].rate, cases[i].secs);
        check(what, (long long)due, llround(cases[i].rate * cases[i].secs));
        /* The last connection's 1000th slot, stepped there one by one. */
        bthread *t = &r.t[cases[i].nt - 1];
        bconn *c = &t->conns[t->nconns - 1];
        for (int n = 0; n < 1000; n++)
            hb_bp_advance(t, c);
        long double k = (long double)c->global + 1000.0L * cases[i].conc;
        snprintf(what, sizeof what, "rate %g: slot 1000 at k/R, no drift", cases[i].rate);
        check(what, c->next_at, llroundl(k * 1e9L / cases[i].rate));
    }
}

static void shape(void)
{
    /* Ramping 0 -> 100/s over 2 s: 100 requests, k-th at sqrt(k / 25) s. */
    double secs[] = {2}, rates[] = {100};
    hb_shape s;
    check("shape init", hb_shape_init(&s, secs, rates, 1), 0);
    run r;
    int64_t at[100];
    make(&r, 5, 2, 0, &s, NULL);
    starts(&r, 2, 20, at);
    for (int k = 0; k < 100; k++) {
        char what[48];
        snprintf(what, sizeof what, "shape: request %d", k);
        check(what, at[k], (int64_t)(hb_shape_due(&s, (double)k) * 1e9));
    }
    /* Past the shape's end: never. */
    bconn *c = &r.t[0].conns[0];
    check("shape: none past its end", hb_bp_shape_due(&r.b, c, 1000), INT64_MAX);
}

static void vus(void)
{
    /* Connections 0 -> 4 over 4 s: connection g runs from g s on, as the
     * shape reaches g + 1 at (g + 1) s; after 4 s, until the shape ends. */
    double secs[] = {4, 2}, level[] = {4, 4};
    hb_shape s;
    check("vus init", hb_shape_init(&s, secs, level, 2), 0);
    run r;
    make(&r, 4, 1, 0, NULL, &s);
    for (int g = 0; g < 4; g++) {
        char what[48];
        snprintf(what, sizeof what, "vus: connection %d's turn", g);
        /* Within a nanosecond: the turn is a float's seconds, truncated. */
        within(what, hb_bp_vus_next(&r.b, &r.t[0].conns[g], 0), (int64_t)(g + 1) * 1000000000, 1);
    }
    check("vus: running now", hb_bp_vus_next(&r.b, &r.t[0].conns[0], 5000000000), 5000000000);
}

/* When a lane may issue: under a rate at its slot, under a shape of
 * connections at its turn (off until then), at once in a closed loop, and
 * at once at the run's end (its ticket then is none, or one owed). */
static void lanes(void)
{
    run r;
    int off = -1;
    make(&r, 4, 1, 1000, NULL, NULL); /* slot g at g ms */
    bconn *c = &r.t[0].conns[2];
    check("rate: its slot", hb_bp_lane_at(&r.t[0], c, 0, &off), 2000000);
    check("rate: not off", off, 0);
    check("rate: due", hb_bp_lane_at(&r.t[0], c, 2000000, &off), 2000000);
    r.b.end = 1000000;
    check("rate: past the end, at once", hb_bp_lane_at(&r.t[0], c, 1500000, &off), 1500000);
    make(&r, 4, 1, 0, NULL, NULL);
    check("closed loop: at once", hb_bp_lane_at(&r.t[0], c, 7, &off), 7);
    double secs[] = {4, 2}, level[] = {4, 4};
    hb_shape s;
    check("lanes: vus init", hb_shape_init(&s, secs, level, 2), 0);
    make(&r, 4, 1, 0, NULL, &s);
    within("vus: its turn", hb_bp_lane_at(&r.t[0], &r.t[0].conns[2], 0, &off), 3000000000, 1);
    check("vus: off until then", off, 1);
    hb_bp_lane_at(&r.t[0], &r.t[0].conns[0], 1500000000, &off);
    check("vus: on in its turn", off, 0);
}

/* The wake-ups' heap: in and out in any order, moved earlier and later,
 * always the earliest first; pacing's counted apart from retries, and
 * brought to now at the run's end. */
static void wakes(void)
{
    run r;
    make(&r, 64, 1, 0, NULL, NULL);
    bthread *t = &r.t[0];
    uint64_t x = 88172645463325252ULL; /* xorshift: a fixed order */
    for (int i = 0; i < 64; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        hb_bp_wake_at(t, &t->conns[i], (int64_t)(x % 1000), i % 3 ? HB_WAKE_PACE : HB_WAKE_RETRY);
    }
    check("wakes: all in", t->nwakes, 64);
    check("wakes: pacing's counted", t->paced_wakes, 42);
    for (int i = 0; i < 64; i += 4)
        hb_bp_wake_cancel(t, &t->conns[i]); /* 16 out, 6 of them retries */
    hb_bp_wake_cancel(t, &t->conns[0]);     /* (again: nothing) */
    for (int i = 1; i < 64; i += 8)
        hb_bp_wake_at(t, &t->conns[i], i % 16 == 1 ? -5 : 5000, HB_WAKE_PACE); /* moved */
    check("wakes: after moves and removals", t->nwakes, 48);
    check("wakes: the earliest first", hb_bp_wake_next(t), -5);
    int64_t last = INT64_MIN;
    int n = 0, sorted = 1, pace = 0;
    for (bconn *c; (c = hb_bp_wake_due(t, 999)) != NULL; n++) {
        sorted &= c->wake_at >= last && c->wake_slot == -1;
        last = c->wake_at;
        pace += c->wake_kind == HB_WAKE_PACE;
    }
    check("wakes: those due by 999, in order", sorted, 1);
    check("wakes: those due by 999", n, 44);
    check("wakes: the later stay", t->nwakes, 4);
    check("wakes: the later's time", hb_bp_wake_next(t), 5000);
    check("wakes: pacing's left", t->paced_wakes, 4);
    hb_bp_wake_at(t, &t->conns[0], 7000, HB_WAKE_RETRY);
    hb_bp_wake_paced_now(t, 4000);
    for (int k = 0; k < 4; k++) {
        bconn *c = hb_bp_wake_due(t, 4000);
        check("wakes: pacing's at the end, now", c != NULL ? c->wake_at : -1, 4000);
    }
    check("wakes: a retry keeps its time", hb_bp_wake_next(t), 7000);
    check("wakes: none due before it", hb_bp_wake_due(t, 6999) == NULL, 1);
    check("wakes: of those due by 999, pacing's", pace, 31);
}

/* The naps of a closed loop over HTTP/2: a hundredth of the answers'
 * time, capped, less how late naps end; none under the least worth it. */
static void naps(void)
{
    check("nap: 5 ms answers", hb_bp_nap_ns(5000000, 0), 50000);
    check("nap: 5 ms answers, naps 20 us late", hb_bp_nap_ns(5000000, 20000), 30000);
    check("nap: 30 ms answers, capped", hb_bp_nap_ns(30000000, 0), NAP_MAX_NS);
    check("nap: capped, less lateness", hb_bp_nap_ns(30000000, 10000), NAP_MAX_NS - 10000);
    check("nap: 200 us answers: the least", hb_bp_nap_ns(200000, 0), NAP_MIN_NS);
    check("nap: 150 us answers: none", hb_bp_nap_ns(150000, 0), 0);
    check("nap: 1 ms answers, naps 20 us late: none", hb_bp_nap_ns(1000000, 20000), 0);
    check("nap: no answer yet", hb_bp_nap_ns(0, 0), 0);
    check("nap: lateness below zero counts as none", hb_bp_nap_ns(5000000, -5000), 50000);
    /* The nap and its lateness within the share, whatever the lateness. */
    int within_share = 1;
    for (int64_t answer = 0; answer <= 50000000; answer += 99991)
        for (int64_t late = 0; late <= 200000; late += 997) {
            int64_t ask = hb_bp_nap_ns(answer, late);
            if (ask != 0 && (ask + late > answer / NAP_SHARE || ask < NAP_MIN_NS))
                within_share = 0;
        }
    check("nap: ask + lateness <= answer / 100", within_share, 1);
    check("answer mean: the first is itself", hb_bp_answer_mean(0, 7000), 7000);
    check("answer mean: a sixteenth of the way", hb_bp_answer_mean(1600000, 3200000), 1700000);
    int64_t mean = 0;
    for (int i = 0; i < 200; i++)
        mean = hb_bp_answer_mean(mean, i < 100 ? 1000000 : 4000000);
    within("answer mean: follows a change within 200 answers", mean, 4000000, 4000000 / 100);
}

/* One connection under a rate, each exchange taking `took` ns, its
 * requests due every `every` ns from `first` and each sent once due and
 * once the last is over (from `start` on): how many of n were judged late
 * for their busy connection (hb_bp_sent_late). */
static int busy_sends(bthread *t, int64_t first, int64_t every, int64_t took, int64_t start, int n)
{
    bconn c;
    memset(&c, 0, sizeof c);
    int busy = 0;
    int64_t at = start;
    for (int k = 0; k < n; k++) {
        c.next_at = first + k * every;
        if (at < c.next_at)
            at = c.next_at;
        busy += hb_bp_sent_late(t, &c, at);
        c.free_at = at + took;
        at = c.free_at;
    }
    return busy;
}

static void stalls(void)
{
    const int64_t ms = 1000000;
    bthread t;
    /* A slow start (the first send 10 ms late on its free connection),
     * then a server slower than the rate (20 ms an exchange, due every
     * 4 ms): the first is the thread's lateness, the next few fall inside
     * that stall, and every one after waited for its busy connection. The
     * stall grown by each send kept them all inside it: none busy. */
    memset(&t, 0, sizeof t);
    int busy = busy_sends(&t, 0, 4 * ms, 20 * ms, 10 * ms, 100);
    within("slow start, slow server: the sends past the stall are busy", busy, 97, 1);
    /* The thread held off its CPU for 800 ms (the loop woke that late
     * from a wait due at 100 ms): the 80 requests due meanwhile go out
     * back to back on waking, 0.1 ms each, each due before the last one's
     * answer was read; none is busy, nor the ones due during the catch-up. */
    memset(&t, 0, sizeof t);
    hb_bp_late(&t, 100 * ms, 900 * ms);
    busy = busy_sends(&t, 100 * ms, 10 * ms, ms / 10, 900 * ms, 100);
    check("a stall's catch-up: none busy", busy, 0);
    /* A wake-up 0.5 ms late is no stall: a busy connection stays busy. */
    memset(&t, 0, sizeof t);
    busy = busy_sends(&t, 0, 4 * ms, 20 * ms, ms / 2, 100);
    within("no stall, slow server: all but the first busy", busy, 99, 0);
}

int main(void)
{
    tickets();
    rate();
    rate_uneven();
    shape();
    vus();
    lanes();
    wakes();
    naps();
    stalls();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
