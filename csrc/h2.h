/* h2.h: hb_h2_*, the client's side of HTTP/2 (RFC 9113) on libnghttp2's
 * session, for Connection and the timing loop alike.
 *
 * The session never touches a socket: bytes read go in (hb_h2_input),
 * frames to write come out into the caller's buffer (hb_h2_output), and
 * what happens to each stream comes back through the owner's hooks, with
 * the pointer the stream was submitted with. The caller reads and writes
 * through its own transport (plain TCP, TLS, a tunnel), blocking or not.
 *
 * A request is converted once from the HTTP/1.1 bytes every other part of
 * httpbench builds (hb_h2_req_from_http1): the same checks and the same
 * fields, as h2 carries them (RFC 9113 section 8.3.1: pseudo-fields first,
 * names lowercased, the connection-specific fields of section 8.2.2 left
 * out). A run converts each variant before it starts, so a stream costs a
 * submit and a copy of its body, no parsing.
 *
 * Coded to libnghttp2 1.52's API (mem_recv, mem_send, submit_request);
 * the calls 1.60 deprecated in favour of their `*2` forms are chosen by
 * NGHTTP2_VERSION_NUM in h2ver.h, so a newer library's deprecation
 * warnings cannot fail a -Werror build. Only 1.52 is tested here.
 */
#ifndef HB_H2_H
#define HB_H2_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

/* The connection preface's first bytes (RFC 9113 section 3.4). */
#define HB_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define HB_H2_PREFACE_LEN 24

/* RFC 9113 section 7's error codes this code names. */
#define HB_H2_NO_ERROR 0x0
#define HB_H2_PROTOCOL_ERROR 0x1
#define HB_H2_REFUSED_STREAM 0x7
#define HB_H2_CANCEL 0x8
#define HB_H2_COMPRESSION_ERROR 0x9
#define HB_H2_ENHANCE_YOUR_CALM 0xb

/* The most streams one connection may carry at once, as asked (h2load
 * takes any; a server allows far fewer, nginx 128, nghttpd 100). */
#define HB_H2_MAX_STREAMS 10000
/* The widest window a receiver may open (RFC 9113 section 6.9.1). */
#define HB_H2_MAX_WINDOW 2147483647u

/* A request as HTTP/2 sends it: its fields (pseudo-fields first) and its
 * body, pointing into one allocation (store) and into the bytes it was
 * converted from (the body), which must outlive it. */
typedef struct {
    void *nva; /* nghttp2_nv[nnv] */
    size_t nnv;
    const char *body; /* NULL: none */
    size_t body_len;
    int head; /* HEAD: the response has no body */
    char *store;
} hb_h2_req;

/* Converts the HTTP/1.1 request in req[0..len) (a whole request, as
 * hb_req_build makes it, body included) for a server reached by `scheme`
 * ("http" or "https"). Host becomes :authority; an absolute-form target
 * becomes its path. Returns 0, -1 with err naming what cannot be sent
 * (no head, a body that is not all there, a chunked body), or -2 when
 * memory ran out. out owns what it holds: hb_h2_req_free. */
int hb_h2_req_from_http1(hb_h2_req *out, const char *req, size_t len, const char *scheme, char *err,
                         size_t errlen);

/* Frees what out holds; a zeroed or freed one is fine. */
void hb_h2_req_free(hb_h2_req *out);

/* How a stream ended (the `closed` hook's `how`). */
enum {
    HB_H2_DONE = 0, /* its response is whole (END_STREAM came; a RST_STREAM after it
                     * changes nothing, RFC 9113 section 8.1) */
    HB_H2_RESET,    /* the server reset it (RST_STREAM), with its code */
    HB_H2_REFUSED,  /* RST_STREAM REFUSED_STREAM: not processed, may go again
                     * (RFC 9113 section 8.7) */
    HB_H2_UNSENT,   /* above a GOAWAY's last stream: not processed, may go again
                     * on another connection (section 6.8) */
    HB_H2_BROKEN    /* its response broke HTTP's rules (a bad field, a length
                     * unlike its DATA, a header list over the limit): the
                     * session reset it, hb_h2_error says why */
};

/* What the session tells its owner; stream is the pointer the stream was
 * submitted with. Called from inside hb_h2_input and hb_h2_output, never
 * for a cancelled stream. A hook may submit and cancel streams; it must
 * not free the session. */
typedef struct {
    /* A final response head began (status 200..599); 1xx heads are
     * skipped, and a :status outside 100..599 breaks the stream (BROKEN,
     * "invalid status code", as hb_parse_status_code says). Optional: NULL. */
    void (*head)(void *owner, void *stream, int status);
    /* One field of the final head, as decoded (pseudo-fields included),
     * or of the trailers after the body (trailer 1; RFC 9113 section
     * 8.1: a HEADERS block after the final head's, ending the stream).
     * Optional. */
    void (*field)(void *owner, void *stream, const char *name, size_t nlen, const char *value,
                  size_t vlen, int trailer);
    /* Body bytes, as they come. Optional. */
    void (*data)(void *owner, void *stream, const char *p, size_t n);
    /* The stream is over (HB_H2_*; code: RST_STREAM's or GOAWAY's error
     * code, else 0). Required. */
    void (*closed)(void *owner, void *stream, int how, uint32_t code);
} hb_h2_hooks;

typedef struct {
    /* The window the client gives each stream and the connection: 0 opens
     * both wide (HB_H2_MAX_WINDOW, as h2load does), else that many bytes
     * (at least 1: a peer's DATA then waits for WINDOW_UPDATEs). */
    uint32_t window;
    /* The header list a response head may decode to (RFC 9113 section
     * 6.5.2, sizes as section 4.3.1 of RFC 7541 counts them), and its most
     * fields; over either the stream is BROKEN. */
    uint32_t max_header_list;
    uint32_t max_fields;
} hb_h2_config;

typedef struct hb_h2 hb_h2;
/* One stream, as its submitter holds it (for hb_h2_cancel). */
typedef struct hb_h2_stream hb_h2_stream;

/* Figures of a session, kept as it runs. */
typedef struct {
    uint64_t header_bytes_wire;    /* response heads' header blocks received (h2load's
                                    * "headers": no padding, priority or trailers) */
    uint64_t header_bytes_decoded; /* the fields they decoded to, name and value */
    uint64_t frames_in;            /* frames received */
    uint64_t resets;               /* RST_STREAM received */
    uint32_t goaway_code;          /* the GOAWAY received, once goaway is set: */
    int32_t goaway_last;           /* its last stream id */
    int goaway;                    /* a GOAWAY came: no new streams */
    int settings;                  /* the server's first SETTINGS came */
    int streams_limited;           /* they set SETTINGS_MAX_CONCURRENT_STREAMS (absent:
                                    * no limit, RFC 9113 section 6.5.2) */
    uint32_t sending;              /* open streams whose request body is not all in the
                                    * output yet (the server's window holds it back) */
} hb_h2_stats;

/* A new client session: the preface and SETTINGS (no push, the windows
 * and limits of cfg) wait in its output. Returns NULL when memory ran out. */
hb_h2 *hb_h2_new(const hb_h2_config *cfg, const hb_h2_hooks *hooks, void *owner);

/* Frees h (NULL is fine). No hook is called: streams still open are the
 * caller's to count. */
void hb_h2_free(hb_h2 *h);

/* Submits req (which must outlive the stream) on a new stream whose hooks
 * carry `stream`. Returns the stream's handle, with its id in *id, or
 * NULL with errno: EAGAIN when no stream may be opened now (a GOAWAY
 * came, or the ids ran out), ENOMEM. The handle is valid until the
 * stream's `closed` hook, or its hb_h2_cancel. */
hb_h2_stream *hb_h2_submit(hb_h2 *h, const hb_h2_req *req, void *stream, int32_t *id);

/* Resets the stream (RST_STREAM CANCEL) and forgets its pointer: no hook
 * mentions it again. */
void hb_h2_cancel(hb_h2 *h, hb_h2_stream *st);

/* Takes n bytes read from the server. Returns 0, or -1 when the
 * connection is broken (hb_h2_error says why: a frame or an HPACK block
 * that breaks the protocol, an HTTP/1.x answer to the preface): the
 * streams still open have had no `closed` hook and never will. */
int hb_h2_input(hb_h2 *h, const char *p, size_t n);

/* Appends what the session has to send to out. Returns 0, or -1 when
 * memory ran out or the session broke (hb_h2_error). */
int hb_h2_output(hb_h2 *h, hb_buf *out);

/* Whether a new stream may open now: the session is alive, no GOAWAY
 * came, and fewer than the server's SETTINGS_MAX_CONCURRENT_STREAMS are
 * open. */
int hb_h2_can_submit(const hb_h2 *h);

/* Streams open now (submitted, not yet closed). */
int hb_h2_open_streams(const hb_h2 *h);

/* The server's SETTINGS_MAX_CONCURRENT_STREAMS; 1 until its SETTINGS
 * come (h2.c says why); 2^32-1 when they set none (stats' streams_limited
 * tells that apart). */
uint32_t hb_h2_streams_allowed(const hb_h2 *h);

/* Whether the session is over: broken, or nothing left to read or write
 * after a GOAWAY (or after one it sent). */
int hb_h2_done(const hb_h2 *h);

/* The figures so far. */
const hb_h2_stats *hb_h2_stats_of(const hb_h2 *h);

/* Why the session broke, or why the last BROKEN stream was reset (empty
 * when neither). */
const char *hb_h2_error(const hb_h2 *h);

/* An error code's name (RFC 9113 section 7: "PROTOCOL_ERROR"), or
 * "unknown". */
const char *hb_h2_code_name(uint32_t code);

/* The CONTINUATION frames a header block may take on the client's
 * sessions, as built (h2ver.h): HB_H2_MAX_CONTINUATIONS where the limit
 * was set, else the loaded library's own: 8 where it has the option
 * (nghttp2's documented default), 0 where it has none (no limit). */
int hb_h2_continuations(void);

/* libnghttp2's version as it names itself ("1.52.0"). */
const char *hb_h2_library(void);

#endif
