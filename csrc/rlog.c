/* The per-request log's rings and its writer thread (rlog.h). The writer
 * formats records with integer arithmetic of its own (no printf per
 * field: at 250,000 records a second the log's CPU counts against the
 * run's) into a buffer written out in large writes. */
#include "rlog.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OUT_SIZE (1 << 20)  /* the writer's buffer: written when nearly full */
#define LINE_MAX_BYTES 1024 /* a record's line at most (names are capped below) */
#define LINE_MIN_BYTES 32   /* and at least (a CSV line of empty fields is longer) */
#define MAX_LINES (OUT_SIZE / LINE_MIN_BYTES)
#define NAME_MAX_BYTES 600 /* an escaped name's bytes kept at most */
#define IDLE_NS 2000000    /* the writer's nap when every ring is empty */

struct hb_rlog {
    hb_rlog_config cfg;
    hb_rlog_ring *rings;
    char **names, **outcomes;
    size_t *name_lens, *outcome_lens;
    char *out;
    size_t out_len;
    /* Where each line in out ends, so a write that stops part way (a full
     * disk) leaves the file at the last whole record: ends[0..lines). */
    uint32_t *ends;
    uint32_t lines;
    off_t file_len; /* the file's whole lines so far */
    int begun;      /* the first line is in out: the file was emptied for it */
    pthread_t thread;
    int started, closed;
    int stop; /* atomic: set by hb_rlog_close */
    uint64_t written, lost;
    int error;
};

/* The decimal digits of v at p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

/* ns as seconds with nine decimals (negative clamped to 0). */
static char *put_seconds(char *p, int64_t ns)
{
    uint64_t v = ns > 0 ? (uint64_t)ns : 0;
    p = put_u64(p, v / 1000000000u);
    *p++ = '.';
    uint64_t frac = v % 1000000000u;
    for (uint64_t d = 100000000u; d > 0; d /= 10)
        *p++ = (char)('0' + frac / d % 10);
    return p;
}

static char *put_bytes(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define PUT_LIT(p, s) put_bytes((p), (s), sizeof(s) - 1)

static char *csv_line(hb_rlog *l, char *p, const hb_rlog_rec *r)
{
    p = put_seconds(p, r->intended);
    *p++ = ',';
    p = put_seconds(p, r->start);
    *p++ = ',';
    p = put_seconds(p, r->latency);
    *p++ = ',';
    if (r->status != 0)
        p = put_u64(p, r->status);
    *p++ = ',';
    p = put_u64(p, r->tx);
    *p++ = ',';
    p = put_u64(p, r->rx);
    *p++ = ',';
    if (r->outcome != HB_RLOG_COMPLETE && r->outcome <= l->cfg.noutcomes)
        p = put_bytes(p, l->outcomes[r->outcome - 1], l->outcome_lens[r->outcome - 1]);
    *p++ = ',';
    if (r->name < l->cfg.nnames)
        p = put_bytes(p, l->names[r->name], l->name_lens[r->name]);
    *p++ = ',';
    p = put_u64(p, r->conn);
    *p++ = ',';
    p = put_u64(p, r->thread);
    *p++ = ',';
    if (r->stream > 0)
        p = put_u64(p, (uint64_t)r->stream);
    *p++ = ',';
    p = put_seconds(p, r->connect);
    *p++ = ',';
    if (r->first >= 0)
        p = put_seconds(p, r->first);
    *p++ = '\n';
    return p;
}

static char *json_line(hb_rlog *l, char *p, const hb_rlog_rec *r)
{
    p = PUT_LIT(p, "{\"intended_start\":");
    p = put_seconds(p, r->intended);
    p = PUT_LIT(p, ",\"start\":");
    p = put_seconds(p, r->start);
    p = PUT_LIT(p, ",\"latency\":");
    p = put_seconds(p, r->latency);
    p = PUT_LIT(p, ",\"status\":");
    p = r->status != 0 ? put_u64(p, r->status) : PUT_LIT(p, "null");
    p = PUT_LIT(p, ",\"bytes_sent\":");
    p = put_u64(p, r->tx);
    p = PUT_LIT(p, ",\"bytes_received\":");
    p = put_u64(p, r->rx);
    p = PUT_LIT(p, ",\"failure\":\"");
    if (r->outcome != HB_RLOG_COMPLETE && r->outcome <= l->cfg.noutcomes)
        p = put_bytes(p, l->outcomes[r->outcome - 1], l->outcome_lens[r->outcome - 1]);
    p = PUT_LIT(p, "\",\"name\":\"");
    if (r->name < l->cfg.nnames)
        p = put_bytes(p, l->names[r->name], l->name_lens[r->name]);
    p = PUT_LIT(p, "\",\"connection\":");
    p = put_u64(p, r->conn);
    p = PUT_LIT(p, ",\"thread\":");
    p = put_u64(p, r->thread);
    p = PUT_LIT(p, ",\"stream\":");
    p = r->stream > 0 ? put_u64(p, (uint64_t)r->stream) : PUT_LIT(p, "null");
    p = PUT_LIT(p, ",\"connect\":");
    p = put_seconds(p, r->connect);
    p = PUT_LIT(p, ",\"first_byte\":");
    p = r->first >= 0 ? put_seconds(p, r->first) : PUT_LIT(p, "null");
    p = PUT_LIT(p, "}\n");
    return p;
}

/* A write that stopped part way (a full disk, a file size limit: a short
 * write, then ENOSPC or EFBIG) leaves the file at the end of the last
 * whole line it holds, so every record in it reads back; the lines cut
 * off and those after are lost, and counted so. */
static void cut_to_whole_lines(hb_rlog *l, size_t off, uint64_t *records)
{
    uint32_t whole = 0;
    while (whole < l->lines && l->ends[whole] <= off)
        whole++;
    off_t keep = l->file_len + (whole > 0 ? (off_t)l->ends[whole - 1] : 0);
    struct stat st;
    if (fstat(l->cfg.fd, &st) == 0 && S_ISREG(st.st_mode))
        (void)ftruncate(l->cfg.fd, keep); /* (shrinking needs no room) */
    /* The header is a line but no record: it is the first of the first
     * buffer of a CSV, and counted among the records only if whole. */
    uint32_t header = l->file_len == 0 && l->cfg.format == HB_RLOG_CSV && l->lines > 0;
    uint64_t kept = whole > header ? whole - header : 0;
    l->written += kept;
    l->lost += *records - kept;
    *records = 0;
}

/* Writes the buffer's `records` lines out; after a failure, drops what it
 * holds (counted lost). */
static void flush_out(hb_rlog *l, uint64_t records)
{
    size_t off = 0;
    while (l->error == 0 && off < l->out_len) {
        ssize_t n = write(l->cfg.fd, l->out + off, l->out_len - off);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && errno != EINTR) {
            l->error = errno;
            cut_to_whole_lines(l, off, &records);
        }
    }
    l->written += l->error == 0 ? records : 0;
    l->lost += l->error != 0 ? records : 0;
    l->file_len += (off_t)off;
    l->out_len = 0;
    l->lines = 0;
}

static const char CSV_HEADER[] = "intended_start,start,latency,status,bytes_sent,"
                                 "bytes_received,failure,name,connection,thread,stream,connect,"
                                 "first_byte\n";

/* The file is emptied (it may have held another run's log) when its first
 * line is written, not before: a run that writes nothing leaves it as it
 * was. A character device (/dev/null) has nothing to empty. */
static void begin_file(hb_rlog *l)
{
    l->begun = 1;
    struct stat st;
    if (fstat(l->cfg.fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(l->cfg.fd, 0) != 0)
        l->error = errno;
    if (l->cfg.format == HB_RLOG_CSV) {
        memcpy(l->out, CSV_HEADER, sizeof CSV_HEADER - 1);
        l->out_len = sizeof CSV_HEADER - 1;
        l->ends[l->lines++] = (uint32_t)l->out_len;
    }
}

/* Drains every ring once; returns the records taken. */
static uint64_t drain(hb_rlog *l, uint64_t *pending)
{
    uint64_t took = 0;
    for (int i = 0; i < l->cfg.nrings; i++) {
        hb_rlog_ring *r = &l->rings[i];
        uint64_t tail = r->tail, head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        while (tail != head) {
            if (l->out_len + LINE_MAX_BYTES > OUT_SIZE || l->lines + 1 >= MAX_LINES) {
                flush_out(l, *pending);
                *pending = 0;
            }
            if (!l->begun)
                begin_file(l);
            const hb_rlog_rec *rec = &r->recs[tail & r->mask];
            char *p = l->out + l->out_len;
            char *end = l->cfg.format == HB_RLOG_JSONL ? json_line(l, p, rec) : csv_line(l, p, rec);
            l->out_len += (size_t)(end - p);
            l->ends[l->lines++] = (uint32_t)l->out_len;
            (*pending)++;
            tail++;
            took++;
            /* Room back for the loop thread as it goes, not at the end. */
            if ((tail & 255) == 0)
                __atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
    }
    return took;
}

static void nap(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *writer_main(void *arg)
{
    hb_rlog *l = arg;
    uint64_t pending = 0;
    for (;;) {
        /* A writer slow on purpose (tests): it sleeps before each pass,
         * the first too, so the rings alone bound what it takes while the
         * run lasts; in slices, so a close is not kept waiting. */
        for (int64_t slept = 0;
             slept < l->cfg.delay_ns && !__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE);
             slept += 1000000)
            nap(1000000);
        int stopping = __atomic_load_n(&l->stop, __ATOMIC_ACQUIRE);
        uint64_t took = drain(l, &pending);
        if (stopping && took == 0)
            break; /* the loop threads had ended before: nothing more comes */
        if (took == 0) {
            if (pending > 0) {
                flush_out(l, pending);
                pending = 0;
            }
            nap(IDLE_NS);
        }
    }
    flush_out(l, pending);
    return NULL;
}

/* s copied, capped at NAME_MAX_BYTES. */
static char *copy_capped(const char *s, size_t *len)
{
    size_t n = strlen(s);
    if (n > NAME_MAX_BYTES)
        n = NAME_MAX_BYTES;
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    *len = n;
    return p;
}

static int copy_all(const char *const *src, int n, char ***out, size_t **lens)
{
    *out = calloc((size_t)(n > 0 ? n : 1), sizeof **out);
    *lens = calloc((size_t)(n > 0 ? n : 1), sizeof **lens);
    if (*out == NULL || *lens == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        if (((*out)[i] = copy_capped(src[i], &(*lens)[i])) == NULL)
            return -1;
    return 0;
}

static void free_all(char **v, int n)
{
    for (int i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

hb_rlog *hb_rlog_open(const hb_rlog_config *cfg)
{
    if (cfg->nrings < 1 || cfg->nnames > 65535 || !(cfg->sample > 0 && cfg->sample <= 1)) {
        errno = EINVAL;
        return NULL;
    }
    hb_rlog *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->cfg = *cfg;
    uint32_t cap = 1024;
    while (cap < cfg->ring_records && cap < (1u << 24))
        cap <<= 1;
    l->rings = calloc((size_t)cfg->nrings, sizeof *l->rings);
    l->out = malloc(OUT_SIZE);
    l->ends = malloc(MAX_LINES * sizeof *l->ends);
    if (l->rings == NULL || l->out == NULL || l->ends == NULL ||
        copy_all(cfg->names, cfg->nnames, &l->names, &l->name_lens) != 0 ||
        copy_all(cfg->outcomes, cfg->noutcomes, &l->outcomes, &l->outcome_lens) != 0)
        goto error;
    for (int i = 0; i < cfg->nrings; i++) {
        hb_rlog_ring *r = &l->rings[i];
        r->recs = malloc((size_t)cap * sizeof *r->recs);
        if (r->recs == NULL)
            goto error;
        r->mask = cap - 1;
        /* xorshift64 needs a state other than 0: splitmix of seed and i. */
        uint64_t z = cfg->seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        r->rng = (z ^ (z >> 31)) | 1;
        r->keep = cfg->sample >= 1 ? UINT64_MAX : (uint64_t)(cfg->sample * 18446744073709551615.0);
    }
    l->cfg.names = NULL; /* copied: the caller's may go */
    l->cfg.outcomes = NULL;
    /* Signals stay the process's main thread's (Python's handlers). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&l->thread, NULL, writer_main, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        goto error;
    }
    l->started = 1;
    return l;
error : {
    int saved = errno;
    l->closed = 1; /* the fd stays the caller's */
    hb_rlog_free(l);
    errno = saved;
    return NULL;
}
}

hb_rlog_ring *hb_rlog_ring_at(hb_rlog *l, int i)
{
    return &l->rings[i];
}

int hb_rlog_close(hb_rlog *l, uint64_t *written, uint64_t *dropped)
{
    if (!l->closed) {
        l->closed = 1;
        __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
        if (l->started)
            pthread_join(l->thread, NULL);
        l->started = 0;
        if (close(l->cfg.fd) != 0 && l->error == 0 && errno != EINTR)
            l->error = errno;
    }
    uint64_t lost = l->lost;
    for (int i = 0; i < l->cfg.nrings; i++)
        lost += __atomic_load_n(&l->rings[i].dropped, __ATOMIC_RELAXED);
    *written = l->written;
    *dropped = lost;
    return l->error;
}

void hb_rlog_free(hb_rlog *l)
{
    if (l == NULL)
        return;
    if (!l->closed) {
        uint64_t w, d;
        hb_rlog_close(l, &w, &d);
    }
    for (int i = 0; l->rings != NULL && i < l->cfg.nrings; i++)
        free(l->rings[i].recs);
    free(l->rings);
    free_all(l->names, l->cfg.nnames);
    free_all(l->outcomes, l->cfg.noutcomes);
    free(l->name_lens);
    free(l->outcome_lens);
    free(l->out);
    free(l->ends);
    free(l);
}
