/* test_h2sess.c: the client session's count of request bodies still going
 * out (hb_h2_stats.sending, csrc/h2.c), which keeps the timing loop from
 * napping while it waits for room to write: a body the server's window
 * holds back counts until the window opens and the rest goes, and stops
 * counting however its stream ends before that (RST_STREAM, a GOAWAY
 * above its id); a request with no body, or one that fits, never counts.
 * And the fields its hooks are handed: the final head's, then the
 * trailers' after the body, marked as such (gRPC's status lives there).
 * The server's frames are written out here byte by byte (RFC 9113 section
 * 4.1's frame header; header blocks as HPACK literals, RFC 7541 6.2.2).
 *
 *   cc -O1 -g -Wall -Wextra -o test_h2sess tests/c/test_h2sess.c csrc/h2.c csrc/h2mem.c \
 *       csrc/h2msg.c csrc/parser.c csrc/buf.c -lnghttp2
 *   ./test_h2sess            prints "N passed, N failed"
 */
#include "../../csrc/h2.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int closed;
    int how;
    int status;
    char fields[256]; /* "name=value/trailer;" each, in order */
} stream_seen;

static void on_head(void *owner, void *stream, int status)
{
    (void)owner;
    ((stream_seen *)stream)->status = status;
}

static void on_field(void *owner, void *stream, const char *name, size_t nlen, const char *value,
                     size_t vlen, int trailer)
{
    (void)owner;
    stream_seen *s = stream;
    size_t at = strlen(s->fields);
    snprintf(s->fields + at, sizeof s->fields - at, "%.*s=%.*s/%d;", (int)nlen, name, (int)vlen,
             value, trailer);
}

static void on_closed(void *owner, void *stream, int how, uint32_t code)
{
    (void)owner;
    (void)code;
    stream_seen *s = stream;
    s->closed++;
    s->how = how;
}

/* A frame: type, flags, stream id and a 4-byte payload (v), or none
 * (len 0); returns its size. */
static size_t frame(unsigned char *p, unsigned type, unsigned flags, uint32_t sid, int len,
                    uint32_t v)
{
    unsigned char h[13] = {0,
                           0,
                           (unsigned char)len,
                           (unsigned char)type,
                           (unsigned char)flags,
                           (unsigned char)(sid >> 24),
                           (unsigned char)(sid >> 16),
                           (unsigned char)(sid >> 8),
                           (unsigned char)sid,
                           (unsigned char)(v >> 24),
                           (unsigned char)(v >> 16),
                           (unsigned char)(v >> 8),
                           (unsigned char)v};
    memcpy(p, h, 9 + (size_t)len);
    return 9 + (size_t)len;
}

/* A frame with any payload; returns its size. */
static size_t frame_of(unsigned char *p, unsigned type, unsigned flags, uint32_t sid,
                       const void *payload, size_t len)
{
    unsigned char h[9] = {
        (unsigned char)(len >> 16), (unsigned char)(len >> 8), (unsigned char)len,
        (unsigned char)type,        (unsigned char)flags,      (unsigned char)(sid >> 24),
        (unsigned char)(sid >> 16), (unsigned char)(sid >> 8), (unsigned char)sid};
    memcpy(p, h, 9);
    memcpy(p + 9, payload, len);
    return 9 + len;
}

#define DATA 0x0
#define HEADERS 0x1
#define END_STREAM 0x1
#define END_HEADERS 0x4
#define SETTINGS 0x4
#define RST_STREAM 0x3
#define GOAWAY 0x7
#define WINDOW_UPDATE 0x8

static uint32_t sending(const hb_h2 *h)
{
    return hb_h2_stats_of(h)->sending;
}

/* Feeds n bytes and takes what the session then has to send. */
static int feed(hb_h2 *h, hb_buf *out, const unsigned char *p, size_t n)
{
    if (hb_h2_input(h, (const char *)p, n) != 0)
        return -1;
    hb_buf_clear(out);
    return hb_h2_output(h, out);
}

/* A POST with a body of n bytes, as HTTP/1.1 bytes (malloc'd). */
static char *post(size_t n, size_t *len)
{
    char head[128];
    int k = snprintf(head, sizeof head,
                     "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", n);
    char *r = malloc((size_t)k + n);
    memcpy(r, head, (size_t)k);
    memset(r + k, 'b', n);
    *len = (size_t)k + n;
    return r;
}

int main(void)
{
    static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    char err[160];
    size_t big_len, small_len;
    char *big = post(100000, &big_len); /* over the default window, 65,535 */
    char *small = post(1000, &small_len);
    hb_h2_req rget, rbig, rsmall;
    check("requests convert",
          hb_h2_req_from_http1(&rget, get, sizeof get - 1, "http", err, sizeof err) == 0 &&
              hb_h2_req_from_http1(&rbig, big, big_len, "http", err, sizeof err) == 0 &&
              hb_h2_req_from_http1(&rsmall, small, small_len, "http", err, sizeof err) == 0);
    hb_h2_hooks hooks = {NULL, NULL, NULL, on_closed};
    hb_h2_config cfg = {0, 65536, 100};
    unsigned char in[64];
    hb_buf out = HB_BUF_INIT;
    int32_t id;

    /* The window opened: the rest goes, and it counts no more. */
    hb_h2 *h = hb_h2_new(&cfg, &hooks, NULL);
    stream_seen s[4];
    memset(s, 0, sizeof s);
    check("a GET counts nothing", hb_h2_submit(h, &rget, &s[0], &id) != NULL && sending(h) == 0);
    check("a small body counts once submitted",
          hb_h2_submit(h, &rsmall, &s[1], &id) != NULL && sending(h) == 1);
    check("a big body too",
          hb_h2_submit(h, &rbig, &s[2], &id) != NULL && id == 5 && sending(h) == 2);
    check("output", hb_h2_output(h, &out) == 0);
    size_t n = frame(in, SETTINGS, 0, 0, 0, 0);
    check("the server's SETTINGS (before them one stream goes)", feed(h, &out, in, n) == 0);
    check("the window holds the big body back, the small one went", sending(h) == 1);
    n = frame(in, WINDOW_UPDATE, 0, 0, 4, 100000);
    n += frame(in + n, WINDOW_UPDATE, 0, 5, 4, 100000);
    check("WINDOW_UPDATEs", feed(h, &out, in, n) == 0);
    check("the rest went: nothing counts", sending(h) == 0 && s[2].closed == 0);
    hb_h2_free(h);

    /* Reset while its body waits: it counts no more. */
    h = hb_h2_new(&cfg, &hooks, NULL);
    memset(s, 0, sizeof s);
    hb_h2_submit(h, &rbig, &s[0], &id);
    hb_buf_clear(&out);
    hb_h2_output(h, &out);
    n = frame(in, SETTINGS, 0, 0, 0, 0);
    check("held back, then reset", feed(h, &out, in, n) == 0 && sending(h) == 1);
    n = frame(in, RST_STREAM, 0, 1, 4, HB_H2_CANCEL);
    check("RST_STREAM", feed(h, &out, in, n) == 0);
    check("a reset body counts no more",
          sending(h) == 0 && s[0].closed == 1 && s[0].how == HB_H2_RESET);
    hb_h2_free(h);

    /* Above a GOAWAY's last stream while its body waits: the same. */
    h = hb_h2_new(&cfg, &hooks, NULL);
    memset(s, 0, sizeof s);
    hb_h2_submit(h, &rget, &s[0], &id);
    hb_h2_submit(h, &rbig, &s[1], &id);
    hb_buf_clear(&out);
    hb_h2_output(h, &out);
    n = frame(in, SETTINGS, 0, 0, 0, 0);
    check("two streams, one held back", feed(h, &out, in, n) == 0 && sending(h) == 1);
    unsigned char ga[17];
    n = frame(ga, GOAWAY, 0, 0, 4, 1); /* last stream 1 ... */
    ga[2] = 8;
    memset(ga + 13, 0, 4); /* ... NO_ERROR */
    check("GOAWAY", feed(h, &out, ga, 17) == 0);
    check("unprocessed, it counts no more",
          sending(h) == 0 && s[1].closed == 1 && s[1].how == HB_H2_UNSENT);
    hb_h2_free(h);

    /* Cancelled by the caller (a timeout): the same, once the reset goes. */
    h = hb_h2_new(&cfg, &hooks, NULL);
    memset(s, 0, sizeof s);
    hb_h2_stream *st = hb_h2_submit(h, &rbig, &s[0], &id);
    hb_buf_clear(&out);
    hb_h2_output(h, &out);
    check("held back, then cancelled", sending(h) == 1);
    hb_h2_cancel(h, st);
    hb_buf_clear(&out);
    check("cancelled: counts no more", hb_h2_output(h, &out) == 0 && sending(h) == 0);
    hb_h2_free(h);

    /* A response with trailers: the head's fields, then the trailers',
     * marked; the stream done. (0x88: :status 200 from HPACK's static
     * table; 0x00, then length and bytes: a literal name and value.) */
    hb_h2_hooks all = {on_head, on_field, NULL, on_closed};
    h = hb_h2_new(&cfg, &all, NULL);
    memset(s, 0, sizeof s);
    hb_h2_submit(h, &rget, &s[0], &id);
    hb_buf_clear(&out);
    hb_h2_output(h, &out);
    static const unsigned char head[] = "\x88\x00\x06server\x02s1";
    static const unsigned char trailers[] = "\x00\x0bgrpc-status\x01"
                                            "0";
    unsigned char resp[128];
    n = frame(resp, SETTINGS, 0, 0, 0, 0);
    n += frame_of(resp + n, HEADERS, END_HEADERS, 1, head, sizeof head - 1);
    n += frame_of(resp + n, DATA, 0, 1, "ok", 2);
    n += frame_of(resp + n, HEADERS, END_HEADERS | END_STREAM, 1, trailers, sizeof trailers - 1);
    check("a response with trailers", feed(h, &out, resp, n) == 0);
    check("its head", s[0].status == 200);
    check("the head's fields, then the trailers', marked",
          strcmp(s[0].fields, ":status=200/0;server=s1/0;grpc-status=0/1;") == 0);
    check("the stream done", s[0].closed == 1 && s[0].how == HB_H2_DONE);
    hb_h2_free(h);

    hb_buf_free(&out);
    hb_h2_req_free(&rget);
    hb_h2_req_free(&rbig);
    hb_h2_req_free(&rsmall);
    free(big);
    free(small);
    return checks_done();
}
