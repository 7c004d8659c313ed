/* request.c: building and checking the requests the client sends. */
#include "request.h"

#include "parser.h"

#include <stdio.h>
#include <string.h>

static int span_is(hb_span s, const char *lower)
{
    return hb_name_is(s.p, s.n, lower, strlen(lower));
}

/* Whether the comma-separated list v holds the token tok (any case). */
static int has_token(hb_span v, const char *tok)
{
    size_t tl = strlen(tok);
    const char *p = v.p, *end = v.p + v.n;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *a = p, *b = comma ? comma : end;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (hb_name_is(a, (size_t)(b - a), tok, tl))
            return 1;
        p = comma ? comma + 1 : end;
    }
    return 0;
}

/* The defect of a byte, or NULL: CR, LF and NUL would change the message's
 * framing anywhere. */
static const char *framing_defect(unsigned char ch)
{
    return ch == '\r' ? "CR" : ch == '\n' ? "LF" : ch == 0 ? "NUL" : NULL;
}

/* A token (RFC 9110 section 5.6.2): the method, a field name. */
static int check_token(hb_span s, const char *what, char *err, size_t errlen)
{
    if (s.n == 0) {
        snprintf(err, errlen, "%s must not be empty", what);
        return -1;
    }
    for (size_t i = 0; i < s.n; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (hb_tchar[ch])
            continue;
        const char *bad = framing_defect(ch);
        snprintf(err, errlen, "%s contains %s", what,
                 bad         ? bad
                 : ch == ' ' ? "a space"
                             : "a character that is not allowed in a token");
        return -1;
    }
    return 0;
}

/* request-target (RFC 9112 section 3.2): visible ASCII, no space. */
static int check_target(hb_span s, char *err, size_t errlen)
{
    if (s.n == 0) {
        snprintf(err, errlen, "target must not be empty");
        return -1;
    }
    for (size_t i = 0; i < s.n; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch > 0x20 && ch < 0x7f)
            continue;
        const char *bad = framing_defect(ch);
        snprintf(err, errlen, "target contains %s",
                 bad         ? bad
                 : ch == ' ' ? "a space"
                             : "a character that is not visible ASCII");
        return -1;
    }
    return 0;
}

/* field-value (RFC 9110 section 5.5): visible bytes, SP and HTAB; obs-text
 * (0x80 and up) passes, as Latin-1 values are sent. */
static int check_value(hb_span s, char *err, size_t errlen)
{
    for (size_t i = 0; i < s.n; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch == '\t' || (ch >= 0x20 && ch != 0x7f))
            continue;
        const char *bad = framing_defect(ch);
        snprintf(err, errlen, "header value contains %s", bad ? bad : "a control character");
        return -1;
    }
    return 0;
}

/* The Content-Length given: 1*DIGIT (RFC 9110 section 8.6). Returns 0, or
 * -1 when it is no single number. */
static int parse_length(hb_span v, uint64_t *out)
{
    uint64_t x = 0;
    if (v.n == 0 || v.n > 18)
        return -1;
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(v.p[i] - '0');
    }
    *out = x;
    return 0;
}

static int is_method(hb_span m, const char *lit)
{
    return m.n == strlen(lit) && memcmp(m.p, lit, m.n) == 0;
}

/* Appends "name: value\r\n". */
static int append_field(hb_buf *b, hb_span name, hb_span value)
{
    if (hb_buf_reserve(b, name.n + value.n + 4) != 0)
        return -1;
    char *w = hb_buf_wrptr(b);
    memcpy(w, name.p, name.n);
    w += name.n;
    *w++ = ':';
    *w++ = ' ';
    memcpy(w, value.p, value.n);
    w += value.n;
    *w++ = '\r';
    *w++ = '\n';
    hb_buf_commit(b, name.n + value.n + 4);
    return 0;
}

/* What the fields given say, once checked. */
typedef struct {
    int hosts, has_length, close, has_proxy_auth;
    uint64_t length;
} field_facts;

/* Checks each field given and gathers what they say into *ff. Returns 0,
 * or -1 with a message in err. */
static int check_fields(const hb_req_parts *req, field_facts *ff, char *err, size_t errlen)
{
    for (size_t i = 0; i < req->nfields; i++) {
        const hb_field *f = &req->fields[i];
        if (check_token(f->name, "header name", err, errlen) != 0 ||
            check_value(f->value, err, errlen) != 0)
            return -1;
        if (f->name.n + f->value.n + 2 > HB_MAX_LINE) {
            snprintf(err, errlen, "header field longer than %d bytes", HB_MAX_LINE);
            return -1;
        }
        if (span_is(f->name, "transfer-encoding")) {
            /* Bodies go by Content-Length: a Transfer-Encoding would have
             * the server read the body (and what follows) otherwise. */
            snprintf(err, errlen,
                     "Transfer-Encoding cannot be given: the body is sent with Content-Length");
            return -1;
        }
        if (span_is(f->name, "host") && ++ff->hosts > 1) {
            snprintf(err, errlen, "more than one Host header field"); /* RFC 9112 3.2 */
            return -1;
        }
        if (span_is(f->name, "content-length")) {
            uint64_t v;
            if (parse_length(f->value, &v) != 0 || (ff->has_length && v != ff->length)) {
                ff->has_length = 2; /* no single number */
            } else if (ff->has_length != 2) {
                ff->has_length = 1;
                ff->length = v;
            }
        }
        if (span_is(f->name, "proxy-authorization"))
            ff->has_proxy_auth = 1;
        if (span_is(f->name, "connection") && has_token(f->value, "close"))
            ff->close = 1;
    }
    return 0;
}

/* Writes the head: the request line, the fields, those added, the blank
 * line. Returns 0, or -2 when memory ran out. */
static int write_head(hb_buf *out, const hb_req_parts *req, hb_span target_prefix,
                      const field_facts *ff, int add_auth, int add_length)
{
    static const hb_span sp = {" ", 1}, version = {" HTTP/1.1\r\n", 11};
    hb_buf_clear(out);
    if (hb_buf_append(out, req->method.p, req->method.n) != 0 ||
        hb_buf_append(out, sp.p, sp.n) != 0 ||
        hb_buf_append(out, target_prefix.p, target_prefix.n) != 0 ||
        hb_buf_append(out, req->target.p, req->target.n) != 0 ||
        hb_buf_append(out, version.p, version.n) != 0)
        return -2;
    for (size_t i = 0; i < req->nfields; i++)
        if (append_field(out, req->fields[i].name, req->fields[i].value) != 0)
            return -2;
    if (ff->hosts == 0 && append_field(out, (hb_span){"Host", 4}, req->host) != 0)
        return -2;
    if (add_auth && append_field(out, (hb_span){"Proxy-Authorization", 19}, req->proxy_auth) != 0)
        return -2;
    if (add_length) {
        char num[24];
        int n = snprintf(num, sizeof num, "%llu", (unsigned long long)req->body.n);
        if (append_field(out, (hb_span){"Content-Length", 14}, (hb_span){num, (size_t)n}) != 0)
            return -2;
    }
    return hb_buf_append(out, "\r\n", 2) != 0 ? -2 : 0;
}

int hb_req_build(hb_buf *out, const hb_req_parts *req, size_t copy_max, int *flags, char *err,
                 size_t errlen)
{
    field_facts ff = {0, 0, 0, 0, 0};
    hb_span method = req->method, body = req->body;
    /* RFC 9112 section 3.2.2: to a proxy, the absolute form. */
    hb_span prefix = req->target.n > 0 && req->target.p[0] == '/' ? req->origin : (hb_span){"", 0};

    if (check_token(method, "method", err, errlen) != 0 ||
        check_target(req->target, err, errlen) != 0 ||
        (prefix.n > 0 && check_target(prefix, err, errlen) != 0) ||
        check_value(req->proxy_auth, err, errlen) != 0)
        return -1;
    if (method.n + prefix.n + req->target.n + 10 > HB_MAX_LINE) {
        snprintf(err, errlen, "request line longer than %d bytes", HB_MAX_LINE);
        return -1;
    }
    if (check_fields(req, &ff, err, errlen) != 0)
        return -1;
    /* A Content-Length given must be the body's: a larger one would have
     * the server wait for bytes never sent, a smaller one read the rest of
     * the body as a second request (RFC 9112 section 6.3). */
    if (ff.has_length && (ff.has_length == 2 || ff.length != body.n)) {
        snprintf(err, errlen, "the Content-Length given does not match the body's %llu bytes",
                 (unsigned long long)body.n);
        return -1;
    }
    int wants_body =
        is_method(method, "POST") || is_method(method, "PUT") || is_method(method, "PATCH");
    int add_length = !ff.has_length && (body.p != NULL || wants_body);
    int add_auth = req->proxy_auth.n > 0 && !ff.has_proxy_auth;
    if (req->nfields + (ff.hosts == 0) + add_auth + add_length > HB_MAX_HEADERS) {
        snprintf(err, errlen, "more than %d header fields", HB_MAX_HEADERS);
        return -1;
    }
    if (write_head(out, req, prefix, &ff, add_auth, add_length) != 0)
        return -2;
    if (hb_buf_size(out) > HB_MAX_HEAD) {
        snprintf(err, errlen, "header section longer than %d bytes", HB_MAX_HEAD);
        return -1;
    }
    if (body.p != NULL && body.n <= copy_max && hb_buf_append(out, body.p, body.n) != 0)
        return -2;

    *flags = 0;
    if (is_method(method, "HEAD"))
        *flags |= HB_REQ_HEAD;
    /* RFC 9110 section 9.2.2. */
    if (is_method(method, "GET") || is_method(method, "HEAD") || is_method(method, "PUT") ||
        is_method(method, "DELETE") || is_method(method, "OPTIONS") || is_method(method, "TRACE"))
        *flags |= HB_REQ_IDEMPOTENT;
    if (ff.close)
        *flags |= HB_REQ_CLOSE;
    return 0;
}
