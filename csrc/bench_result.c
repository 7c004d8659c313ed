/* bench_result.c: what a loop thread records for each exchange (counts,
 * latency histograms, the timeline), and the exact merge of the threads'
 * figures into the run's. */
#define _GNU_SOURCE
#include "bench_int.h"

#include <math.h>

void hb_bench_second_percentiles(const hb_second *sec, uint64_t *p50, uint64_t *p99)
{
    uint64_t p[2] = {0, 0},
             rank[2] = {(sec->complete + 1) / 2, sec->complete - sec->complete / 100};
    uint64_t seen = 0;
    for (int k = 0, which = 0; sec->complete > 0 && k < HB_TL_BUCKETS && which < 2; k++) {
        seen += sec->buckets[k];
        while (which < 2 && seen >= rank[which])
            p[which++] = hb_tl_upper(k);
    }
    *p50 = p[0];
    *p99 = p[1];
}

/* The second `now` falls in, grown into when need be; NULL when memory ran
 * out (the timeline then stops, nothing else does). */
hb_second *hb_br_second(bthread *t, int64_t now)
{
    int64_t s = (now - t->b->start) / 1000000000;
    if (s < 0)
        s = 0;
    if (s >= t->tl_cap) {
        int cap = t->tl_cap ? t->tl_cap : 16;
        while (cap <= s)
            cap *= 2;
        hb_second *p = realloc(t->timeline, (size_t)cap * sizeof *p);
        if (p == NULL)
            return NULL;
        memset(p + t->tl_cap, 0, (size_t)(cap - t->tl_cap) * sizeof *p);
        t->timeline = p;
        t->tl_cap = cap;
    }
    if (s >= t->nseconds) {
        /* A second begins: the one moment figures are published, so the
         * cost is a copy a second, none per request. */
        t->nseconds = (int)s + 1;
        if (t->pub != NULL)
            hb_br_publish(t);
    }
    return &t->timeline[s];
}

void hb_br_publish(bthread *t)
{
    pthread_mutex_lock(&t->pub_mu);
    for (int k = 0; k < t->b->nreqs; k++) {
        t->pub[k] = t->res[k];
        t->pub[k].timeline = NULL; /* the thread's own; never the snapshot's */
    }
    t->pub_gen++;
    pthread_mutex_unlock(&t->pub_mu);
}

uint64_t hb_bench_publications(hb_bench *b)
{
    uint64_t n = 0;
    for (int i = 0; i < b->nthreads; i++) {
        bthread *t = &b->threads[i];
        if (t->pub == NULL)
            continue;
        pthread_mutex_lock(&t->pub_mu);
        n += t->pub_gen;
        pthread_mutex_unlock(&t->pub_mu);
    }
    return n;
}

void hb_bench_snapshot(hb_bench *b, int i, hb_bench_result *out)
{
    hb_br_init(out);
    for (int n = 0; n < b->nthreads; n++) {
        bthread *t = &b->threads[n];
        if (t->pub == NULL)
            continue;
        pthread_mutex_lock(&t->pub_mu);
        for (int k = 0; k < b->nreqs; k++)
            if (i < 0 || k == i)
                hb_br_add(out, &t->pub[k]);
        pthread_mutex_unlock(&t->pub_mu);
    }
    const int64_t *doc = i < 0 ? &b->doc_len : i < b->nreqs ? &b->reqs[i].doc_len : NULL;
    out->document_length = doc != NULL ? __atomic_load_n(doc, __ATOMIC_RELAXED) : -1;
}

/* The outcomes the log names, after complete: the failure classes by
 * their field (hb_br_failed's cls), then cancelled. Their names are
 * httpbench.Result's (FAILURE_CLASSES). */
static const struct {
    size_t cls;
    const char *name;
} OUTCOMES[] = {
    {HB_FAIL(fail_connect), "connect"}, {HB_FAIL(fail_receive), "receive"},
    {HB_FAIL(fail_length), "length"},   {HB_FAIL(fail_exceptions), "exceptions"},
    {HB_FAIL(fail_timeout), "timeout"}, {HB_FAIL(fail_tls), "tls"},
    {HB_FAIL(fail_check), "check"},     {HB_FAIL(fail_reset), "reset"},
};
#define NOUTCOMES (sizeof OUTCOMES / sizeof OUTCOMES[0])
#define OUTCOME_CANCELLED ((uint8_t)(NOUTCOMES + 1))

int hb_br_outcome_names(const char **out)
{
    for (size_t i = 0; i < NOUTCOMES; i++)
        out[i] = OUTCOMES[i].name;
    out[NOUTCOMES] = "cancelled";
    return (int)NOUTCOMES + 1;
}

/* One record of ex's outcome in the thread's ring (nothing waits). */
static void log_outcome(bthread *t, const bexch *ex, int64_t now, uint8_t outcome)
{
    const hb_bench *b = t->b;
    int64_t start = ex->t_start ? ex->t_start : ex->t_intended;
    hb_rlog_rec rec = {
        .intended = ex->t_intended - b->start,
        .start = start - b->start,
        .latency = now - ex->t_intended,
        .connect = ex->connect_ns,
        .first = ex->t_first ? ex->t_first - b->start : -1,
        .tx = ex->tx,
        .rx = ex->rx,
        .conn = ex->conn,
        .stream = ex->tag,
        .status = (uint16_t)(ex->status > 0 && ex->status < 1000 ? ex->status : 0),
        .name = (uint16_t)(ex->rq - b->reqs),
        .thread = (uint16_t)t->index,
        .outcome = outcome,
    };
    hb_rlog_put(t->log, &rec);
}

static uint8_t outcome_of(size_t cls)
{
    for (size_t i = 0; i < NOUTCOMES; i++)
        if (OUTCOMES[i].cls == cls)
            return (uint8_t)(i + 1);
    return (uint8_t)NOUTCOMES; /* not reached: every class is named */
}

void hb_br_cancelled(bthread *t, bexch *ex, int64_t now)
{
    ex->res->cancelled++;
    if (t->log != NULL)
        log_outcome(t, ex, now, OUTCOME_CANCELLED);
}

void hb_br_failed(bthread *t, bexch *ex, size_t cls, int64_t now)
{
    hb_second *sec = hb_br_second(t, now); /* (first: a publication it makes is whole) */
    if (t->log != NULL)
        log_outcome(t, ex, now, outcome_of(cls));
    ex->res->failed++;
    (*(uint64_t *)((char *)ex->res + cls))++;
    if (sec != NULL)
        sec->failed++;
    t->failed++;
    __atomic_store_n(&t->live_failed, t->failed, __ATOMIC_RELAXED);
}

void hb_br_failed_on(bthread *t, const bconn *c, bexch *ex, size_t cls, int64_t now)
{
    hb_br_failed(t, ex, cls, now);
    if (c->state < BC_CARRIED)
        ex->res->unopened++;
}

void hb_br_timed(bexch *ex, int64_t now)
{
    hb_bench_result *res = ex->res;
    hb_hist_record(&res->total, (uint64_t)(now - ex->t_intended));
    hb_hist_record(&res->uncorrected, (uint64_t)(now - ex->t_start));
    hb_hist_record(&res->connect, (uint64_t)ex->connect_ns);
    /* Waiting is ab's and hey's: from the request's send, once its
     * connection was made, to the first byte of its answer (ab's
     * beginread - endwrite; hey's resp wait). From the exchange's start it
     * held the connect too, above Processing, and as long as Total
     * wherever every request connects (ab without -k). */
    int64_t sent = ex->t_start + ex->connect_ns, first = ex->t_first ? ex->t_first : now;
    hb_hist_record(&res->waiting, (uint64_t)(first > sent ? first - sent : 0));
    hb_hist_record(&res->processing, (uint64_t)(now - ex->t_start - ex->connect_ns));
}

void hb_br_first_byte(bconn *c, bexch *ex, int64_t now)
{
    ex->t_first = now;
    if (c->t_unheard != 0) {
        hb_hist_record(&ex->res->first_byte, (uint64_t)(now - c->t_unheard));
        c->t_unheard = 0;
    }
}

/* Exchange ex completed at now: counted (non_2xx unless ok2xx; a
 * keep-alive request when kept) and timed, from its intended start
 * (corrected), its start, its first byte, less its connect. */
void hb_br_done(bthread *t, bexch *ex, int64_t now, int ok2xx, int kept)
{
    hb_bench_result *res = ex->res;
    hb_second *sec = hb_br_second(t, now); /* (first: a publication it makes is whole) */
    if (t->log != NULL)
        log_outcome(t, ex, now, HB_RLOG_COMPLETE);
    /* non_2xx counts complete responses only (non_2xx <= complete): one
     * that failed a check is in that class, its status in status[]. */
    if (!ok2xx)
        res->non_2xx++;
    res->complete++;
    t->complete++;
    __atomic_store_n(&t->live_complete, t->complete, __ATOMIC_RELAXED);
    if (sec != NULL) {
        sec->complete++;
        sec->non_2xx += !ok2xx;
        sec->buckets[hb_tl_index((uint64_t)(now - ex->t_intended))]++;
    }
    hb_br_timed(ex, now);
    if (t->naps) /* (the answers' time the loop's naps go by: NAP) */
        t->answer_ns = hb_bp_answer_mean(t->answer_ns, now - ex->t_start);
    if (kept)
        res->keepalive_requests++;
}

/* Takes the head and the Server field of the first final response any
 * thread sees (ab's -v 2 prints that head). */
int hb_br_claim_head(hb_bench *b, const char *raw, size_t len)
{
    if (__atomic_load_n(&b->head_claimed, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&b->mu);
    int first = !b->head_claimed;
    if (first) {
        size_t n = len < sizeof b->first_head - 1 ? len : sizeof b->first_head - 1;
        if (raw != NULL)
            memcpy(b->first_head, raw, n);
        b->first_head[raw != NULL ? n : 0] = 0;
        __atomic_store_n(&b->head_claimed, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&b->mu);
    return first;
}

void hb_br_note_streams(hb_bench_result *r, int limited, uint32_t allowed)
{
    r->streams_heard = 1;
    if (limited && (!r->streams_limited || allowed < r->streams_allowed)) {
        r->streams_allowed = allowed;
        r->streams_limited = 1;
    }
}

void hb_br_note_server(hb_bench *b, const char *value, size_t len)
{
    pthread_mutex_lock(&b->mu);
    size_t n = len < sizeof b->server - 1 ? len : sizeof b->server - 1;
    memcpy(b->server, value, n);
    b->server[n] = 0;
    pthread_mutex_unlock(&b->mu);
}

/* Keeps what the first handshake of the run agreed on, for the report. */
void hb_br_note_tls(hb_bench *b, bconn *c)
{
    if (__atomic_load_n(&b->tls_set, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&b->mu);
    if (!b->tls_set && c->sock.tp->describe(&c->sock, &b->tls) >= 0)
        __atomic_store_n(&b->tls_set, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&b->mu);
}

void hb_bench_result_free(hb_bench_result *r)
{
    free(r->timeline);
    r->timeline = NULL;
    r->nseconds = 0;
}

void hb_br_init(hb_bench_result *r)
{
    memset(r, 0, offsetof(hb_bench_result, total));
    r->error[0] = 0;
    r->timeline = NULL;
    r->nseconds = 0;
    hb_hist_init(&r->total);
    hb_hist_init(&r->uncorrected);
    hb_hist_init(&r->connect);
    hb_hist_init(&r->waiting);
    hb_hist_init(&r->processing);
    hb_hist_init(&r->tls_handshake);
    hb_hist_init(&r->first_byte);
    hb_hist_init(&r->conn_connect);
    hb_hist_init(&r->late);
    r->document_length = -1;
}

/* Adds r's counts, statuses, histograms and first error into out. */
void hb_br_add(hb_bench_result *out, const hb_bench_result *r)
{
#define ADD_COUNT(field, name) out->field += r->field;
    HB_BENCH_COUNTS(ADD_COUNT)
#undef ADD_COUNT
    for (int s = 0; s < 600; s++)
        out->status[s] += r->status[s];
    for (int k = 0; k < HB_BENCH_RESET_CODES; k++)
        out->reset_codes[k] += r->reset_codes[k];
    if (r->streams_heard)
        hb_br_note_streams(out, r->streams_limited, r->streams_allowed);
    if (r->streams_max_used > out->streams_max_used)
        out->streams_max_used = r->streams_max_used;
    hb_hist_merge(&out->total, &r->total);
    hb_hist_merge(&out->uncorrected, &r->uncorrected);
    hb_hist_merge(&out->connect, &r->connect);
    hb_hist_merge(&out->waiting, &r->waiting);
    hb_hist_merge(&out->processing, &r->processing);
    hb_hist_merge(&out->tls_handshake, &r->tls_handshake);
    hb_hist_merge(&out->first_byte, &r->first_byte);
    hb_hist_merge(&out->conn_connect, &r->conn_connect);
    hb_hist_merge(&out->late, &r->late);
    if (out->error[0] == 0 && r->error[0] != 0)
        memcpy(out->error, r->error, sizeof out->error);
}

/* What every result of the run shares: the first response's head, the
 * first handshake, the run's length. */
static void result_common(hb_bench *b, hb_bench_result *out)
{
    memcpy(out->server, b->server, sizeof out->server);
    memcpy(out->first_head, b->first_head, sizeof out->first_head);
    out->tls = b->tls;
    out->elapsed = (double)(b->last_outcome - b->start) / 1e9;
}

/* When c's own time ended, as h2load's client's does: at its last close
 * (one in the teardown, after the run's end, does not count); open, when
 * requests=N were all taken, at its last exchange's end (it had nothing
 * left to do: h2load's client disconnects then); else at the run's end:
 * its last outcome, or the schedule's end (-D's, a stop's) where that
 * came later, as h2load stops its clients then (under a rate, or a server
 * gone quiet, the last answer comes before it). */
static int64_t conn_until(const hb_bench *b, const bconn *c)
{
    int64_t end = b->last_outcome;
    int64_t scheduled = schedule_end(b);
    if (scheduled > end)
        end = scheduled;
    int spent = b->cfg.requests > 0 && b->tickets >= b->cfg.requests;
    if (c->t_closed != 0 && c->t_closed < end)
        return c->t_closed;
    return spent && c->free_at > c->t_began ? c->free_at : end;
}

/* One connection's req/s as h2load reckons a client's: its responses over
 * its own time, from its first connect in the measured part (bconn.t_began)
 * to conn_until; < 0 for one that never opened there, or has no time,
 * which h2load leaves out as it leaves out a client with no time. */
static double conn_rate(const hb_bench *b, const bconn *c)
{
    int64_t until = conn_until(b, c);
    if (c->t_began == 0 || until - c->t_began < 1)
        return -1;
    return (double)c->done_total / ((double)(until - c->t_began) / 1e9);
}

/* The connections' req/s as h2load reports them: min, max, mean, the
 * standard deviation (Welford's) and the share within one deviation of the
 * mean (its within_sd, bounds included: a second pass). */
static void conn_rates(hb_bench *b, hb_bench_result *out)
{
    double mean = 0, m2 = 0, lo = 0, hi = 0;
    uint64_t n = 0;
    for (int i = 0; i < b->nthreads; i++) {
        const bthread *t = &b->threads[i];
        for (int k = 0; t->conns != NULL && k < t->nconns; k++) {
            double r = conn_rate(b, &t->conns[k]);
            if (r < 0)
                continue;
            lo = n == 0 || r < lo ? r : lo;
            hi = n == 0 || r > hi ? r : hi;
            n++;
            double d = r - mean;
            mean += d / (double)n;
            m2 += d * (r - mean);
        }
    }
    double sd = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0;
    uint64_t inside = 0;
    for (int i = 0; i < b->nthreads; i++) {
        const bthread *t = &b->threads[i];
        for (int k = 0; t->conns != NULL && k < t->nconns; k++) {
            double r = conn_rate(b, &t->conns[k]);
            inside += r >= 0 && mean - sd <= r && r <= mean + sd;
        }
    }
    out->conn_rps_min = lo;
    out->conn_rps_max = hi;
    out->conn_rps_mean = mean;
    out->conn_rps_sd = sd;
    out->conn_rps_within = n > 0 ? 100.0 * (double)inside / (double)n : 0;
}

/* The client's own figures: its threads' busy shares, and the requests
 * due that were never sent (the schedule's due before the run's end, no
 * more than requests=N, less those issued). */
static void client_figures(hb_bench *b, hb_bench_result *out)
{
    double sum = 0, most = 0;
    uint64_t due = 0;
    int known = 0;
    for (int i = 0; i < b->nthreads; i++) {
        const bthread *t = &b->threads[i];
        sum += t->busy;
        most = t->busy > most ? t->busy : most;
        due += t->due;
        known |= t->due_known;
    }
    out->busy_mean = b->nthreads > 0 ? sum / b->nthreads : 0;
    out->busy_max = most;
    if (b->cfg.requests > 0 && due > b->cfg.requests)
        due = b->cfg.requests;
    out->unsent = known && b->paced && due > out->issued ? due - out->issued : 0;
}

void hb_bench_collect(hb_bench *b, hb_bench_result *out)
{
    hb_br_init(out);
    for (int i = 0; i < b->nthreads; i++) {
        const bthread *t = &b->threads[i];
        if (t->res == NULL)
            continue;
        for (int k = 0; k < b->nreqs; k++)
            hb_br_add(out, &t->res[k]);
        out->cpu_user += t->cpu_user;
        out->cpu_sys += t->cpu_sys;
        if (t->nseconds > out->nseconds) {
            hb_second *p = realloc(out->timeline, (size_t)t->nseconds * sizeof *p);
            if (p == NULL)
                continue;
            memset(p + out->nseconds, 0, (size_t)(t->nseconds - out->nseconds) * sizeof *p);
            out->timeline = p;
            out->nseconds = t->nseconds;
        }
        for (int s = 0; s < t->nseconds; s++) {
            out->timeline[s].complete += t->timeline[s].complete;
            out->timeline[s].failed += t->timeline[s].failed;
            out->timeline[s].non_2xx += t->timeline[s].non_2xx;
            for (int k = 0; k < HB_TL_BUCKETS; k++)
                out->timeline[s].buckets[k] += t->timeline[s].buckets[k];
        }
    }
    out->document_length = b->doc_len;
    result_common(b, out);
    conn_rates(b, out);
    client_figures(b, out);
}

void hb_bench_collect_request(hb_bench *b, int i, hb_bench_result *out)
{
    hb_br_init(out);
    for (int k = 0; i >= 0 && i < b->nreqs && k < b->nthreads; k++)
        if (b->threads[k].res != NULL)
            hb_br_add(out, &b->threads[k].res[i]);
    out->document_length = i >= 0 && i < b->nreqs ? b->reqs[i].doc_len : -1;
    result_common(b, out);
}

/* Forgets a warmup: every figure of t back to nothing, its connections'
 * too (their responses, and their time from the measured part's start
 * for an open socket, for their req/s over the measured part; a first
 * byte still awaited from a connect in the warmup is not timed, as h2load
 * times no client its warmup opened). */
void hb_br_forget(bthread *t)
{
    for (int k = 0; k < t->b->nreqs; k++)
        hb_br_init(&t->res[k]);
    for (int k = 0; t->conns != NULL && k < t->nconns; k++) {
        bconn *c = &t->conns[k];
        c->done_total = 0;
        c->t_unheard = 0;
        c->t_began = c->sock.fd >= 0 ? t->b->start : 0;
    }
    if (t->pub != NULL)
        hb_br_publish(t);
    if (t->timeline != NULL)
        memset(t->timeline, 0, (size_t)t->tl_cap * sizeof *t->timeline);
    t->nseconds = 0;
    t->complete = t->failed = 0;
    __atomic_store_n(&t->live_issued, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->live_complete, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->live_failed, 0, __ATOMIC_RELAXED);
}
