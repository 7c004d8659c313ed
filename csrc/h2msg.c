/* h2msg.c: the rules an HTTP/2 response's messages keep (h2msg.h). */
#include "h2msg.h"

#include "parser.h"

#include <string.h>

/* The word-at-a-time checks run once a field: their call and setup cost
 * more than their words, so they are inlined into the one caller. */
#define INLINE inline __attribute__((always_inline))
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

void hb_h2m_start(hb_h2m *m, int head)
{
    memset(m, 0, sizeof *m);
    m->clen = -1;
    m->nobody = head;
}

void hb_h2m_block(hb_h2m *m)
{
    m->trailers = m->status != 0;
    m->block_status = 0;
    m->block_regular = 0;
}

/* The 8 bytes at p as a word. */
static INLINE uint64_t word_at(const char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* n bytes at p (1 to 7) as a word made of those bytes alone (loads that
 * overlap, or bytes repeated): a rule every byte of the word keeps is
 * kept by p's. */
static INLINE uint64_t short_word(const char *p, size_t n)
{
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        return a | (uint64_t)b << 32;
    }
    uint64_t a = (unsigned char)p[0], b = (unsigned char)p[n / 2], c = (unsigned char)p[n - 1];
    uint64_t w = a | b << 8 | c << 16;
    return w | w << 24 | a << 48 | a << 56;
}

static int value_byte_ok(unsigned char c)
{
    return (c >= 0x20 && c != 0x7f) || c == '\t';
}

/* The high bit of each byte of x under 0x20 or DEL (a zero in y): exact
 * as to whether any is (a borrow marks only bytes above a true one). HTAB
 * is such a byte and allowed: a word with one goes byte by byte. */
static INLINE uint64_t value_word_bad(uint64_t x)
{
    uint64_t y = x ^ (ONES * 0x7f);
    return (((x - ONES * 0x20) & ~x) | ((y - ONES) & ~y)) & HIGHS;
}

static INLINE int value_word_plain(uint64_t x)
{
    return value_word_bad(x) == 0;
}

/* Whether every byte of p[0..n) (n at least 1) keeps a rule: whole words
 * by `plain` (inlined with it: a constant), each it doubts byte by byte by
 * `exact`. */
static INLINE int each_byte(const char *p, size_t n, int (*plain)(uint64_t),
                            int (*exact)(unsigned char))
{
    for (size_t i = 0; i < n; i += 8) {
        size_t len = n - i < 8 ? n - i : 8;
        /* (The last word overlaps the one before; one shorter than 8 in
         * all is made of its own bytes.) */
        uint64_t x = n < 8 ? short_word(p, n) : word_at(p + (n - i < 8 ? n - 8 : i));
        if (plain(x))
            continue;
        for (size_t k = 0; k < len; k++)
            if (!exact((unsigned char)p[i + k]))
                return 0;
    }
    return 1;
}

static INLINE int value_ok(const char *p, size_t n)
{
    if (n == 0)
        return 1;
    if (p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' || p[n - 1] == '\t')
        return 0;
    return each_byte(p, n, value_word_plain, value_byte_ok);
}

/* RFC 9110 section 5.6.2's tchar, less the capitals. */
static int name_byte_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           (c != 0 && c < 0x80 && strchr("!#$%&'*+.^_`|~", c) != NULL);
}

/* The high bit of each byte of x that is a small letter or '-' (the
 * names in use). A byte of 0x80 or above fails (its bit cleared by ~x);
 * its carries may reach the bytes above it, which no longer matter. */
static INLINE uint64_t name_word_good(uint64_t x)
{
    uint64_t y = x ^ (ONES * '-');
    uint64_t other = (((y & ~HIGHS) + ~HIGHS) | y) & HIGHS; /* a byte not '-' */
    uint64_t from_a = (x + ONES * (0x80 - 'a')) & HIGHS;
    uint64_t past_z = (x + ONES * (0x80 - 'z' - 1)) & HIGHS;
    return ((from_a & ~past_z) | (~other & HIGHS)) & ~x & HIGHS;
}

static INLINE int name_word_plain(uint64_t x)
{
    return name_word_good(x) == HIGHS;
}

static INLINE int name_ok(const char *p, size_t n)
{
    return n > 0 && each_byte(p, n, name_word_plain, name_byte_ok);
}

int hb_h2m_value_ok(const char *p, size_t n)
{
    return value_ok(p, n);
}

int hb_h2m_name_ok(const char *p, size_t n)
{
    return name_ok(p, n);
}

static int named(const char *name, size_t nlen, const char *lower, size_t len)
{
    return nlen == len && memcmp(name, lower, len) == 0;
}

int hb_h2m_connection_specific(const char *name, size_t nlen, const char *value, size_t vlen)
{
    switch (nlen) {
    case 2: return hb_name_is(name, nlen, "te", 2) && !hb_name_is(value, vlen, "trailers", 8);
    case 7: return hb_name_is(name, nlen, "upgrade", 7);
    case 10:
        return hb_name_is(name, nlen, "connection", 10) || hb_name_is(name, nlen, "keep-alive", 10);
    case 16: return hb_name_is(name, nlen, "proxy-connection", 16);
    case 17: return hb_name_is(name, nlen, "transfer-encoding", 17);
    default: return 0;
    }
}

/* A content-length (RFC 9110 section 8.6) in a head whose status is
 * block_status (0: none came yet). */
static const char *content_length(hb_h2m *m, const char *value, size_t vlen)
{
    if (m->block_status >= 100 && m->block_status < 200)
        return "a content-length in a 1xx response";
    if (m->clen != -1)
        return "a second content-length";
    if (vlen == 0 || vlen > 18)
        return "a content-length that is no number";
    int64_t v = 0;
    for (size_t i = 0; i < vlen; i++) {
        if (value[i] < '0' || value[i] > '9')
            return "a content-length that is no number";
        v = v * 10 + (value[i] - '0');
    }
    /* A 204 has no body (RFC 9110 section 15.3.5); servers in use still
     * say 0, which is kept. */
    if (m->block_status == 204 && v != 0)
        return "a content-length in a 204 response";
    m->clen = v;
    return NULL;
}

/* The field in use at a glance: a name of 1 to 16 small letters and '-',
 * a value of 1 to 32 bytes, printable or obs-text, no HTAB, no space at
 * its ends; whole words, overlapping, no loop. 0: look closer. */
static INLINE int field_plain(const char *name, size_t nlen, const char *value, size_t vlen)
{
    if (nlen - 1 >= 16 || vlen - 1 >= 32)
        return 0; /* (0 wraps) */
    uint64_t n0 = nlen >= 8 ? word_at(name) : short_word(name, nlen);
    uint64_t n1 = nlen >= 8 ? word_at(name + nlen - 8) : n0;
    uint64_t v0, v1, v2, v3;
    if (vlen >= 16) {
        v0 = word_at(value);
        v1 = word_at(value + 8);
        v2 = word_at(value + vlen - 16);
        v3 = word_at(value + vlen - 8);
    } else {
        v0 = vlen >= 8 ? word_at(value) : short_word(value, vlen);
        v1 = v2 = v3 = vlen >= 8 ? word_at(value + vlen - 8) : v0;
    }
    /* (One test of all the words: no branch between them.) */
    uint64_t bad = (name_word_good(n0) & name_word_good(n1)) ^ HIGHS;
    bad |= value_word_bad(v0) | value_word_bad(v1) | value_word_bad(v2) | value_word_bad(v3);
    return bad == 0 && value[0] != ' ' && value[vlen - 1] != ' ';
}

const char *hb_h2m_field(hb_h2m *m, const char *name, size_t nlen, const char *value, size_t vlen,
                         int *bad_status)
{
    *bad_status = 0;
    if (nlen > 0 && name[0] == ':') {
        /* RFC 9113 section 8.3: pseudo-fields before the rest, in a head
         * alone; a response's only one is :status, once. */
        if (!named(name, nlen, ":status", 7))
            return "a pseudo-header field a response does not have";
        if (m->trailers || m->block_regular || m->block_status)
            return "a pseudo-header field out of place";
        int status = hb_parse_status_code(value, vlen);
        if (status < 0 || status == 101) {
            *bad_status = 1; /* (101 is no upgrade here: RFC 9113 section 8.6) */
            return "invalid status code";
        }
        m->block_status = status;
        return NULL;
    }
    m->block_regular = 1;
    if (!field_plain(name, nlen, value, vlen)) {
        if (!name_ok(name, nlen))
            return "a field name that is not a lowercase token";
        if (!value_ok(value, vlen))
            return "a field value with a control character or whitespace at an end";
    }
    if (hb_h2m_connection_specific(name, nlen, value, vlen))
        return "a connection-specific field";
    if (!m->trailers && named(name, nlen, "content-length", 14))
        return content_length(m, value, vlen);
    return NULL;
}

const char *hb_h2m_block_end(hb_h2m *m, int end_stream)
{
    if (m->trailers)
        return end_stream ? NULL : "a header block after the head without END_STREAM";
    if (m->block_status == 0)
        return "a response head without :status";
    if (m->block_status < 200)
        return end_stream ? "a 1xx response that ended the stream" : NULL;
    m->status = m->block_status;
    return NULL;
}

static int bodiless(const hb_h2m *m)
{
    return m->nobody || m->status == 204 || m->status == 304;
}

const char *hb_h2m_data(hb_h2m *m, size_t n)
{
    if (m->status == 0)
        return "DATA before the response's head";
    if (n > 0 && bodiless(m))
        return "a body in a response that has none (to HEAD, or 204 or 304)";
    m->got += n;
    if (m->clen >= 0 && m->got > (uint64_t)m->clen)
        return "more body than its content-length";
    return NULL;
}

const char *hb_h2m_end(hb_h2m *m)
{
    if (m->status == 0)
        return "the stream ended before a final response";
    if (m->clen >= 0 && !bodiless(m) && m->got != (uint64_t)m->clen)
        return "less body than its content-length";
    return NULL;
}
