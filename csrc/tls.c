/* tls.c: TLS on OpenSSL as a transport beside plain TCP. */
#define _GNU_SOURCE
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "httpbench needs OpenSSL 3.0 or later (apt-get install libssl-dev)"
#endif

/* The largest TLS record's plaintext (RFC 8446 section 5.1): what a write
 * gathered from several buffers is staged in at a time. */
#define RECORD_MAX 16384
/* A record's first byte: handshake (22) and alert (21), RFC 8446 5.1. */
#define CT_ALERT 0x15
#define CT_HANDSHAKE 0x16

struct hb_tls {
    SSL_CTX *ctx;
    int server;
    int resume;
    int verify;
    char *name;  /* client: the name checked and sent; NULL: none */
    int name_ip; /* the name is an address: no SNI, checked as an IP */
    X509 *cert;  /* the own certificate, for hb_tls_cert_pem; NULL: none */
};

/* Per socket (s->ctx). */
typedef struct {
    SSL *ssl;
    unsigned seen_peer : 1; /* the peer's first byte was looked at */
    unsigned opened : 1;    /* the handshake is done */
    unsigned broken : 1;    /* a fatal error: no close_notify, no more calls */
    unsigned emptied : 1;   /* client: the last read from the socket was short */
    unsigned char first;    /* client: the server's first byte, once seen_peer */
} tls_conn;

/* What a client socket keeps across its connections (s->keep): the newest
 * resumable session the server gave it, and the state of its last
 * connection when that one ended soundly, cleared for the next rather
 * than freed and made again (SSL_new builds some sixty objects), as
 * h2load keeps each client's SSL. Freed by hb_sock_release. */
typedef struct {
    SSL_SESSION *session;
    tls_conn *spare;
} tls_keep;

/* s's keep, made at its first use; NULL when out of memory. */
static tls_keep *keep_of(hb_sock *s)
{
    if (s->keep == NULL)
        s->keep = calloc(1, sizeof(tls_keep));
    return s->keep;
}

/* The last failure's reason, per thread: a failed call's caller reads it
 * at once, on the same thread, and it outlives the socket's close. */
static __thread char last_error[256];

static void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

/* OpenSSL's reason for the failure at the head of this thread's queue, as
 * the verifier gave it when it was the certificate. */
static void note_openssl(const SSL *ssl, const char *fallback)
{
    unsigned long e = ERR_peek_last_error();
    if (e == 0) {
        set_error("%s", fallback);
        return;
    }
    const char *reason = ERR_reason_error_string(e);
    char buf[160];
    if (reason == NULL) {
        ERR_error_string_n(e, buf, sizeof buf);
        reason = buf;
    }
    long vr = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED && vr != X509_V_OK)
        set_error("certificate verify failed: %s", X509_verify_cert_error_string(vr));
    else
        set_error("%s", reason);
    ERR_clear_error();
}

/* Empties this thread's error queue, as SSL_get_error needs before each
 * call (SSL_get_error(3)), at the price of a look where it is empty
 * already, as it nearly always is. ERR_clear_error itself walks all 16
 * slots and frees two strings in each: 32 calls of CRYPTO_free for an
 * empty queue. Called before every read and write (1.2 times a request
 * over HTTP/2 at 10 x 10 streams against nginx), it was 2.3% of the
 * client's CPU there; without it, 5.41 -> 5.31 us a request (5 rounds). */
static void clear_errors(void)
{
    if (ERR_peek_error() != 0)
        ERR_clear_error();
}

/* ------------------------------------------------------------ contexts */

static int is_address(const char *name)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

/* Adds extension nid with an openssl.cnf-style value to a self-signed x. */
static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (ext == NULL)
        return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

/* A fresh self-signed certificate and key for host and "localhost" (EC
 * P-256, valid from an hour ago for a day), installed in t->ctx. */
static int self_signed(hb_tls *t, const char *host)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIGNUM *serial = BN_new();
    char san[256];
    int rc = -1;
    if (key == NULL || x == NULL || serial == NULL)
        goto done;
    /* A random serial: a browser or client that saw an earlier one with
     * the same issuer must not mistake the two. */
    if (!BN_rand(serial, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
        BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) == NULL)
        goto done;
    const char *cn = host != NULL && host[0] != 0 ? host : "localhost";
    X509_NAME *name = X509_get_subject_name(x);
    if (!X509_set_version(x, 2) || X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(x), 86400) == NULL || !X509_set_pubkey(x, key) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                                    0) ||
        !X509_set_issuer_name(x, name))
        goto done;
    /* The names a client may use: localhost, both loopbacks, and the bound
     * host (an address as an IP entry, a name as a DNS one). */
    int n = snprintf(san, sizeof san, "DNS:localhost,IP:127.0.0.1,IP:::1");
    if (host != NULL && host[0] != 0 && strcmp(host, "localhost") != 0 &&
        strcmp(host, "127.0.0.1") != 0 && strcmp(host, "::1") != 0)
        n += snprintf(san + n, sizeof san - (size_t)n, ",%s:%s", is_address(host) ? "IP" : "DNS",
                      host);
    if ((size_t)n >= sizeof san || add_ext(x, NID_subject_alt_name, san) != 0 ||
        add_ext(x, NID_basic_constraints, "critical,CA:TRUE") != 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign") != 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth") != 0 ||
        add_ext(x, NID_subject_key_identifier, "hash") != 0 ||
        add_ext(x, NID_authority_key_identifier, "keyid:always") != 0 ||
        !X509_sign(x, key, EVP_sha256()))
        goto done;
    if (SSL_CTX_use_certificate(t->ctx, x) != 1 || SSL_CTX_use_PrivateKey(t->ctx, key) != 1)
        goto done;
    t->cert = x;
    x = NULL;
    rc = 0;
done:
    BN_free(serial);
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

/* A client keeps the newest resumable session the server gave each socket
 * (TLS 1.3 sends its tickets after the handshake, so this is called from
 * inside reads). The socket frees it (hb_sock_release). */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    hb_sock *s = SSL_get_app_data(ssl);
    tls_keep *k;
    if (s == NULL || !SSL_SESSION_is_resumable(sess) || (k = keep_of(s)) == NULL)
        return 0;
    SSL_SESSION_free(k->session);
    k->session = sess;
    return 1; /* the reference is ours */
}

/* Server: ALPN answers h2 when offered and served (arg non-NULL), else
 * http/1.1 when offered, and goes on without ALPN otherwise (a client
 * offering only h2 then speaks HTTP/1.1 or leaves). */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    static const struct {
        const char *name;
        unsigned char len;
    } PREFERRED[] = {{"h2", 2}, {"http/1.1", 8}};
    for (int k = arg != NULL ? 0 : 1; k < 2; k++)
        for (unsigned int i = 0; i < inlen && i + 1 + in[i] <= inlen; i += 1u + in[i]) {
            if (in[i] == PREFERRED[k].len && memcmp(in + i + 1, PREFERRED[k].name, in[i]) == 0) {
                *out = in + i + 1;
                *outlen = in[i];
                return SSL_TLSEXT_ERR_OK;
            }
        }
    return SSL_TLSEXT_ERR_NOACK;
}

/* Applies the settings both sides share. */
static int common_settings(hb_tls *t, const hb_tls_config *cfg, char *err, size_t errlen)
{
    /* Partial writes, each a record, let a write return what one record
     * took; a retried write may come from another address (the staging
     * buffer, or the caller's own). */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* An end of stream without close_notify is an end of stream: HTTP's
     * framing says whether what came was whole, as over TCP. */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if ((cfg->min_version && !SSL_CTX_set_min_proto_version(t->ctx, cfg->min_version)) ||
        (cfg->max_version && !SSL_CTX_set_max_proto_version(t->ctx, cfg->max_version))) {
        snprintf(err, errlen, "this OpenSSL cannot limit TLS to the versions asked for");
        return -1;
    }
    if (cfg->ciphers != NULL && SSL_CTX_set_cipher_list(t->ctx, cfg->ciphers) != 1) {
        snprintf(err, errlen, "no cipher in the list \"%s\" is known to OpenSSL", cfg->ciphers);
        return -1;
    }
    /* TLS 1.3's suites in the order browsers and curl's nghttp2 peers
     * offer them, AES-128 first, not OpenSSL's (AES-256 first): the suite
     * most traffic runs on, and its key schedule hashes with SHA-256, not
     * SHA-384 (a tenth of a resumed handshake's CPU here). */
    const char *suites = cfg->ciphersuites != NULL ? cfg->ciphersuites : HB_TLS13_SUITES;
    if (SSL_CTX_set_ciphersuites(t->ctx, suites) != 1) {
        snprintf(err, errlen, "no TLS 1.3 cipher suite in \"%s\" is known to OpenSSL", suites);
        return -1;
    }
    if (cfg->certfile != NULL) {
        const char *keyfile = cfg->keyfile != NULL ? cfg->keyfile : cfg->certfile;
        if (SSL_CTX_use_certificate_chain_file(t->ctx, cfg->certfile) != 1) {
            note_openssl(NULL, "cannot load");
            snprintf(err, errlen, "cannot load the certificate %s: %s", cfg->certfile, last_error);
            return -1;
        }
        if (SSL_CTX_use_PrivateKey_file(t->ctx, keyfile, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(t->ctx) != 1) {
            note_openssl(NULL, "cannot load");
            snprintf(err, errlen, "cannot load the key %s: %s", keyfile, last_error);
            return -1;
        }
        X509 *x = SSL_CTX_get0_certificate(t->ctx);
        if (x != NULL && X509_up_ref(x))
            t->cert = x;
    } else if (cfg->keyfile != NULL) {
        snprintf(err, errlen, "a key (%s) needs its certificate too", cfg->keyfile);
        return -1;
    }
    return 0;
}

/* Unverified, the chain's check is skipped, not merely ignored: OpenSSL
 * builds and checks it under SSL_VERIFY_NONE too (a self-signed
 * certificate's own signature included), work whose answer no one reads.
 * The handshake's signature (CertificateVerify) is still checked. */
static int trust_any(X509_STORE_CTX *store, void *arg)
{
    (void)store;
    (void)arg;
    return 1;
}

static int client_settings(hb_tls *t, const hb_tls_config *cfg, char *err, size_t errlen)
{
    /* ALPN offers the one protocol the client will speak (RFC 7301). */
    static const unsigned char http1[] = "\x08http/1.1", h2[] = "\x02h2";
    const unsigned char *alpn = cfg->http2 ? h2 : http1;
    unsigned alpn_len = cfg->http2 ? sizeof h2 - 1 : sizeof http1 - 1;
    t->verify = cfg->verify;
    t->resume = cfg->resume;
    if (cfg->server_hostname != NULL && cfg->server_hostname[0] != 0) {
        t->name = strdup(cfg->server_hostname);
        if (t->name == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        t->name_ip = is_address(t->name);
    }
    if (SSL_CTX_set_alpn_protos(t->ctx, alpn, alpn_len) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (cfg->verify) {
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
        int ok = cfg->cafile != NULL ? SSL_CTX_load_verify_locations(t->ctx, cfg->cafile, NULL)
                                     : SSL_CTX_set_default_verify_paths(t->ctx);
        if (ok != 1) {
            note_openssl(NULL, "cannot load");
            snprintf(err, errlen, "cannot load the CA certificates %s: %s",
                     cfg->cafile ? cfg->cafile : "(the system's)", last_error);
            return -1;
        }
    } else {
        SSL_CTX_set_cert_verify_callback(t->ctx, trust_any, NULL);
    }
    /* Read ahead: one read() takes what the socket holds, up to the
     * record buffer OpenSSL keeps anyway (several records of responses),
     * where without it each record costs a read() of its header and one of
     * its body; SSL_has_pending (the transport's `pending`) then tells
     * the loop more is buffered, so it reads on without a system call and
     * writes its next requests once, not once a record. */
    SSL_CTX_set_read_ahead(t->ctx, 1);
    if (cfg->resume) {
        SSL_CTX_set_session_cache_mode(t->ctx,
                                       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(t->ctx, on_new_session);
    }
    return 0;
}

static int server_settings(hb_tls *t, const hb_tls_config *cfg, char *err, size_t errlen)
{
    /* Stateless tickets resume sessions; a server-side cache would hold a
     * session per handshake for minutes (memory a run of new connections
     * would grow). */
    SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_alpn_select_cb(t->ctx, select_alpn, cfg->http2 ? (void *)t : NULL);
    if (cfg->certfile == NULL && self_signed(t, cfg->cert_host) != 0) {
        note_openssl(NULL, "failed");
        snprintf(err, errlen, "cannot make a self-signed certificate: %s", last_error);
        return -1;
    }
    return 0;
}

hb_tls *hb_tls_new(const hb_tls_config *cfg, char *err, size_t errlen)
{
    hb_tls *t = calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ERR_clear_error();
    t->server = cfg->server;
    t->ctx = SSL_CTX_new(cfg->server ? TLS_server_method() : TLS_client_method());
    if (t->ctx == NULL) {
        note_openssl(NULL, "failed");
        snprintf(err, errlen, "cannot make a TLS context: %s", last_error);
        goto error;
    }
    if (common_settings(t, cfg, err, errlen) != 0 ||
        (cfg->server ? server_settings(t, cfg, err, errlen) : client_settings(t, cfg, err, errlen)))
        goto error;
    return t;
error:
    hb_tls_free(t);
    return NULL;
}

void hb_tls_free(hb_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    X509_free(t->cert);
    free(t->name);
    free(t);
}

char *hb_tls_cert_pem(const hb_tls *t)
{
    if (t->cert == NULL)
        return NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    char *out = NULL, *data;
    if (bio != NULL && PEM_write_bio_X509(bio, t->cert) == 1) {
        long n = BIO_get_mem_data(bio, &data);
        out = malloc((size_t)n + 1);
        if (out != NULL) {
            memcpy(out, data, (size_t)n);
            out[n] = 0;
        }
    }
    BIO_free(bio);
    return out;
}

const char *hb_tls_library(void)
{
    return OpenSSL_version(OPENSSL_VERSION);
}

/* ------------------------------------------------------------ sockets */

/* Client: watches OpenSSL's reads from the socket. During the handshake
 * it keeps the server's first byte, so that a failed handshake with a
 * plain HTTP server names it rather than OpenSSL's "wrong version number".
 * (Looking before OpenSSL reads would race it: its read follows the
 * ClientHello's write within one call, and a fast server answers in
 * between.) After it, it notes whether a read came back short, which
 * empties a TCP socket: tls_drained then spares the loop a read that
 * could only fail with EAGAIN (read-ahead asks for the record buffer's
 * room, several records, so a record handed out says nothing itself). */
static long watch_reads(BIO *b, int oper, const char *argp, size_t len, int argi, long argl,
                        int ret, size_t *processed)
{
    (void)argi;
    (void)argl;
    if (oper != (BIO_CB_READ | BIO_CB_RETURN))
        return ret;
    tls_conn *c = (tls_conn *)BIO_get_callback_arg(b);
    size_t got = ret > 0 && processed != NULL ? *processed : 0;
    c->emptied = got < len;
    if (got > 0 && !c->seen_peer) {
        c->seen_peer = 1;
        c->first = (unsigned char)argp[0];
    }
    return ret;
}

/* A client's SSL for its next connection: its last one's, cleared, when it
 * kept one (SSL_clear keeps the context's settings, the record buffers
 * and the last session, which is replaced: a session offered must be the
 * newest, or none when not resuming); else a new one. NULL when out of
 * memory. */
static tls_conn *client_conn(hb_sock *s, const hb_tls *t)
{
    tls_keep *k = s->keep;
    tls_conn *c = k != NULL ? k->spare : NULL;
    if (c != NULL) {
        k->spare = NULL;
        SSL *ssl = c->ssl;
        memset(c, 0, sizeof *c);
        c->ssl = ssl;
        if (SSL_clear(ssl) && SSL_set_session(ssl, t->resume ? k->session : NULL))
            return c;
        SSL_free(ssl);
        free(c);
        ERR_clear_error();
    }
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->ssl = SSL_new(t->ctx);
    if (c->ssl == NULL ||
        (t->resume && k != NULL && k->session != NULL && !SSL_set_session(c->ssl, k->session))) {
        SSL_free(c->ssl);
        free(c);
        return NULL;
    }
    return c;
}

/* The SSL for a socket just made or attached (s->fd set). Returns 0, or -1
 * with errno (the socket is left to the caller). */
static int conn_new(hb_sock *s)
{
    const hb_tls *t = s->shared;
    tls_conn *c = t->server ? calloc(1, sizeof *c) : client_conn(s, t);
    if (c == NULL)
        goto nomem;
    if (t->server && (c->ssl = SSL_new(t->ctx)) == NULL)
        goto nomem;
    if (!SSL_set_fd(c->ssl, s->fd))
        goto nomem;
    if (t->server) {
        SSL_set_accept_state(c->ssl);
    } else {
        SSL_set_connect_state(c->ssl);
        SSL_set_app_data(c->ssl, s);
        /* As curl: SNI for a name, never for an address (RFC 6066 section
         * 3); the certificate is checked for the name or the address. */
        if (t->name != NULL && !t->name_ip && !SSL_set_tlsext_host_name(c->ssl, t->name))
            goto nomem;
        if (t->verify && t->name != NULL &&
            !(t->name_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), t->name)
                         : SSL_set1_host(c->ssl, t->name)))
            goto nomem;
        BIO *rbio = SSL_get_rbio(c->ssl);
        BIO_set_callback_arg(rbio, (char *)c);
        BIO_set_callback_ex(rbio, watch_reads);
    }
    s->ctx = c;
    return 0;
nomem:
    if (c != NULL)
        SSL_free(c->ssl);
    free(c);
    ERR_clear_error();
    errno = ENOMEM;
    return -1;
}

/* Closes the socket, and frees its SSL or, a client's that ended soundly,
 * keeps it for the next connection (client_conn). A close_notify goes
 * first when the session is sound (RFC 8446 section 6.1), without waiting
 * for the peer's. The process must ignore SIGPIPE (Python does): OpenSSL
 * writes with write(2), which a reset connection answers with it. */
static void tls_close(hb_sock *s)
{
    tls_conn *c = s->ctx;
    if (c != NULL) {
        int said = 0; /* the close_notify was sent or is on its way */
        if (c->opened && !c->broken) {
            int fl = fcntl(s->fd, F_GETFL);
            if (fl >= 0 && !(fl & O_NONBLOCK))
                fcntl(s->fd, F_SETFL, fl | O_NONBLOCK); /* never wait to say goodbye */
            said = SSL_shutdown(c->ssl) >= 0;
        }
        /* (Not s->shared's word: its owner may have freed it first.) */
        tls_keep *k = said && !SSL_is_server(c->ssl) ? keep_of(s) : NULL;
        if (k != NULL && k->spare == NULL) {
            k->spare = c;
        } else {
            SSL_free(c->ssl);
            free(c);
        }
        ERR_clear_error();
        s->ctx = NULL;
    }
    hb_net_tcp.close(s);
}

enum { OP_READ, OP_WRITE, OP_HANDSHAKE };

/* The outcome of an SSL call that returned rc <= 0, as the transport's
 * contract has it: -1 with errno (EAGAIN with s->wants, EPROTO with the
 * reason, the socket's own), or 0 for an end of stream on a read. */
static ssize_t outcome(hb_sock *s, tls_conn *c, int rc, int op)
{
    int sys = errno;
    int e = SSL_get_error(c->ssl, rc);
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        s->wants = e == SSL_ERROR_WANT_READ ? HB_SOCK_WANT_READ : HB_SOCK_WANT_WRITE;
        /* A signal cut the wait short: the caller must hear it (PEP 475). */
        errno = sys == EINTR ? EINTR : EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN: /* close_notify, or the end of the stream */
    case SSL_ERROR_SYSCALL:
        if (e == SSL_ERROR_SYSCALL && sys != 0) {
            c->broken = 1;
            errno = sys;
            if (op == OP_HANDSHAKE) {
                set_error("%s during the TLS handshake", strerror(sys));
                errno = EPROTO;
            }
            return -1;
        }
        if (op == OP_READ)
            return 0;
        c->broken = 1;
        if (op == OP_WRITE) {
            errno = EPIPE;
            return -1;
        }
        set_error("the server closed the connection during the TLS handshake");
        errno = EPROTO;
        return -1;
    default:
        c->broken = 1;
        note_openssl(c->ssl, "TLS failed");
        errno = EPROTO;
        return -1;
    }
}

static int tls_connect_start(hb_sock *s, const hb_addr *a)
{
    int rc = hb_net_tcp.connect_start(s, a);
    if (rc < 0)
        return -1;
    if (conn_new(s) != 0) {
        int err = errno;
        hb_net_tcp.close(s);
        errno = err;
        return -1;
    }
    return rc;
}

static int tls_connect_done(hb_sock *s)
{
    return hb_net_tcp.connect_done(s);
}

static int tls_handshake(hb_sock *s)
{
    tls_conn *c = s->ctx;
    clear_errors();
    errno = 0;
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1) {
        c->opened = 1;
        return 0;
    }
    rc = (int)outcome(s, c, rc, OP_HANDSHAKE);
    if (errno == EPROTO && c->seen_peer && c->first != CT_HANDSHAKE && c->first != CT_ALERT) {
        if (c->first >= 'A' && c->first <= 'Z')
            set_error("the server answered in plain HTTP, not TLS: is the URL http://?");
        else
            set_error("the server answered with something other than TLS (first byte 0x%02x)",
                      c->first);
    }
    return rc;
}

static int tls_attach(hb_sock *s, int fd)
{
    if (hb_net_tcp.attach(s, fd) != 0)
        return -1;
    if (conn_new(s) != 0) {
        s->fd = -1; /* the caller's to close */
        return -1;
    }
    return 0;
}

/* Server: what the client sent first, before OpenSSL sees it. A plain HTTP
 * request gets nginx's courtesy, a 400 saying what happened (its request
 * read first, so the close that follows is no reset that could destroy the
 * answer); anything else that is no handshake is refused at once. Returns
 * 1 to go on with TLS, or what a read returns (0, -1 with errno). */
static ssize_t look_at_client(hb_sock *s, tls_conn *c)
{
    static const char courtesy[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 41\r\n"
        "Connection: close\r\n\r\nplain HTTP request sent to an HTTPS port\n";
    unsigned char b;
    ssize_t n = recv(s->fd, &b, 1, MSG_PEEK);
    if (n <= 0) {
        if (n < 0)
            s->wants = HB_SOCK_WANT_READ;
        return n;
    }
    c->seen_peer = 1;
    if (b == CT_HANDSHAKE)
        return 1;
    c->broken = 1;
    if (b >= 'A' && b <= 'Z') {
        char sink[4096];
        for (int i = 0; i < 16 && recv(s->fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
            ;
        ssize_t w = send(s->fd, courtesy, sizeof courtesy - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)w; /* best effort: the connection closes either way */
        set_error("plain HTTP request sent to an HTTPS port");
    } else {
        set_error("not a TLS handshake (first byte 0x%02x)", b);
    }
    errno = EPROTO;
    return -1;
}

static ssize_t tls_read(hb_sock *s, void *buf, size_t len)
{
    tls_conn *c = s->ctx;
    if (!c->seen_peer && SSL_is_server(c->ssl)) {
        ssize_t rc = look_at_client(s, c);
        if (rc <= 0)
            return rc;
    }
    size_t n;
    clear_errors();
    errno = 0;
    int rc = SSL_read_ex(c->ssl, buf, len, &n);
    if (rc == 1) {
        c->opened = 1;
        return (ssize_t)n;
    }
    return outcome(s, c, rc, OP_READ);
}

/* Gathers up to RECORD_MAX bytes of iov from `skip` bytes in; returns where
 * they are (in iov itself when they lie in one buffer, else copied to
 * stage) and their count in *n (0: nothing left). */
static const void *gather(const struct iovec *iov, int iovcnt, size_t skip, char *stage, size_t *n)
{
    int i = 0;
    while (i < iovcnt && skip >= iov[i].iov_len)
        skip -= iov[i++].iov_len;
    *n = 0;
    if (i == iovcnt)
        return NULL;
    size_t first = iov[i].iov_len - skip;
    if (first >= RECORD_MAX || i == iovcnt - 1) {
        *n = first;
        return (const char *)iov[i].iov_base + skip;
    }
    for (; i < iovcnt && *n < RECORD_MAX; i++, skip = 0) {
        size_t take = iov[i].iov_len - skip;
        if (take > RECORD_MAX - *n)
            take = RECORD_MAX - *n;
        memcpy(stage + *n, (const char *)iov[i].iov_base + skip, take);
        *n += take;
    }
    return stage;
}

/* Writes records until iov is out or the socket would block; returns the
 * bytes taken. A write that would block keeps its record inside OpenSSL,
 * and the caller's retry (which offers the same bytes again, as every
 * caller does) completes it. HB_SOCK_MORE means nothing here: each record
 * is a write of its own. Under HB_SOCK_DONTWAIT (a best-effort write whose
 * caller goes on to write other bytes) a record left inside would be
 * completed by the next, unrelated write: that fails the connection
 * (ENOBUFS) instead. */
static ssize_t tls_writev(hb_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
    static __thread char stage[RECORD_MAX];
    tls_conn *c = s->ctx;
    size_t total = 0;
    for (;;) {
        size_t n, w;
        const void *p = gather(iov, iovcnt, total, stage, &n);
        if (n == 0)
            return (ssize_t)total;
        clear_errors();
        errno = 0;
        int rc = SSL_write_ex(c->ssl, p, n, &w);
        if (rc == 1) {
            total += w;
            continue;
        }
        ssize_t r = outcome(s, c, rc, OP_WRITE);
        if (errno == EAGAIN && (flags & HB_SOCK_DONTWAIT)) {
            c->broken = 1;
            errno = ENOBUFS;
            return -1;
        }
        if (total > 0 && errno == EAGAIN)
            return (ssize_t)total;
        return r;
    }
}

static int tls_idle_ok(hb_sock *s)
{
    tls_conn *c = s->ctx;
    return !SSL_has_pending(c->ssl) && hb_net_tcp.idle_ok(s);
}

static void tls_shutdown_write(hb_sock *s)
{
    tls_conn *c = s->ctx;
    if (c->opened && !c->broken) {
        ERR_clear_error();
        SSL_shutdown(c->ssl);
        ERR_clear_error();
    }
    hb_net_tcp.shutdown_write(s);
}

static int tls_pending(hb_sock *s)
{
    tls_conn *c = s->ctx;
    return SSL_has_pending(c->ssl);
}

static int tls_drained(hb_sock *s)
{
    tls_conn *c = s->ctx;
    return c->emptied && !SSL_has_pending(c->ssl);
}

static const char *tls_error(hb_sock *s)
{
    (void)s;
    return last_error;
}

static const char *tls_alpn(hb_sock *s)
{
    tls_conn *c = s->ctx;
    const unsigned char *p = NULL;
    unsigned n = 0;
    if (c == NULL || !c->opened)
        return "";
    SSL_get0_alpn_selected(c->ssl, &p, &n);
    /* What this side offers or picks (h2, http/1.1): the only answers. */
    if (n == 2 && memcmp(p, "h2", 2) == 0)
        return "h2";
    if (n == 8 && memcmp(p, "http/1.1", 8) == 0)
        return "http/1.1";
    return "";
}

static int tls_describe(hb_sock *s, hb_sock_info *out)
{
    tls_conn *c = s->ctx;
    const hb_tls *t = s->shared;
    if (c == NULL || !c->opened)
        return -1;
    int resumed = SSL_session_reused(c->ssl) == 1;
    if (out == NULL)
        return resumed;
    memset(out, 0, sizeof *out);
    const SSL_CIPHER *ci = SSL_get_current_cipher(c->ssl);
    X509 *cert = SSL_get0_peer_certificate(c->ssl);
    EVP_PKEY *pk = cert != NULL ? X509_get0_pubkey(cert) : NULL;
    int alg_bits;
    /* ab's order: protocol, cipher, the certificate key's bits, the
     * cipher's secret bits. */
    snprintf(out->protocol, sizeof out->protocol, "%s,%s,%d,%d", SSL_get_version(c->ssl),
             ci ? SSL_CIPHER_get_name(ci) : "(none)", pk ? EVP_PKEY_get_bits(pk) : 0,
             ci ? SSL_CIPHER_get_bits(ci, &alg_bits) : 0);
    EVP_PKEY *tmp = NULL;
    if (SSL_get_peer_tmp_key(c->ssl, &tmp) == 1 && tmp != NULL) {
        char group[32] = "";
        size_t glen;
        if (EVP_PKEY_get_base_id(tmp) == EVP_PKEY_EC &&
            EVP_PKEY_get_group_name(tmp, group, sizeof group, &glen) == 1) {
            const char *nist = EC_curve_nid2nist(OBJ_txt2nid(group));
            snprintf(out->temp_key, sizeof out->temp_key, "ECDH %s %d bits", nist ? nist : group,
                     EVP_PKEY_get_bits(tmp));
        } else {
            snprintf(out->temp_key, sizeof out->temp_key, "%s %d bits",
                     OBJ_nid2sn(EVP_PKEY_get_base_id(tmp)), EVP_PKEY_get_bits(tmp));
        }
        EVP_PKEY_free(tmp);
    }
    if (t->name != NULL && !t->name_ip)
        snprintf(out->server_name, sizeof out->server_name, "%s", t->name);
    return resumed;
}

static void tls_release(hb_sock *s)
{
    tls_keep *k = s->keep;
    SSL_SESSION_free(k->session);
    if (k->spare != NULL) {
        SSL_free(k->spare->ssl);
        free(k->spare);
    }
    free(k);
}

const hb_transport hb_net_tls = {
    .name = "tls",
    .connect_start = tls_connect_start,
    .connect_done = tls_connect_done,
    .attach = tls_attach,
    .read = tls_read,
    .writev = tls_writev,
    .sendfile = NULL, /* kernel TLS is not here: the server reads and writes */
    .idle_ok = tls_idle_ok,
    .shutdown_write = tls_shutdown_write,
    .close = tls_close,
    .handshake = tls_handshake,
    .pending = tls_pending,
    .drained = tls_drained,
    .error = tls_error,
    .describe = tls_describe,
    .alpn = tls_alpn,
    .release = tls_release,
};
