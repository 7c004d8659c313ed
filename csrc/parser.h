/* parser.h: hb_parse_*, HTTP/1.1 message heads and body framing (RFC 9112).
 *
 * The parsers never allocate and never copy: they report offsets and lengths
 * into the caller's buffer, and a status. State structs start zeroed; feed a
 * parser the same buffer again with more bytes appended and it resumes where
 * it stopped, so a head split over any number of reads costs one pass.
 */
#ifndef HB_PARSER_H
#define HB_PARSER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Statuses every parser returns. */
#define HB_PARSE_DONE 0     /* the element is complete */
#define HB_PARSE_MORE 1     /* everything given was used; need more bytes */
#define HB_PARSE_ERROR (-1) /* bad input; `error` names the defect */

/* Limits, as the trusted clients and servers enforce them. */
#define HB_MAX_LINE 8192       /* start line or one field line, without CRLF */
#define HB_MAX_HEAD 65536      /* whole header (or trailer) section, with CRLFs */
#define HB_MAX_HEADERS 100     /* field lines in a section */
#define HB_MAX_CHUNK_DIGITS 16 /* hex digits in a chunk size */

/* One field line; offsets are from the start of the message. */
typedef struct {
    uint32_t name_off, name_len;
    uint32_t value_off, value_len; /* OWS trimmed; may hold obs-fold CRLFs */
} hb_header;

/* How the body that follows a head is delimited (RFC 9112 section 6.3). */
typedef enum {
    HB_BODY_NONE = 0, /* no body: HEAD, 1xx, 204, 304 */
    HB_BODY_LENGTH,   /* content_length bytes */
    HB_BODY_CHUNKED,  /* chunked transfer coding: see hb_parse_chunked */
    HB_BODY_CLOSE,    /* everything until the peer closes */
} hb_body_kind;

/* Incremental search for the end of a head, with the line limits. */
typedef struct {
    size_t scanned;    /* bytes already searched */
    size_t line_start; /* offset of the line being searched */
    unsigned lines;    /* complete lines so far */
} hb_head_scan;

typedef struct {
    hb_head_scan scan;
    /* Valid after HB_PARSE_DONE: */
    size_t head_len;   /* bytes of the head, final CRLF included */
    int minor_version; /* HTTP/1.x */
    int status;        /* 100..599 */
    uint32_t reason_off, reason_len;
    unsigned num_headers;
    unsigned folded : 1;     /* some value holds obs-fold (CRLF + WS) */
    unsigned keep_alive : 1; /* the connection may carry another request */
    /* The server closes after this response: it said so (Connection:
     * close; HTTP/1.0 without keep-alive) or its body runs to the close.
     * keep_alive 0 without it is the client's own choice (both
     * Content-Length and Transfer-Encoding): the server may keep the
     * socket open, and no FIN is owed. */
    unsigned server_closes : 1;
    hb_body_kind body;
    uint64_t content_length; /* for HB_BODY_LENGTH */
    /* Valid after HB_PARSE_ERROR: a static string naming the defect. */
    const char *error;
    hb_header headers[HB_MAX_HEADERS]; /* the first num_headers are set */
} hb_response;

/* Readies r for a new head without touching the header array, which the
 * parser fills before it is read. */
#define hb_response_reset(r) memset((r), 0, offsetof(hb_response, headers))

/* A status code (RFC 9110 section 15: three digits, 100 to 599) from the
 * n bytes at p, as HTTP/1.1's status line and HTTP/2's :status carry it.
 * Returns it, or -1 when the bytes are not one. */
int hb_parse_status_code(const char *p, size_t n);

/* Flags for hb_parse_response. */
#define HB_PARSE_HEAD_REQUEST 1 /* the request was HEAD: no body follows */

/* Parses a response head from buf[0..len). r must start reset and be
 * passed again, unchanged, with the same bytes plus more, after
 * HB_PARSE_MORE. On HB_PARSE_DONE the head is buf[0..r->head_len) and the
 * fields above describe it and its body framing; on HB_PARSE_ERROR
 * r->error names the defect. Interim (1xx) responses are returned like any
 * other with body HB_BODY_NONE: skipping them is the caller's choice. */
int hb_parse_response(hb_response *r, const char *buf, size_t len, int flags);

/* A request head, as a server reads it. */
typedef struct {
    hb_head_scan scan;
    /* Valid after HB_PARSE_DONE: */
    size_t head_len;
    uint32_t method_len; /* the method starts the head */
    uint32_t target_off, target_len;
    int minor_version;
    unsigned num_headers;
    unsigned keep_alive : 1;      /* the client allows another request */
    unsigned expect_continue : 1; /* Expect: 100-continue */
    hb_body_kind body;            /* NONE, LENGTH or CHUNKED */
    uint64_t content_length;
    /* Valid after HB_PARSE_ERROR: the defect, and the status to answer it
     * with: 400, 414 (request line too long), 431 (header fields too large
     * or too many), 501 (unknown transfer coding) or 505 (not HTTP/1). */
    const char *error;
    int status;
    hb_header headers[HB_MAX_HEADERS];
} hb_request;

#define hb_request_reset(r) memset((r), 0, offsetof(hb_request, headers))

/* Parses a request head from buf[0..len), as hb_parse_response does a
 * response: r starts reset and is passed again unchanged with more bytes
 * after HB_PARSE_MORE. Stricter than the response parser, as a server must
 * be (RFC 9112 sections 3, 5.2, 6.1 and 6.3): no obs-fold, exactly one Host
 * in HTTP/1.1, no Content-Length beside Transfer-Encoding, chunked the one
 * and final coding. */
int hb_parse_request(hb_request *r, const char *buf, size_t len);

/* A request target in absolute form (RFC 9112 section 3.2.2): "http://"
 * or "https://" (the scheme in any case), an authority, then
 * path-abempty and any query. */
typedef struct {
    int https;
    size_t auth_off, auth_len; /* the authority: t[auth_off .. auth_off + auth_len) */
    size_t path_off;           /* the path and query: t[path_off .. n), empty, or "?..." */
} hb_target_abs;

/* Splits t[0..n) when it is an http or https absolute-form: 1 with *a
 * filled, else 0 (origin-form, authority-form, "*", another scheme). The
 * relay's forwarding and the router's origin both read targets so. */
int hb_parse_absolute_form(const char *t, size_t n, hb_target_abs *a);

/* Chunked transfer coding decoder (RFC 9112 section 7.1). */
typedef struct {
    int state;
    unsigned digits;    /* hex digits of the current chunk size */
    size_t line_len;    /* bytes in the current chunk or trailer line */
    size_t trailer_len; /* bytes of the trailer section */
    unsigned trailers;  /* trailer field lines */
    uint64_t remaining; /* chunk size, then data bytes still to come */
    const char *error;
} hb_chunked;

/* Decodes the chunked body in buf[0..len), resuming from c's state (which
 * starts zeroed). Sets *used to the bytes consumed (framing and data alike;
 * they need not be passed again) and reports the body bytes among them as
 * one run buf[*data_off .. *data_off + *data_len), which ends at *used.
 * Returns HB_PARSE_DONE after the last chunk and the trailer section,
 * HB_PARSE_MORE when called for again (with the rest of buf, or with more
 * bytes when *used == len), or HB_PARSE_ERROR with c->error set. Chunk
 * extensions and trailer fields are checked and skipped. */
int hb_parse_chunked(hb_chunked *c, const char *buf, size_t len, size_t *used, size_t *data_off,
                     size_t *data_len);

/* One message body's framing (RFC 9112 section 6.3), chosen once from its
 * head: the one decoder the client, the loop, the server and the C tests
 * share, so a limit or a rule about trailers is written once. Starts with
 * hb_body_init. */
typedef struct {
    hb_body_kind kind;
    uint64_t left;     /* HB_BODY_LENGTH: bytes still to come */
    uint64_t got;      /* data bytes so far (framing excluded) */
    hb_chunked ck;     /* HB_BODY_CHUNKED */
    const char *error; /* after HB_PARSE_ERROR: the defect */
} hb_body;

/* Readies b for a body of `kind`; length is the Content-Length for
 * HB_BODY_LENGTH and ignored otherwise. */
void hb_body_init(hb_body *b, hb_body_kind kind, uint64_t length);

/* Decodes body bytes from buf[0..len), as hb_parse_chunked does: *used bytes
 * consumed (framing and data alike), the data among them one run
 * buf[*data_off .. *data_off + *data_len) ending at *used. Returns
 * HB_PARSE_DONE once the body is complete (bytes past *used are not the
 * body's: the next message, or surplus), HB_PARSE_MORE when called for
 * again (with the rest of buf when *used < len, else with more bytes), or
 * HB_PARSE_ERROR with b->error set. A body with no bytes to come (none, or
 * a Content-Length of 0) is DONE at once, even for len 0. A body read
 * until close is never DONE here: see hb_body_end. */
int hb_body_feed(hb_body *b, const char *buf, size_t len, size_t *used, size_t *data_off,
                 size_t *data_len);

/* The stream ended. Returns HB_PARSE_DONE when that completes the body (read
 * until close, or already complete), else HB_PARSE_ERROR with b->error. */
int hb_body_end(hb_body *b);

/* The error hb_parse_response gives when the answer's first bytes cannot
 * begin "HTTP/" (compare the pointer); a caller names what came with
 * hb_parse_excerpt. */
extern const char hb_parse_not_http[];

/* Writes the first bytes of buf (at most 24) into out as printable text,
 * others as \xNN, NUL-terminated within outlen. */
void hb_parse_excerpt(const char *buf, size_t len, char *out, size_t outlen);

/* Nonzero for the bytes of a token, tchar (RFC 9110 section 5.6.2). */
extern const unsigned char hb_tchar[256];

/* Case-insensitive comparison of an ASCII name against a lower-case one. */
int hb_name_is(const char *name, size_t len, const char *lower, size_t lower_len);

#endif
