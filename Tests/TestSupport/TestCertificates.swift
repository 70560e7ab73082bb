// Certificates made at test time with the `openssl` CLI (Debian's openssl package; .ci/deps.sh installs it): a CA,
// a server certificate for 127.0.0.1 and localhost, client certificates, and the bad ones a start must refuse (an
// expired certificate, a key of another certificate, a certificate of another CA). EC P-256 keys: quick to make.

import Foundation

/// A directory of PEM files made by `openssl`, removed with the object.
public final class TestCertificates: @unchecked Sendable {
    // @unchecked: immutable after init.
    public let directory: ScratchDirectory

    /// Makes the CA (`ca.pem`), the server's certificate (`server.pem`, `server.key`; CN=localhost, SAN
    /// DNS:localhost, IP:127.0.0.1), a client certificate `client.pem`/`client.key` (CN=orders, SAN
    /// URI:spiffe://test/orders) and another CA (`other-ca.pem`) with a server certificate of its own
    /// (`other-server.pem`, `other-server.key`).
    public init() throws {
        self.directory = try ScratchDirectory("tls")
        try self.makeCA("ca")
        try self.makeCA("other-ca")
        try self.issue("server", subject: "/CN=localhost", san: "DNS:localhost,IP:127.0.0.1", by: "ca")
        try self.issue("client", subject: "/CN=orders", san: "URI:spiffe://test/orders", by: "ca")
        try self.issue("other-server", subject: "/CN=localhost", san: "DNS:localhost,IP:127.0.0.1", by: "other-ca")
    }

    /// The path of `name` in the directory ("ca.pem").
    public func path(_ name: String) -> String {
        (self.directory.path as NSString).appendingPathComponent(name)
    }

    /// Issues `NAME.pem` and `NAME.key` signed by the CA `ca`, valid for `days` (negative: expired that many days
    /// ago).
    public func issue(_ name: String, subject: String, san: String, by ca: String = "ca", days: Int = 2) throws {
        try Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", self.path("\(name).key"),
            "-out", self.path("\(name).csr"), "-subj", subject,
        ])
        let extensions = try self.directory.write("\(name).ext", "subjectAltName=\(san)\n")
        try Self.openssl([
            "x509", "-req", "-in", self.path("\(name).csr"), "-CA", self.path("\(ca).pem"), "-CAkey",
            self.path("\(ca).key"), "-CAcreateserial", "-out", self.path("\(name).pem"), "-days", String(days),
            "-extfile", extensions,
        ])
    }

    private func makeCA(_ name: String) throws {
        try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            self.path("\(name).key"), "-out", self.path("\(name).pem"), "-days", "2", "-subj", "/CN=kvod test \(name)",
        ])
    }

    /// Runs `openssl ARGUMENTS`; throws with its stderr when it fails.
    static func openssl(_ arguments: [String]) throws {
        let result = try runCommand(URL(fileURLWithPath: "/usr/bin/openssl"), arguments, timeout: .seconds(30))
        guard result.status == 0 else {
            throw TestSupportError.commandFailed("openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }
}
