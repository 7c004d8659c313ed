/* h2srv.h: hb_h2s_*, the embedded server's side of HTTP/2 (RFC 9113) on
 * libnghttp2's server session.
 *
 * A session (session.c) hands a connection here once it is HTTP/2: the
 * preface on a plain port (prior knowledge), or h2 chosen by ALPN over TLS.
 * Bytes read go in (hb_h2s_input); frames to write come out into the
 * session's buffer (hb_h2s_output); the session does the socket calls, the
 * deadlines and the waits, as for HTTP/1.1. Each stream is routed as an
 * HTTP/1.1 request is (route.h): the same endpoints, bodies in DATA frames,
 * a /delay that holds its own stream and no other.
 *
 * Bounded against the known attacks, counted here, not left to the
 * library (Debian's 1.52 has its own flood options only as security
 * backports): a connection that sends more than HB_H2S_FLOOD RST_STREAM,
 * PING, SETTINGS, SETTINGS ACK, PRIORITY, empty DATA (padding aside:
 * CVE-2019-9518) or extension frames in a second (rapid reset,
 * CVE-2023-44487, and its cousins), or WINDOW_UPDATEs past it beyond
 * HB_H2S_UPDATES_PER_DATA for each DATA frame sent, or a header block of more than
 * HB_MAX_HEAD bytes or HB_H2_MAX_CONTINUATIONS CONTINUATION frames (the
 * CVE-2024-27316 family), gets GOAWAY ENHANCE_YOUR_CALM and is closed; a
 * header list that decodes past HB_MAX_HEAD bytes or HB_MAX_HEADERS fields
 * (an HPACK bomb) is answered 431 without being kept; streams beyond the
 * server's SETTINGS_MAX_CONCURRENT_STREAMS are refused (RST_STREAM); a bad
 * HPACK block is a COMPRESSION_ERROR. Request bodies kept (/echo) count in
 * the server-wide budget as over HTTP/1.1. A response that goes before its
 * request is all in ends with RST_STREAM(NO_ERROR) (RFC 9113 section 8.1).
 * The deadlines (hb_h2s_waits) run from a stream's frames, never from
 * control frames: a client that PINGs is no less idle.
 */
#ifndef HB_H2SRV_H
#define HB_H2SRV_H

#include "buf.h"
#include "srvshare.h"

#include <stddef.h>
#include <stdint.h>

/* Frames of one kind a connection may send in a second before it is told
 * to calm down (GOAWAY ENHANCE_YOUR_CALM). */
#define HB_H2S_FLOOD 100
/* WINDOW_UPDATEs a connection may send in a second for each DATA frame
 * the server sent it then, beyond HB_H2S_FLOOD: one for the connection
 * and one for the stream, and as many again. */
#define HB_H2S_UPDATES_PER_DATA 4

typedef struct hb_h2s hb_h2s;

/* A server session for a connection of sh's server: its SETTINGS (the
 * streams allowed, the header list's limit, no push) wait in its output.
 * Returns NULL when memory ran out. */
hb_h2s *hb_h2s_new(hb_srv_shared *sh);

/* Frees h (NULL is fine), every stream's hold on the body budget too. */
void hb_h2s_free(hb_h2s *h);

/* Takes n bytes from the client at now. Returns 0, or -1 when the
 * connection is to end: what hb_h2s_output then gives (a GOAWAY saying
 * why) is the last to send before the close. */
int hb_h2s_input(hb_h2s *h, const char *p, size_t n, int64_t now);

/* Appends what is due at now to out: responses whose delay is over, then
 * frames until out has grown by about `budget` bytes (so a client that
 * does not read holds no more than that). Returns 0, or -1 when memory
 * ran out. */
int hb_h2s_output(hb_h2s *h, hb_buf *out, size_t budget, int64_t now);

/* Whether the session still has frames to send (beyond what output gave:
 * its budget ran out, or DATA waits on a window). */
int hb_h2s_want_write(const hb_h2s *h);

/* When the next delayed response is due; 0 when none waits. */
int64_t hb_h2s_wake(const hb_h2s *h);

/* What the connection waits for from the client, each since when (0: not
 * waited for), for the session's deadlines; control frames (PING,
 * WINDOW_UPDATE, SETTINGS) move none of them. */
typedef struct {
    int64_t request; /* a request not whole: its first frame, or its body's last
                      * bytes (the header timeout's, as HTTP/1.1's head and body) */
    int64_t window;  /* responses held back by the client's windows: the last DATA
                      * they let go (the send timeout's) */
    int64_t idle;    /* no stream waiting on the client or a /delay: when the last
                      * stream closed (the idle timeout's) */
} hb_h2s_wait;

/* Fills w for now (all 0: only /delay streams wait; hb_h2s_wake). */
void hb_h2s_waits(const hb_h2s *h, hb_h2s_wait *w);

/* Whether the session is over: nothing to read or write (after a GOAWAY,
 * either side's). */
int hb_h2s_done(const hb_h2s *h);

#endif
