// TLS for the engine's connections: OpenSSL 3 (Debian's libssl) over the non-blocking sockets
// the event loops own. Each call clears the thread's error queue first, so SSL_get_error sees
// only what this call left; the results are the JOTTER_TLS_* codes of CEngine.h.
#include "CEngine.h"
#include <errno.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

/// The protocols a context offers in ALPN, in the server's order of preference, in wire form
/// (length-prefixed names), kept in the context's ex_data slot.
static int alpn_index = -1;

static void alpn_free(void *parent, void *pointer, CRYPTO_EX_DATA *data, int index, long argl, void *argp) {
    (void)parent; (void)data; (void)index; (void)argl; (void)argp;
    OPENSSL_free(pointer);
}

typedef struct {
    size_t length;
    unsigned char bytes[];
} alpn_list;

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *out_length,
                       const unsigned char *offered, unsigned int offered_length, void *arg) {
    (void)arg;
    const alpn_list *ours = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), alpn_index);
    if (!ours) return SSL_TLSEXT_ERR_NOACK;
    // Ours first: the first of our protocols the client offers.
    for (size_t at = 0; at < ours->length; at += 1 + ours->bytes[at]) {
        for (unsigned int theirs = 0; theirs < offered_length; theirs += 1 + offered[theirs]) {
            if (offered[theirs] == ours->bytes[at] && theirs + 1 + offered[theirs] <= offered_length
                && memcmp(offered + theirs + 1, ours->bytes + at + 1, ours->bytes[at]) == 0) {
                *out = offered + theirs + 1;
                *out_length = offered[theirs];
                return SSL_TLSEXT_ERR_OK;
            }
        }
    }
    // None in common: go on without ALPN (the connection then speaks HTTP/1.1).
    return SSL_TLSEXT_ERR_NOACK;
}

static void describe(const char *what, char *error, size_t capacity) {
    unsigned long code = ERR_peek_last_error();
    char reason[160] = "";
    if (code) ERR_error_string_n(code, reason, sizeof reason);
    snprintf(error, capacity, "%s%s%s", what, code ? ": " : "", reason);
    ERR_clear_error();
}

void *jotter_tls_context_create(const char *certificate, size_t certificate_length, const char *key, size_t key_length,
                                const unsigned char *alpn, size_t alpn_length, char *error, size_t error_capacity) {
    ERR_clear_error();
    if (alpn_index < 0) alpn_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, alpn_free);
    SSL_CTX *context = SSL_CTX_new(TLS_server_method());
    if (!context) { describe("cannot create a TLS context", error, error_capacity); return NULL; }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
    // Writes behave as send(): partial, retried from a buffer that may move; an idle connection
    // gives its record buffers back.
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_id_context(context, (const unsigned char *)"jotter", 6);

    BIO *chain = BIO_new_mem_buf(certificate, (int)certificate_length);
    X509 *leaf = chain ? PEM_read_bio_X509(chain, NULL, NULL, NULL) : NULL;
    if (!leaf || SSL_CTX_use_certificate(context, leaf) != 1) {
        describe("the certificate file holds no PEM certificate", error, error_capacity);
        goto fail;
    }
    X509_free(leaf);
    leaf = NULL;
    // The rest of the file: the intermediate certificates, sent after the leaf.
    X509 *next;
    while ((next = PEM_read_bio_X509(chain, NULL, NULL, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(context, next) != 1) {
            X509_free(next);
            describe("cannot use the certificate chain", error, error_capacity);
            goto fail;
        }
    }
    ERR_clear_error();  // the end of the file reads as "no start line"
    BIO_free(chain);
    chain = NULL;

    BIO *keys = BIO_new_mem_buf(key, (int)key_length);
    EVP_PKEY *private_key = keys ? PEM_read_bio_PrivateKey(keys, NULL, NULL, NULL) : NULL;
    BIO_free(keys);
    if (!private_key) {
        describe("the key file holds no PEM private key", error, error_capacity);
        goto fail;
    }
    int used = SSL_CTX_use_PrivateKey(context, private_key);
    EVP_PKEY_free(private_key);
    if (used != 1 || SSL_CTX_check_private_key(context) != 1) {
        describe("the key is not the certificate's", error, error_capacity);
        goto fail;
    }

    if (alpn_length > 0) {
        alpn_list *list = OPENSSL_malloc(sizeof(alpn_list) + alpn_length);
        if (!list) goto fail;
        list->length = alpn_length;
        memcpy(list->bytes, alpn, alpn_length);
        SSL_CTX_set_ex_data(context, alpn_index, list);
        SSL_CTX_set_alpn_select_cb(context, select_alpn, NULL);
    }
    return context;

fail:
    if (leaf) X509_free(leaf);
    if (chain) BIO_free(chain);
    SSL_CTX_free(context);
    return NULL;
}

void jotter_tls_context_free(void *context) { SSL_CTX_free(context); }

void *jotter_tls_new(void *context, int fd) {
    ERR_clear_error();
    SSL *ssl = SSL_new(context);
    if (!ssl) return NULL;
    if (SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

void jotter_tls_free(void *ssl) { SSL_free(ssl); }

/// What an SSL call that returned `result` came to, when it did not succeed.
static long failure(SSL *ssl, int result) {
    switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ: return JOTTER_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return JOTTER_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return JOTTER_TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        // The peer closed the socket without a close_notify: its end, as for plain TCP.
        if (ERR_peek_error() == 0 && (errno == 0 || errno == ECONNRESET || errno == EPIPE)) return JOTTER_TLS_CLOSED;
        return JOTTER_TLS_FAILED;
    case SSL_ERROR_SSL:
        // OpenSSL 3 reports an EOF without close_notify as an SSL error of its own.
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return JOTTER_TLS_CLOSED;
        return JOTTER_TLS_FAILED;
    default: return JOTTER_TLS_FAILED;
    }
}

/// Clears the error queue and errno before an SSL I/O call, so what it leaves is its own.
static void begin(void) {
    ERR_clear_error();
    errno = 0;
}

/// An SSL I/O call's result: `moved` when it succeeded, else its failure (error queue cleared).
static long finish(SSL *ssl, int result, size_t moved) {
    if (result == 1) return (long)moved;
    long code = failure(ssl, result);
    ERR_clear_error();
    return code;
}

long jotter_tls_handshake(void *ssl) {
    begin();
    return finish(ssl, SSL_do_handshake(ssl), 0);
}

long jotter_tls_read(void *ssl, void *buffer, size_t capacity) {
    begin();
    size_t read = 0;
    int result = SSL_read_ex(ssl, buffer, capacity, &read);
    return finish(ssl, result, read);
}

long jotter_tls_write(void *ssl, const void *buffer, size_t length) {
    begin();
    size_t written = 0;
    int result = SSL_write_ex(ssl, buffer, length, &written);
    return finish(ssl, result, written);
}

int jotter_tls_pending(void *ssl) { return SSL_pending(ssl); }

void jotter_tls_shutdown(void *ssl) {
    ERR_clear_error();
    // One attempt at our close_notify; the socket's write side closes right after either way.
    (void)SSL_shutdown(ssl);
    ERR_clear_error();
}

size_t jotter_tls_alpn(void *ssl, char *protocol, size_t capacity) {
    const unsigned char *name = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl, &name, &length);
    if (!name || length >= capacity) return 0;
    memcpy(protocol, name, length);
    protocol[length] = 0;
    return length;
}
