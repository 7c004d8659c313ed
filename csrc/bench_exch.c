/* bench_exch.c: an exchange's life, the same whatever carries it
 * (bench_h1.c, bench_h2.c): what is counted when a request is issued, the
 * events of its response (head, fields, data, its end), how a whole
 * response is judged before bench_result.c records it, and its end.
 * Nothing here knows a socket or a protocol. */
#define _GNU_SOURCE
#include "bench_int.h"

#include <strings.h>

void hb_bx_issue(bthread *t, bconn *c, bexch *x, int n, int64_t now)
{
    hb_bp_choose(t, c, x);
    x->res->issued += (uint64_t)n;
    __atomic_store_n(&t->live_issued, t->live_issued + (uint64_t)n, __ATOMIC_RELAXED);
    t->inflight += n;
    x->t_intended = t->b->paced ? c->next_at : now;
    if (t->b->paced) {
        /* How late the client was against the schedule: from its due
         * instant, or, for one whose connection was still busy then
         * (late_busy: it waited on the server's answer), from the instant
         * that connection freed. The wait for an answer is the server's
         * pace, and counted so a server's 0.5 s stall read as the
         * client's lateness. */
        int64_t from = c->next_at;
        if (hb_bp_sent_late(t, c, now)) {
            x->res->late_busy += (uint64_t)n;
            from = c->free_at > from ? c->free_at : from;
        }
        hb_hist_record(&x->res->late, (uint64_t)(now > from ? now - from : 0));
    }
    hb_bp_advance(t, c);
    x->t_start = now;
    x->t_first = 0;
    x->connect_ns = 0;
    x->status = 0;
    x->app_status = -1;
    x->noting = 0;
    x->tx = x->rx = 0;
    x->tag = 0;
    x->found = 0;
}

void hb_bx_end(bthread *t, bconn *c, bexch *x, int n, int64_t now, int outcome)
{
    t->inflight -= n;
    c->free_at = now;
    if (outcome)
        __atomic_store_n(&t->b->last_outcome, now, __ATOMIC_RELAXED);
    for (int k = 0; k < n; k++)
        x[k].step++;
}

void hb_bx_head(bthread *t, bexch *x, int status, const char *raw, size_t raw_len)
{
    x->status = status;
    x->noting = hb_br_claim_head(t->b, raw, raw_len);
}

void hb_bx_field(bthread *t, bexch *x, const char *name, size_t nlen, const char *value,
                 size_t vlen, int trailer)
{
    /* Field names are case-insensitive (RFC 9110 section 5.1). */
    if (x->noting && !trailer && nlen == 6 && strncasecmp(name, "server", 6) == 0)
        hb_br_note_server(t->b, value, vlen);
}

void hb_bx_data(bexch *x, const char *p, size_t n)
{
    if (n > 0 && x->rq->r.expect_body_len > 0)
        hb_scen_needle_feed(&x->rq->body, &x->found, p, n);
}

void hb_bx_done(bthread *t, bconn *c, bexch *x, uint64_t got, int64_t now, int kept)
{
    c->served++;
    c->done_total++;
    hb_bx_judge(t, x, got, now, kept);
    hb_bx_end(t, c, x, 1, now, 1);
}

void hb_bx_judge(bthread *t, bexch *x, uint64_t got, int64_t now, int kept)
{
    hb_bench *b = t->b;
    hb_bench_result *res = x->res;
    const hb_bench_config *cfg = &b->cfg;
    breq *q = (breq *)x->rq;

    /* The verdict: an HTTP status of 2xx, or none (a message), and no
     * application status but 0. */
    int ok2xx = (x->status == 0 || (x->status >= 200 && x->status < 300)) && x->app_status <= 0;
    size_t failed = 0; /* a class (HB_FAIL), 0: none */
    if (ok2xx) {
        /* The run's document length, from its first 2xx (a HEAD's is 0:
         * no body, by definition); the request's own likewise. */
        int64_t expect = -1;
        __atomic_compare_exchange_n(&b->doc_len, &expect, (int64_t)got, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        if (!b->scen && !cfg->lengths_vary && expect >= 0 && (uint64_t)expect != got)
            failed = HB_FAIL(fail_length);
        expect = -1;
        __atomic_compare_exchange_n(&q->doc_len, &expect, (int64_t)got, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    }
    /* A scenario's checks; the body's search ran as the body came. An
     * answer past the deadline timed out, though it came between ticks. */
    if (now - x->t_start >= b->timeout_ns)
        failed = HB_FAIL(fail_timeout);
    else if (q->r.expect_length >= 0 && (uint64_t)q->r.expect_length != got)
        failed = HB_FAIL(fail_length);
    else if ((q->r.status_ok != NULL && !q->r.status_ok[x->status < 600 ? x->status : 0]) ||
             (q->r.expect_body_len > 0 && x->found < q->r.expect_body_len))
        failed = HB_FAIL(fail_check);
    if (failed != 0) {
        hb_br_failed(t, x, failed, now);
        if (failed != HB_FAIL(fail_timeout))
            hb_br_timed(x, now); /* (an answer past its deadline is timed out, not timed) */
    } else {
        hb_br_done(t, x, now, ok2xx, kept);
    }
    /* (After: a second that began now was published by them before they
     * counted anything, so a snapshot holds all of this outcome or none.) */
    res->status[x->status < 600 ? x->status : 0]++;
    res->body_bytes += got;
}
