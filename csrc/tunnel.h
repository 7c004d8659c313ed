/* tunnel.h: hb_tunnel_*, a CONNECT tunnel through a forward proxy (RFC
 * 9110 section 9.3.6), opened over a connected socket before its transport's
 * own handshake (TLS to the origin, inside the tunnel).
 *
 * One step at a time on a non-blocking socket, so the loop drives it from
 * its events and Connection from blocking waits, through the same code.
 */
#ifndef HB_TUNNEL_H
#define HB_TUNNEL_H

#include "buf.h"
#include "net.h"
#include "parser.h"

/* The most of a refusal (head and body) a tunnel reads: a proxy's 407 or
 * 502 page is small; past this it is an error. */
#define HB_TUNNEL_MAX_REPLY (64 * 1024)

typedef struct {
    const char *request; /* the whole CONNECT request; the caller's, outliving t */
    size_t request_len;
    size_t sent;
    hb_buf reply; /* what the proxy answered so far */
    hb_response head;
    int have_head;
    hb_body body; /* a refusal's body, framed by its head */
} hb_tunnel;

/* Readies t (zeroed, or after a previous tunnel) to send request. */
void hb_tunnel_begin(hb_tunnel *t, const char *request, size_t len);

/* Step results. */
#define HB_TUNNEL_OPEN                                                                             \
    0                    /* a 2xx came: the tunnel is open, the handshake is next; bytes
       * the origin sent after the answer (an h2c server's SETTINGS,
       * which it sends unasked) are left in t->reply, to be taken
       * before the socket is read */
#define HB_TUNNEL_WAIT 1 /* wait for s->wants, then step again */
#define HB_TUNNEL_REFUSED                                                                          \
    2 /* the proxy answered otherwise: its whole answer is in
                             * t->reply, its head parsed in t->head */

/* Writes the CONNECT and reads the answer over s's socket itself (plain
 * TCP, whatever s's transport). Returns HB_TUNNEL_*, or -1 with errno: the
 * socket's error, ECONNRESET when the proxy closed before answering whole,
 * or EPROTO when the answer is not HTTP or too long (hb_tunnel_error says
 * which). */
int hb_tunnel_step(hb_tunnel *t, hb_sock *s);

/* After -1 with EPROTO: what was wrong with the proxy's answer. */
const char *hb_tunnel_error(const hb_tunnel *t);

/* Frees what t holds; t may be begun again. */
void hb_tunnel_free(hb_tunnel *t);

#endif
