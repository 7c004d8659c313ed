/* conn.h: hb_conn_*, one blocking keep-alive HTTP/1.1 client connection.
 *
 * The caller builds each request; the connection sends it in one write,
 * reads and frames the response with the parser, and keeps the socket for
 * the next request when HTTP allows. A reused connection that the server
 * had already closed when the request went out is retried once on a fresh
 * socket, for idempotent requests only (RFC 9112 section 9.3.1).
 */
#ifndef HB_CONN_H
#define HB_CONN_H

#include "buf.h"
#include "net.h"
#include "parser.h"
#include "request.h"
#include "tunnel.h"

#define HB_CONN_MAX_ADDRS 8
#define HB_CONN_MAX_IOV 4
/* After a response larger than this the buffer is given back. */
#define HB_CONN_KEEP_BUF (1u << 20)

/* Flags for hb_conn_request: HB_REQ_* (request.h). */

typedef struct hb_conn {
    hb_sock sock;
    char *host, *port; /* owned copies */
    char *unix_path;   /* owned; set: connect to this Unix socket, not host:port */
    char *tunnel_req;  /* owned; set: a CONNECT sent on each new socket first */
    size_t tunnel_len;
    int tunnel_open; /* the CONNECT of the socket being opened succeeded */
    hb_tunnel tn;
    hb_addr addrs[HB_CONN_MAX_ADDRS];
    int naddrs;        /* 0 until the first connect resolves */
    uint64_t max_body; /* larger bodies are a protocol error */
    hb_buf rx;
    /* The last response: its head at hb_buf_rdptr(&rx), body_len body
     * bytes at body_off after it (unless discarded). Valid until the next
     * hb_conn_request or hb_conn_close. */
    hb_response resp;
    size_t body_off;
    uint64_t body_len;
    size_t pending;        /* bytes of rx the last response holds */
    unsigned reusable : 1; /* the socket may carry the next request */
    uint64_t served;       /* responses on the current socket */
    int64_t idle_since;    /* when the last response ended (CLOCK_MONOTONIC ns) */
    /* Figures over the connection's life. */
    uint64_t requests; /* responses received */
    uint64_t connects; /* sockets opened */
    uint64_t retries;  /* stale keep-alives sent again */
    uint64_t bytes_sent, bytes_received;
    char error[256]; /* after a failure: what went wrong */
    /* Another protocol than HTTP/1.1 (conn_h2.c: hb_conn_set_http2), NULL
     * for HTTP/1.1; its own state for c, which only it reads. */
    const struct hb_conn_proto *proto;
    void *ps;
    int http2;        /* the protocol is HTTP/2 */
    uint32_t h2_code; /* HB_ERR_RESET: the stream's RST_STREAM code */
} hb_conn;

/* Sets c up, closed, to reach host:port over transport tp. Resolution
 * waits for the first request. timeout bounds each request, connect
 * included. Returns HB_OK or HB_ERR_NOMEM. */
hb_status hb_conn_init(hb_conn *c, const hb_transport *tp, const char *host, const char *port,
                       double timeout, uint64_t max_body);

/* Connects c to the Unix socket at path from now on (host and port still
 * name the server, for Host and messages). Returns HB_OK, HB_ERR_NOMEM,
 * or HB_ERR_CONNECT with c->error set when the path cannot be one. */
hb_status hb_conn_set_unix(hb_conn *c, const char *path);

/* Opens every socket of c with a CONNECT tunnel through the forward proxy
 * c connects to (host and port then name the proxy): request is the whole
 * CONNECT, copied. Returns HB_OK or HB_ERR_NOMEM. */
hb_status hb_conn_set_tunnel(hb_conn *c, const char *request, size_t len);

/* Speaks HTTP/2 from the next socket on (h2c by prior knowledge over
 * plain TCP, RFC 9113 section 3.3; over TLS the transport offers h2 by
 * ALPN and a server that picks another protocol is a protocol error),
 * the client's windows `window` bytes (0: wide). In conn_h2.c. Returns
 * HB_OK, or HB_ERR_NOMEM (c speaks HTTP/1.1 still). */
hb_status hb_conn_set_http2(hb_conn *c, uint32_t window);

/* Sends the request made of req[0..iovcnt) (iovcnt at most
 * HB_CONN_MAX_IOV; req itself is left as it was) and reads the response,
 * skipping interim 1xx responses. Returns HB_OK with c->resp and the body
 * set, or another status with c->error set and the socket closed, so the
 * next request starts on a new one; over HTTP/2 a stream the server
 * reset is HB_ERR_RESET (its code in c->h2_code) and a response that
 * broke the rules HB_ERR_PROTOCOL, the connection kept for the next. Blocks at most the timeout, less
 * when interrupted (c->sock.interrupted). */
hb_status hb_conn_request(hb_conn *c, const struct iovec *req, int iovcnt, int flags);

/* A protocol beside HTTP/1.1 on c's socket: its request (the same
 * contract as hb_conn_request's, the previous response consumed), what
 * it drops when the socket closes, and what it frees with c. */
typedef struct hb_conn_proto {
    hb_status (*request)(struct hb_conn *c, const struct iovec *req, int iovcnt, int flags);
    void (*closed)(struct hb_conn *c);
    void (*release)(struct hb_conn *c);
} hb_conn_proto;

/* ---- the socket's calls, for a protocol beside HTTP/1.1 (conn_h2.c) */

/* Opens c's socket (resolving, through the tunnel and the handshake) by
 * the deadline. Returns HB_OK, or a failure with c->error set. */
hb_status hb_conn_open(hb_conn *c, int64_t deadline);
/* c->error from fmt, the socket closed; returns st. */
hb_status hb_conn_fail(hb_conn *c, hb_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Maps a failed wait (errno err) to a status and message; `what` says
 * where it was. */
hb_status hb_conn_wait_failed(hb_conn *c, int err, const char *what);
/* A read that returned n (0 or -1) while a message was incomplete; fmt
 * goes after "connection closed" (or "reset"). */
hb_status hb_conn_cut_short(hb_conn *c, ssize_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Closes the socket; the next request opens another. */
void hb_conn_close(hb_conn *c);

/* Closes and frees everything; c may be initialised again. */
void hb_conn_free(hb_conn *c);

#endif
