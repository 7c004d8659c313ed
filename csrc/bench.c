/* bench.c: the timing loop over many connections. */
#define _GNU_SOURCE
#include "bench.h"

#include "buf.h"
#include "parser.h"
#include "tunnel.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define SCRATCH 65536
#define BENCH_EVENTS 256
/* How often deadlines, the stop flag and the end of a duration or a grace
 * are looked at: every 50 ms. The epoll loop hears it from a periodic
 * timerfd rather than from a timeout on each epoll_wait: a timeout arms
 * and cancels a kernel timer every time the thread sleeps, which measured
 * 10% of the client's CPU per request at 50 connections here (under
 * virtualisation each timer reprogramming is an exit to the hypervisor,
 * which a profiler inside does not see).
 *
 * Why 50 ms and not finer (issue 12): at 50 connections against nginx
 * (one worker, the server's CPU saturated) a 5 ms tick cost 7-8% of the
 * throughput, 0.92 of floor_many.c's req/s against 0.99 without it, with
 * the same system calls per request and the same TCP segments. What
 * changed was the server's cost per request: the client slept more often
 * (24,000-31,000 voluntary switches per 200,000 requests against
 * floor_many's 17,000-22,000), and every wake-up of a sleeping client is
 * paid on the server's CPU (perf, cpu-clock on CPU 1: the wake-up path
 * under sock_def_readable took 14.9% of nginx's CPU with the 5 ms tick,
 * 10.7% without). A 20 ms tick measured 0.98, 50 ms and 100 ms 0.99. The
 * tick only bounds how late a timeout or a stop is noticed, and 50 ms is
 * well inside what either needs; rate starts do not wait for it. */
#define TICK_NS 50000000LL
/* After a stop or the end of a duration, how long requests in flight may
 * take to finish; those still in flight then are cancelled. */

/* A request the loop sends: a scenario's, or the run's one request. */
typedef struct {
    hb_bench_req r;      /* copied, with its variants' pointers and lengths */
    uint64_t uses;       /* cycled variants: uses so far, shared by the threads */
    int64_t doc_len;     /* its first 2xx response's body length; -1 until then */
    hb_scen_needle body; /* expect_body's search, when set */
} breq;

/* BC_DRAIN: a response whose server said close is counted; the socket waits
 * for the server's FIN before it closes, so the server closes first and
 * TIME_WAIT stays on its side, not on the client's ephemeral ports. */
enum {
    BC_IDLE = 0,
    BC_RATE,
    BC_CONNECTING,
    BC_TUNNEL,
    BC_HANDSHAKE,
    BC_WRITING,
    BC_READING,
    BC_DRAIN,
    BC_RETRY /* a Unix socket's backlog was full (EAGAIN): connect again at next_try */
};

/* BC_RETRY's waits: from RETRY_FIRST_NS doubling to RETRY_MAX_NS, for at
 * most RETRY_FOR_NS (or the request's timeout), about as long as a TCP
 * connect keeps sending its SYN before it gives up. */
#define RETRY_FIRST_NS 250000LL
#define RETRY_MAX_NS 32000000LL
#define RETRY_FOR_NS 120000000000LL
/* Reads a connection takes per wake-up: a server that keeps the socket
 * full (a flood of 1xx heads) must not keep its thread from the clock,
 * the stop flag and the other connections. */
#define READS_PER_WAKE 16

typedef struct {
    hb_sock sock; /* through the transport, non-blocking (blocking when lone) */
    int state;
    int retried;   /* this request was sent again once already */
    int got_bytes; /* a response byte came for this request */
    int have_head;
    int reuse; /* the response lets the socket be reused */
    int status;
    uint64_t served; /* responses on this socket */
    uint64_t opened; /* sockets this slot has opened */
    int addr;        /* the address being connected to */
    int addr_tries;  /* addresses tried for this connect */
    size_t sent;     /* request bytes written */
    int batch;       /* requests of the current write (1, or up to the pipeline) */
    int answered;    /* of which answered; the rest are in flight */
    int read_ahead;  /* reading answers while the batch is still being written */
    int refused;     /* the proxy refused the tunnel: its answer is the response */
    hb_tunnel *tn;   /* the CONNECT through a forward proxy: made at the first,
                      * so a run without one keeps its connections small */
    hb_buf head;     /* a response head split across reads */
    hb_head_scan scan;
    hb_body body; /* the response body's framing, from its head */
    unsigned events;
    int64_t t_intended, t_start, t_first, t_connect, connect_ns;
    int64_t t_handshake;  /* when the handshake began */
    int64_t next_try;     /* BC_RETRY: when to connect again */
    int64_t backoff;      /* and the wait after that */
    int64_t next_at;      /* rate: the next intended start */
    uint64_t seq;         /* a shape: requests this slot has started */
    int global;           /* this slot's index over all threads */
    const breq *rq;       /* the request under way */
    hb_bench_result *res; /* its figures, this thread's */
    const char *req;      /* the variant sent */
    size_t req_len;
    int next_req;   /* order by sequence: the next request */
    uint32_t found; /* expect_body's search: the match so far */
} bconn;

typedef struct {
    hb_bench *b;
    pthread_t thread;
    int started;
    int ep;
    int tick_fd; /* the epoll loop's periodic timerfd */
    bconn *conns;
    int nconns;
    int first_conn; /* the index of conns[0] over all threads */
    int inflight;
    int blocking;     /* one connection, closed loop: wait in recv, not epoll */
    int64_t interval; /* rate: ns between one connection's starts */
    bconn **ready;    /* connections between requests, to start again */
    int nready;
    int rate_waiting; /* connections in BC_RATE */
    int draining;     /* connections in BC_DRAIN */
    int retrying;     /* connections in BC_RETRY */
    hb_response r;    /* scratch for the parser */
    char *scratch;
    hb_bench_result *res; /* one per request of the run, indexed as b->reqs */
    hb_scen_rng rng;      /* picks by weight, random variants */
    hb_second *timeline;  /* the thread's seconds, all requests together */
    int nseconds, tl_cap;
    double cpu_user, cpu_sys;
    uint64_t complete, failed; /* over every request */
    uint64_t live_issued, live_complete, live_failed;
} bthread;

struct hb_bench {
    hb_bench_config cfg;
    int nthreads;
    bthread *threads;
    uint64_t tickets;
    int64_t start, end; /* end: the duration's end, or 0 */
    int64_t timeout_ns; /* per request */
    int64_t tick_ns;    /* the deadline check's period: TICK_NS, or a quarter of a
                         * shorter timeout (1 ms at least), so it is not missed */
    int addr_good;      /* the address that last connected */
    int stopping;       /* atomic: set once by hb_bench_stop, after stop_at */
    int64_t stop_at;    /* the grace's end */
    int64_t doc_len;    /* -1 until the first 2xx response */
    int64_t last_outcome;
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    int running;
    /* The start gate: no thread takes a ticket before every thread exists,
     * or a thread started late could find every ticket gone and its
     * connections never opened (-c 3 making two). */
    pthread_cond_t gate_cv;
    int gate_open;
    char server[128];
    char first_head[HB_FIRST_HEAD];
    int server_set;
    hb_sock_info tls; /* the first handshake's, once tls_set */
    int tls_set;
    char *pipe_req; /* with a pipeline: the request cfg.pipeline times over */
    int paced;      /* starts at intended instants: a rate or a shape */
    hb_shape *shape;
    hb_shape *vus; /* connections over time */
    breq *reqs;    /* the scenario's requests, or the one request */
    int nreqs;
    int scen;           /* a scenario: lengths_vary is out, its checks are in */
    double *cumulative; /* order by weight: the weights' running sums */
    const char **ptrs;  /* every variant's pointer, in one allocation */
    size_t *lens;       /* and length */
    uint32_t *fails;    /* expect_body's failure functions, likewise */
    /* A prepared start (cfg.prepared): the phase (1 while warming up),
     * threads done warming up, and whether hb_bench_go has come. Under
     * mu; `warming` is also read by the threads, set before they start
     * and cleared under mu while they all wait. */
    int warming;
    int nprepared;
    int go;
    uint64_t warm_tickets;
    int64_t warm_end; /* a warmup by time: its end */
    int paced_measured;
    hb_shape *vus_measured;
};

/* ------------------------------------------------------------ timeline */

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
static hb_second *second_of(bthread *t, int64_t now)
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
    if (s >= t->nseconds)
        t->nseconds = (int)s + 1;
    return &t->timeline[s];
}

/* Whether the run was asked to stop (stop_at is set by then). */
static int stopped(hb_bench *b)
{
    return __atomic_load_n(&b->stopping, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------ tickets */

static int take_ticket(hb_bench *b, int64_t now)
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
    if (b->cfg.requests == 0)
        return 1;
    return __atomic_fetch_add(&b->tickets, 1, __ATOMIC_RELAXED) < b->cfg.requests;
}

/* ------------------------------------------------------------ sockets */

static void bc_events(bthread *t, bconn *c, unsigned events)
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
        bc_events(t, c, EPOLLIN | EPOLLOUT);
    else
        bc_events(t, c, c->sock.wants == HB_SOCK_WANT_WRITE ? EPOLLOUT : EPOLLIN);
}

static void bc_close(bconn *c)
{
    hb_sock_close(&c->sock); /* also takes it out of the epoll set */
    c->events = 0;
    c->read_ahead = 0;
    c->refused = 0;
    c->served = 0;
    hb_buf_clear(&c->head);
    hb_buf_shrink(&c->head, 65536);
}

/* Requests in flight on c: those of its batch not answered yet. */
static int unanswered(const bconn *c)
{
    return c->batch - c->answered;
}

/* n of c's requests are over, and with them its batch: the connection goes
 * on the ready stack and the loop starts its next one (not here, so a run
 * of instant failures is a loop, not a recursion). */
static void end_batch(bthread *t, bconn *c, int n, int64_t now)
{
    t->inflight -= n;
    c->state = BC_IDLE;
    t->ready[t->nready++] = c;
    __atomic_store_n(&t->b->last_outcome, now, __ATOMIC_RELAXED);
}

/* Every request of c's batch not answered yet failed, in class cls (one
 * reason for all: they shared the socket). */
static void count_failed(bthread *t, bconn *c, uint64_t *cls, int n, int64_t now)
{
    c->res->failed += (uint64_t)n;
    *cls += (uint64_t)n;
    hb_second *sec = second_of(t, now);
    if (sec != NULL)
        sec->failed += (uint32_t)n;
    t->failed += (uint64_t)n;
    __atomic_store_n(&t->live_failed, t->failed, __ATOMIC_RELAXED);
}

static void bc_fail(bthread *t, bconn *c, uint64_t *cls, int64_t now, const char *why)
{
    hb_bench_result *res = c->res;
    int n = unanswered(c);
    count_failed(t, c, cls, n, now);
    if (why != NULL && res->error[0] == 0)
        snprintf(res->error, sizeof res->error, "%s", why);
    bc_close(c);
    end_batch(t, c, n, now);
}

static void write_request(bthread *t, bconn *c, int64_t now);

/* The next response of c's batch is awaited, from its first byte. */
static void begin_reading(bconn *c)
{
    c->state = BC_READING;
    c->have_head = 0;
    c->got_bytes = 0;
    c->t_first = 0;
    c->scan = (hb_head_scan){0, 0, 0};
    c->found = 0;
}

/* A lone connection waits in recv itself: a blocking socket whose timeouts
 * bring the thread back every tick to look at deadlines and the stop flag. */
static void connected(bthread *t, bconn *c, int64_t now)
{
    if (t->blocking && hb_sock_set_blocking(&c->sock, t->b->tick_ns) != 0) {
        bc_fail(t, c, &c->res->fail_connect, now, strerror(errno));
        return;
    }
    write_request(t, c, now);
}

static void connect_addr(bthread *t, bconn *c, int64_t now);
static void retry_later(bthread *t, bconn *c, int64_t now);

/* Connecting to c->addr failed with err: the next address, while one is
 * left untried, else a connect failure. */
static void connect_failed(bthread *t, bconn *c, int err, int64_t now)
{
    const hb_bench_config *cfg = &t->b->cfg;
    bc_close(c);
    if (++c->addr_tries < cfg->naddrs) {
        c->addr = (c->addr + 1) % cfg->naddrs;
        connect_addr(t, c, now);
        return;
    }
    bc_fail(t, c, &c->res->fail_connect, now, strerror(err));
}

/* Keeps what the first handshake of the run agreed on, for the report. */
static void note_tls(hb_bench *b, bconn *c)
{
    if (__atomic_load_n(&b->tls_set, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&b->mu);
    if (!b->tls_set && c->sock.tp->describe(&c->sock, &b->tls) >= 0)
        __atomic_store_n(&b->tls_set, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&b->mu);
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
        bc_fail(t, c, &c->res->fail_tls, now, hb_sock_strerror(&c->sock, errno));
        return;
    }
    /* A handshake is CPU work: the clock after it, not the event's. */
    now = hb_now_ns();
    hb_hist_record(&c->res->tls_handshake, (uint64_t)(now - c->t_handshake));
    c->connect_ns = now - c->t_connect;
    if (c->sock.tp->describe(&c->sock, NULL) == 1)
        c->res->tls_resumed++;
    else
        c->res->tls_full++;
    note_tls(t->b, c);
    connected(t, c, now);
}

/* The connect to c->addr completed: that address serves the rest of the
 * run, on every connection. */
/* The connection is made (through a proxy's tunnel, if any): the
 * transport's handshake, else the request. */
static void opened(bthread *t, bconn *c, int64_t now)
{
    c->connect_ns = now - c->t_connect;
    if (c->sock.tp->handshake != NULL) {
        c->t_handshake = now;
        handshake(t, c, now);
        return;
    }
    connected(t, c, now);
}

static void take_bytes(bthread *t, bconn *c, const char *p, size_t n, int64_t now);

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
    } else if (rc == HB_TUNNEL_REFUSED) {
        const char *p = hb_buf_rdptr(&c->tn->reply);
        size_t n = hb_buf_size(&c->tn->reply);
        c->res->bytes_received += n;
        begin_reading(c);
        c->refused = 1;
        c->got_bytes = 1;
        c->t_first = now;
        take_bytes(t, c, p, n, now);
    } else if (errno == EPROTO) {
        char why[160];
        snprintf(why, sizeof why, "the proxy's answer to CONNECT: %s", hb_tunnel_error(c->tn));
        bc_fail(t, c, &c->res->fail_exceptions, now, why);
    } else {
        bc_fail(t, c, &c->res->fail_receive, now,
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
            bc_fail(t, c, &c->res->fail_connect, now, "out of memory");
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
            bc_fail(t, c, &c->res->fail_connect, now, strerror(errno)); /* no socket at all */
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
            connect_addr(t, c, now); /* (BC_RETRY again, counted again, if still full) */
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
static void begin_connect(bthread *t, bconn *c, int64_t now)
{
    c->res->connects++;
    if (c->opened++ > 0)
        c->res->reconnects++;
    c->t_connect = now;
    c->backoff = 0;
    c->addr = __atomic_load_n(&t->b->addr_good, __ATOMIC_RELAXED);
    c->addr_tries = 0;
    connect_addr(t, c, now);
}

/* A reused socket that the server had closed before answering: send the
 * request again on a new one, once (RFC 9112 section 9.3.1). */
static int retry_stale(bthread *t, bconn *c, int64_t now)
{
    if (c->got_bytes || c->served == 0 || c->retried)
        return 0;
    /* A pipeline cut short after some answers: the rest go again, once,
     * when the method allows (RFC 9112 section 9.3.2). */
    if (c->answered > 0 && !t->b->cfg.idempotent) /* (a pipeline: no scenario) */
        return 0;
    c->retried = 1;
    c->batch = unanswered(c);
    c->answered = 0;
    c->sent = 0;
    bc_close(c);
    begin_connect(t, c, now);
    return 1;
}

static void write_request(bthread *t, bconn *c, int64_t now)
{
    const char *req = c->batch > 1 ? t->b->pipe_req : c->req;
    size_t len = (size_t)c->batch * c->req_len;
    while (c->sent < len) {
        struct iovec rest = {(char *)req + c->sent, len - c->sent};
        ssize_t n = c->sock.tp->writev(&c->sock, &rest, 1, 0);
        if (n > 0) {
            c->sent += (size_t)n;
            c->res->bytes_sent += (uint64_t)n;
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
            bc_fail(t, c, &c->res->fail_tls, now, hb_sock_strerror(&c->sock, errno));
        else if (!retry_stale(t, c, now))
            bc_fail(t, c, &c->res->fail_receive, now, n < 0 ? strerror(errno) : "send failed");
        return;
    }
    if (!c->read_ahead)
        begin_reading(c);
    c->read_ahead = 0;
    c->sock.wants = HB_SOCK_WANT_READ;
    watch_wants(t, c);
}

/* Under a shape: when slot c's n-th request is due (see shape.h), or
 * INT64_MAX when the shape holds no more for it. */
static int64_t shape_due(const hb_bench *b, const bconn *c, uint64_t n)
{
    double k = (double)c->global + (double)n * (double)b->cfg.concurrency;
    double at = hb_shape_due(b->shape, k);
    return at < 0 ? INT64_MAX : b->start + (int64_t)(at * 1e9);
}

/* Under a shape of connections: now when slot c may run, else when it may
 * next (INT64_MAX: never again). */
static int64_t vus_next(const hb_bench *b, const bconn *c, int64_t now)
{
    double at = hb_shape_when(b->vus, (double)c->global + 1, (double)(now - b->start) / 1e9);
    if (at < 0)
        return INT64_MAX;
    int64_t when = b->start + (int64_t)(at * 1e9);
    return when > now ? when : now;
}

/* Which request c sends next, and which of its variants (scen.h). */
static void choose(bthread *t, bconn *c)
{
    hb_bench *b = t->b;
    int i = 0;
    if (b->nreqs > 1) {
        if (b->cfg.sequence) {
            i = c->next_req;
            c->next_req = (i + 1) % b->nreqs;
        } else {
            i = hb_scen_pick(&t->rng, b->cumulative, b->nreqs);
        }
    }
    breq *q = &b->reqs[i];
    uint32_t v = hb_scen_variant(&q->uses, q->r.nvariants, q->r.random, &t->rng);
    c->rq = q;
    c->res = &t->res[i];
    c->req = q->r.variants[v];
    c->req_len = q->r.lens[v];
}

static void start_request(bthread *t, bconn *c, int64_t now)
{
    hb_bench *b = t->b;
    if (c->state == BC_RATE)
        t->rate_waiting--;
    if (b->vus != NULL && !stopped(b) && !(b->end && now >= b->end)) {
        int64_t at = vus_next(b, c, now);
        if (at > now) {
            /* Not among the connections the shape asks for now: its socket
             * closes (a VU stopping) and it waits for its turn. */
            bc_close(c);
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
    if (!take_ticket(b, now)) {
        c->state = BC_IDLE;
        return;
    }
    /* A pipeline takes up to its depth, all written at once. */
    int batch = 1;
    while (batch < b->cfg.pipeline && take_ticket(b, now))
        batch++;
    c->batch = batch;
    c->answered = 0;
    choose(t, c);
    c->res->issued += (uint64_t)batch;
    __atomic_store_n(&t->live_issued, t->live_issued + (uint64_t)batch, __ATOMIC_RELAXED);
    t->inflight += batch;
    c->t_intended = b->paced ? c->next_at : now;
    if (b->cfg.rate > 0)
        c->next_at += t->interval;
    else if (b->shape != NULL)
        c->next_at = shape_due(b, c, ++c->seq);
    c->t_start = now;
    c->t_first = 0;
    c->connect_ns = 0;
    c->retried = 0;
    c->sent = 0;
    if (c->sock.fd < 0)
        begin_connect(t, c, now);
    else
        write_request(t, c, now);
}

/* ------------------------------------------------------------ responses */

static void bench_cut_short(bthread *t, bconn *c, int64_t now);

/* The end of a drain: the socket closes and the connection is ready. The
 * run's last outcome stays the response's (next_response noted it): the
 * wait for a FIN is no part of the run's time. */
static void drained(bthread *t, bconn *c)
{
    t->draining--;
    bc_close(c);
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
        bc_events(t, c, EPOLLIN);
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
    c->retried = 0;
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
        c->t_start = now;
        t->draining++;
        __atomic_store_n(&t->b->last_outcome, now, __ATOMIC_RELAXED);
        drain(t, c);
        return;
    }
    if (!t->b->cfg.keepalive || leftover || c->refused)
        bc_close(c);
    end_batch(t, c, 0, now);
}

/* A response is whole: counted, timed, and the socket kept or closed. With
 * more of a pipeline to come (c->answered < c->batch after it) the
 * connection reads on, from the bytes after this response. */
static void finish(bthread *t, bconn *c, int64_t now, int leftover)
{
    hb_bench *b = t->b;
    hb_bench_result *res = c->res;
    const hb_bench_config *cfg = &b->cfg;
    breq *q = (breq *)c->rq;

    res->status[c->status < 600 ? c->status : 0]++;
    res->body_bytes += c->body.got;
    c->served++;
    int ok2xx = c->status >= 200 && c->status < 300;
    /* A HEAD response's document length is 0: no body, by definition. */
    uint64_t *failed = NULL;
    if (ok2xx) {
        int64_t expect = -1;
        __atomic_compare_exchange_n(&b->doc_len, &expect, (int64_t)c->body.got, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        if (!b->scen && !cfg->lengths_vary && expect >= 0 && (uint64_t)expect != c->body.got)
            failed = &res->fail_length;
        expect = -1;
        __atomic_compare_exchange_n(&q->doc_len, &expect, (int64_t)c->body.got, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    }
    /* A scenario's checks; the body's search ran as the body came. An
     * answer past the deadline timed out, though it came between ticks. */
    if (now - c->t_start >= b->timeout_ns)
        failed = &res->fail_timeout;
    else if (q->r.expect_length >= 0 && (uint64_t)q->r.expect_length != c->body.got)
        failed = &res->fail_length;
    else if ((q->r.status_ok != NULL && !q->r.status_ok[c->status < 600 ? c->status : 0]) ||
             (q->r.expect_body_len > 0 && c->found < q->r.expect_body_len))
        failed = &res->fail_check;
    if (failed != NULL) {
        count_failed(t, c, failed, 1, now);
        next_response(t, c, now, leftover);
        return;
    }
    /* non_2xx counts complete responses only (non_2xx <= complete): one
     * that failed a check is in that class, its status in status[]. */
    if (!ok2xx)
        res->non_2xx++;
    res->complete++;
    t->complete++;
    __atomic_store_n(&t->live_complete, t->complete, __ATOMIC_RELAXED);
    hb_hist_record(&res->total, (uint64_t)(now - c->t_intended));
    hb_second *sec = second_of(t, now);
    if (sec != NULL) {
        sec->complete++;
        sec->buckets[hb_tl_index((uint64_t)(now - c->t_intended))]++;
    }
    hb_hist_record(&res->uncorrected, (uint64_t)(now - c->t_start));
    hb_hist_record(&res->connect, (uint64_t)c->connect_ns);
    hb_hist_record(&res->waiting, (uint64_t)((c->t_first ? c->t_first : now) - c->t_start));
    hb_hist_record(&res->processing, (uint64_t)(now - c->t_start - c->connect_ns));
    if (c->reuse && cfg->keepalive)
        res->keepalive_requests++;
    next_response(t, c, now, leftover);
}

/* Takes the head and the Server field of the first final response any
 * thread sees (ab's -v 2 prints that head). */
static void note_server(hb_bench *b, const hb_response *r, const char *head)
{
    if (__atomic_load_n(&b->server_set, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&b->mu);
    if (!b->server_set) {
        size_t n = r->head_len < sizeof b->first_head - 1 ? r->head_len : sizeof b->first_head - 1;
        memcpy(b->first_head, head, n);
        b->first_head[n] = 0;
        for (unsigned i = 0; i < r->num_headers; i++) {
            const hb_header *h = &r->headers[i];
            if (hb_name_is(head + h->name_off, h->name_len, "server", 6)) {
                size_t n =
                    h->value_len < sizeof b->server - 1 ? h->value_len : sizeof b->server - 1;
                memcpy(b->server, head + h->value_off, n);
                b->server[n] = 0;
            }
        }
        __atomic_store_n(&b->server_set, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&b->mu);
}

/* Parses a head from p[0..n); returns bytes of it used, or -1 after a
 * failure (the request is then over), with c->have_head set when done. */
static ssize_t take_head(bthread *t, bconn *c, const char *p, size_t n, int64_t now)
{
    const char *buf = p;
    size_t len = n;
    if (hb_buf_size(&c->head) > 0) {
        if (hb_buf_append(&c->head, p, n) != 0) {
            bc_fail(t, c, &c->res->fail_exceptions, now, "out of memory");
            return -1;
        }
        buf = hb_buf_rdptr(&c->head);
        len = hb_buf_size(&c->head);
    }
    hb_response_reset(&t->r);
    t->r.scan = c->scan;
    int rc = hb_parse_response(&t->r, buf, len, c->rq->r.head ? HB_PARSE_HEAD_REQUEST : 0);
    if (rc == HB_PARSE_MORE) {
        c->scan = t->r.scan;
        if (buf == p && hb_buf_append(&c->head, p, n) != 0) {
            bc_fail(t, c, &c->res->fail_exceptions, now, "out of memory");
            return -1;
        }
        return (ssize_t)n;
    }
    if (rc == HB_PARSE_ERROR && t->r.error == hb_parse_not_http) {
        char got[64], why[160];
        hb_parse_excerpt(buf, len, got, sizeof got);
        snprintf(why, sizeof why, "%s: got \"%s\"", t->r.error, got);
        bc_fail(t, c, &c->res->fail_exceptions, now, why);
        return -1;
    }
    if (rc == HB_PARSE_ERROR || t->r.status == 101) {
        bc_fail(t, c, &c->res->fail_exceptions, now,
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
    note_server(t->b, &t->r, buf);
    c->have_head = 1;
    c->status = t->r.status;
    c->reuse = t->r.keep_alive;
    c->res->closing += !t->r.keep_alive;
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
            ssize_t used = take_head(t, c, p, n, now);
            if (used < 0)
                return;
            p += used;
            n -= (size_t)used;
            continue;
        }
        size_t used, off, dn;
        int rc = hb_body_feed(&c->body, p, n, &used, &off, &dn);
        if (rc == HB_PARSE_ERROR) {
            bc_fail(t, c, &c->res->fail_exceptions, now, c->body.error);
            return;
        }
        if (dn > 0 && c->rq->r.expect_body_len > 0)
            hb_scen_needle_feed(&c->rq->body, &c->found, p + off, dn);
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
                c->t_first = now;
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
                c->t_first = now;
            }
            c->res->bytes_received += (uint64_t)n;
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
            bc_fail(t, c, &c->res->fail_tls, now, hb_sock_strerror(&c->sock, errno));
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
        bc_fail(t, c, &c->res->fail_receive, now, why);
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
        bc_fail(t, c, &c->res->fail_receive, now,
                "the server closed the connection with pipelined requests unanswered");
}

static void on_event(bthread *t, bconn *c, unsigned events, int64_t now)
{
    if (c->state == BC_CONNECTING) {
        if (c->sock.tp->connect_done(&c->sock) != 0) {
            connect_failed(t, c, errno, now);
            return;
        }
        connect_done(t, c, now);
    } else if (c->state == BC_TUNNEL) {
        tunnel(t, c, now);
    } else if (c->state == BC_HANDSHAKE) {
        handshake(t, c, now);
    } else if (c->state == BC_WRITING) {
        write_request(t, c, now);
    } else if (c->state == BC_DRAIN) {
        drain(t, c);
    } else if (c->state == BC_READING) {
        /* A pipeline still being written waits for both (write_request). */
        if ((events & EPOLLOUT) && c->read_ahead) {
            write_request(t, c, now);
            if (c->state != BC_READING || !(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                return;
        }
        on_readable(t, c, now);
    } else if (events != 0) {
        /* Between requests (or waiting for its start under a rate): the
         * server closed the socket, or sent what nobody asked for. Either
         * way it is done, and counts nothing; the next request opens
         * another. Left in the set, a closed socket stays readable and
         * the loop would spin on it. */
        bc_close(c);
    }
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
            if (abandon || now - c->t_start >= TICK_NS)
                drained(t, c);
            continue;
        }
        if (c->state == BC_RETRY &&
            (abandon || now - c->t_start >= b->timeout_ns || now - c->t_connect >= RETRY_FOR_NS)) {
            t->retrying--;
            c->state = BC_CONNECTING; /* (no socket: what follows closes nothing) */
            if (!abandon && now - c->t_start < b->timeout_ns) {
                bc_fail(t, c, &c->res->fail_connect, now,
                        "the server's backlog stayed full (connect: EAGAIN)");
                continue;
            }
        }
        if (c->state >= BC_CONNECTING && c->state != BC_RETRY) {
            if (abandon) {
                /* Not finished within the grace: cancelled, which is no
                 * failure (issued == complete + failed + cancelled). */
                c->res->cancelled += (uint64_t)unanswered(c);
                t->inflight -= unanswered(c);
                bc_close(c);
                c->state = BC_IDLE;
            } else if (now - c->t_start >= b->timeout_ns) {
                bc_fail(t, c, &c->res->fail_timeout, now, "timed out");
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
        if (c->state != BC_RATE)
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

static double cpu_seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
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
        if (c->state == BC_READING) {
            on_readable(t, c, now);
        } else if (c->state == BC_DRAIN) {
            drain(t, c); /* blocks up to a tick in recv */
        } else if (c->state == BC_RETRY) {
            int64_t wait = c->next_try - now;
            if (wait > 0) {
                struct timespec ts = {wait / 1000000000, wait % 1000000000};
                nanosleep(&ts, NULL);
            }
            retry_due(t, hb_now_ns());
        } else if (c->state == BC_CONNECTING || c->state == BC_TUNNEL || c->state == BC_HANDSHAKE ||
                   c->state == BC_WRITING) {
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
 * event (data.ptr NULL) of its own, so closed loop waits with no timeout. */
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
            start_request(t, t->ready[--t->nready], now);
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
                on_event(t, events[i].data.ptr, events[i].events, now);
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

/* Every connection of t to its start: idle, on the ready stack, its
 * schedule from b->start. */
static void schedule(bthread *t)
{
    hb_bench *b = t->b;
    /* Under a rate R the run's requests are spread evenly from the start:
     * connection g (counted over all threads) starts its schedule g/R
     * seconds in, then every concurrency/R seconds, so N requests take
     * N/R seconds at any concurrency. */
    t->nready = 0;
    t->rate_waiting = 0;
    for (int i = 0; i < t->nconns; i++) {
        bconn *c = &t->conns[i];
        c->state = BC_IDLE;
        c->seq = 0;
        c->next_at = b->start;
        c->global = t->first_conn + i;
        if (b->paced && b->cfg.rate > 0)
            c->next_at += (int64_t)((double)(t->first_conn + i) / b->cfg.rate * 1e9);
        else if (b->paced && b->shape != NULL)
            c->next_at = shape_due(b, c, 0);
        t->ready[t->nready++] = c;
    }
}

static void run_loop(bthread *t)
{
    schedule(t);
    if (t->blocking)
        lone_loop(t);
    else
        epoll_loop(t);
}

static void result_init(hb_bench_result *r);

/* Forgets a warmup: every figure of t back to nothing. */
static void forget(bthread *t)
{
    for (int k = 0; k < t->b->nreqs; k++)
        result_init(&t->res[k]);
    if (t->timeline != NULL)
        memset(t->timeline, 0, (size_t)t->tl_cap * sizeof *t->timeline);
    t->nseconds = 0;
    t->complete = t->failed = 0;
    __atomic_store_n(&t->live_issued, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->live_complete, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->live_failed, 0, __ATOMIC_RELAXED);
}

/* A prepared start: t has warmed up; it waits for hb_bench_go (or a
 * stop), then until the start instant. Returns 0 to run on, 1 when the
 * run was stopped first. */
static int wait_for_go(bthread *t)
{
    hb_bench *b = t->b;
    pthread_mutex_lock(&b->mu);
    b->nprepared++;
    pthread_cond_broadcast(&b->done_cv);
    while (!b->go && !stopped(b))
        pthread_cond_wait(&b->gate_cv, &b->mu);
    int go = b->go;
    pthread_mutex_unlock(&b->mu);
    forget(t);
    if (!go)
        return 1;
    /* To the instant, a tick at a time so a stop is heard meanwhile. */
    for (int64_t now = hb_now_ns(); now < b->start && !stopped(b); now = hb_now_ns()) {
        int64_t until = b->start - now > TICK_NS ? now + TICK_NS : b->start;
        struct timespec at = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
    }
    return 0;
}

static void *thread_main(void *arg)
{
    bthread *t = arg;
    hb_bench *b = t->b;

    pthread_mutex_lock(&b->mu);
    while (!b->gate_open)
        pthread_cond_wait(&b->gate_cv, &b->mu);
    int warming = b->warming;
    pthread_mutex_unlock(&b->mu);

    struct rusage ru0, ru;
    memset(&ru0, 0, sizeof ru0);
    int run = 1;
    if (warming) {
        run_loop(t);
        run = wait_for_go(t) == 0;
        getrusage(RUSAGE_THREAD, &ru0);
    }
    if (run)
        run_loop(t);
    for (int i = 0; i < t->nconns; i++)
        bc_close(&t->conns[i]);
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        t->cpu_user = cpu_seconds(&ru.ru_utime) - cpu_seconds(&ru0.ru_utime);
        t->cpu_sys = cpu_seconds(&ru.ru_stime) - cpu_seconds(&ru0.ru_stime);
    }
    pthread_mutex_lock(&b->mu);
    if (--b->running == 0)
        pthread_cond_broadcast(&b->done_cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* ------------------------------------------------------------ the run */

/* b->reqs from the scenario, or from the run's one request, with every
 * pointer array copied into allocations of b's own. Returns 0, or -1 with
 * errno (ENOMEM; EINVAL for a scenario out of its limits). */
static int setup_requests(hb_bench *b, const hb_bench_config *cfg)
{
    const hb_bench_req one = {.variants = &cfg->request,
                              .lens = &cfg->request_len,
                              .nvariants = 1,
                              .head = cfg->head,
                              .weight = 1,
                              .expect_length = -1};
    const hb_bench_req *src = cfg->nscenario > 0 ? cfg->scenario : &one;
    int n = cfg->nscenario > 0 ? cfg->nscenario : 1;
    size_t nptr = 0, nfail = 0;
    if (n > HB_BENCH_MAX_SCENARIO || (cfg->nscenario > 0 && cfg->pipeline > 1)) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (src[i].nvariants < 1 || !(src[i].weight > 0)) {
            errno = EINVAL;
            return -1;
        }
        nptr += src[i].nvariants;
        nfail += src[i].expect_body_len;
    }
    b->reqs = calloc((size_t)n, sizeof *b->reqs);
    b->cumulative = malloc((size_t)n * sizeof *b->cumulative);
    b->ptrs = malloc(nptr * sizeof *b->ptrs);
    b->lens = malloc(nptr * sizeof *b->lens);
    b->fails = malloc((nfail > 0 ? nfail : 1) * sizeof *b->fails);
    if (b->reqs == NULL || b->cumulative == NULL || b->ptrs == NULL || b->lens == NULL ||
        b->fails == NULL)
        return -1;
    double sum = 0;
    for (int i = 0, at = 0, fat = 0; i < n; i++) {
        breq *q = &b->reqs[i];
        q->r = src[i];
        q->doc_len = -1;
        memcpy(b->ptrs + at, src[i].variants, src[i].nvariants * sizeof *b->ptrs);
        memcpy(b->lens + at, src[i].lens, src[i].nvariants * sizeof *b->lens);
        q->r.variants = b->ptrs + at;
        q->r.lens = b->lens + at;
        at += (int)src[i].nvariants;
        if (q->r.expect_body_len > 0) {
            hb_scen_needle_init(&q->body, q->r.expect_body, q->r.expect_body_len, b->fails + fat);
            fat += (int)q->r.expect_body_len;
        }
        sum += src[i].weight;
        b->cumulative[i] = sum;
    }
    b->nreqs = n;
    b->scen = cfg->nscenario > 0;
    b->cfg.scenario = NULL; /* the copies serve */
    return 0;
}

void hb_bench_result_free(hb_bench_result *r)
{
    free(r->timeline);
    r->timeline = NULL;
    r->nseconds = 0;
}

static void result_init(hb_bench_result *r)
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
    r->document_length = -1;
}

/* The run's own copies of cfg's shapes. Returns 0, or -1 with errno. */
static int copy_shapes(hb_bench *b, const hb_bench_config *cfg)
{
    if (cfg->shape != NULL) {
        b->shape = malloc(sizeof *b->shape);
        if (b->shape == NULL)
            return -1;
        *b->shape = *cfg->shape;
        b->cfg.shape = b->shape;
    }
    if (cfg->vus != NULL) {
        b->vus = malloc(sizeof *b->vus);
        if (b->vus == NULL)
            return -1;
        *b->vus = *cfg->vus;
        b->cfg.vus = b->vus;
    }
    return 0;
}

/* Thread i's share of the connections (from the first-th over all
 * threads), its figures, its epoll set and, for the event loop, its tick.
 * Returns 0, or -1 with errno (hb_bench_free undoes what was done). */
static int setup_thread(hb_bench *b, bthread *t, int i, int first, int conc, int nt)
{
    const hb_bench_config *cfg = &b->cfg;
    t->first_conn = first;
    t->nconns = conc / nt + (i < conc % nt);
    t->conns = calloc((size_t)t->nconns, sizeof *t->conns);
    if (t->conns == NULL)
        return -1;
    t->res = calloc((size_t)b->nreqs, sizeof *t->res);
    if (t->res == NULL)
        return -1;
    for (int k = 0; k < b->nreqs; k++)
        result_init(&t->res[k]);
    hb_scen_rng_seed(&t->rng, cfg->seed, (uint64_t)i);
    for (int j = 0; j < t->nconns; j++) {
        hb_sock_init(&t->conns[j].sock, cfg->transport ? cfg->transport : &hb_net_tcp, 0);
        t->conns[j].sock.shared = cfg->transport_shared;
        t->conns[j].rq = &b->reqs[0];
        t->conns[j].res = &t->res[0];
    }
    t->ready = calloc((size_t)t->nconns, sizeof *t->ready);
    t->scratch = malloc(SCRATCH);
    if (t->ready == NULL || t->scratch == NULL)
        return -1;
    t->ep = epoll_create1(EPOLL_CLOEXEC);
    if (t->ep < 0)
        return -1;
    /* A pipeline writes and reads at once: the event loop's. */
    t->blocking = t->nconns == 1 && !(cfg->rate > 0 || cfg->shape != NULL) && cfg->vus == NULL &&
                  cfg->pipeline <= 1;
    if (!t->blocking) {
        struct itimerspec every = {.it_interval = {0, b->tick_ns}, .it_value = {0, b->tick_ns}};
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        t->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (t->tick_fd < 0 || timerfd_settime(t->tick_fd, 0, &every, NULL) != 0 ||
            epoll_ctl(t->ep, EPOLL_CTL_ADD, t->tick_fd, &ev) != 0)
            return -1;
    }
    /* Under a rate each connection starts every conc/rate seconds. */
    if (cfg->rate > 0)
        t->interval = (int64_t)((double)conc / cfg->rate * 1e9);
    return 0;
}

/* Starts the threads with every signal blocked (the caller's thread
 * takes them), then opens the start gate: the run's clock starts now, for
 * every thread at once. A thread that cannot be made stops the run. */
static void launch(hb_bench *b, int nt)
{
    const hb_bench_config *cfg = &b->cfg;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    b->running = nt;
    for (int i = 0; i < nt; i++) {
        if (pthread_create(&b->threads[i].thread, NULL, thread_main, &b->threads[i]) != 0) {
            pthread_mutex_lock(&b->mu);
            b->running -= nt - i;
            pthread_mutex_unlock(&b->mu);
            hb_bench_stop(b);
            break;
        }
        b->threads[i].started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* The run starts now, for every thread at once; they read the clock's
     * marks after the gate, under the mutex that set them. */
    pthread_mutex_lock(&b->mu);
    b->start = b->last_outcome = hb_now_ns();
    if (b->end)
        b->end = b->start + (int64_t)(cfg->duration * 1e9);
    if (b->warming) {
        b->end = 0; /* set by hb_bench_go */
        b->warm_end = b->start + (int64_t)(cfg->warmup_seconds * 1e9);
    }
    b->gate_open = 1;
    pthread_cond_broadcast(&b->gate_cv);
    pthread_mutex_unlock(&b->mu);
}

int hb_bench_check(const hb_bench_config *cfg, char *err, size_t errlen)
{
    const char *broken = NULL;
    if (cfg->rate > 0 && cfg->pipeline > 1)
        broken = "pipeline with rate is not supported";
    else if (cfg->shape != NULL && (cfg->rate > 0 || cfg->pipeline > 1))
        broken = "stages set the rate: no rate or pipeline beside";
    else if (cfg->vus != NULL && (cfg->rate > 0 || cfg->shape != NULL))
        broken = "concurrency_stages run closed loop: no rate";
    else if (cfg->scenario != NULL && cfg->pipeline > 1)
        broken = "pipeline with a scenario is not supported";
    /* Under a rate a connection starts every concurrency/rate seconds. */
    else if (cfg->rate > 0 && (double)cfg->concurrency / cfg->rate > HB_BENCH_MAX_SECONDS)
        broken = "the rate is too low for the connections";
    if (broken == NULL)
        return 0;
    snprintf(err, errlen, "%s", broken);
    return -1;
}

hb_bench *hb_bench_start(const hb_bench_config *cfg)
{
    hb_bench *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->cfg = *cfg;
    b->doc_len = -1;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->done_cv, NULL);
    pthread_cond_init(&b->gate_cv, NULL);
    if (b->cfg.pipeline < 1)
        b->cfg.pipeline = 1;
    if (copy_shapes(b, cfg) != 0)
        goto error;
    b->paced = cfg->rate > 0 || cfg->shape != NULL;
    if (cfg->prepared) {
        /* The warmup is closed loop on every connection; the measured
         * part's pacing and shape come back with hb_bench_go. */
        b->warming = 1;
        b->paced_measured = b->paced;
        b->vus_measured = b->vus;
        b->paced = 0;
        b->vus = NULL;
    }
    if (setup_requests(b, cfg) != 0)
        goto error;
    if (b->cfg.pipeline > 1) {
        /* The whole pipeline's bytes, for one write of any part of it. */
        b->pipe_req = malloc((size_t)b->cfg.pipeline * cfg->request_len);
        if (b->pipe_req == NULL)
            goto error;
        for (int i = 0; i < b->cfg.pipeline; i++)
            memcpy(b->pipe_req + (size_t)i * cfg->request_len, cfg->request, cfg->request_len);
    }
    int conc = cfg->concurrency > 0 ? cfg->concurrency : 1;
    int nt = cfg->threads > 0 ? cfg->threads : 1;
    if (nt > conc)
        nt = conc;
    b->threads = calloc((size_t)nt, sizeof *b->threads);
    if (b->threads == NULL)
        goto error;
    b->nthreads = nt;
    /* Every descriptor is -1 before anything can fail, so the one cleanup
     * path (hb_bench_free) closes only what was opened: calloc's zeros
     * would close the process's standard input. */
    for (int i = 0; i < nt; i++) {
        b->threads[i].b = b;
        b->threads[i].ep = b->threads[i].tick_fd = -1;
    }
    b->start = hb_now_ns();
    b->last_outcome = b->start;
    b->timeout_ns = (int64_t)(cfg->timeout * 1e9);
    b->tick_ns = b->timeout_ns / 4 < TICK_NS ? b->timeout_ns / 4 : TICK_NS;
    if (b->tick_ns < 1000000)
        b->tick_ns = 1000000;
    b->end = cfg->duration > 0 ? b->start + (int64_t)(cfg->duration * 1e9) : 0;
    for (int i = 0, first = 0; i < nt; first += b->threads[i].nconns, i++)
        if (setup_thread(b, &b->threads[i], i, first, conc, nt) != 0)
            goto error;
    launch(b, nt);
    return b;
error:
    /* Every way here set errno: ENOMEM from an allocation, EMFILE or the
     * like from epoll or timerfd. Freeing must not lose it. */
    {
        int err = errno;
        hb_bench_free(b);
        errno = err;
    }
    return NULL;
}

void hb_bench_progress(hb_bench *b, uint64_t *issued, uint64_t *complete, uint64_t *failed)
{
    uint64_t n = 0, c = 0, f = 0;
    for (int i = 0; i < b->nthreads; i++) {
        n += __atomic_load_n(&b->threads[i].live_issued, __ATOMIC_RELAXED);
        c += __atomic_load_n(&b->threads[i].live_complete, __ATOMIC_RELAXED);
        f += __atomic_load_n(&b->threads[i].live_failed, __ATOMIC_RELAXED);
    }
    *issued = n;
    *complete = c;
    *failed = f;
}

int hb_bench_prepared(hb_bench *b)
{
    pthread_mutex_lock(&b->mu);
    int ready = !b->cfg.prepared || b->go || b->nprepared >= b->running;
    pthread_mutex_unlock(&b->mu);
    return ready;
}

void hb_bench_go(hb_bench *b, int64_t start_realtime_ns)
{
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    int64_t now = hb_now_ns();
    int64_t ahead = start_realtime_ns - ((int64_t)real.tv_sec * 1000000000 + real.tv_nsec);
    if (ahead < 0)
        ahead = 0;
    if (ahead > (int64_t)(HB_BENCH_MAX_SECONDS * 1e9))
        ahead = (int64_t)(HB_BENCH_MAX_SECONDS * 1e9);
    pthread_mutex_lock(&b->mu);
    /* Until every thread waits (a thread ends only after it has): what
     * they read is then set here, under the mutex they wait on. */
    while (b->warming && b->nprepared < b->running && !stopped(b))
        pthread_cond_wait(&b->done_cv, &b->mu);
    if (b->warming && !b->go && !stopped(b)) {
        b->warming = 0;
        b->paced = b->paced_measured;
        b->vus = b->vus_measured;
        b->start = b->last_outcome = now + ahead;
        b->end = b->cfg.duration > 0 ? b->start + (int64_t)(b->cfg.duration * 1e9) : 0;
        b->tickets = 0;
        b->doc_len = -1;
        for (int i = 0; i < b->nreqs; i++)
            b->reqs[i].doc_len = -1;
        b->go = 1;
        pthread_cond_broadcast(&b->gate_cv);
    }
    pthread_mutex_unlock(&b->mu);
}

void hb_bench_stop(hb_bench *b)
{
    if (!stopped(b)) {
        b->stop_at = hb_now_ns() + HB_BENCH_GRACE_NS;
        __atomic_store_n(&b->stopping, 1, __ATOMIC_RELEASE);
    }
    /* Threads waiting for a prepared start's go, and a caller of
     * hb_bench_go waiting for them, hear it. */
    pthread_mutex_lock(&b->mu);
    pthread_cond_broadcast(&b->gate_cv);
    pthread_cond_broadcast(&b->done_cv);
    pthread_mutex_unlock(&b->mu);
}

int hb_bench_wait(hb_bench *b, int64_t timeout_ns)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + timeout_ns;
    until.tv_sec += ns / 1000000000;
    until.tv_nsec = ns % 1000000000;
    pthread_mutex_lock(&b->mu);
    while (b->running > 0) {
        if (pthread_cond_timedwait(&b->done_cv, &b->mu, &until) == ETIMEDOUT)
            break;
    }
    int done = b->running == 0;
    pthread_mutex_unlock(&b->mu);
    return done;
}

/* Adds r's counts, statuses, histograms and first error into out. */
static void result_add(hb_bench_result *out, const hb_bench_result *r)
{
#define ADD_COUNT(field, name) out->field += r->field;
    HB_BENCH_COUNTS(ADD_COUNT)
#undef ADD_COUNT
    for (int s = 0; s < 600; s++)
        out->status[s] += r->status[s];
    hb_hist_merge(&out->total, &r->total);
    hb_hist_merge(&out->uncorrected, &r->uncorrected);
    hb_hist_merge(&out->connect, &r->connect);
    hb_hist_merge(&out->waiting, &r->waiting);
    hb_hist_merge(&out->processing, &r->processing);
    hb_hist_merge(&out->tls_handshake, &r->tls_handshake);
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

void hb_bench_collect(hb_bench *b, hb_bench_result *out)
{
    result_init(out);
    for (int i = 0; i < b->nthreads; i++) {
        const bthread *t = &b->threads[i];
        if (t->res == NULL)
            continue;
        for (int k = 0; k < b->nreqs; k++)
            result_add(out, &t->res[k]);
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
            for (int k = 0; k < HB_TL_BUCKETS; k++)
                out->timeline[s].buckets[k] += t->timeline[s].buckets[k];
        }
    }
    out->document_length = b->doc_len;
    result_common(b, out);
}

void hb_bench_collect_request(hb_bench *b, int i, hb_bench_result *out)
{
    result_init(out);
    for (int k = 0; i >= 0 && i < b->nreqs && k < b->nthreads; k++)
        if (b->threads[k].res != NULL)
            result_add(out, &b->threads[k].res[i]);
    out->document_length = i >= 0 && i < b->nreqs ? b->reqs[i].doc_len : -1;
    result_common(b, out);
}

void hb_bench_free(hb_bench *b)
{
    hb_bench_stop(b);
    for (int i = 0; i < b->nthreads; i++) {
        bthread *t = &b->threads[i];
        if (t->started)
            pthread_join(t->thread, NULL);
        if (t->conns != NULL) {
            for (int j = 0; j < t->nconns; j++) {
                bc_close(&t->conns[j]);
                hb_sock_release(&t->conns[j].sock);
                hb_buf_free(&t->conns[j].head);
            }
        }
        if (t->ep >= 0)
            close(t->ep);
        if (t->tick_fd >= 0)
            close(t->tick_fd);
        for (int k = 0; t->conns != NULL && k < t->nconns; k++)
            if (t->conns[k].tn != NULL) {
                hb_tunnel_free(t->conns[k].tn);
                free(t->conns[k].tn);
            }
        free(t->conns);
        free(t->ready);
        free(t->scratch);
        free(t->timeline);
        free(t->res);
    }
    free(b->threads);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->done_cv);
    pthread_cond_destroy(&b->gate_cv);
    free(b->pipe_req);
    free(b->shape);
    free(b->vus);
    free(b->reqs);
    free(b->cumulative);
    free(b->ptrs);
    free(b->lens);
    free(b->fails);
    free(b);
}
