// OpenSSL's TLS client, for the SDK's own HTTPS connections (a private CA, or no verification),
// which URLSession on Linux cannot be told about. Macros Swift cannot import are wrapped here.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

// A client context: TLS 1.2 or later; verifying against `ca_file` (a PEM bundle), the system's
// store when it is NULL, or nothing when `verify` is 0. NULL when the CA file cannot be read.
static inline SSL_CTX *jotter_tls_context(const char *ca_file, int verify) {
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (context == NULL) return NULL;
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (verify) {
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
        int loaded = ca_file != NULL ? SSL_CTX_load_verify_locations(context, ca_file, NULL) : SSL_CTX_set_default_verify_paths(context);
        if (loaded != 1) { SSL_CTX_free(context); return NULL; }
    } else {
        SSL_CTX_set_verify(context, SSL_VERIFY_NONE, NULL);
    }
    return context;
}

// A connection over socket `fd` to `host` (a name: SNI and the name checked; an address: the
// address checked). NULL on failure.
static inline SSL *jotter_tls_connection(SSL_CTX *context, int fd, const char *host, int is_address) {
    SSL *ssl = SSL_new(context);
    if (ssl == NULL) return NULL;
    int ok = SSL_set_fd(ssl, fd);
    if (ok == 1 && !is_address) ok = (int)SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
    if (ok == 1 && is_address) ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
    if (ok != 1) { SSL_free(ssl); return NULL; }
    return ssl;
}

// The last OpenSSL error in words ("" when there is none), and clears the queue.
static inline const char *jotter_tls_error(void) {
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    return code == 0 ? "" : ERR_reason_error_string(code) != NULL ? ERR_reason_error_string(code) : "unknown error";
}
