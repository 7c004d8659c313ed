/* route.c: the embedded server's endpoints. */
#define _GNU_SOURCE
#include "route.h"

#include "parser.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

int hb_route_static_open(hb_route_static *st, const char *dir)
{
    st->dir_fd = -1;
    if (dir == NULL)
        return 0;
    st->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return st->dir_fd < 0 ? -1 : 0;
}

void hb_route_static_close(hb_route_static *st)
{
    if (st->dir_fd >= 0)
        close(st->dir_fd);
    st->dir_fd = -1;
}

const char *hb_route_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 508: return "Loop Detected";
    default: return "Unknown";
    }
}

void hb_route_error(hb_plan *plan, int status, const char *why)
{
    if (plan->file_fd >= 0)
        close(plan->file_fd);
    plan->file_fd = -1;
    plan->status = status;
    plan->src = HB_SRC_TEXT;
    plan->text = why;
    plan->length = strlen(why);
    plan->content_type = "text/plain";
    plan->delay_ns = 0;
    plan->keep_body = 0;
    plan->unframed = 0; /* its text has a length */
}

static int is(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

/* The value of `name` in a query string as a number no larger than max.
 * Returns 0, or -1 when it is missing, not all digits, or too large. */
static int query_number(const char *q, size_t qlen, const char *name, uint64_t max, uint64_t *out)
{
    size_t nl = strlen(name);
    const char *p = q, *end = q + qlen;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        if ((size_t)(stop - p) > nl && memcmp(p, name, nl) == 0 && p[nl] == '=') {
            const char *d = p + nl + 1;
            uint64_t v = 0;
            if (d == stop)
                return -1;
            for (; d < stop; d++) {
                if (*d < '0' || *d > '9')
                    return -1;
                v = v * 10 + (uint64_t)(*d - '0');
                if (v > max)
                    return -1;
            }
            *out = v;
            return 0;
        }
        p = amp ? amp + 1 : end;
    }
    return -1;
}

static const char *content_type_of(const char *path, size_t n)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html"},      {".htm", "text/html"},       {".txt", "text/plain"},
        {".css", "text/css"},        {".js", "text/javascript"},  {".json", "application/json"},
        {".svg", "image/svg+xml"},   {".png", "image/png"},       {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},     {".gif", "image/gif"},       {".ico", "image/x-icon"},
        {".pdf", "application/pdf"}, {".xml", "application/xml"},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t el = strlen(types[i].ext);
        if (n >= el && strncasecmp(path + n - el, types[i].ext, el) == 0)
            return types[i].type;
    }
    return "application/octet-stream";
}

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* How a static file is opened: O_NONBLOCK, so that a FIFO or a device
 * under the directory cannot block the thread in open(2) (a FIFO's open
 * waits for a writer); only regular files are then served. */
#define STATIC_OPEN (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/* Opens rel (already decoded, relative) beneath the static directory and
 * never outside it: with openat2's RESOLVE_BENEATH, which also refuses
 * symlinks that leave, or else by checking the resolved path. */
static int open_beneath(int dir_fd, const char *rel)
{
#ifdef SYS_openat2
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = STATIC_OPEN;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, dir_fd, rel, &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS)
        return (int)fd;
#endif
    char root[PATH_MAX], link[64], full[PATH_MAX], real[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dir_fd);
    ssize_t n = readlink(link, root, sizeof root - 1);
    if (n < 0)
        return -1;
    root[n] = 0;
    if ((size_t)snprintf(full, sizeof full, "%s/%s", root, rel) >= sizeof full ||
        realpath(full, real) == NULL)
        return -1;
    size_t rl = strlen(root);
    if (strncmp(real, root, rl) != 0 || real[rl] != '/') {
        errno = EXDEV;
        return -1;
    }
    return open(real, STATIC_OPEN | O_NOFOLLOW);
}

static void route_static(const hb_route_static *st, const char *path, size_t n, hb_plan *plan)
{
    char rel[4096];
    size_t w = 0;

    if (st->dir_fd < 0) {
        hb_route_error(plan, 404, "no static directory is being served\n");
        return;
    }
    /* Decode %XX; an encoded NUL, slash or backslash is refused outright
     * rather than given a meaning. */
    for (size_t i = 0; i < n; i++) {
        char c = path[i];
        if (c == '%') {
            int hi = i + 2 < n ? hex(path[i + 1]) : -1, lo = i + 2 < n ? hex(path[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                hb_route_error(plan, 400, "invalid percent-encoding in path\n");
                return;
            }
            c = (char)(hi << 4 | lo);
            i += 2;
            if (c == 0 || c == '/' || c == '\\') {
                hb_route_error(plan, 400, "encoded NUL, slash or backslash in path\n");
                return;
            }
        }
        if (w + 1 >= sizeof rel) {
            hb_route_error(plan, 414, "static path too long\n");
            return;
        }
        rel[w++] = c;
    }
    rel[w] = 0;
    /* No segment may be "." or "..": a path names a file below the root. */
    for (char *seg = rel; *seg;) {
        char *slash = strchr(seg, '/');
        size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.')) {
            hb_route_error(plan, 403, "path leaves the static directory\n");
            return;
        }
        seg = slash ? slash + 1 : seg + len;
    }
    const char *start = rel;
    while (*start == '/')
        start++;
    if (*start == 0) {
        hb_route_error(plan, 404, "not a file\n");
        return;
    }
    int fd = open_beneath(st->dir_fd, start);
    if (fd < 0) {
        hb_route_error(plan, errno == EXDEV || errno == ELOOP ? 403 : 404,
                       errno == EXDEV || errno == ELOOP ? "path leaves the static directory\n"
                                                        : "no such file\n");
        return;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        hb_route_error(plan, 404, "not a file\n");
        return;
    }
    plan->file_fd = fd;
    plan->src = HB_SRC_FILE;
    plan->length = (uint64_t)sb.st_size;
    plan->content_type = content_type_of(rel, w);
}

/* RFC 9112 section 3.2.2: a server accepts the absolute-form, which names
 * the resource by its path and query (the authority is the server's, Host
 * ignored). Moves *t past "http://AUTHORITY" or "https://AUTHORITY"; one
 * with no path is "/" (an empty path's query is for no endpoint here). */
static void origin_form(const char **t, size_t *n)
{
    hb_target_abs a;
    if ((*n > 0 && (*t)[0] == '/') || !hb_parse_absolute_form(*t, *n, &a))
        return; /* (origin-form, the usual one, starts with '/') */
    if (a.path_off == *n || (*t)[a.path_off] == '?') {
        *t = "/";
        *n = 1;
        return;
    }
    *t += a.path_off;
    *n -= a.path_off;
}

void hb_route(const hb_route_static *st, const char *method, size_t mlen, const char *target,
              size_t tlen, hb_plan *plan)
{
    origin_form(&target, &tlen);
    const char *q = memchr(target, '?', tlen);
    size_t plen = q ? (size_t)(q - target) : tlen;
    const char *query = q ? q + 1 : target + tlen;
    size_t qlen = q ? tlen - plen - 1 : 0;
    int get = is(method, mlen, "GET"), head = is(method, mlen, "HEAD");
    uint64_t n;

    memset(plan, 0, sizeof *plan);
    plan->file_fd = -1;
    plan->status = 200;
    plan->head_only = head;

    if (is(target, plen, "/echo")) {
        if (!is(method, mlen, "POST") && !is(method, mlen, "PUT")) {
            hb_route_error(plan, 405, "/echo takes POST or PUT\n");
            plan->allow = "POST, PUT";
            return;
        }
        plan->src = HB_SRC_ECHO;
        plan->keep_body = 1;
        return;
    }
    if (!get && !head) {
        hb_route_error(plan, 405, "this endpoint takes GET or HEAD\n");
        plan->allow = "GET, HEAD";
        return;
    }
    if (is(target, plen, "/rnd") || is(target, plen, "/chunked")) {
        if (query_number(query, qlen, "c", HB_RND_MAX, &n) != 0) {
            hb_route_error(plan, 400, "c must be a whole number from 0 to 1073741824\n");
            return;
        }
        plan->src = target[1] == 'r' ? HB_SRC_RND : HB_SRC_CHUNKED;
        plan->length = n;
        plan->content_type = "text/plain";
    } else if (plen > 8 && memcmp(target, "/static/", 8) == 0) {
        route_static(st, target + 8, plen - 8, plan);
    } else if (plen >= 8 && memcmp(target, "/status/", 8) == 0) {
        /* Whatever follows /status/ is this route's: a code that is not
         * three digits (/status/99, /status/1000, /status/) is refused as
         * a code, not as no endpoint. */
        int code = plen == 11 ? 0 : -1;
        for (size_t i = 8; code >= 0 && i < plen; i++)
            code = target[i] >= '0' && target[i] <= '9' ? code * 10 + (target[i] - '0') : -1;
        if (code < 200 || code > 599) {
            hb_route_error(plan, 400, "status must be from 200 to 599\n");
            return;
        }
        plan->status = code;
    } else if (is(target, plen, "/delay")) {
        if (query_number(query, qlen, "ms", HB_DELAY_MAX_MS, &n) != 0) {
            hb_route_error(plan, 400, "ms must be a whole number from 0 to 60000\n");
            return;
        }
        plan->delay_ns = (int64_t)n * 1000000;
    } else {
        hb_route_error(plan, 404,
                       "no such endpoint: try /rnd?c=N, /echo, /static/PATH, "
                       "/status/CODE, /delay?ms=N or /chunked?c=N\n");
    }
}
