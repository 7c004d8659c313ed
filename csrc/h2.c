/* h2.c: the client's HTTP/2 session on libnghttp2 (h2.h). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "h2.h"

#include "h2mem.h"
#include "h2msg.h"
#include "h2ver.h"
#include "parser.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- requests */

/* RFC 9113 section 8.2.2: fields that mean something to one connection
 * only are not sent (h2msg.h); Host becomes :authority;
 * Proxy-Authorization was the proxy's, on the CONNECT. */
static int field_dropped(const char *name, size_t len, const char *value, size_t vlen)
{
    return hb_h2m_connection_specific(name, len, value, vlen) || hb_name_is(name, len, "host", 4) ||
           hb_name_is(name, len, "proxy-authorization", 19);
}

static void nv_set(nghttp2_nv *nv, const char *name, size_t nlen, const char *value, size_t vlen)
{
    nv->name = (uint8_t *)name;
    nv->namelen = nlen;
    nv->value = (uint8_t *)value;
    nv->valuelen = vlen;
    /* The request outlives its streams: nghttp2 need not copy. */
    nv->flags = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;
}

/* An absolute-form target's path (RFC 9112 section 3.2.2), "/" when it
 * has none; any other form as it is. */
static void target_path(const char *t, size_t n, const char **path, size_t *plen)
{
    *path = t;
    *plen = n;
    const char *colon = memchr(t, ':', n);
    if (t[0] == '/' || colon == NULL || colon + 3 > t + n || memcmp(colon, "://", 3) != 0)
        return;
    const char *auth = colon + 3, *end = t + n;
    const char *slash = memchr(auth, '/', (size_t)(end - auth));
    const char *query = memchr(auth, '?', (size_t)(end - auth));
    if (slash == NULL || (query != NULL && query < slash)) {
        /* "http://host?q" has the path "/?q": the query needs its slash. */
        *path = query != NULL ? query : "/";
        *plen = query != NULL ? (size_t)(end - query) : 1;
        return;
    }
    *path = slash;
    *plen = (size_t)(end - slash);
}

int hb_h2_req_from_http1(hb_h2_req *out, const char *req, size_t len, const char *scheme, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out);
    hb_request *r = malloc(sizeof *r);
    if (r == NULL)
        return -2;
    hb_request_reset(r);
    int rc = hb_parse_request(r, req, len);
    if (rc != HB_PARSE_DONE) {
        snprintf(err, errlen, "the request cannot go over HTTP/2: %s",
                 rc == HB_PARSE_MORE ? "its head is not whole" : r->error);
        free(r);
        return -1;
    }
    if (r->body == HB_BODY_CHUNKED || len - r->head_len < r->content_length) {
        snprintf(err, errlen, "the request cannot go over HTTP/2: %s",
                 r->body == HB_BODY_CHUNKED ? "a chunked body" : "its body is not all there");
        free(r);
        return -1;
    }
    /* The lowercased names in one store after the nv array: 4 pseudo-fields
     * and the fields kept. */
    size_t names = 0;
    for (unsigned i = 0; i < r->num_headers; i++)
        names += r->headers[i].name_len;
    size_t nvmax = 4 + r->num_headers;
    char *store = malloc(nvmax * sizeof(nghttp2_nv) + names + 1);
    if (store == NULL) {
        free(r);
        return -2;
    }
    nghttp2_nv *nva = (nghttp2_nv *)store;
    char *lower = store + nvmax * sizeof(nghttp2_nv);
    const char *authority = NULL;
    size_t alen = 0, n = 4;
    for (unsigned i = 0; i < r->num_headers; i++) {
        const hb_header *f = &r->headers[i];
        const char *name = req + f->name_off, *value = req + f->value_off;
        if (hb_name_is(name, f->name_len, "host", 4)) {
            authority = value;
            alen = f->value_len;
        }
        if (field_dropped(name, f->name_len, value, f->value_len))
            continue;
        for (size_t k = 0; k < f->name_len; k++)
            lower[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] + 32 : name[k]);
        nv_set(&nva[n++], lower, f->name_len, value, f->value_len);
        lower += f->name_len;
    }
    if (authority == NULL) {
        snprintf(err, errlen, "the request cannot go over HTTP/2: it has no Host");
        free(store);
        free(r);
        return -1;
    }
    const char *path;
    size_t plen;
    target_path(req + r->target_off, r->target_len, &path, &plen);
    nv_set(&nva[0], ":method", 7, req, r->method_len);
    nv_set(&nva[1], ":scheme", 7, scheme, strlen(scheme));
    nv_set(&nva[2], ":authority", 10, authority, alen);
    nv_set(&nva[3], ":path", 5, path, plen);
    out->nva = nva;
    out->nnv = n;
    out->store = store;
    out->head = r->method_len == 4 && memcmp(req, "HEAD", 4) == 0;
    if (r->content_length > 0) {
        out->body = req + r->head_len;
        out->body_len = (size_t)r->content_length;
    }
    free(r);
    return 0;
}

void hb_h2_req_free(hb_h2_req *out)
{
    free(out->store);
    memset(out, 0, sizeof *out);
}

/* ---- the session */

struct hb_h2_stream {
    void *user; /* NULL once cancelled */
    const hb_h2_req *req;
    size_t body_sent;
    int32_t id;
    int ended;   /* its response's END_STREAM came: the response is whole */
    int bad;     /* its response broke a rule of h2msg.h's: reset, BROKEN */
    int sending; /* its request's body is not all handed to the session's output */
    hb_h2m msg;
    hb_h2_stream *next_free;
};

/* Stream records come from chunks the session keeps: none is allocated
 * per request once as many as are open at once exist. */
#define H2_CHUNK 64
typedef struct h2_chunk {
    struct h2_chunk *next;
    hb_h2_stream s[H2_CHUNK];
} h2_chunk;

struct hb_h2 {
    nghttp2_session *s;
    hb_h2mem mem; /* the session's blocks (after s: freed after it) */
    hb_h2_hooks hooks;
    void *owner;
    hb_h2_config cfg;
    hb_h2_stats st;
    h2_chunk *chunks;
    hb_h2_stream *free_list;
    int open;
    int broken;
    int got_bytes;          /* something came: the HTTP/1 check is done */
    hb_h2_stream *last;     /* the stream stream_of found last (NULL: none) */
    hb_h2_stream *block_st; /* the stream whose header block is being decoded */
    int block_final;        /* that block is a final head */
    int block_head;         /* it is a head, 1xx or final (it has a :status) */
    uint64_t block_decoded; /* its fields' names and values so far */
    uint32_t block_len;     /* its size so far, as RFC 7541 section 4.1 counts */
    uint32_t block_fields;
    int32_t rst_id; /* the stream the RST_STREAM being handled is for */
    hb_buf pending; /* frames made inside hb_h2_input, for hb_h2_output */
    char error[200];
};

static hb_h2_stream *stream_take(hb_h2 *h)
{
    if (h->free_list == NULL) {
        h2_chunk *c = calloc(1, sizeof *c);
        if (c == NULL)
            return NULL;
        c->next = h->chunks;
        h->chunks = c;
        for (int i = 0; i < H2_CHUNK; i++) {
            c->s[i].next_free = h->free_list;
            h->free_list = &c->s[i];
        }
    }
    hb_h2_stream *st = h->free_list;
    h->free_list = st->next_free;
    return st;
}

static void stream_give(hb_h2 *h, hb_h2_stream *st)
{
    h->st.sending -= (uint32_t)st->sending;
    st->sending = 0;
    if (h->last == st)
        h->last = NULL;
    st->user = NULL;
    st->next_free = h->free_list;
    h->free_list = st;
}

/* The record of stream id, or NULL. A response's frames come together and
 * a DATA frame is asked for twice (its chunk, then the frame whole): the
 * last one found is kept, a comparison where nghttp2's map is a hash
 * lookup. Valid while the record is (stream_give forgets it); ids are
 * never reused within a session. */
static hb_h2_stream *stream_of(hb_h2 *h, int32_t id)
{
    if (h->last != NULL && h->last->id == id)
        return h->last;
    hb_h2_stream *st = nghttp2_session_get_stream_user_data(h->s, id);
    if (st != NULL)
        h->last = st;
    return st;
}

static void set_error(hb_h2 *h, const char *fmt, const char *what)
{
    snprintf(h->error, sizeof h->error, fmt, what);
}

static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *arg)
{
    (void)s;
    (void)hd;
    hb_h2 *h = arg;
    h->st.frames_in++;
    return 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    hb_h2 *h = arg;
    /* Looked up once a block, not once a field (a map lookup each). */
    (void)s;
    h->block_st = stream_of(h, f->hd.stream_id);
    if (h->block_st != NULL)
        hb_h2m_block(&h->block_st->msg);
    h->block_final = 0;
    h->block_head = 0;
    h->block_len = 0;
    h->block_fields = 0;
    h->block_decoded = 0;
    return 0;
}

/* The stream's response broke a rule (defect, h2msg.h's words): it is
 * reset, and closes BROKEN with that said. */
static void stream_broken(hb_h2 *h, hb_h2_stream *st, const char *defect)
{
    st->bad = 1;
    snprintf(h->error, sizeof h->error, "malformed HTTP/2 response: %s", defect);
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_PROTOCOL_ERROR);
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name_p, size_t nlen,
                     const uint8_t *value_p, size_t vlen, uint8_t flags, void *arg)
{
    (void)s;
    (void)f;
    (void)flags;
    hb_h2 *h = arg;
    const char *name = (const char *)name_p, *value = (const char *)value_p;
    h->block_decoded += nlen + vlen;
    h->block_head |= nlen == 7 && memcmp(name, ":status", 7) == 0;
    h->block_len += (uint32_t)(nlen + vlen + 32);
    h->block_fields += nlen == 0 || name[0] != ':';
    if (h->block_len > h->cfg.max_header_list || h->block_fields > h->cfg.max_fields) {
        snprintf(h->error, sizeof h->error,
                 "the response's header list is over the limit (%u bytes, %u fields)",
                 h->cfg.max_header_list, h->cfg.max_fields);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    }
    hb_h2_stream *st = h->block_st;
    if (st == NULL || st->user == NULL || st->bad)
        return 0;
    int bad_status;
    const char *defect = hb_h2m_field(&st->msg, name, nlen, value, vlen, &bad_status);
    if (defect != NULL) {
        st->bad = 1;
        if (bad_status)
            /* nghttp2 passes any three digits: 000, 099 and 600 are no
             * status codes (RFC 9110 section 15), as over HTTP/1.1. */
            snprintf(h->error, sizeof h->error, "invalid status code: :status \"%.*s\"",
                     (int)(vlen < 16 ? vlen : 16), value);
        else
            snprintf(h->error, sizeof h->error, "malformed HTTP/2 response: %s (%.*s)", defect,
                     (int)(nlen < 40 ? nlen : 40), name);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    }
    if (nlen == 7 && name[0] == ':') {
        int status = st->msg.block_status;
        h->block_final = status >= 200;
        if (h->block_final && h->hooks.head != NULL)
            h->hooks.head(h->owner, st->user, status);
    }
    int trailer = !h->block_final && st->msg.trailers;
    if ((h->block_final || trailer) && h->hooks.field != NULL)
        h->hooks.field(h->owner, st->user, name, nlen, value, vlen, trailer);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *p, size_t n,
                   void *arg)
{
    (void)flags;
    hb_h2 *h = arg;
    (void)s;
    hb_h2_stream *st = stream_of(h, id);
    if (st == NULL || st->user == NULL || st->bad)
        return 0;
    const char *defect = hb_h2m_data(&st->msg, n);
    if (defect != NULL)
        stream_broken(h, st, defect);
    else if (h->hooks.data != NULL)
        h->hooks.data(h->owner, st->user, (const char *)p, n);
    return 0;
}

/* A header block or DATA frame received whole: the block's rules, and at
 * END_STREAM the response's (h2msg.h). */
static void message_frame(hb_h2 *h, const nghttp2_frame *f)
{
    hb_h2_stream *st = stream_of(h, f->hd.stream_id);
    if (st == NULL || st->user == NULL || st->bad)
        return;
    int end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    const char *defect = f->hd.type == NGHTTP2_HEADERS ? hb_h2m_block_end(&st->msg, end) : NULL;
    if (defect == NULL && end)
        defect = hb_h2m_end(&st->msg);
    if (defect != NULL)
        stream_broken(h, st, defect);
    else if (end)
        st->ended = 1;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    (void)s;
    hb_h2 *h = arg;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
        /* A response head's block (a 1xx's too; trailers are no head) as
         * h2load counts it: the HEADERS and CONTINUATION payloads less the
         * padding and the priority fields (RFC 9113 section 6.2), which
         * nghttp2 has summed into hd.length. */
        if (h->block_head) {
            h->st.header_bytes_wire +=
                f->hd.length - f->headers.padlen - ((f->hd.flags & NGHTTP2_FLAG_PRIORITY) ? 5 : 0);
            h->st.header_bytes_decoded += h->block_decoded;
        }
        message_frame(h, f);
        break;
    case NGHTTP2_DATA: message_frame(h, f); break;
    case NGHTTP2_RST_STREAM:
        h->st.resets++;
        h->rst_id = f->hd.stream_id; /* its close follows at once */
        break;
    case NGHTTP2_GOAWAY:
        h->st.goaway = 1;
        h->st.goaway_code = f->goaway.error_code;
        h->st.goaway_last = f->goaway.last_stream_id;
        break;
    case NGHTTP2_SETTINGS:
        if (f->hd.flags & NGHTTP2_FLAG_ACK)
            break;
        h->st.settings = 1;
        /* Absent, the limit is none (RFC 9113 section 6.5.2), which
         * nghttp2 reads back as its sentinel 2^32-1. */
        for (size_t i = 0; i < f->settings.niv; i++)
            if (f->settings.iv[i].settings_id == NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                h->st.streams_limited = 1;
        break;
    default: break;
    }
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *arg)
{
    (void)s;
    hb_h2 *h = arg;
    hb_h2_stream *st = stream_of(h, id);
    if (st == NULL)
        return 0;
    int rst = h->rst_id == id;
    h->rst_id = 0;
    h->open--;
    void *user = st->user;
    int st_ended = st->ended, st_bad = st->bad;
    if (h->block_st == st)
        h->block_st = NULL; /* (no field of its comes after its close) */
    stream_give(h, st);
    if (user == NULL)
        return 0; /* cancelled */
    int how;
    if (st_bad)
        how = HB_H2_BROKEN; /* (closed at its END_STREAM before the reset went) */
    else if (st_ended)
        how = HB_H2_DONE; /* RFC 9113 section 8.1: a RST_STREAM after a whole response
                           * (NO_ERROR: stop sending the request) does not undo it */
    else if (rst)
        how = code == NGHTTP2_REFUSED_STREAM ? HB_H2_REFUSED : HB_H2_RESET;
    else if (code == NGHTTP2_NO_ERROR)
        how = HB_H2_DONE;
    else if (code == NGHTTP2_REFUSED_STREAM && h->st.goaway)
        how = HB_H2_UNSENT; /* closed by the GOAWAY, above its last stream */
    else
        how = HB_H2_BROKEN;
    if (how == HB_H2_BROKEN && h->error[0] == 0)
        snprintf(h->error, sizeof h->error, "the stream broke HTTP/2's rules (%s)",
                 nghttp2_http2_strerror(code));
    h->hooks.closed(h->owner, user, how, code);
    return 0;
}

/* A GOAWAY of ours with an error code: the session ended itself on what
 * the server sent (a connection error, RFC 9113 section 5.4.1). */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    (void)s;
    hb_h2 *h = arg;
    if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR) {
        h->broken = 1;
        if (h->error[0] == 0)
            snprintf(h->error, sizeof h->error, "HTTP/2: the server broke the protocol (%s)",
                     nghttp2_http2_strerror(f->goaway.error_code));
    }
    return 0;
}

/* nghttp2's own words for what broke a frame or a stream: the most
 * precise reason there is. */
static int on_error(nghttp2_session *s, int lib_error, const char *msg, size_t len, void *arg)
{
    (void)s;
    (void)lib_error;
    hb_h2 *h = arg;
    snprintf(h->error, sizeof h->error, "%.*s", (int)len, msg);
    return 0;
}

static hb_h2_ssize read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
                             uint32_t *flags, nghttp2_data_source *src, void *arg)
{
    (void)s;
    (void)id;
    hb_h2 *h = arg;
    hb_h2_stream *st = src->ptr;
    size_t left = st->req->body_len - st->body_sent;
    size_t n = left < len ? left : len;
    memcpy(buf, st->req->body + st->body_sent, n);
    st->body_sent += n;
    if (st->body_sent == st->req->body_len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        h->st.sending -= (uint32_t)st->sending;
        st->sending = 0;
    }
    return (hb_h2_ssize)n;
}

hb_h2 *hb_h2_new(const hb_h2_config *cfg, const hb_h2_hooks *hooks, void *owner)
{
    hb_h2 *h = calloc(1, sizeof *h);
    nghttp2_session_callbacks *cb = NULL;
    nghttp2_option *opt = NULL;
    if (h == NULL || nghttp2_session_callbacks_new(&cb) != 0)
        goto fail;
    hb_h2mem_init(&h->mem);
    h->hooks = *hooks;
    h->owner = owner;
    h->cfg = *cfg;
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_error_callback2(cb, on_error);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    /* Until the server's SETTINGS come, one stream: RFC 9113 section 6.5.2
     * lets a client assume no limit, but a server may then treat the
     * streams over its own as a connection error (the h2 package does);
     * the first request still goes with the preface. */
    if (nghttp2_option_new(&opt) != 0)
        goto fail;
    nghttp2_option_set_peer_max_concurrent_streams(opt, 1);
    /* The response's rules are h2msg.c's, at a fraction of the cost. */
    nghttp2_option_set_no_http_messaging(opt, 1);
    hb_h2_limit_continuations(opt);
    if (nghttp2_session_client_new3(&h->s, cb, h, opt, hb_h2mem_nghttp2(&h->mem)) != 0)
        goto fail;
    nghttp2_option_del(opt);
    opt = NULL;
    nghttp2_session_callbacks_del(cb);
    cb = NULL;
    uint32_t window = cfg->window ? cfg->window : HB_H2_MAX_WINDOW;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, /* push is obsolete */
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, cfg->max_header_list},
    };
    if (nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0 ||
        nghttp2_session_set_local_window_size(h->s, NGHTTP2_FLAG_NONE, 0, (int32_t)window) != 0)
        goto fail;
    return h;
fail:
    if (cb != NULL)
        nghttp2_session_callbacks_del(cb);
    if (opt != NULL)
        nghttp2_option_del(opt);
    hb_h2_free(h);
    return NULL;
}

void hb_h2_free(hb_h2 *h)
{
    if (h == NULL)
        return;
    nghttp2_session_del(h->s); /* (NULL is fine) */
    hb_h2mem_release(&h->mem);
    hb_buf_free(&h->pending);
    while (h->chunks != NULL) {
        h2_chunk *next = h->chunks->next;
        free(h->chunks);
        h->chunks = next;
    }
    free(h);
}

hb_h2_stream *hb_h2_submit(hb_h2 *h, const hb_h2_req *req, void *stream, int32_t *id)
{
    if (h->broken || h->st.goaway) {
        errno = EAGAIN;
        return NULL;
    }
    hb_h2_stream *st = stream_take(h);
    if (st == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    st->user = stream;
    st->req = req;
    st->body_sent = 0;
    st->ended = 0;
    st->bad = 0;
    st->sending = 0;
    hb_h2m_start(&st->msg, req->head);
    hb_h2_provider body = {.source.ptr = st, .read_callback = read_body};
    int32_t rc =
        HB_H2_SUBMIT_REQUEST(h->s, NULL, req->nva, req->nnv, req->body != NULL ? &body : NULL, st);
    if (rc < 0) {
        stream_give(h, st);
        errno = rc == NGHTTP2_ERR_NOMEM ? ENOMEM : EAGAIN;
        return NULL;
    }
    st->id = rc;
    st->sending = req->body != NULL;
    h->st.sending += (uint32_t)st->sending;
    h->open++;
    *id = rc;
    return st;
}

void hb_h2_cancel(hb_h2 *h, hb_h2_stream *st)
{
    st->user = NULL;
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
}

/* A server that answers the preface in HTTP/1.x (one that does not speak
 * h2c, or a TLS port that chose http/1.1) is named in its own words. */
static int answered_http1(hb_h2 *h, const char *p, size_t n)
{
    if (n < 5 || memcmp(p, "HTTP/", 5) != 0)
        return 0;
    char got[64];
    hb_parse_excerpt(p, n, got, sizeof got);
    set_error(h, "the server answered HTTP/2's preface in HTTP/1: got \"%s\"", got);
    return 1;
}

/* What the session has to send, appended to out. */
static int drain(hb_h2 *h, hb_buf *out)
{
    for (;;) {
        const uint8_t *p;
        hb_h2_ssize n = HB_H2_MEM_SEND(h->s, &p);
        if (n < 0) {
            set_error(h, "HTTP/2: %s", nghttp2_strerror((int)n));
            h->broken = 1;
            return -1;
        }
        if (n == 0)
            return 0;
        if (hb_buf_append(out, p, (size_t)n) != 0)
            return -1;
    }
}

int hb_h2_input(hb_h2 *h, const char *p, size_t n)
{
    if (h->broken)
        return -1;
    if (!h->got_bytes && n > 0) {
        h->got_bytes = 1;
        if (answered_http1(h, p, n)) {
            h->broken = 1;
            return -1;
        }
    }
    h->error[0] = 0;
    hb_h2_ssize rc = HB_H2_MEM_RECV(h->s, (const uint8_t *)p, n);
    if (rc < 0) {
        if (h->error[0] == 0)
            set_error(h, "HTTP/2: %s", nghttp2_strerror((int)rc));
        h->broken = 1;
        return -1;
    }
    /* What the input made the session say comes out now: a GOAWAY of its
     * own (on_frame_send) is how a connection error shows. */
    if (drain(h, &h->pending) != 0 || h->broken)
        return -1;
    return 0;
}

int hb_h2_output(hb_h2 *h, hb_buf *out)
{
    if (hb_buf_size(&h->pending) > 0) {
        if (hb_buf_append(out, hb_buf_rdptr(&h->pending), hb_buf_size(&h->pending)) != 0)
            return -1;
        hb_buf_clear(&h->pending);
        hb_buf_shrink(&h->pending, 65536);
    }
    return drain(h, out);
}

int hb_h2_can_submit(const hb_h2 *h)
{
    return !h->broken && !h->st.goaway && (uint32_t)h->open < hb_h2_streams_allowed(h);
}

int hb_h2_open_streams(const hb_h2 *h)
{
    return h->open;
}

uint32_t hb_h2_streams_allowed(const hb_h2 *h)
{
    /* (nghttp2 gives the RFC's initial "unlimited" until SETTINGS come,
     * whatever limit its option set for itself.) */
    if (!h->st.settings)
        return 1;
    return nghttp2_session_get_remote_settings(h->s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

int hb_h2_done(const hb_h2 *h)
{
    return h->broken || (!nghttp2_session_want_read(h->s) && !nghttp2_session_want_write(h->s));
}

const hb_h2_stats *hb_h2_stats_of(const hb_h2 *h)
{
    return &h->st;
}

const char *hb_h2_error(const hb_h2 *h)
{
    return h->error;
}

const char *hb_h2_code_name(uint32_t code)
{
    return nghttp2_http2_strerror(code);
}

int hb_h2_continuations(void)
{
#ifdef HB_HAVE_MAX_CONTINUATIONS
    return HB_H2_MAX_CONTINUATIONS;
#else
    /* Not set: a library with the option applies its default, 8 (its
     * manual's nghttp2_option_set_max_continuations). */
    return dlsym(RTLD_DEFAULT, "nghttp2_option_set_max_continuations") != NULL ? 8 : 0;
#endif
}

const char *hb_h2_library(void)
{
    return nghttp2_version(0)->version_str;
}
