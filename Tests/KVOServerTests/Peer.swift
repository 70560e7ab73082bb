// A raw JSON-lines peer for live tests: sends exact text, receives parsed JSON, so tests can assert on the order of
// every message a connection receives (responses and notifications interleaved).
import KVOClient
import TestSupport
import Testing
import WireProtocol

/// One client connection to a live kvod, seen as a stream of JSON lines.
final class Peer {
    let client: KVOClient
    /// Held so the server outlives every peer that talks to it.
    let server: KVODProcess

    init(_ server: KVODProcess) throws {
        self.server = server
        self.client = try server.client()
    }

    /// Sends one line verbatim.
    func send(_ line: String) throws {
        try self.client.sendRaw(line)
    }

    /// The next message, parsed.
    func receive(timeout: Duration = .seconds(5)) throws -> JSONValue {
        let line = try self.client.readRawLine(timeout: timeout)
        return try JSONParser.parse(line)
    }

    /// The next `count` messages.
    func receive(_ count: Int) throws -> [JSONValue] {
        try (0..<count).map { _ in try self.receive() }
    }

    /// Sends a request and returns the next message (which must be its response when nothing else is pending).
    func request(_ id: Int, _ method: String, _ params: String? = nil) throws -> JSONValue {
        try self.send(Self.requestText(id, method, params))
        return try self.receive()
    }

    static func requestText(_ id: Int, _ method: String, _ params: String? = nil) -> String {
        let paramsMember = params.map { #","params":\#($0)"# } ?? ""
        return #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)"\#(paramsMember)}"#
    }

    /// Proves nothing else is queued for this connection: a ping's response must be the very next message.
    func expectQuiet(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try self.send(Self.requestText(999_999, "ping"))
        let next = try self.receive()
        #expect(next["id"] == .int(999_999), "unexpected message: \(next)", sourceLocation: sourceLocation)
    }

    func close() {
        self.client.close()
    }
}

extension JSONValue {
    /// Parses JSON text written in a test; traps on invalid text (a bug in the test).
    static func json(_ text: String) -> JSONValue {
        do { return try JSONParser.parse(text) } catch { fatalError("invalid JSON in test: \(text): \(error)") }
    }
}
