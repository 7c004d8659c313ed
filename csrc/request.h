/* request.h: hb_req_*, building and checking the requests the client sends.
 *
 * The glue hands over plain spans (method, target, header fields, the
 * body, the Host value); hb_req_build checks every byte and writes the
 * request. What it builds, the server's request parser (hb_parse_request)
 * accepts: the same rules, checked on the way out (RFC 9112 sections 3 and
 * 5, RFC 9110 section 5), and the same limits (a line of at most 8 KiB, at
 * most 100 fields, a head of at most 64 KiB). Refused input is named in an
 * error message and nothing is written; tests/c/fuzz_build.c holds the two
 * to that.
 */
#ifndef HB_REQUEST_H
#define HB_REQUEST_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

/* A run of bytes (not NUL-terminated). */
typedef struct {
    const char *p;
    size_t n;
} hb_span;

/* One header field as given. */
typedef struct {
    hb_span name, value;
} hb_field;

/* Flags hb_req_build reports about the request. */
#define HB_REQ_HEAD 1       /* HEAD: the response has no body */
#define HB_REQ_IDEMPOTENT 2 /* may be sent again after a stale keep-alive (RFC 9110 9.2.2) */
#define HB_REQ_CLOSE 4      /* the request said Connection: close */
#define HB_REQ_DISCARD 8    /* (for hb_conn_request) count the body but do not keep it */

/* What a request is built from. origin and proxy_auth are for an http://
 * server reached through a forward proxy: origin ("http://host:port") goes
 * before a target that begins with '/', making the absolute form (RFC 9112
 * section 3.2.2), and proxy_auth becomes a Proxy-Authorization field unless
 * one is given (RFC 9110 section 11.7.1); empty spans for neither. host is
 * the Host field's value, added unless a Host field is given. */
typedef struct {
    hb_span method, target;
    const hb_field *fields;
    size_t nfields;
    hb_span body; /* p NULL: no body */
    hb_span host;
    hb_span origin, proxy_auth;
} hb_req_parts;

/* Writes the request into out (cleared first): the request line, the
 * fields given, Host unless given, Proxy-Authorization when asked and not
 * given, Content-Length for a body (and 0 for POST, PUT and PATCH without
 * one) unless given, the blank line, and the body when it is at most
 * copy_max bytes (the caller sends a larger one after out). Returns 0 with
 * *flags set (HB_REQ_*), -1 with a message in err naming what is wrong (CR,
 * LF or NUL anywhere; a method or field name that is not a token; a target
 * that is not visible ASCII; a Content-Length unlike the body's; a
 * Transfer-Encoding, as bodies go by Content-Length; two Host fields; a
 * limit passed), or -2 when memory ran out. out's contents are unspecified
 * after a failure. */
int hb_req_build(hb_buf *out, const hb_req_parts *req, size_t copy_max, int *flags, char *err,
                 size_t errlen);

#endif
