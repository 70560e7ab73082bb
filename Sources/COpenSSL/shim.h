// OpenSSL 3 (Debian libssl-dev, pkg-config "openssl"), imported only by the TLS module. The inline functions below
// stand in for OpenSSL's function-like macros, which Swift cannot call, and read a certificate's names in one place.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int kvod_ssl_ctx_set_min_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline long kvod_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }

static inline long kvod_ssl_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }

static inline long kvod_ssl_clear_mode(SSL *ssl, long mode) { return SSL_clear_mode(ssl, mode); }

/// Refuses renegotiation (a denial-of-service lever kvod has no use for).
static inline void kvod_ssl_ctx_refuse_renegotiation(SSL_CTX *ctx) { SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION); }

/// A name as one RFC 2253 line ("CN=kvod,O=example") into `bio`.
static inline int kvod_x509_name_print(BIO *bio, X509_NAME *name) {
    return X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
}

static inline long kvod_ssl_ctx_disable_session_cache(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
}

static inline int kvod_ssl_set_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// The bytes a memory BIO holds, without copying them (`BIO_get_mem_data`); *data is valid until the next write or
/// reset.
static inline long kvod_bio_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

/// A BIO that OpenSSL reads ciphertext from straight out of the owner's buffer: the bytes the network delivered, lent
/// for one `TLSSession.receive` (no copy into a memory BIO first, no buffer of its own). Empty, it answers "retry", so
/// SSL_read says SSL_ERROR_WANT_READ; OpenSSL keeps a record's first part in its own read buffer until the rest comes.
typedef struct {
    const unsigned char *bytes;
    size_t count;
} kvod_source;

static inline int kvod_source_read(BIO *bio, char *out, int length) {
    kvod_source *source = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (source == NULL || out == NULL || length <= 0) return 0;
    if (source->count == 0) {
        BIO_set_retry_read(bio);
        return -1;
    }
    size_t count = source->count < (size_t)length ? source->count : (size_t)length;
    memcpy(out, source->bytes, count);
    source->bytes += count;
    source->count -= count;
    return (int)count;
}

static inline long kvod_source_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number;
    (void)pointer;
    kvod_source *source = BIO_get_data(bio);
    switch (command) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_PENDING: return source ? (long)source->count : 0;
    default: return 0;
    }
}

static inline int kvod_source_create(BIO *bio) {
    kvod_source *source = calloc(1, sizeof(kvod_source));
    if (source == NULL) return 0;
    BIO_set_data(bio, source);
    BIO_set_init(bio, 1);
    return 1;
}

static inline int kvod_source_destroy(BIO *bio) {
    free(BIO_get_data(bio));
    BIO_set_data(bio, NULL);
    return 1;
}

/// The source's BIO_METHOD (made once by the caller and kept for the process).
static inline BIO_METHOD *kvod_source_method_new(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kvod ciphertext source");
    if (method == NULL) return NULL;
    BIO_meth_set_read(method, kvod_source_read);
    BIO_meth_set_ctrl(method, kvod_source_ctrl);
    BIO_meth_set_create(method, kvod_source_create);
    BIO_meth_set_destroy(method, kvod_source_destroy);
    return method;
}

/// The source's state (what is left to read is `bytes[0..<count]`).
static inline kvod_source *kvod_source_of(BIO *bio) { return BIO_get_data(bio); }

/// A BIO that collects the ciphertext OpenSSL writes in one growing buffer, for the session's owner to write to the
/// network from there (no memory BIO's bookkeeping, no copy out to a scratch buffer). The buffer is the sink's own, or
/// one the owner lends for a write (`borrowed`: never grown in place or freed here; outgrowing it moves the bytes to a
/// buffer of the sink's own). Writes always succeed; the owner empties it (TLSSession.drainOutput).
typedef struct {
    unsigned char *bytes;
    size_t count;
    size_t capacity;
    int borrowed;
} kvod_sink;

static inline int kvod_sink_write(BIO *bio, const char *in, int length) {
    kvod_sink *sink = BIO_get_data(bio);
    if (sink == NULL || length <= 0) return 0;
    size_t needed = sink->count + (size_t)length;
    if (needed > sink->capacity) {
        size_t capacity = sink->capacity ? sink->capacity : 4096;
        while (capacity < needed) capacity *= 2;
        unsigned char *grown = sink->borrowed ? malloc(capacity) : realloc(sink->bytes, capacity);
        if (grown == NULL) return -1;
        if (sink->borrowed && sink->count > 0) memcpy(grown, sink->bytes, sink->count);
        sink->borrowed = 0;
        sink->bytes = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->bytes + sink->count, in, (size_t)length);
    sink->count = needed;
    return length;
}

static inline long kvod_sink_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number;
    (void)pointer;
    kvod_sink *sink = BIO_get_data(bio);
    switch (command) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_WPENDING: return sink ? (long)sink->count : 0;
    default: return 0;
    }
}

static inline int kvod_sink_create(BIO *bio) {
    kvod_sink *sink = calloc(1, sizeof(kvod_sink));
    if (sink == NULL) return 0;
    BIO_set_data(bio, sink);
    BIO_set_init(bio, 1);
    return 1;
}

static inline int kvod_sink_destroy(BIO *bio) {
    kvod_sink *sink = BIO_get_data(bio);
    if (sink != NULL) {
        if (!sink->borrowed) free(sink->bytes);
        free(sink);
    }
    BIO_set_data(bio, NULL);
    return 1;
}

/// The sink's BIO_METHOD (made once by the caller and kept for the process).
static inline BIO_METHOD *kvod_sink_method_new(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kvod ciphertext sink");
    if (method == NULL) return NULL;
    BIO_meth_set_write(method, kvod_sink_write);
    BIO_meth_set_ctrl(method, kvod_sink_ctrl);
    BIO_meth_set_create(method, kvod_sink_create);
    BIO_meth_set_destroy(method, kvod_sink_destroy);
    return method;
}

/// The sink's state (its bytes are `bytes[0..<count]`).
static inline kvod_sink *kvod_sink_of(BIO *bio) { return BIO_get_data(bio); }

static inline int kvod_x509_not_after_passed(X509 *cert) {
    return X509_cmp_current_time(X509_get0_notAfter(cert)) < 0;
}

static inline int kvod_x509_not_before_ahead(X509 *cert) {
    return X509_cmp_current_time(X509_get0_notBefore(cert)) > 0;
}

/// Appends `text` (of `length` bytes) and a newline to out[*used..capacity], if it fits.
static inline void kvod_append_line(char *out, size_t capacity, size_t *used, const char *prefix, const char *text,
                                    size_t length) {
    size_t prefixLength = strlen(prefix);
    if (*used + prefixLength + length + 1 > capacity) return;
    memcpy(out + *used, prefix, prefixLength);
    memcpy(out + *used + prefixLength, text, length);
    *used += prefixLength + length;
    out[(*used)++] = '\n';
}

/// The names a certificate stands for, one per line: `CN=<common name>`, then each subject alternative name as
/// `DNS:<name>`, `URI:<uri>`, `email:<address>` or `IP:<address>`. Names with a NUL byte are skipped. Returns the
/// bytes written (names that do not fit are left out).
static inline size_t kvod_x509_identities(X509 *cert, char *out, size_t capacity) {
    size_t used = 0;
    X509_NAME *subject = X509_get_subject_name(cert);
    int index = -1;
    while (subject && (index = X509_NAME_get_index_by_NID(subject, NID_commonName, index)) >= 0) {
        ASN1_STRING *data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
        unsigned char *utf8 = NULL;
        int length = ASN1_STRING_to_UTF8(&utf8, data);
        if (length >= 0 && memchr(utf8, 0, (size_t)length) == NULL) {
            kvod_append_line(out, capacity, &used, "CN=", (const char *)utf8, (size_t)length);
        }
        OPENSSL_free(utf8);
    }
    GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
        GENERAL_NAME *name = sk_GENERAL_NAME_value(names, i);
        const char *prefix = NULL;
        ASN1_STRING *text = NULL;
        switch (name->type) {
        case GEN_DNS: prefix = "DNS:"; text = name->d.dNSName; break;
        case GEN_URI: prefix = "URI:"; text = name->d.uniformResourceIdentifier; break;
        case GEN_EMAIL: prefix = "email:"; text = name->d.rfc822Name; break;
        case GEN_IPADD: {
            char address[64];
            const unsigned char *bytes = ASN1_STRING_get0_data(name->d.iPAddress);
            int length = ASN1_STRING_length(name->d.iPAddress);
            if (length == 4) {
                int n = snprintf(address, sizeof address, "%u.%u.%u.%u", bytes[0], bytes[1], bytes[2], bytes[3]);
                kvod_append_line(out, capacity, &used, "IP:", address, (size_t)n);
            } else if (length == 16) {
                int n = 0;
                for (int k = 0; k < 16; k += 2) {
                    n += snprintf(address + n, sizeof address - (size_t)n, k ? ":%x" : "%x", bytes[k] << 8 | bytes[k + 1]);
                }
                kvod_append_line(out, capacity, &used, "IP:", address, (size_t)n);
            }
            break;
        }
        default: break;
        }
        if (prefix && text) {
            const unsigned char *bytes = ASN1_STRING_get0_data(text);
            int length = ASN1_STRING_length(text);
            if (length >= 0 && memchr(bytes, 0, (size_t)length) == NULL) {
                kvod_append_line(out, capacity, &used, prefix, (const char *)bytes, (size_t)length);
            }
        }
    }
    GENERAL_NAMES_free(names);
    return used;
}
