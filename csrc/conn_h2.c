/* conn_h2.c: HTTP/2 on a blocking client connection (conn.h's
 * hb_conn_set_http2): one stream at a time on a session of the socket's
 * life, behind the same hb_conn_request as HTTP/1.1 (c->proto). The
 * socket is conn.c's (hb_conn_open and the failures' words); this file
 * holds everything HTTP/2 keeps of the connection. */
#include "conn.h"

#include "h2.h"
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t window; /* the client's windows (0: wide) */
    hb_h2 *h2;
    hb_h2_stream *stream; /* the stream under way */
    hb_h2_req req;
    hb_buf join, out, body;
    int how;     /* the stream's end (HB_H2_*), -1 while open */
    int over;    /* its body passed max_body (1), or memory ran out (-1) */
    int discard; /* its body is counted, not kept */
} conn_h2;

static conn_h2 *H(const hb_conn *c)
{
    return c->ps;
}

/* ---- HTTP/2: one stream at a time. The response's head is written in
 * HTTP/1.1's text into rx as its fields are decoded, its body into
 * h2_body; at the end the head is parsed as any other and the body put
 * after it, so c->resp and the body read as over HTTP/1.1. */

static void h2_head(void *owner, void *stream, int status)
{
    (void)stream;
    hb_conn *c = owner;
    hb_buf_clear(&c->rx);
    char line[32];
    int n = snprintf(line, sizeof line, "HTTP/1.1 %03d \r\n", status);
    if (hb_buf_append(&c->rx, line, (size_t)n) != 0)
        H(c)->over = -1;
}

static void h2_field(void *owner, void *stream, const char *name, size_t nlen, const char *value,
                     size_t vlen, int trailer)
{
    (void)stream;
    hb_conn *c = owner;
    /* (Trailers are no part of the head a Response shows.) */
    if (trailer || (nlen > 0 && name[0] == ':'))
        return;
    if (hb_buf_reserve(&c->rx, nlen + vlen + 4) != 0) {
        H(c)->over = -1;
        return;
    }
    char *p = hb_buf_wrptr(&c->rx);
    memcpy(p, name, nlen);
    memcpy(p + nlen, ": ", 2);
    memcpy(p + nlen + 2, value, vlen);
    memcpy(p + nlen + 2 + vlen, "\r\n", 2);
    hb_buf_commit(&c->rx, nlen + vlen + 4);
}

static void h2_data(void *owner, void *stream, const char *p, size_t n)
{
    (void)stream;
    hb_conn *c = owner;
    c->body_len += n;
    if (c->body_len > c->max_body)
        H(c)->over = 1;
    else if (H(c)->over == 0 && !H(c)->discard && hb_buf_append(&H(c)->body, p, n) != 0)
        H(c)->over = -1;
}

static void h2_closed(void *owner, void *stream, int how, uint32_t code)
{
    (void)stream;
    hb_conn *c = owner;
    H(c)->how = how;
    c->h2_code = code;
}

static const hb_h2_hooks H2_HOOKS = {h2_head, h2_field, h2_data, h2_closed};

/* A new socket and session; over TLS, ALPN must have agreed on h2. */
static hb_status h2_open(hb_conn *c, int64_t deadline)
{
    hb_conn_close(c);
    hb_status st = hb_conn_open(c, deadline);
    if (st != HB_OK)
        return st;
    if (c->sock.tp == &hb_net_tls && !hb_sock_alpn_is(&c->sock, "h2"))
        return hb_conn_fail(c, HB_ERR_PROTOCOL,
                            "the server did not agree to HTTP/2: ALPN chose %s, not h2",
                            hb_sock_alpn_is(&c->sock, "http/1.1") ? "http/1.1" : "no protocol");
    hb_h2_config cfg = {H(c)->window, HB_MAX_HEAD, HB_MAX_HEADERS};
    H(c)->h2 = hb_h2_new(&cfg, &H2_HOOKS, c);
    if (H(c)->h2 == NULL)
        return hb_conn_fail(c, HB_ERR_NOMEM, "out of memory opening an HTTP/2 session");
    /* Through a proxy's tunnel, the server's unasked SETTINGS may have come
     * with the proxy's answer. */
    size_t early = c->tunnel_req != NULL ? hb_buf_size(&c->tn.reply) : 0;
    if (early > 0) {
        int rc = hb_h2_input(H(c)->h2, hb_buf_rdptr(&c->tn.reply), early);
        hb_buf_clear(&c->tn.reply);
        if (rc != 0)
            return hb_conn_fail(c, HB_ERR_PROTOCOL, "%s", hb_h2_error(H(c)->h2));
    }
    return HB_OK;
}

/* Writes what the session has to send, all of it, by the deadline. */
static hb_status h2_flush(hb_conn *c, int64_t deadline)
{
    hb_buf_clear(&H(c)->out);
    if (hb_h2_output(H(c)->h2, &H(c)->out) != 0)
        return hb_conn_fail(c, HB_ERR_PROTOCOL, "%s", hb_h2_error(H(c)->h2));
    size_t n = hb_buf_size(&H(c)->out);
    if (n == 0)
        return HB_OK;
    struct iovec iov = {hb_buf_rdptr(&H(c)->out), n};
    if (hb_sock_writev(&c->sock, &iov, 1, deadline) != 0)
        return hb_conn_wait_failed(c, errno, "sending HTTP/2 frames");
    c->bytes_sent += n;
    return HB_OK;
}

/* Runs the session until the stream closes (for_slot: until a stream may
 * open, or a GOAWAY says none will): frames out, bytes in. */
static hb_status h2_exchange(hb_conn *c, int64_t deadline, int for_slot)
{
    char buf[16384];
    int got = 0;
    for (;;) {
        hb_status st = h2_flush(c, deadline);
        if (st != HB_OK)
            return st;
        if (for_slot ? hb_h2_can_submit(H(c)->h2) || hb_h2_stats_of(H(c)->h2)->goaway
                     : H(c)->how >= 0)
            return HB_OK;
        ssize_t n = hb_sock_read(&c->sock, buf, sizeof buf, deadline);
        if (n < 0 && errno == ETIMEDOUT && for_slot)
            return hb_conn_wait_failed(c, errno, "waiting for the server to allow a stream");
        if (n <= 0) {
            if (hb_h2_stats_of(H(c)->h2)->goaway && (!got || for_slot)) {
                H(c)->how = HB_H2_UNSENT; /* (closed after a GOAWAY before it went) */
                return HB_OK;
            }
            return hb_conn_cut_short(
                c, n, got ? " before the HTTP/2 stream ended" : " before any HTTP/2 frame came");
        }
        got = 1;
        c->bytes_received += (uint64_t)n;
        if (hb_h2_input(H(c)->h2, buf, (size_t)n) != 0) {
            /* Say it to the server (its GOAWAY), then close. */
            char why[sizeof c->error];
            snprintf(why, sizeof why, "%s", hb_h2_error(H(c)->h2));
            hb_buf_clear(&H(c)->out);
            if (hb_h2_output(H(c)->h2, &H(c)->out) == 0 && hb_buf_size(&H(c)->out) > 0) {
                struct iovec iov = {hb_buf_rdptr(&H(c)->out), hb_buf_size(&H(c)->out)};
                hb_sock_writev(&c->sock, &iov, 1, hb_now_ns() + 100000000);
            }
            return hb_conn_fail(c, HB_ERR_PROTOCOL, "%s", why);
        }
        if (H(c)->over < 0)
            return hb_conn_fail(c, HB_ERR_NOMEM, "out of memory reading the response");
        if (H(c)->over > 0 && H(c)->how < 0) {
            /* No use reading the rest: the stream goes, and the socket. */
            hb_h2_cancel(H(c)->h2, H(c)->stream);
            h2_flush(c, deadline);
            return hb_conn_fail(c, HB_ERR_PROTOCOL, "response body exceeds max_body %llu",
                                (unsigned long long)c->max_body);
        }
    }
}

/* The response of a stream that ended well: its head parsed, its body
 * after it in rx. */
static hb_status h2_response(hb_conn *c, int flags)
{
    if (hb_buf_append(&c->rx, "\r\n", 2) != 0)
        return hb_conn_fail(c, HB_ERR_NOMEM, "out of memory reading the response");
    hb_response_reset(&c->resp);
    if (hb_parse_response(&c->resp, hb_buf_rdptr(&c->rx), hb_buf_size(&c->rx),
                          (flags & HB_REQ_HEAD) ? HB_PARSE_HEAD_REQUEST : 0) != HB_PARSE_DONE)
        return hb_conn_fail(c, HB_ERR_PROTOCOL, "the HTTP/2 response's head: %s",
                            c->resp.error ? c->resp.error : "incomplete");
    c->body_off = c->resp.head_len;
    if (hb_buf_append(&c->rx, hb_buf_rdptr(&H(c)->body), hb_buf_size(&H(c)->body)) != 0)
        return hb_conn_fail(c, HB_ERR_NOMEM, "out of memory reading the response");
    hb_buf_clear(&H(c)->body);
    hb_buf_shrink(&H(c)->body, HB_CONN_KEEP_BUF);
    c->pending = hb_buf_size(&c->rx);
    c->reusable = !hb_h2_done(H(c)->h2) && !hb_h2_stats_of(H(c)->h2)->goaway;
    c->requests++;
    c->served++;
    c->idle_since = hb_now_ns();
    if (!c->reusable) {
        /* Give the socket back now; the response stays in rx. */
        hb_sock_close(&c->sock);
        hb_h2_free(H(c)->h2);
        H(c)->h2 = NULL;
        c->served = 0;
    }
    return HB_OK;
}

static hb_status h2_request(hb_conn *c, const struct iovec *req, int iovcnt, int flags)
{
    int64_t deadline = hb_now_ns() + c->sock.timeout;
    hb_buf_clear(&H(c)->join);
    for (int i = 0; i < iovcnt; i++)
        if (hb_buf_append(&H(c)->join, req[i].iov_base, req[i].iov_len) != 0)
            return HB_ERR_NOMEM;
    hb_h2_req_free(&H(c)->req);
    const char *scheme = c->sock.tp == &hb_net_tls ? "https" : "http";
    int rc = hb_h2_req_from_http1(&H(c)->req, hb_buf_rdptr(&H(c)->join), hb_buf_size(&H(c)->join),
                                  scheme, c->error, sizeof c->error);
    if (rc != 0)
        return rc == -2 ? HB_ERR_NOMEM : HB_ERR_PROTOCOL;
    for (int attempt = 0;; attempt++) {
        if (H(c)->h2 != NULL && !hb_h2_can_submit(H(c)->h2) && !hb_h2_stats_of(H(c)->h2)->goaway &&
            !hb_h2_done(H(c)->h2)) {
            /* The server's limit is reached (SETTINGS_MAX_CONCURRENT_STREAMS
             * 0): the request waits, by its deadline, for it to rise. */
            H(c)->how = -1;
            hb_status st = h2_exchange(c, deadline, 1);
            if (st != HB_OK)
                return st;
        }
        if (H(c)->h2 == NULL || !hb_h2_can_submit(H(c)->h2)) {
            hb_status st = h2_open(c, deadline);
            if (st != HB_OK)
                return st;
        }
        hb_buf_clear(&c->rx);
        hb_buf_clear(&H(c)->body);
        c->body_len = 0;
        H(c)->over = 0;
        H(c)->discard = (flags & HB_REQ_DISCARD) != 0;
        H(c)->how = -1;
        c->h2_code = 0;
        int32_t id;
        if ((H(c)->stream = hb_h2_submit(H(c)->h2, &H(c)->req, c, &id)) == NULL) {
            if (errno == ENOMEM)
                return hb_conn_fail(c, HB_ERR_NOMEM, "out of memory submitting the request");
            hb_conn_close(c); /* (a GOAWAY came between requests) */
            continue;
        }
        hb_status st = h2_exchange(c, deadline, 0);
        if (st != HB_OK)
            return st;
        switch (H(c)->how) {
        case HB_H2_DONE:
            if (H(c)->over > 0)
                return hb_conn_fail(c, HB_ERR_PROTOCOL, "response body exceeds max_body %llu",
                                    (unsigned long long)c->max_body);
            return h2_response(c, flags);
        case HB_H2_RESET:
            snprintf(c->error, sizeof c->error, "the server reset the stream: RST_STREAM %s",
                     hb_h2_code_name(c->h2_code));
            return HB_ERR_RESET;
        case HB_H2_BROKEN:
            snprintf(c->error, sizeof c->error, "%s", hb_h2_error(H(c)->h2));
            return HB_ERR_PROTOCOL;
        default: /* REFUSED, UNSENT: not processed, so sent again (RFC 9113 section 8.7) */
            if (attempt >= 2)
                return hb_conn_fail(
                    c, HB_ERR_RESET, "the server refused the stream three times (%s)",
                    H(c)->how == HB_H2_REFUSED ? "RST_STREAM REFUSED_STREAM" : "GOAWAY");
            c->retries++;
            if (H(c)->how == HB_H2_UNSENT)
                hb_conn_close(c);
        }
    }
}

static void h2_dropped(hb_conn *c)
{
    hb_h2_free(H(c)->h2); /* the session was the socket's */
    H(c)->h2 = NULL;
}

static void h2_release(hb_conn *c)
{
    conn_h2 *h = c->ps;
    if (h != NULL) {
        hb_h2_free(h->h2);
        hb_h2_req_free(&h->req);
        hb_buf_free(&h->join);
        hb_buf_free(&h->out);
        hb_buf_free(&h->body);
        free(h);
    }
    c->ps = NULL;
}

static const hb_conn_proto H2 = {h2_request, h2_dropped, h2_release};

hb_status hb_conn_set_http2(hb_conn *c, uint32_t window)
{
    hb_conn_close(c);
    if (c->proto != &H2) {
        conn_h2 *h = calloc(1, sizeof *h);
        if (h == NULL)
            return HB_ERR_NOMEM;
        if (c->proto != NULL)
            c->proto->release(c);
        c->ps = h;
        c->proto = &H2;
    }
    c->http2 = 1;
    H(c)->window = window;
    return HB_OK;
}
