/* bench_h1.c: HTTP/1.1 as a timing-loop connection carries it (the
 * carrier hb_carrier_h1): one exchange at a time, or a pipelined batch
 * written together and answered in order; the response's head parsed
 * (parser.h) and its body framed. The socket's life and its reads and
 * writes are bench_sock.c's (this file is handed the bytes that came and
 * asked for those to send: its request, written in place); what an
 * exchange counts and how it is judged, bench_exch.c's. */
#define _GNU_SOURCE
#include "bench_int.h"

#include "parser.h"

/* HTTP/1.1's states, after the socket's (bench_sock.c). BC_IDLE is
 * between requests, the socket kept open or not.
 *
 *   state       waits for            on                        next
 *   H1_WRITING  the socket writable  all written               H1_READING
 *                                    a pipeline's write blocks H1_READING, reading ahead
 *                                    a stale socket            a new socket (sent again)
 *   H1_READING  response bytes       a response whole, more    H1_READING (the batch's next)
 *                                    the batch answered        BC_IDLE, or BC_DRAIN when
 *                                                              the server closes
 *                                    closed early, stale       a new socket (sent again)
 *                                    closed early, error       failed: BC_IDLE
 *
 * BC_DRAIN (the socket's, hb_bs_drain): a response whose server said close
 * is counted; the socket waits for the server's FIN before it closes. */
enum { H1_WRITING = BC_CARRIED, H1_READING };

static void st_writing(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_reading(bthread *t, bconn *c, unsigned events, int64_t now);

static const hb_bc_state STATES[] = {
    {"writing", st_writing, LONE_POLL, HB_BC_TO(BC_IDLE) | HB_BC_TO(H1_READING) | HB_BC_OPENING, 1},
    {"reading", st_reading, LONE_RECV,
     HB_BC_TO(BC_IDLE) | HB_BC_TO(BC_DRAIN) | HB_BC_TO(H1_WRITING) | HB_BC_OPENING, 1},
};

/* What HTTP/1.1 keeps of a connection. */
typedef struct {
    int got_bytes; /* a response byte came for this request */
    int have_head;
    int reuse;      /* the response lets the socket be reused */
    int closes;     /* and the server closes after it (hb_response's server_closes) */
    size_t sent;    /* request bytes written */
    int batch;      /* requests of the current write (1, or up to the pipeline) */
    int answered;   /* of which answered; the rest are in flight */
    int read_ahead; /* reading answers while the batch is still being written */
    int refused;    /* the proxy refused the tunnel: its answer is the response */
    hb_buf head;    /* a response head split across reads */
    hb_head_scan scan;
    hb_body body; /* the response body's framing, from its head */
} h1conn;

static h1conn *h1(const bconn *c)
{
    return c->cs;
}

/* A thread's parser scratch (its carried state). */
static hb_response *R(const bthread *t)
{
    return t->carried;
}

/* The run's (b->carried): with a pipeline, the request pipeline times
 * over, for one write of any part of it. */
typedef struct {
    char *pipe_req;
} h1run;

/* The exchange c is answering now: the oldest in flight (the first,
 * between batches). */
static bexch *current(bconn *c)
{
    h1conn *h = h1(c);
    return &c->xs[h->answered < h->batch ? h->answered : 0];
}

static void write_request(bthread *t, bconn *c, int64_t now);
static void take_bytes(bthread *t, bconn *c, const char *p, size_t n, int64_t now);
static void cut_short(bthread *t, bconn *c, int64_t now);
static void h1_tick(bthread *t, bconn *c, int64_t now, int abandon);

/* Waits (epoll) for what the transport said its last call wanted; while
 * a pipeline is still being written as its answers are read, for both. */
static void watch_wants(bthread *t, bconn *c)
{
    if (!t->blocking && h1(c)->read_ahead)
        hb_bs_watch(t, c, EPOLLIN | EPOLLOUT);
    else
        hb_bs_watch_wants(t, c);
}

/* Requests in flight on c: those of its batch not answered yet. */
static int unanswered(const bconn *c)
{
    return h1(c)->batch - h1(c)->answered;
}

/* c's batch is over: the connection goes on the ready stack and the loop
 * starts its next one (not here, so a run of instant failures is a loop,
 * not a recursion). */
static void end_batch(bthread *t, bconn *c)
{
    hb_bc_enter(c, BC_IDLE);
    hb_bc_ready(t, c);
}

/* Every exchange in flight on c failed in class cls (HB_FAIL: one reason
 * for all, they shared the socket), the first saying why; c closes. */
static void h1_fail(bthread *t, bconn *c, size_t cls, int64_t now, const char *why)
{
    h1conn *h = h1(c);
    hb_bench_result *res = current(c)->res;
    int n = unanswered(c);
    for (int i = h->answered; i < h->batch; i++)
        hb_br_failed_on(t, c, &c->xs[i], cls, now);
    if (why != NULL && res->error[0] == 0)
        snprintf(res->error, sizeof res->error, "%s", why);
    hb_bx_end(t, c, &c->xs[h->answered], n, now, 1);
    hb_bs_close(c);
    end_batch(t, c);
}

/* The next response of c's batch is awaited, from its first byte. */
static void begin_reading(bconn *c)
{
    h1conn *h = h1(c);
    hb_bc_enter(c, H1_READING);
    h->have_head = 0;
    h->got_bytes = 0;
    h->scan = (hb_head_scan){0, 0, 0};
    bexch *x = current(c);
    x->t_first = 0;
    x->found = 0;
}

/* A reused socket that the server had closed before answering: send the
 * request again on a new one, once (RFC 9112 section 9.3.1). */
static int retry_stale(bthread *t, bconn *c, int64_t now)
{
    h1conn *h = h1(c);
    if (h->got_bytes || c->served == 0 || current(c)->retried)
        return 0;
    /* A pipeline cut short after some answers: the rest go again, once,
     * when the method allows (RFC 9112 section 9.3.2). */
    if (h->answered > 0 && !t->b->cfg.idempotent) /* (a pipeline: no scenario) */
        return 0;
    /* What is left goes again, in order, at the front. */
    int left = unanswered(c);
    memmove(c->xs, c->xs + h->answered, (size_t)left * sizeof *c->xs);
    for (int i = 0; i < left; i++) {
        c->xs[i].retried = 1;
        c->xs[i].res->retries++;
    }
    h->batch = left;
    h->answered = 0;
    h->sent = 0;
    hb_bs_close(c);
    hb_bs_begin_connect(t, c, now);
    return 1;
}

/* n more bytes of c's batch written: each exchange's share of them, its
 * request's bytes in the batch's order (the log's bytes_sent). */
static void count_sent(bthread *t, bconn *c, uint64_t n)
{
    h1conn *h = h1(c);
    uint64_t len = t->b->lens[c->xs[0].variant], done = h->sent - n;
    for (int k = 0; k < h->batch && n > 0; k++) {
        uint64_t lo = (uint64_t)k * len, hi = lo + len;
        if (done >= hi)
            continue;
        uint64_t take = hi - done < n ? hi - done : n;
        c->xs[k].tx += take;
        done += take;
        n -= take;
    }
}

/* The request bytes of c's batch not yet written, in place: the one
 * request's, or a pipeline's (b->pipe_req repeats it). */
static int h1_output(bthread *t, bconn *c, struct iovec *v)
{
    h1conn *h = h1(c);
    const hb_bench *b = t->b;
    size_t k = c->xs[0].variant;
    const char *req = h->batch > 1 ? ((const h1run *)b->carried)->pipe_req : b->ptrs[k];
    size_t len = (size_t)h->batch * b->lens[k];
    if (h->sent >= len)
        return 0;
    v[0] = (struct iovec){(char *)req + h->sent, len - h->sent};
    return 1;
}

static void h1_sent(bthread *t, bconn *c, size_t n)
{
    h1(c)->sent += n;
    c->xs[0].res->bytes_sent += (uint64_t)n;
    count_sent(t, c, (uint64_t)n);
}

static void write_request(bthread *t, bconn *c, int64_t now)
{
    h1conn *h = h1(c);
    int wr = hb_bs_write(t, c, now);
    if (wr == HB_WR_LEFT)
        return;
    if (wr == HB_WR_FULL) {
        if (h->read_ahead)
            return; /* the wait for both goes on */
        if (h->batch > 1 && !t->blocking && c->sock.wants == HB_SOCK_WANT_WRITE) {
            /* A pipeline's write may wait on a server that waits for its
             * answers to be read: read them meanwhile. */
            begin_reading(c);
            h->read_ahead = 1;
            watch_wants(t, c);
            return;
        }
        hb_bc_enter(c, H1_WRITING);
        watch_wants(t, c);
        return;
    }
    if (!h->read_ahead)
        begin_reading(c);
    h->read_ahead = 0;
    c->sock.wants = HB_SOCK_WANT_READ;
    watch_wants(t, c);
}

static void h1_start(bthread *t, bconn *c, int64_t now)
{
    hb_bench *b = t->b;
    h1conn *h = h1(c);
    hb_bp_wake_cancel(t, c);
    int off;
    int64_t at = hb_bp_lane_at(t, c, now, &off);
    if (at > now) {
        /* Not its turn: it waits for it, its socket closed first when
         * the shape of connections has it off (a VU stopping). */
        if (off)
            hb_bs_close(c);
        hb_bc_enter(c, BC_RATE);
        hb_bp_wake_at(t, c, at, HB_WAKE_PACE);
        return;
    }
    if (!hb_bp_ticket_for(t, c, now)) {
        hb_bc_enter(c, BC_IDLE);
        return;
    }
    /* A pipeline takes up to its depth, all written at once. */
    int batch = 1;
    while (batch < b->cfg.pipeline && hb_bp_ticket(b, now))
        batch++;
    h->batch = batch;
    h->answered = 0;
    bexch *x = &c->xs[0];
    hb_bx_issue(t, c, x, batch, now);
    x->retried = 0;
    /* A pipeline's batch: the same request (b->pipe_req repeats it), each
     * an exchange of its own in order, all timed from the one write. */
    for (int i = 1; i < batch; i++)
        c->xs[i] = *x;
    h->sent = 0;
    if (c->sock.fd < 0)
        hb_bs_begin_connect(t, c, now);
    else
        write_request(t, c, now);
}

static void h1_opened(bthread *t, bconn *c, int64_t now)
{
    write_request(t, c, now);
}

/* The proxy refused the tunnel (407, 502): its answer is the request's
 * response, counted with its status; the socket is then closed. */
static void h1_refused(bthread *t, bconn *c, int64_t now)
{
    h1conn *h = h1(c);
    const char *p = hb_buf_rdptr(&c->tn->reply);
    size_t n = hb_buf_size(&c->tn->reply);
    current(c)->res->bytes_received += n;
    begin_reading(c);
    h->refused = 1;
    h->got_bytes = 1;
    hb_br_first_byte(c, current(c), now);
    take_bytes(t, c, p, n, now);
}

static void h1_connect_ns(bconn *c, int64_t ns)
{
    h1conn *h = h1(c);
    for (int i = h->answered; i < h->batch; i++)
        c->xs[i].connect_ns = ns;
}

/* After a response of c's batch (over: hb_bx_done): the next one is read,
 * or the batch is over (bytes left after its last response mean the
 * socket is not fit for reuse). */
static void next_response(bthread *t, bconn *c, int64_t now, int leftover)
{
    h1conn *h = h1(c);
    h->answered++;
    /* An answer on this socket: what is left may go again if it closes
     * (a server closing after every k of a deeper pipeline, as nginx's
     * keepalive_requests does). Every round answers one at least, so
     * resending ends; a socket that answers nothing gets one resend. */
    for (int i = h->answered; i < h->batch; i++)
        c->xs[i].retried = 0;
    if (h->answered < h->batch) {
        if (!h->reuse || h->refused) {
            cut_short(t, c, now); /* the server closes after this one */
            return;
        }
        begin_reading(c);
        return;
    }
    if (!h->reuse && h->closes && !leftover && !h->refused) {
        /* The server closes: wait for its FIN (the tick bounds the wait).
         * Only then: a response the client will not reuse on its own
         * account (both Content-Length and Transfer-Encoding) owes no FIN,
         * and waiting for one held each request a tick (50 ms). */
        hb_bs_drain(t, c, now);
        return;
    }
    if (!t->b->cfg.keepalive || !h->reuse || leftover || h->refused)
        hb_bs_close(c);
    end_batch(t, c);
}

/* A response is whole: counted, timed, and the socket kept or closed. With
 * more of a pipeline to come (answered < batch after it) the connection
 * reads on, from the bytes after this response. */
static void finish(bthread *t, bconn *c, int64_t now, int leftover)
{
    h1conn *h = h1(c);
    hb_bx_done(t, c, current(c), h->body.got, now, h->reuse && t->b->cfg.keepalive);
    next_response(t, c, now, leftover);
}

/* Parses a head from p[0..n); returns bytes of it used, or -1 after a
 * failure (the request is then over), with h->have_head set when done. */
static ssize_t take_head(bthread *t, bconn *c, const char *p, size_t n, int64_t now)
{
    h1conn *h = h1(c);
    const char *buf = p;
    size_t len = n;
    if (hb_buf_size(&h->head) > 0) {
        if (hb_buf_append(&h->head, p, n) != 0) {
            h1_fail(t, c, HB_FAIL(fail_exceptions), now, "out of memory");
            return -1;
        }
        buf = hb_buf_rdptr(&h->head);
        len = hb_buf_size(&h->head);
    }
    hb_response_reset(R(t));
    R(t)->scan = h->scan;
    int rc = hb_parse_response(R(t), buf, len, current(c)->rq->r.head ? HB_PARSE_HEAD_REQUEST : 0);
    if (rc == HB_PARSE_MORE) {
        h->scan = R(t)->scan;
        if (buf == p && hb_buf_append(&h->head, p, n) != 0) {
            h1_fail(t, c, HB_FAIL(fail_exceptions), now, "out of memory");
            return -1;
        }
        return (ssize_t)n;
    }
    if (rc == HB_PARSE_ERROR && R(t)->error == hb_parse_not_http) {
        char got[64], why[160];
        hb_parse_excerpt(buf, len, got, sizeof got);
        snprintf(why, sizeof why, "%s: got \"%s\"", R(t)->error, got);
        h1_fail(t, c, HB_FAIL(fail_exceptions), now, why);
        return -1;
    }
    if (rc == HB_PARSE_ERROR || R(t)->status == 101) {
        h1_fail(t, c, HB_FAIL(fail_exceptions), now,
                rc == HB_PARSE_ERROR ? R(t)->error : "101 Switching Protocols is not supported");
        return -1;
    }
    /* Bytes of p the head took: all of its part, less what is left after. */
    size_t after = len - R(t)->head_len;
    size_t used = n - after;
    hb_buf_clear(&h->head);
    h->scan = (hb_head_scan){0, 0, 0};
    if (R(t)->status < 200)
        return (ssize_t)used; /* interim: the next head follows */
    bexch *x = current(c);
    hb_bx_head(t, x, R(t)->status, buf, R(t)->head_len);
    for (unsigned i = 0; i < R(t)->num_headers; i++) {
        const hb_header *f = &R(t)->headers[i];
        hb_bx_field(t, x, buf + f->name_off, f->name_len, buf + f->value_off, f->value_len, 0);
    }
    h->have_head = 1;
    h->reuse = R(t)->keep_alive;
    h->closes = R(t)->server_closes;
    current(c)->res->closing += !R(t)->keep_alive;
    hb_body_init(&h->body, R(t)->body, R(t)->content_length);
    return (ssize_t)used;
}

/* Handles n received bytes: heads, then the body through its decoder. */
static void take_bytes(bthread *t, bconn *c, const char *p, size_t n, int64_t now)
{
    h1conn *h = h1(c);
    for (;;) {
        if (!h->have_head) {
            if (n == 0)
                return;
            bexch *x = current(c);
            ssize_t used = take_head(t, c, p, n, now);
            if (used < 0)
                return;
            x->rx += (uint64_t)used;
            p += used;
            n -= (size_t)used;
            continue;
        }
        size_t used, off, dn;
        int rc = hb_body_feed(&h->body, p, n, &used, &off, &dn);
        if (rc == HB_PARSE_ERROR) {
            h1_fail(t, c, HB_FAIL(fail_exceptions), now, h->body.error);
            return;
        }
        hb_bx_data(current(c), p + off, dn);
        current(c)->rx += used;
        p += used;
        n -= used;
        if (rc == HB_PARSE_DONE) {
            uint64_t sock = c->opened;
            finish(t, c, now, n > 0 && h->answered + 1 >= h->batch);
            /* A new socket (the rest of a pipeline sent again after the
             * server said close): what the old one held is not its. */
            if (c->opened != sock || c->state != H1_READING || h->have_head)
                return;
            if (n > 0) {
                h->got_bytes = 1; /* the next response has begun */
                hb_br_first_byte(c, current(c), now);
            }
            continue; /* the pipeline's next response, from the bytes left */
        }
        if (n == 0)
            return;
    }
}

/* n response bytes came: the first of a response noted, then heads and
 * bodies. A short read emptied the socket, unless the transport holds
 * more (a TLS record read whole but not yet handed out). */
static int h1_input(bthread *t, bconn *c, const char *p, size_t n, int64_t now)
{
    h1conn *h = h1(c);
    if (!h->got_bytes) {
        h->got_bytes = 1;
        hb_br_first_byte(c, current(c), now);
    }
    current(c)->res->bytes_received += (uint64_t)n;
    take_bytes(t, c, p, n, now);
    if (c->state != H1_READING)
        return HB_IN_LEFT;
    return n < SCRATCH && !hb_sock_pending(&c->sock) ? HB_IN_ENOUGH : HB_IN_MORE;
}

/* The socket failed: a write's failure, or a close or reset while reading
 * (a response framed by the close is whole then). A stale socket's
 * request goes again; else what is in flight failed. */
static void h1_broke(bthread *t, bconn *c, int writing, int err, int64_t now)
{
    h1conn *h = h1(c);
    if (writing) {
        if (!retry_stale(t, c, now))
            h1_fail(t, c, HB_FAIL(fail_receive), now, err ? strerror(err) : "send failed");
        return;
    }
    if (err == 0 && h->have_head && hb_body_end(&h->body) == HB_PARSE_DONE) {
        h->reuse = 0;
        finish(t, c, now, 0);
        return;
    }
    if (retry_stale(t, c, now))
        return;
    char why[96];
    snprintf(why, sizeof why, "connection %s %s", err == 0 ? "closed" : "reset",
             h->got_bytes ? "before the response was complete" : "before any response byte");
    h1_fail(t, c, HB_FAIL(fail_receive), now, why);
}

/* The server said it closes after a response with more of the pipeline
 * unanswered: those go again on a new socket (once, for a method that may
 * be sent again), else they failed. */
static void cut_short(bthread *t, bconn *c, int64_t now)
{
    h1conn *h = h1(c);
    h->got_bytes = 0;
    if (!retry_stale(t, c, now))
        h1_fail(t, c, HB_FAIL(fail_receive), now,
                "the server closed the connection with pipelined requests unanswered");
}

/* One function per state: what an event on c's socket (events: epoll's,
 * 0 from a lone connection's wait) does in it. */
static void st_writing(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)events;
    write_request(t, c, now);
}

static void st_reading(bthread *t, bconn *c, unsigned events, int64_t now)
{
    h1conn *h = h1(c);
    /* A pipeline still being written waits for both (write_request). */
    if ((events & EPOLLOUT) && h->read_ahead) {
        write_request(t, c, now);
        if (c->state != H1_READING || !(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
            return;
    }
    if (hb_bs_read(t, c, now) == HB_RD_EMPTY)
        watch_wants(t, c);
}

/* Deadlines: the oldest exchange in flight is the first to time out; past
 * a stop's grace what is in flight is cancelled, which is no failure
 * (issued == complete + failed + cancelled). */
static void h1_tick(bthread *t, bconn *c, int64_t now, int abandon)
{
    h1conn *h = h1(c);
    if (c->state == BC_IDLE || c->state == BC_RATE)
        return;
    if (abandon) {
        hb_bs_leave_retry(t, c);
        for (int k = h->answered; k < h->batch; k++)
            hb_br_cancelled(t, &c->xs[k], now);
        hb_bx_end(t, c, &c->xs[h->answered], unanswered(c), now, 0);
        hb_bs_close(c);
        hb_bc_enter(c, BC_IDLE);
        return;
    }
    int64_t oldest = current(c)->t_start;
    if (c->state < BC_CARRIED)
        hb_bs_tick_opening(t, c, now, oldest);
    else if (now - oldest >= t->b->timeout_ns)
        h1_fail(t, c, HB_FAIL(fail_timeout), now, "timed out");
}

static void h1_closed(bconn *c)
{
    h1conn *h = h1(c);
    h->read_ahead = 0;
    h->refused = 0;
    hb_buf_clear(&h->head);
    hb_buf_shrink(&h->head, 65536);
}

static int h1_setup(bconn *c, int depth)
{
    (void)depth; /* (a pipeline's batch is c->xs itself) */
    c->cs = calloc(1, sizeof(h1conn));
    return c->cs != NULL ? 0 : -1;
}

static void h1_release(bconn *c)
{
    h1conn *h = c->cs;
    if (h != NULL)
        hb_buf_free(&h->head);
    free(h);
    c->cs = NULL;
}

/* A pipeline's batch is the connection's exchanges. */
static int h1_depth(const hb_bench_config *cfg)
{
    return cfg->pipeline > 1 ? cfg->pipeline : 1;
}

/* A pipeline writes and reads at once: the event loop's. */
static int h1_lone(const hb_bench_config *cfg)
{
    return cfg->pipeline <= 1;
}

static int h1_prepare(hb_bench *b, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    h1run *run = calloc(1, sizeof *run);
    if (run == NULL)
        return -1;
    b->carried = run;
    const hb_bench_config *cfg = &b->cfg;
    if (cfg->pipeline > 1) {
        run->pipe_req = malloc((size_t)cfg->pipeline * cfg->request_len);
        if (run->pipe_req == NULL)
            return -1;
        for (int i = 0; i < cfg->pipeline; i++)
            memcpy(run->pipe_req + (size_t)i * cfg->request_len, cfg->request, cfg->request_len);
    }
    return 0;
}

static void h1_unprepare(hb_bench *b)
{
    h1run *run = b->carried;
    if (run != NULL)
        free(run->pipe_req);
    free(run);
    b->carried = NULL;
}

static int h1_thread_setup(bthread *t)
{
    t->carried = calloc(1, sizeof(hb_response));
    return t->carried != NULL ? 0 : -1;
}

static void h1_thread_release(bthread *t)
{
    free(t->carried);
    t->carried = NULL;
}

/* Nothing beyond its exchanges: a drain is the socket's. */
static int h1_working(const bthread *t)
{
    (void)t;
    return 0;
}

const hb_carrier hb_carrier_h1 = {
    .name = "HTTP/1.1",
    .states = STATES,
    .nstates = (int)(sizeof STATES / sizeof STATES[0]),
    .depth = h1_depth,
    .lone = h1_lone,
    .naps = 0,
    .prepare = h1_prepare,
    .unprepare = h1_unprepare,
    .thread_setup = h1_thread_setup,
    .thread_release = h1_thread_release,
    .working = h1_working,
    .setup = h1_setup,
    .release = h1_release,
    .start = h1_start,
    .opened = h1_opened,
    .refused = h1_refused,
    .fail = h1_fail,
    .connect_ns = h1_connect_ns,
    .tick = h1_tick,
    .closed = h1_closed,
    .input = h1_input,
    .output = h1_output,
    .sent = h1_sent,
    .broke = h1_broke,
};
