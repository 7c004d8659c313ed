/* h2srv.c: the embedded server's HTTP/2 session on libnghttp2 (h2srv.h). */
#include "h2srv.h"

#include "h2mem.h"
#include "h2ver.h"
#include "head.h"
#include "parser.h"
#include "route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SECOND_NS 1000000000LL
/* nghttp2's own flood refusals, where it has them (NGHTTP2_ERR_FLOODED;
 * NGHTTP2_ERR_TOO_MANY_CONTINUATIONS, 1.61 and Debian's 1.52 backport):
 * by number, so a library without them builds too. They end a session as
 * our own counts do. */
#define H2S_ERR_FLOODED (-904)
#define H2S_ERR_TOO_MANY_CONTINUATIONS (-905)
/* Frame types RFC 9113 defines (section 6): a type above is an extension
 * nghttp2 ignores unseen (section 5.5), so it is counted here. */
#define H2S_LAST_KNOWN_TYPE NGHTTP2_CONTINUATION

typedef struct h2s_stream {
    int32_t id;
    hb_plan plan;
    char method[16];
    size_t mlen;
    char *path; /* malloc'ed, pcap bytes, kept while the record is spare */
    size_t pcap;
    size_t plen;
    int pathed; /* the :path came (the first one counts) */
    char ctype[256];
    uint32_t list_size, fields;
    int status;      /* an error found while reading the request (431, 414, 413, 503) */
    const char *why; /* and its text */
    int routed;      /* the plan is made (the head is whole) */
    int whole;       /* the request is whole, or answered before it was */
    int ended;       /* the client's END_STREAM came */
    int answered;    /* the response is submitted, or its delay runs */
    int sending;     /* its response is submitted and its last frame not yet sent */
    int64_t since;   /* while not whole: its first frame, or its body's last bytes */
    hb_buf body;     /* a request body kept (/echo) */
    uint64_t body_got;
    uint64_t reserved; /* of the server's body budget */
    uint64_t sent;     /* response body bytes given to nghttp2 */
    uint64_t frame_at; /* where the DATA frame read_body left to send_data begins */
    int64_t due;       /* a /delay's end, while it runs; 0: none */
    struct h2s_stream *prev, *next;
} h2s_stream;

struct hb_h2s {
    nghttp2_session *s;
    hb_h2mem mem; /* the session's blocks (freed after it) */
    hb_srv_shared *sh;
    int64_t now;
    h2s_stream *streams; /* every stream's record (the session frees its own
                          * streams without a word when deleted) */
    h2s_stream *spare;   /* records of closed streams, for the next (through next) */
    int nspare;
    int delays;         /* of which waiting out a /delay */
    int awaiting;       /* of which whose request is not whole */
    int sending;        /* of which whose response is not all sent */
    int64_t data_at;    /* the last DATA given to send, or response submitted */
    int64_t idle_since; /* when the last stream closed (or the session began) */
    hb_buf *out;        /* while hb_h2s_output runs: where send_data writes, */
    size_t out_limit;   /* and the size past which it waits */
    /* Floods, counted over the current second. */
    int64_t window;
    unsigned rst, ping, settings, empty_data, priority, unknown, acks;
    unsigned window_updates, data_sent; /* (updates_flooded) */
    uint32_t block_bytes, continuations;
    int calm; /* a flood: the session ends with ENHANCE_YOUR_CALM */
    /* The input's frames, walked (acks_filtered says why): the preface's
     * bytes still to come, a frame header split across reads, the
     * current frame's payload still to come, and whether a header block
     * is open (a HEADERS without END_HEADERS: only its CONTINUATION may
     * come next, RFC 9113 section 6.10). */
    size_t preface_left;
    uint8_t stash[9];
    size_t nstash;
    uint32_t payload_left;
    int in_block;
};

#define H2S_COUNT(h, field) __atomic_add_fetch(&(h)->sh->field, 1, __ATOMIC_RELAXED)

/* Records of closed streams a session keeps for its next ones, so that a
 * stream allocates nothing (HTTP/1.1's path allocates nothing per
 * request either); a burst above it is freed as it closes. */
#define H2S_SPARE 128
/* A spare record's body buffer keeps at most this much. */
#define H2S_SPARE_BODY 65536

static void stream_destroy(h2s_stream *st)
{
    hb_buf_free(&st->body);
    free(st->path);
    free(st);
}

/* A record for a new stream: a spare one emptied (its buffers kept), else
 * a new one. NULL when out of memory. */
static h2s_stream *stream_new(hb_h2s *h)
{
    h2s_stream *st = h->spare;
    if (st == NULL)
        return calloc(1, sizeof *st);
    h->spare = st->next;
    h->nspare--;
    char *path = st->path;
    size_t pcap = st->pcap;
    hb_buf body = st->body;
    memset(st, 0, sizeof *st);
    st->path = path;
    st->pcap = pcap;
    st->body = body;
    return st;
}

static void stream_free(hb_h2s *h, h2s_stream *st)
{
    if (st->prev != NULL)
        st->prev->next = st->next;
    else
        h->streams = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    h->awaiting -= !st->whole;
    h->delays -= st->due != 0;
    h->sending -= st->sending;
    h->idle_since = h->now;
    if (st->plan.file_fd >= 0)
        close(st->plan.file_fd);
    hb_srv_release(h->sh, &st->reserved);
    if (h->nspare >= H2S_SPARE) {
        stream_destroy(st);
        return;
    }
    hb_buf_clear(&st->body);
    hb_buf_shrink(&st->body, H2S_SPARE_BODY);
    st->next = h->spare;
    h->spare = st;
    h->nspare++;
}

/* ---- responses */

/* Copies n bytes of st's body from offset off to dst, from a source in
 * memory: /rnd's block (and /chunked's), a text, an echoed body. */
static void copy_body(const hb_h2s *h, const h2s_stream *st, uint64_t off, uint8_t *dst, size_t n)
{
    const hb_plan *p = &st->plan;
    switch (p->src) {
    case HB_SRC_RND:
    case HB_SRC_CHUNKED:
        for (size_t done = 0; done < n;) {
            size_t at = (size_t)((off + done) % HB_RND_BLOCK);
            size_t k = HB_RND_BLOCK - at < n - done ? HB_RND_BLOCK - at : n - done;
            memcpy(dst + done, h->sh->rnd + at, k);
            done += k;
        }
        break;
    case HB_SRC_TEXT: memcpy(dst, p->text + off, n); break;
    case HB_SRC_ECHO: memcpy(dst, hb_buf_rdptr(&st->body) + off, n); break;
    default: break;
    }
}

/* A DATA frame's length. A body in memory is not copied here but by
 * send_data, straight into the output (NGHTTP2_DATA_FLAG_NO_COPY): once,
 * where nghttp2's own frame buffer took a copy and the output another
 * (2 KiB twice a response at /rnd?c=2048). A file's is read here. */
static hb_h2_ssize read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
                             uint32_t *flags, nghttp2_data_source *src, void *arg)
{
    (void)s;
    (void)id;
    hb_h2s *h = arg;
    h2s_stream *st = src->ptr;
    const hb_plan *p = &st->plan;
    uint64_t total = p->src == HB_SRC_ECHO ? hb_buf_size(&st->body) : p->length;
    uint64_t left = total - st->sent;
    size_t n = left < len ? (size_t)left : len;
    if (p->src == HB_SRC_FILE) {
        ssize_t r = pread(p->file_fd, buf, n, (off_t)st->sent);
        if (r <= 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the file shrank: reset */
        n = (size_t)r;
    } else if (n > 0) {
        st->frame_at = st->sent;
        *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    }
    st->sent += n;
    if (n > 0)
        h->data_at = h->now; /* progress: the client's window let it go */
    if (st->sent >= total)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (hb_h2_ssize)n;
}

/* The DATA frame read_body left: its header (and padding, were any asked
 * for) and len bytes of st's body from frame_at, appended to the output.
 * Past the output's limit it waits (nghttp2 calls again with the same
 * frame: hb_h2s_want_write stays true). */
static int send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *framehd, size_t len,
                     nghttp2_data_source *src, void *arg)
{
    (void)s;
    hb_h2s *h = arg;
    const h2s_stream *st = src->ptr;
    size_t pad = f->data.padlen; /* (RFC 9113 section 6.1: Pad Length, then as many zeros) */
    if (h->out == NULL || hb_buf_size(h->out) >= h->out_limit)
        return NGHTTP2_ERR_WOULDBLOCK;
    if (hb_buf_reserve(h->out, 9 + pad + len) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    uint8_t *w = (uint8_t *)hb_buf_wrptr(h->out), *start = w;
    memcpy(w, framehd, 9);
    w += 9;
    if (pad > 0)
        *w++ = (uint8_t)(pad - 1);
    copy_body(h, st, st->frame_at, w, len);
    w += len;
    if (pad > 1) {
        memset(w, 0, pad - 1);
        w += pad - 1;
    }
    hb_buf_commit(h->out, (size_t)(w - start));
    return 0;
}

static void nv(nghttp2_nv *v, const char *name, const char *value, size_t vlen)
{
    v->name = (uint8_t *)name;
    v->namelen = strlen(name);
    v->value = (uint8_t *)value;
    v->valuelen = vlen;
    v->flags = NGHTTP2_NV_FLAG_NONE; /* copied: the values are the stream's */
}

/* Submits st's response now. Returns 0, or -1 when memory ran out. Its
 * numbers are written as HTTP/1.1's head writes them (hb_head_u64):
 * snprintf's were 4.5% of the server's CPU under h2load at (10, 10). */
static int answer(hb_h2s *h, h2s_stream *st)
{
    hb_plan *p = &st->plan;
    char status[4], length[20];               /* (hb_head_u64's most) */
    hb_head_u64(status, (uint64_t)p->status); /* 100 to 999: three digits */
    uint64_t total = p->src == HB_SRC_ECHO ? hb_buf_size(&st->body) : p->length;
    int has_body =
        !p->head_only && p->status != 204 && p->status != 304 && total > 0 && p->src != HB_SRC_NONE;
    const char *server = h->sh->server_field + 8; /* "Server: " */
    size_t server_len = h->sh->server_field_len - 10;
    const char *ctype = p->src == HB_SRC_ECHO ? st->ctype : p->content_type;
    const char *date = hb_srv_http_date();
    nghttp2_nv hd[7];
    size_t n = 0;
    nv(&hd[n++], ":status", status, 3);
    nv(&hd[n++], "server", server, server_len);
    nv(&hd[n++], "date", date, HB_SRV_DATE_LEN);
    if (ctype != NULL && ctype[0] != 0)
        nv(&hd[n++], "content-type", ctype, strlen(ctype));
    if (p->allow != NULL)
        nv(&hd[n++], "allow", p->allow, strlen(p->allow));
    /* RFC 9110 sections 8.6 and 15.3.5: no length on 204 and 304; /chunked
     * streams DATA frames whose end alone says the length, as its
     * HTTP/1.1 answer is chunked. */
    if (p->status != 204 && p->status != 304 && p->src != HB_SRC_CHUNKED) {
        nv(&hd[n++], "content-length", length, (size_t)(hb_head_u64(length, total) - length));
    }
    hb_h2_provider body = {.source.ptr = st, .read_callback = read_body};
    st->answered = 1;
    st->sent = 0;
    if (!st->sending) {
        st->sending = 1;
        h->sending++;
        h->data_at = h->now;
    }
    H2S_COUNT(h, requests);
    if (p->status >= 400 && st->status != 0)
        H2S_COUNT(h, rejected);
    int rc = HB_H2_SUBMIT_RESPONSE(h->s, st->id, hd, n, has_body ? &body : NULL);
    return rc == NGHTTP2_ERR_NOMEM ? -1 : 0;
}

/* The request on st is whole (or an error was found reading it): its
 * answer goes now, or after its delay. */
static int respond(hb_h2s *h, h2s_stream *st)
{
    if (!st->whole) {
        st->whole = 1;
        h->awaiting--;
    }
    if (st->answered)
        return 0;
    if (st->status != 0) {
        hb_route_error(&st->plan, st->status, st->why);
        st->plan.head_only = 0;
        st->plan.allow = NULL;
    }
    if (st->plan.delay_ns > 0 && st->status == 0) {
        /* Its own stream waits; the connection's others go on. */
        st->due = hb_now_ns() + st->plan.delay_ns;
        st->answered = 1; /* (not to be answered twice) */
        h->delays++;
        return 0;
    }
    return answer(h, st);
}

/* Plans st's answer from its head (whole now). */
static void route(hb_h2s *h, h2s_stream *st)
{
    st->routed = 1;
    if (st->status != 0)
        return;
    /* nghttp2 has checked the pseudo-header fields (RFC 9113 section
     * 8.3.1): the one request without :path is CONNECT (section 8.5),
     * which names no resource here and so gets HTTP/1.1's answer, 405. */
    int connect = st->mlen == 7 && memcmp(st->method, "CONNECT", 7) == 0;
    if (st->mlen == 0 || (!st->pathed && !connect)) {
        st->status = 400;
        st->why = "the request lacks :method or :path\n";
        return;
    }
    hb_route(&h->sh->st, st->method, st->mlen, st->path != NULL ? st->path : "", st->plen,
             &st->plan);
    if (st->plan.src == HB_SRC_ECHO && st->ctype[0] == 0)
        snprintf(st->ctype, sizeof st->ctype, "application/octet-stream");
}

/* ---- what comes from the client */

/* The flood counts are of the current second: begun anew once it is over. */
static void flood_second(hb_h2s *h)
{
    if (h->now - h->window >= SECOND_NS) {
        h->window = h->now;
        h->rst = h->ping = h->settings = h->empty_data = h->priority = h->unknown = h->acks = 0;
        h->window_updates = h->data_sent = 0;
    }
}

static int calmed(hb_h2s *h)
{
    h->calm = 1;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
}

/* Too much of a kind within a second: the session ends, calmly. */
static int flooded(hb_h2s *h, unsigned *count)
{
    flood_second(h);
    return ++*count <= HB_H2S_FLOOD ? 0 : calmed(h);
}

/* WINDOW_UPDATEs that move no data: past HB_H2S_FLOOD in a second beyond
 * HB_H2S_UPDATES_PER_DATA for each DATA frame sent in it. 40 M of
 * WINDOW_UPDATE(0, +1) in 3 s held the server busy 2.4 s of them, an
 * honest client beside it at 791 req/s of 29,909; a client's updates for
 * the data it reads (its connection's and its stream's) stay well inside. */
static int updates_flooded(hb_h2s *h)
{
    flood_second(h);
    return ++h->window_updates <= HB_H2S_FLOOD + HB_H2S_UPDATES_PER_DATA * h->data_sent ? 0
                                                                                        : calmed(h);
}

static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *arg)
{
    (void)s;
    hb_h2s *h = arg;
    if (hd->type == NGHTTP2_HEADERS) {
        h->block_bytes = (uint32_t)hd->length;
        h->continuations = 0;
    } else if (hd->type == NGHTTP2_CONTINUATION) {
        h->block_bytes += (uint32_t)hd->length;
        h->continuations++;
    } else {
        return 0;
    }
    if (h->block_bytes > HB_MAX_HEAD || h->continuations > HB_H2_MAX_CONTINUATIONS) {
        h->calm = 1;
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    hb_h2s *h = arg;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2s_stream *st = stream_new(h);
    if (st == NULL)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->id = f->hd.stream_id;
    st->plan.file_fd = -1;
    st->since = h->now; /* the request's deadline runs from its first frame */
    if (nghttp2_session_set_stream_user_data(s, st->id, st) != 0) {
        stream_destroy(st);
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    st->next = h->streams;
    if (h->streams != NULL)
        h->streams->prev = st;
    h->streams = st;
    h->awaiting++;
    H2S_COUNT(h, h2_streams);
    return 0;
}

static void take_field(h2s_stream *st, const uint8_t *name, size_t nlen, const uint8_t *value,
                       size_t vlen)
{
    if (nlen == 7 && memcmp(name, ":method", 7) == 0 && vlen < sizeof st->method) {
        memcpy(st->method, value, vlen);
        st->mlen = vlen;
    } else if (nlen == 5 && memcmp(name, ":path", 5) == 0 && !st->pathed) {
        if (vlen > HB_MAX_LINE) {
            st->status = 414;
            st->why = "the path is longer than the server accepts\n";
            return;
        }
        if (vlen > st->pcap) {
            char *p = realloc(st->path, vlen);
            if (p == NULL) {
                st->status = 503;
                st->why = "out of memory\n";
                return;
            }
            st->path = p;
            st->pcap = vlen;
        }
        if (vlen > 0)
            memcpy(st->path, value, vlen);
        st->plen = vlen;
        st->pathed = 1;
    } else if (nlen == 12 && memcmp(name, "content-type", 12) == 0) {
        size_t n = vlen < sizeof st->ctype - 1 ? vlen : sizeof st->ctype - 1;
        memcpy(st->ctype, value, n);
        st->ctype[n] = 0;
    }
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
    (void)flags;
    (void)arg;
    h2s_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (st == NULL || st->routed)
        return 0; /* (trailers: not looked at) */
    /* RFC 9113 section 6.5.2's size, as RFC 7541 section 4.1 counts it: an
     * HPACK bomb decodes past it from a small block, and is answered 431
     * with nothing more of it kept. */
    st->list_size += (uint32_t)(nlen + vlen + 32);
    st->fields += nlen == 0 || name[0] != ':';
    if (st->list_size > HB_MAX_HEAD || st->fields > HB_MAX_HEADERS) {
        if (st->status == 0) {
            st->status = 431;
            st->why = "request header fields too large\n";
        }
        return 0;
    }
    if (st->status == 0)
        take_field(st, name, nlen, value, vlen);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *p, size_t n,
                   void *arg)
{
    (void)flags;
    hb_h2s *h = arg;
    h2s_stream *st = nghttp2_session_get_stream_user_data(s, id);
    if (st == NULL || st->answered)
        return 0;
    if (n > 0)
        st->since = h->now; /* a body's progress restarts its deadline, as HTTP/1.1's */
    st->body_got += n;
    if (st->body_got > h->sh->max_body) {
        /* Answered at once (RFC 9113 section 8.1: a response may come
         * before the request is whole); what else comes is dropped. */
        st->status = 413;
        st->why = "request body larger than the server accepts\n";
        return respond(h, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (st->status != 0 || !st->plan.keep_body)
        return 0;
    if (hb_srv_reserve(h->sh, &st->reserved, n) != 0) {
        st->status = 503;
        st->why = "the server holds as many request bodies as it may; try again later\n";
        return respond(h, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (hb_buf_append(&st->body, p, n) != 0) {
        st->status = 413;
        st->why = "request body larger than the server can hold\n";
        return respond(h, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    hb_h2s *h = arg;
    switch (f->hd.type) {
    case NGHTTP2_RST_STREAM: return flooded(h, &h->rst);
    case NGHTTP2_PING: return (f->hd.flags & NGHTTP2_FLAG_ACK) ? 0 : flooded(h, &h->ping);
    case NGHTTP2_SETTINGS: return (f->hd.flags & NGHTTP2_FLAG_ACK) ? 0 : flooded(h, &h->settings);
    case NGHTTP2_PRIORITY: return flooded(h, &h->priority);
    case NGHTTP2_WINDOW_UPDATE: return updates_flooded(h);
    case NGHTTP2_DATA:
        /* Empty by its data, padding aside (CVE-2019-9518: a PADDED frame
         * of pad length 0 carries one byte and no data). */
        if (f->hd.length - f->data.padlen == 0 && !(f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
            flooded(h, &h->empty_data) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        break;
    case NGHTTP2_HEADERS: break;
    default: return 0;
    }
    h2s_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (st == NULL)
        return 0;
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        st->ended = 1;
    if (f->hd.type == NGHTTP2_HEADERS && !st->routed)
        route(h, st);
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        return respond(h, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    if (f->hd.type == NGHTTP2_HEADERS && st->status != 0)
        return respond(h, st) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE; /* 431, 414: at once */
    return 0;
}

/* A response's last frame is out: if the request is not all in (an answer
 * before it, a 413), the client is asked to stop sending it with
 * RST_STREAM(NO_ERROR), as RFC 9113 section 8.1 lets a server, so the
 * stream ends and no more of its body comes. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    hb_h2s *h = arg;
    if (f->hd.type == NGHTTP2_DATA) {
        flood_second(h);
        h->data_sent++; /* (the WINDOW_UPDATEs it may bring: updates_flooded) */
    }
    if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
        !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    h2s_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (st == NULL)
        return 0;
    if (st->sending) {
        st->sending = 0;
        h->sending--;
    }
    if (!st->ended)
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *arg)
{
    (void)code;
    hb_h2s *h = arg;
    h2s_stream *st = nghttp2_session_get_stream_user_data(s, id);
    if (st != NULL)
        stream_free(h, st);
    return 0;
}

hb_h2s *hb_h2s_new(hb_srv_shared *sh)
{
    hb_h2s *h = calloc(1, sizeof *h);
    nghttp2_session_callbacks *cb = NULL;
    if (h == NULL || nghttp2_session_callbacks_new(&cb) != 0)
        goto fail;
    hb_h2mem_init(&h->mem);
    h->sh = sh;
    h->preface_left = 24;
    h->idle_since = hb_now_ns();
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_send_data_callback(cb, send_data);
    nghttp2_option *opt = NULL;
    int rc = nghttp2_option_new(&opt);
    if (rc == 0) {
        hb_h2_limit_continuations(opt);
        rc = nghttp2_session_server_new3(&h->s, cb, h, opt, hb_h2mem_nghttp2(&h->mem));
        nghttp2_option_del(opt);
    }
    nghttp2_session_callbacks_del(cb);
    if (rc != 0)
        goto fail;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, sh->h2_max_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HB_MAX_HEAD},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
    };
    if (nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0)
        goto fail;
    return h;
fail:
    hb_h2s_free(h);
    return NULL;
}

void hb_h2s_free(hb_h2s *h)
{
    if (h == NULL)
        return;
    /* Deleting the session frees its streams without their close
     * callbacks: ours go through the records still open. */
    if (h->s != NULL)
        nghttp2_session_del(h->s);
    while (h->streams != NULL)
        stream_free(h, h->streams);
    while (h->spare != NULL) {
        h2s_stream *st = h->spare;
        h->spare = st->next;
        stream_destroy(st);
    }
    hb_h2mem_release(&h->mem);
    free(h);
}

/* Gives n bytes to the session. Returns 0, or -1 when it refused them
 * (its own limits, a flood of ours). */
static int feed(hb_h2s *h, const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    hb_h2_ssize rc = HB_H2_MEM_RECV(h->s, p, n);
    if (rc == H2S_ERR_FLOODED || rc == H2S_ERR_TOO_MANY_CONTINUATIONS)
        h->calm = 1;
    return rc < 0 || h->calm ? -1 : 0;
}

/* A frame header (9 bytes, RFC 9113 section 4.1) as the walk below sees
 * it: whether it is the client's SETTINGS ACK, kept from nghttp2; frames
 * nghttp2 never reports (extension types, and the ACKs kept from it) are
 * counted as floods here. Returns 1 to drop the frame, 0 to pass it on,
 * -1 for a flood. */
static int walk_frame(hb_h2s *h, const uint8_t *hd)
{
    uint8_t type = hd[3], flags = hd[4];
    uint32_t sid = ((uint32_t)hd[5] << 24 | (uint32_t)hd[6] << 16 | (uint32_t)hd[7] << 8 | hd[8]) &
                   0x7fffffffu;
    /* A header block is open from a HEADERS (or PUSH_PROMISE) without
     * END_HEADERS until the CONTINUATION with it: nothing else may come
     * between (section 6.10), and nghttp2 must see what does. */
    int in_block = h->in_block;
    if (type == NGHTTP2_HEADERS || type == NGHTTP2_PUSH_PROMISE || type == NGHTTP2_CONTINUATION)
        h->in_block = !(flags & NGHTTP2_FLAG_END_HEADERS);
    else
        h->in_block = 0;
    if (type > H2S_LAST_KNOWN_TYPE)
        return flooded(h, &h->unknown) != 0 ? -1 : 0;
    /* An ACK only on stream 0, empty, outside a header block (sections
     * 6.5 and 4.3): any other goes to nghttp2, which calls it the
     * connection error it is. */
    if (type != NGHTTP2_SETTINGS || !(flags & NGHTTP2_FLAG_ACK) || h->payload_left != 0 ||
        sid != 0 || in_block)
        return 0;
    return flooded(h, &h->acks) != 0 ? -1 : 1;
}

/* The input goes to nghttp2 less the client's SETTINGS ACKs. Why: once
 * our SETTINGS are acknowledged, nghttp2 takes a stream beyond
 * SETTINGS_MAX_CONCURRENT_STREAMS for a connection error (a GOAWAY ending
 * every stream); unacknowledged, it refuses that stream alone with
 * RST_STREAM REFUSED_STREAM, which RFC 9113 section 5.1.2 asks for (and
 * a client sends the stream again, section 8.7). Our SETTINGS carry
 * nothing else nghttp2 applies on their ACK. */
static int acks_filtered(hb_h2s *h, const uint8_t *p, size_t n)
{
    const uint8_t *run = p; /* bytes walked but not yet fed */
    while (n > 0) {
        size_t k;
        if (h->preface_left > 0 || h->payload_left > 0) {
            size_t left = h->preface_left > 0 ? h->preface_left : h->payload_left;
            k = n < left ? n : left;
            if (h->preface_left > 0)
                h->preface_left -= k;
            else
                h->payload_left -= (uint32_t)k;
            p += k;
            n -= k;
            continue;
        }
        /* A frame header: held back until whole. */
        if (feed(h, run, (size_t)(p - run)) != 0)
            return -1;
        k = 9 - h->nstash < n ? 9 - h->nstash : n;
        memcpy(h->stash + h->nstash, p, k);
        h->nstash += k;
        p += k;
        n -= k;
        run = p;
        if (h->nstash < 9)
            break;
        h->nstash = 0;
        h->payload_left = (uint32_t)h->stash[0] << 16 | (uint32_t)h->stash[1] << 8 | h->stash[2];
        int drop = walk_frame(h, h->stash);
        if (drop < 0 || (!drop && feed(h, h->stash, 9) != 0))
            return -1;
    }
    return feed(h, run, (size_t)(p - run));
}

int hb_h2s_input(hb_h2s *h, const char *p, size_t n, int64_t now)
{
    h->now = now;
    int rc = acks_filtered(h, (const uint8_t *)p, n);
    if (h->calm) {
        /* A flood: the GOAWAY says so, and nothing more is read. */
        H2S_COUNT(h, h2_calmed);
        nghttp2_session_terminate_session(h->s, NGHTTP2_ENHANCE_YOUR_CALM);
        return -1;
    }
    if (rc != 0) {
        /* nghttp2's own refusals (its flood limits, a bad preface): it
         * has queued its GOAWAY, if any. */
        nghttp2_session_terminate_session(h->s, NGHTTP2_PROTOCOL_ERROR);
        return -1;
    }
    return nghttp2_session_want_read(h->s) ? 0 : -1;
}

int hb_h2s_output(hb_h2s *h, hb_buf *out, size_t budget, int64_t now)
{
    h->now = now;
    if (h->delays > 0) {
        for (h2s_stream *st = h->streams; st != NULL; st = st->next) {
            if (st->due == 0 || st->due > now)
                continue;
            st->due = 0;
            h->delays--;
            st->plan.delay_ns = 0;
            if (answer(h, st) != 0)
                return -1;
        }
    }
    size_t start = hb_buf_size(out);
    int rc = 0;
    h->out = out;
    h->out_limit = start + budget;
    while (hb_buf_size(out) - start < budget) {
        const uint8_t *p;
        hb_h2_ssize n = HB_H2_MEM_SEND(h->s, &p);
        if (n < 0 || (n > 0 && hb_buf_append(out, p, (size_t)n) != 0)) {
            rc = -1;
            break;
        }
        if (n == 0)
            break;
    }
    h->out = NULL;
    return rc;
}

int hb_h2s_want_write(const hb_h2s *h)
{
    return nghttp2_session_want_write(h->s);
}

int64_t hb_h2s_wake(const hb_h2s *h)
{
    int64_t at = 0;
    if (h->delays == 0)
        return 0;
    for (const h2s_stream *st = h->streams; st != NULL; st = st->next)
        if (st->due != 0 && (at == 0 || st->due < at))
            at = st->due;
    return at;
}

void hb_h2s_waits(const hb_h2s *h, hb_h2s_wait *w)
{
    w->request = w->window = w->idle = 0;
    if (h->awaiting > 0)
        for (const h2s_stream *st = h->streams; st != NULL; st = st->next)
            if (!st->whole && (w->request == 0 || st->since < w->request))
                w->request = st->since;
    if (h->sending > 0)
        w->window = h->data_at;
    /* No stream open, or none that waits on the client or a /delay (a
     * stream a client leaves half open): idle, whatever frames come. */
    if (w->request == 0 && w->window == 0 && h->delays == 0)
        w->idle = h->idle_since;
}

int hb_h2s_done(const hb_h2s *h)
{
    return !nghttp2_session_want_read(h->s) && !nghttp2_session_want_write(h->s);
}
