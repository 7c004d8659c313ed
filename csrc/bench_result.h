/* bench_result.h: what a run of the timing loop (bench.h) measured, and how
 * it is read: the counters, the histograms and the timeline of
 * hb_bench_result; the threads' results merged once the run has ended
 * (hb_bench_collect), and live while it lasts (hb_bench_snapshot).
 * bench_result.c defines these; bench.h runs the loop that fills them.
 */
#ifndef HB_BENCH_RESULT_H
#define HB_BENCH_RESULT_H

#include "hist.h"
#include "net.h"

#include <stdint.h>

/* Bytes of the first response's head a run keeps (for ab's -v 2). */
#define HB_FIRST_HEAD 8192

/* RST_STREAM codes counted apart (RFC 9113 section 7 defines 0..13);
 * a code above lands in the last. */
#define HB_BENCH_RESET_CODES 15

/* Per second of the run: outcomes (non_2xx: complete responses not 2xx, a
 * part of complete) and a coarse latency histogram (hist.h's timeline
 * buckets), enough for a timeline of req/s, p50 and p99; the fine
 * histograms below hold the run's real percentiles. */
typedef struct {
    uint32_t complete, failed, non_2xx;
    uint32_t buckets[HB_TL_BUCKETS];
} hb_second;

/* A second's p50 and p99 latency (ns, the upper bound of the timeline
 * bucket holding each rank; 0 when nothing completed in it). */
void hb_bench_second_percentiles(const hb_second *sec, uint64_t *p50, uint64_t *p99);

/* The run's counters, each as X(field, name): its field in hb_bench_result
 * and the name httpbench.Result gives it. The struct's fields, the merge of
 * the threads' results (bench_result.c) and the dict Bench.result() returns
 * (csrc/py_bench.c) all follow this one list: adding a counter is a line
 * here and its increments (CONTRIBUTING.md). A name that Result has no
 * field for lands in Result.counts. */
#define HB_BENCH_COUNTS(X)                                                                         \
    X(issued, "issued")                                                                            \
    X(complete, "complete")                                                                        \
    X(failed, "failed")                                                                            \
    X(cancelled, "cancelled") /* in flight when the grace after a stop or the duration ended */    \
    X(fail_connect, "connect")                                                                     \
    X(fail_receive, "receive")                                                                     \
    X(fail_length, "length")                                                                       \
    X(fail_exceptions, "exceptions")                                                               \
    X(fail_timeout, "timeout")                                                                     \
    X(fail_tls, "tls")     /* a handshake, or a record, the transport refused */                   \
    X(fail_check, "check") /* a scenario's expect_status or expect_body unmet */                   \
    X(tls_full, "tls_full_handshakes")                                                             \
    X(tls_resumed, "tls_resumed_handshakes")                                                       \
    X(non_2xx, "non_2xx")                                                                          \
    X(bytes_received, "bytes_received")                                                            \
    X(body_bytes, "body_bytes")                                                                    \
    X(bytes_sent, "bytes_sent")                                                                    \
    X(keepalive_requests, "keepalive_requests")                                                    \
    X(connects, "connects")                                                                        \
    X(reconnects, "reconnects")                                                                    \
    X(closing, "closing_responses") /* final heads that ended keep-alive (close, HTTP/1.0) */      \
    X(fail_reset, "reset")          /* HTTP/2: a stream the server reset (RST_STREAM) */           \
    X(refused, "refused")           /* HTTP/2: streams refused (REFUSED_STREAM), sent again */     \
    X(retries, "retries")     /* sent again on a new socket: unprocessed by a GOAWAY, or stale */  \
    X(late_busy, "late_busy") /* paced: started past its due instant, its connection still busy */ \
    X(header_bytes_wire, "header_bytes_wire")       /* HTTP/2: HEADERS payloads received */        \
    X(header_bytes_decoded, "header_bytes_decoded") /* and the fields they decoded to */           \
    X(unopened, "unopened") /* of failed: their socket still opening (hb_br_failed_on) */          \
    X(tls_failed, "tls_failed_handshakes") /* refused (their requests: the tls class) */

#define HB_BENCH_COUNT_FIELD(field, name) uint64_t field;

typedef struct {
    HB_BENCH_COUNTS(HB_BENCH_COUNT_FIELD)
    uint64_t status[600];           /* responses by status code */
    int64_t document_length;        /* body length of the first 2xx response; -1 if none */
    char server[128];               /* its Server field */
    char first_head[HB_FIRST_HEAD]; /* its head, cut at HB_FIRST_HEAD - 1 bytes */
    hb_sock_info tls;               /* what the first handshake agreed on (empty: none) */
    double elapsed;                 /* seconds from start to the last outcome */
    double cpu_user, cpu_sys;       /* the loop threads' CPU time, seconds */
    /* HTTP/2: the server's SETTINGS_MAX_CONCURRENT_STREAMS (the lowest
     * any connection heard, once streams_limited; streams_heard: some
     * SETTINGS came, and without a limit in any, the server set none),
     * the most streams one connection had in flight, and RST_STREAMs by
     * error code. */
    uint32_t streams_allowed;
    uint32_t streams_max_used;
    int streams_heard;
    int streams_limited;
    uint64_t reset_codes[HB_BENCH_RESET_CODES];
    /* Each connection's req/s over the run (h2load's min, max, mean,
     * standard deviation, and the percentage within one deviation of the
     * mean); the whole run's figures only. */
    double conn_rps_min, conn_rps_max, conn_rps_mean, conn_rps_sd, conn_rps_within;
    /* The client's own figures, the whole run's only: the share of its
     * time each loop thread was busy (on a CPU, or runnable and waiting
     * for one: anything but waiting for the network), their mean and the
     * busiest's; under a rate or a shape, the requests the schedule made
     * due before the run's end that were never sent (unsent). */
    double busy_mean, busy_max;
    uint64_t unsent;
    hb_hist total;         /* latency: from the intended start under a rate */
    hb_hist uncorrected;   /* latency from the actual send */
    hb_hist connect;       /* connect time per request, a handshake included
                                     * (0 when reused) */
    hb_hist waiting;       /* send (its connect over) to first response byte: ab's Waiting */
    hb_hist processing;    /* total less connect, as ab's Processing row */
    hb_hist tls_handshake; /* each handshake's time (inside connect's) */
    hb_hist first_byte;    /* each connect's start to its first response byte */
    hb_hist conn_connect;  /* each connect's start to its connection made (a
                            * tunnel and handshake included): h2load's */
    hb_hist late;          /* paced: each request's start less its intended start */
    char error[160];       /* the first exception's text, for the report */
    hb_second *timeline;   /* seconds[0..nseconds), malloc'ed; NULL if none */
    int nseconds;
} hb_bench_result;

/* Frees what hb_bench_collect allocated in r (the timeline). */
void hb_bench_result_free(hb_bench_result *r);

/* A run of the loop (bench.h starts and stops it; bench_int.h holds it). */
typedef struct hb_bench hb_bench;

/* After hb_bench_wait returned 1: the threads' results merged into out
 * (which is large: allocate it). */
void hb_bench_collect(hb_bench *b, hb_bench_result *out);

/* After hb_bench_wait returned 1: the figures of a scenario's request i
 * alone (the whole run's are their exact sum; the timeline and the CPU
 * time are the whole run's only). */
void hb_bench_collect_request(hb_bench *b, int i, hb_bench_result *out);

/* While the run lasts (cfg.publish set): the figures each thread last
 * published, merged into out (initialised here), of request i of a
 * scenario or of every request (i < 0). As of each thread's latest second
 * boundary, so up to a second old; exact once the run has ended. No
 * timeline, CPU time or per-connection rates. Nothing is published, and
 * out stays empty, without cfg.publish. Takes each thread's publication
 * lock in turn: never held by the loop for more than a copy. */
void hb_bench_snapshot(hb_bench *b, int i, hb_bench_result *out);

/* How many times the threads have published so far (cfg.publish): a
 * snapshot of several parts (hb_bench_snapshot of each request) is of one
 * moment when this is the same before and after it. */
uint64_t hb_bench_publications(hb_bench *b);

#endif
