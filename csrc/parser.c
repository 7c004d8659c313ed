/* parser.c: HTTP/1.1 response heads and chunked bodies (RFC 9112).
 *
 * A head is parsed in two passes. The first, incremental across calls, only
 * looks for the blank line that ends the head while enforcing the line and
 * section limits (memchr per line, so a head dribbled in one byte at a time
 * costs O(n), not O(n^2)). The second runs once on the complete head and
 * checks every byte. Both passes depend only on the bytes, never on how
 * they were split, so a head parses the same whole or byte by byte.
 */
#include "parser.h"

#include <string.h>
#include <strings.h>

/* tchar (RFC 9110 section 5.6.2). */
const unsigned char hb_tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,  ['~'] = 1, ['0'] = 1,
    ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,  ['7'] = 1, ['8'] = 1,
    ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,  ['F'] = 1, ['G'] = 1,
    ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1,  ['N'] = 1, ['O'] = 1,
    ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,  ['V'] = 1, ['W'] = 1,
    ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1,  ['d'] = 1, ['e'] = 1,
    ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1,  ['l'] = 1, ['m'] = 1,
    ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1,  ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* field-vchar / SP / HTAB (RFC 9110 section 5.5): every byte but the
 * controls and DEL. The reason phrase (RFC 9112 section 4) is the same set. */
static int is_text(unsigned char ch)
{
    return ch == '\t' || (ch >= 0x20 && ch != 0x7f);
}

static int is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

static int hex_value(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch |= 0x20;
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

int hb_name_is(const char *name, size_t len, const char *lower, size_t lower_len)
{
    if (len != lower_len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch >= 'A' && ch <= 'Z')
            ch |= 0x20;
        if (ch != (unsigned char)lower[i])
            return 0;
    }
    return 1;
}

#define NAME_IS(p, n, lit) hb_name_is((p), (n), lit, sizeof(lit) - 1)

const char hb_parse_not_http[] = "the server's answer does not begin with HTTP/";

void hb_parse_excerpt(const char *buf, size_t len, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    size_t w = 0;
    for (size_t i = 0; i < len && i < 24 && w + 5 < outlen; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '"') {
            out[w++] = (char)ch;
        } else {
            out[w++] = '\\';
            out[w++] = 'x';
            out[w++] = hex[ch >> 4];
            out[w++] = hex[ch & 15];
        }
    }
    if (outlen > 0)
        out[w < outlen ? w : outlen - 1] = 0;
}

/* Names the defect in a run of text that is_text rejected. */
static const char *text_defect(const char *p, size_t n, const char *nul, const char *cr,
                               const char *other)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (!is_text(ch))
            return ch == 0 ? nul : ch == '\r' ? cr : other;
    }
    return NULL;
}

/* Which limit a failed scan broke, for a server's choice of status. */
enum { OVER_NONE, OVER_START_LINE, OVER_FIELDS };

/* Pass one: finds the blank line ending the head in buf[0..len), resuming
 * from s. A line ends in CRLF; with lf_ok (a response head) a bare LF ends
 * it too, as RFC 9112 section 2.2 allows a recipient and curl, http.client
 * and browsers do. A request head stays strict: a bare LF there is
 * rejected rather than guessed at. Each limit is checked at the byte that
 * breaks it, so the outcome is the same however the bytes were split. */
static int scan_head(hb_head_scan *s, const char *buf, size_t len, size_t *head_len,
                     const char *too_long_start, const char **error, int *over, int lf_ok)
{
    for (;;) {
        /* The LF may sit at most HB_MAX_LINE + 1 bytes into its line (after
         * the CR), and at most at offset HB_MAX_HEAD - 1. */
        size_t line_cap = s->line_start + HB_MAX_LINE + 2;
        size_t stop = len;
        if (stop > line_cap)
            stop = line_cap;
        if (stop > HB_MAX_HEAD)
            stop = HB_MAX_HEAD;
        const char *nl = NULL;
        if (stop > s->scanned)
            nl = memchr(buf + s->scanned, '\n', stop - s->scanned);
        if (nl == NULL) {
            if (stop == line_cap && len >= line_cap) {
                *error = s->lines == 0 ? too_long_start : "header line longer than 8192 bytes";
                *over = s->lines == 0 ? OVER_START_LINE : OVER_FIELDS;
                return HB_PARSE_ERROR;
            }
            if (len >= HB_MAX_HEAD) {
                *error = "header section longer than 65536 bytes";
                *over = OVER_FIELDS;
                return HB_PARSE_ERROR;
            }
            s->scanned = len;
            return HB_PARSE_MORE;
        }
        size_t at = (size_t)(nl - buf);
        int crlf = at > s->line_start && buf[at - 1] == '\r';
        if (!crlf && !lf_ok) {
            *error = "bare LF in header section";
            return HB_PARSE_ERROR;
        }
        size_t content = at - s->line_start - (size_t)crlf;
        if (content > HB_MAX_LINE) {
            /* Only a bare LF gets here: with CR the cap stopped the search. */
            *error = s->lines == 0 ? too_long_start : "header line longer than 8192 bytes";
            *over = s->lines == 0 ? OVER_START_LINE : OVER_FIELDS;
            return HB_PARSE_ERROR;
        }
        if (content == 0) {
            if (s->lines == 0) {
                *error = "empty start line";
                return HB_PARSE_ERROR;
            }
            *head_len = at + 1;
            return HB_PARSE_DONE;
        }
        if (++s->lines > HB_MAX_HEADERS + 1) {
            *error = "more than 100 header fields";
            *over = OVER_FIELDS;
            return HB_PARSE_ERROR;
        }
        s->line_start = s->scanned = at + 1;
    }
}

/* The end of the line that starts at pos (its CR, or its LF when bare: pass
 * one allowed that or not), and in *next the start of the line after. */
static size_t line_end(const char *buf, size_t pos, size_t end, size_t *next)
{
    const char *nl = memchr(buf + pos, '\n', end - pos);
    size_t at = (size_t)(nl - buf);
    *next = at + 1;
    return at > pos && buf[at - 1] == '\r' ? at - 1 : at;
}

/* Pass two, field lines: buf[pos..end) holds complete lines, the blank one
 * last (RFC 9112 section 5, RFC 9110 section 5.5). */
static const char *parse_fields(hb_header *h, unsigned *num, unsigned *folded, const char *buf,
                                size_t pos, size_t end, int allow_fold)
{
    unsigned n = 0;
    for (;;) {
        size_t next;
        size_t eol = line_end(buf, pos, end, &next);
        if (eol == pos)
            break;
        if (is_ows(buf[pos])) {
            /* obs-fold (RFC 9112 section 5.2): a user agent replaces it
             * with SP; the span keeps the fold and the caller replaces it
             * when it copies the value out. */
            if (n == 0)
                return "whitespace before the first header field";
            if (!allow_fold)
                return "obsolete line folding in header field";
            const char *bad =
                text_defect(buf + pos, eol - pos, "NUL in header value", "bare CR in header value",
                            "invalid character in header value");
            if (bad)
                return bad;
            size_t vend = eol;
            while (vend > pos && is_ows(buf[vend - 1]))
                vend--;
            if (vend > pos)
                h[n - 1].value_len = (uint32_t)(vend - h[n - 1].value_off);
            *folded = 1;
            pos = next;
            continue;
        }
        size_t p = pos;
        while (hb_tchar[(unsigned char)buf[p]])
            p++;
        char ch = buf[p];
        if (ch != ':' || p == pos) {
            if (p == eol)
                return "header line without colon";
            if (ch == ':')
                return "empty header name";
            if (is_ows(ch))
                return "whitespace before colon in header field";
            return ch == 0 ? "NUL in header name" : "invalid character in header name";
        }
        h[n].name_off = (uint32_t)pos;
        h[n].name_len = (uint32_t)(p - pos);
        p++;
        while (p < eol && is_ows(buf[p]))
            p++;
        size_t vend = eol;
        while (vend > p && is_ows(buf[vend - 1]))
            vend--;
        const char *bad =
            text_defect(buf + p, vend - p, "NUL in header value", "bare CR in header value",
                        "invalid character in header value");
        if (bad)
            return bad;
        h[n].value_off = (uint32_t)p;
        h[n].value_len = (uint32_t)(vend - p);
        n++;
        pos = next;
    }
    *num = n;
    return NULL;
}

/* Iterates the elements of a comma-separated list (RFC 9110 section 5.6.1),
 * OWS and obs-fold trimmed, empty elements skipped. Returns 0 at the end. */
typedef struct {
    const char *p, *end;
} list_iter;

static int is_list_ws(char ch)
{
    return is_ows(ch) || ch == '\r' || ch == '\n';
}

static int list_next(list_iter *it, const char **elem, size_t *elen)
{
    while (it->p < it->end) {
        const char *comma = memchr(it->p, ',', (size_t)(it->end - it->p));
        const char *stop = comma ? comma : it->end;
        const char *a = it->p, *b = stop;
        it->p = comma ? comma + 1 : it->end;
        while (a < b && is_list_ws(*a))
            a++;
        while (b > a && is_list_ws(b[-1]))
            b--;
        if (a < b) {
            *elem = a;
            *elen = (size_t)(b - a);
            return 1;
        }
    }
    return 0;
}

/* Content-Length = 1*DIGIT (RFC 9110 section 8.6). A list of identical
 * values is accepted as one, as the RFC allows; anything else is not. */
static const char *parse_content_length(const char *v, size_t n, int *seen, uint64_t *out)
{
    list_iter it = {v, v + n};
    const char *e;
    size_t elen;
    int any = 0;
    while (list_next(&it, &e, &elen)) {
        uint64_t x = 0;
        if (elen > 19)
            return "Content-Length value too large";
        for (size_t i = 0; i < elen; i++) {
            if (e[i] < '0' || e[i] > '9')
                return "invalid Content-Length value";
            x = x * 10 + (uint64_t)(e[i] - '0');
        }
        if (*seen && x != *out)
            return "conflicting Content-Length values";
        *seen = 1;
        *out = x;
        any = 1;
    }
    /* An empty value, or one of only commas, is no number at all. */
    return any ? NULL : "invalid Content-Length value";
}

/* One transfer-coding (RFC 9110 section 10.1.4, RFC 9112 section 6.1):
 *   token *( OWS ";" OWS token BWS "=" BWS ( token / quoted-string ) )
 * Returns the length of its name, or 0 when e[0..n) is not one; sets
 * *params when parameters follow the name. */
static size_t coding_name(const char *e, size_t n, int *params)
{
    size_t i = 0, k;
    while (i < n && hb_tchar[(unsigned char)e[i]])
        i++;
    size_t name = i;
    *params = 0;
    while (name > 0 && i < n) {
        while (i < n && is_ows(e[i]))
            i++;
        if (i == n || e[i] != ';')
            return 0;
        *params = 1;
        for (i++; i < n && is_ows(e[i]); i++)
            ;
        for (k = i; i < n && hb_tchar[(unsigned char)e[i]]; i++)
            ;
        if (i == k)
            return 0;
        while (i < n && is_ows(e[i]))
            i++;
        if (i == n || e[i] != '=')
            return 0;
        for (i++; i < n && is_ows(e[i]); i++)
            ;
        if (i < n && e[i] == '"') {
            for (i++; i < n && e[i] != '"'; i++)
                i += e[i] == '\\'; /* quoted-pair */
            if (i >= n)
                return 0;
            i++;
        } else {
            for (k = i; i < n && hb_tchar[(unsigned char)e[i]]; i++)
                ;
            if (i == k)
                return 0;
        }
    }
    return name;
}

/* Transfer-Encoding codings (RFC 9112 section 6.1): counts chunked and the
 * other codings, notes whether chunked is the final one. Anything that is
 * not a list of codings is refused, and so is chunked with parameters
 * (RFC 9112 section 7 defines none): reading "chunked foo" or
 * "chunked;q=1" as chunked where a proxy in front reads it otherwise is a
 * request smuggling seam. Returns NULL, or the defect. */
static const char *parse_transfer_encoding(const char *v, size_t n, unsigned *chunked,
                                           int *last_chunked, unsigned *others)
{
    list_iter it = {v, v + n};
    const char *e;
    size_t elen;
    while (list_next(&it, &e, &elen)) {
        int params;
        size_t name = coding_name(e, elen, &params);
        if (name == 0)
            return "invalid Transfer-Encoding";
        int is_chunked = NAME_IS(e, name, "chunked");
        if (is_chunked && params)
            return "chunked transfer coding with parameters";
        *chunked += (unsigned)is_chunked;
        *others += (unsigned)!is_chunked;
        *last_chunked = is_chunked;
    }
    return NULL;
}

/* Connection options (RFC 9112 section 9.6): close and keep-alive. */
static void connection_options(const char *v, size_t n, int *close, int *keep_alive)
{
    list_iter it = {v, v + n};
    const char *e;
    size_t elen;
    while (list_next(&it, &e, &elen)) {
        *close |= NAME_IS(e, elen, "close");
        *keep_alive |= NAME_IS(e, elen, "keep-alive");
    }
}

int hb_parse_status_code(const char *p, size_t n)
{
    if (n != 3)
        return -1;
    int code = 0;
    for (size_t i = 0; i < 3; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        code = code * 10 + (p[i] - '0');
    }
    return code >= 100 && code <= 599 ? code : -1;
}

static const char *parse_status_line(hb_response *r, const char *buf, size_t eol)
{
    /* status-line = HTTP-version SP status-code SP [ reason-phrase ]
     * (RFC 9112 section 4); the SP before an empty reason is tolerated
     * missing, as most clients do. */
    if (eol < 12 || memcmp(buf, "HTTP/", 5) != 0)
        return "invalid status line";
    if (buf[5] < '0' || buf[5] > '9' || buf[6] != '.' || buf[7] < '0' || buf[7] > '9')
        return "invalid HTTP version";
    if (buf[5] != '1')
        return "unsupported HTTP version";
    if (buf[8] != ' ')
        return "invalid status line";
    int code = hb_parse_status_code(buf + 9, 3);
    if (code < 0)
        return "invalid status code";
    if (eol > 12 && buf[12] != ' ')
        return "invalid status code";
    size_t reason = eol > 12 ? 13 : 12;
    const char *bad = text_defect(buf + reason, eol - reason, "NUL in reason phrase",
                                  "bare CR in reason phrase", "invalid character in reason phrase");
    if (bad)
        return bad;
    r->minor_version = buf[7] - '0';
    r->status = code;
    r->reason_off = (uint32_t)reason;
    r->reason_len = (uint32_t)(eol - reason);
    return NULL;
}

/* Chooses the body framing (RFC 9112 section 6.3) and whether the
 * connection persists (RFC 9112 section 9.3). */
static const char *parse_framing(hb_response *r, const char *buf, int flags)
{
    int has_cl = 0, last_chunked = 0, close = 0, keep_alive = 0, has_te = 0;
    unsigned chunked = 0, others = 0;
    uint64_t cl = 0;
    const char *bad;

    for (unsigned i = 0; i < r->num_headers; i++) {
        const hb_header *h = &r->headers[i];
        const char *name = buf + h->name_off, *value = buf + h->value_off;
        switch (h->name_len) {
        case 10:
            if (NAME_IS(name, 10, "connection"))
                connection_options(value, h->value_len, &close, &keep_alive);
            break;
        case 14:
            if (NAME_IS(name, 14, "content-length")) {
                if ((bad = parse_content_length(value, h->value_len, &has_cl, &cl)) != NULL)
                    return bad;
            }
            break;
        case 17:
            if (NAME_IS(name, 17, "transfer-encoding")) {
                has_te = 1;
                if ((bad = parse_transfer_encoding(value, h->value_len, &chunked, &last_chunked,
                                                   &others)) != NULL)
                    return bad;
            }
            break;
        }
    }
    if (chunked > 1)
        return "chunked transfer coding applied more than once";
    r->keep_alive = r->minor_version >= 1 ? !close : keep_alive && !close;
    r->server_closes = !r->keep_alive;
    if (r->status < 200 || (flags & HB_PARSE_HEAD_REQUEST) || r->status == 204 ||
        r->status == 304) {
        r->body = HB_BODY_NONE;
    } else if (has_te) {
        /* Transfer-Encoding overrides Content-Length; a message with both
         * may be an attempt at request smuggling, so the connection is not
         * reused (RFC 9112 section 6.3, item 3). */
        r->body = last_chunked ? HB_BODY_CHUNKED : HB_BODY_CLOSE;
        if (has_cl || r->minor_version == 0)
            r->keep_alive = 0;
    } else if (has_cl) {
        r->body = HB_BODY_LENGTH;
        r->content_length = cl;
    } else {
        r->body = HB_BODY_CLOSE;
    }
    if (r->body == HB_BODY_CLOSE) {
        r->keep_alive = 0;
        r->server_closes = 1;
    }
    return NULL;
}

int hb_parse_response(hb_response *r, const char *buf, size_t len, int flags)
{
    size_t head_len;
    int over = OVER_NONE;
    /* RFC 9112 section 4: a response begins with "HTTP/". Bytes that
     * cannot (a TLS server, a wrong port, binary) are an error at once, not
     * a wait for a blank line that never comes. */
    size_t n = len < 5 ? len : 5;
    if (n > 0 && memcmp(buf, "HTTP/", n) != 0) {
        /* By the first byte alone (a TLS record's type: 0x16 handshake,
         * 0x15 alert, RFC 8446 section 5.1), so that the verdict never
         * depends on how the bytes were split. */
        unsigned char b = (unsigned char)buf[0];
        r->error = b == 0x16 ? "the server answered with TLS (a 0x16 handshake record): is the URL "
                               "https?"
                   : b == 0x15 ? "the server answered with TLS (a 0x15 alert record): is the URL "
                                 "https?"
                               : hb_parse_not_http;
        return HB_PARSE_ERROR;
    }
    int rc = scan_head(&r->scan, buf, len, &head_len, "status line longer than 8192 bytes",
                       &r->error, &over, 1);
    if (rc != HB_PARSE_DONE)
        return rc;

    size_t next;
    size_t eol = line_end(buf, 0, head_len, &next);
    const char *bad = parse_status_line(r, buf, eol);
    unsigned folded = 0;
    if (bad == NULL)
        bad = parse_fields(r->headers, &r->num_headers, &folded, buf, next, head_len, 1);
    if (bad == NULL)
        bad = parse_framing(r, buf, flags);
    if (bad != NULL) {
        r->error = bad;
        return HB_PARSE_ERROR;
    }
    r->folded = folded;
    r->head_len = head_len;
    return HB_PARSE_DONE;
}

/* The chunked decoder's states; zero is the start of a chunk-size line. */
enum {
    CK_SIZE = 0, /* hex digits */
    CK_SIZE_WS,  /* after the digits: BWS, ';' or CR */
    CK_EXT,      /* chunk-ext, up to CR */
    CK_SIZE_LF,  /* LF after the chunk line's CR */
    CK_DATA,
    CK_DATA_CR,
    CK_DATA_LF,
    CK_TRAILER, /* start of a trailer line, or the final CRLF */
    CK_TNAME,
    CK_TVALUE,
    CK_TLF,
    CK_END_LF,
    CK_DONE,
};

static int chunk_error(hb_chunked *c, const char *why)
{
    c->error = why;
    return HB_PARSE_ERROR;
}

int hb_parse_chunked(hb_chunked *c, const char *buf, size_t len, size_t *used, size_t *data_off,
                     size_t *data_len)
{
    size_t i = 0;
    *data_off = *data_len = 0;
    while (i < len) {
        unsigned char ch = (unsigned char)buf[i];
        switch (c->state) {
        case CK_SIZE: {
            int v = hex_value(ch);
            if (v >= 0) {
                if (++c->digits > HB_MAX_CHUNK_DIGITS)
                    return chunk_error(c, "chunk size has more than 16 hex digits");
                c->remaining = c->remaining << 4 | (uint64_t)v;
                c->line_len++;
                i++;
                continue;
            }
            if (c->digits == 0)
                return chunk_error(c, "invalid chunk size");
            c->state = CK_SIZE_WS;
        }
            /* fall through */
        case CK_SIZE_WS:
            if (ch == '\r')
                c->state = CK_SIZE_LF;
            else if (ch == ';')
                c->state = CK_EXT;
            else if (ch == '\n')
                return chunk_error(c, "bare LF in chunk line");
            else if (!is_ows((char)ch))
                return chunk_error(c, "invalid chunk size");
            break;
        case CK_EXT:
            if (ch == '\r')
                c->state = CK_SIZE_LF;
            else if (ch == '\n')
                return chunk_error(c, "bare LF in chunk line");
            else if (!is_text(ch))
                return chunk_error(c, ch == 0 ? "NUL in chunk extension"
                                              : "invalid character in chunk extension");
            break;
        case CK_SIZE_LF:
            if (ch != '\n')
                return chunk_error(c, "bare CR in chunk line");
            c->state = c->remaining ? CK_DATA : CK_TRAILER;
            c->line_len = 0;
            i++;
            continue;
        case CK_DATA: {
            size_t n = len - i;
            if ((uint64_t)n > c->remaining)
                n = (size_t)c->remaining;
            c->remaining -= n;
            if (c->remaining == 0)
                c->state = CK_DATA_CR;
            *data_off = i;
            *data_len = n;
            *used = i + n;
            return HB_PARSE_MORE;
        }
        case CK_DATA_CR:
        case CK_DATA_LF:
            if (ch != (c->state == CK_DATA_CR ? '\r' : '\n'))
                return chunk_error(c, "chunk data not followed by CRLF");
            if (c->state == CK_DATA_LF) {
                c->digits = 0;
                c->line_len = 0;
                c->remaining = 0;
                c->state = CK_SIZE;
            } else {
                c->state = CK_DATA_LF;
            }
            i++;
            continue;
        case CK_TRAILER:
            if (ch == '\r')
                c->state = CK_END_LF;
            else if (ch == '\n')
                return chunk_error(c, "bare LF in trailer section");
            else if (hb_tchar[ch])
                c->state = CK_TNAME;
            else if (ch == ':')
                return chunk_error(c, "empty trailer field name");
            else if (is_ows((char)ch))
                return chunk_error(c, "whitespace before the first trailer field");
            else
                return chunk_error(c, "invalid character in trailer field name");
            break;
        case CK_TNAME:
            if (ch == ':')
                c->state = CK_TVALUE;
            else if (is_ows((char)ch))
                return chunk_error(c, "whitespace before colon in trailer field");
            else if (ch == '\r' || ch == '\n')
                return chunk_error(c, "trailer line without colon");
            else if (!hb_tchar[ch])
                return chunk_error(c, "invalid character in trailer field name");
            break;
        case CK_TVALUE:
            if (ch == '\r')
                c->state = CK_TLF;
            else if (ch == '\n')
                return chunk_error(c, "bare LF in trailer section");
            else if (!is_text(ch))
                return chunk_error(c, ch == 0 ? "NUL in trailer field value"
                                              : "invalid character in trailer field value");
            break;
        case CK_TLF:
            if (ch != '\n')
                return chunk_error(c, "bare CR in trailer section");
            if (++c->trailers > HB_MAX_HEADERS)
                return chunk_error(c, "more than 100 trailer fields");
            c->line_len = 0;
            c->state = CK_TRAILER;
            break;
        case CK_END_LF:
            if (ch != '\n')
                return chunk_error(c, "bare CR in trailer section");
            c->state = CK_DONE;
            *used = i + 1;
            return HB_PARSE_DONE;
        default: return chunk_error(c, "chunked body already complete");
        }
        /* A byte of a chunk line or of the trailer section: count it
         * against the limits (line content only, CR and LF aside). */
        i++;
        if (c->state >= CK_TRAILER) {
            if (++c->trailer_len > HB_MAX_HEAD)
                return chunk_error(c, "trailer section longer than 65536 bytes");
            if ((c->state == CK_TNAME || c->state == CK_TVALUE) && ++c->line_len > HB_MAX_LINE)
                return chunk_error(c, "trailer line longer than 8192 bytes");
        } else if ((c->state == CK_SIZE_WS || c->state == CK_EXT) && ++c->line_len > HB_MAX_LINE) {
            return chunk_error(c, "chunk line longer than 8192 bytes");
        }
    }
    *used = i;
    return HB_PARSE_MORE;
}

/* request-line = method SP request-target SP HTTP-version (RFC 9112
 * section 3). Returns NULL or the defect, with r->status set. */
static const char *parse_request_line(hb_request *r, const char *buf, size_t eol)
{
    size_t p = 0;
    while (p < eol && hb_tchar[(unsigned char)buf[p]])
        p++;
    if (p == 0 || p == eol || buf[p] != ' ')
        return "invalid method";
    r->method_len = (uint32_t)p;
    size_t t = ++p;
    /* The target is visible ASCII (RFC 3986 characters and then some);
     * anything else, a second SP included, is a bad request. */
    while (p < eol && buf[p] > 0x20 && buf[p] < 0x7f)
        p++;
    if (p == t || p == eol || buf[p] != ' ')
        return p < eol && buf[p] != ' ' ? "invalid character in request target"
                                        : "invalid request target";
    r->target_off = (uint32_t)t;
    r->target_len = (uint32_t)(p - t);
    p++;
    if (eol - p != 8 || memcmp(buf + p, "HTTP/", 5) != 0 || buf[p + 5] < '0' || buf[p + 5] > '9' ||
        buf[p + 6] != '.' || buf[p + 7] < '0' || buf[p + 7] > '9')
        return "invalid HTTP version";
    if (buf[p + 5] != '1') {
        r->status = 505;
        return "unsupported HTTP version";
    }
    r->minor_version = buf[p + 7] - '0';
    return NULL;
}

/* Body framing of a request (RFC 9112 section 6.3, items 3 to 7): no
 * reading until close; anything doubtful is refused, since a server that
 * guesses can be made to smuggle requests. */
static const char *request_framing(hb_request *r, const char *buf)
{
    int has_cl = 0, last_chunked = 0, close = 0, keep_alive = 0, has_te = 0;
    unsigned chunked = 0, others = 0, hosts = 0;
    uint64_t cl = 0;
    const char *bad;

    for (unsigned i = 0; i < r->num_headers; i++) {
        const hb_header *h = &r->headers[i];
        const char *name = buf + h->name_off, *value = buf + h->value_off;
        if (NAME_IS(name, h->name_len, "host")) {
            hosts++;
        } else if (NAME_IS(name, h->name_len, "connection")) {
            connection_options(value, h->value_len, &close, &keep_alive);
        } else if (NAME_IS(name, h->name_len, "content-length")) {
            if ((bad = parse_content_length(value, h->value_len, &has_cl, &cl)) != NULL)
                return bad;
        } else if (NAME_IS(name, h->name_len, "transfer-encoding")) {
            has_te = 1;
            if ((bad = parse_transfer_encoding(value, h->value_len, &chunked, &last_chunked,
                                               &others)) != NULL)
                return bad;
        } else if (NAME_IS(name, h->name_len, "expect")) {
            r->expect_continue = NAME_IS(value, h->value_len, "100-continue");
        }
    }
    /* RFC 9112 section 3.2: exactly one Host in HTTP/1.1. */
    if (hosts > 1)
        return "more than one Host header field";
    if (hosts == 0 && r->minor_version >= 1)
        return "HTTP/1.1 request without Host";
    if (has_te) {
        if (has_cl)
            return "both Content-Length and Transfer-Encoding";
        if (r->minor_version == 0)
            return "Transfer-Encoding in an HTTP/1.0 request";
        if (others > 0) {
            r->status = 501;
            return "unsupported transfer coding";
        }
        if (chunked != 1 || !last_chunked)
            return "invalid Transfer-Encoding";
        r->body = HB_BODY_CHUNKED;
    } else if (has_cl && cl > 0) {
        r->body = HB_BODY_LENGTH;
        r->content_length = cl;
    } else {
        r->body = HB_BODY_NONE;
    }
    r->keep_alive = r->minor_version >= 1 ? !close : keep_alive && !close;
    return NULL;
}

int hb_parse_request(hb_request *r, const char *buf, size_t len)
{
    size_t head_len;
    int over = OVER_NONE;
    /* A method is a token (RFC 9112 section 3): a first byte that cannot
     * begin one (a TLS ClientHello, binary) is refused at once, not after
     * the header deadline. */
    for (size_t i = 0; i < len && i < 16 && buf[i] != ' '; i++) {
        if (!hb_tchar[(unsigned char)buf[i]]) {
            r->status = 400;
            r->error = (unsigned char)buf[0] == 0x16
                           ? "TLS (0x16) sent to a plain HTTP server: is the URL http?"
                           : "invalid method";
            return HB_PARSE_ERROR;
        }
    }
    int rc = scan_head(&r->scan, buf, len, &head_len, "request line longer than 8192 bytes",
                       &r->error, &over, 0);
    if (rc == HB_PARSE_MORE)
        return rc;
    if (rc == HB_PARSE_ERROR) {
        r->status = over == OVER_START_LINE ? 414 : over == OVER_FIELDS ? 431 : 400;
        return rc;
    }
    size_t next;
    size_t eol = line_end(buf, 0, head_len, &next);
    unsigned folded = 0;
    const char *bad = parse_request_line(r, buf, eol);
    if (bad == NULL)
        bad = parse_fields(r->headers, &r->num_headers, &folded, buf, next, head_len, 0);
    if (bad == NULL)
        bad = request_framing(r, buf);
    if (bad != NULL) {
        if (r->status == 0)
            r->status = 400;
        r->error = bad;
        return HB_PARSE_ERROR;
    }
    r->head_len = head_len;
    return HB_PARSE_DONE;
}

void hb_body_init(hb_body *b, hb_body_kind kind, uint64_t length)
{
    memset(b, 0, sizeof *b);
    b->kind = kind;
    b->left = kind == HB_BODY_LENGTH ? length : 0;
}

int hb_body_feed(hb_body *b, const char *buf, size_t len, size_t *used, size_t *data_off,
                 size_t *data_len)
{
    *used = *data_off = *data_len = 0;
    switch (b->kind) {
    case HB_BODY_NONE: return HB_PARSE_DONE;
    case HB_BODY_LENGTH: {
        size_t n = (uint64_t)len < b->left ? len : (size_t)b->left;
        *used = *data_len = n;
        b->left -= n;
        b->got += n;
        return b->left == 0 ? HB_PARSE_DONE : HB_PARSE_MORE;
    }
    case HB_BODY_CHUNKED: {
        int rc = hb_parse_chunked(&b->ck, buf, len, used, data_off, data_len);
        if (rc == HB_PARSE_ERROR)
            b->error = b->ck.error;
        else
            b->got += *data_len;
        return rc;
    }
    case HB_BODY_CLOSE:
        *used = *data_len = len;
        b->got += len;
        return HB_PARSE_MORE;
    }
    b->error = "unknown body framing";
    return HB_PARSE_ERROR;
}

int hb_body_end(hb_body *b)
{
    if (b->kind == HB_BODY_CLOSE || b->kind == HB_BODY_NONE ||
        (b->kind == HB_BODY_LENGTH && b->left == 0) ||
        (b->kind == HB_BODY_CHUNKED && b->ck.state == CK_DONE))
        return HB_PARSE_DONE;
    b->error = b->kind == HB_BODY_LENGTH ? "connection closed before the end of the body"
                                         : "connection closed inside the chunked body";
    return HB_PARSE_ERROR;
}

int hb_parse_absolute_form(const char *t, size_t n, hb_target_abs *a)
{
    size_t k = n >= 7 && strncasecmp(t, "http://", 7) == 0    ? 7
               : n >= 8 && strncasecmp(t, "https://", 8) == 0 ? 8
                                                              : 0;
    if (k == 0)
        return 0;
    size_t i = k;
    while (i < n && t[i] != '/' && t[i] != '?')
        i++;
    a->https = k == 8;
    a->auth_off = k;
    a->auth_len = i - k;
    a->path_off = i;
    return 1;
}
