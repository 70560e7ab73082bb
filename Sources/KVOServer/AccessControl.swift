// Tokens and what they allow (Protocol/README.md#access-control): parsing a token file, and finding a token's access
// in constant time. Pure: no I/O; kvod reads the file and the environment. Enforcement is in Dispatcher.swift.

/// What a token lets a connection do.
public enum Access: String, Sendable, Equatable {
    /// Every method.
    case readWrite = "read-write"
    /// Only the methods that change nothing (`AccessControl.readOnlyMethods`).
    case readOnly = "read-only"
}

/// One configured token: a secret presented in `hello`, or a client certificate's name (mutual TLS).
public struct AccessToken: Sendable, Equatable {
    /// The token's bytes (UTF-8); empty for a certificate's token.
    public let secret: [UInt8]
    /// For a token a client certificate stands for: the name it must carry (`CN=orders`, `DNS:orders.internal`,
    /// `URI:spiffe://…`, `email:…`, `IP:…`; a token-file line `tls:NAME …`). Never matched by a `hello` token.
    public let certificateName: String?
    /// What the token allows.
    public let access: Access
    /// The key paths the token may use; nil: every path (and `$ID` paths, `observers` and `stats`).
    public let paths: [PathPattern]?

    /// A token with `secret` as its text.
    public init(secret: String, access: Access, paths: [PathPattern]? = nil) {
        self.secret = Array(secret.utf8)
        self.certificateName = nil
        self.access = access
        self.paths = paths
    }

    /// A token that a verified client certificate carrying `certificateName` stands for.
    public init(certificateName: String, access: Access, paths: [PathPattern]? = nil) {
        self.secret = []
        self.certificateName = certificateName
        self.access = access
        self.paths = paths
    }

    /// The prefix of a token-file line's first field that names a client certificate instead of a secret.
    public static let certificatePrefix = "tls:"
}

/// A key-path pattern of a restricted token: keys separated by dots, `*` for any one key, `**` for any number of keys
/// (none included). A pattern grants the paths it matches and every path beneath them: reading or writing below a
/// granted path reveals or changes nothing the granted path does not.
public struct PathPattern: Sendable, Equatable, CustomStringConvertible {
    enum Component: Sendable, Equatable {
        case key(String)
        case anyKey
        case anyKeys
    }

    let components: [Component]
    public let description: String

    /// Parses `person.**`, `department.employees`, `users.*.name`.
    /// - Throws: a reason for people when a key is empty, starts with `$`, or mixes `*` with other characters.
    public init(parsing text: String) throws(PathPatternError) {
        var components: [Component] = []
        for key in text.split(separator: ".", omittingEmptySubsequences: false) {
            switch key {
            case "": throw PathPatternError("'\(text)': empty key")
            case "*": components.append(.anyKey)
            case "**": components.append(.anyKeys)
            default:
                if key.contains("*") { throw PathPatternError("'\(text)': '*' and '**' must be whole keys") }
                if key.hasPrefix("$") { throw PathPatternError("'\(text)': patterns start at the root, not at an object id") }
                components.append(.key(String(key)))
            }
        }
        self.components = components
        self.description = text
    }

    /// Whether the pattern grants `keys` (a path from the root): it matches them or a prefix of them.
    public func grants(_ keys: [String]) -> Bool {
        self.grants(keys, from: 0, 0)
    }

    private func grants(_ keys: [String], from componentIndex: Int, _ keyIndex: Int) -> Bool {
        guard componentIndex < self.components.count else { return true }  // a prefix matched: beneath it is granted
        switch self.components[componentIndex] {
        case .anyKeys:
            if self.grants(keys, from: componentIndex + 1, keyIndex) { return true }
            return keyIndex < keys.count && self.grants(keys, from: componentIndex, keyIndex + 1)
        case .anyKey:
            return keyIndex < keys.count && self.grants(keys, from: componentIndex + 1, keyIndex + 1)
        case .key(let key):
            return keyIndex < keys.count && keys[keyIndex] == key && self.grants(keys, from: componentIndex + 1, keyIndex + 1)
        }
    }
}

/// A pattern of a token file that does not parse.
public struct PathPatternError: Error, Equatable, Sendable {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A token file that could not be read, with the line at fault.
public struct TokenFileError: Error, Equatable, CustomStringConvertible {
    /// The file as it was named.
    public let fileName: String
    /// The 1-based line at fault; 0 for the file as a whole.
    public let line: Int
    /// What is wrong, for people.
    public let reason: String

    /// `FILE:LINE: REASON` (or `FILE: REASON`).
    public var description: String {
        self.line > 0 ? "\(self.fileName):\(self.line): \(self.reason)" : "\(self.fileName): \(self.reason)"
    }
}

/// The configured tokens. With none, access control is off and every connection may do everything.
public struct AccessControl: Sendable {
    /// Every configured token, in file order (`KVOD_TOKEN`'s last).
    public let tokens: [AccessToken]

    /// The methods a read-only token may call; every other method is refused with 1008.
    public static let readOnlyMethods: Set<String> = [
        "hello", "ping", "get", "subscribe", "unsubscribe", "describe", "observers", "validate", "stats",
    ]

    /// Access control with `tokens`; none turns it off.
    public init(tokens: [AccessToken] = []) {
        self.tokens = tokens
    }

    /// Whether connections must `hello` with a token before anything else.
    public var isEnabled: Bool { !self.tokens.isEmpty }

    /// The access of `candidate`, or nil when it matches no token.
    public func access(for candidate: String) -> Access? {
        self.token(for: candidate)?.access
    }

    /// The token `candidate` is, or nil when it matches none. Every byte of every token is compared, whatever
    /// matches, so the time taken says nothing about how much of a token was right.
    public func token(for candidate: String) -> AccessToken? {
        let bytes = Array(candidate.utf8)
        var found: AccessToken?
        for token in self.tokens where token.certificateName == nil {
            // No early exit and no branch on secret bytes; the one branch below depends only on the whole outcome.
            let matches = Self.constantTimeEquals(bytes, token.secret)
            if matches && found == nil { found = token }
        }
        return found
    }

    /// The token the first of `names` (a verified client certificate's, `TLSSession.peerIdentities`) stands for,
    /// in token-file order; nil when none does. (Names are not secret: no constant time needed.)
    public func token(forCertificateNames names: [String]) -> AccessToken? {
        self.tokens.first { token in token.certificateName.map(names.contains) ?? false }
    }

    /// Compares two byte strings over the longer one's length, accumulating differences with OR of XORs, so the
    /// time depends only on the lengths, never on where the first difference is.
    public static func constantTimeEquals(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        var difference = UInt(bitPattern: left.count ^ right.count)
        let length = max(left.count, right.count)
        left.withUnsafeBufferPointer { left in
            right.withUnsafeBufferPointer { right in
                for index in 0..<length {
                    let a = index < left.count ? left[index] : 0
                    let b = index < right.count ? right[index] : 0
                    difference |= UInt(a ^ b)
                }
            }
        }
        return difference == 0
    }

    /// Parses a token file: one `TOKEN read-write` or `TOKEN read-only` per line, optionally followed by the key-path
    /// patterns the token is restricted to, separated by commas (`TOKEN read-write person.**,department.employees`);
    /// a TOKEN of `tls:NAME` is a client certificate's name instead of a secret (`tls:CN=orders read-write orders.**`);
    /// blank lines and lines starting with `#` are skipped. Throws on any other line, a bad pattern, a repeated token,
    /// and when the file holds no token.
    public static func parseTokenFile(_ text: String, fileName: String) throws(TokenFileError) -> [AccessToken] {
        var tokens: [AccessToken] = []
        // `isNewline` also splits "\r\n", which is one Character (a Windows-edited file).
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            let number = index + 1
            guard fields.count == 2 || fields.count == 3 else {
                throw TokenFileError(
                    fileName: fileName, line: number,
                    reason: "expected 'TOKEN read-write' or 'TOKEN read-only', optionally followed by PATTERN,PATTERN,...")
            }
            guard let access = Access(rawValue: String(fields[1])) else {
                throw TokenFileError(
                    fileName: fileName, line: number,
                    reason: "unknown access '\(fields[1])' (expected read-write or read-only)")
            }
            var paths: [PathPattern]?
            if fields.count == 3 {
                do throws(PathPatternError) {
                    paths = try fields[2].split(separator: ",", omittingEmptySubsequences: false).map {
                        (text) throws(PathPatternError) in try PathPattern(parsing: String(text))
                    }
                } catch {
                    throw TokenFileError(fileName: fileName, line: number, reason: "bad key-path pattern \(error.reason)")
                }
            }
            let first = String(fields[0])
            let token: AccessToken
            if first.hasPrefix(AccessToken.certificatePrefix) {
                let name = String(first.dropFirst(AccessToken.certificatePrefix.count))
                guard !name.isEmpty else {
                    throw TokenFileError(
                        fileName: fileName, line: number,
                        reason: "'tls:' must be followed by a certificate name (CN=..., DNS:..., URI:..., email:..., IP:...)")
                }
                token = AccessToken(certificateName: name, access: access, paths: paths)
            } else {
                token = AccessToken(secret: first, access: access, paths: paths)
            }
            if tokens.contains(where: { $0.secret == token.secret && $0.certificateName == token.certificateName }) {
                throw TokenFileError(fileName: fileName, line: number, reason: "the same token appears twice")
            }
            tokens.append(token)
        }
        if tokens.isEmpty { throw TokenFileError(fileName: fileName, line: 0, reason: "no token in the file") }
        return tokens
    }
}

extension Substring {
    /// The text without leading and trailing spaces, tabs and carriage returns.
    fileprivate func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = self.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = self.lastIndex(where: { !isSpace($0) })!  // exists: `first` does
        return self[first...last]
    }
}
