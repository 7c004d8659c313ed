/* bench_h2.c: HTTP/2 as a timing-loop connection carries it (the carrier
 * hb_carrier_h2, bench_int.h). A connection's socket is opened as any
 * other (bench_sock.c); then its session (h2.h) carries up to
 * cfg.streams exchanges at once, each in a fixed slot of c->xs for its
 * life (the session's hooks carry its pointer): taken with a ticket,
 * waiting for a stream (a socket, a session, room under the server's
 * limit, or to be sent again), then on a stream until it closes. Reading
 * a batch of frames ends in one refill: new tickets, the waiting sent,
 * and one write of everything the session has. */
#define _GNU_SOURCE
#include "bench_int.h"

#include "h2.h"
#include "tls.h"

/* A stream the server refuses (REFUSED_STREAM) goes again this many
 * times, then fails as reset: a server that refuses everything must not
 * keep the loop resending. A refusal is the server asking to be asked
 * again (RFC 9113 section 8.7: it is busy, the connection lives on). */
#define MAX_REFUSALS 100
/* A stream a GOAWAY left unprocessed goes on a new socket, first there,
 * as often as the sockets it was left on served something (a server ending
 * connections gracefully, nginx's keepalive_requests), but in three tries
 * on sockets that served nothing, as Connection does: a server that ends
 * every connection before processing anything (GOAWAY with last stream 0)
 * is not asking to be asked again, and each try costs a connect. */
#define GOAWAY_TRIES 3
/* The wait before connecting again after a GOAWAY ended a socket that
 * served nothing: from the first, doubling to the most, so such a server
 * sees a few connects a second, not thousands. A socket that served
 * something reconnects at once (a server's graceful GOAWAY, nginx's
 * keepalive_requests). */
#define GOAWAY_WAIT_FIRST_NS 10000000LL
#define GOAWAY_WAIT_MAX_NS 1000000000LL

/* HTTP/2's one state, after the socket's (bench_sock.c): the session is
 * open, its streams come and go.
 *
 *   state    waits for         on                           next
 *   H2_OPEN  frames, a write   a GOAWAY, the server closed  BC_IDLE (the streams not
 *                                                           processed on a new socket)
 *                              the session broke, a failure failed: BC_IDLE
 *                              a shape's turn ends          BC_RATE
 *                              no keep-alive, stream done   BC_IDLE (a new socket)
 */
enum { H2_OPEN = BC_CARRIED };

static void h2_event(bthread *t, bconn *c, unsigned events, int64_t now);
static void h2_tick(bthread *t, bconn *c, int64_t now, int abandon);

static const hb_bc_state STATES[] = {
    {"open", h2_event, LONE_WATCHED, HB_BC_TO(BC_IDLE) | HB_BC_TO(BC_RATE), 1},
};

/* An exchange's place: free, taken and waiting for a stream (a socket, a
 * session, a slot under the server's limit, or to be sent again), or on a
 * stream. */
enum { BX_FREE = 0, BX_WAITING, BX_OPEN };

/* What HTTP/2 keeps of each exchange slot of a connection. */
typedef struct {
    int place; /* BX_* */
    hb_h2_stream *strm;
    int refusals; /* the times the server refused it */
    int goaways;  /* tries a GOAWAY left unprocessed on a socket that served nothing */
    int again;    /* waiting to be sent again (refused, or a GOAWAY left it) */
} h2slot;

/* What HTTP/2 keeps of a connection: the session of the socket's life,
 * the frames not yet written, the exchanges taken (active: waiting or on
 * a stream), the next slot to look at, the wait before a connect after a
 * fruitless GOAWAY, the read's clock for the session's hooks. */
typedef struct {
    hb_h2 *h2;
    hb_buf tx;
    int active;
    int waiting; /* of which BX_WAITING: submit_waiting looks only while some are */
    int again;   /* of the waiting, those to be sent again: they go first */
    int next_slot;
    int depth;
    int64_t goaway_wait; /* doubling, 0 again once a stream completes */
    int sending;         /* counted in t->sending: a request body is still going out */
    int64_t now;
    /* A socket opened before any ticket (its thread's h2thread counts it): since
     * when. Its first exchange starts then (its connect and the wait for
     * the server's SETTINGS in its latency, as ab counts a connect). */
    int unticketed;
    int64_t began;
    h2slot slots[];
} h2conn;

static h2conn *H(const bconn *c)
{
    return c->cs;
}

/* The run's (b->carried): each variant of its requests as the session
 * sends it, by the index of b->ptrs. */
typedef struct {
    hb_h2_req *reqs;
    size_t n;
} h2run;

static const hb_h2_req *reqs_of(const hb_bench *b)
{
    return ((const h2run *)b->carried)->reqs;
}

/* A thread's (t->carried): its sockets opening before any ticket. */
typedef struct {
    int unticketed;
} h2thread;

static h2thread *T2(const bthread *t)
{
    return t->carried;
}

static h2slot *slot_of(const bconn *c, const bexch *x)
{
    return &H(c)->slots[x - c->xs];
}

/* x's slot to place (again: waiting to be sent again; 0 for any other
 * place), the counts of the waiting and of those sent again kept. */
static void set_place(bconn *c, bexch *x, int place, int again)
{
    h2slot *sl = slot_of(c, x);
    H(c)->waiting += (place == BX_WAITING) - (sl->place == BX_WAITING);
    H(c)->again += again - sl->again;
    sl->place = place;
    sl->again = again;
}

#define FOR_TAKEN(c, x)                                                                            \
    for (bexch *x = (c)->xs; x < (c)->xs + H(c)->depth; x++)                                       \
        if (slot_of(c, x)->place != BX_FREE)

static int h2_depth(const hb_bench_config *cfg)
{
    return cfg->streams > 0 ? cfg->streams : 1;
}

static int depth_of(const hb_bench *b)
{
    return h2_depth(&b->cfg);
}

/* x's slot is free (x over: hb_bx_end). */
static void vacate(bconn *c, bexch *x)
{
    set_place(c, x, BX_FREE, 0);
    slot_of(c, x)->strm = NULL;
    H(c)->active--;
}

/* x is over (counted by the caller; an outcome, or cancelled: hb_bx_end):
 * its slot is free. */
static void free_slot(bthread *t, bconn *c, bexch *x, int64_t now, int outcome)
{
    vacate(c, x);
    hb_bx_end(t, c, x, 1, now, outcome);
}

/* x is over with an outcome (complete or failed): its slot is free. */
static void release(bthread *t, bconn *c, bexch *x, int64_t now)
{
    free_slot(t, c, x, now, 1);
}

/* With many streams in closed loop a connection opens its socket and
 * waits for the server's SETTINGS before it takes a ticket: one it took
 * first would wait there while the other connections ran the run's
 * tickets out (a server slow to accept held a run's tail so, each such
 * connection completing one request). Under a rate the ticket is the
 * schedule's, and with one stream the request goes on the wire with the
 * preface: both take it first. */
static int opens_unticketed(const hb_bench *b)
{
    return !b->paced && b->vus == NULL && b->cfg.streams > 1;
}

static void end_unticketed(bthread *t, bconn *c)
{
    if (H(c)->unticketed) {
        H(c)->unticketed = 0;
        T2(t)->unticketed--;
    }
}

static void take(bthread *t, bconn *c, int64_t now);

/* What happens to an unticketed socket (a failure, a timeout, a close)
 * happens to a request: it takes a ticket if one is left, as a request
 * sent would have failed so; else it goes quietly. */
static void carry(bthread *t, bconn *c, int64_t now)
{
    if (H(c)->unticketed && H(c)->active == 0 && hb_bp_ticket(t->b, now))
        take(t, c, now);
    end_unticketed(t, c);
}

static void note_error(bexch *x, const char *fmt, const char *what)
{
    if (x->res->error[0] == 0)
        snprintf(x->res->error, sizeof x->res->error, fmt, what);
}

static void h2_fail(bthread *t, bconn *c, size_t cls, int64_t now, const char *why)
{
    carry(t, c, now);
    FOR_TAKEN(c, x)
    {
        hb_br_failed_on(t, c, x, cls, now);
        if (why != NULL)
            note_error(x, "%s", why);
        release(t, c, x, now);
    }
    hb_bs_close(c);
    hb_bc_enter(c, BC_IDLE);
    hb_bc_ready(t, c);
}

static void h2_connect_ns(bconn *c, int64_t ns)
{
    FOR_TAKEN(c, x)
    if (slot_of(c, x)->place == BX_WAITING)
        x->connect_ns = ns;
}

/* ---- the session's hooks: owner is the connection, stream the exchange */

static void on_head(void *owner, void *stream, int status)
{
    bconn *c = owner;
    bexch *x = stream;
    if (x->t_first == 0)
        hb_br_first_byte(c, x, H(c)->now);
    hb_bx_head(c->thr, x, status, NULL, 0);
}

static void on_field(void *owner, void *stream, const char *name, size_t nlen, const char *value,
                     size_t vlen, int trailer)
{
    bconn *c = owner;
    hb_bx_field(c->thr, stream, name, nlen, value, vlen, trailer);
}

static void on_data(void *owner, void *stream, const char *p, size_t n)
{
    (void)owner;
    bexch *x = stream;
    x->rx += n;
    hb_bx_data(x, p, n);
}

/* x fails in the reset class, code counted, why saying how. */
static void reset_failed(bthread *t, bconn *c, bexch *x, uint32_t code, int64_t now,
                         const char *why)
{
    hb_br_failed(t, x, HB_FAIL(fail_reset), now); /* (first: hb_br_second's rule) */
    x->res->reset_codes[code < HB_BENCH_RESET_CODES ? code : HB_BENCH_RESET_CODES - 1]++;
    note_error(x, why, hb_h2_code_name(code));
    release(t, c, x, now);
}

/* x was above a GOAWAY's last stream, so not processed (RFC 9113 section
 * 6.8): it waits for the next socket (each resend counted in retries),
 * unless this is the GOAWAY_TRIES-th socket that left it having served
 * nothing: then it fails as reset with the GOAWAY's code. */
static void unsent(bthread *t, bconn *c, bexch *x, int64_t now)
{
    h2slot *sl = slot_of(c, x);
    sl->strm = NULL;
    if (c->served > 0 || ++sl->goaways < GOAWAY_TRIES) {
        x->res->retries++;
        set_place(c, x, BX_WAITING, 1);
        return;
    }
    reset_failed(t, c, x, hb_h2_stats_of(H(c)->h2)->goaway_code, now,
                 "the server ended three connections (GOAWAY %s) before processing anything");
}

static void on_closed(void *owner, void *stream, int how, uint32_t code)
{
    bconn *c = owner;
    bexch *x = stream;
    bthread *t = c->thr;
    int64_t now = H(c)->now;
    slot_of(c, x)->strm = NULL;
    switch (how) {
    case HB_H2_DONE:
        H(c)->goaway_wait = 0;
        vacate(c, x);
        hb_bx_done(t, c, x, x->rx, now, t->b->cfg.keepalive);
        return;
    case HB_H2_REFUSED:
    case HB_H2_RESET:
        /* Refused, it was not processed (RFC 9113 section 8.7): sent
         * again, up to MAX_REFUSALS times. */
        if (how == HB_H2_REFUSED) {
            x->res->refused++;
            if (++slot_of(c, x)->refusals <= MAX_REFUSALS) {
                set_place(c, x, BX_WAITING, 1);
                return;
            }
        }
        reset_failed(t, c, x, code, now, "the server reset a stream: RST_STREAM %s");
        return;
    case HB_H2_UNSENT:
        unsent(t, c, x, now); /* above the GOAWAY's last stream: on the next socket */
        return;
    default: /* HB_H2_BROKEN */
        hb_br_failed(t, x, HB_FAIL(fail_exceptions), now);
        note_error(x, "%s", hb_h2_error(H(c)->h2));
        release(t, c, x, now);
        return;
    }
}

static const hb_h2_hooks HOOKS = {on_head, on_field, on_data, on_closed};

/* ---- streams in and out */

/* How many exchanges c may have taken: the streams asked for, no more
 * than the server allows (one before its SETTINGS come: h2.c), one per
 * socket without keep-alive, none on a session a GOAWAY ends (the next
 * socket takes them). A server that allows none has them all wait, and
 * time out, as HTTP/1.1's requests wait on a server that never answers. */
static int streams_wanted(const hb_bench *b, const bconn *c)
{
    int n = depth_of(b);
    int heard = H(c)->h2 != NULL && hb_h2_stats_of(H(c)->h2)->settings;
    if (!heard && opens_unticketed(b))
        return 0; /* (its socket opens first: refill) */
    if (!b->cfg.keepalive || !heard)
        n = 1; /* (a socket still opening takes one ticket, to open it) */
    if (H(c)->h2 != NULL) {
        uint32_t allowed = hb_h2_streams_allowed(H(c)->h2);
        if (allowed > 0 && allowed < (uint32_t)n)
            n = (int)allowed;
        if (hb_h2_stats_of(H(c)->h2)->goaway)
            n = 0;
    }
    return n;
}

static bexch *take_slot(const hb_bench *b, bconn *c)
{
    int depth = depth_of(b);
    for (int k = 0; k < depth; k++) {
        int i = (H(c)->next_slot + k) % depth;
        if (H(c)->slots[i].place == BX_FREE) {
            H(c)->next_slot = (i + 1) % depth;
            return &c->xs[i];
        }
    }
    return NULL;
}

/* A ticket's exchange in a free slot of c, waiting for its stream. */
static void take(bthread *t, bconn *c, int64_t now)
{
    hb_bench *b = t->b;
    bexch *x = take_slot(b, c);
    hb_bx_issue(t, c, x, 1, now);
    if (H(c)->unticketed) {
        x->t_start = x->t_intended = H(c)->began;
        x->connect_ns = now > H(c)->began ? now - H(c)->began : 1;
        end_unticketed(t, c);
    }
    slot_of(c, x)->refusals = 0;
    slot_of(c, x)->goaways = 0;
    set_place(c, x, BX_WAITING, 0);
    x->tx = reqs_of(t->b)[x->variant].body_len; /* (the log's bytes_sent: the body's) */
    H(c)->active++;
    if ((uint32_t)H(c)->active > x->res->streams_max_used)
        x->res->streams_max_used = (uint32_t)H(c)->active;
}

/* The exchanges waiting go on streams, those sent again only when
 * again_only, while the session takes them. Returns 0, or -1 once the
 * session takes no more. */
static int submit_pass(bthread *t, bconn *c, int64_t now, int again_only)
{
    FOR_TAKEN(c, x)
    {
        if ((again_only ? H(c)->again : H(c)->waiting) == 0)
            return 0; /* (only while some wait: no scan of every slot on every read) */
        h2slot *sl = slot_of(c, x);
        if (sl->place != BX_WAITING || (again_only && !sl->again))
            continue;
        if (c->served == 0 && x->connect_ns > 0)
            x->connect_ns = now - x->t_start;
        if (!hb_h2_can_submit(H(c)->h2))
            return -1;
        sl->strm = hb_h2_submit(H(c)->h2, &reqs_of(t->b)[x->variant], x, &x->tag);
        if (sl->strm != NULL) {
            set_place(c, x, BX_OPEN, 0);
        } else if (errno == ENOMEM) {
            hb_br_failed(t, x, HB_FAIL(fail_exceptions), now);
            note_error(x, "%s", "out of memory");
            release(t, c, x, now);
        } else {
            return -1;
        }
    }
    return 0;
}

static void submit_waiting(bthread *t, bconn *c, int64_t now)
{
    /* With many streams a new connection sends nothing before the server's
     * SETTINGS say how many it may carry: then its first batch goes whole,
     * and its streams answer together, batch after batch, as h2load's do
     * (a first stream sent alone would run out of step with the others for
     * the connection's life: twice the reads and writes per request). The
     * wait is part of the first exchange's connect time. */
    if (H(c)->waiting == 0 || (depth_of(t->b) > 1 && !hb_h2_stats_of(H(c)->h2)->settings))
        return;
    /* Those sent again go first, on the lowest stream ids: they are the
     * oldest, and a server that processes a connection's first N streams
     * and ends it (nginx's keepalive_requests under more streams than N)
     * would otherwise leave the one in the last slot unprocessed on socket
     * after socket. */
    if (H(c)->again > 0 && submit_pass(t, c, now, 1) != 0)
        return;
    (void)submit_pass(t, c, now, 0);
}

static void session_over(bthread *t, bconn *c, int64_t now);
static void broken(bthread *t, bconn *c, int64_t now);

/* c counted in t->sending while a request body is still going out: in
 * the session (the server's window holds it) or in the write buffer (the
 * socket's). */
static void note_sending(bthread *t, bconn *c)
{
    int now_sending =
        H(c)->h2 != NULL && (hb_h2_stats_of(H(c)->h2)->sending > 0 || hb_buf_size(&H(c)->tx) > 0);
    t->sending += now_sending - H(c)->sending;
    H(c)->sending = now_sending;
}

/* The session's frames not yet written. */
static int h2_output(bthread *t, bconn *c, struct iovec *v)
{
    (void)t;
    if (hb_buf_size(&H(c)->tx) == 0)
        return 0;
    v[0] = (struct iovec){hb_buf_rdptr(&H(c)->tx), hb_buf_size(&H(c)->tx)};
    return 1;
}

static void h2_sent(bthread *t, bconn *c, size_t n)
{
    hb_buf_consume(&H(c)->tx, n);
    t->res[0].bytes_sent += (uint64_t)n;
}

/* Writes what the session has to send. Returns 0, or -1 when c closed
 * (its exchanges failed, or the session is over). */
static int flush(bthread *t, bconn *c, int64_t now)
{
    if (hb_h2_output(H(c)->h2, &H(c)->tx) != 0) {
        const char *why = hb_h2_error(H(c)->h2);
        h2_fail(t, c, HB_FAIL(fail_exceptions), now, why[0] ? why : "out of memory");
        return -1;
    }
    int wr = hb_bs_write(t, c, now);
    if (wr == HB_WR_LEFT)
        return -1;
    if (wr == HB_WR_FULL) {
        hb_bs_watch(t, c, EPOLLIN | EPOLLOUT);
        note_sending(t, c);
        return 0;
    }
    hb_buf_shrink(&H(c)->tx, 65536);
    hb_bs_watch(t, c, EPOLLIN);
    note_sending(t, c);
    if (hb_h2_done(H(c)->h2)) {
        session_over(t, c, now);
        return -1;
    }
    return 0;
}

/* Tickets into free slots while c may take them (and, under a rate, while
 * they are due), the waiting sent, one write. */
static void refill(bthread *t, bconn *c, int64_t now)
{
    hb_bench *b = t->b;
    int ending = stopped(b) || (b->end && now >= b->end);
    if (!b->cfg.keepalive && H(c)->h2 != NULL && c->served > 0 && H(c)->active == 0) {
        /* Without keep-alive one stream per socket: the next opens another. */
        hb_bs_close(c);
        hb_bc_enter(c, BC_IDLE);
    }
    int want = streams_wanted(b, c);
    int off;
    int64_t at = hb_bp_lane_at(t, c, now, &off);
    if (off) {
        /* Not among the connections the shape asks for now: once its
         * streams are over, its socket closes and it waits for its turn. */
        want = 0;
        if (H(c)->active == 0) {
            hb_bs_close(c);
            hb_bc_enter(c, BC_RATE);
            hb_bp_wake_at(t, c, at, HB_WAKE_PACE);
            return;
        }
    }
    while (H(c)->active < want) {
        if (at > now) {
            hb_bp_wake_at(t, c, at, HB_WAKE_PACE); /* (its next slot: started then) */
            break;
        }
        if (!hb_bp_ticket_for(t, c, now))
            break;
        take(t, c, now);
        at = hb_bp_lane_at(t, c, now, &off);
    }
    if (want > 0)
        end_unticketed(t, c); /* (SETTINGS came and no ticket was left) */
    if (H(c)->active == 0 && c->sock.fd < 0) {
        /* (No more such sockets than tickets are left for them: each
         * opened here carries one at least, if the thread's own take them.) */
        if (want == 0 && opens_unticketed(b) && c->state == BC_IDLE && !ending &&
            hb_bp_tickets_left(b, now) > (uint64_t)T2(t)->unticketed) {
            H(c)->unticketed = 1;
            H(c)->began = now;
            T2(t)->unticketed++;
            hb_bs_begin_connect(t, c, now);
        }
        return;
    }
    if (c->sock.fd < 0) {
        if (c->state == BC_IDLE)
            hb_bs_begin_connect(t, c, now);
        return;
    }
    if (c->state != H2_OPEN)
        return; /* still opening: the waiting go once it is open */
    submit_waiting(t, c, now);
    flush(t, c, now);
}

static void h2_start(bthread *t, bconn *c, int64_t now)
{
    c->in_ready = 0;
    c->thr = t;
    if (c->state == BC_RATE)
        hb_bc_enter(c, BC_IDLE);
    hb_bp_wake_cancel(t, c);
    refill(t, c, now);
}

static void h2_opened(bthread *t, bconn *c, int64_t now)
{
    const hb_bench_config *cfg = &t->b->cfg;
    if (cfg->transport == &hb_net_tls && !hb_sock_alpn_is(&c->sock, "h2")) {
        h2_fail(t, c, HB_FAIL(fail_exceptions), now,
                hb_sock_alpn_is(&c->sock, "http/1.1")
                    ? "the server did not agree to HTTP/2: ALPN chose http/1.1, not h2"
                    : "the server did not agree to HTTP/2: ALPN chose no protocol");
        return;
    }
    hb_h2_config hc = {(uint32_t)cfg->window, HB_MAX_HEAD, HB_MAX_HEADERS};
    H(c)->h2 = hb_h2_new(&hc, &HOOKS, c);
    if (H(c)->h2 == NULL) {
        h2_fail(t, c, HB_FAIL(fail_exceptions), now, "out of memory");
        return;
    }
    c->served = 0;
    hb_bc_enter(c, H2_OPEN);
    /* Through a proxy's tunnel, what the server said before it was asked
     * (its SETTINGS) may have come with the proxy's answer. */
    if (c->tn != NULL && cfg->tunnel != NULL && hb_buf_size(&c->tn->reply) > 0) {
        H(c)->now = now;
        int rc = hb_h2_input(H(c)->h2, hb_buf_rdptr(&c->tn->reply), hb_buf_size(&c->tn->reply));
        hb_buf_clear(&c->tn->reply);
        if (rc != 0) {
            broken(t, c, now);
            return;
        }
    }
    refill(t, c, now);
}

/* The socket is closing (the server closed it, or a GOAWAY ended the
 * session): streams above a GOAWAY's last stream go again on the next
 * socket, others in flight failed (receive); the waiting wait on for the
 * next socket, unless this one served nothing and said no GOAWAY: then
 * they failed too, as HTTP/1.1's request on a socket closed before any
 * response byte does, or a server that closes every connection at once
 * would be reconnected to without pause until the timeout (found by
 * fuzz_loop). */
static void socket_gone(bthread *t, bconn *c, int64_t now, const char *why)
{
    carry(t, c, now);
    const hb_h2_stats *st = hb_h2_stats_of(H(c)->h2);
    int goaway = st->goaway;
    int32_t last = st->goaway_last;
    FOR_TAKEN(c, x)
    {
        int open = slot_of(c, x)->place == BX_OPEN;
        if (!open && (goaway || c->served > 0))
            continue;
        if (open && goaway && x->tag > last) {
            unsent(t, c, x, now);
            continue;
        }
        hb_br_failed(t, x, HB_FAIL(fail_receive), now);
        note_error(x, "%s", why);
        release(t, c, x, now);
    }
    int fruitless = goaway && c->served == 0;
    hb_bs_close(c);
    hb_bc_enter(c, BC_IDLE);
    if (H(c)->active == 0) {
        hb_bc_ready(t, c);
    } else if (fruitless) {
        int64_t wait = H(c)->goaway_wait == 0 ? GOAWAY_WAIT_FIRST_NS : 2 * H(c)->goaway_wait;
        H(c)->goaway_wait = wait < GOAWAY_WAIT_MAX_NS ? wait : GOAWAY_WAIT_MAX_NS;
        hb_bs_connect_later(t, c, now, H(c)->goaway_wait);
    } else {
        hb_bs_begin_connect(t, c, now);
    }
}

static void session_over(bthread *t, bconn *c, int64_t now)
{
    socket_gone(t, c, now, "the HTTP/2 session ended before the stream did");
}

/* The session broke on what came: it says so to the server (its GOAWAY,
 * one try) and every exchange taken failed. */
static void broken(bthread *t, bconn *c, int64_t now)
{
    char why[sizeof c->xs[0].res->error];
    snprintf(why, sizeof why, "%s", hb_h2_error(H(c)->h2));
    hb_buf_clear(&H(c)->tx);
    if (hb_h2_output(H(c)->h2, &H(c)->tx) == 0)
        hb_bs_write_once(t, c);
    h2_fail(t, c, HB_FAIL(fail_exceptions), now, why);
}

/* Whether a read that returned less than it asked for ends the wake-up's
 * reading. Over TCP it emptied the socket. TLS hands out a record a read:
 * while streams are open it reads on to EAGAIN, as h2load does, taking
 * answers that came while the records read ahead were handled (stopping
 * where OpenSSL's read of the socket came back short cost 1.01 of
 * h2load's CPU a request at (10, 10) against 0.91); with none open that
 * short read (tp->drained) means the read to EAGAIN would find nothing
 * the server was sending: it is spared (one read a request at (1, 1)). */
static int read_enough(bconn *c)
{
    const hb_transport *tp = c->sock.tp;
    return tp->drained == NULL || (H(c)->active == H(c)->waiting && tp->drained(&c->sock));
}

/* Frames came: into the session, its figures counted. The requests the
 * responses free go out in one write after the reading, not one a record.
 * A lone connection reads once a call: its next read blocks, and a stream
 * this one freed is to be sent first (the lone loop calls again at once). */
static int h2_input(bthread *t, bconn *c, const char *p, size_t n, int64_t now)
{
    hb_bench_result *res = &t->res[0];
    H(c)->now = now;
    res->bytes_received += (uint64_t)n;
    const hb_h2_stats *st = hb_h2_stats_of(H(c)->h2);
    uint64_t wire = st->header_bytes_wire, decoded = st->header_bytes_decoded;
    int rc = hb_h2_input(H(c)->h2, p, n);
    res->header_bytes_wire += st->header_bytes_wire - wire;
    res->header_bytes_decoded += st->header_bytes_decoded - decoded;
    if (st->settings)
        hb_br_note_streams(res, st->streams_limited, hb_h2_streams_allowed(H(c)->h2));
    if (rc != 0) {
        broken(t, c, now);
        return HB_IN_LEFT;
    }
    return t->blocking || (n < SCRATCH && read_enough(c)) ? HB_IN_ENOUGH : HB_IN_MORE;
}

/* The socket failed under the session: what was in flight goes again or
 * fails (socket_gone). */
static void h2_broke(bthread *t, bconn *c, int writing, int err, int64_t now)
{
    if (writing)
        h2_fail(t, c, HB_FAIL(fail_receive), now, err ? strerror(err) : "send failed");
    else
        socket_gone(t, c, now,
                    err == 0 ? "connection closed before the HTTP/2 stream ended"
                             : "connection reset before the HTTP/2 stream ended");
}

static void h2_event(bthread *t, bconn *c, unsigned events, int64_t now)
{
    if ((events & EPOLLOUT) && flush(t, c, now) != 0)
        return;
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        return;
    if (hb_bs_read(t, c, now) != HB_RD_LEFT)
        refill(t, c, now);
}

static void h2_tick(bthread *t, bconn *c, int64_t now, int abandon)
{
    hb_bench *b = t->b;
    if (H(c)->unticketed) {
        if (abandon || !hb_bp_tickets_left(b, now)) {
            /* The run's tickets went elsewhere: it goes, having held none. */
            end_unticketed(t, c);
            hb_bs_leave_retry(t, c);
            hb_bs_close(c);
            hb_bc_enter(c, BC_IDLE);
        } else if (c->state != H2_OPEN) {
            hb_bs_tick_opening(t, c, now, H(c)->began);
        } else if (now - H(c)->began >= b->timeout_ns) {
            h2_fail(t, c, HB_FAIL(fail_timeout), now,
                    "timed out waiting for the server's SETTINGS");
        }
        return;
    }
    if (H(c)->active == 0 || c->state == BC_IDLE || c->state == BC_RATE)
        return;
    if (abandon) {
        /* Not finished within the grace: cancelled, which is no failure
         * (issued == complete + failed + cancelled). */
        FOR_TAKEN(c, x)
        {
            hb_br_cancelled(t, x, now);
            free_slot(t, c, x, now, 0);
        }
        hb_bs_leave_retry(t, c);
        hb_bs_close(c);
        hb_bc_enter(c, BC_IDLE);
        return;
    }
    if (c->state != H2_OPEN) {
        /* Opening: the oldest exchange's deadline is the socket's. */
        int64_t oldest = INT64_MAX;
        FOR_TAKEN(c, x)
        if (x->t_start < oldest)
            oldest = x->t_start;
        hb_bs_tick_opening(t, c, now, oldest);
        return;
    }
    /* Each stream its own deadline: one late stream is reset (CANCEL),
     * the others go on. */
    int late = 0;
    FOR_TAKEN(c, x)
    {
        if (now - x->t_start < b->timeout_ns)
            continue;
        if (slot_of(c, x)->place == BX_OPEN)
            hb_h2_cancel(H(c)->h2, slot_of(c, x)->strm);
        hb_br_failed(t, x, HB_FAIL(fail_timeout), now);
        note_error(x, "%s", "timed out");
        release(t, c, x, now);
        late = 1;
    }
    if (late)
        refill(t, c, now);
}

/* The proxy refused the tunnel: no stream to answer, so what the proxy
 * said fails them all. */
static void h2_refused(bthread *t, bconn *c, int64_t now)
{
    char why[160];
    const hb_response *r = &c->tn->head;
    snprintf(why, sizeof why, "the proxy answered CONNECT with %d %.*s", r->status,
             (int)r->reason_len, hb_buf_rdptr(&c->tn->reply) + r->reason_off);
    h2_fail(t, c, HB_FAIL(fail_connect), now, why);
}

/* The session was the socket's. */
static void h2_closed(bconn *c)
{
    hb_h2_free(H(c)->h2);
    H(c)->h2 = NULL;
    hb_buf_clear(&H(c)->tx);
    c->thr->sending -= H(c)->sending;
    H(c)->sending = 0;
}

static int h2_setup(bconn *c, int depth)
{
    h2conn *h = calloc(1, sizeof *h + (size_t)depth * sizeof h->slots[0]);
    if (h == NULL)
        return -1;
    h->depth = depth;
    c->cs = h;
    return 0;
}

static void h2_release(bconn *c)
{
    h2conn *h = c->cs;
    if (h != NULL) {
        hb_h2_free(h->h2);
        hb_buf_free(&h->tx);
    }
    free(h);
    c->cs = NULL;
}

/* Many streams: a lone connection would read once before it sends what
 * the read freed (a TLS read is one record), where the event loop reads on
 * to EAGAIN and sends them all in one write (one connection of 100 streams
 * over TLS: 7.0 us a request in epoll, 11.5 lone). */
static int h2_lone(const hb_bench_config *cfg)
{
    return cfg->streams <= 1;
}

/* The run's requests as the session sends them, once before it starts. */
static int h2_prepare(hb_bench *b, char *err, size_t errlen)
{
    h2run *run = calloc(1, sizeof *run);
    if (run == NULL)
        return -1;
    b->carried = run;
    size_t n = 0;
    for (int i = 0; i < b->nreqs; i++)
        n += b->reqs[i].r.nvariants;
    run->reqs = calloc(n, sizeof *run->reqs);
    if (run->reqs == NULL)
        return -1;
    run->n = n;
    const char *scheme = b->cfg.transport == &hb_net_tls ? "https" : "http";
    for (size_t i = 0; i < n; i++) {
        int rc = hb_h2_req_from_http1(&run->reqs[i], b->ptrs[i], b->lens[i], scheme, err, errlen);
        if (rc != 0) {
            errno = rc == -2 ? ENOMEM : EINVAL;
            return -1;
        }
    }
    return 0;
}

static void h2_unprepare(hb_bench *b)
{
    h2run *run = b->carried;
    for (size_t i = 0; run != NULL && run->reqs != NULL && i < run->n; i++)
        hb_h2_req_free(&run->reqs[i]);
    if (run != NULL)
        free(run->reqs);
    free(run);
    b->carried = NULL;
}

static int h2_thread_setup(bthread *t)
{
    t->carried = calloc(1, sizeof(h2thread));
    return t->carried != NULL ? 0 : -1;
}

static void h2_thread_release(bthread *t)
{
    free(t->carried);
    t->carried = NULL;
}

static int h2_working(const bthread *t)
{
    return T2(t)->unticketed > 0;
}

const hb_carrier hb_carrier_h2 = {
    .name = "HTTP/2",
    .states = STATES,
    .nstates = (int)(sizeof STATES / sizeof STATES[0]),
    .depth = h2_depth,
    .lone = h2_lone,
    .naps = 1,
    .prepare = h2_prepare,
    .unprepare = h2_unprepare,
    .thread_setup = h2_thread_setup,
    .thread_release = h2_thread_release,
    .working = h2_working,
    .setup = h2_setup,
    .release = h2_release,
    .start = h2_start,
    .opened = h2_opened,
    .refused = h2_refused,
    .fail = h2_fail,
    .connect_ns = h2_connect_ns,
    .tick = h2_tick,
    .closed = h2_closed,
    .input = h2_input,
    .output = h2_output,
    .sent = h2_sent,
    .broke = h2_broke,
};
