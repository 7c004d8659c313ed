/* bench_int.h: what the timing loop's files share (bench.c the run's
 * lifecycle, bench_loop.c a thread's event loop, bench_sock.c a
 * connection's socket and its states, bench_exch.c an exchange's ticket
 * and verdict, bench_h1.c and bench_h2.c the protocols, bench_pace.c
 * pacing and picks, bench_result.c what is recorded and merged); not for
 * the glue, which sees bench.h (and the bench_result.h it includes) alone. */
#ifndef HB_BENCH_INT_H
#define HB_BENCH_INT_H

#include "bench.h"

#include "buf.h"
#include "tunnel.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
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
/* Under a rate: the thread late to act by this much or more was stalled
 * (hb_bp_late), not merely slow to wake: ten times the wake-up latency of
 * a busy VM here (0.1 ms at the median), and the lateness at which the
 * verdict calls sends late (httpbench/bound.py's LATE_P99_BOUND). */
#define STALL_NS 1000000LL
/* A request the loop sends: a scenario's, or the run's one request. */
typedef struct {
    hb_bench_req r;      /* copied, with its variants' pointers and lengths */
    uint64_t uses;       /* cycled variants: uses so far, shared by the threads */
    int64_t doc_len;     /* its first 2xx response's body length; -1 until then */
    hb_scen_needle body; /* expect_body's search, when set */
} breq;

/* A connection's socket is one machine (bench_sock.c: connect, tunnel,
 * handshake, retry, close) and the protocol it carries another (a carrier,
 * hb_carrier below: bench_h1.c, bench_h2.c), each with its own states in
 * its own table. c->state is one number: the socket's states below
 * BC_CARRIED, the carrier's from there (its table's first entry is
 * BC_CARRIED). */
enum {
    BC_IDLE = 0, /* no exchange under way (its socket open or not) */
    BC_RATE,     /* waiting for its turn (a rate's slot, a shape's), no socket
                  * needed meanwhile: its wake-up in the thread's heap */
    BC_CONNECTING,
    BC_TUNNEL,
    BC_HANDSHAKE,
    BC_RETRY, /* connect again at next_try: a Unix socket's backlog was full (EAGAIN),
               * or a GOAWAY ended a socket that served nothing (bench_h2.c) */
    BC_DRAIN, /* the server said it closes: waiting for its FIN (hb_bs_drain) */
    BC_CARRIED
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

/* An exchange: one request's ticket, clock and outcome. A connection
 * carries them in its array: one at a time (HTTP/1.1), a pipelined batch
 * (written together, each answer timed from the write), or many in flight
 * (HTTP/2's streams, each in a slot of its own); the array has room for
 * what a connection may carry at once. Its start (hb_bx_issue), its
 * judgement (hb_bx_judge) and what it records (bench_result.c) are the
 * same code whatever carries it; what only a carrier needs of it is the
 * carrier's own (its bconn.cs). The arrays are allocated with the
 * connections, once: nothing per request. */
typedef struct {
    const breq *rq;       /* the request under way */
    hb_bench_result *res; /* its figures, this thread's */
    size_t variant;       /* the variant sent: its index over every variant (b->ptrs,
                           * b->lens; a carrier's own form of it, by the same index) */
    int64_t t_intended;   /* when it was due (its ticket's instant under a rate) */
    int64_t t_start;      /* when it began: the write's clock, and its deadline's */
    int64_t t_first;      /* its first response byte, 0 before */
    int64_t connect_ns;   /* of its time, the connect's (a handshake included) */
    /* Its verdict: the HTTP status (0 where the protocol has none: a
     * message), and an application's beside it where a carrier or a check
     * supplies one (gRPC's grpc-status; -1 for none). */
    int status;
    int app_status;
    int noting;     /* the run's first final response: its Server is the run's */
    int retried;    /* it was sent again once already */
    int step;       /* order by sequence: this lane's next request (at its end) */
    uint32_t found; /* expect_body's search: the match so far */
    /* The per-request log, as its carrier counts them: the request's bytes
     * and the response's (HTTP/1.1: written and parsed; HTTP/2: the
     * bodies'), its carrier's tag for the log's stream column (HTTP/2's
     * stream id; 0 for none), and its connection over all threads. rx is
     * also the body length HTTP/2 judges. */
    uint64_t tx, rx;
    int32_t tag;
    uint32_t conn;
} bexch;

struct hb_carrier;

typedef struct bconn {
    bexch *xs;    /* its exchanges: as many as it may carry at once */
    hb_sock sock; /* through the transport, non-blocking (blocking when lone) */
    int state;    /* BC_* below BC_CARRIED, else its carrier's */
    const struct hb_carrier *carrier;
    void *cs;        /* the carrier's own state for this connection */
    uint64_t served; /* responses on this socket */
    uint64_t opened; /* sockets this slot has opened */
    int addr;        /* the address being connected to */
    int addr_tries;  /* addresses tried for this connect */
    hb_tunnel *tn;   /* the CONNECT through a forward proxy: made at the first,
                      * so a run without one keeps its connections small */
    unsigned events;
    int64_t t_connect;   /* when the socket's connect began */
    int64_t t_unheard;   /* the same, until its first response byte came (then 0) */
    int64_t t_handshake; /* when the handshake began */
    int64_t next_try;    /* BC_RETRY: when to connect again (its wake-up) */
    int64_t t_drain;     /* BC_DRAIN: when the wait for the server's FIN began */
    int64_t backoff;     /* and the wait after that */
    int paused;          /* BC_RETRY: a connect not yet counted (hb_bs_connect_later) */
    int64_t next_at;     /* rate: the next intended start */
    int64_t free_at;     /* when its last exchange ended (HTTP/2: a stream's slot freed) */
    uint64_t seq;        /* a rate or a shape: requests this slot has started */
    int global;          /* this slot's index over all threads */
    int in_ready;        /* on the thread's ready stack */
    int next_turn;       /* order "turns": the request it sends next */
    int unread;          /* its transport holds bytes no epoll event will tell of */
    /* Its wake-up (hb_bp_wake_at): when the loop is to act on it next, in
     * the thread's heap at wake_slot (-1: none), and what for (HB_WAKE_*). */
    int64_t wake_at;
    int wake_slot;
    int wake_kind;
    /* Its req/s as h2load reckons a client's: responses over the run,
     * every socket, over its own time, from its first connect in the
     * measured part (or that part's start, for a socket the warmup
     * opened) to its last close, or while open its last exchange's end
     * once requests=N are all taken, or the run's end. */
    uint64_t done_total;
    int64_t t_began;  /* 0: no socket yet in the measured part */
    int64_t t_closed; /* 0 while a socket is open */
    struct bthread *thr;
} bconn;

/* How a lone connection (one per thread, closed loop) waits in a state,
 * where the event loop waits in epoll: not at all, in the state's own
 * blocking recv, in poll for what the socket wants, asleep, or by what
 * the connection watches (c->events, which hb_bs_watch keeps without
 * epoll for a lone one): in its handler's blocking read (EPOLLIN), in
 * poll while it waits to write too (EPOLLOUT). */
enum { LONE_NONE = 0, LONE_RECV, LONE_POLL, LONE_SLEEP, LONE_WATCHED };

/* One state of a machine: its name, its event handler (events: epoll's, 0
 * from a lone connection's wait), how a lone connection waits in it, and
 * every state it may go to: bits (1u << state), HB_BC_TO_CARRIER for any
 * of the carrier's states marked `entry` (the socket's machine handing an
 * open socket over). hb_bc_enter holds every transition to its table
 * when built with HB_CHECK_STATES (the tests' and sanitizer's builds). */
#define HB_BC_TO(s) (1u << (s))
#define HB_BC_TO_CARRIER (1u << 31)
/* Where a connection may go when it opens a socket: connecting, or on at
 * once (a Unix connect) into the tunnel, the handshake, the retry or the
 * carrier. */
#define HB_BC_OPENING                                                                              \
    (HB_BC_TO(BC_CONNECTING) | HB_BC_TO(BC_TUNNEL) | HB_BC_TO(BC_HANDSHAKE) | HB_BC_TO(BC_RETRY) | \
     HB_BC_TO_CARRIER)
typedef struct bthread bthread;
typedef struct {
    const char *name;
    void (*on_event)(bthread *t, bconn *c, unsigned events, int64_t now);
    int lone;
    uint32_t next;
    int entry;
} hb_bc_state;

/* A protocol a socket carries: its states (BC_CARRIED on) and what the
 * run, the socket's machine and the loop ask of it, chosen once per run
 * (bench.c's CARRIERS, by hb_bench_config.protocol). Adding a protocol is
 * one file that fills one of these (docs/design.md). */
typedef struct hb_carrier {
    const char *name;
    const hb_bc_state *states;
    int nstates;
    /* ---- The run's and a thread's, before anything is sent. */
    /* The exchanges a connection may carry at once under cfg (>= 1). */
    int (*depth)(const hb_bench_config *cfg);
    /* Whether a thread with one connection in closed loop may wait in
     * that connection's blocking read rather than in epoll. */
    int (*lone)(const hb_bench_config *cfg);
    /* Whether a closed loop naps before it waits for answers (bench_loop.c's
     * NAP: answers that come in batches, many streams on a socket). */
    int naps;
    /* What the run's requests need of it (b->carried); 0, or -1 with
     * errno (EINVAL: a request it cannot send, said in err). unprepare:
     * what prepare made, safe on a half-made one. */
    int (*prepare)(hb_bench *b, char *err, size_t errlen);
    void (*unprepare)(hb_bench *b);
    /* A thread's own (t->carried); 0, or -1 out of memory. thread_release:
     * what thread_setup made, safe on a half-built t. */
    int (*thread_setup)(bthread *t);
    void (*thread_release)(bthread *t);
    /* Whether t holds work of the carrier's beyond its exchanges in flight
     * (HTTP/2's sockets opened before any ticket): its loop runs on. */
    int (*working)(const bthread *t);
    /* ---- A connection's. */
    /* Its state for c (c->cs), with room for `depth` exchanges; 0, or -1
     * out of memory. release: what setup made, safe on a half-built c. */
    int (*setup)(bconn *c, int depth);
    void (*release)(bconn *c);
    /* c is ready (off the ready stack, or due under a rate): it takes
     * tickets and sends, opening a socket (hb_bs_begin_connect) if need be. */
    void (*start)(bthread *t, bconn *c, int64_t now);
    /* The socket is open (through any tunnel and handshake). */
    void (*opened)(bthread *t, bconn *c, int64_t now);
    /* The proxy refused the tunnel: its answer is in c->tn. */
    void (*refused)(bthread *t, bconn *c, int64_t now);
    /* Every exchange c carries failed in class cls (HB_FAIL), the first
     * saying why; c closes and is ready again. */
    void (*fail)(bthread *t, bconn *c, size_t cls, int64_t now, const char *why);
    /* The connect's time, in each exchange waiting for the new socket. */
    void (*connect_ns)(bconn *c, int64_t ns);
    /* Deadlines, and past a stop's grace (abandon) the cancelling of what
     * is in flight: every tick, for every connection. */
    void (*tick)(bthread *t, bconn *c, int64_t now, int abandon);
    /* The socket closed (hb_bs_close): what the carrier held of it goes. */
    void (*closed)(bconn *c);
    /* ---- Its I/O, which the socket's loops do (hb_bs_read, hb_bs_write):
     * the carrier is handed what came and asked for what to send, and
     * never reads or writes the socket for them. */
    /* n > 0 bytes came at now (p: the thread's scratch, SCRATCH long):
     * taken. Returns HB_IN_MORE to read on, HB_IN_ENOUGH when this
     * wake-up's reading is over (a short read emptied what there was),
     * HB_IN_LEFT when c left its reading (a failure, a close, a new
     * socket). */
    int (*input)(bthread *t, bconn *c, const char *p, size_t n, int64_t now);
    /* What c has to write next, in v[0..HB_OUT_MAX) (bytes that stay the
     * carrier's, in place, until `sent`): how many pieces, 0 when none. */
    int (*output)(bthread *t, bconn *c, struct iovec *v);
    /* n bytes of what output gave were written. */
    void (*sent)(bthread *t, bconn *c, size_t n);
    /* The socket failed under it: the server closed it (err 0) or reset
     * it (err: errno) while c read, or a write failed (writing; err 0: it
     * wrote nothing). Its exchanges go again or fail. */
    void (*broke)(bthread *t, bconn *c, int writing, int err, int64_t now);
} hb_carrier;

/* What a carrier's input says of the bytes it was handed. */
enum { HB_IN_MORE = 0, HB_IN_ENOUGH, HB_IN_LEFT };
/* The most pieces an output fills. */
#define HB_OUT_MAX 2

extern const hb_carrier hb_carrier_h1; /* bench_h1.c */
extern const hb_carrier hb_carrier_h2; /* bench_h2.c */

/* The table that holds c's state `state` (bench_sock.c's below
 * BC_CARRIED, its carrier's from there). */
const hb_bc_state *hb_bc_state_of(const bconn *c, int state);

/* c goes to state `to` (a stay is no transition). Built with
 * HB_CHECK_STATES, a change its table does not hold is reported and
 * aborts. */
void hb_bc_enter(bconn *c, int to);

/* c on t's ready stack (once): the loop starts it next. */
static inline void hb_bc_ready(bthread *t, bconn *c);

struct bthread {
    hb_bench *b;
    pthread_t thread;
    int started;
    int ep;
    int tick_fd; /* the epoll loop's periodic timerfd */
    bconn *conns;
    bexch *exchanges; /* every connection's xs, in one allocation */
    int nconns;
    int first_conn; /* the index of conns[0] over all threads */
    int inflight;
    int blocking;      /* one connection, closed loop: wait in recv, not epoll */
    int naps;          /* closed loop, its carrier's naps: may nap before it waits (bench_loop.c) */
    int64_t answer_ns; /* the answers' time, start to end (a moving mean; 0: none yet) */
    int64_t nap_late;  /* how far past its asking a nap ends (a moving mean) */
    int64_t wait_ns;   /* how long its waits in epoll last (a moving mean) */
    int sending;       /* connections with a request body still going out (as its
                        * carrier counts them): while any is, no nap (bench_loop.c) */
    bconn **ready;     /* connections between requests, to start again */
    int nready;
    /* Its connections' wake-ups, earliest first (a binary heap, room for
     * every connection): pacing's (a rate's slot, a shape's turn) and the
     * socket's retries; of them, pacing's. */
    bconn **wakes;
    int nwakes;
    int paced_wakes;
    int64_t stall_from; /* rate: the thread's last stretch late to act (hb_bp_late) */
    int64_t stall_to;
    int64_t stall_len; /* how late the thread was seen to be in it (its catch-up's bound) */
    int draining;      /* connections in BC_DRAIN (hb_bs_drain) */
    int unread;        /* connections marked unread (hb_bs_read) */
    void *carried;     /* its carrier's own (thread_setup) */
    char *scratch;
    hb_bench_result *res; /* one per request of the run, indexed as b->reqs */
    hb_scen_rng rng;      /* picks by weight, random variants */
    hb_second *timeline;  /* the thread's seconds, all requests together */
    int nseconds, tl_cap;
    double cpu_user, cpu_sys;
    uint64_t complete, failed; /* over every request */
    uint64_t live_issued, live_complete, live_failed;
    /* cfg.publish: res[] as of the last second boundary (hb_br_publish),
     * under pub_mu (pub_mu_ok once initialised). */
    hb_bench_result *pub;
    uint64_t pub_gen; /* publications so far, under pub_mu */
    pthread_mutex_t pub_mu;
    int pub_mu_ok;
    hb_rlog_ring *log; /* the per-request log's ring, while the measured part runs */
    int index;         /* in b->threads */
    /* The measured part: the share of it the thread was busy (on a CPU or
     * waiting for one), and under a rate or a shape the requests its
     * schedule made due before the run's end (due_known: the end is one
     * the schedule ran into, a duration's or a stop's). */
    double busy;
    uint64_t due;
    int due_known;
    /* The part that carried load, as the tick marks it (hb_bl_note_load):
     * its first tick after the thread's first send and its last tick after
     * an answer, each with its busy time then (hb_bl_sched_times; 0: none
     * yet). The connects
     * before the first request and the tail after the last answer, idle
     * or not, are no part of it: over 1,000 connections they held a
     * starved loop's busy at 0.92 though it was runnable 99% of its
     * middle. */
    int64_t load_wall0, load_busy0, load_wall1, load_busy1;
    uint64_t load_seen; /* answers and failures as of the last tick */
};

static inline void hb_bc_ready(bthread *t, bconn *c)
{
    if (!c->in_ready) {
        c->in_ready = 1;
        t->ready[t->nready++] = c;
    }
}

struct hb_bench {
    hb_bench_config cfg;
    int nthreads;
    bthread *threads;
    uint64_t tickets;
    int64_t start, end; /* end: the duration's end, or 0 */
    int64_t timeout_ns; /* per request */
    int64_t grace_ns;   /* after a stop or the duration's end (hb_bench_config.grace) */
    int64_t tick_ns;    /* the deadline check's period: TICK_NS, or a quarter of a
                         * shorter timeout (1 ms at least), so it is not missed */
    int addr_good;      /* the address that last connected */
    int stopping;       /* atomic: set once when the run is asked to stop, after stop_at */
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
    int head_claimed; /* the run's first final response has begun (hb_br_claim_head) */
    hb_sock_info tls; /* the first handshake's, once tls_set */
    int tls_set;
    int opened;                /* atomic: a connection has opened (hb_bench_opened) */
    const hb_carrier *carrier; /* what its connections carry */
    void *carried;             /* its carrier's own for the run (prepare) */
    int paced;                 /* starts at intended instants: a rate or a shape */
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
     * threads done warming up, and whether the go has come (bench.h). Under
     * mu; `warming` is also read by the threads, set before they start
     * and cleared under mu while they all wait. */
    int warming;
    int nprepared;
    int go;
    uint64_t warm_tickets;
    int64_t warm_end; /* a warmup by time: its end */
    int paced_measured;
    hb_shape *vus_measured;
    hb_rlog *log; /* the per-request log, or NULL; closed by the last thread out */
    uint64_t log_written, log_dropped;
    int log_error;
};

/* The calling thread's time on a CPU and runnable waiting for one so far,
 * ns (the kernel's schedstat: sum_exec_runtime and run_delay), so that its
 * time busy is known without a clock read per request. Where the file is
 * missing the CPU time alone serves (waiting 0). */
void hb_bl_sched_times(int64_t *on_cpu, int64_t *waiting);

/* s seconds (s >= 0, range-checked) in nanoseconds, rounded: cut, a
 * duration of 0.3 s ended a nanosecond early, and the rate's last slot
 * (hb_bp_rate_due, rounded the same way) could fall on either side. */
static inline int64_t secs_ns(double s)
{
    return (int64_t)(s * 1e9 + 0.5);
}

/* Whether the run was asked to stop (stop_at is set by then). */
static inline int stopped(hb_bench *b)
{
    return __atomic_load_n(&b->stopping, __ATOMIC_ACQUIRE);
}

/* Whether now is past the grace what is in flight gets after a stop or the
 * duration's end: the tick then cancels it, and so does a read that comes
 * between ticks, its bytes not counted (the carriers' reads), as if the
 * tick had come at the grace's end to the instant, as h2load stops at -D's
 * end: an answer that came after was not done. */
static inline int past_grace(hb_bench *b, int64_t now)
{
    return (stopped(b) && now >= b->stop_at) || (b->end && now - b->end >= b->grace_ns);
}

/* The end of the run as the schedule ran into it: the duration's, or the
 * instant a stop came (before it); 0 for a run that ended when its
 * requests were spent (every one due was then issued). */
static inline int64_t schedule_end(const hb_bench *b)
{
    int64_t stop = stopped((hb_bench *)b) ? b->stop_at - b->grace_ns : 0;
    if (b->end && (!stop || b->end <= stop))
        return b->end;
    return stop;
}

/* A failure class: the offset of its counter in hb_bench_result, so one
 * class names the same counter in whichever request's figures an
 * exchange records into. */
#define HB_FAIL(field) offsetof(hb_bench_result, field)

/* ---- bench_result.c: what a thread records, and the merge of threads */

/* Copies t's figures to t->pub for hb_bench_snapshot (cfg.publish). */
void hb_br_publish(bthread *t);

/* The second `now` falls in, of t's timeline, grown into when need be;
 * NULL when memory ran out (the timeline then stops, nothing else does).
 * A second that begins is when t publishes (cfg.publish): an outcome asks
 * for its second before it counts anything. */
hb_second *hb_br_second(bthread *t, int64_t now);
/* Exchange ex failed at now, in class cls (HB_FAIL). */
void hb_br_failed(bthread *t, bexch *ex, size_t cls, int64_t now);
/* As hb_br_failed, for an exchange c carries: counted unopened too while
 * c's socket was still opening (its connect, a proxy's tunnel, its TLS
 * handshake), so never sent on it (h2load's requests never started). */
void hb_br_failed_on(bthread *t, const bconn *c, bexch *ex, size_t cls, int64_t now);
/* Exchange ex's response arrived at now: its latency and its parts
 * recorded (hb_br_done does it; a response that failed a check or its
 * length has a latency too, as ab's and Locust's do). */
void hb_br_timed(bexch *ex, int64_t now);
/* The first byte of exchange ex's response came at now, on c: its time
 * to first byte, and c's from its connect's start when it is the first
 * since (h2load's "time to 1st byte", one a connection). */
void hb_br_first_byte(bconn *c, bexch *ex, int64_t now);
/* Exchange ex completed at now: counted (non_2xx unless ok2xx; a keep-alive
 * request when kept) and timed. */
void hb_br_done(bthread *t, bexch *ex, int64_t now, int ok2xx, int kept);

/* Exchange ex was in flight when the grace after a stop or the duration
 * ended: cancelled, which is no failure. */
void hb_br_cancelled(bthread *t, bexch *ex, int64_t now);

/* The log's outcome names after complete into out (room for
 * HB_BR_MAX_OUTCOMES): the failure classes, then "cancelled". Returns how
 * many. */
#define HB_BR_MAX_OUTCOMES 16
int hb_br_outcome_names(const char **out);
/* Whether a final response's head beginning now is the run's first (its
 * raw bytes, len of them, kept for ab -v 2 where the protocol has them;
 * NULL: none): 1 once for the run, 0 after. */
int hb_br_claim_head(hb_bench *b, const char *raw, size_t len);
/* The run's first final response's Server field. */
void hb_br_note_server(hb_bench *b, const char *value, size_t len);
/* A server's SETTINGS heard: its SETTINGS_MAX_CONCURRENT_STREAMS when it
 * set one (limited), the lowest kept in r. */
void hb_br_note_streams(hb_bench_result *r, int limited, uint32_t allowed);
/* The first handshake's agreement, once for the run. */
void hb_br_note_tls(hb_bench *b, bconn *c);
/* r zeroed, its histograms empty. */
void hb_br_init(hb_bench_result *r);
/* r's figures added into out. */
void hb_br_add(hb_bench_result *out, const hb_bench_result *r);
/* A warmup forgotten: every figure of t back to nothing. */
void hb_br_forget(bthread *t);

/* ---- bench_pace.c: what each connection sends, and when */

/* A ticket for one more request at now (a warmup's, or the run's); 0 when
 * none is left or the run is ending. */
int hb_bp_ticket(hb_bench *b, int64_t now);
/* hb_bp_ticket for connection c's next request, which a paced run also
 * gives in the grace after its end to a request that fell due before the
 * end while c was free (the thread woke late: it is sent late, and
 * counted late, rather than left unsent as if its connection had been
 * busy). */
int hb_bp_ticket_for(bthread *t, const bconn *c, int64_t now);
/* Under a rate or a shape: whether c was busy (no room for its next
 * request) when that request fell due at c->next_at: its last exchange
 * ended after that, and the thread was not itself late then (a stall it
 * catches up on after: an answer it read late may have come in time). */
int hb_bp_busy_when_due(const bthread *t, const bconn *c);
/* The thread could not act from `from` until now: it woke late from a
 * wait, or sent a request due then on a free connection only now; a
 * stall when that is STALL_NS or more, else nothing. */
void hb_bp_late(bthread *t, int64_t from, int64_t now);
/* Under a rate or a shape: c's request due at c->next_at goes out now.
 * Returns whether it was late for its busy connection (hb_bp_busy_when_due);
 * else, if late, the thread was: a stall (hb_bp_late), grown by a send
 * due inside it on a connection whose last exchange ended after that (the
 * stall's catch-up: an answer read late) only while that send is late by
 * no more than the stall itself and STALL_NS. A send later than that
 * waited for its busy connection and leaves the stall as it is. */
int hb_bp_sent_late(bthread *t, const bconn *c, int64_t now);
/* How many tickets hb_bp_ticket could still give now (UINT64_MAX: no
 * count bounds them; a relaxed look: another thread may take them
 * first). */
uint64_t hb_bp_tickets_left(const hb_bench *b, int64_t now);
/* Under a rate: when slot c's n-th request is due, from the run's start
 * and the slot's index alone (exact to the nanosecond: no drift, so the
 * requests due before an end are exactly rate x its length). */
int64_t hb_bp_rate_due(const hb_bench *b, const bconn *c, uint64_t n);
/* Under a shape: when slot c's n-th request is due, INT64_MAX when never. */
int64_t hb_bp_shape_due(const hb_bench *b, const bconn *c, uint64_t n);
/* Under a shape of connections: now when slot c may run, else when it may
 * next (INT64_MAX: never again). */
int64_t hb_bp_vus_next(const hb_bench *b, const bconn *c, int64_t now);
/* When lane c (a connection over HTTP/1.1, its stream slots over HTTP/2)
 * may issue a request, the one rule every carrier asks: now (or before)
 * when it may, and it takes a ticket (hb_bp_ticket_for); else its wake-up
 * (hb_bp_wake_at): a rate's slot or a shape's turn, with *off set when the
 * shape of connections has c off (its socket closes once idle). At the
 * run's end (a stop, the duration's) it may at once: no ticket is left
 * then but one owed. */
int64_t hb_bp_lane_at(const bthread *t, const bconn *c, int64_t now, int *off);

/* The wake-ups: what c waits for (pacing's, or the socket's retry). */
enum { HB_WAKE_PACE, HB_WAKE_RETRY };
/* c to be woken at `at` for `kind`: put in t's heap, or moved in it. */
void hb_bp_wake_at(bthread *t, bconn *c, int64_t at, int kind);
/* c's wake-up, if any, taken out. */
void hb_bp_wake_cancel(bthread *t, bconn *c);
/* The earliest wake-up due by now, taken out of the heap; NULL if none. */
bconn *hb_bp_wake_due(bthread *t, int64_t now);
/* The earliest wake-up still to come, INT64_MAX if none. */
int64_t hb_bp_wake_next(const bthread *t);
/* Every pacing wake-up later than now brought to now (the run's end:
 * they take no ticket then, or one owed). */
void hb_bp_wake_paced_now(bthread *t, int64_t now);

/* c took its request: its next intended start, under a rate (every
 * concurrency/rate seconds, hb_bp_rate_due) or a shape (its next due
 * instant); unchanged in a closed loop. */
void hb_bp_advance(bthread *t, bconn *c);
/* Which request c sends next in exchange x, and which of its variants
 * (scen.h): by weight; by sequence the lane's next step (x->step); in
 * turns c's next (h2load's URIs). */
void hb_bp_choose(bthread *t, bconn *c, bexch *x);
/* Every connection of t ready, each with its first intended start. */
void hb_bp_schedule(bthread *t);
/* Under a rate or a shape: the requests t's connections were due to start
 * before `end` by their schedules (0 in a closed loop). */
uint64_t hb_bp_due_before(const bthread *t, int64_t end);

/* How long a closed loop over HTTP/2 naps before it waits for answers
 * (bench_loop.c's NAP): at most NAP_SHARE of the answers' time answer_ns,
 * capped at NAP_MAX_NS, less late_ns (how far past its asking a nap ends);
 * 0 (no nap) when that leaves less than NAP_MIN_NS. An answer that comes
 * in a nap waits in the socket, so the nap and its lateness together stay
 * within the share. */
#define NAP_SHARE 100
#define NAP_MAX_NS 100000
#define NAP_MIN_NS 2000
int64_t hb_bp_nap_ns(int64_t answer_ns, int64_t late_ns);
/* The answers' moving mean (about the last 16) after one that took took_ns. */
int64_t hb_bp_answer_mean(int64_t mean_ns, int64_t took_ns);

/* ---- bench_exch.c: an exchange's start and judgement, whatever carries it */

/* Exchange x of c takes the ticket just taken at now (n of them: a
 * pipeline's batch, all timed from x's start): its request picked, the n
 * counted issued and in flight, its clock and outcome reset. */
void hb_bx_issue(bthread *t, bconn *c, bexch *x, int n, int64_t now);
/* The n exchanges of c from x on are over at now (an outcome: complete or
 * failed; not one cancelled, which ends no request's time): out of flight,
 * c free from now, an outcome the run's last so far, and each lane's
 * journey at its next step (order by sequence: its next request is chosen
 * after its last one ended, never beside it). */
void hb_bx_end(bthread *t, bconn *c, bexch *x, int n, int64_t now, int outcome);

/* ---- an exchange's events: what every carrier calls as a response comes,
 * in order: its head, its fields (the head's, then a trailer's), its body
 * data, then hb_bx_done or a failure. */

/* x's final response head began, its status (HTTP's, or 0 where the
 * protocol has none); raw: its bytes where the protocol has them (kept
 * from the run's first response for ab -v 2), else NULL. */
void hb_bx_head(bthread *t, bexch *x, int status, const char *raw, size_t raw_len);
/* One field of x's response (trailer: after its body). */
void hb_bx_field(bthread *t, bexch *x, const char *name, size_t nlen, const char *value,
                 size_t vlen, int trailer);
/* A piece of x's response body (expect_body's search runs over it). */
void hb_bx_data(bexch *x, const char *p, size_t n);
/* x's response on c is whole at now with `got` body bytes: c served it,
 * it is judged and recorded (hb_bx_judge) and over (hb_bx_end). */
void hb_bx_done(bthread *t, bconn *c, bexch *x, uint64_t got, int64_t now, int kept);
/* x's response is whole at now with `got` body bytes: counted in its
 * status and judged (its length against the run's or the request's, its
 * deadline, a scenario's checks, its verdict: 2xx or no HTTP status, and
 * no application status but 0), then recorded done (kept: a keep-alive
 * request) or failed. */
void hb_bx_judge(bthread *t, bexch *x, uint64_t got, int64_t now, int kept);

/* ---- bench_sock.c: a connection's socket, whatever it carries */

/* Closes c's socket (taking it out of the epoll set; what its carrier held
 * of it goes too); the next request opens another. Safe on a half-built c. */
void hb_bs_close(bconn *c);
/* A new socket for c (connects counted, in its first exchange's figures);
 * once open, its carrier's `opened`; failed, its carrier's `fail`. */
void hb_bs_begin_connect(bthread *t, bconn *c, int64_t now);
/* The same, its connect made (and counted) `wait` ns from now: BC_RETRY
 * meanwhile, the exchanges under their deadlines. */
void hb_bs_connect_later(bthread *t, bconn *c, int64_t now, int64_t wait);
/* Waits (epoll) for events on c's socket. */
void hb_bs_watch(bthread *t, bconn *c, unsigned events);
/* Waits (epoll) for what c's transport said its last call wanted. */
void hb_bs_watch_wants(bthread *t, bconn *c);
/* c's wake-up came (hb_bp_wake_due): in BC_RETRY it connects again, else
 * its carrier starts it. */
void hb_bs_wake(bthread *t, bconn *c, int64_t now);
/* A connection still opening (BC_CONNECTING to BC_RETRY) whose oldest
 * exchange began at `oldest`: failed (timeout) past the request's
 * deadline, a retry given up (connect) past RETRY_FOR_NS. */
void hb_bs_tick_opening(bthread *t, bconn *c, int64_t now, int64_t oldest);
/* c leaves BC_RETRY's wait when it is in it (an abandon closes it). */
void hb_bs_leave_retry(bthread *t, bconn *c);
/* Reads c's socket for its carrier (its input) until the socket is empty
 * (HB_RD_EMPTY: wait for it), the carrier has enough or READS_PER_WAKE
 * reads are done (HB_RD_ENOUGH; the loop comes back for what the transport
 * still holds), or c left its reading (HB_RD_LEFT: its
 * carrier failed it, closed it, or cancelled it past the grace; the bytes
 * of a read then are not counted). A lone connection's read blocks, and
 * the clock is read after it. */
enum { HB_RD_EMPTY, HB_RD_ENOUGH, HB_RD_LEFT };
int hb_bs_read(bthread *t, bconn *c, int64_t now);
/* Writes what c's carrier has to send (its output) until it has nothing
 * (HB_WR_DONE) or the socket is full (HB_WR_FULL: wait for it writable),
 * or c failed (HB_WR_LEFT: its carrier told). */
enum { HB_WR_DONE, HB_WR_FULL, HB_WR_LEFT };
int hb_bs_write(bthread *t, bconn *c, int64_t now);
/* One try, without waiting, at writing what c's carrier has to send (a
 * last word before a close: a GOAWAY); what did not go, and any failure,
 * is let be. */
void hb_bs_write_once(bthread *t, bconn *c);
/* The server said it closes after the response c just finished: c waits
 * in BC_DRAIN for its FIN (a tick at most), so the server closes first and
 * TIME_WAIT stays on its side, not on the client's ephemeral ports; then
 * the socket closes and c is ready. */
void hb_bs_drain(bthread *t, bconn *c, int64_t now);
/* Every tick, for every connection: a drain's wait bounded, else its
 * carrier's tick (deadlines; abandon: past a stop's grace). */
void hb_bs_tick(bthread *t, bconn *c, int64_t now, int abandon);

/* ---- bench_loop.c: the loops that drive a thread's connections */

/* Runs t's connections until its tickets are spent and nothing is in
 * flight: in recv for a lone connection, else in epoll. */
void hb_bl_run(bthread *t);

#endif
