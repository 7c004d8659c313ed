/* bench_sock.c: a timing-loop connection's socket, whatever protocol it
 * carries: connect (each resolved address in turn), a forward proxy's
 * tunnel, the TLS handshake, the retry of a Unix socket's full backlog,
 * the epoll watch and the close. Its states are the table below; once the
 * socket is open its carrier (bench_int.h's hb_carrier) takes over, and
 * this file speaks to the carrier only through that table of functions. */
#define _GNU_SOURCE
#include "bench_int.h"

static void st_connecting(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_tunnel(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_handshake(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_between(bthread *t, bconn *c, unsigned events, int64_t now);
static void st_drain(bthread *t, bconn *c, unsigned events, int64_t now);

/* The socket's machine: opening a socket, and what any carrier does on
 * it (its read and write loops, hb_bs_read and hb_bs_write, and the wait
 * for the server's FIN).
 *
 *   state          waits for                 on                        next
 *   BC_IDLE        a ticket (start)          a ticket, socket open     the carrier's
 *                                            a ticket, no socket       BC_CONNECTING (or on at
 *                                                                      once: a Unix connect)
 *                                            paced, not yet due        BC_RATE
 *   BC_RATE        its wake-up (its turn)    woken (hb_bs_wake)        as BC_IDLE's ticket
 *   BC_CONNECTING  connect(2)'s completion   connected, via a proxy    BC_TUNNEL
 *                                            connected, over TLS       BC_HANDSHAKE
 *                                            connected                 the carrier's
 *                                            refused, more addresses   BC_CONNECTING (the next)
 *                                            a Unix backlog full       BC_RETRY
 *                                            refused                   failed: BC_IDLE
 *   BC_TUNNEL      the CONNECT's answer      2xx                       BC_HANDSHAKE, the carrier's
 *                                            a refusal                 the carrier's `refused`
 *   BC_HANDSHAKE   the TLS handshake         done                      the carrier's
 *                                            failed                    failed (tls): BC_IDLE
 *   BC_RETRY       next_try (its wake-up)    woken (hb_bs_wake)        BC_CONNECTING
 *                                            past the timeout          failed (connect)
 *   BC_DRAIN       the server's FIN          FIN, bytes, a tick        closed: BC_IDLE
 *   any            the request's deadline    the carrier's tick        failed (timeout); past a
 *                                                                      stop's grace, cancelled
 */
static const hb_bc_state STATES[BC_CARRIED] = {
    [BC_IDLE] = {"idle", st_between, LONE_NONE, HB_BC_TO(BC_RATE) | HB_BC_OPENING, 0},
    [BC_RATE] = {"rate", st_between, LONE_NONE, HB_BC_TO(BC_IDLE) | HB_BC_OPENING, 0},
    [BC_CONNECTING] = {"connecting", st_connecting, LONE_POLL, HB_BC_TO(BC_IDLE) | HB_BC_OPENING,
                       0},
    [BC_TUNNEL] = {"tunnel", st_tunnel, LONE_POLL,
                   HB_BC_TO(BC_IDLE) | HB_BC_TO(BC_HANDSHAKE) | HB_BC_TO_CARRIER, 0},
    [BC_HANDSHAKE] = {"handshake", st_handshake, LONE_POLL, HB_BC_TO(BC_IDLE) | HB_BC_TO_CARRIER,
                      0},
    [BC_RETRY] = {"retry", st_between, LONE_SLEEP, HB_BC_TO(BC_IDLE) | HB_BC_OPENING, 0},
    [BC_DRAIN] = {"drain", st_drain, LONE_RECV, HB_BC_TO(BC_IDLE), 0},
};

static void connect_addr(bthread *t, bconn *c, int64_t now);
static void retry_later(bthread *t, bconn *c, int64_t now);

const hb_bc_state *hb_bc_state_of(const bconn *c, int state)
{
    return state < BC_CARRIED ? &STATES[state] : &c->carrier->states[state - BC_CARRIED];
}

void hb_bc_enter(bconn *c, int to)
{
#ifdef HB_CHECK_STATES
    if (to != c->state) {
        const hb_bc_state *from = hb_bc_state_of(c, c->state);
        int ok =
            (from->next & HB_BC_TO(to)) != 0 ||
            (to >= BC_CARRIED && (from->next & HB_BC_TO_CARRIER) && hb_bc_state_of(c, to)->entry);
        if (!ok) {
            fprintf(stderr, "httpbench: %s connection: %s -> %s is not in its machine's table\n",
                    c->carrier->name, from->name, hb_bc_state_of(c, to)->name);
            abort();
        }
    }
#endif
    c->state = to;
}

void hb_bs_watch(bthread *t, bconn *c, unsigned events)
{
    if (c->events == events)
        return;
    if (t->blocking) {
        c->events = events; /* (the lone loop's LONE_WATCHED reads it) */
        return;
    }
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(t->ep, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->sock.fd, &ev);
    c->events = events;
}

void hb_bs_watch_wants(bthread *t, bconn *c)
{
    if (!t->blocking)
        hb_bs_watch(t, c, c->sock.wants == HB_SOCK_WANT_WRITE ? EPOLLOUT : EPOLLIN);
}

void hb_bs_close(bconn *c)
{
    if (c->sock.fd >= 0)
        c->t_closed = hb_now_ns();
    hb_sock_close(&c->sock); /* also takes it out of the epoll set */
    c->events = 0;
    c->served = 0;
    c->paused = 0;
    if (c->carrier != NULL && c->cs != NULL)
        c->carrier->closed(c);
}

void hb_bs_leave_retry(bthread *t, bconn *c)
{
    if (c->state == BC_RETRY)
        hb_bp_wake_cancel(t, c);
}

/* The socket is open, through any tunnel and handshake: a lone connection
 * waits in recv itself (a blocking socket whose timeouts bring the thread
 * back every tick for deadlines and the stop flag); then the carrier. */
static void connected(bthread *t, bconn *c, int64_t now)
{
    if (t->blocking && hb_sock_set_blocking(&c->sock, t->b->tick_ns) != 0) {
        c->carrier->fail(t, c, HB_FAIL(fail_connect), now, strerror(errno));
        return;
    }
    if (!__atomic_load_n(&t->b->opened, __ATOMIC_RELAXED))
        __atomic_store_n(&t->b->opened, 1, __ATOMIC_RELEASE); /* (after hb_br_note_tls) */
    /* One a connect, with no request's help (h2load's "time for connect"
     * counts a client none of whose requests was done); not one the
     * warmup began (hb_br_forget), as h2load times no client it opened. */
    if (c->t_unheard != 0)
        hb_hist_record(&c->xs[0].res->conn_connect, (uint64_t)(now - c->t_unheard));
    c->carrier->opened(t, c, now);
}

/* Connecting to c->addr failed with err: the next address, while one is
 * left untried, else a connect failure. */
static void connect_failed(bthread *t, bconn *c, int err, int64_t now)
{
    const hb_bench_config *cfg = &t->b->cfg;
    hb_bs_close(c);
    if (++c->addr_tries < cfg->naddrs) {
        c->addr = (c->addr + 1) % cfg->naddrs;
        connect_addr(t, c, now);
        return;
    }
    c->carrier->fail(t, c, HB_FAIL(fail_connect), now, strerror(err));
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
            hb_bc_enter(c, BC_HANDSHAKE);
            hb_bs_watch_wants(t, c);
            return;
        }
        c->xs[0].res->tls_failed++;
        c->carrier->fail(t, c, HB_FAIL(fail_tls), now, hb_sock_strerror(&c->sock, errno));
        return;
    }
    /* A handshake is CPU work: the clock after it, not the event's. */
    now = hb_now_ns();
    hb_bench_result *res = c->xs[0].res;
    hb_hist_record(&res->tls_handshake, (uint64_t)(now - c->t_handshake));
    c->carrier->connect_ns(c, now - c->t_connect);
    if (c->sock.tp->describe(&c->sock, NULL) == 1)
        res->tls_resumed++;
    else
        res->tls_full++;
    hb_br_note_tls(t->b, c);
    connected(t, c, now);
}

/* The connection is made (through a proxy's tunnel, if any): the
 * transport's handshake, else the carrier. */
static void opened(bthread *t, bconn *c, int64_t now)
{
    c->carrier->connect_ns(c, now - c->t_connect);
    if (c->sock.tp->handshake != NULL) {
        c->t_handshake = now;
        handshake(t, c, now);
        return;
    }
    connected(t, c, now);
}

/* Steps the CONNECT through a forward proxy; its round trip counts in the
 * connect time. A refusal (407, 502) is the carrier's to say. */
static void tunnel(bthread *t, bconn *c, int64_t now)
{
    int rc = hb_tunnel_step(c->tn, &c->sock);
    if (rc == HB_TUNNEL_OPEN) {
        opened(t, c, now);
    } else if (rc == HB_TUNNEL_WAIT) {
        hb_bc_enter(c, BC_TUNNEL);
        hb_bs_watch_wants(t, c);
    } else if (rc == HB_TUNNEL_REFUSED) {
        c->carrier->refused(t, c, now);
    } else if (errno == EPROTO) {
        char why[160];
        snprintf(why, sizeof why, "the proxy's answer to CONNECT: %s", hb_tunnel_error(c->tn));
        c->carrier->fail(t, c, HB_FAIL(fail_exceptions), now, why);
    } else {
        c->carrier->fail(t, c, HB_FAIL(fail_receive), now,
                         errno == ECONNRESET
                             ? "the proxy closed the connection before answering CONNECT"
                             : strerror(errno));
    }
}

/* The connect to c->addr completed: that address serves the rest of the
 * run, on every connection. */
static void connect_done(bthread *t, bconn *c, int64_t now)
{
    const hb_bench_config *cfg = &t->b->cfg;
    __atomic_store_n(&t->b->addr_good, c->addr, __ATOMIC_RELAXED);
    if (cfg->tunnel != NULL) {
        if (c->tn == NULL && (c->tn = calloc(1, sizeof *c->tn)) == NULL) {
            c->carrier->fail(t, c, HB_FAIL(fail_connect), now, "out of memory");
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
            c->carrier->fail(t, c, HB_FAIL(fail_connect), now,
                             strerror(errno)); /* no socket at all */
        else if (errno == EAGAIN && now - c->t_connect < RETRY_FOR_NS)
            retry_later(t, c, now);
        else
            connect_failed(t, c, errno, now);
        return;
    }
    hb_bc_enter(c, BC_CONNECTING);
    hb_bs_watch_wants(t, c);
}

/* A Unix socket's connect(2) fails with EAGAIN, not EINPROGRESS, while the
 * server's backlog is full: the server is only behind on accept(), so the
 * connect goes again shortly (TCP would have queued the SYN and retried). */
static void retry_later(bthread *t, bconn *c, int64_t now)
{
    c->backoff = c->backoff == 0             ? RETRY_FIRST_NS
                 : c->backoff < RETRY_MAX_NS ? 2 * c->backoff
                                             : RETRY_MAX_NS;
    hb_bc_enter(c, BC_RETRY);
    c->next_try = now + c->backoff;
    hb_bp_wake_at(t, c, c->next_try, HB_WAKE_RETRY);
}

void hb_bs_wake(bthread *t, bconn *c, int64_t now)
{
    if (c->state != BC_RETRY) {
        c->carrier->start(t, c, now);
        return;
    }
    hb_bc_enter(c, BC_CONNECTING);
    if (c->paused) {
        c->paused = 0;
        hb_bs_begin_connect(t, c, now);
    } else {
        connect_addr(t, c, now); /* (BC_RETRY again, counted again, if still full) */
    }
}

/* The resolved addresses in turn, from the one that worked last (as
 * getaddrinfo's order and Connection have it: a name with ::1 first and a
 * server on 127.0.0.1 alone still connects). */
void hb_bs_begin_connect(bthread *t, bconn *c, int64_t now)
{
    c->xs[0].res->connects++;
    if (c->opened++ > 0)
        c->xs[0].res->reconnects++;
    c->t_connect = now;
    c->t_unheard = now;
    if (c->t_began == 0)
        c->t_began = now;
    c->t_closed = 0;
    c->backoff = 0;
    c->addr = __atomic_load_n(&t->b->addr_good, __ATOMIC_RELAXED);
    c->addr_tries = 0;
    connect_addr(t, c, now);
}

void hb_bs_connect_later(bthread *t, bconn *c, int64_t now, int64_t wait)
{
    c->t_connect = now;
    c->paused = 1; /* (counted when made, by hb_bs_wake) */
    hb_bc_enter(c, BC_RETRY);
    c->next_try = now + wait;
    hb_bp_wake_at(t, c, c->next_try, HB_WAKE_RETRY);
}

void hb_bs_tick_opening(bthread *t, bconn *c, int64_t now, int64_t oldest)
{
    int late = now - oldest >= t->b->timeout_ns;
    if (c->state == BC_RETRY) {
        if (!late && now - c->t_connect < RETRY_FOR_NS)
            return;
        hb_bp_wake_cancel(t, c);
        hb_bc_enter(c, BC_CONNECTING); /* (no socket: what follows closes nothing) */
        if (!late) {
            c->carrier->fail(t, c, HB_FAIL(fail_connect), now,
                             "the server's backlog stayed full (connect: EAGAIN)");
            return;
        }
    }
    if (late)
        c->carrier->fail(t, c, HB_FAIL(fail_timeout), now, "timed out");
}

/* One function per state: what an event on c's socket (events: epoll's,
 * 0 from a lone connection's poll) does in it. */
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
        hb_bs_close(c);
}

static void st_drain(bthread *t, bconn *c, unsigned events, int64_t now)
{
    (void)events;
    (void)now;
    ssize_t n;
    do
        n = c->sock.tp->read(&c->sock, t->scratch, SCRATCH);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !t->blocking) {
        hb_bs_watch(t, c, EPOLLIN);
        return;
    }
    /* The FIN; or bytes after a last response (nothing to read them as),
     * an error, a lone connection's read timing out after a tick: the
     * wait is over. The run's last outcome stays the response's: the
     * wait for a FIN is no part of the run's time. */
    t->draining--;
    hb_bs_close(c);
    hb_bc_enter(c, BC_IDLE);
    hb_bc_ready(t, c);
}

void hb_bs_drain(bthread *t, bconn *c, int64_t now)
{
    hb_bc_enter(c, BC_DRAIN);
    c->t_drain = now;
    t->draining++;
    st_drain(t, c, 0, now);
}

void hb_bs_tick(bthread *t, bconn *c, int64_t now, int abandon)
{
    if (c->state != BC_DRAIN) {
        c->carrier->tick(t, c, now, abandon);
        return;
    }
    /* A tick or two for the server's FIN, then the close from this side
     * after all. */
    if (abandon || now - c->t_drain >= TICK_NS) {
        t->draining--;
        hb_bs_close(c);
        hb_bc_enter(c, BC_IDLE);
        hb_bc_ready(t, c);
    }
}

/* c stopped reading at READS_PER_WAKE: if its transport still holds bytes
 * (TLS read ahead: whole records in OpenSSL's buffer, the socket empty),
 * no epoll event would bring it back, so the loop calls its handler
 * again, after this wake-up's events, as if it were readable (the lone
 * loop calls its connection's handler again anyway). */
static void mark_unread(bthread *t, bconn *c)
{
    if (!c->unread && !t->blocking && hb_sock_pending(&c->sock)) {
        c->unread = 1;
        t->unread++;
    }
}

int hb_bs_read(bthread *t, bconn *c, int64_t now)
{
    for (int reads = 0;; reads++) {
        /* Enough for one wake-up: a server that keeps the socket full must
         * not keep the thread from its clock and its other connections.
         * The socket stays readable (the epoll set is level-triggered; a
         * lone connection comes back from its tick), or the transport
         * holds what it read ahead (the loop comes back for it). */
        if (reads == READS_PER_WAKE) {
            mark_unread(t, c);
            return HB_RD_ENOUGH;
        }
        ssize_t n = c->sock.tp->read(&c->sock, t->scratch, SCRATCH);
        if (t->blocking)
            now = hb_now_ns(); /* the wait was in the read */
        if (n > 0) {
            if (past_grace(t->b, now)) {
                c->carrier->tick(t, c, now, 1); /* (past_grace: cancelled, uncounted) */
                return HB_RD_LEFT;
            }
            int in = c->carrier->input(t, c, t->scratch, (size_t)n, now);
            if (in == HB_IN_MORE)
                continue;
            return in == HB_IN_LEFT ? HB_RD_LEFT : HB_RD_ENOUGH;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return HB_RD_EMPTY;
        if (n < 0 && errno == EPROTO)
            c->carrier->fail(t, c, HB_FAIL(fail_tls), now, hb_sock_strerror(&c->sock, errno));
        else
            c->carrier->broke(t, c, 0, n < 0 ? errno : 0, now);
        return HB_RD_LEFT;
    }
}

int hb_bs_write(bthread *t, bconn *c, int64_t now)
{
    struct iovec v[HB_OUT_MAX];
    for (;;) {
        int k = c->carrier->output(t, c, v);
        if (k == 0)
            return HB_WR_DONE;
        ssize_t n = c->sock.tp->writev(&c->sock, v, k, 0);
        if (n > 0) {
            c->carrier->sent(t, c, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return HB_WR_FULL;
        if (n < 0 && errno == EPROTO)
            c->carrier->fail(t, c, HB_FAIL(fail_tls), now, hb_sock_strerror(&c->sock, errno));
        else
            c->carrier->broke(t, c, 1, n < 0 ? errno : 0, now);
        return HB_WR_LEFT;
    }
}

void hb_bs_write_once(bthread *t, bconn *c)
{
    struct iovec v[HB_OUT_MAX];
    int k = c->carrier->output(t, c, v);
    if (k > 0)
        (void)c->sock.tp->writev(&c->sock, v, k, HB_SOCK_DONTWAIT);
}
