/* server.h: hb_srv_*, the embedded target server.
 *
 * Two ways to wait on connections, serving the same endpoints (route.h)
 * through the same session code (session.h), so the seed's blocking versus
 * event-driven comparison can be rerun:
 *   HB_SRV_EPOLL    `threads` event loops over non-blocking sockets, all
 *                   waiting on one listening socket (EPOLLEXCLUSIVE);
 *   HB_SRV_THREADS  a thread per connection on a blocking socket, as
 *                   HttpCore's classic server did.
 * Server threads block every signal: signals stay with the caller's threads.
 * As a forward proxy a session has two sockets, the client's and its
 * upstream's: the event loops watch both, and a connection's thread waits
 * for both in poll(2) on non-blocking sockets.
 */
#ifndef HB_SERVER_H
#define HB_SERVER_H

#include "net.h"
#include "relay.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { HB_SRV_EPOLL = 0, HB_SRV_THREADS = 1 } hb_srv_mode;

/* Most event loops a server may have. */
#define HB_SRV_MAX_THREADS 1024

/* The most streams a connection may have open that a server can allow. */
#define HB_SRV_MAX_STREAMS 10000

typedef struct {
    const char *host;      /* address to bind */
    int port;              /* 0: any free port */
    const char *unix_path; /* set: listen on this Unix socket instead (made, and
                            * removed at stop; a stale one left by a dead server
                            * is replaced, anything else there is an error) */
    hb_srv_mode mode;
    int threads;                   /* event loops (HB_SRV_EPOLL), 1..HB_SRV_MAX_THREADS */
    const char *static_dir;        /* NULL: /static/ answers 404 */
    int zero_copy;                 /* static files by sendfile(2), else read/write */
    uint64_t max_body;             /* larger request bodies get 413 */
    uint64_t max_buffered;         /* request bodies held at once, in all: past it 503 */
    double header_timeout;         /* seconds for a request head */
    double send_timeout;           /* seconds without send progress */
    double idle_timeout;           /* seconds a kept-alive connection may idle */
    const char *version;           /* for the Server field */
    const hb_transport *transport; /* NULL: plain TCP; hb_net_tls for TLS */
    void *transport_shared;        /* its settings (an hb_tls), outliving the server */
    int proxy;                     /* also a forward proxy (relay.h) */
    const hb_relay_allow *allow;   /* destinations allowed besides loopback (copied) */
    size_t nallow;
    double upstream_timeout; /* seconds an upstream may stall before 504 */
    int http2;               /* serve HTTP/2 too (h2srv.h): the preface on a plain port, h2
                              * by ALPN over TLS (its hb_tls made with http2) */
    uint32_t max_streams;    /* HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS,
                              * 1..HB_SRV_MAX_STREAMS */
} hb_srv_config;

typedef struct hb_srv hb_srv;

/* The server's counters, each as X(field, source, what): its field in
 * hb_srv_stats and the key of Server.stats(), the counter server.c reads
 * it from (an expression over `srv`), and what it counts. The struct, the
 * read (hb_srv_get_stats), the mapping _ServerCore.stats() returns, the
 * names _core exports (SERVER_COUNTS, with `what`) and the manual's table
 * (docs/server.md, checked by a test) all follow this one list: adding a
 * counter is a line here and its increments (CONTRIBUTING.md). */
#define HB_SRV_COUNTS(X)                                                                           \
    X(connections, srv->connections, "connections accepted (counted before the first read)")       \
    X(requests, srv->sh.requests, "responses sent (counted before their first byte)")              \
    X(rejected, srv->sh.rejected, "of the responses, answers to bad requests")                     \
    X(timeouts, srv->sh.timeouts, "connections cut off by a deadline")                             \
    X(relayed, srv->relay.relayed,                                                                 \
      "responses relayed from an upstream as a proxy (not among requests)")                        \
    X(tunnels, srv->relay.tunnels, "CONNECT tunnels opened as a proxy")                            \
    X(h2_connections, srv->sh.h2_connections, "connections that spoke HTTP/2")                     \
    X(h2_streams, srv->sh.h2_streams, "HTTP/2 streams clients opened")                             \
    X(h2_calmed, srv->sh.h2_calmed,                                                                \
      "HTTP/2 connections ended for a flood (GOAWAY ENHANCE_YOUR_CALM)")

#define HB_SRV_COUNT_FIELD(field, source, what) uint64_t field;
typedef struct {
    HB_SRV_COUNTS(HB_SRV_COUNT_FIELD)
} hb_srv_stats;

/* Binds, listens and starts serving. Returns the server, or NULL with a
 * message in err (threads out of range included; nothing is left behind). */
hb_srv *hb_srv_start(const hb_srv_config *cfg, char *err, size_t errlen);

/* The port it listens on (0 on a Unix socket). */
int hb_srv_port(const hb_srv *srv);

void hb_srv_get_stats(hb_srv *srv, hb_srv_stats *out);

/* Stops every thread, closes every connection and frees srv. Blocks until
 * the threads have ended (a /delay in progress is cut short). */
void hb_srv_stop(hb_srv *srv);

#endif
