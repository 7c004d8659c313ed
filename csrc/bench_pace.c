/* bench_pace.c: pacing and picks: tickets, when each connection's next
 * request is due (a rate, a shape of arrivals or of connections), the one
 * rule that says whether a lane may issue now, the connections' wake-ups
 * (a heap a thread), and which request of a scenario it sends. */
#define _GNU_SOURCE
#include "bench_int.h"

#include <math.h>

/* One of the run's tickets (requests=N bounds them). */
static int run_ticket(hb_bench *b)
{
    return b->cfg.requests == 0 ||
           __atomic_fetch_add(&b->tickets, 1, __ATOMIC_RELAXED) < b->cfg.requests;
}

int hb_bp_ticket(hb_bench *b, int64_t now)
{
    if (b->warming) {
        if (stopped(b))
            return 0;
        if (b->cfg.warmup_seconds > 0)
            return now < b->warm_end;
        uint64_t n = b->cfg.warmup_requests ? b->cfg.warmup_requests : (uint64_t)b->cfg.concurrency;
        return __atomic_fetch_add(&b->warm_tickets, 1, __ATOMIC_RELAXED) < n;
    }
    if (stopped(b) || (b->end && now >= b->end))
        return 0;
    return run_ticket(b);
}

int hb_bp_ticket_for(bthread *t, const bconn *c, int64_t now)
{
    hb_bench *b = t->b;
    /* An open loop's unsent are the requests due while every connection
     * was busy (bench_result.c): one due on a free connection that the
     * thread reached only after the end is late, not unsent (as many as
     * fell due in the thread's stall, each when the one before is over),
     * within the grace the run's last answers have (a stall past it leaves
     * them unsent: the run is over). */
    int owed = b->paced && !b->warming && b->end && now >= b->end && now - b->end < b->grace_ns &&
               c->next_at < b->end && !hb_bp_busy_when_due(t, c) && !stopped(b);
    return owed ? run_ticket(b) : hb_bp_ticket(b, now);
}

int hb_bp_busy_when_due(const bthread *t, const bconn *c)
{
    int64_t due = c->next_at;
    return due < c->free_at && !(due >= t->stall_from && due < t->stall_to);
}

void hb_bp_late(bthread *t, int64_t from, int64_t now)
{
    /* One stretch, grown while lateness overlaps it (a stall's catch-up:
     * each send due within it), else the newest. A wake-up a little late
     * is no stall: an answer read then may have come late too, and its
     * connection's next request, due meanwhile, is judged busy as ever. */
    if (now - from < STALL_NS)
        return;
    if (from > t->stall_to) {
        t->stall_from = from;
        t->stall_to = now;
        t->stall_len = now - from;
        return;
    }
    if (from < t->stall_from)
        t->stall_from = from;
    if (now > t->stall_to)
        t->stall_to = now;
    if (now - from > t->stall_len)
        t->stall_len = now - from;
}

int hb_bp_sent_late(bthread *t, const bconn *c, int64_t now)
{
    int64_t due = c->next_at;
    if (hb_bp_busy_when_due(t, c))
        return 1;
    if (due >= c->free_at) {
        hb_bp_late(t, due, now);
        return 0;
    }
    /* Without the bound, an open loop slower than its rate whose first
     * sends went out late (a slow start) held every later send inside the
     * stall: each was due before the one before it went out, so each grew
     * the stall again, and none was ever judged busy (late_busy 0 of 596,
     * under ASan on a shared CPU). */
    if (now - due >= STALL_NS && now - due <= t->stall_len + STALL_NS && now > t->stall_to)
        t->stall_to = now;
    return 0;
}

uint64_t hb_bp_tickets_left(const hb_bench *b, int64_t now)
{
    if (stopped((hb_bench *)b))
        return 0;
    if (b->warming) {
        if (b->cfg.warmup_seconds > 0)
            return now < b->warm_end ? UINT64_MAX : 0;
        uint64_t n = b->cfg.warmup_requests ? b->cfg.warmup_requests : (uint64_t)b->cfg.concurrency;
        uint64_t taken = __atomic_load_n(&b->warm_tickets, __ATOMIC_RELAXED);
        return taken < n ? n - taken : 0;
    }
    if (b->end && now >= b->end)
        return 0;
    if (b->cfg.requests == 0)
        return UINT64_MAX;
    uint64_t taken = __atomic_load_n(&b->tickets, __ATOMIC_RELAXED);
    return taken < b->cfg.requests ? b->cfg.requests - taken : 0;
}

int64_t hb_bp_rate_due(const hb_bench *b, const bconn *c, uint64_t n)
{
    /* From the start and the slot's index over the whole run, k = g + n *
     * concurrency: slot k at k/R seconds, rounded to the nanosecond once.
     * Stepping by a whole-nanosecond interval instead ran fast or slow by
     * the rounding at every step (-R 3000 -c 4 -d 2 sent 6,001); long
     * double keeps k * 1e9 exact past 10^10 slots. */
    int conc = b->cfg.concurrency > 0 ? b->cfg.concurrency : 1;
    long double k = (long double)c->global + (long double)n * (long double)conc;
    return b->start + (int64_t)llroundl(k * 1e9L / (long double)b->cfg.rate);
}

/* Under a shape: when slot c's n-th request is due (see shape.h), or
 * INT64_MAX when the shape holds no more for it. */
int64_t hb_bp_shape_due(const hb_bench *b, const bconn *c, uint64_t n)
{
    double k = (double)c->global + (double)n * (double)b->cfg.concurrency;
    double at = hb_shape_due(b->shape, k);
    return at < 0 ? INT64_MAX : b->start + (int64_t)(at * 1e9);
}

/* Under a shape of connections: now when slot c may run, else when it may
 * next (INT64_MAX: never again). */
int64_t hb_bp_vus_next(const hb_bench *b, const bconn *c, int64_t now)
{
    double at = hb_shape_when(b->vus, (double)c->global + 1, (double)(now - b->start) / 1e9);
    if (at < 0)
        return INT64_MAX;
    int64_t when = b->start + (int64_t)(at * 1e9);
    return when > now ? when : now;
}

int64_t hb_bp_lane_at(const bthread *t, const bconn *c, int64_t now, int *off)
{
    const hb_bench *b = t->b;
    *off = 0;
    if (stopped((hb_bench *)b) || (b->end && now >= b->end))
        return now;
    if (b->vus != NULL) {
        int64_t at = hb_bp_vus_next(b, c, now);
        if (at > now) {
            *off = 1;
            return at;
        }
    }
    return b->paced && c->next_at > now ? c->next_at : now;
}

/* ---- the wake-ups: a binary heap on wake_at, each connection knowing its
 * place, so a move or a removal is O(log n) and the loop's next wake-up is
 * its first (a scan of every connection was O(n) a wake-up). */

static void put(bthread *t, int i, bconn *c)
{
    t->wakes[i] = c;
    c->wake_slot = i;
}

static void sift_up(bthread *t, int i)
{
    bconn *c = t->wakes[i];
    while (i > 0) {
        int up = (i - 1) / 2;
        if (t->wakes[up]->wake_at <= c->wake_at)
            break;
        put(t, i, t->wakes[up]);
        i = up;
    }
    put(t, i, c);
}

static void sift_down(bthread *t, int i)
{
    bconn *c = t->wakes[i];
    for (;;) {
        int k = 2 * i + 1;
        if (k >= t->nwakes)
            break;
        if (k + 1 < t->nwakes && t->wakes[k + 1]->wake_at < t->wakes[k]->wake_at)
            k++;
        if (t->wakes[k]->wake_at >= c->wake_at)
            break;
        put(t, i, t->wakes[k]);
        i = k;
    }
    put(t, i, c);
}

void hb_bp_wake_at(bthread *t, bconn *c, int64_t at, int kind)
{
    if (c->wake_slot < 0) {
        put(t, t->nwakes++, c);
        c->wake_kind = kind;
        t->paced_wakes += kind == HB_WAKE_PACE;
        c->wake_at = at;
        sift_up(t, c->wake_slot);
        return;
    }
    t->paced_wakes += (kind == HB_WAKE_PACE) - (c->wake_kind == HB_WAKE_PACE);
    c->wake_kind = kind;
    int64_t was = c->wake_at;
    c->wake_at = at;
    if (at < was)
        sift_up(t, c->wake_slot);
    else
        sift_down(t, c->wake_slot);
}

void hb_bp_wake_cancel(bthread *t, bconn *c)
{
    int i = c->wake_slot;
    if (i < 0)
        return;
    t->paced_wakes -= c->wake_kind == HB_WAKE_PACE;
    c->wake_slot = -1;
    bconn *last = t->wakes[--t->nwakes];
    if (last == c)
        return;
    put(t, i, last);
    sift_up(t, i);
    sift_down(t, last->wake_slot);
}

bconn *hb_bp_wake_due(bthread *t, int64_t now)
{
    if (t->nwakes == 0 || t->wakes[0]->wake_at > now)
        return NULL;
    bconn *c = t->wakes[0];
    hb_bp_wake_cancel(t, c);
    return c;
}

int64_t hb_bp_wake_next(const bthread *t)
{
    return t->nwakes > 0 ? t->wakes[0]->wake_at : INT64_MAX;
}

void hb_bp_wake_paced_now(bthread *t, int64_t now)
{
    for (int i = 0; i < t->nwakes; i++)
        if (t->wakes[i]->wake_kind == HB_WAKE_PACE && t->wakes[i]->wake_at > now)
            t->wakes[i]->wake_at = now;
    for (int i = t->nwakes / 2 - 1; i >= 0; i--)
        sift_down(t, i);
}

void hb_bp_advance(bthread *t, bconn *c)
{
    const hb_bench *b = t->b;
    if (b->cfg.rate > 0)
        c->next_at = hb_bp_rate_due(b, c, ++c->seq);
    else if (b->shape != NULL)
        c->next_at = hb_bp_shape_due(b, c, ++c->seq);
}

void hb_bp_choose(bthread *t, bconn *c, bexch *x)
{
    hb_bench *b = t->b;
    int i = 0;
    if (b->nreqs > 1) {
        if (b->cfg.turns) {
            i = c->next_turn;
            c->next_turn = (i + 1) % b->nreqs;
        } else if (b->cfg.sequence) {
            i = x->step % b->nreqs;
        } else {
            i = hb_scen_pick(&t->rng, b->cumulative, b->nreqs);
        }
    }
    breq *q = &b->reqs[i];
    uint32_t v = hb_scen_variant(&q->uses, q->r.nvariants, q->r.random, &t->rng);
    x->rq = q;
    x->res = &t->res[i];
    x->variant = (size_t)(q->r.variants - b->ptrs) + v;
}

/* Every connection of t to its start: idle, on the ready stack, its
 * schedule from b->start. */
void hb_bp_schedule(bthread *t)
{
    hb_bench *b = t->b;
    /* Under a rate R the run's requests are spread evenly from the start:
     * connection g (counted over all threads) starts its schedule g/R
     * seconds in, then every concurrency/R seconds, so N requests take
     * N/R seconds at any concurrency. */
    t->nready = 0;
    t->nwakes = t->paced_wakes = 0;
    t->stall_from = t->stall_to = t->stall_len = 0;
    for (int i = 0; i < t->nconns; i++) {
        bconn *c = &t->conns[i];
        /* A carrier's session open since a warmup (HTTP/2's) goes on open. */
        if (c->state < BC_CARRIED)
            c->state = BC_IDLE;
        c->wake_slot = -1;
        c->in_ready = 1;
        c->seq = 0;
        c->next_at = b->start;
        c->free_at = 0;
        c->global = t->first_conn + i;
        if (b->paced && b->cfg.rate > 0)
            c->next_at = hb_bp_rate_due(b, c, 0);
        else if (b->paced && b->shape != NULL)
            c->next_at = hb_bp_shape_due(b, c, 0);
        t->ready[t->nready++] = c;
    }
}

uint64_t hb_bp_due_before(const bthread *t, int64_t end)
{
    const hb_bench *b = t->b;
    uint64_t due = 0;
    for (int i = 0; i < t->nconns && b->paced; i++) {
        const bconn *c = &t->conns[i];
        if (b->cfg.rate > 0) {
            /* The n with hb_bp_rate_due(n) < end: from the estimate
             * (end - start) R / concurrency, then settled on the slots'
             * own instants, so this count and the sends agree exactly. */
            long double span = (long double)(end - b->start) * (long double)b->cfg.rate / 1e9L;
            int conc = b->cfg.concurrency > 0 ? b->cfg.concurrency : 1;
            long double est = (span - (long double)c->global) / (long double)conc;
            uint64_t n = est > 0 ? (uint64_t)est : 0;
            while (n > 0 && hb_bp_rate_due(b, c, n - 1) >= end)
                n--;
            while (hb_bp_rate_due(b, c, n) < end)
                n++;
            due += n;
        } else if (b->shape != NULL) {
            for (uint64_t n = 0; hb_bp_shape_due(b, c, n) < end; n++)
                due++;
        }
    }
    return due;
}

int64_t hb_bp_nap_ns(int64_t answer_ns, int64_t late_ns)
{
    int64_t bound = answer_ns / NAP_SHARE;
    if (bound > NAP_MAX_NS)
        bound = NAP_MAX_NS;
    int64_t ask = bound - (late_ns > 0 ? late_ns : 0);
    return ask >= NAP_MIN_NS ? ask : 0;
}

int64_t hb_bp_answer_mean(int64_t mean_ns, int64_t took_ns)
{
    return mean_ns == 0 ? took_ns : mean_ns + (took_ns - mean_ns) / 16;
}
