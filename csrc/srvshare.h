/* srvshare.h: hb_srv_*, what every connection of one embedded server
 * shares, whatever protocol it speaks (session.c's HTTP/1.1, h2srv.c's
 * HTTP/2, relay.c's proxying): the settings, the counters, the budget of
 * request bodies held at once, the Date field and /rnd's block. Neither
 * protocol's file calls the other's for these. */
#ifndef HB_SRVSHARE_H
#define HB_SRVSHARE_H

#include "net.h"
#include "route.h"

#include <stddef.h>
#include <stdint.h>

/* The shared random block /rnd serves from (printable bytes). */
#define HB_RND_BLOCK (1u << 20)

/* What the sessions of one server share. Counters are updated atomically. */
typedef struct {
    const hb_transport *transport; /* every session's way to its socket; NULL: plain TCP */
    void *transport_shared;        /* its settings (TLS: an hb_tls) */
    hb_route_static st;
    const char *rnd;        /* HB_RND_BLOCK bytes */
    int zero_copy;          /* static files by sendfile(2) */
    uint64_t max_body;      /* larger request bodies get 413 */
    uint64_t max_buffered;  /* request bodies held at once, all sessions: past it 503 */
    int64_t header_timeout; /* ns for a request head, and between body reads */
    int64_t send_timeout;   /* ns without send progress */
    int64_t idle_timeout;   /* ns a kept-alive connection may sit idle */
    char server_field[64];  /* "Server: httpbench/VERSION\r\n" */
    size_t server_field_len;
    /* The forward-proxy mode (relay.h): its settings, NULL when off. */
    struct hb_relay_config *relay;
    uint64_t requests; /* responses begun (counted before their first byte) */
    uint64_t rejected; /* of which 4xx/5xx for bad requests */
    uint64_t timeouts; /* sessions cut off by a deadline */
    uint64_t buffered; /* request body bytes held now (reserved) */
    /* HTTP/2 (h2srv.h): served when on, by the preface on a plain port or
     * h2 by ALPN over TLS; the streams a connection may have open. */
    int http2;
    uint32_t h2_max_streams;
    uint64_t h2_connections; /* connections that spoke HTTP/2 */
    uint64_t h2_streams;     /* streams opened by clients */
    uint64_t h2_calmed;      /* connections ended for a flood (ENHANCE_YOUR_CALM) */
} hb_srv_shared;

/* Takes n bytes of sh's server-wide budget for request bodies held at
 * once (max_buffered) into *held. Returns 0, or -1, taking nothing, when
 * they do not fit: the request is then refused, so no number of clients
 * sending large bodies and never reading the answers can grow the server
 * past it. */
int hb_srv_reserve(hb_srv_shared *sh, uint64_t *held, uint64_t n);

/* Gives back what *held took of the budget. */
void hb_srv_release(hb_srv_shared *sh, uint64_t *held);

/* The Date field's value for now (RFC 9110 section 6.6.1), formatted once
 * a second per thread; valid until the thread's next call. Its length is
 * HB_SRV_DATE_LEN (IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"). */
const char *hb_srv_http_date(void);
#define HB_SRV_DATE_LEN 29

/* Fills buf with n printable pseudo-random bytes. */
void hb_srv_fill_random(char *buf, size_t n, uint64_t seed);

#endif
