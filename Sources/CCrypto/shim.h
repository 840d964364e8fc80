// SHA256_Init/Update/Final and SHA256_CTX are deprecated in OpenSSL 3 (in favour of EVP) but
// still built and exported; they are the only way to read and restore a running SHA-256's
// state, which a resumable upload continued by another instance needs (JotterHTTP's SHA256).
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/sha.h>
