/* test_parser.c: the response parser and chunked decoder, every case fed
 * whole, byte by byte, in 7-byte pieces and split once at every offset.
 *
 *   cc -O1 -g -Wall -Wextra -o test_parser tests/c/test_parser.c csrc/parser.c
 *   ./test_parser          prints "N passed, N failed"
 */
#include "harness.h"

#include <stdlib.h>

typedef struct {
    const char *name;
    const char *input;
    size_t len; /* 0: strlen(input) */
    int flags;
    int rc;
    const char *error; /* for HB_PARSE_ERROR */
    int status;
    hb_body_kind body;
    const char *body_bytes;
    int keep_alive;
    unsigned num_headers;
} parser_case;

#define OK(name, in, status, kind, bytes, ka, nh)                                                  \
    {                                                                                              \
        name, in, 0, 0, HB_PARSE_DONE, NULL, status, kind, bytes, ka, nh                           \
    }
#define BAD(name, in, why)                                                                         \
    {                                                                                              \
        name, in, 0, 0, HB_PARSE_ERROR, why, 0, 0, NULL, 0, 0                                      \
    }
/* For inputs with a NUL: the length is the literal's. */
#define BADN(name, in, why)                                                                        \
    {                                                                                              \
        name, in, sizeof(in) - 1, 0, HB_PARSE_ERROR, why, 0, 0, NULL, 0, 0                         \
    }

static const parser_case cases[] = {
    OK("content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, HB_BODY_LENGTH,
       "hello", 1, 1),
    OK("no reason phrase", "HTTP/1.1 204\r\n\r\n", 204, HB_BODY_NONE, "", 1, 0),
    OK("empty reason phrase", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", 200, HB_BODY_LENGTH, "",
       1, 1),
    OK("chunked with extensions and trailers",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5;a=b\r\nhello\r\n6 ; x=\"y\"\r\n world\r\n0\r\nX-Trailer: 1\r\nY: two\r\n\r\n",
       200, HB_BODY_CHUNKED, "hello world", 1, 1),
    OK("chunked upper-case hex",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
       "A\r\n0123456789\r\n0\r\n\r\n",
       200, HB_BODY_CHUNKED, "0123456789", 1, 1),
    OK("chunked leading zeros",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
       "0000000000000003\r\nabc\r\n0\r\n\r\n",
       200, HB_BODY_CHUNKED, "abc", 1, 1),
    OK("read until close", "HTTP/1.1 200 OK\r\n\r\nuntil the end", 200, HB_BODY_CLOSE,
       "until the end", 0, 0),
    OK("HTTP/1.0 closes by default", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", 200,
       HB_BODY_LENGTH, "hi", 0, 1),
    OK("HTTP/1.0 keep-alive",
       "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi", 200,
       HB_BODY_LENGTH, "hi", 1, 2),
    OK("Connection: close",
       "HTTP/1.1 200 OK\r\nConnection: foo, close\r\nContent-Length: 2\r\n\r\nhi", 200,
       HB_BODY_LENGTH, "hi", 0, 2),
    {"HEAD response", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 0, HB_PARSE_HEAD_REQUEST,
     HB_PARSE_DONE, NULL, 200, HB_BODY_NONE, "", 1, 1},
    OK("304 has no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", 304,
       HB_BODY_NONE, "", 1, 1),
    OK("interim 100", "HTTP/1.1 100 Continue\r\n\r\n", 100, HB_BODY_NONE, "", 1, 0),
    OK("chunked wins over Content-Length",
       "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
       "2\r\nok\r\n0\r\n\r\n",
       200, HB_BODY_CHUNKED, "ok", 0, 2),
    OK("gzip then chunked",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
       "1\r\nz\r\n0\r\n\r\n",
       200, HB_BODY_CHUNKED, "z", 1, 1),
    OK("coding without chunked runs to close",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz", 200, HB_BODY_CLOSE, "zz", 0, 1),
    OK("coding with parameters before chunked",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: x-zip ; level=\"9 \\\"best\\\"\" , chunked\r\n\r\n"
       "1\r\nz\r\n0\r\n\r\n",
       200, HB_BODY_CHUNKED, "z", 1, 1),
    OK("repeated equal Content-Length",
       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2, 2\r\n\r\nhi", 200,
       HB_BODY_LENGTH, "hi", 1, 2),
    OK("obs-fold", "HTTP/1.1 200 OK\r\nX-Long: a\r\n  b\r\n\tc\r\nContent-Length: 0\r\n\r\n", 200,
       HB_BODY_LENGTH, "", 1, 2),
    OK("bare LF ends every line", "HTTP/1.1 200 OK\nContent-Length: 2\nX: y\n\nok", 200,
       HB_BODY_LENGTH, "ok", 1, 2),
    OK("bare LF and CRLF mixed", "HTTP/1.1 200 OK\r\nContent-Length: 2\nX: y\r\n\nok", 200,
       HB_BODY_LENGTH, "ok", 1, 2),
    OK("bare LF obs-fold", "HTTP/1.1 200 OK\nX: a\n b\nContent-Length: 0\n\n", 200, HB_BODY_LENGTH,
       "", 1, 2),
    OK("empty value and OWS",
       "HTTP/1.1 200 OK\r\nX-Empty:\r\nX-Pad: \t v \t\r\nContent-Length:  1 \r\n\r\nx", 200,
       HB_BODY_LENGTH, "x", 1, 3),
    OK("obs-text in value", "HTTP/1.1 200 OK\r\nX: caf\xe9\r\nContent-Length: 0\r\n\r\n", 200,
       HB_BODY_LENGTH, "", 1, 2),
    OK("HTTP/1.2 is read as 1.x", "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n", 200,
       HB_BODY_LENGTH, "", 1, 1),

    /* RFC 9112 section 2.2: a recipient may take a bare LF as a line's end;
     * a response head is read so (curl and http.client do), chunk lines stay
     * strict. */
    BAD("not HTTP", "SSH-2.0-OpenSSH_9.2\r\n", "the server's answer does not begin with HTTP/"),
    BAD("TLS", "\x16\x03\x01\x00",
        "the server answered with TLS (a 0x16 handshake record): is the URL https?"),
    BAD("a TLS alert", "\x15\x03\x03\x00\x02\x02\x46",
        "the server answered with TLS (a 0x15 alert record): is the URL https?"),
    BAD("an empty line first", "\r\nHTTP/1.1 200 OK\r\n\r\n",
        "the server's answer does not begin with HTTP/"),
    BAD("HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", "unsupported HTTP version"),
    BAD("HTTP/1.x", "HTTP/1.x 200 OK\r\n\r\n", "invalid HTTP version"),
    BAD("HTTX", "HTTX/1.1 200 OK\r\n\r\n", "the server's answer does not begin with HTTP/"),
    BAD("short status line", "HTTP/1.1 20\r\n\r\n", "invalid status line"),
    BAD("two-digit status", "HTTP/1.1 20 OK\r\n\r\n", "invalid status code"),
    BAD("status 099", "HTTP/1.1 099 Low\r\n\r\n", "invalid status code"),
    BAD("status 600", "HTTP/1.1 600 High\r\n\r\n", "invalid status code"),
    BAD("four-digit status", "HTTP/1.1 2000 OK\r\n\r\n", "invalid status code"),
    BAD("double space", "HTTP/1.1  200 OK\r\n\r\n", "invalid status code"),
    BAD("empty status line", "\r\n\r\n", "the server's answer does not begin with HTTP/"),
    BAD("control in reason", "HTTP/1.1 200 O\x01K\r\n\r\n", "invalid character in reason phrase"),
    BAD("bare CR in reason", "HTTP/1.1 200 O\rK\r\n\r\n", "bare CR in reason phrase"),
    BADN("NUL in reason", "HTTP/1.1 200 O\0K\r\n\r\n", "NUL in reason phrase"),
    BADN("NUL in header value", "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", "NUL in header value"),
    BADN("NUL in header name", "HTTP/1.1 200 OK\r\nX\0: ab\r\n\r\n", "NUL in header name"),
    BADN("NUL in chunk extension",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;\0\r\nx\r\n0\r\n\r\n",
         "NUL in chunk extension"),
    BADN("NUL in trailer value",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: \0\r\n\r\n",
         "NUL in trailer field value"),
    BAD("bare CR in header value", "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "bare CR in header value"),
    BAD("control in header value", "HTTP/1.1 200 OK\r\nX: a\x7f\r\n\r\n",
        "invalid character in header value"),
    BAD("space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
        "whitespace before colon in header field"),
    BAD("tab before colon", "HTTP/1.1 200 OK\r\nX\t: y\r\n\r\n",
        "whitespace before colon in header field"),
    BAD("no colon", "HTTP/1.1 200 OK\r\nNoColonHere\r\n\r\n", "header line without colon"),
    BAD("empty name", "HTTP/1.1 200 OK\r\n: v\r\n\r\n", "empty header name"),
    BAD("bad name character", "HTTP/1.1 200 OK\r\nX(y): v\r\n\r\n",
        "invalid character in header name"),
    BAD("whitespace before first field", "HTTP/1.1 200 OK\r\n X: y\r\n\r\n",
        "whitespace before the first header field"),
    BAD("conflicting Content-Length",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "conflicting Content-Length values"),
    BAD("conflicting Content-Length list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello!",
        "conflicting Content-Length values"),
    BAD("Content-Length with letters", "HTTP/1.1 200 OK\r\nContent-Length: 5a\r\n\r\n",
        "invalid Content-Length value"),
    BAD("negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "invalid Content-Length value"),
    BAD("Content-Length with sign", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
        "invalid Content-Length value"),
    BAD("empty Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        "invalid Content-Length value"),
    BAD("huge Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "Content-Length value too large"),
    BAD("chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "chunked transfer coding applied more than once"),
    BAD("chunked twice over two lines",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "chunked transfer coding applied more than once"),
    /* RFC 9112 section 6.1: a coding is a token with parameters; chunked
     * has none. Anything else is refused, never read as chunked. */
    BAD("chunked with a parameter", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;q=1\r\n\r\n",
        "chunked transfer coding with parameters"),
    BAD("chunked then junk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked foo\r\n\r\n",
        "invalid Transfer-Encoding"),
    BAD("coding not a token", "HTTP/1.1 200 OK\r\nTransfer-Encoding: \"chunked\"\r\n\r\n",
        "invalid Transfer-Encoding"),
    BAD("parameter without value", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip;q, chunked\r\n\r\n",
        "invalid Transfer-Encoding"),
    BAD("unterminated quoted parameter", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip;a=\"b\r\n\r\n",
        "invalid Transfer-Encoding"),
#define CHUNKED "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    BAD("chunk size not hex", CHUNKED "zz\r\n", "invalid chunk size"),
    BAD("chunk size then junk", CHUNKED "5x\r\nhello\r\n0\r\n\r\n", "invalid chunk size"),
    BAD("chunk size missing", CHUNKED "\r\nhello", "invalid chunk size"),
    BAD("negative chunk size", CHUNKED "-5\r\nhello", "invalid chunk size"),
    BAD("chunk line bare LF", CHUNKED "5\nhello\r\n0\r\n\r\n", "bare LF in chunk line"),
    BAD("chunk extension bare LF", CHUNKED "5;x\nhello\r\n0\r\n\r\n", "bare LF in chunk line"),
    BAD("chunk line bare CR", CHUNKED "5\rhello\r\n0\r\n\r\n", "bare CR in chunk line"),
    BAD("17 hex digits", CHUNKED "00000000000000001\r\nx\r\n0\r\n\r\n",
        "chunk size has more than 16 hex digits"),
    BAD("chunk data too long", CHUNKED "5\r\nhello!\r\n0\r\n\r\n",
        "chunk data not followed by CRLF"),
    BAD("chunk data then bare LF", CHUNKED "5\r\nhello\n0\r\n\r\n",
        "chunk data not followed by CRLF"),
    BAD("chunk data then CR junk", CHUNKED "5\r\nhello\rX0\r\n\r\n",
        "chunk data not followed by CRLF"),
    BAD("control in chunk extension", CHUNKED "5;\x01\r\nhello\r\n0\r\n\r\n",
        "invalid character in chunk extension"),
    BAD("trailer without colon", CHUNKED "0\r\nNoColon\r\n\r\n", "trailer line without colon"),
    BAD("trailer space before colon", CHUNKED "0\r\nX : y\r\n\r\n",
        "whitespace before colon in trailer field"),
    BAD("trailer bare LF", CHUNKED "0\r\nX: y\n\r\n", "bare LF in trailer section"),
    BAD("final bare LF", CHUNKED "0\r\n\n", "bare LF in trailer section"),
    BAD("final bare CR", CHUNKED "0\r\n\rX", "bare CR in trailer section"),
    BAD("trailer obs-fold", CHUNKED "0\r\n x\r\n\r\n", "whitespace before the first trailer field"),
#undef CHUNKED
};

/* Cases built at run time: the limits, just inside and just past. */
static char *repeat_line(const char *prefix, size_t fill, const char *suffix)
{
    size_t pl = strlen(prefix), sl = strlen(suffix);
    char *p = malloc(pl + fill + sl + 1);
    memcpy(p, prefix, pl);
    memset(p + pl, 'a', fill);
    memcpy(p + pl + fill, suffix, sl + 1);
    return p;
}

static char *many_headers(unsigned n, size_t value_len)
{
    size_t line = 4 + value_len + 2; /* "Xn: " is padded to 4 with the name */
    char *p = malloc(32 + n * (line + 8) + 64), *w = p;
    w += sprintf(w, "HTTP/1.1 200 OK\r\n");
    for (unsigned i = 0; i < n; i++) {
        w += sprintf(w, "H%u: ", i);
        memset(w, 'v', value_len);
        w += value_len;
        w += sprintf(w, "\r\n");
    }
    sprintf(w, "Content-Length: 0\r\n\r\n");
    return p;
}

static int passed, failed;

static void check_one(const char *name, const char *input, size_t len, int flags, int rc,
                      const char *error, int status, hb_body_kind body, const char *bytes,
                      int keep_alive, unsigned num_headers)
{
    summary whole, other;
    char label[256];
    int ok = 1;

    run_parser(&whole, input, len, flags, 0, 0);
    if (whole.rc != rc) {
        fprintf(stderr, "%s: rc %d, expected %d (error: %s)\n", name, whole.rc, rc,
                whole.error ? whole.error : "none");
        ok = 0;
    } else if (rc == HB_PARSE_ERROR && strcmp(whole.error, error) != 0) {
        fprintf(stderr, "%s: error \"%s\", expected \"%s\"\n", name, whole.error, error);
        ok = 0;
    } else if (rc == HB_PARSE_DONE) {
        size_t blen = strlen(bytes);
        if (whole.status != status || whole.body != body || whole.keep_alive != keep_alive ||
            whole.num_headers != num_headers || whole.body_len != blen ||
            memcmp(whole.bytes, bytes, blen) != 0) {
            fprintf(stderr,
                    "%s: got status %d body kind %d keep-alive %d headers %u body %llu bytes\n",
                    name, whole.status, whole.body, whole.keep_alive, whole.num_headers,
                    whole.body_len);
            ok = 0;
        }
    }
    snprintf(label, sizeof label, "%s (byte by byte)", name);
    run_parser(&other, input, len, flags, 1, 0);
    ok = ok && same_summary(&whole, &other, label);
    snprintf(label, sizeof label, "%s (7-byte pieces)", name);
    run_parser(&other, input, len, flags, 7, 0);
    ok = ok && same_summary(&whole, &other, label);
    for (size_t at = 1; ok && at < len; at++) {
        snprintf(label, sizeof label, "%s (split at %zu)", name, at);
        run_parser(&other, input, len, flags, 0, at);
        ok = same_summary(&whole, &other, label);
    }
    if (ok)
        passed++;
    else
        failed++;
}

/* ------------------------------------------------------------- requests */

typedef struct {
    const char *name, *input;
    int rc, status; /* status: the error's, or 0 */
    const char *error_or_target;
    hb_body_kind body;
    int keep_alive;
} request_case;

#define REQ_OK(name, in, target, body, ka)                                                         \
    {                                                                                              \
        name, in, HB_PARSE_DONE, 0, target, body, ka                                               \
    }
#define REQ_BAD(name, in, status, why)                                                             \
    {                                                                                              \
        name, in, HB_PARSE_ERROR, status, why, 0, 0                                                \
    }

static const request_case requests[] = {
    REQ_OK("simple GET", "GET /rnd?c=2048 HTTP/1.1\r\nHost: x\r\n\r\n", "/rnd?c=2048", HB_BODY_NONE,
           1),
    REQ_OK("POST with length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
           "/echo", HB_BODY_LENGTH, 1),
    REQ_OK("zero length is no body", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
           "/echo", HB_BODY_NONE, 1),
    REQ_OK("chunked", "PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
           "/echo", HB_BODY_CHUNKED, 1),
    REQ_OK("HTTP/1.0 closes", "GET / HTTP/1.0\r\n\r\n", "/", HB_BODY_NONE, 0),
    REQ_OK("HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "/",
           HB_BODY_NONE, 1),
    REQ_OK("close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "/", HB_BODY_NONE, 0),
    REQ_OK("absolute form", "GET http://x/a HTTP/1.1\r\nHost: x\r\n\r\n", "http://x/a",
           HB_BODY_NONE, 1),
    REQ_BAD("no Host", "GET / HTTP/1.1\r\n\r\n", 400, "HTTP/1.1 request without Host"),
    REQ_BAD("two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400,
            "more than one Host header field"),
    REQ_BAD("length and chunked",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            400, "both Content-Length and Transfer-Encoding"),
    REQ_BAD("gzip coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            501, "unsupported transfer coding"),
    REQ_BAD("chunked twice",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400,
            "invalid Transfer-Encoding"),
    REQ_BAD("chunked with a parameter",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400,
            "chunked transfer coding with parameters"),
    REQ_BAD("chunked then junk",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked foo\r\n\r\n", 400,
            "invalid Transfer-Encoding"),
    REQ_BAD("chunked then a bare semicolon",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked;\r\n\r\n", 400,
            "invalid Transfer-Encoding"),
    REQ_BAD("a coding with parameters, then chunked",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip;level=1, chunked\r\n\r\n", 501,
            "unsupported transfer coding"),
    REQ_BAD("TE in 1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
            "Transfer-Encoding in an HTTP/1.0 request"),
    REQ_BAD("bad length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400,
            "invalid Content-Length value"),
    REQ_BAD("conflicting lengths",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
            "conflicting Content-Length values"),
    REQ_BAD("HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "unsupported HTTP version"),
    REQ_BAD("HTTP/1.x", "GET / HTTP/1.x\r\nHost: x\r\n\r\n", 400, "invalid HTTP version"),
    REQ_BAD("no version", "GET /\r\nHost: x\r\n\r\n", 400, "invalid request target"),
    REQ_BAD("double space", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid request target"),
    REQ_BAD("bad method", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid method"),
    REQ_BAD("control in target", "GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400,
            "invalid character in request target"),
    REQ_BAD("space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400,
            "whitespace before colon in header field"),
    REQ_BAD("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400,
            "obsolete line folding in header field"),
    REQ_BAD("bare LF", "GET / HTTP/1.1\nHost: x\r\n\r\n", 400, "bare LF in header section"),
    REQ_BAD("TLS ClientHello", "\x16\x03\x01\x02\x00\x01", 400,
            "TLS (0x16) sent to a plain HTTP server: is the URL http?"),
    REQ_BAD("binary first", "\x01GET / HTTP/1.1\r\n", 400, "invalid method"),
};

static void check_request(const request_case *c, const char *input, size_t len)
{
    req_summary whole, other;
    int ok = 1;
    run_request(&whole, input, len, 0, 0);
    if (whole.rc != c->rc || whole.status != c->status) {
        fprintf(stderr, "%s: rc %d status %d (%s)\n", c->name, whole.rc, whole.status,
                whole.error ? whole.error : "no error");
        ok = 0;
    } else if (c->rc == HB_PARSE_ERROR && strcmp(whole.error, c->error_or_target) != 0) {
        fprintf(stderr, "%s: error \"%s\"\n", c->name, whole.error);
        ok = 0;
    } else if (c->rc == HB_PARSE_DONE &&
               (whole.target_len != strlen(c->error_or_target) ||
                memcmp(input + whole.target_off, c->error_or_target, whole.target_len) != 0 ||
                whole.body != c->body || whole.keep_alive != c->keep_alive)) {
        fprintf(stderr, "%s: target, body kind or keep-alive wrong\n", c->name);
        ok = 0;
    }
    run_request(&other, input, len, 1, 0);
    ok = ok && same_request(&whole, &other);
    for (size_t at = 1; ok && at < len; at++) {
        run_request(&other, input, len, 0, at);
        if (!same_request(&whole, &other)) {
            fprintf(stderr, "%s: split at %zu differs\n", c->name, at);
            ok = 0;
        }
    }
    if (ok)
        passed++;
    else
        failed++;
}

int main(void)
{
    for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++)
        check_request(&requests[i], requests[i].input, strlen(requests[i].input));
    {
        char *line = repeat_line("GET /", 8200, " HTTP/1.1\r\nHost: x\r\n\r\n");
        request_case c =
            REQ_BAD("request line over 8 KiB", line, 414, "request line longer than 8192 bytes");
        check_request(&c, line, strlen(line));
        free(line);
        char *fields = many_headers(120, 4);
        memcpy(fields, "GET /x HTTP/1.1\r\n", 17); /* as long as the status line */
        request_case d = REQ_BAD("too many fields", fields, 431, "more than 100 header fields");
        check_request(&d, fields, strlen(fields));
        free(fields);
    }

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const parser_case *c = &cases[i];
        check_one(c->name, c->input, c->len ? c->len : strlen(c->input), c->flags, c->rc, c->error,
                  c->status, c->body, c->body_bytes ? c->body_bytes : "", c->keep_alive,
                  c->num_headers);
    }

    struct {
        const char *name;
        char *input;
        int rc;
        const char *error;
        unsigned num_headers;
    } limits[] = {
        {"status line of 8192 bytes",
         repeat_line("HTTP/1.1 200 ", 8192 - 13, "\r\nContent-Length: 0\r\n\r\n"), HB_PARSE_DONE,
         NULL, 1},
        {"status line of 8193 bytes", repeat_line("HTTP/1.1 200 ", 8193 - 13, "\r\n\r\n"),
         HB_PARSE_ERROR, "status line longer than 8192 bytes", 0},
        {"header line of 8192 bytes",
         repeat_line("HTTP/1.1 200 OK\r\nX: ", 8192 - 3, "\r\nContent-Length: 0\r\n\r\n"),
         HB_PARSE_DONE, NULL, 2},
        {"header line of 8193 bytes", repeat_line("HTTP/1.1 200 OK\r\nX: ", 8193 - 3, "\r\n\r\n"),
         HB_PARSE_ERROR, "header line longer than 8192 bytes", 0},
        {"header line of 8192 bytes, bare LF",
         repeat_line("HTTP/1.1 200 OK\nX: ", 8192 - 3, "\nContent-Length: 0\n\n"), HB_PARSE_DONE,
         NULL, 2},
        {"header line of 8193 bytes, bare LF",
         repeat_line("HTTP/1.1 200 OK\nX: ", 8193 - 3, "\n\n"), HB_PARSE_ERROR,
         "header line longer than 8192 bytes", 0},
        {"status line of 8193 bytes, bare LF", repeat_line("HTTP/1.1 200 ", 8193 - 13, "\n\n"),
         HB_PARSE_ERROR, "status line longer than 8192 bytes", 0},
        {"100 header fields", many_headers(99, 8), HB_PARSE_DONE, NULL, 100},
        {"101 header fields", many_headers(100, 8), HB_PARSE_ERROR, "more than 100 header fields",
         0},
        {"header section over 64 KiB", many_headers(9, 8000), HB_PARSE_ERROR,
         "header section longer than 65536 bytes", 0},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        check_one(limits[i].name, limits[i].input, strlen(limits[i].input), 0, limits[i].rc,
                  limits[i].error, 200, HB_BODY_LENGTH, "", 1, limits[i].num_headers);
        free(limits[i].input);
    }

    /* A chunk line past the limit, and a body in many small chunks. */
    {
        char *in = repeat_line("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;", 8200,
                               "\r\nx\r\n0\r\n\r\n");
        check_one("chunk line over 8 KiB", in, strlen(in), 0, HB_PARSE_ERROR,
                  "chunk line longer than 8192 bytes", 0, 0, "", 0, 0);
        free(in);
        char big[8192], want[2048];
        size_t n = (size_t)sprintf(big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int i = 0; i < 1000; i++) {
            n += (size_t)sprintf(big + n, "1\r\n%c\r\n", 'a' + i % 26);
            want[i] = (char)('a' + i % 26);
        }
        want[1000] = 0;
        n += (size_t)sprintf(big + n, "0\r\n\r\n");
        check_one("1000 one-byte chunks", big, n, 0, HB_PARSE_DONE, NULL, 200, HB_BODY_CHUNKED,
                  want, 1, 1);
    }

    /* Whether the server closes after the response (server_closes), apart
     * from whether the client may reuse the connection (keep_alive): the
     * loop waits for a FIN only when the server owes one. */
    {
        static const struct {
            const char *in;
            int keep_alive, server_closes;
        } closes[] = {
            {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, 0},
            {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 0, 1},
            {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 0, 1},
            {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", 1, 0},
            /* RFC 9112 section 6.3, item 3: the client's own choice. */
            {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 0},
            {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
             "Content-Length: 3\r\n\r\n",
             0, 1},
            /* A body that runs to the close. */
            {"HTTP/1.1 200 OK\r\n\r\n", 0, 1},
            {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, 1},
        };
        for (size_t i = 0; i < sizeof closes / sizeof closes[0]; i++) {
            hb_response r;
            hb_response_reset(&r);
            int rc = hb_parse_response(&r, closes[i].in, strlen(closes[i].in), 0);
            if (rc == HB_PARSE_DONE && r.keep_alive == closes[i].keep_alive &&
                r.server_closes == closes[i].server_closes) {
                passed++;
            } else {
                fprintf(stderr, "server_closes of \"%s\": rc %d keep-alive %d closes %d\n",
                        closes[i].in, rc, r.keep_alive, r.server_closes);
                failed++;
            }
        }
    }

    /* The status code alone, as HTTP/2's :status carries it (RFC 9110
     * section 15): the same rule as the status line's. */
    {
        static const struct {
            const char *in;
            int want;
        } codes[] = {{"100", 100}, {"200", 200}, {"599", 599}, {"099", -1},
                     {"000", -1},  {"600", -1},  {"999", -1},  {"20", -1},
                     {"2000", -1}, {"2x0", -1},  {" 200", -1}, {"", -1}};
        for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
            int got = hb_parse_status_code(codes[i].in, strlen(codes[i].in));
            if (got == codes[i].want) {
                passed++;
            } else {
                fprintf(stderr, "status code \"%s\": %d, not %d\n", codes[i].in, got,
                        codes[i].want);
                failed++;
            }
        }
    }

    /* Request targets in absolute form (RFC 9112 section 3.2.2), split
     * into the authority and the path and query after it. */
    {
        static const struct {
            const char *in;
            int abs, https;
            const char *auth, *rest;
        } targets[] = {
            {"http://h:81/a?b", 1, 0, "h:81", "/a?b"},
            {"HTTPS://u@h/x", 1, 1, "u@h", "/x"},
            {"http://h?c=3", 1, 0, "h", "?c=3"},
            {"http://h", 1, 0, "h", ""},
            {"http://", 1, 0, "", ""},
            {"http:///p", 1, 0, "", "/p"},
            {"/a", 0, 0, NULL, NULL},
            {"*", 0, 0, NULL, NULL},
            {"h:443", 0, 0, NULL, NULL},
            {"ftp://h/x", 0, 0, NULL, NULL},
            {"http:/h/x", 0, 0, NULL, NULL},
            {"https:/", 0, 0, NULL, NULL},
        };
        for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
            const char *in = targets[i].in;
            size_t n = strlen(in);
            hb_target_abs a = {-1, 99, 99, 99};
            int got = hb_parse_absolute_form(in, n, &a);
            int ok = got == targets[i].abs;
            if (ok && got)
                ok = a.https == targets[i].https && a.auth_len == strlen(targets[i].auth) &&
                     memcmp(in + a.auth_off, targets[i].auth, a.auth_len) == 0 &&
                     a.path_off == a.auth_off + a.auth_len &&
                     strcmp(in + a.path_off, targets[i].rest) == 0;
            if (ok) {
                passed++;
            } else {
                fprintf(stderr, "absolute form \"%s\": wrong split\n", in);
                failed++;
            }
        }
    }

    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
