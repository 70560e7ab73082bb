// Host/port text <-> sockaddr for TCPListener and TCPStream: IPv4 dotted quads, IPv6 literals (bracketed or not) and
// "localhost" (127.0.0.1). No DNS: names other than localhost are rejected with UV_EINVAL.

internal import CLibUV

/// A parsed socket address, stored as `sockaddr_storage` so IPv4 and IPv6 share one type.
struct SocketAddress {
    private var storage = sockaddr_storage()

    /// Parses `host` and `port` (0...65535, 0 meaning "any free port" when binding); `call` names the operation in
    /// the UVError thrown for malformed input.
    init(host: String, port: Int, call: String) throws(UVError) {
        guard (0...65535).contains(port) else { throw UVError(code: UV_EINVAL.rawValue, call: call) }
        var literal = host == "localhost" ? "127.0.0.1" : host
        if literal.hasPrefix("["), literal.hasSuffix("]") {
            literal = String(literal.dropFirst().dropLast())
        }
        let status: Int32
        if literal.contains(":") {
            var address = sockaddr_in6()
            status = uv_ip6_addr(literal, Int32(port), &address)
            Self.copy(address, into: &self.storage)
        } else {
            var address = sockaddr_in()
            status = uv_ip4_addr(literal, Int32(port), &address)
            Self.copy(address, into: &self.storage)
        }
        try uvCheck(status, call)
    }

    /// Reads an address libuv filled in (`uv_tcp_getsockname` / `uv_tcp_getpeername`).
    init(filling fill: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<Int32>) -> Int32,
         call: String) throws(UVError) {
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &self.storage) { storage in
            storage.withMemoryRebound(to: sockaddr.self, capacity: 1) { fill($0, &length) }
        }
        try uvCheck(status, call)
    }

    private static func copy<Address>(_ address: Address, into storage: inout sockaddr_storage) {
        withUnsafeMutableBytes(of: &storage) { target in
            withUnsafeBytes(of: address) { target.copyMemory(from: $0) }
        }
    }

    /// Calls `body` with the address as the `const struct sockaddr *` libuv takes.
    func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>) -> Result) -> Result {
        withUnsafePointer(to: self.storage) { storage in
            storage.withMemoryRebound(to: sockaddr.self, capacity: 1, body)
        }
    }

    /// The port in host byte order; 0 for an unknown family.
    var port: Int {
        withUnsafeBytes(of: self.storage) { bytes in
            switch Int32(self.storage.ss_family) {
            case AF_INET: Int(UInt16(bigEndian: bytes.load(as: sockaddr_in.self).sin_port))
            case AF_INET6: Int(UInt16(bigEndian: bytes.load(as: sockaddr_in6.self).sin6_port))
            default: 0
            }
        }
    }

    /// "127.0.0.1:7070" or "[::1]:7070"; "?" for an unknown family.
    var description: String {
        var text = [CChar](repeating: 0, count: 64)
        let family = Int32(self.storage.ss_family)
        let status: Int32 = withUnsafeBytes(of: self.storage) { bytes in
            switch family {
            case AF_INET:
                var address = bytes.load(as: sockaddr_in.self)
                return uv_ip4_name(&address, &text, text.count)
            case AF_INET6:
                var address = bytes.load(as: sockaddr_in6.self)
                return uv_ip6_name(&address, &text, text.count)
            default:
                return UV_EAFNOSUPPORT.rawValue
            }
        }
        guard status >= 0 else { return "?" }
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return family == AF_INET6 ? "[\(host)]:\(self.port)" : "\(host):\(self.port)"
    }
}
