/* The per-request log (hb_rlog_*): one record per request's outcome,
 * written by each loop thread into a ring of its own and drained by one
 * writer thread into a file, as CSV (a header row first) or JSON lines.
 *
 * The loop never waits for the log: a record that finds its ring full is
 * dropped and counted, never the run slowed. A ring has one writer (its
 * loop thread) and one reader (the log's thread): head and tail are the
 * only shared words, each written by one side (release) and read by the
 * other (acquire), as in a classic single-producer ring. */
#ifndef HB_RLOG_H
#define HB_RLOG_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A record's outcome: complete, a failure class (1 + its index in the
 * caller's names), or cancelled (the last name). */
#define HB_RLOG_COMPLETE 0

enum { HB_RLOG_CSV = 0, HB_RLOG_JSONL = 1 };

/* One request's outcome. Times in ns from the run's start. */
typedef struct {
    int64_t intended; /* when it was due */
    int64_t start;    /* when it was sent (its intended start when it never was) */
    int64_t latency;  /* from intended to its outcome (as the run's latency) */
    int64_t connect;  /* of its time, its connection's connect (0: it went on an open one) */
    int64_t first;    /* its response's first byte (HTTP/2: its head), from the run's start;
                       * -1: none came */
    uint64_t tx, rx;  /* bytes: the request's, and its response's (HTTP/2: DATA) */
    uint32_t conn;    /* the connection, over all threads */
    int32_t stream;   /* HTTP/2: its stream id; 0 over HTTP/1.1 */
    uint16_t status;  /* 0: no response */
    uint16_t name;    /* the scenario's request, by index */
    uint16_t thread;
    uint8_t outcome; /* HB_RLOG_COMPLETE, 1 + a failure class, or ncls + 1: cancelled */
} hb_rlog_rec;

typedef struct {
    hb_rlog_rec *recs;
    uint32_t mask;      /* capacity - 1, a power of two */
    uint64_t head;      /* written by the loop thread only */
    uint64_t tail;      /* written by the log's thread only */
    uint64_t tail_seen; /* the loop thread's last read of tail */
    uint64_t dropped;   /* atomic: full when a record came */
    uint64_t rng;       /* sampling: xorshift64 state */
    uint64_t keep;      /* a record is kept when rng's next < keep (UINT64_MAX: all) */
} hb_rlog_ring;

typedef struct {
    int fd;                   /* the file, opened by the caller; closed by hb_rlog_close */
    int format;               /* HB_RLOG_CSV or HB_RLOG_JSONL */
    int nrings;               /* one per loop thread */
    uint32_t ring_records;    /* each ring's capacity (a power of two is used, at least) */
    const char *const *names; /* each request's name, escaped for the format */
    int nnames;
    const char *const *outcomes; /* each outcome's name but complete's, escaped: the failure
                                  * classes in order, then "cancelled" */
    int noutcomes;
    double sample;    /* the fraction of records kept, (0, 1] */
    uint64_t seed;    /* of the sampling */
    int64_t delay_ns; /* tests: the writer sleeps this long before each pass (0: none) */
} hb_rlog_config;

typedef struct hb_rlog hb_rlog;

/* The log of cfg, its writer thread started; NULL with errno on failure
 * (the fd is then the caller's still). The strings are copied. */
hb_rlog *hb_rlog_open(const hb_rlog_config *cfg);

/* Ring i (0 <= i < nrings), for its loop thread alone. */
hb_rlog_ring *hb_rlog_ring_at(hb_rlog *l, int i);

/* Records rec, or counts it dropped when the ring is full; a record
 * sampled out is neither. Never blocks. */
static inline void hb_rlog_put(hb_rlog_ring *r, const hb_rlog_rec *rec)
{
    if (r->keep != UINT64_MAX) {
        uint64_t x = r->rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r->rng = x;
        if (x >= r->keep)
            return;
    }
    uint64_t head = r->head;
    if (head - r->tail_seen > r->mask) {
        r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
        if (head - r->tail_seen > r->mask) {
            __atomic_fetch_add(&r->dropped, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    r->recs[head & r->mask] = *rec;
    __atomic_store_n(&r->head, head + 1, __ATOMIC_RELEASE);
}

/* Stops the writer once every ring is drained, flushes and closes the
 * file. *written and *dropped: the records in the file and those lost (a
 * full ring, or a write that failed). Returns 0, or the errno of the first
 * write that failed (what came after it was dropped). Once only. */
int hb_rlog_close(hb_rlog *l, uint64_t *written, uint64_t *dropped);

/* Frees l (closing it first if hb_rlog_close was not called). NULL: nothing. */
void hb_rlog_free(hb_rlog *l);

#endif
