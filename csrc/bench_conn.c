/* bench_conn.c: the timing loop's connection machine (its states and
 * transitions in the table below) and the loops that drive it. A
 * connection's socket (connect, tunnel, handshake, reconnect) is apart
 * from the exchanges it carries (bexch: one request's ticket, clock and
 * outcome), which it holds in order in c->xs: [answered, batch) are in
 * flight, the oldest (hb_bc_current) the one being answered. */
#define _GNU_SOURCE
#include "bench_int.h"

/* A connection's states, every transition in one place; each state's event
 * handler is one function (st_*), and a lone connection (one per thread,
 * closed loop) waits in each as `lone` says, in recv, poll or a sleep,
 * where the event loop waits in epoll.
 *
 *   state          waits for                 on                        next
 *   BC_IDLE        a ticket (start_request)  a ticket, socket open     BC_WRITING
 *                                            a ticket, no socket       BC_CONNECTING
 *                                            paced, not yet due        BC_RATE
 *                                            none left                 BC_IDLE (the thread ends)
 *   BC_RATE        its intended start        due (start_due)           as BC_IDLE's ticket
 *   BC_CONNECTING  connect(2)'s completion   connected, via a proxy    BC_TUNNEL
 *                                            connected, over TLS       BC_HANDSHAKE
 *                                            connected                 BC_WRITING
 *                                            refused, more addresses   BC_CONNECTING (the next)
 *                                            a Unix backlog full       BC_RETRY
 *                                            refused                   failed: BC_IDLE
 *   BC_TUNNEL      the CONNECT's answer      2xx                       BC_HANDSHAKE
 *                                            a refusal                 its answer is the response
 *   BC_HANDSHAKE   the TLS handshake         done                      BC_WRITING
 *                                            failed                    failed (tls): BC_IDLE
 *   BC_WRITING     the socket writable       all written               BC_READING
 *                                            a pipeline's write blocks BC_READING, reading ahead
 *   BC_READING     response bytes            a response whole, more    BC_READING (the batch's next)
 *                                            the batch answered        BC_IDLE, or BC_DRAIN when
 *                                                                      the server closes
 *                                            closed early, stale       BC_CONNECTING (sent again)
 *                                            closed early, error       failed: BC_IDLE
 *   BC_DRAIN       the server's FIN          FIN, bytes, a tick        closed: BC_IDLE
 *   BC_RETRY       next_try (retry_due):     due                       BC_CONNECTING
 *                  a Unix backlog was full,  past the timeout          failed (connect)
 *                  or a GOAWAY ended a
 *                  socket that served none
 *   any            the request's deadline    tick()                    failed (timeout); past a
 *                                                                      stop's grace, cancelled
 */
enum { LONE_NONE = 0, LONE_RECV, LONE_POLL, LONE_SLEEP };

static void st_connecting(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_tunnel(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_handshake(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_writing(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_reading(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_drain(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_between(bthread *t, bconn *c, unsigned events, int64_t now);

static const struct {
    void (*on_event)(bthread *t, bconn *c, unsigned events, int64_t now);
    int lone; /* LONE_*: how a lone connection waits in this state */
} STATES[] = {
    [BC_IDLE] = {st_between, LONE_NONE},          [BC_RATE] = {st_between, LONE_NONE},
    [BC_CONNECTING] = {st_connecting, LONE_POLL}, [BC_TUNNEL] = {st_tunnel, LONE_POLL},
    [BC_HANDSHAKE] = {st_handshake, LONE_POLL},   [BC_WRITING] = {st_writing, LONE_POLL},
    [BC_READING] = {st_reading, LONE_RECV},       [BC_DRAIN] = {st_drain, LONE_RECV},
    [BC_RETRY] = {st_between, LONE_SLEEP},        [BC_H2] = {hb_h2l_event, LONE_NONE},
};

static void write_request(bthread *t, bconn *c, int64_t now);
static void connect_addr(bthread *t, bconn *c, int64_t now);
static void retry_later(bthread *t, bconn *c, int64_t now);
static void take_bytes(bthread *t, bconn *c, const char *p, size_t n, int64_t now);
static void bench_cut_short(bthread *t, bconn *c, int64_t now);

void hb_bc_watch(bthread *t, bconn *c, unsigned events)
{
    if (c->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(t->ep, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->sock.fd, &ev);
    c->events = events;
}

/* Waits (epoll) for what the transport said its last call wanted; while
 * a pipeline is still being written as its answers are read, for both. */
static void watch_wants(bthread *t, bconn *c)
{
    if (t->blocking)
        return;
    if (c->read_ahead)
        hb_bc_watch(t, c, EPOLLIN | EPOLLOUT);
    else
        hb_bc_watch(t, c, c->sock.wants == HB_SOCK_WANT_WRITE ? EPOLLOUT : EPOLLIN);
}

void hb_bc_close(bconn *c)
{
    hb_sock_close(&c->sock); /* also takes it out of the epoll set */
    c->events = 0;
    c->read_ahead = 0;
    c->refused = 0;
    c->served = 0;
    c->paused = 0;
    hb_buf_clear(&c->head);
    hb_buf_shrink(&c->head, 65536);
    hb_h2_free(c->h2); /* the session was the socket's */
    c->h2 = NULL;
    hb_buf_clear(&c->tx);
}

/* Requests in flight on c: those of its batch not answered yet. */
static int unanswered(const bconn *c)
{
    return c->batch - c->answered;
}

/* The connect's time, in each exchange the new socket carries. */
static void set_connect_ns(bthread *t, bconn *c, int64_t ns)
{
    if (t->b->cfg.http2) {
        hb_h2l_connect_ns(c, ns);
        return;
    }
    for (int i = c->answered; i < c->batch; i++)
        c->xs[i].connect_ns = ns;
}

/* n of c's requests are over, and with them its batch: the connection goes
 * on the ready stack and the loop starts its next one (not here, so a run
 * of instant failures is a loop, not a recursion). */
static void end_batch(bthread *t, bconn *c, int n, int64_t now)
{
    t->inflight -= n;
    c->state = BC_IDLE;
    c->free_at = now;
    t->ready[t->nready++] = c;
    __atomic_store_n(&t->b->last_outcome, now, __ATOMIC_RELAXED);
}

/* Every exchange in flight on c failed in class cls (HB_FAIL: one reason
 * for all, they shared the socket), the first saying why; c closes. */
static void bc_fail(bthread *t, bconn *c, size_t cls, int64_t now, const char *why)
{
    if (t->b->cfg.http2) {
        hb_h2l_fail_all(t, c, cls, now, why);
        return;
    }
    hb_bench_result *res = hb_bc_current(c)->res;
    int n = unanswered(c);
    for (int i = c->answered; i < c->batch; i++)
        hb_br_failed(t, &c->xs[i], cls, now);
    if (why != NULL && res->error[0] == 0)
        snprintf(res->error, sizeof res->error, "%s", why);
    hb_bc_close(c);
    end_batch(t, c, n, now);
}

/* The next response of c's batch is awaited, from its first byte. */
static void begin_reading(bconn *c)
{
    c->state = BC_READING;
    c->have_head = 0;
    c->got_bytes = 0;
    c->scan = (hb_head_scan){0, 0, 0};
    bexch *x = hb_bc_current(c);
    x->t_first = 0;
    x->found = 0;
}

/* A lone connection waits in recv itself: a blocking socket whose timeouts
 * bring the thread back every tick to look at deadlines and the stop flag. */
static void connected(bthread *t, bconn *c, int64_t now)
{
    if (t->b->cfg.http2) {
        hb_h2l_opened(t, c, now);
        return;
    }
    if (t->blocking && hb_sock_set_blocking(&c->sock, t->b->tick_ns) != 0) {
        bc_fail(t, c, HB_FAIL(fail_connect), now, strerror(errno));
        return;
    }
    write_request(t, c, now);
}

/* Connecting to c->addr failed with err: the next address, while one is
 * left untried, else a connect failure. */
static void connect_failed(bthread *t, bconn *c, int err, int64_t now)
{
    const hb_bench_config *cfg = &t->b->cfg;
    hb_bc_close(c);
    if (++c->addr_tries < cfg->naddrs) {
        c->addr = (c->addr + 1) % cfg->naddrs;
        connect_addr(t, c, now);
        return;
    }
    bc_fail(t, c, HB_FAIL(fail_connect), now, strerror(err));
}

/* Drives the transport's handshake; its time counts in the connect time
 * (ab's Connect row) and in a histogram of its own. */
static void handshake(bthread *t, bconn *c, int64_t now)
{
    for (;;) {
        if (c->sock.tp->handshake(&c->sock) == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN) {
            c->state = BC_HANDSHAKE;
            watch_wants(t, c);
            return;
        }
        bc_fail(t, c, HB_FAIL(fail_tls), now, hb_sock_strerror(&c->sock, errno));
        return;
    }
    /* A handshake is CPU work: the clock after it, not the event's. */
    now = hb_now_ns();
    hb_bench_result *res = hb_bc_current(c)->res;
    hb_hist_record(&res->tls_handshake, (uint64_t)(now - c->t_handshake));
    set_connect_ns(t, c, now - c->t_connect);
    if (c->sock.tp->describe(&c->sock, NULL) == 1)
        res->tls_resumed++;
    else
        res->tls_full++;
    hb_br_note_tls(t->b, c);
    connected(t, c, now);
}

/* The connect to c->addr completed: that address serves the rest of the
 * run, on every connection. */
/* The connection is made (through a proxy's tunnel, if any): the
 * transport's handshake, else the request. */
static void opened(bthread *t, bconn *c, int64_t now)
{
    set_connect_ns(t, c, now - c->t_connect);
    if (c->sock.tp->handshake != NULL) {
        c->t_handshake = now;
        handshake(t, c, now);
        return;
    }
    connected(t, c, now);
}

/* Steps the CONNECT through a forward proxy; its round trip counts in the
 * connect time. A refusal (407, 502) is the request's response, counted
 * with its status; the socket is then closed. */
static void tunnel(bthread *t, bconn *c, int64_t now)
{
    int rc = hb_tunnel_step(c->tn, &c->sock);
    if (rc == HB_TUNNEL_OPEN) {
        opened(t, c, now);
    } else if (rc == HB_TUNNEL_WAIT) {
        c->state = BC_TUNNEL;
        watch_wants(t, c);
    } else if (rc == HB_TUNNEL_REFUSED && t->b->cfg.http2) {
        /* No stream to answer: what the proxy said fails them all. */
        char why[160];
        const hb_response *r = &c->tn->head;
        snprintf(why, sizeof why, "the proxy answered CONNECT with %d %.*s", r->status,
                 (int)r->reason_len, hb_buf_rdptr(&c->tn->reply) + r->reason_off);
        bc_fail(t, c, HB_FAIL(fail_connect), now, why);
    } else if (rc == HB_TUNNEL_REFUSED) {
        const char *p = hb_buf_rdptr(&c->tn->reply);
        size_t n = hb_buf_size(&c->tn->reply);
        hb_bc_current(c)->res->bytes_received += n;
        begin_reading(c);
        c->refused = 1;
        c->got_bytes = 1;
        hb_bc_current(c)->t_first = now;
        take_bytes(t, c, p, n, now);
    } else if (errno == EPROTO) {
        char why[160];
        snprintf(why, sizeof why, "the proxy's answer to CONNECT: %s", hb_tunnel_error(c->tn));
        bc_fail(t, c, HB_FAIL(fail_exceptions), now, why);
    } else {
        bc_fail(t, c, HB_FAIL(fail_receive), now,
                errno == ECONNRESET ? "the proxy closed the connection before answering CONNECT"
                                    : strerror(errno));
    }
}

static void connect_done(bthread *t, bconn *c, int64_t now)
{
    const hb_bench_config *cfg = &t->b->cfg;
    __atomic_store_n(&t->b->addr_good, c->addr, __ATOMIC_RELAXED);
    if (cfg->tunnel != NULL) {
        if (c->tn == NULL && (c->tn = calloc(1, sizeof *c->tn)) == NULL) {
            bc_fail(t, c, HB_FAIL(fail_connect), now, "out of memory");
            return;
        }
        hb_tunnel_begin(c->tn, cfg->tunnel, cfg->tunnel_len);
        tunnel(t, c, now);
        return;
    }
    opened(t, c, now);
}

static void connect_addr(bthread *t, bconn *c, int64_t now)
{
    int rc = c->sock.tp->connect_start(&c->sock, &t->b->cfg.addrs[c->addr]);
    if (rc == 0) {
        connect_done(t, c, now);
        return;
    }
    if (rc < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            bc_fail(t, c, HB_FAIL(fail_connect), now, strerror(errno)); /* no socket at all */
        else if (errno == EAGAIN && now - c->t_connect < RETRY_FOR_NS)
            retry_later(t, c, now);
        else
            connect_failed(t, c, errno, now);
        return;
    }
    c->state = BC_CONNECTING;
    watch_wants(t, c);
}

/* A Unix socket's connect(2) fails with EAGAIN, not EINPROGRESS, while the
 * server's backlog is full: the server is only behind on accept(), so the
 * connect goes again shortly (TCP would have queued the SYN and retried). */
static void retry_later(bthread *t, bconn *c, int64_t now)
{
    c->backoff = c->backoff == 0             ? RETRY_FIRST_NS
                 : c->backoff < RETRY_MAX_NS ? 2 * c->backoff
                                             : RETRY_MAX_NS;
    t->retrying++;
    c->state = BC_RETRY;
    c->next_try = now + c->backoff;
}

/* Connects again each connection in BC_RETRY whose time has come; returns
 * the earliest still to come, INT64_MAX if none. */
static int64_t retry_due(bthread *t, int64_t now)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < t->nconns && t->retrying > 0; i++) {
        bconn *c = &t->conns[i];
        if (c->state != BC_RETRY)
            continue;
        if (now >= c->next_try) {
            t->retrying--;
            c->state = BC_CONNECTING;
            if (c->paused) {
                c->paused = 0;
                hb_bc_begin_connect(t, c, now);
            } else {
                connect_addr(t, c, now); /* (BC_RETRY again, counted again, if still full) */
            }
            if (c->state == BC_RETRY && c->next_try < next)
                next = c->next_try;
        } else if (c->next_try < next) {
            next = c->next_try;
        }
    }
    return next;
}

/* A new socket for c: the resolved addresses in turn, from the one that
 * worked last (as getaddrinfo's order and Connection have it: a name with
 * ::1 first and a server on 127.0.0.1 alone still connects). */
void hb_bc_begin_connect(bthread *t, bconn *c, int64_t now)
{
    hb_bc_current(c)->res->connects++;
    if (c->opened++ > 0)
        hb_bc_current(c)->res->reconnects++;
    c->t_connect = now;
    c->backoff = 0;
    c->addr = __atomic_load_n(&t->b->addr_good, __ATOMIC_RELAXED);
    c->addr_tries = 0;
    connect_addr(t, c, now);
}

void hb_bc_connect_later(bthread *t, bconn *c, int64_t now, int64_t wait)
{
    c->t_connect = now;
    c->paused = 1; /* (counted when made, by retry_due) */
    t->retrying++;
    c->state = BC_RETRY;
    c->next_try = now + wait;
}

/* A reused socket that the server had closed before answering: send the
 * request again on a new one, once (RFC 9112 section 9.3.1). */
static int retry_stale(bthread *t, bconn *c, int64_t now)
{
    if (c->got_bytes || c->served == 0 || hb_bc_current(c)->retried)
        return 0;
    /* A pipeline cut short after some answers: the rest go again, once,
     * when the method allows (RFC 9112 section 9.3.2). */
    if (c->answered > 0 && !t->b->cfg.idempotent) /* (a pipeline: no scenario) */
        return 0;
    /* What is left goes again, in order, at the front. */
    int left = unanswered(c);
    memmove(c->xs, c->xs + c->answered, (size_t)left * sizeof *c->xs);
    for (int i = 0; i < left; i++) {
        c->xs[i].retried = 1;
        c->xs[i].res->retries++;
    }
    c->batch = left;
    c->answered = 0;
    c->sent = 0;
    hb_bc_close(c);
    hb_bc_begin_connect(t, c, now);
    return 1;
}

/* n more bytes of c's batch written: each exchange's share of them, its
 * request's bytes in the batch's order (the log's bytes_sent). */
static void count_sent(bconn *c, uint64_t n)
{
    uint64_t len = c->xs[0].req_len, done = c->sent - n;
    for (int k = 0; k < c->batch && n > 0; k++) {
        uint64_t lo = (uint64_t)k * len, hi = lo + len;
        if (done >= hi)
            continue;
        uint64_t take = hi - done < n ? hi - done : n;
        c->xs[k].tx += take;
        done += take;
        n -= take;
    }
}

static void write_request(bthread *t, bconn *c, int64_t now)
{
    const char *req = c->batch > 1 ? t->b->pipe_req : c->xs[0].req;
    size_t len = (size_t)c->batch * c->xs[0].req_len;
    while (c->sent < len) {
        struct iovec rest = {(char *)req + c->sent, len - c->sent};
        ssize_t n = c->sock.tp->writev(&c->sock, &rest, 1, 0);
        if (n > 0) {
            c->sent += (size_t)n;
            c->xs[0].res->bytes_sent += (uint64_t)n;
            count_sent(c, (uint64_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (c->read_ahead)
                return; /* the wait for both goes on */
            if (c->batch > 1 && !t->blocking && c->sock.wants == HB_SOCK_WANT_WRITE) {
                /* A pipeline's write may wait on a server that waits for
                 * its answers to be read: read them meanwhile. */
                begin_reading(c);
                c->read_ahead = 1;
                watch_wants(t, c);
                return;
            }
            c->state = BC_WRITING;
            watch_wants(t, c);
            return;
        }
        if (n < 0 && errno == EPROTO)
            bc_fail(t, c, HB_FAIL(fail_tls), now, hb_sock_strerror(&c->sock, errno));
        else if (!retry_stale(t, c, now))
            bc_fail(t, c, HB_FAIL(fail_receive), now, n < 0 ? strerror(errno) : "send failed");
        return;
    }
    if (!c->read_ahead)
        begin_reading(c);
    c->read_ahead = 0;
    c->sock.wants = HB_SOCK_WANT_READ;
    watch_wants(t, c);
}

void hb_bc_issue(bthread *t, bconn *c, bexch *x, int n, int64_t now)
{
    hb_bp_choose(t, c, x);
    x->res->issued += (uint64_t)n;
    __atomic_store_n(&t->live_issued, t->live_issued + (uint64_t)n, __ATOMIC_RELAXED);
    t->inflight += n;
    x->t_intended = t->b->paced ? c->next_at : now;
    if (t->b->paced) {
        /* How late against its schedule; and whether because its
         * connection was still busy when it was due (its last exchange
         * ended after that), not because the thread was late to wake. */
        hb_hist_record(&x->res->late, (uint64_t)(now > c->next_at ? now - c->next_at : 0));
        if (c->free_at > c->next_at)
            x->res->late_busy += (uint64_t)n;
    }
    hb_bp_advance(t, c);
    x->t_start = now;
    x->t_first = 0;
    x->connect_ns = 0;
    x->status = 0;
    x->tx = x->rx = 0;
}

static void start_request(bthread *t, bconn *c, int64_t now)
{
    hb_bench *b = t->b;
    if (b->cfg.http2) {
        hb_h2l_start(t, c, now);
        return;
    }
    if (c->state == BC_RATE)
        t->rate_waiting--;
    if (b->vus != NULL && !stopped(b) && !(b->end && now >= b->end)) {
        int64_t at = hb_bp_vus_next(b, c, now);
        if (at > now) {
            /* Not among the connections the shape asks for now: its socket
             * closes (a VU stopping) and it waits for its turn. */
            hb_bc_close(c);
            c->next_at = at;
            c->state = BC_RATE;
            t->rate_waiting++;
            return;
        }
    }
    if (b->paced && c->next_at > now && !stopped(b) && !(b->end && now >= b->end)) {
        c->state = BC_RATE;
        t->rate_waiting++;
        return;
    }
    if (!hb_bp_ticket(b, now)) {
        c->state = BC_IDLE;
        return;
    }
    /* A pipeline takes up to its depth, all written at once. */
    int batch = 1;
    while (batch < b->cfg.pipeline && hb_bp_ticket(b, now))
        batch++;
    c->batch = batch;
    c->answered = 0;
    bexch *x = &c->xs[0];
    hb_bc_issue(t, c, x, batch, now);
    x->retried = 0;
    /* A pipeline's batch: the same request (b->pipe_req repeats it), each
     * an exchange of its own in order, all timed from the one write. */
    for (int i = 1; i < batch; i++)
        c->xs[i] = *x;
    c->sent = 0;
    if (c->sock.fd < 0)
        hb_bc_begin_connect(t, c, now);
    else
        write_request(t, c, now);
}

/* The end of a drain: the socket closes and the connection is ready. The
 * run's last outcome stays the response's (next_response noted it): the
 * wait for a FIN is no part of the run's time. */
static void drained(bthread *t, bconn *c)
{
    t->draining--;
    hb_bc_close(c);
    c->state = BC_IDLE;
    t->ready[t->nready++] = c;
}

/* BC_DRAIN: reads until the server's close (read 0). Anything else ends
 * the wait too: bytes after a last response (nothing to read them as), an
 * error, or a lone connection's blocking read timing out after a tick. */
static void drain(bthread *t, bconn *c)
{
    ssize_t n;
    do
        n = c->sock.tp->read(&c->sock, t->scratch, SCRATCH);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !t->blocking) {
        hb_bc_watch(t, c, EPOLLIN);
        return;
    }
    drained(t, c);
}

/* After a response of c's batch: the next one is read, or the batch is
 * over (bytes left after its last response mean the socket is not fit for
 * reuse). */
static void next_response(bthread *t, bconn *c, int64_t now, int leftover)
{
    t->inflight--;
    c->answered++;
    /* An answer on this socket: what is left may go again if it closes
     * (a server closing after every k of a deeper pipeline, as nginx's
     * keepalive_requests does). Every round answers one at least, so
     * resending ends; a socket that answers nothing gets one resend. */
    for (int i = c->answered; i < c->batch; i++)
        c->xs[i].retried = 0;
    if (c->answered < c->batch) {
        __atomic_store_n(&t->b->last_outcome, now, __ATOMIC_RELAXED);
        if (!c->reuse || c->refused) {
            bench_cut_short(t, c, now); /* the server closes after this one */
            return;
        }
        begin_reading(c);
        return;
    }
    if (!c->reuse && !leftover && !c->refused) {
        /* The server closes: wait for its FIN (tick() bounds the wait). */
        c->state = BC_DRAIN;
        c->t_wait = now;
        t->draining++;
        __atomic_store_n(&t->b->last_outcome, now, __ATOMIC_RELAXED);
        drain(t, c);
        return;
    }
    if (!t->b->cfg.keepalive || leftover || c->refused)
        hb_bc_close(c);
    end_batch(t, c, 0, now);
}

void hb_bc_judge(bthread *t, bexch *x, uint64_t got, int64_t now, int kept)
{
    hb_bench *b = t->b;
    hb_bench_result *res = x->res;
    const hb_bench_config *cfg = &b->cfg;
    breq *q = (breq *)x->rq;

    int ok2xx = x->status >= 200 && x->status < 300;
    /* A HEAD response's document length is 0: no body, by definition. */
    size_t failed = 0; /* a class (HB_FAIL), 0: none */
    if (ok2xx) {
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

/* A response is whole: counted, timed, and the socket kept or closed. With
 * more of a pipeline to come (c->answered < c->batch after it) the
 * connection reads on, from the bytes after this response. */
static void finish(bthread *t, bconn *c, int64_t now, int leftover)
{
    c->served++;
    c->done_total++;
    hb_bc_judge(t, hb_bc_current(c), c->body.got, now, c->reuse && t->b->cfg.keepalive);
    next_response(t, c, now, leftover);
}

/* Parses a head from p[0..n); returns bytes of it used, or -1 after a
 * failure (the request is then over), with c->have_head set when done. */
static ssize_t take_head(bthread *t, bconn *c, const char *p, size_t n, int64_t now)
{
    const char *buf = p;
    size_t len = n;
    if (hb_buf_size(&c->head) > 0) {
        if (hb_buf_append(&c->head, p, n) != 0) {
            bc_fail(t, c, HB_FAIL(fail_exceptions), now, "out of memory");
            return -1;
        }
        buf = hb_buf_rdptr(&c->head);
        len = hb_buf_size(&c->head);
    }
    hb_response_reset(&t->r);
    t->r.scan = c->scan;
    int rc = hb_parse_response(&t->r, buf, len,
                               hb_bc_current(c)->rq->r.head ? HB_PARSE_HEAD_REQUEST : 0);
    if (rc == HB_PARSE_MORE) {
        c->scan = t->r.scan;
        if (buf == p && hb_buf_append(&c->head, p, n) != 0) {
            bc_fail(t, c, HB_FAIL(fail_exceptions), now, "out of memory");
            return -1;
        }
        return (ssize_t)n;
    }
    if (rc == HB_PARSE_ERROR && t->r.error == hb_parse_not_http) {
        char got[64], why[160];
        hb_parse_excerpt(buf, len, got, sizeof got);
        snprintf(why, sizeof why, "%s: got \"%s\"", t->r.error, got);
        bc_fail(t, c, HB_FAIL(fail_exceptions), now, why);
        return -1;
    }
    if (rc == HB_PARSE_ERROR || t->r.status == 101) {
        bc_fail(t, c, HB_FAIL(fail_exceptions), now,
                rc == HB_PARSE_ERROR ? t->r.error : "101 Switching Protocols is not supported");
        return -1;
    }
    /* Bytes of p the head took: all of its part, less what is left after. */
    size_t after = len - t->r.head_len;
    size_t used = n - after;
    hb_buf_clear(&c->head);
    c->scan = (hb_head_scan){0, 0, 0};
    if (t->r.status < 200)
        return (ssize_t)used; /* interim: the next head follows */
    hb_br_note_server(t->b, &t->r, buf);
    c->have_head = 1;
    hb_bc_current(c)->status = t->r.status;
    c->reuse = t->r.keep_alive;
    hb_bc_current(c)->res->closing += !t->r.keep_alive;
    hb_body_init(&c->body, t->r.body, t->r.content_length);
    return (ssize_t)used;
}

/* Handles n received bytes: heads, then the body through its decoder. */
static void take_bytes(bthread *t, bconn *c, const char *p, size_t n, int64_t now)
{
    for (;;) {
        if (!c->have_head) {
            if (n == 0)
                return;
            bexch *x = hb_bc_current(c);
            ssize_t used = take_head(t, c, p, n, now);
            if (used < 0)
                return;
            x->rx += (uint64_t)used;
            p += used;
            n -= (size_t)used;
            continue;
        }
        size_t used, off, dn;
        int rc = hb_body_feed(&c->body, p, n, &used, &off, &dn);
        if (rc == HB_PARSE_ERROR) {
            bc_fail(t, c, HB_FAIL(fail_exceptions), now, c->body.error);
            return;
        }
        if (dn > 0 && hb_bc_current(c)->rq->r.expect_body_len > 0)
            hb_scen_needle_feed(&hb_bc_current(c)->rq->body, &hb_bc_current(c)->found, p + off, dn);
        hb_bc_current(c)->rx += used;
        p += used;
        n -= used;
        if (rc == HB_PARSE_DONE) {
            uint64_t sock = c->opened;
            finish(t, c, now, n > 0 && c->answered + 1 >= c->batch);
            /* A new socket (the rest of a pipeline sent again after the
             * server said close): what the old one held is not its. */
            if (c->opened != sock || c->state != BC_READING || c->have_head)
                return;
            if (n > 0) {
                c->got_bytes = 1; /* the next response has begun */
                hb_bc_current(c)->t_first = now;
            }
            continue; /* the pipeline's next response, from the bytes left */
        }
        if (n == 0)
            return;
    }
}

static void on_readable(bthread *t, bconn *c, int64_t now)
{
    for (int reads = 0;; reads++) {
        /* Enough for one wake-up: the socket stays readable (the epoll set
         * is level-triggered; a lone connection comes back from its tick). */
        if (reads == READS_PER_WAKE)
            return;
        ssize_t n = c->sock.tp->read(&c->sock, t->scratch, SCRATCH);
        if (t->blocking)
            now = hb_now_ns(); /* the wait was in recv */
        if (n > 0) {
            if (!c->got_bytes) {
                c->got_bytes = 1;
                hb_bc_current(c)->t_first = now;
            }
            hb_bc_current(c)->res->bytes_received += (uint64_t)n;
            take_bytes(t, c, t->scratch, (size_t)n, now);
            /* A short read emptied the socket, unless the transport holds
             * more (a TLS record read whole but not yet handed out). */
            if (c->state != BC_READING ||
                (n < SCRATCH && !(c->sock.tp->pending && c->sock.tp->pending(&c->sock))))
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            watch_wants(t, c);
            return;
        }
        if (n < 0 && errno == EPROTO) {
            bc_fail(t, c, HB_FAIL(fail_tls), now, hb_sock_strerror(&c->sock, errno));
            return;
        }
        if (n == 0 && c->have_head && hb_body_end(&c->body) == HB_PARSE_DONE) {
            c->reuse = 0;
            finish(t, c, now, 0);
            return;
        }
        if (retry_stale(t, c, now))
            return;
        char why[96];
        snprintf(why, sizeof why, "connection %s %s", n == 0 ? "closed" : "reset",
                 c->got_bytes ? "before the response was complete" : "before any response byte");
        bc_fail(t, c, HB_FAIL(fail_receive), now, why);
        return;
    }
}

/* The server said it closes after a response with more of the pipeline
 * unanswered: those go again on a new socket (once, for a method that may
 * be sent again), else they failed. */
static void bench_cut_short(bthread *t, bconn *c, int64_t now)
{
    c->got_bytes = 0;
    if (!retry_stale(t, c, now))
        bc_fail(t, c, HB_FAIL(fail_receive), now,
                "the server closed the connection with pipelined requests unanswered");
}

/* One function per state: what an event on c's socket (events: epoll's,
 * 0 from a lone connection's poll) does in it. The table at the top of
 * the file says which runs when. */
static void st_connecting(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)events;
    if (c->sock.tp->connect_done(&c->sock) != 0)
        connect_failed(t, c, errno, now);
    else
        connect_done(t, c, now);
}

static void st_tunnel(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)events;
    tunnel(t, c, now);
}

static void st_handshake(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)events;
    handshake(t, c, now);
}

static void st_writing(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)events;
    write_request(t, c, now);
}

static void st_reading(bthread *t, bconn *c, unsigned events, int64_t now)
{
    /* A pipeline still being written waits for both (write_request). */
    if ((events & EPOLLOUT) && c->read_ahead) {
        write_request(t, c, now);
        if (c->state != BC_READING || !(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
            return;
    }
    on_readable(t, c, now);
}

static void st_drain(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)events;
    (void)now;
    drain(t, c);
}

/* Between requests (or waiting for its start under a rate, or for a
 * connect's retry, with no socket): the server closed the socket, or sent
 * what nobody asked for. Either way it is done, and counts nothing; the
 * next request opens another. Left in the set, a closed socket stays
 * readable and the loop would spin on it. */
static void st_between(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)t;
    (void)now;
    if (events != 0)
        hb_bc_close(c);
}

static void on_event(bthread *t, bconn *c, unsigned events, int64_t now)
{
    STATES[c->state].on_event(t, c, events, now);
}

/* Deadlines, and the end of the grace after a stop or a duration. */
static void tick(bthread *t, int64_t now)
{
    hb_bench *b = t->b;
    int abandon =
        (stopped(b) && now >= b->stop_at) || (b->end && now - b->end >= HB_BENCH_GRACE_NS);
    for (int i = 0; i < t->nconns; i++) {
        bconn *c = &t->conns[i];
        if (c->state == BC_DRAIN) {
            /* No FIN within a tick or two: close from this side after all. */
            if (abandon || now - c->t_wait >= TICK_NS)
                drained(t, c);
            continue;
        }
        if (b->cfg.http2) {
            hb_h2l_tick(t, c, now, abandon);
            continue;
        }
        /* The oldest exchange in flight is the first to time out. */
        int64_t age = now - hb_bc_current(c)->t_start;
        if (c->state == BC_RETRY &&
            (abandon || age >= b->timeout_ns || now - c->t_connect >= RETRY_FOR_NS)) {
            t->retrying--;
            c->state = BC_CONNECTING; /* (no socket: what follows closes nothing) */
            if (!abandon && age < b->timeout_ns) {
                bc_fail(t, c, HB_FAIL(fail_connect), now,
                        "the server's backlog stayed full (connect: EAGAIN)");
                continue;
            }
        }
        if (c->state >= BC_CONNECTING && c->state != BC_RETRY) {
            if (abandon) {
                /* Not finished within the grace: cancelled, which is no
                 * failure (issued == complete + failed + cancelled). */
                for (int k = c->answered; k < c->batch; k++)
                    hb_br_cancelled(t, &c->xs[k], now);
                t->inflight -= unanswered(c);
                hb_bc_close(c);
                c->state = BC_IDLE;
            } else if (age >= b->timeout_ns) {
                bc_fail(t, c, HB_FAIL(fail_timeout), now, "timed out");
            }
        }
    }
}

/* Under a rate: starts the connections whose intended start has come (or
 * that a stop or the duration's end releases), and returns the earliest
 * intended start still to come, INT64_MAX if none. The loop waits until
 * then: waiting for the next tick instead would start requests up to a
 * tick late, and that lateness would count in the corrected latency. */
static int64_t start_due(bthread *t, int64_t now)
{
    hb_bench *b = t->b;
    int64_t next = INT64_MAX;
    for (int i = 0; i < t->nconns && t->rate_waiting > 0; i++) {
        bconn *c = &t->conns[i];
        if (c->state != BC_RATE && !c->h2_due)
            continue;
        if (now >= c->next_at || stopped(b) || (b->end && now >= b->end))
            start_request(t, c, now);
        else if (c->next_at < next)
            next = c->next_at;
    }
    return next;
}

/* epoll_wait for at most `ns` nanoseconds (none if negative): epoll_pwait2
 * keeps the nanoseconds (Linux 5.11), else whole milliseconds, rounded up. */
static int wait_ns(int ep, struct epoll_event *events, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    int n = epoll_pwait2(ep, events, BENCH_EVENTS, &ts, NULL);
    if (n < 0 && errno == ENOSYS)
        n = epoll_wait(ep, events, BENCH_EVENTS, (int)((ns + 999999) / 1000000));
    return n;
}

/* A thread with one connection in closed loop: it waits in the blocking
 * recv itself (no epoll_wait per request), the socket's timeouts bringing
 * it back every tick for deadlines and the stop flag. */
static void lone_loop(bthread *t)
{
    int64_t now = hb_now_ns(), next_tick = now + t->b->tick_ns;
    for (;;) {
        for (int budget = 16; t->nready > 0 && budget > 0; budget--)
            start_request(t, t->ready[--t->nready], now);
        if (t->inflight == 0 && t->nready == 0 && t->draining == 0)
            return;
        bconn *c = &t->conns[0];
        int lone = STATES[c->state].lone;
        if (lone == LONE_RECV && c->state == BC_READING) {
            on_readable(t, c, now);
        } else if (lone == LONE_RECV) {
            drain(t, c); /* blocks up to a tick in recv */
        } else if (lone == LONE_SLEEP) {
            int64_t wait = c->next_try - now;
            if (wait > 0) {
                struct timespec ts = {wait / 1000000000, wait % 1000000000};
                nanosleep(&ts, NULL);
            }
            retry_due(t, hb_now_ns());
        } else if (lone == LONE_POLL) {
            struct pollfd p = {.fd = c->sock.fd,
                               .events = c->sock.wants == HB_SOCK_WANT_READ ? POLLIN : POLLOUT};
            if (poll(&p, 1, (int)(t->b->tick_ns / 1000000)) > 0)
                on_event(t, c, 0, hb_now_ns());
        }
        now = hb_now_ns();
        if (now >= next_tick) {
            tick(t, now);
            next_tick = now + t->b->tick_ns;
        }
    }
}

/* The event loop over a thread's connections; the tick arrives as an
 * event (data.ptr NULL) of its own, so closed loop waits with no timeout.
 *
 * CLOCK: the clock is read for each connection's event and each start,
 * not once per wake-up: one read shared by every event of a wake-up gave
 * 97% of a log's records at 50 connections the start and the end of
 * another connection's (the exchanges of one event, a pipeline's or a
 * session's streams, still share its read). Measured (docs/benchmarks.md):
 * 3,526 instructions per request in the loop thread against 3,493 with
 * one read per wake-up (callgrind, +0.9%), client CPU per request 1.01x
 * in 9 interleaved rounds (within their spread). */
static void epoll_loop(bthread *t)
{
    struct epoll_event events[BENCH_EVENTS];
    int64_t now = hb_now_ns();
    /* Under a rate the loop wakes for each intended start: with the kernel's
     * default slack (50 us) a timer may fire that much late. */
    if (t->b->paced)
        prctl(PR_SET_TIMERSLACK, 1UL);
    for (;;) {
        /* Start the next requests; a bounded number, so a run of instant
         * failures (a server that is down) still lets events through. */
        for (int budget = 4 * t->nconns + 16; t->nready > 0 && budget > 0; budget--)
            start_request(t, t->ready[--t->nready], hb_now_ns()); /* (CLOCK below) */
        int64_t due = t->rate_waiting > 0 ? start_due(t, now) : INT64_MAX;
        if (t->retrying > 0) {
            int64_t retry = retry_due(t, now);
            due = retry < due ? retry : due;
        }
        if (t->inflight == 0 && t->nready == 0 && t->rate_waiting == 0 && t->draining == 0)
            return;
        int n;
        if (t->nready > 0)
            n = epoll_wait(t->ep, events, BENCH_EVENTS, 0);
        else if (due == INT64_MAX)
            n = epoll_wait(t->ep, events, BENCH_EVENTS, -1);
        else
            n = wait_ns(t->ep, events, due - hb_now_ns());
        now = hb_now_ns();
        int ticked = 0;
        for (int i = 0; i < n; i++) {
            if (events[i].data.ptr == NULL)
                ticked = 1;
            else
                on_event(t, events[i].data.ptr, events[i].events, now = hb_now_ns());
        }
        if (ticked) {
            /* Read, so the timerfd is quiet until the next; only EAGAIN
             * (read already) can fail it. */
            uint64_t expirations;
            ssize_t got = read(t->tick_fd, &expirations, sizeof expirations);
            (void)got;
            tick(t, now);
        }
    }
}

void hb_bc_run(bthread *t)
{
    hb_bp_schedule(t);
    if (t->blocking)
        lone_loop(t);
    else
        epoll_loop(t);
}
