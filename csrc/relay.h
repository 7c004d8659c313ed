/* relay.h: hb_relay_*, the embedded server's forward-proxy mode.
 *
 * With the server's `proxy` on, a session hands two kinds of request here
 * instead of to the routes (RFC 9112 section 3.2): an absolute-form one
 * (`GET http://host:port/path HTTP/1.1`), relayed to that origin with its
 * hop-by-hop fields dropped (RFC 9110 section 7.6.1) and a Via added
 * (section 7.6.3), its response relayed back; and a CONNECT (RFC 9110
 * section 9.3.6), which opens a tunnel. Origin-form requests are still the
 * routes' to answer.
 *
 * Destinations: loopback (127.0.0.0/8, ::1, "localhost"), and what the
 * allow list names; anything else is 403 (an open proxy is a hole). No name
 * is looked up while serving: an allow entry's address is resolved when the
 * server starts.
 *
 * Bytes move as the seed's rabbit moved them. With zero_copy, Content-Length
 * bodies, bodies read until close and tunnels go by splice(2) through a pipe
 * of the session's, never entering user space; chunked bodies are copied
 * (their framing must be read to find their end). Without, everything is
 * read into a buffer and written from it. Either way a direction holds at
 * most one window (the pipe, or HB_RELAY_WINDOW bytes): a side that stops reading
 * stops the other side being read, and nothing grows.
 *
 * The relay works on non-blocking sockets only; the session says what it
 * waits for with HB_WANT_IO (session.h): s->io_client and s->io_up.
 */
#ifndef HB_RELAY_H
#define HB_RELAY_H

#include "net.h"

#include <stddef.h>
#include <stdint.h>

struct hb_sess;

/* A destination the allow list lets through besides loopback: requests
 * naming `name` (a host name or an address, compared without case) and
 * `port` (0: any) are relayed to addr (its port replaced by the request's). */
typedef struct {
    char name[256];
    int port;
    hb_addr addr;
} hb_relay_allow;

/* Bytes a direction holds at most when copying: what a zero-copy one holds
 * in its pipe, so the two ways compare like with like. */
#define HB_RELAY_WINDOW (256 * 1024)

/* What hb_relay_advance returns besides a status to answer with. */
#define HB_RELAY_WAIT 0 /* wait as s->io_client, s->io_up and s->deadline say */
#define HB_RELAY_DONE 1 /* the response is out: the session goes on as after its own */
#define HB_RELAY_CLOSE                                                                             \
    2 /* close the connection (a tunnel ended, or a failure after the
                          * client began to get the response) */

/* Whether the request whose head was just parsed (s->req over s->rx) is
 * the relay's: CONNECT, or a target in absolute form. */
int hb_relay_wanted(const struct hb_sess *s);

/* Starts relaying that request: checks its destination, writes the
 * request to send upstream, and takes the head (and what of the body is
 * in) from s->rx. Returns 0 (then hb_relay_advance), or a status to answer
 * with, nothing having been sent anywhere, with *why the text body: 400 (a
 * target that is not http://host[:port]/..., or host:port for CONNECT),
 * 403 (a destination not allowed), 508 (the request came through this
 * relay already) or 503 (no memory). The head is taken from s->rx either
 * way; on a refusal the body is not, and the session closes after. */
int hb_relay_begin(struct hb_sess *s, int64_t now, const char **why);

/* Moves what can be moved without blocking. Returns HB_RELAY_WAIT,
 * HB_RELAY_DONE, HB_RELAY_CLOSE, or a status to answer with when nothing
 * of a response has reached the client yet: 502 (the upstream refused the
 * connection, closed or reset it, or answered with a malformed response;
 * *why names which) or 504 (the upstream stalled past upstream_timeout). */
int hb_relay_advance(struct hb_sess *s, int64_t now, const char **why);

/* The session's deadline passed during a relay. Returns 1 when the next
 * hb_relay_advance answers it (504: the upstream stalled and the client
 * has had nothing yet), 0 when the connection is to be cut off. */
int hb_relay_expired(struct hb_sess *s);

/* Closes the upstream connection and the pipes, and frees the relay's
 * state; safe on a session that never relayed. */
void hb_relay_free(struct hb_sess *s);

#endif
