/* bench.h: hb_bench_*, the timing loop: many keep-alive connections over a
 * few threads, every request timed with CLOCK_MONOTONIC, every outcome
 * counted in its class.
 *
 * Each thread runs an epoll loop over its share of the connections (as wrk
 * does); a thread with a single connection in closed loop waits in a
 * blocking read instead, which saves epoll_wait on every request. Requests
 * are written from one prebuilt buffer; responses are framed with the
 * parser and their bodies counted, never kept. Nothing is allocated per
 * request.
 *
 * Accounting is exact, by one rule for every way a run ends (docs/design.md):
 *
 *     issued == complete + failed + cancelled
 *
 * A request is issued when it takes a ticket (with a count, exactly that
 * many tickets exist) and ends complete, failed (in one class: connect,
 * tls, receive, length, exceptions, timeout) or cancelled. When the run is
 * stopped (hb_bench_stop, on Ctrl-C) or its duration ends, requests in
 * flight get a grace to finish (a second unless the config says); those
 * still in flight after it are cancelled: counted apart, not as failures.
 */
#ifndef HB_BENCH_H
#define HB_BENCH_H

#include "bench_result.h"
#include "hist.h"
#include "net.h"
#include "rlog.h"
#include "scen.h"
#include "shape.h"

#include <stdint.h>

/* Addresses a run may try, in getaddrinfo's order. */
#define HB_BENCH_MAX_ADDRS 8

/* Limits on the configuration; the caller checks, the loop relies on them. */
#define HB_BENCH_MAX_THREADS 1024
#define HB_BENCH_MAX_CONCURRENCY 1000000
#define HB_BENCH_MAX_SECONDS (365.0 * 86400) /* durations and timeouts: a year */
#define HB_BENCH_MAX_PIPELINE 1024
#define HB_BENCH_MAX_REQUESTS 1000000000000LL /* in a run, and in a warmup: a trillion */
#define HB_BENCH_MAX_RATE 1e9                 /* requests a second */
#define HB_BENCH_MAX_STREAMS 10000            /* HTTP/2 streams per connection (h2.h's) */
#define HB_BENCH_MAX_WINDOW 2147483647        /* HTTP/2 window, bytes (RFC 9113 section 6.9.1) */
#define HB_BENCH_MAX_SOCKET_BUFFER (1 << 30)  /* SO_SNDBUF/SO_RCVBUF (the kernel doubles it) */
/* What requests in flight get after a stop or a duration's end before
 * they are cancelled, unless hb_bench_config.grace says otherwise; the
 * Python agents keep the same. */
#define HB_BENCH_GRACE_NS 1000000000LL

/* What a run's connections carry (hb_bench_config.protocol): a carrier
 * each (bench_int.h). The glue's http2 flag sets HB_PROTO_HTTP2 (1). */
enum { HB_PROTO_HTTP1 = 0, HB_PROTO_HTTP2 = 1, HB_PROTO_COUNT };

/* The most requests a scenario holds: each costs a result per thread
 * (sizeof(hb_bench_result), about 230 KB, for its histograms). */
#define HB_BENCH_MAX_SCENARIO 256

/* One request of a scenario: the bytes of each of its variants (built
 * before the run, outliving it) and the checks on its responses. */
typedef struct {
    const char *const *variants; /* nvariants whole requests, bodies included */
    const size_t *lens;
    uint32_t nvariants;               /* 1 or more */
    int random;                       /* variants drawn from the thread's generator;
                                     * 0: cycled by a counter the threads share */
    int head;                         /* HEAD: responses have no body */
    double weight;                    /* above 0 (order by weight) */
    const unsigned char *status_ok;   /* 600 flags, the statuses a response may have,
                                     * others failing as "check"; NULL: any */
    const unsigned char *expect_body; /* bytes the body must hold, else "check" */
    uint32_t expect_body_len;         /* 0: no such check */
    int64_t expect_length;            /* the body's length, else "length"; -1: none */
} hb_bench_req;

typedef struct {
    hb_addr addrs[HB_BENCH_MAX_ADDRS]; /* where to connect: each in turn until one does,
                                        * which then serves the rest of the run */
    int naddrs;                        /* 1..HB_BENCH_MAX_ADDRS */
    const hb_transport *transport;     /* the way to the server; NULL: plain TCP */
    void *transport_shared;            /* its settings (TLS: an hb_tls), outliving the run */
    const char *request;               /* the whole request, body included */
    size_t request_len;
    int head;                 /* the request is HEAD: responses have no body */
    uint64_t requests;        /* tickets; 0: as many as the duration allows */
    double duration;          /* seconds, at most HB_BENCH_MAX_SECONDS; 0: none */
    int concurrency, threads; /* 1..HB_BENCH_MAX_CONCURRENCY, 1..HB_BENCH_MAX_THREADS */
    int keepalive;            /* reuse connections */
    double rate;              /* requests per second overall; 0: closed loop; else
                              * concurrency / rate is at most HB_BENCH_MAX_SECONDS */
    double timeout;           /* seconds per request, connect included; positive, at
                              * most HB_BENCH_MAX_SECONDS */
    double grace;             /* seconds requests in flight get after a stop or the
                               * duration's end, 0..HB_BENCH_MAX_SECONDS (0: cancelled
                               * at the loop's next look, within 50 ms: wrk's and
                               * h2load's stop) */
    int lengths_vary;         /* no "length" failures */
    int pipeline;             /* requests in flight per connection, written together and
                               * answered in order: 1..HB_BENCH_MAX_PIPELINE (0: 1); more
                               * than 1 only in closed loop (rate 0) */
    int idempotent;           /* the method may be sent again: a pipeline the server
                               * cut short is resent once on a new socket, else failed */
    const char *tunnel;       /* a CONNECT request to send on each new socket before
                               * the transport's handshake (a forward proxy), or NULL */
    size_t tunnel_len;
    const hb_shape *shape;        /* a load shape (shape.h), or NULL: starts follow it, from
                               * their intended instants, as under a rate (which must then
                               * be 0, with no pipeline); copied */
    const hb_shape *vus;          /* a shape of connections (k6's ramping VUs), or NULL:
                               * connection i runs while the shape is at i + 1 or
                               * above, closed loop; concurrency is its peak; copied */
    const hb_bench_req *scenario; /* nscenario requests to pick from (request, head and
                                   * lengths_vary are then unused), or NULL; copied, the
                                   * bytes they point to outliving the run; only with
                                   * pipeline 1 */
    int nscenario;                /* 0..HB_BENCH_MAX_SCENARIO */
    int sequence;                 /* each lane (a connection; over HTTP/2 a stream slot)
                                   * walks the requests in order, its next chosen when
                                   * its last ended; 0: picks by weight */
    int turns;                    /* with sequence: each connection's requests in turn
                                   * as it sends them, its lanes sharing the turns
                                   * (h2load's URIs) */
    uint64_t seed;                /* the picks' generator: (seed, thread index) */
    int prepared;                 /* a prepared start: the threads run a warmup on the
                                   * run's own connections (closed loop, counted
                                   * nowhere), then wait for hb_bench_go */
    uint64_t warmup_requests;     /* the warmup's requests; 0 with no warmup_seconds:
                                   * one per connection, so every one is open */
    double warmup_seconds;        /* or its length, at most HB_BENCH_MAX_SECONDS */
    int protocol;                 /* HB_PROTO_*: what each connection carries (HTTP/2: h2
                                   * by ALPN over TLS, the transport offering it, else h2c
                                   * by prior knowledge; pipeline must be 1) */
    int streams;                  /* HTTP/2: the most streams in flight on a connection,
                                   * 1..HB_BENCH_MAX_STREAMS (0: 1), lowered by the server's
                                   * SETTINGS_MAX_CONCURRENT_STREAMS */
    uint64_t window;              /* HTTP/2: the client's windows, bytes
                                   * (1..HB_BENCH_MAX_WINDOW; 0: wide open) */
    int socket_buffer;            /* each socket's SO_SNDBUF and SO_RCVBUF, bytes, set before
                                   * connecting (1..HB_BENCH_MAX_SOCKET_BUFFER; 0: the
                                   * kernel's autotuning) */
    int publish;                  /* each thread publishes its figures as each second of the
                                   * timeline begins, and at its end, for hb_bench_snapshot */
    const hb_rlog_config *log;    /* the per-request log (rlog.h; nrings is set here, and
                                   * the fd is the run's from a successful start), or NULL */
} hb_bench_config;

/* Whether cfg meets hb_bench_start's preconditions: each number in its
 * range (the HB_BENCH_MAX_* above: requests and warmup_requests to
 * MAX_REQUESTS, duration, warmup_seconds and rate from 0, timeout above 0,
 * concurrency and threads from 1, pipeline and streams from 0 (taken as
 * 1), window from 0 (wide open); NaN is out of every range), and how the
 * settings combine (a rate or a shape with no pipeline, a shape with no
 * rate, a shape of connections closed loop, a scenario with no pipeline, a
 * rate not so low that a connection would wait more than
 * HB_BENCH_MAX_SECONDS between starts). Returns 0, or -1 with the first
 * fault in err. The loop's one contract check: users' settings are
 * checked first by their declarations, by the users' names
 * (httpbench/spec.py); the glue only converts types, and this guards the
 * loop whoever calls (the glue, the fuzz drivers). */
int hb_bench_check(const hb_bench_config *cfg, char *err, size_t errlen);

/* Starts the threads. Returns NULL with errno on failure, having freed
 * whatever it had set up. cfg is copied; the request bytes must outlive
 * the run. */
hb_bench *hb_bench_start(const hb_bench_config *cfg);

/* Live figures for a progress line (relaxed reads): of the measured part
 * only, 0 during a prepared start's warmup. */
void hb_bench_progress(hb_bench *b, uint64_t *issued, uint64_t *complete, uint64_t *failed);

/* Whether a connection has opened yet (its warmup's too), as a drop-in
 * mode prints it when it happens (h2load's "Application protocol" line):
 * 1 with *tls the first TLS handshake's figures (empty over plain TCP),
 * else 0 and *tls untouched. */
int hb_bench_opened(hb_bench *b, hb_sock_info *tls);

/* A prepared start: 1 once every thread has finished its warmup and waits
 * for hb_bench_go (or the run has ended: stopped during the warmup). */
int hb_bench_prepared(hb_bench *b);

/* A prepared start: the measured part begins at start_realtime_ns
 * (CLOCK_REALTIME, so machines agree on it; a past instant is now). The
 * run's clock is still CLOCK_MONOTONIC: the instant is turned into it
 * once, here. Any call but the first is ignored. */
void hb_bench_go(hb_bench *b, int64_t start_realtime_ns);

/* Asks the run to end early: no new tickets, the config's grace, then
 * what is still in flight is cancelled. */
void hb_bench_stop(hb_bench *b);

/* Waits up to timeout_ns for the run to end. Returns 1 when it has. */
int hb_bench_wait(hb_bench *b, int64_t timeout_ns);

/* The per-request log's end, once the run has ended (hb_bench_wait): the
 * records written and dropped, and 0 or the errno of the write that
 * failed. Zeros without a log. */
int hb_bench_log_status(hb_bench *b, uint64_t *written, uint64_t *dropped);

/* Stops if need be, joins the threads and frees b. */
void hb_bench_free(hb_bench *b);

#endif
