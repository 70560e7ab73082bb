// A TLS configuration (OpenSSL's SSL_CTX): the certificate and key a server presents, the CA its peers' certificates
// must chain to, whether it asks clients for one, the oldest protocol version it accepts. Made once at start and
// again on each reload (kvod's SIGHUP); a connection keeps the context it started with, so a reload never touches a
// live connection. Loading checks everything a start should refuse with a clear reason: a file that is missing or
// unreadable, a certificate that expired or is not valid yet, a key that does not match its certificate.
#if canImport(Glibc)
import Glibc
#endif
internal import COpenSSL

/// Whether a server asks its clients for a certificate (`--tls-client-auth`).
public enum TLSClientAuth: String, Sendable, CaseIterable {
    /// No client certificate is asked for.
    case none
    /// A client may present one; it must then verify against the CA.
    case request
    /// A client must present a certificate that verifies against the CA.
    case require
}

/// The oldest TLS version accepted (`--tls-min-version`).
public enum TLSVersion: String, Sendable, CaseIterable {
    case tls12 = "1.2"
    case tls13 = "1.3"

    var openSSLValue: Int32 {
        switch self {
        case .tls12: TLS1_2_VERSION
        case .tls13: TLS1_3_VERSION
        }
    }
}

/// What a server's TLS needs: files in PEM.
public struct TLSServerSettings: Sendable, Equatable {
    /// The certificate chain the server presents (the server's certificate first).
    public var certificatePath: String
    /// The certificate's private key.
    public var keyPath: String
    /// The CA certificates client certificates must chain to; needed unless `clientAuth` is `.none`.
    public var caPath: String?
    public var clientAuth: TLSClientAuth
    public var minimumVersion: TLSVersion

    public init(
        certificatePath: String, keyPath: String, caPath: String? = nil, clientAuth: TLSClientAuth = .none,
        minimumVersion: TLSVersion = .tls12
    ) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.caPath = caPath
        self.clientAuth = clientAuth
        self.minimumVersion = minimumVersion
    }
}

/// What a client's TLS needs.
public struct TLSClientSettings: Sendable, Equatable {
    /// The CA certificates the server's certificate must chain to; nil: the system's trust store.
    public var caPath: String?
    /// A client certificate and its key, for servers that ask for one (mutual TLS).
    public var certificatePath: String?
    public var keyPath: String?
    public var minimumVersion: TLSVersion
    /// Whether the server's certificate is checked (chain and name). Only tests and `--insecure` turn it off.
    public var verifyServer: Bool

    public init(
        caPath: String? = nil, certificatePath: String? = nil, keyPath: String? = nil,
        minimumVersion: TLSVersion = .tls12, verifyServer: Bool = true
    ) {
        self.caPath = caPath
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.minimumVersion = minimumVersion
        self.verifyServer = verifyServer
    }
}

/// An OpenSSL SSL_CTX. Immutable once made (OpenSSL's own reference counting keeps it alive for the sessions made
/// from it), so it may be shared between threads.
public final class TLSContext: @unchecked Sendable {
    let raw: OpaquePointer
    /// Client side: whether the server's name is checked against its certificate.
    let verifiesServer: Bool
    /// For logs: the certificate's subject and expiry ("CN=kvod, expires 2027-11-28 08:00:00 GMT"), or nil.
    public let certificateSummary: String?

    private init(raw: OpaquePointer, verifiesServer: Bool, certificateSummary: String?) {
        self.raw = raw
        self.verifiesServer = verifiesServer
        self.certificateSummary = certificateSummary
    }

    deinit {
        SSL_CTX_free(self.raw)
    }

    /// A server context from `settings`. Throws a reason naming the file at fault.
    public static func server(_ settings: TLSServerSettings) throws(TLSError) -> TLSContext {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSError.openSSL("cannot make a TLS context") }
        do throws(TLSError) {
            try configure(context, minimumVersion: settings.minimumVersion)
            let summary = try useCertificate(context, certificatePath: settings.certificatePath, keyPath: settings.keyPath)
            if let caPath = settings.caPath {
                try checkReadable(caPath, what: "CA file")
                guard SSL_CTX_load_verify_locations(context, caPath, nil) == 1 else {
                    throw TLSError.openSSL("cannot load the CA file \(caPath)")
                }
                if let names = SSL_load_client_CA_file(caPath) { SSL_CTX_set_client_CA_list(context, names) }
            }
            switch settings.clientAuth {
            case .none:
                SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            case .request, .require:
                guard settings.caPath != nil else {
                    throw TLSError("client certificates (\(settings.clientAuth.rawValue)) need a CA file to verify them")
                }
                let fail = settings.clientAuth == .require ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER | fail, nil)
                // Session resumption would skip the client certificate's check on a reload's new CA: off.
                _ = kvod_ssl_ctx_disable_session_cache(context)
                var id: [UInt8] = Array("kvod".utf8)
                _ = SSL_CTX_set_session_id_context(context, &id, UInt32(id.count))
            }
            return TLSContext(raw: context, verifiesServer: false, certificateSummary: summary)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
    }

    /// A client context from `settings`.
    public static func client(_ settings: TLSClientSettings) throws(TLSError) -> TLSContext {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSError.openSSL("cannot make a TLS context") }
        do throws(TLSError) {
            try configure(context, minimumVersion: settings.minimumVersion)
            var summary: String?
            switch (settings.certificatePath, settings.keyPath) {
            case (let certificate?, let key?):
                summary = try useCertificate(context, certificatePath: certificate, keyPath: key)
            case (nil, nil):
                break
            default:
                throw TLSError("a client certificate needs its key, and a key its certificate")
            }
            if settings.verifyServer {
                if let caPath = settings.caPath {
                    try checkReadable(caPath, what: "CA file")
                    guard SSL_CTX_load_verify_locations(context, caPath, nil) == 1 else {
                        throw TLSError.openSSL("cannot load the CA file \(caPath)")
                    }
                } else if SSL_CTX_set_default_verify_paths(context) != 1 {
                    throw TLSError.openSSL("cannot load the system's CA certificates")
                }
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            } else {
                SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            }
            return TLSContext(raw: context, verifiesServer: settings.verifyServer, certificateSummary: summary)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
    }

    /// What both sides set: the minimum version, and record buffers given back after each record
    /// (SSL_MODE_RELEASE_BUFFERS: an idle connection holds none; `TLSSession.keepsBuffers` turns it off for a busy one).
    private static func configure(_ context: OpaquePointer, minimumVersion: TLSVersion) throws(TLSError) {
        guard kvod_ssl_ctx_set_min_version(context, minimumVersion.openSSLValue) == 1 else {
            throw TLSError.openSSL("cannot set the minimum TLS version \(minimumVersion.rawValue)")
        }
        _ = kvod_ssl_ctx_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))
        // Renegotiation is a denial-of-service lever and nothing kvod needs.
        kvod_ssl_ctx_refuse_renegotiation(context)
    }

    /// Loads the certificate chain and key, checking each file and that they belong together and are in date.
    /// Returns the certificate's summary for logs.
    private static func useCertificate(
        _ context: OpaquePointer, certificatePath: String, keyPath: String
    ) throws(TLSError) -> String {
        try checkReadable(certificatePath, what: "certificate")
        try checkReadable(keyPath, what: "key")
        guard let file = BIO_new_file(certificatePath, "r") else {
            throw TLSError.openSSL("cannot read the certificate \(certificatePath)")
        }
        let certificate = PEM_read_bio_X509(file, nil, nil, nil)
        BIO_free(file)
        guard let certificate else {
            throw TLSError.openSSL("the certificate \(certificatePath) holds no PEM certificate")
        }
        defer { X509_free(certificate) }
        let subject = Self.subject(of: certificate)
        let notAfter = Self.text(of: X509_get0_notAfter(certificate))
        if kvod_x509_not_after_passed(certificate) != 0 {
            throw TLSError("the certificate \(certificatePath) (\(subject)) expired on \(notAfter)")
        }
        if kvod_x509_not_before_ahead(certificate) != 0 {
            let notBefore = Self.text(of: X509_get0_notBefore(certificate))
            throw TLSError("the certificate \(certificatePath) (\(subject)) is not valid before \(notBefore)")
        }
        guard let keyFile = BIO_new_file(keyPath, "r") else { throw TLSError.openSSL("cannot read the key \(keyPath)") }
        let key = PEM_read_bio_PrivateKey(keyFile, nil, nil, nil)
        BIO_free(keyFile)
        guard let key else { throw TLSError.openSSL("the key \(keyPath) holds no PEM private key") }
        defer { EVP_PKEY_free(key) }
        guard X509_check_private_key(certificate, key) == 1 else {
            ERR_clear_error()
            throw TLSError("the key \(keyPath) does not match the certificate \(certificatePath) (\(subject))")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificatePath) == 1 else {
            throw TLSError.openSSL("cannot use the certificate \(certificatePath)")
        }
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError.openSSL("cannot use the key \(keyPath)")
        }
        return "\(subject), expires \(notAfter)"
    }

    /// Throws "cannot read the WHAT PATH: REASON" unless `path` can be opened for reading.
    private static func checkReadable(_ path: String, what: String) throws(TLSError) {
        guard let file = fopen(path, "r") else {
            throw TLSError("cannot read the \(what) \(path): \(String(cString: strerror(errno)))")
        }
        fclose(file)
    }

    /// A certificate's subject, one line ("CN=kvod,O=example").
    static func subject(of certificate: OpaquePointer) -> String {
        guard let name = X509_get_subject_name(certificate), let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        _ = kvod_x509_name_print(bio, name)
        return Self.contents(of: bio)
    }

    /// An ASN.1 time as OpenSSL prints it ("Nov 28 08:00:00 2027 GMT").
    static func text(of time: UnsafePointer<ASN1_TIME>?) -> String {
        guard let time, let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        ASN1_TIME_print(bio, time)
        return Self.contents(of: bio)
    }

    /// The text a memory BIO holds.
    static func contents(of bio: OpaquePointer) -> String {
        var data: UnsafeMutablePointer<CChar>?
        let count = kvod_bio_mem_data(bio, &data)
        guard let data, count > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
    }
}
