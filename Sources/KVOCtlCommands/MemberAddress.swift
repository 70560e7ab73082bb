// The addresses kvoctl may connect to: `--host`/`--connect`/`$KVOD_HOST` hold one `HOST[:PORT]` or a comma-separated
// list of them (the members of a cluster, docs/SCALING.md), and 1012's `data.leader` holds one `host:port`. Pure: no
// I/O here.

import KVOClient

/// One kvod address: a host name or IP literal and a port.
struct MemberAddress: Hashable, CustomStringConvertible {
    let host: String
    let port: Int

    /// `host:port`, with an IPv6 literal in brackets.
    var description: String { formatEndpoint(host: self.host, port: self.port) }

    /// Why an address text was refused; the text is a complete sentence for a usage error.
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// The scheme of an address reached over TLS (`kvods://HOST:PORT`); `kvod://` is plaintext's, also accepted.
    static let tlsScheme = "kvods://"
    static let plainScheme = "kvod://"

    /// Parses `HOST`, `HOST:PORT`, `[IPV6]`, `[IPV6]:PORT` or a bare IPv6 literal (two colons or more, no port),
    /// optionally after `kvods://` or `kvod://` (ConnectionOptions.usesTLS reads the scheme); `defaultPort` is used
    /// when no port is given.
    static func parse(_ written: String, defaultPort: Int) throws(Invalid) -> MemberAddress {
        var text = written
        for scheme in [Self.tlsScheme, Self.plainScheme] where text.hasPrefix(scheme) {
            text = String(text.dropFirst(scheme.count))
            if text.hasSuffix("/") { text = String(text.dropLast()) }
        }
        let invalid = Invalid(description: "'\(text)' is not an address (expected HOST, HOST:PORT or [IPV6]:PORT)")
        let host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw invalid }
                portText = rest.dropFirst()
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = Substring(text)
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "," || $0 == "/" }) else { throw invalid }
        guard let portText else { return MemberAddress(host: String(host), port: defaultPort) }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw Invalid(description: "the port in '\(text)' must be a number between 1 and 65535")
        }
        return MemberAddress(host: String(host), port: port)
    }

    /// Parses a comma-separated list (spaces around the commas are ignored), dropping repeats and keeping the order.
    static func parseList(_ text: String, defaultPort: Int) throws(Invalid) -> [MemberAddress] {
        var addresses: [MemberAddress] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.trimmingCharacters(in: " ")
            guard !trimmed.isEmpty else { throw Invalid(description: "'\(text)' has an empty address") }
            let address = try self.parse(trimmed, defaultPort: defaultPort)
            if !addresses.contains(address) { addresses.append(address) }
        }
        return addresses
    }
}

extension Substring {
    /// The text without leading and trailing `character`s.
    fileprivate func trimmingCharacters(in character: Character) -> String {
        String(self.drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
